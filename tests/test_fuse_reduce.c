/*
 * test_fuse_reduce.c — fused groups that end in a reduction (exec/fuse.c,
 * remat_fused_op.red): LayerNorm's mean and variance, softmax's max and sum
 * over the trailing axis, a full sum. The chain feeding the reduction is
 * never stored, and each output combines its elements in the reduce
 * kernel's order from its initial value (backend/cpu/reduce.c), so the bits
 * equal unfused execution (REMAT_NO_FUSION, jit = never), interpreted and
 * compiled, f32 and f64, forward and gradient, on rows that are one element,
 * less than a block, several blocks, a pool split, and rows x cols grids.
 */
#include "test_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend_impl.h"
#include "exec/program_impl.h"
#include "remat/remat.h"

/* the same bits, except that a NaN matches any NaN (a compiled fused loop
 * may take the other operand's NaN of a commutative op: backend/lane.h) */
static bool same_bits_or_nan(const remat_tensor *a, const remat_tensor *b)
{
    const int64_t n = remat_shape_numel(&a->shape);
    const size_t es = remat_dtype_size(a->dtype);
    for (int64_t i = 0; i < n; i++) {
        const char *x = (const char *)a->data + (size_t)i * es, *y = (const char *)b->data + (size_t)i * es;
        const bool nx = es == 4 ? isnan(*(const float *)x) : isnan(*(const double *)x);
        const bool ny = es == 4 ? isnan(*(const float *)y) : isnan(*(const double *)y);
        if (nx ? !ny : memcmp(x, y, es) != 0)
            return false;
    }
    return true;
}

static remat_program *compile_with(const remat_fn *f, bool no_fusion, remat_jit_mode jit)
{
    remat_compile_options o;
    remat_compile_options_from_env(&o);
    o.no_fusion = no_fusion;
    o.jit = jit;
    remat_program *p = NULL;
    assert_int_equal(remat_compile_opts(f, remat_test_backend(), &o, &p), REMAT_OK);
    return p;
}

static bool can_jit(void)
{
    const remat_backend *be = remat_test_backend();
    return be->iface.compile_lanes && be->iface.host_lane_cuts && be->iface.can_compile_lanes &&
           be->iface.can_compile_lanes();
}

/* f unfused (jit = never) against fused interpreted and fused compiled: the
 * same bits in every output, the arena measured as planned and no larger
 * than with fusion that leaves reductions alone (REMAT_NO_REDUCE_FUSION=1).
 * Returns the interpreted program's fused reductions (the compiled one must
 * have as many). */
static int check_bits(const char *what, const remat_fn *f, int n_in, const remat_tensor *in)
{
    remat_program *pu = compile_with(f, true, REMAT_JIT_NEVER);
    assert_int_equal(pu->n_fused_reductions, 0);
    setenv("REMAT_NO_REDUCE_FUSION", "1", 1);
    remat_program *pn = compile_with(f, false, REMAT_JIT_NEVER);
    unsetenv("REMAT_NO_REDUCE_FUSION");
    assert_int_equal(pn->n_fused_reductions, 0);
    outs_t ou;
    remat_stats su;
    remat_memory_plan lu;
    run_prog(pu, n_in, in, &ou, &su);
    remat_program_plan(pn, &lu);
    remat_program_free(pn);
    int red = -1;
    for (int jit = 0; jit < 1 + can_jit(); jit++) {
        remat_program *pf = compile_with(f, false, jit ? REMAT_JIT_ALWAYS : REMAT_JIT_NEVER);
        outs_t of;
        remat_stats sf;
        remat_memory_plan lf;
        run_prog(pf, n_in, in, &of, &sf);
        remat_program_plan(pf, &lf);
        assert_int_equal(of.n, ou.n);
        for (int i = 0; i < ou.n; i++)
            if (!same_bits_or_nan(&ou.t[i], &of.t[i]))
                fail_msg("%s: output %d: fused (%s) bits differ from unfused", what, i,
                         jit ? "compiled" : "interpreted");
        assert_int_equal(sf.peak_arena_bytes, lf.arena_bytes);
        if (lf.arena_bytes > lu.arena_bytes)
            fail_msg("%s: fused (%s) arena %zu bytes, %zu with reductions unfused", what, jit ? "compiled" : "interpreted",
                     lf.arena_bytes, lu.arena_bytes);
        for (int k = 0; k < REMAT_OP_COUNT; k++)
            assert_int_equal(sf.op_counts[k], su.op_counts[k]);
        if (jit) {
            assert_int_equal(pf->n_fused_reductions, red);
            if (red > 0)
                assert_true(pf->n_fused_compiled >= red);
        } else {
            red = pf->n_fused_reductions;
        }
        outs_free(&of);
        remat_program_free(pf);
    }
    outs_free(&ou);
    remat_program_free(pu);
    return red;
}

/* the shapes (rows, cols): 1, 7, 1000 and 100003 elements in one row (the
 * last split across the pool), and grids whose rows are short, odd, and
 * longer than a block */
static const int64_t shapes[][2] = {{1, 1}, {1, 7}, {1, 1000}, {1, 100003}, {7, 1000}, {1000, 7}, {13, 77}};
enum { N_SHAPES = sizeof shapes / sizeof shapes[0] };

static void *filled(remat_dtype T, int64_t n, double lo, double hi, bool special)
{
    static const double sp[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0, -1.5};
    void *v = xcalloc((size_t)n, remat_dtype_size(T));
    for (int64_t i = 0; i < n; i++) {
        const double x = special && i % 29 < 6 ? sp[i % 29] : urand(lo, hi);
        if (T == REMAT_F32)
            ((float *)v)[i] = (float)x;
        else
            ((double *)v)[i] = x;
    }
    return v;
}

static remat_val bcast_col(remat_fn *f, remat_val v, int64_t r, int64_t c)
{
    return remat_broadcast_in_dim(f, v, 2, ((int64_t[]){r, c}), ((int[]){0}));
}

static remat_val bcast_row(remat_fn *f, remat_val v, int64_t r, int64_t c)
{
    return remat_broadcast_in_dim(f, v, 2, ((int64_t[]){r, c}), ((int[]){1}));
}

/* LayerNorm over the last axis with both variance forms: flax's fast one,
 * mean(x^2) - mean(x)^2 (square fused into its sum), and mean((x - mean)^2)
 * (the square of the centred value fused into its sum); loss = sum(y * w)
 * (a full sum of a chain) when loss is set, else outputs y and both
 * variances */
static remat_fn *layer_norm(remat_dtype T, int64_t r, int64_t c, bool loss)
{
    remat_fn *f = remat_fn_new("fuse_reduce_layer_norm");
    const int64_t d2[2] = {r, c}, d1[1] = {c};
    const int ax = 1;
    remat_val x = remat_arg(f, "x", T, 2, d2), scale = remat_arg(f, "scale", T, 1, d1),
              bias = remat_arg(f, "bias", T, 1, d1), w = remat_arg(f, "w", T, 2, d2);
    remat_val mean = remat_mul_scalar(f, remat_sum(f, x, 1, &ax), 1.0 / (double)c);
    remat_val msq = remat_mul_scalar(f, remat_sum(f, remat_square(f, x), 1, &ax), 1.0 / (double)c);
    remat_val fast = remat_max(f, remat_sub(f, msq, remat_square(f, mean)), remat_scalar(f, T, 0.0));
    remat_val xc = remat_sub(f, x, bcast_col(f, mean, r, c));
    remat_val var = remat_mul_scalar(f, remat_sum(f, remat_square(f, xc), 1, &ax), 1.0 / (double)c);
    remat_val inv = remat_div(f, remat_scalar(f, T, 1.0), remat_sqrt(f, remat_add_scalar(f, var, 1e-6)));
    remat_val y = remat_mul(f, xc, bcast_col(f, inv, r, c));
    y = remat_add(f, remat_mul(f, y, bcast_row(f, scale, r, c)), bcast_row(f, bias, r, c));
    y = remat_add(f, y, bcast_col(f, fast, r, c));
    if (loss) {
        remat_fn_output(f, remat_sum_all(f, remat_mul(f, y, w)));
    } else {
        remat_fn_output(f, y);
        remat_fn_output(f, fast);
        remat_fn_output(f, var);
    }
    return f;
}

/* log-sum-exp over the last axis as the softmax cross-entropy writes it
 * (max with a stop_gradient, then sum(exp(x - max))), and a max over a chain
 * (max(-2x): NaN, infinities and signed zeros where special) */
static remat_fn *softmax(remat_dtype T, int64_t r, int64_t c, bool loss)
{
    remat_fn *f = remat_fn_new("fuse_reduce_softmax");
    const int64_t d2[2] = {r, c}, d1[1] = {r};
    const int ax = 1;
    remat_val x = remat_arg(f, "x", T, 2, d2), w = remat_arg(f, "w", T, 1, d1);
    remat_val m = remat_stop_gradient(f, remat_reduce_max(f, x, 1, &ax));
    remat_val e = remat_exp(f, remat_sub(f, x, bcast_col(f, m, r, c)));
    remat_val lse = remat_add(f, remat_log(f, remat_sum(f, e, 1, &ax)), m);
    remat_val mx = remat_reduce_max(f, remat_mul_scalar(f, remat_neg(f, x), 2.0), 1, &ax);
    if (loss) {
        remat_fn_output(f, remat_sum_all(f, remat_mul(f, remat_add(f, lse, mx), w)));
    } else {
        remat_fn_output(f, lse);
        remat_fn_output(f, mx);
    }
    return f;
}

typedef remat_fn *(*builder)(remat_dtype T, int64_t r, int64_t c, bool loss);

/* the forward (outputs), its gradient and the loss's own program for every
 * shape and dtype, bits against unfused; where the chain is fusable (at
 * least 16 elements, rows of 2 or more) at least want_fwd reductions fuse
 * in the forward and want_grad in the gradient, none elsewhere */
static void run_cases(const char *name, builder b, int n_args, const bool *col_arg, const bool *row_arg,
                      bool special, int want_fwd, int want_grad)
{
    for (int dt = 0; dt < 2; dt++)
        for (int si = 0; si < N_SHAPES; si++) {
            const remat_dtype T = dt ? REMAT_F32 : REMAT_F64;
            const int64_t r = shapes[si][0], c = shapes[si][1];
            remat_tensor in[4];
            for (int a = 0; a < n_args; a++) {
                const bool is_col = col_arg[a], is_row = row_arg[a];
                const int64_t n = is_col ? c : is_row ? r : r * c;
                in[a] = (remat_tensor){.dtype = T, .data = filled(T, n, -2.0, 3.0, special && a == 0),
                                       .shape = is_col   ? (remat_shape){.rank = 1, .dims = {c}}
                                                : is_row ? (remat_shape){.rank = 1, .dims = {r}}
                                                         : (remat_shape){.rank = 2, .dims = {r, c}}};
            }
            char what[128];
            remat_fn *fwd = b(T, r, c, false), *lf = b(T, r, c, true);
            remat_fn *g = grad_ok(lf, 0, NULL);
            snprintf(what, sizeof what, "%s %s %lldx%lld forward", name, dt ? "f32" : "f64", (long long)r,
                     (long long)c);
            const int rf = check_bits(what, fwd, n_args, in);
            snprintf(what, sizeof what, "%s %s %lldx%lld gradient", name, dt ? "f32" : "f64", (long long)r,
                     (long long)c);
            const int rg = check_bits(what, g, n_args, in);
            snprintf(what, sizeof what, "%s %s %lldx%lld loss", name, dt ? "f32" : "f64", (long long)r,
                     (long long)c);
            (void)check_bits(what, lf, n_args, in);
            if (r * c >= 16 && c >= 2) { /* a fusable chain: the reductions fuse */
                if (rf < want_fwd || rg < want_grad)
                    fail_msg("%s %lldx%lld: %d fused reductions forward (want %d), %d in the gradient (want %d)",
                             name, (long long)r, (long long)c, rf, want_fwd, rg, want_grad);
            } else {
                assert_int_equal(rf, 0);
            }
            remat_fn_free(fwd), remat_fn_free(lf), remat_fn_free(g);
            for (int a = 0; a < n_args; a++)
                free(in[a].data);
        }
}

/* LayerNorm: x^2 into its sum, (x - mean)^2 into its sum, in the forward;
 * the gradient's sums over the last axis of products fuse too */
static void test_fuse_reduce_layer_norm_bits(void **state)
{
    (void)state;
    rng_seed(24);
    const bool col[4] = {false, true, true, false}, row[4] = {false};
    run_cases("layer_norm", layer_norm, 4, col, row, false, 2, 4);
}

/* softmax: exp(x - max) into its sum, -2x into its max (NaN, infinities
 * and signed zeros in x: the max kernel's NaN and -0 rules). The gradient
 * keeps exp(x - max) for the backward, so its sum stays unfused there
 * (bits only). */
static void test_fuse_reduce_softmax_bits(void **state)
{
    (void)state;
    rng_seed(25);
    const bool col[2] = {false, false}, row[2] = {false, true};
    run_cases("softmax", softmax, 2, col, row, true, 2, 0);
}

/* Without the reduction fused, the chain feeding it is an arena buffer:
 * sum(x^2) over 1000 x 512 rows plans at least one (1000, 512) buffer less
 * fused, and holds the kernel's bits */
static void test_fuse_reduce_keeps_the_chain_out_of_the_arena(void **state)
{
    (void)state;
    rng_seed(26);
    const int64_t d2[2] = {1000, 512};
    const int ax = 1;
    for (int dt = 0; dt < 2; dt++) {
        const remat_dtype T = dt ? REMAT_F32 : REMAT_F64;
        remat_fn *f = remat_fn_new("fuse_reduce_arena");
        remat_val x = remat_arg(f, "x", T, 2, d2);
        remat_val s = remat_sum(f, remat_square(f, remat_sub(f, x, remat_scalar(f, T, 0.25))), 1, &ax);
        remat_fn_output(f, remat_sqrt(f, s));
        remat_tensor in = {.dtype = T, .data = filled(T, 1000 * 512, -1.0, 1.0, false),
                           .shape = {.rank = 2, .dims = {1000, 512}}};
        assert_int_equal(check_bits("sum of squares", f, 1, &in), 1);
        remat_program *pu = compile_with(f, true, REMAT_JIT_NEVER), *pf = compile_with(f, false, REMAT_JIT_NEVER);
        remat_memory_plan lu, lf;
        remat_program_plan(pu, &lu);
        remat_program_plan(pf, &lf);
        assert_true(lu.arena_bytes - lf.arena_bytes >= (size_t)1000 * 512 * remat_dtype_size(T));
        remat_program_free(pu), remat_program_free(pf);
        free(in.data);
        remat_fn_free(f);
    }
}

int main(void)
{
    (void)remat_test_backend();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fuse_reduce_layer_norm_bits),
        cmocka_unit_test(test_fuse_reduce_softmax_bits),
        cmocka_unit_test(test_fuse_reduce_keeps_the_chain_out_of_the_arena),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

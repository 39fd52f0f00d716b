/*
 * test_nn.c — network modules (remat/nn.h): Flax naming, shapes, forward
 * values against plain loops, gradients against central differences in f64,
 * scan over layers equal to the unrolled network, bitwise-equal gradients
 * across schedules and policies, measured peak = plan, the residual report
 * of seed 002, errors.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_golden.h"
#include "test_util.h"

/* ---- helpers ---- */

typedef struct {
    remat_nn_module *m;
    remat_nn_params *p;
} net_t;

static net_t net_init(remat_nn_module *m, uint64_t seed, remat_dtype dt, int rank, const int64_t *dims)
{
    assert_non_null(m);
    net_t n = {.m = m};
    assert_ok(remat_nn_init(m, remat_prng_key_from_seed(seed), dt, rank, dims, &n.p));
    return n;
}

static void net_free(net_t *n)
{
    remat_nn_params_free(n->p);
    remat_nn_module_free(n->m);
}

/* loss(params..., x) = sum(apply(x)^2) (or the output itself when !loss) */
static remat_fn *build(const net_t *n, remat_dtype dt, int rank, const int64_t *xdims, bool loss)
{
    remat_fn *f = remat_fn_new(loss ? "loss" : "apply");
    int np = remat_nn_params_count(n->p);
    remat_val *pv = xcalloc((size_t)np + 1, sizeof *pv);
    assert_ok(remat_nn_params_args(f, n->p, pv));
    remat_val x = remat_arg(f, "x", dt, rank, xdims), y;
    assert_ok(remat_nn_apply(n->m, f, x, pv, &y));
    remat_fn_output(f, loss ? remat_sum_all(f, remat_square(f, y)) : y);
    free(pv);
    assert_fn_ok(f);
    return f;
}

/* inputs: params then x */
static remat_tensor *inputs(const net_t *n, remat_tensor x)
{
    int np = remat_nn_params_count(n->p);
    remat_tensor *in = xcalloc((size_t)np + 1, sizeof *in);
    for (int i = 0; i < np; i++)
        in[i] = remat_nn_params_tensor(n->p, i);
    in[np] = x;
    return in;
}

static void fill_uniform(double *v, int64_t n, double lo, double hi)
{
    for (int64_t i = 0; i < n; i++)
        v[i] = urand(lo, hi);
}

/* ---- naming ---- */

static void assert_names(const remat_nn_params *p, int n, const char *const *names)
{
    assert_int_equal(remat_nn_params_count(p), n);
    for (int i = 0; i < n; i++)
        assert_string_equal(remat_nn_params_name(p, i), names[i]);
}

static void test_nn_mlp_names_as_flax(void **state)
{
    (void)state;
    remat_nn_module *mlp = remat_nn_mlp(8, 3, REMAT_NN_RELU);
    net_t n = net_init(remat_nn_remat(mlp, remat_dots_with_no_batch_dims_saveable), 0, REMAT_F32, 1, DIMS(3));
    assert_names(n.p, 6,
                 (const char *[]){"Dense_0/kernel", "Dense_0/bias", "Dense_1/kernel", "Dense_1/bias",
                                  "Dense_2/kernel", "Dense_2/bias"});
    remat_tensor k0 = remat_nn_params_tensor(n.p, 0), b2 = remat_nn_params_tensor(n.p, 5);
    assert_int_equal(k0.shape.rank, 2);
    assert_int_equal(k0.shape.dims[0], 3);
    assert_int_equal(k0.shape.dims[1], 8);
    assert_int_equal(b2.shape.dims[0], 8);
    for (int i = 0; i < 8; i++)
        assert_true(((float *)b2.data)[i] == 0.0f);
    assert_int_equal(remat_nn_params_out_shape(n.p).dims[0], 8);
    assert_string_equal(remat_nn_module_class(n.m), "CheckpointMLP");
    /* nn.remat at the root changes nothing about the parameters */
    net_t plain = net_init(mlp, 0, REMAT_F32, 1, DIMS(3));
    for (int i = 0; i < 6; i++) {
        remat_tensor a = remat_nn_params_tensor(n.p, i), b = remat_nn_params_tensor(plain.p, i);
        assert_memory_equal(a.data, b.data, tbytes(a.dtype, &a.shape)); /* contract 1 */
    }
    remat_nn_params_free(plain.p);
    remat_nn_module_free(mlp);
    net_free(&n);
}

/* FFN blocks as children: FFN_k/LayerNorm_0/..., remat'd ones CheckpointFFN_k */
static void test_nn_block_names(void **state)
{
    (void)state;
    remat_nn_module *f0 = remat_nn_ffn(4, 16, REMAT_NN_GELU), *f1 = remat_nn_ffn(4, 16, REMAT_NN_GELU);
    remat_nn_module *r1 = remat_nn_remat(f1, NULL), *head = remat_nn_dense(10, true);
    remat_nn_module *seq = remat_nn_sequential(4, (remat_nn_module *[]){f0, f1, r1, head});
    net_t n = net_init(remat_nn_block("Net", seq), 3, REMAT_F32, 2, DIMS(2, 4));
    assert_names(n.p, 20,
                 (const char *[]){"FFN_0/LayerNorm_0/scale", "FFN_0/LayerNorm_0/bias", "FFN_0/Dense_0/kernel",
                                  "FFN_0/Dense_0/bias", "FFN_0/Dense_1/kernel", "FFN_0/Dense_1/bias",
                                  "FFN_1/LayerNorm_0/scale", "FFN_1/LayerNorm_0/bias", "FFN_1/Dense_0/kernel",
                                  "FFN_1/Dense_0/bias", "FFN_1/Dense_1/kernel", "FFN_1/Dense_1/bias",
                                  "CheckpointFFN_0/LayerNorm_0/scale", "CheckpointFFN_0/LayerNorm_0/bias",
                                  "CheckpointFFN_0/Dense_0/kernel", "CheckpointFFN_0/Dense_0/bias",
                                  "CheckpointFFN_0/Dense_1/kernel", "CheckpointFFN_0/Dense_1/bias",
                                  "Dense_0/kernel", "Dense_0/bias"});
    assert_int_equal(remat_nn_params_find(n.p, "FFN_1/Dense_0/kernel"), 8);
    assert_int_equal(remat_nn_params_find(n.p, "nope"), -1);
    assert_int_equal(remat_nn_params_numel(n.p), 3 * (4 + 4 + 4 * 16 + 16 + 16 * 4 + 4) + 4 * 10 + 10);
    /* the same block class under two names draws different values */
    remat_tensor a = remat_nn_params_tensor(n.p, 2), b = remat_nn_params_tensor(n.p, 8);
    assert_memory_not_equal(a.data, b.data, tbytes(a.dtype, &a.shape));
    remat_nn_module_free(f0);
    remat_nn_module_free(f1);
    remat_nn_module_free(r1);
    remat_nn_module_free(head);
    remat_nn_module_free(seq);
    net_free(&n);
}

/* ---- forward values against plain loops (f64) ---- */

static double act_ref(remat_nn_activation a, double x)
{
    switch (a) {
    case REMAT_NN_RELU:
        return x > 0 ? x : 0;
    case REMAT_NN_GELU:
        return x * (0.5 * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))));
    case REMAT_NN_GELU_ERF:
        return x * (erf(x / sqrt(2)) + 1) / 2;
    case REMAT_NN_TANH:
        return tanh(x);
    case REMAT_NN_SILU:
        return x / (1 + exp(-x));
    default:
        return x;
    }
}

/* FFN: x + Dense_1(act(Dense_0(LN(x)))) for rows of width W, hidden H */
static void ffn_ref(const remat_nn_params *p, remat_nn_activation a, int64_t rows, int64_t w, int64_t h,
                    const double *x, double *y)
{
    const double *sc = remat_nn_params_tensor(p, 0).data, *lb = remat_nn_params_tensor(p, 1).data;
    const double *k0 = remat_nn_params_tensor(p, 2).data, *b0 = remat_nn_params_tensor(p, 3).data;
    const double *k1 = remat_nn_params_tensor(p, 4).data, *b1 = remat_nn_params_tensor(p, 5).data;
    double *ln = xcalloc((size_t)w, sizeof *ln), *hid = xcalloc((size_t)h, sizeof *hid);
    for (int64_t r = 0; r < rows; r++) {
        const double *xr = x + r * w;
        double mean = 0, m2 = 0;
        for (int64_t i = 0; i < w; i++) {
            mean += xr[i];
            m2 += xr[i] * xr[i];
        }
        mean /= (double)w;
        m2 /= (double)w;
        double var = fmax(m2 - mean * mean, 0);
        for (int64_t i = 0; i < w; i++)
            ln[i] = (xr[i] - mean) / sqrt(var + 1e-6) * sc[i] + lb[i];
        for (int64_t j = 0; j < h; j++) {
            double s = b0[j];
            for (int64_t i = 0; i < w; i++)
                s += ln[i] * k0[i * h + j];
            hid[j] = act_ref(a, s);
        }
        for (int64_t i = 0; i < w; i++) {
            double s = b1[i];
            for (int64_t j = 0; j < h; j++)
                s += hid[j] * k1[j * w + i];
            y[r * w + i] = xr[i] + s;
        }
    }
    free(ln);
    free(hid);
}

static void test_nn_ffn_forward_matches_loops(void **state)
{
    (void)state;
    enum { R = 3, W = 5, H = 7 };
    for (int a = 0; a < REMAT_NN_ACTIVATION_COUNT; a++) {
        net_t n = net_init(remat_nn_ffn(W, H, (remat_nn_activation)a), 11, REMAT_F64, 2, DIMS(R, W));
        /* non-trivial scale and bias, so their placement is checked */
        for (int i = 0; i < 2; i++) {
            remat_tensor t = remat_nn_params_tensor(n.p, i);
            fill_uniform(t.data, W, 0.5, 1.5);
        }
        double x[R * W], want[R * W];
        fill_uniform(x, R * W, -2, 2);
        ffn_ref(n.p, (remat_nn_activation)a, R, W, H, x, want);
        remat_fn *f = build(&n, REMAT_F64, 2, DIMS(R, W), false);
        remat_tensor *in = inputs(&n, remat_tensor_f64(x, 2, DIMS(R, W)));
        outs_t o;
        run_fn(f, remat_nn_params_count(n.p) + 1, in, &o, NULL, NULL);
        check_close(remat_nn_activation_name((remat_nn_activation)a), R * W, o.t[0].data, want, 1e-13, 1e-14);
        outs_free(&o);
        free(in);
        remat_fn_free(f);
        net_free(&n);
    }
}

/* ---- gradients against central differences (f64) ---- */

/* d loss / d every parameter of net n at input x, against central differences */
static void check_fd(net_t *n, int rank, const int64_t *xdims, double *x)
{
    remat_fn *f = build(n, REMAT_F64, rank, xdims, true);
    remat_fn *g = grad_ok(f, 0, NULL);
    int np = remat_nn_params_count(n->p);
    remat_shape xs = remat_shape_make(rank, xdims);
    remat_tensor *in = inputs(n, remat_tensor_f64(x, rank, xdims));
    remat_program *pf = compile_ok(f);
    outs_t go;
    run_fn(g, np + 1, in, &go, NULL, NULL);
    const double h = 1e-6;
    for (int i = 0; i <= np; i++) {
        remat_tensor t = in[i];
        int64_t cnt = remat_shape_numel(i < np ? &t.shape : &xs);
        double *v = t.data, *got = go.t[i].data;
        for (int64_t k = 0; k < cnt; k += 1 + cnt / 7) { /* a spread of entries */
            double keep = v[k], lp, lm;
            remat_tensor lo = remat_tensor_f64(&lp, 0, NULL);
            v[k] = keep + h;
            assert_ok(remat_run(pf, np + 1, in, 1, &lo, NULL));
            lo.data = &lm;
            v[k] = keep - h;
            assert_ok(remat_run(pf, np + 1, in, 1, &lo, NULL));
            v[k] = keep;
            double fd = (lp - lm) / (2 * h);
            if (!(fabs(fd - got[k]) <= 1e-6 * fmax(1, fabs(fd))))
                fail_msg("d loss / d %s[%lld]: reverse mode %.12g, central difference %.12g",
                         i < np ? remat_nn_params_name(n->p, i) : "x", (long long)k, got[k], fd);
        }
    }
    outs_free(&go);
    remat_program_free(pf);
    free(in);
    remat_fn_free(g);
    remat_fn_free(f);
}

static void test_nn_grad_central_differences(void **state)
{
    (void)state;
    enum { R = 2, W = 4, H = 6 };
    const remat_nn_activation acts[] = {REMAT_NN_GELU, REMAT_NN_GELU_ERF, REMAT_NN_TANH, REMAT_NN_SILU,
                                        REMAT_NN_RELU};
    for (size_t a = 0; a < sizeof acts / sizeof *acts; a++) {
        remat_nn_module *ffn = remat_nn_ffn(W, H, acts[a]);
        remat_nn_module *r = remat_nn_remat(ffn, remat_dots_with_no_batch_dims_saveable);
        remat_nn_module *seq = remat_nn_sequential(2, (remat_nn_module *[]){ffn, r});
        net_t n = net_init(seq, 5, REMAT_F64, 2, DIMS(R, W));
        for (int i = 0; i < remat_nn_params_count(n.p); i++) { /* nonzero biases */
            remat_tensor t = remat_nn_params_tensor(n.p, i);
            if (strstr(remat_nn_params_name(n.p, i), "bias") || strstr(remat_nn_params_name(n.p, i), "scale"))
                fill_uniform(t.data, remat_shape_numel(&t.shape), 0.2, 0.9);
        }
        double x[R * W];
        fill_uniform(x, R * W, -1.5, 1.5);
        check_fd(&n, 2, DIMS(R, W), x);
        remat_nn_module_free(ffn);
        remat_nn_module_free(r);
        net_free(&n);
    }
}

/* softmax cross-entropy and MSE: values and gradients */
static void test_nn_losses(void **state)
{
    (void)state;
    enum { B = 3, C = 4 };
    double logits[B * C], labels[B * C] = {0}, target[B * C];
    fill_uniform(logits, B * C, -30, 30);
    fill_uniform(target, B * C, -1, 1);
    for (int b = 0; b < B; b++)
        labels[b * C + (b * 3) % C] = 1;
    double want_ce = 0, want_mse = 0, dce[B * C], dmse[B * C];
    for (int b = 0; b < B; b++) {
        double m = -INFINITY, s = 0;
        for (int c = 0; c < C; c++)
            m = fmax(m, logits[b * C + c]);
        for (int c = 0; c < C; c++)
            s += exp(logits[b * C + c] - m);
        for (int c = 0; c < C; c++) {
            double logp = logits[b * C + c] - m - log(s);
            want_ce -= labels[b * C + c] * logp / B;
            dce[b * C + c] = (exp(logp) - labels[b * C + c]) / B;
            double d = logits[b * C + c] - target[b * C + c];
            want_mse += d * d / (B * C);
            dmse[b * C + c] = 2 * d / (B * C);
        }
    }
    for (int k = 0; k < 2; k++) {
        remat_fn *f = remat_fn_new("loss");
        remat_val l = remat_arg(f, "logits", REMAT_F64, 2, DIMS(B, C));
        remat_val y = remat_arg(f, "y", REMAT_F64, 2, DIMS(B, C));
        remat_fn_output(f, k == 0 ? remat_nn_softmax_cross_entropy(f, l, y) : remat_nn_mse(f, l, y));
        remat_fn *vg = ad_ok(AD_VALUE_AND_GRAD, f, 1, (int[]){0});
        remat_tensor in[2] = {remat_tensor_f64(logits, 2, DIMS(B, C)),
                              remat_tensor_f64(k == 0 ? labels : target, 2, DIMS(B, C))};
        outs_t o;
        run_fn(vg, 2, in, &o, NULL, NULL);
        double want = k == 0 ? want_ce : want_mse;
        check_close("loss", 1, o.t[0].data, &want, 1e-13, 0);
        check_close("d loss / d logits", B * C, o.t[1].data, k == 0 ? dce : dmse, 1e-12, 1e-15);
        outs_free(&o);
        remat_fn_free(vg);
        remat_fn_free(f);
    }
}

/* ---- scan over layers ---- */

enum { SL = 6, SB = 3, SW = 4, SH = 8 };

/* the unrolled network: FFN_0 .. FFN_{SL-1} */
static remat_nn_module *unrolled(void)
{
    remat_nn_module *blocks[SL];
    for (int l = 0; l < SL; l++)
        blocks[l] = remat_nn_ffn(SW, SH, REMAT_NN_GELU);
    remat_nn_module *seq = remat_nn_sequential(SL, blocks);
    for (int l = 0; l < SL; l++)
        remat_nn_module_free(blocks[l]);
    return seq;
}

static remat_nn_module *scanned(const char *schedule, const remat_policy *policy)
{
    remat_nn_module *blk = remat_nn_ffn(SW, SH, REMAT_NN_GELU);
    remat_nn_module *body = policy ? remat_nn_remat(blk, policy) : remat_nn_module_ref(blk);
    remat_scan_options opt = {.schedule = spec_of(schedule)};
    remat_nn_module *s = remat_nn_scan(body, SL, &opt);
    remat_nn_module_free(blk);
    remat_nn_module_free(body);
    return s;
}

static void test_nn_scan_equals_unrolled(void **state)
{
    (void)state;
    net_t u = net_init(unrolled(), 9, REMAT_F32, 2, DIMS(SB, SW));
    net_t s = net_init(scanned("store-all", NULL), 9, REMAT_F32, 2, DIMS(SB, SW));
    assert_int_equal(remat_nn_params_count(s.p), 6);
    assert_string_equal(remat_nn_params_name(s.p, 2), "Dense_0/kernel");
    remat_tensor k = remat_nn_params_tensor(s.p, 2);
    assert_int_equal(k.shape.rank, 3);
    assert_int_equal(k.shape.dims[0], SL);
    /* layer l of the stack = FFN_l of the unrolled network */
    for (int l = 0; l < SL; l++)
        for (int i = 0; i < 6; i++) {
            remat_tensor a = remat_nn_params_tensor(u.p, 6 * l + i), b = remat_nn_params_tensor(s.p, i);
            size_t per = tbytes(a.dtype, &a.shape);
            assert_memory_equal(a.data, (char *)b.data + (size_t)l * per, per); /* contract 1: the same draws */
        }
    float x[SB * SW];
    for (int i = 0; i < SB * SW; i++)
        x[i] = (float)urand(-1, 1);
    outs_t ou, os;
    remat_fn *fu = build(&u, REMAT_F32, 2, DIMS(SB, SW), false), *fs = build(&s, REMAT_F32, 2, DIMS(SB, SW), false);
    remat_tensor *iu = inputs(&u, remat_tensor_f32(x, 2, DIMS(SB, SW))), *is = inputs(&s, iu[6 * SL]);
    run_fn(fu, 6 * SL + 1, iu, &ou, NULL, NULL);
    run_fn(fs, 7, is, &os, NULL, NULL);
    assert_memory_equal(ou.t[0].data, os.t[0].data, sizeof x);
    outs_free(&ou);
    outs_free(&os);
    free(iu);
    free(is);
    remat_fn_free(fu);
    remat_fn_free(fs);
    net_free(&u);
    net_free(&s);
}

/* Without checkpointing, a stack of FFN blocks keeps every block's
 * activations for the backward; the root program holds them in the weight
 * gradients' buffers until those are written (src/exec/out_scratch.c), as
 * XLA does. The arena at most half of what it is with everything in it
 * (REMAT_NO_INPLACE=1), the measured peak the plan's, the same gradient
 * bits (contract 3: only where values live changes). */
static void test_nn_ffn_activations_in_gradient_buffers(void **state)
{
    (void)state;
    enum { L = 4, W = 32, B = 16 };
    remat_nn_module *blocks[L];
    for (int l = 0; l < L; l++)
        blocks[l] = remat_nn_ffn(W, 4 * W, REMAT_NN_GELU);
    net_t n = net_init(remat_nn_sequential(L, blocks), 5, REMAT_F32, 2, DIMS(B, W));
    for (int l = 0; l < L; l++)
        remat_nn_module_free(blocks[l]);
    remat_fn *f = build(&n, REMAT_F32, 2, DIMS(B, W), true);
    const int np = remat_nn_params_count(n.p);
    int *argnums = xcalloc((size_t)np, sizeof *argnums);
    for (int i = 0; i < np; i++)
        argnums[i] = i;
    remat_fn *g = grad_ok(f, np, argnums);
    float x[B * W];
    for (int i = 0; i < B * W; i++)
        x[i] = (float)urand(-1, 1);
    remat_tensor *in = inputs(&n, remat_tensor_f32(x, 2, DIMS(B, W)));
    setenv("REMAT_NO_INPLACE", "1", 1);
    remat_program *pa = compile_ok(g);
    unsetenv("REMAT_NO_INPLACE");
    remat_program *po = compile_ok(g);
    outs_t oa, oo;
    remat_stats sa, so;
    remat_memory_plan pla, plo;
    run_prog(pa, np + 1, in, &oa, &sa);
    run_prog(po, np + 1, in, &oo, &so);
    remat_program_plan(pa, &pla);
    remat_program_plan(po, &plo);
    assert_int_equal(sa.peak_arena_bytes, pla.arena_bytes);
    assert_int_equal(so.peak_arena_bytes, plo.arena_bytes);
    assert_true(2 * plo.arena_bytes <= pla.arena_bytes);
    assert_int_equal(oa.n, np);
    for (int i = 0; i < np; i++) /* contract 3 */
        assert_memory_equal(oa.t[i].data, oo.t[i].data, remat_tensor_bytes(&oa.t[i]));
    outs_free(&oa);
    outs_free(&oo);
    remat_program_free(pa);
    remat_program_free(po);
    free(in);
    free(argnums);
    remat_fn_free(g);
    remat_fn_free(f);
    net_free(&n);
}

/* every schedule and policy: the same gradient bits; measured peak = plan */
static void test_nn_scan_schedules_bitwise(void **state)
{
    (void)state;
    const char *scheds[] = {"store-all", "per-step", "binomial:2", "binomial:3", "periodic:2", "online:2"};
    const remat_policy *pols[] = {NULL, remat_nothing_saveable, remat_dots_with_no_batch_dims_saveable};
    float x[SB * SW];
    for (int i = 0; i < SB * SW; i++)
        x[i] = (float)urand(-1, 1);
    float *ref = NULL;
    size_t ref_bytes = 0;
    size_t peak_store_all = 0;
    /* one set of parameters for every variant (a remat'd block would draw
     * its own: it is named CheckpointFFN) */
    net_t base = net_init(scanned("store-all", NULL), 4, REMAT_F32, 2, DIMS(SB, SW));
    for (size_t si = 0; si < sizeof scheds / sizeof *scheds; si++)
        for (size_t pi = 0; pi < sizeof pols / sizeof *pols; pi++) {
            net_t s = {.m = scanned(scheds[si], pols[pi]), .p = base.p};
            remat_fn *f = build(&s, REMAT_F32, 2, DIMS(SB, SW), true);
            remat_fn *g = grad_ok(f, 0, NULL);
            remat_tensor *in = inputs(&s, remat_tensor_f32(x, 2, DIMS(SB, SW)));
            outs_t o;
            remat_stats st;
            remat_memory_plan plan;
            run_fn(g, 7, in, &o, &st, &plan);
            assert_int_equal(st.peak_arena_bytes, plan.arena_bytes);
            assert_int_equal(st.peak_snapshot_bytes, plan.peak_snapshot_bytes);
            size_t bytes = 0;
            for (int i = 0; i < o.n; i++)
                bytes += tbytes(o.t[i].dtype, &o.t[i].shape);
            float *flat = xmalloc(bytes);
            for (int i = 0, at = 0; i < o.n; i++) {
                size_t b = tbytes(o.t[i].dtype, &o.t[i].shape);
                memcpy((char *)flat + at, o.t[i].data, b);
                at += (int)b;
            }
            if (!ref) {
                ref = flat;
                ref_bytes = bytes;
                peak_store_all = plan.peak_snapshot_bytes;
            } else {
                assert_int_equal(bytes, ref_bytes);
                if (memcmp(flat, ref, bytes) != 0) /* contract 3 */
                    fail_msg("schedule %s, policy %s: gradient bits differ from store-all", scheds[si],
                             pols[pi] ? remat_policy_label(pols[pi]) : "none");
                free(flat);
            }
            if (strncmp(scheds[si], "binomial", 8) == 0)
                assert_true(plan.peak_snapshot_bytes < peak_store_all);
            outs_free(&o);
            free(in);
            remat_fn_free(g);
            remat_fn_free(f);
            remat_nn_module_free(s.m);
        }
    free(ref);
    net_free(&base);
}

/* a scan's stacked result that is a function output is written into the
 * caller's buffer: no arena copy of it (a scanned network's parameter
 * gradients would otherwise be held twice) */
static void test_nn_scan_result_written_in_place(void **state)
{
    (void)state;
    enum { T = 10, M = 500 };
    remat_fn *body = remat_fn_new("body");
    remat_val c = remat_arg(body, "c", REMAT_F64, 1, DIMS(M));
    remat_val xt = remat_arg(body, "x", REMAT_F64, 1, DIMS(M));
    remat_fn_output(body, remat_sin(body, remat_add(body, c, xt)));
    remat_fn_output(body, remat_mul(body, c, xt));
    double c0[M], xs[T * M];
    fill_uniform(c0, M, -1, 1);
    fill_uniform(xs, T * M, -1, 1);
    remat_memory_plan plan[2];
    outs_t o[2];
    for (int k = 0; k < 2; k++) {
        remat_fn *f = remat_fn_new("f");
        remat_val ci = remat_arg(f, "c0", REMAT_F64, 1, DIMS(M)), xi = remat_arg(f, "xs", REMAT_F64, 2, DIMS(T, M));
        remat_val cout, ys;
        assert_ok(remat_scan(f, body, T, 1, &ci, 1, &xi, 0, NULL, NULL, &cout, &ys));
        /* k = 0: the result itself, twice (the second is a copy); k = 1: only ops of it */
        remat_fn_output(f, k ? remat_mul_scalar(f, ys, 1.0) : ys);
        remat_fn_output(f, k ? remat_neg(f, ys) : remat_reshape(f, ys, 1, DIMS(T * M)));
        remat_tensor in[2] = {remat_tensor_f64(c0, 1, DIMS(M)), remat_tensor_f64(xs, 2, DIMS(T, M))};
        run_fn(f, 2, in, &o[k], NULL, &plan[k]);
        remat_fn_free(f);
    }
    assert_memory_equal(o[0].t[0].data, o[1].t[0].data, sizeof xs); /* contract 1; ys * 1.0 is exact */
    assert_memory_equal(o[0].t[1].data, o[0].t[0].data, sizeof xs); /* a copy: exact */
    assert_true(plan[0].arena_bytes + sizeof xs <= plan[1].arena_bytes);
    outs_free(&o[0]);
    outs_free(&o[1]);
    remat_fn_free(body);
}

/* ---- the residual report of seed 002's loss, against JAX's ---- */

/* "p['params']['Dense_0']['bias']" -> "Dense_0/bias" */
static void flax_arg_path(const char *jax, char *out, size_t cap)
{
    size_t at = 0;
    const char *p = strstr(jax, "['params']");
    p = p ? p + strlen("['params']") : jax;
    while ((p = strstr(p, "['")) != NULL && at + 1 < cap) {
        p += 2;
        const char *e = strstr(p, "']");
        if (!e)
            break;
        at += (size_t)snprintf(out + at, cap - at, "%s%.*s", at ? "/" : "", (int)(e - p), p);
        p = e + 2;
    }
    out[at < cap ? at : cap - 1] = 0;
}

/* grad of sum(apply(x)^2) w.r.t. the parameters under nn.remat(MLP,
 * dots_with_no_batch_dims_saveable), seed 0, D 3, F 8. JAX saves the same
 * arguments, the two hidden Dense products (the relus are recomputed from
 * them) and one value for the square's derivative: remat keeps the last
 * Dense output y, JAX its square rule's 2*y ("output of mul"). x is an
 * argument here, a closed-over constant in the golden. */
static void test_nn_seed002_residuals(void **state)
{
    (void)state;
    remat_nn_module *mlp = remat_nn_mlp(8, 3, REMAT_NN_RELU);
    net_t n = net_init(remat_nn_remat(mlp, remat_dots_with_no_batch_dims_saveable), 0, REMAT_F32, 1, DIMS(3));
    remat_fn *f = build(&n, REMAT_F32, 1, DIMS(3), true);
    remat_residual_list *r;
    assert_ok(remat_saved_residuals(f, 6, (int[]){0, 1, 2, 3, 4, 5}, &r));
    const cJSON *parsed = jget(jget(golden("nn_flax.json"), "mlp_residuals"), "parsed"), *e;
    int jax_dots = 0, jax_args = 0, jax_other = 0, dots = 0, args = 0, other = 0;
    cJSON_ArrayForEach(e, parsed)
    {
        const char *kind = jget(e, "kind")->valuestring;
        if (strcmp(kind, "argument") == 0) {
            char path[256];
            flax_arg_path(jget(e, "arg")->valuestring, path, sizeof path);
            bool found = false;
            for (int i = 0; i < remat_residual_list_count(r); i++) {
                const remat_residual *x = remat_residual_list_get(r, i);
                found |= x->kind == REMAT_RESIDUAL_ARGUMENT && strcmp(x->name, path) == 0;
            }
            if (!found)
                fail_msg("JAX saves the argument %s; remat does not", path);
            jax_args++;
        } else if (strcmp(kind, "output") == 0 && strcmp(jget(e, "primitive")->valuestring, "dot_general") == 0) {
            jax_dots++;
        } else if (strcmp(kind, "output") == 0) {
            jax_other++;
            assert_string_not_equal(jget(e, "primitive")->valuestring, "max"); /* relu recomputed */
        }
    }
    for (int i = 0; i < remat_residual_list_count(r); i++) {
        const remat_residual *x = remat_residual_list_get(r, i);
        if (x->kind == REMAT_RESIDUAL_ARGUMENT && strcmp(x->name, "x") != 0)
            args++;
        else if (x->kind == REMAT_RESIDUAL_OUTPUT && x->op == REMAT_OP_DOT_GENERAL)
            dots++;
        else if (x->kind == REMAT_RESIDUAL_OUTPUT) {
            assert_int_not_equal(x->op, REMAT_OP_RELU);
            other++;
        }
    }
    assert_int_equal(args, jax_args);
    assert_int_equal(dots, jax_dots);
    assert_int_equal(dots, 2);
    assert_int_equal(other, jax_other);
    remat_residual_list_free(r);
    remat_fn_free(f);
    net_free(&n);
    remat_nn_module_free(mlp);
}

/* ---- Flax's forward values: activations, LayerNorm, the FFN network ---- */

static void check_golden_f32(const char *what, const float *got, const cJSON *want_arr, double rtol, double atol)
{
    jarr w = jarr_get(want_arr);
    double *g = xcalloc((size_t)w.n, sizeof *g);
    for (int64_t i = 0; i < w.n; i++)
        g[i] = got[i];
    check_close(what, w.n, g, w.data, rtol, atol);
    free(g);
    free(w.data);
}

/* one f32 op chain on a golden input, against Flax's output */
static void check_act_golden(remat_nn_module *m, const char *key, const cJSON *x_arr, const cJSON *want_arr)
{
    jarr x = jarr_get(x_arr);
    float *xf = xcalloc((size_t)x.n, sizeof *xf);
    for (int64_t i = 0; i < x.n; i++)
        xf[i] = (float)x.data[i];
    net_t n = net_init(m, 0, REMAT_F32, x.shape.rank, x.shape.dims);
    remat_fn *f = build(&n, REMAT_F32, x.shape.rank, x.shape.dims, false);
    remat_tensor *in = inputs(&n, remat_tensor_f32(xf, x.shape.rank, x.shape.dims));
    outs_t o;
    run_fn(f, remat_nn_params_count(n.p) + 1, in, &o, NULL, NULL);
    /* libm's tanhf/erff/expf against XLA's own f32 approximations: a few ulp */
    check_golden_f32(key, o.t[0].data, want_arr, 4e-7, 1e-7);
    outs_free(&o);
    free(in);
    remat_fn_free(f);
    net_free(&n);
    free(xf);
    free(x.data);
}

static void test_nn_flax_activations_layernorm(void **state)
{
    (void)state;
    const cJSON *a = jget(golden("nn_flax.json"), "activations");
    static const struct {
        const char *key;
        remat_nn_activation act;
    } acts[] = {{"gelu_tanh", REMAT_NN_GELU}, {"gelu_erf", REMAT_NN_GELU_ERF}, {"tanh", REMAT_NN_TANH},
                {"silu", REMAT_NN_SILU},      {"relu", REMAT_NN_RELU}};
    for (size_t i = 0; i < sizeof acts / sizeof *acts; i++)
        check_act_golden(remat_nn_act(acts[i].act), acts[i].key, jget(a, "x"), jget(a, acts[i].key));
    const cJSON *ln = jget(golden("nn_flax.json"), "layernorm");
    check_act_golden(remat_nn_layer_norm(jget(ln, "epsilon")->valuedouble), "LayerNorm", jget(ln, "x"),
                     jget(ln, "output"));
}

/* Net = FFN_0..FFN_2 + Dense_0(10), PRNGKey(3), x (2, 4): our init, Flax's output */
static void test_nn_flax_ffn_net(void **state)
{
    (void)state;
    for (int k = 0; k < 2; k++) {
        const cJSON *g = jget(golden("nn_flax.json"), k ? "net_remat" : "net");
        int depth = (int)jget(g, "depth")->valuedouble;
        int64_t w = (int64_t)jget(g, "width")->valuedouble;
        remat_nn_module *mods[8];
        for (int l = 0; l < depth; l++) {
            remat_nn_module *ffn = remat_nn_ffn(w, 4 * w, REMAT_NN_GELU);
            mods[l] = k ? remat_nn_remat(ffn, NULL) : remat_nn_module_ref(ffn);
            remat_nn_module_free(ffn);
        }
        mods[depth] = remat_nn_dense(10, true);
        remat_nn_module *seq = remat_nn_sequential(depth + 1, mods);
        for (int l = 0; l <= depth; l++)
            remat_nn_module_free(mods[l]);
        jarr x = jarr_get(jget(g, "x"));
        net_t n = net_init(remat_nn_block("Net", seq), (uint64_t)jget(g, "seed")->valuedouble, REMAT_F32,
                           x.shape.rank, x.shape.dims);
        remat_nn_module_free(seq);
        /* every parameter Flax has, with its values (init: see test_nn_random) */
        const cJSON *params = jget(g, "params"), *p;
        int count = 0;
        cJSON_ArrayForEach(p, params)
        {
            int i = remat_nn_params_find(n.p, p->string);
            if (i < 0)
                fail_msg("Flax parameter %s missing", p->string);
            check_golden_f32(p->string, remat_nn_params_tensor(n.p, i).data, p, 0, 0);
            count++;
        }
        assert_int_equal(count, remat_nn_params_count(n.p));
        float xf[64];
        for (int64_t i = 0; i < x.n; i++)
            xf[i] = (float)x.data[i];
        remat_fn *f = build(&n, REMAT_F32, x.shape.rank, x.shape.dims, false);
        remat_tensor *in = inputs(&n, remat_tensor_f32(xf, x.shape.rank, x.shape.dims));
        outs_t o;
        run_fn(f, remat_nn_params_count(n.p) + 1, in, &o, NULL, NULL);
        check_golden_f32("Net output", o.t[0].data, jget(g, "output"), 2e-6, 1e-6);
        outs_free(&o);
        free(in);
        remat_fn_free(f);
        net_free(&n);
        free(x.data);
    }
}

/* ---- errors ---- */

static void test_nn_errors(void **state)
{
    (void)state;
    assert_null(remat_nn_dense(0, true));
    assert_contains(remat_last_error(), "features 0");
    assert_null(remat_nn_mlp(4, 0, REMAT_NN_RELU));
    assert_null(remat_nn_residual(NULL));
    assert_null(remat_nn_block("a/b", NULL));
    remat_nn_activation a;
    assert_int_equal(remat_nn_activation_parse("swish", &a), REMAT_ERR_VALUE);
    assert_contains(remat_last_error(), "'swish'");
    assert_ok(remat_nn_activation_parse("gelu_erf", &a));
    assert_int_equal(a, REMAT_NN_GELU_ERF);

    /* a scanned block must keep its shape */
    remat_nn_module *d = remat_nn_dense(5, true);
    remat_nn_module *s = remat_nn_scan(d, 3, NULL);
    remat_nn_params *p;
    assert_int_equal(remat_nn_init(s, remat_prng_key_from_seed(0), REMAT_F32, 2, DIMS(2, 4), &p), REMAT_ERR_SHAPE);
    assert_contains(remat_last_error(), "keep its input's shape");
    assert_null(p);
    remat_scan_options bad = {.body_policy = remat_nothing_saveable};
    assert_null(remat_nn_scan(d, 3, &bad));
    assert_null(remat_nn_scan(d, 0, NULL));

    /* apply with parameters of the wrong shape names the layer */
    assert_ok(remat_nn_init(d, remat_prng_key_from_seed(0), REMAT_F32, 2, DIMS(2, 4), &p));
    remat_fn *f = remat_fn_new("f");
    remat_val pv[2];
    assert_ok(remat_nn_params_args(f, p, pv));
    remat_val x = remat_arg(f, "x", REMAT_F32, 2, DIMS(2, 6)), y;
    assert_int_equal(remat_nn_apply(d, f, x, pv, &y), REMAT_ERR_SHAPE);
    assert_contains(remat_last_error(), "kernel f32[4,5]");
    assert_int_equal(y, REMAT_NONE);
    remat_nn_params_free(p);
    assert_int_equal(remat_nn_init(d, remat_prng_key_from_seed(0), REMAT_F32, 0, NULL, &p), REMAT_ERR_SHAPE);
    assert_int_equal(remat_nn_init(NULL, remat_prng_key_from_seed(0), REMAT_F32, 1, DIMS(2), &p), REMAT_ERR_NULL);
    remat_fn_free(f);
    remat_nn_module_free(s);
    remat_nn_module_free(d);
    remat_nn_module_free(NULL);
    remat_nn_params_free(NULL);
}

/* Weights files (remat_nn_params_save / _load, safetensors): a round trip
 * restores every parameter bit for bit into freshly initialised ones (another
 * seed), the header is the documented JSON; bad files (truncated, not
 * safetensors, another network, a wrong shape or dtype) are errors naming
 * the file and what is wrong, and leave the parameters as they were. */
static char *saved(const remat_nn_params *p, size_t *len)
{
    char *buf = NULL;
    FILE *m = open_memstream(&buf, len);
    assert_non_null(m);
    assert_ok(remat_nn_params_save(p, m));
    assert_int_equal(fclose(m), 0);
    return buf;
}

static remat_status load_bytes(remat_nn_params *p, const void *bytes, size_t n, char *path, size_t cap)
{
    write_temp(path, cap, "weights", bytes, n);
    remat_status st = remat_nn_params_load(p, path);
    unlink(path);
    return st;
}

static void test_nn_weights_safetensors(void **state)
{
    (void)state;
    remat_nn_module *net = remat_nn_mlp(5, 3, REMAT_NN_RELU), *other = remat_nn_mlp(6, 3, REMAT_NN_RELU);
    remat_nn_params *a, *b, *c, *d64;
    assert_ok(remat_nn_init(net, remat_prng_key_from_seed(1), REMAT_F32, 1, DIMS(4), &a));
    assert_ok(remat_nn_init(net, remat_prng_key_from_seed(2), REMAT_F32, 1, DIMS(4), &b));
    assert_ok(remat_nn_init(other, remat_prng_key_from_seed(1), REMAT_F32, 1, DIMS(4), &c));
    assert_ok(remat_nn_init(net, remat_prng_key_from_seed(1), REMAT_F64, 1, DIMS(4), &d64));
    size_t n;
    char *file = saved(a, &n), path[256];
    /* the layout: length, JSON, data 8-aligned */
    uint64_t hl = 0;
    for (int k = 0; k < 8; k++)
        hl |= (uint64_t)(unsigned char)file[k] << (8 * k);
    assert_int_equal((8 + hl) % 8, 0);
    assert_int_equal(n, 8 + hl + remat_nn_params_bytes(a));
    char *head = strndup(file + 8, hl);
    assert_contains(head, "\"Dense_0/kernel\":{\"dtype\":\"F32\",\"shape\":[4,5],\"data_offsets\":[0,80]}");
    assert_contains(head, "\"__metadata__\":{\"format\":\"flax\",\"producer\":\"remat\"}");
    free(head);
    /* round trip into other values: bitwise */
    assert_ok(load_bytes(b, file, n, path, sizeof path));
    for (int i = 0; i < remat_nn_params_count(a); i++) {
        remat_tensor ta = remat_nn_params_tensor(a, i), tb = remat_nn_params_tensor(b, i);
        assert_memory_equal(ta.data, tb.data, remat_tensor_bytes(&ta));
    }
    /* bad files: each names the file and the fault; b keeps its values */
    remat_nn_params *fresh;
    assert_ok(remat_nn_init(net, remat_prng_key_from_seed(2), REMAT_F32, 1, DIMS(4), &fresh));
    const float keep = ((const float *)remat_nn_params_tensor(fresh, 0).data)[0];
    assert_int_equal(load_bytes(fresh, file, n - 1, path, sizeof path), REMAT_ERR_VALUE); /* truncated */
    assert_contains(remat_last_error(), path);
    assert_contains(remat_last_error(), "bytes of data (truncated?)");
    assert_int_equal(load_bytes(fresh, "hello", 5, path, sizeof path), REMAT_ERR_VALUE);
    assert_contains(remat_last_error(), "too short for a safetensors file");
    assert_int_equal(load_bytes(fresh, "parameter,index,value\n", 22, path, sizeof path), REMAT_ERR_VALUE);
    assert_contains(remat_last_error(), "header length");
    char *broken = malloc(n);
    memcpy(broken, file, n);
    broken[8] = '[';
    assert_int_equal(load_bytes(fresh, broken, n, path, sizeof path), REMAT_ERR_VALUE);
    assert_contains(remat_last_error(), "safetensors header, byte 8: the header is not a JSON object");
    free(broken);
    size_t nc;
    char *fc = saved(c, &nc); /* another width: shapes differ */
    assert_int_equal(load_bytes(fresh, fc, nc, path, sizeof path), REMAT_ERR_VALUE);
    assert_contains(remat_last_error(), "has shape [4, 6]; the network's is [4, 5]");
    free(fc);
    char *f64 = saved(d64, &nc);
    assert_int_equal(load_bytes(fresh, f64, nc, path, sizeof path), REMAT_ERR_VALUE);
    assert_contains(remat_last_error(), "is F64; the parameters are F32");
    free(f64);
    assert_int_equal(remat_nn_params_load(fresh, "/nonexistent/w.safetensors"), REMAT_ERR_IO);
    assert_contains(remat_last_error(), "/nonexistent/w.safetensors");
    assert_true(((const float *)remat_nn_params_tensor(fresh, 0).data)[0] == keep);
    free(file);
    remat_nn_params_free(fresh);
    remat_nn_params_free(a);
    remat_nn_params_free(b);
    remat_nn_params_free(c);
    remat_nn_params_free(d64);
    remat_nn_module_free(net);
    remat_nn_module_free(other);
}

int main(void)
{
    remat_test_backend(); /* REMAT_BACKEND: skip (77) when it is not there */
    rng_seed(0x6e6e5f7465737431ull);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nn_mlp_names_as_flax),
        cmocka_unit_test(test_nn_block_names),
        cmocka_unit_test(test_nn_ffn_forward_matches_loops),
        cmocka_unit_test(test_nn_grad_central_differences),
        cmocka_unit_test(test_nn_losses),
        cmocka_unit_test(test_nn_scan_equals_unrolled),
        cmocka_unit_test(test_nn_scan_schedules_bitwise),
        cmocka_unit_test(test_nn_ffn_activations_in_gradient_buffers),
        cmocka_unit_test(test_nn_scan_result_written_in_place),
        cmocka_unit_test(test_nn_seed002_residuals),
        cmocka_unit_test(test_nn_flax_activations_layernorm),
        cmocka_unit_test(test_nn_flax_ffn_net),
        cmocka_unit_test(test_nn_errors),
        cmocka_unit_test(test_nn_weights_safetensors),
    };
    return cmocka_run_group_tests(tests, NULL, golden_free_all);
}

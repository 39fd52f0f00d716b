/*
 * test_cuda_kernels.c — each CUDA kernel family against its CPU reference
 * (llm.c's dev/cuda pattern: kernel, reference, checker), on a device.
 * Without one (or without CUDA) the suite prints why and exits 77 (SKIP).
 *
 * Exact families (kernels/README.md "Numerics") must give the CPU's bits:
 * elementwise + - * / sqrt, compares, max/min, select, integer_pow, relu,
 * convert, reductions, structural ops, add_pad, fused groups. Transcendentals
 * are within CUDA's documented ulp bound + 2 (glibc's own error); GEMMs
 * within a relative tolerance. Whole programs compiled for both backends
 * are compared too: lowering, fusion, staging and remat_run_device.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_kernels.h"
#include "test_util.h"

#if REMAT_HAVE_CUDA
#include "kernels/cuda/cuda_kernels.h"

enum { N = 4099 }; /* not a multiple of the block */

static rmi_cuda_state *cs; /* device 0's stream: every kernel here is handed it (no thread-current state) */

static void *dev_from(const void *host, size_t bytes)
{
    void *d = rmi_cuda_malloc(0, bytes);
    assert_non_null(d);
    rmi_cuda_copy_in(cs, d, host, bytes);
    return d;
}

static void dev_to(void *host, void *d, size_t bytes)
{
    rmi_cuda_copy_out(cs, host, d, bytes);
    char msg[400];
    if (rmi_cuda_finish(cs, msg, sizeof msg) != 0)
        fail_msg("cuda: %s", msg);
    rmi_cuda_free(0, d);
}

/* random values with the awkward ones mixed in: +-0, +-inf, NaN, tiny, huge */
static void fill_values(double *x, int n, double lo, double hi)
{
    static const double special[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, 1e-310, -1e-310, 1e300, 1.0, -1.0};
    for (int i = 0; i < n; i++)
        x[i] = i < 10 ? special[i] : urand(lo, hi);
}

/* ulps between a and b (NaN == NaN, equal infinities 0) */
static double ulps(double a, double b, int f64)
{
    if (isnan(a) && isnan(b))
        return 0;
    if (a == b)
        return 0;
    if (isnan(a) || isnan(b) || isinf(a) || isinf(b))
        return INFINITY;
    double m = fmax(fabs(a), fabs(b));
    int e;
    frexp(m, &e);
    double ulp = ldexp(1.0, e - (f64 ? 53 : 24));
    double tiny = f64 ? 4.9e-324 : 1.4e-45;
    return fabs(a - b) / fmax(ulp, tiny);
}

/* one unary op on the device and the CPU; maxulp < 0: bit for bit */
static void check_unary(remat_op op, int f64, double lo, double hi, double maxulp)
{
    double x[N], got[N], want[N];
    float xf[N], gotf[N], wantf[N];
    fill_values(x, N, lo, hi);
    for (int i = 0; i < N; i++)
        xf[i] = (float)x[i];
    const size_t es = f64 ? 8 : 4;
    void *in = dev_from(f64 ? (void *)x : (void *)xf, N * es), *out = rmi_cuda_malloc(0, N * es);
    rmi_cuda_unary(cs, f64, op, N, out, in);
    dev_to(f64 ? (void *)got : (void *)gotf, out, N * es);
    rmi_cuda_free(0, in);
    if (f64)
        rmi_cpu_unary_f64(op, N, want, x);
    else
        rmi_cpu_unary_f32(op, N, wantf, xf);
    for (int i = 0; i < N; i++) {
        double g = f64 ? got[i] : gotf[i], w = f64 ? want[i] : wantf[i];
        if (maxulp < 0 ? memcmp(f64 ? (void *)&got[i] : (void *)&gotf[i], f64 ? (void *)&want[i] : (void *)&wantf[i],
                                es) != 0 && !(isnan(g) && isnan(w))
                       : ulps(g, w, f64) > maxulp)
            fail_msg("%s %s(%.17g): cuda %.17g cpu %.17g (%.1f ulp, bound %g)", f64 ? "f64" : "f32",
                     remat_op_name(op), f64 ? x[i] : xf[i], g, w, ulps(g, w, f64), maxulp);
    }
}

static void test_cuda_kernels_exact_unary_ops_give_the_cpus_bits(void **state)
{
    (void)state;
    const remat_op ops[] = {REMAT_OP_NEG, REMAT_OP_RELU, REMAT_OP_SQUARE, REMAT_OP_SQRT};
    for (int f64 = 0; f64 < 2; f64++)
        for (size_t k = 0; k < sizeof ops / sizeof *ops; k++)
            check_unary(ops[k], f64, -50, 50, -1);
}

/* CUDA's maximum ulp errors (kernels/README.md) + 2 for glibc's */
static void test_cuda_kernels_transcendentals_within_the_documented_ulps(void **state)
{
    (void)state;
    const struct { remat_op op; double lo, hi, f32, f64; } t[] = {
        {REMAT_OP_EXP, -80, 80, 2, 1}, {REMAT_OP_LOG, 1e-6, 1e6, 1, 1}, {REMAT_OP_SIN, -100, 100, 2, 2},
        {REMAT_OP_COS, -100, 100, 2, 2}, {REMAT_OP_TANH, -20, 20, 2, 2}, {REMAT_OP_ERF, -5, 5, 2, 2},
        {REMAT_OP_LOG1P, -0.9, 50, 1, 1}, {REMAT_OP_EXPM1, -20, 20, 1, 1}, {REMAT_OP_LOGISTIC, -60, 60, 4, 3},
    };
    for (size_t k = 0; k < sizeof t / sizeof *t; k++) {
        check_unary(t[k].op, 0, t[k].lo, t[k].hi, t[k].f32 + 2);
        check_unary(t[k].op, 1, t[k].lo, t[k].hi, t[k].f64 + 2);
    }
}

static void test_cuda_kernels_binary_select_powers_convert_give_the_cpus_bits(void **state)
{
    (void)state;
    double a[N], b[N], got[N], want[N];
    fill_values(a, N, -20, 20);
    fill_values(b, N, -20, 20);
    for (int i = 0; i < N; i += 7)
        b[i] = a[i]; /* ties for max/min and the compares */
    void *da = dev_from(a, sizeof a), *db = dev_from(b, sizeof b);
    for (int op = 0; op < REMAT_OP_COUNT; op++) {
        if (!remat_op_is_binary((remat_op)op))
            continue;
        for (int sc = 0; sc < 3; sc++) { /* 0: arrays, 1: a scalar, 2: b scalar */
            void *o = rmi_cuda_malloc(0, sizeof got);
            rmi_cuda_binary(cs, 1, op, N, o, da, sc == 1, db, sc == 2);
            dev_to(got, o, sizeof got);
            if (sc == 0)
                rmi_cpu_binary_f64((remat_op)op, N, want, a, b);
            else
                rmi_cpu_binary_scalar_f64((remat_op)op, N, want, a, b, sc == 2 ? 1 : 0);
            for (int i = 0; i < N; i++)
                if (memcmp(&got[i], &want[i], 8) && !(isnan(got[i]) && isnan(want[i])))
                    fail_msg("%s (scalar %d) at %d: cuda %.17g cpu %.17g", remat_op_name((remat_op)op), sc, i, got[i],
                             want[i]);
        }
    }
    const int ks[] = {-5, -3, -2, -1, 0, 1, 2, 3, 4, 5, 7, 12};
    for (size_t k = 0; k < sizeof ks / sizeof *ks; k++) {
        void *o = rmi_cuda_malloc(0, sizeof got);
        rmi_cuda_integer_pow(cs, 1, N, o, da, ks[k]);
        dev_to(got, o, sizeof got);
        rmi_cpu_integer_pow_f64(N, want, a, ks[k]);
        for (int i = 0; i < N; i++)
            if (memcmp(&got[i], &want[i], 8) && !(isnan(got[i]) && isnan(want[i])))
                fail_msg("integer_pow %d of %.17g: cuda %.17g cpu %.17g", ks[k], a[i], got[i], want[i]);
    }
    void *o = rmi_cuda_malloc(0, sizeof got);
    rmi_cuda_select(cs, 1, N, o, db, da, 0, db, 1);
    dev_to(got, o, sizeof got);
    rmi_cpu_select_scalar_f64(N, want, b, a, 0, b, 1);
    assert_memory_equal(got, want, sizeof got);
    float gf[N], wf[N];
    o = rmi_cuda_malloc(0, sizeof gf);
    rmi_cuda_convert(cs, N, 0, o, 1, da);
    dev_to(gf, o, sizeof gf);
    rmi_cpu_convert(N, REMAT_F32, wf, REMAT_F64, a);
    assert_memory_equal(gf, wf, sizeof gf);
    rmi_cuda_free(0, da);
    rmi_cuda_free(0, db);
}

/* sums and maxima over every subset of 4 axes: the CPU's order, its bits */
static void test_cuda_kernels_reductions_give_the_cpus_bits(void **state)
{
    (void)state;
    enum { M = 3 * 5 * 7 * 11 };
    double x[M], got[M], want[M];
    fill_values(x, M, -1e3, 1e3);
    x[4] = 1.0; /* no NaN or inf: every output would be one */
    x[2] = x[3] = 2.0;
    remat_shape sh = {.rank = 4, .dims = {3, 5, 7, 11}};
    void *dx = dev_from(x, sizeof x);
    for (unsigned mask = 0; mask < 16; mask++)
        for (int is_max = 0; is_max < 2; is_max++) {
            remat_cuda_reduce_desc d = {.rank = 4, .dims = {3, 5, 7, 11}};
            bool red[4];
            int64_t n_out = 1;
            for (int k = 0; k < 4; k++) {
                d.reduce[k] = red[k] = (mask >> k) & 1u;
                n_out *= red[k] ? 1 : sh.dims[k];
            }
            void *o = rmi_cuda_malloc(0, sizeof got);
            rmi_cuda_reduce(cs, 1, is_max, o, dx, &d);
            dev_to(got, o, (size_t)n_out * 8);
            if (is_max)
                rmi_cpu_reduce_max(REMAT_F64, want, x, &sh, red);
            else
                rmi_cpu_reduce_sum(REMAT_F64, want, x, &sh, red);
            if (memcmp(got, want, (size_t)n_out * 8))
                fail_msg("reduce_%s over mask %u differs from the CPU", is_max ? "max" : "sum", mask);
        }
    rmi_cuda_free(0, dx);
}

/* f compiled for both backends, run on the same inputs: outputs compared
 * bit for bit (rtol 0) or within rtol */
static void compare_backends(const remat_fn *f, double rtol)
{
    remat_program *pc = NULL, *pg = NULL;
    assert_int_equal(remat_compile(f, remat_backend_cpu(), &pc), REMAT_OK);
    if (remat_compile(f, remat_backend_cuda(0), &pg) != REMAT_OK)
        fail_msg("cuda compile of '%s': %s", remat_fn_name(f), remat_last_error());
    remat_tensor in[8];
    int n_in = remat_program_num_inputs(pc);
    assert_true(n_in <= 8);
    for (int i = 0; i < n_in; i++) {
        in[i] = remat_program_input_desc(pc, i);
        int64_t n = remat_shape_numel(&in[i].shape);
        in[i].data = xmalloc(tbytes(in[i].dtype, &in[i].shape) + 8);
        for (int64_t k = 0; k < n; k++) {
            double v = urand(-1.5, 1.5);
            if (in[i].dtype == REMAT_F64)
                ((double *)in[i].data)[k] = v;
            else
                ((float *)in[i].data)[k] = (float)v;
        }
    }
    outs_t oc, og;
    remat_stats sc, sg;
    run_prog(pc, n_in, in, &oc, &sc);
    run_prog(pg, n_in, in, &og, &sg);
    assert_int_equal(sc.peak_arena_bytes, sg.peak_arena_bytes);
    for (int j = 0; j < oc.n; j++) {
        size_t bytes = tbytes(oc.t[j].dtype, &oc.t[j].shape);
        if (rtol == 0) {
            if (memcmp(oc.t[j].data, og.t[j].data, bytes))
                fail_msg("'%s' output %d: cuda and cpu bits differ", remat_fn_name(f), j);
            continue;
        }
        int64_t n = remat_shape_numel(&oc.t[j].shape);
        for (int64_t k = 0; k < n; k++) {
            double a = oc.t[j].dtype == REMAT_F64 ? ((double *)oc.t[j].data)[k] : ((float *)oc.t[j].data)[k];
            double b = og.t[j].dtype == REMAT_F64 ? ((double *)og.t[j].data)[k] : ((float *)og.t[j].data)[k];
            if (fabs(a - b) > rtol * (1 + fabs(a)))
                fail_msg("'%s' output %d[%lld]: cpu %.17g cuda %.17g", remat_fn_name(f), j, (long long)k, a, b);
        }
    }
    outs_free(&oc);
    outs_free(&og);
    for (int i = 0; i < n_in; i++)
        free(in[i].data);
    remat_program_free(pc);
    remat_program_free(pg);
}

/* structural ops, add(x, pad(g)) (a slice's gradient), fused chains with
 * splat scalars: no GEMM, no transcendental, so the CPU's bits */
static void test_cuda_kernels_structural_fused_add_pad_programs_give_the_cpus_bits(void **state)
{
    (void)state;
    remat_fn *f = remat_fn_new("structural");
    remat_val a = remat_arg(f, "a", REMAT_F64, 3, ((int64_t[]){4, 3, 5}));
    remat_val e = remat_div(f, remat_add(f, remat_mul_scalar(f, a, 0.5), remat_square(f, a)),
                            remat_add_scalar(f, remat_square(f, a), 1.0));
    e = remat_select(f, remat_gt(f, e, a), remat_integer_pow(f, e, 3), remat_relu(f, remat_neg(f, e)));
    remat_val t = remat_transpose(f, e, ((int[]){2, 0, 1}));
    remat_val s = remat_slice(f, t, ((int64_t[]){1, 0, 1}), ((int64_t[]){5, 4, 3}), ((int64_t[]){2, 1, 1}));
    remat_val p = remat_pad(f, s, ((int64_t[]){0, 1, 0}), ((int64_t[]){1, 0, 1}), ((int64_t[]){1, 0, 0}));
    remat_val c = remat_concatenate(f, 3, ((remat_val[]){p, p, p}), 2);
    remat_val b = remat_broadcast_to(f, remat_reduce_max(f, c, 1, ((int[]){1})), 3, ((int64_t[]){2, 4, 9}));
    remat_fn_output(f, remat_add(f, remat_sum_all(f, remat_mul(f, b, b)), remat_sum_all(f, c)));
    assert_fn_ok(f);
    remat_fn *g = grad_ok(f, 0, NULL);
    compare_backends(f, 0);
    compare_backends(g, 0);
    remat_fn_free(g);
    remat_fn_free(f);
}

/* dot_general on cuBLAS against OpenBLAS: plain, transposed, batched, and
 * a batch axis in the middle (transposed into scratch first) */
static void test_cuda_kernels_dot_general_matches_the_cpu(void **state)
{
    (void)state;
    remat_fn *f = remat_fn_new("dots");
    remat_val x = remat_arg(f, "x", REMAT_F64, 2, ((int64_t[]){33, 17}));
    remat_val w = remat_arg(f, "w", REMAT_F64, 2, ((int64_t[]){17, 9}));
    remat_val u = remat_arg(f, "u", REMAT_F64, 3, ((int64_t[]){5, 3, 7}));
    remat_val v = remat_arg(f, "v", REMAT_F64, 3, ((int64_t[]){7, 3, 2}));
    remat_dot_dims d = {.n_contract = 1, .lhs_contract = {2}, .rhs_contract = {0}, .n_batch = 1, .lhs_batch = {1},
                        .rhs_batch = {1}};
    remat_fn_output(f, remat_add(f, remat_sum_all(f, remat_tanh(f, remat_matmul(f, x, w))),
                                 remat_sum_all(f, remat_square(f, remat_dot_general(f, u, v, &d)))));
    remat_fn *g = grad_ok(f, 0, NULL);
    compare_backends(g, 1e-12);
    remat_fn_free(g);
    remat_fn_free(f);
}

static void twice(int n_in, const remat_tensor *ins, remat_tensor *out, void *ctx)
{
    (void)n_in, (void)ctx;
    for (int64_t i = 0; i < remat_shape_numel(&out->shape); i++)
        ((double *)out->data)[i] = 2.0 * ((const double *)ins[0].data)[i];
}

/* remat_run_device on buffers the caller keeps on the device, and a custom
 * op through host copies, counted in host_ops */
static void test_cuda_kernels_run_device_and_custom_ops(void **state)
{
    (void)state;
    static const remat_custom_op op = {.name = "twice", .forward = twice};
    remat_fn *f = remat_fn_new("dev");
    remat_val x = remat_arg(f, "x", REMAT_F64, 1, ((int64_t[]){1000}));
    remat_fn_output(f, remat_custom(f, &op, 1, &x, REMAT_F64, 1, ((int64_t[]){1000})));
    remat_fn_output(f, remat_add_scalar(f, x, 1.0));
    remat_backend *be = remat_backend_cuda(0);
    remat_program *p = NULL;
    assert_int_equal(remat_compile(f, be, &p), REMAT_OK);
    double h[1000], o1[1000], o2[1000];
    for (int i = 0; i < 1000; i++)
        h[i] = i * 0.25;
    void *dx = remat_backend_alloc(be, sizeof h), *d1 = remat_backend_alloc(be, sizeof o1),
         *d2 = remat_backend_alloc(be, sizeof o2);
    assert_true(dx && d1 && d2);
    assert_int_equal(remat_backend_upload(be, dx, h, sizeof h), REMAT_OK);
    remat_tensor in = remat_tensor_f64(dx, 1, ((int64_t[]){1000}));
    remat_tensor out[2] = {remat_tensor_f64(d1, 1, ((int64_t[]){1000})), remat_tensor_f64(d2, 1, ((int64_t[]){1000}))};
    remat_stats st;
    for (int rep = 0; rep < 3; rep++)
        assert_int_equal(remat_run_device(p, 1, &in, 2, out, &st), REMAT_OK);
    assert_int_equal(st.host_ops, 1);
    assert_int_equal(remat_backend_download(be, o1, d1, sizeof o1), REMAT_OK);
    assert_int_equal(remat_backend_download(be, o2, d2, sizeof o2), REMAT_OK);
    for (int i = 0; i < 1000; i++) {
        assert_true(o1[i] == 2.0 * h[i]);
        assert_true(o2[i] == h[i] + 1.0);
    }
    remat_backend_free(be, dx);
    remat_backend_free(be, d1);
    remat_backend_free(be, d2);
    remat_program_free(p);
    remat_fn_free(f);
}
#endif

int main(void)
{
#if REMAT_HAVE_CUDA
    if (!remat_backend_cuda(0)) {
        printf("SKIP: %s\n", remat_last_error());
        return 77;
    }
    char why[256];
    if (!(cs = rmi_cuda_state_new(0, why, sizeof why))) {
        printf("FAIL: %s\n", why);
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cuda_kernels_exact_unary_ops_give_the_cpus_bits),
        cmocka_unit_test(test_cuda_kernels_transcendentals_within_the_documented_ulps),
        cmocka_unit_test(test_cuda_kernels_binary_select_powers_convert_give_the_cpus_bits),
        cmocka_unit_test(test_cuda_kernels_reductions_give_the_cpus_bits),
        cmocka_unit_test(test_cuda_kernels_structural_fused_add_pad_programs_give_the_cpus_bits),
        cmocka_unit_test(test_cuda_kernels_dot_general_matches_the_cpu),
        cmocka_unit_test(test_cuda_kernels_run_device_and_custom_ops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
#else
    printf("SKIP: remat was built without CUDA\n");
    return 77;
#endif
}

/*
 * test_scan_solve.c — scans whose body solves a small linear system (an
 * implicit step's shape): the compiled lane loop (the elimination unrolled,
 * src/lanes/solve.c) gives the interpreter's bits (the CPU
 * kernel's elimination, backend/linalg.c), in value_and_grad (whose
 * backward solves with A^T) and in the JVP, scalar and batched, f64 and
 * f32, vector and k-column right-hand sides; and the plans say the loops
 * really were compiled, the scalar n = 8 body too (its unrolled kernels
 * have thousands of lane instructions, Rodas5's size: the policy, not a
 * cap on size, decides whether they are compiled).
 *
 * Body: y' = y + h solve(K + 0.1 bcast(y), sin(y) + x_t), K a constant
 * whose rows are rotated so that pivoting swaps rows.
 */
#include "test_scan_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remat/remat.h"

typedef struct {
    int64_t m;  /* lanes: 0 scalar; else y (m, n[, k]) and K (m, n, n) */
    int64_t n;  /* the system's size */
    int64_t k;  /* 0: y (.., n); else y (.., n, k) */
    int transpose; /* the body solves with K^T (a transpose op before the solve) */
} body_case;

static remat_shape y_shape(const body_case *c)
{
    remat_shape s = {0};
    if (c->m)
        s.dims[s.rank++] = c->m;
    s.dims[s.rank++] = c->n;
    if (c->k)
        s.dims[s.rank++] = c->k;
    return s;
}

static remat_shape k_shape(const body_case *c)
{
    remat_shape s = {0};
    if (c->m)
        s.dims[s.rank++] = c->m;
    s.dims[s.rank++] = c->n;
    s.dims[s.rank++] = c->n;
    return s;
}

static remat_fn *solve_body(const body_case *c, remat_dtype dt)
{
    remat_shape ys = y_shape(c), ks = k_shape(c);
    remat_fn *b = remat_fn_new("implicit_step");
    remat_val y = remat_arg(b, "y", dt, ys.rank, ys.dims);
    remat_val x = remat_arg(b, "x_t", dt, ys.rank, ys.dims);
    remat_val K = remat_arg(b, "K", dt, ks.rank, ks.dims);
    /* A[.., i, j] = K[.., i, j] + 0.1 y[.., i] (the first column of y when k > 0) */
    remat_val yi = y;
    if (c->k) {
        int64_t lo[3] = {0}, hi[3];
        for (int i = 0; i < ys.rank; i++)
            hi[i] = ys.dims[i];
        hi[ys.rank - 1] = 1;
        yi = remat_reshape(b, remat_slice(b, y, lo, hi, NULL), ys.rank - 1, ys.dims);
    }
    int bd[2] = {0, 1};
    remat_val A = remat_add(b, K, remat_mul_scalar(b, remat_broadcast_in_dim(b, yi, ks.rank, ks.dims, bd), 0.1));
    if (c->transpose)
        A = remat_transpose(b, A, c->m ? ((int[]){0, 2, 1}) : ((int[]){1, 0}));
    remat_val s = remat_linear_solve(b, A, remat_add(b, remat_sin(b, y), x));
    remat_fn_output(b, remat_add(b, y, remat_mul_scalar(b, s, 0.05)));
    assert_fn_ok(b);
    return b;
}

/* loss = sum(sin(scan(body)(y0, xs, K))) */
static remat_fn *scan_loss(const remat_fn *body, const body_case *c, remat_dtype dt, int64_t len, const char *sched)
{
    remat_shape ys = y_shape(c), ks = k_shape(c), xs = {.rank = ys.rank + 1};
    xs.dims[0] = len;
    memcpy(xs.dims + 1, ys.dims, sizeof(int64_t) * (size_t)ys.rank);
    remat_fn *f = remat_fn_new("scan_solve");
    remat_val y0 = remat_arg(f, "y0", dt, ys.rank, ys.dims), x = remat_arg(f, "xs", dt, xs.rank, xs.dims);
    remat_val K = remat_arg(f, "K", dt, ks.rank, ks.dims), out;
    remat_scan_options o = {0};
    if (remat_schedule_parse(sched, &o.schedule) != REMAT_OK)
        fail_msg("schedule %s: %s", sched, remat_last_error());
    scan_ok(f, body, len, 1, &y0, 1, &x, 1, &K, &o, &out, NULL);
    remat_fn_output(f, remat_sum_all(f, remat_sin(f, out)));
    assert_fn_ok(f);
    return f;
}

static void fill_k(remat_tensor *K, const body_case *c)
{
    const int64_t n = c->n, B = c->m ? c->m : 1;
    for (int64_t s = 0; s < B; s++)
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++)
                t_set(K, s * n * n + ((i + s + 1) % n) * n + j, urand(-1, 1) + (i == j ? (double)n : 0.0));
}

static void run_mode(const remat_fn *g, int n_in, const remat_tensor *in, int jit, outs_t *o, remat_memory_plan *plan)
{
    if (jit)
        unsetenv("REMAT_NO_JIT");
    else
        setenv("REMAT_NO_JIT", "1", 1);
    run_fn(g, n_in, in, o, NULL, plan);
    unsetenv("REMAT_NO_JIT");
}

/* g compiled and interpreted: outputs bit for bit, `loops` scan nodes compiled */
static void check_both(const char *what, const remat_fn *g, int n_in, const remat_tensor *in, int64_t loops)
{
    outs_t a, b;
    remat_memory_plan pa, pb;
    run_mode(g, n_in, in, 1, &a, &pa);
    run_mode(g, n_in, in, 0, &b, &pb);
    check_outs_bitwise(what, &a, &b); /* contract 2 */
    assert_int_equal(pb.compiled_loops, 0);
#if REMAT_HAVE_GCCJIT
    if (pa.compiled_loops != loops)
        fail_msg("%s: %lld scan nodes compiled, expected %lld", what, (long long)pa.compiled_loops, (long long)loops);
#else
    (void)loops;
#endif
    outs_free(&a);
    outs_free(&b);
}

static void check_case(const body_case *c, remat_dtype dt, const char *sched)
{
    const int64_t len = 9;
    remat_shape ys = y_shape(c), ks = k_shape(c), xs = {.rank = ys.rank + 1};
    xs.dims[0] = len;
    memcpy(xs.dims + 1, ys.dims, sizeof(int64_t) * (size_t)ys.rank);
    remat_tensor in[6] = {t_rand(dt, ys.rank, ys.dims, -1, 1), t_rand(dt, xs.rank, xs.dims, -0.5, 0.5),
                          t_new(dt, ks.rank, ks.dims)};
    fill_k(&in[2], c);
    in[3] = t_rand(dt, ys.rank, ys.dims, -1, 1); /* tangents */
    in[4] = t_rand(dt, xs.rank, xs.dims, -1, 1);
    in[5] = t_rand(dt, ks.rank, ks.dims, -1, 1);
    remat_fn *body = solve_body(c, dt);
    remat_fn *f = scan_loss(body, c, dt, len, sched);
    char what[128];
    snprintf(what, sizeof what, "solve n=%lld k=%lld m=%lld%s %s %s", (long long)c->n, (long long)c->k,
             (long long)c->m, c->transpose ? " K^T" : "", remat_dtype_name(dt), sched);
    remat_fn *g = ad_ok(AD_VALUE_AND_GRAD, f, 0, NULL);
    check_both(what, g, 3, in, 2);
    remat_fn *j = NULL;
    assert_ok(remat_jvp(f, 0, NULL, &j));
    check_both(what, j, 6, in, 1);
    remat_fn_free(j);
    remat_fn_free(g);
    remat_fn_free(f);
    remat_fn_free(body);
    t_free_all(6, in);
}

static void test_scan_solve_compiled_equals_interpreted(void **state)
{
    (void)state;
    static const body_case cases[] = {
        {0, 3, 0, 0}, {0, 3, 0, 1}, {0, 3, 2, 0}, {5, 3, 0, 0}, {5, 3, 0, 1}, {4, 3, 2, 0}, {0, 1, 0, 0},
        {0, 5, 0, 0}, {2, 8, 0, 0}, {3, 6, 0, 1}, {0, 8, 0, 0},
    };
    static const char *const scheds[] = {"store-all", "binomial:3"};
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++)
        for (int di = 0; di < 2; di++)
            for (int si = 0; si < 2 - di; si++) /* f32: store-all only */
                check_case(&cases[ci], di ? REMAT_F32 : REMAT_F64, scheds[si]);
}

/* larger than the unrolled range: the body is interpreted (LAPACK), and
 * the gradient is still right against the same scan run step by step */
static void test_scan_solve_large_system_interpreted(void **state)
{
    (void)state;
    const body_case c = {0, 10, 0, 0};
    remat_shape ys = y_shape(&c), ks = k_shape(&c), xs = {.rank = 2, .dims = {4, 10}};
    remat_tensor in[3] = {t_rand(REMAT_F64, ys.rank, ys.dims, -1, 1), t_rand(REMAT_F64, 2, xs.dims, -0.5, 0.5),
                          t_new(REMAT_F64, ks.rank, ks.dims)};
    fill_k(&in[2], &c);
    remat_fn *body = solve_body(&c, REMAT_F64);
    remat_fn *f = scan_loss(body, &c, REMAT_F64, 4, "store-all");
    remat_fn *g = ad_ok(AD_VALUE_AND_GRAD, f, 0, NULL);
    outs_t o;
    remat_memory_plan plan;
    run_fn(g, 3, in, &o, NULL, &plan);
    assert_int_equal(plan.compiled_loops, 0);
    outs_t o2;
    check_both("solve n=10", g, 3, in, 0);
    /* the store-all gradient equals binomial's bit for bit */
    remat_fn *f2 = scan_loss(body, &c, REMAT_F64, 4, "binomial:2");
    remat_fn *g2 = ad_ok(AD_VALUE_AND_GRAD, f2, 0, NULL);
    run_fn(g2, 3, in, &o2, NULL, NULL);
    check_outs_bitwise("n=10 store-all vs binomial:2", &o, &o2); /* contract 3 */
    outs_free(&o), outs_free(&o2);
    remat_fn_free(g2), remat_fn_free(f2), remat_fn_free(g), remat_fn_free(f), remat_fn_free(body);
    t_free_all(3, in);
}

int main(void)
{
    setenv("REMAT_JIT", "always", 1); /* the compiled loops, on scans too short for the default policy */
    rng_seed(0x5ca7501eull);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scan_solve_compiled_equals_interpreted),
        cmocka_unit_test(test_scan_solve_large_system_interpreted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

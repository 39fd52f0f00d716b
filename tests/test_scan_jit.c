/*
 * test_scan_jit.c — scan bodies compiled into native loops (libgccjit,
 * src/lanes/translate.c + src/backend/cpu/jit.c) give the interpreter's
 * results bit for bit, and the same stats.
 *
 * Every case builds value_and_grad of a scan, compiles it twice — once as
 * is, once with REMAT_NO_JIT=1 (the body interpreted op by op) — runs both
 * on the same inputs and compares every output bitwise, plus the stats that
 * must not depend on how the body runs (forward evaluations, ops executed,
 * peak snapshot bytes, measured arena == plan). The plans say how many scan
 * nodes were compiled, which checks the loops were really used (or, for a
 * body they cannot take, really not).
 *
 * This file: the bodies the loops translate (the PFR step in every layout,
 * every op, sums, special values, fallbacks). How the lane loops run
 * (counting, streamed plans, lane blocks and ranges on the pool) is
 * test_scan_jit_lanes.c; test_scan_jit_util.h holds what both use.
 *
 * Bitwise assertions rest on contract 2 (docs/design-notes.md, "Bitwise
 * contracts"): compiled = interpreted.
 */
#include "test_scan_jit_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remat/remat.h"

/* Bit for bit, except that any NaN equals any NaN: a compiler may commute
 * a commutative op, and which operand's NaN propagates (its sign and
 * payload) follows the operand order (backend/lane.h). */
static void check_bits_nan_equal(const char *what, const outs_t *a, const outs_t *b)
{
    assert_int_equal(a->n, b->n);
    for (int i = 0; i < a->n; i++) {
        const int64_t n = t_numel(&a->t[i]);
        for (int64_t j = 0; j < n; j++) {
            const double x = t_get(&a->t[i], j), y = t_get(&b->t[i], j);
            const size_t es = remat_dtype_size(a->t[i].dtype);
            const char *px = (const char *)a->t[i].data + (size_t)j * es, *py = (const char *)b->t[i].data + (size_t)j * es;
            if (!(isnan(x) && isnan(y)) && memcmp(px, py, es) != 0)
                fail_msg("%s: output %d [%lld]: compiled %.17g, interpreted %.17g", what, i, (long long)j, x, y);
        }
    }
}

/* f run compiled and interpreted: outputs bit for bit (any NaN equal to any
 * NaN when nan_equal), the same stats; `loops` = scan nodes expected
 * compiled (when built with libgccjit) */
static void check_both(const char *what, const remat_fn *f, int n_in, const remat_tensor *in, int64_t loops,
                       int nan_equal)
{
    result a, b;
    run_mode(f, n_in, in, 1, &a);
    run_mode(f, n_in, in, 0, &b);
    if (nan_equal)
        check_bits_nan_equal(what, &a.o, &b.o);
    else
        check_outs_bitwise(what, &a.o, &b.o);
    assert_int_equal(a.st.forward_evals, b.st.forward_evals);
    assert_int_equal(a.st.ops_executed, b.st.ops_executed);
    assert_int_equal(a.st.recomputed_ops, b.st.recomputed_ops);
    assert_int_equal(a.st.peak_snapshot_bytes, b.st.peak_snapshot_bytes);
    assert_int_equal(a.plan.peak_snapshot_bytes, b.plan.peak_snapshot_bytes);
    assert_int_equal(b.plan.compiled_loops, 0);
#if REMAT_HAVE_GCCJIT
    if (a.plan.compiled_loops != loops)
        fail_msg("%s: %lld scan nodes compiled, expected %lld", what, (long long)a.plan.compiled_loops,
                 (long long)loops);
#else
    (void)loops;
    assert_int_equal(a.plan.compiled_loops, 0);
#endif
    outs_free(&a.o);
    outs_free(&b.o);
}

/* value_and_grad of f, compiled vs interpreted */
static void compare_nan(const char *what, const remat_fn *f, int n_in, const remat_tensor *in, int64_t loops,
                        int nan_equal)
{
    remat_fn *g = ad_ok(AD_VALUE_AND_GRAD, f, 0, NULL);
    check_both(what, g, n_in, in, loops, nan_equal);
    remat_fn_free(g);
}

static void compare(const char *what, const remat_fn *f, int n_in, const remat_tensor *in, int64_t loops)
{
    compare_nan(what, f, n_in, in, loops, 0);
}

/* ==== the PFR Euler step, scalar and batched (both layouts) ==== */

static void test_scan_jit_pfr_scalar_and_batched(void **state)
{
    (void)state;
    const remat_dtype dts[2] = {REMAT_F64, REMAT_F32};
    for (int di = 0; di < 2; di++)
        for (int lay = 0; lay < 3; lay++) { /* scalar, (3,m), (m,3) */
            const remat_dtype dt = dts[di];
            const int64_t m = lay == 0 ? 0 : 5;
            euler_case c = euler_case_new(dt, m, lay == 1);
            for (int si = 0; si < N_JIT_SCHED; si++)
                for (int64_t len = 1; len <= 13; len += 6) {
                    remat_scan_options o = opts(jit_schedules[si], 0, NULL);
                    remat_fn *f = euler_loss(&c, &o, len);
                    char what[96];
                    snprintf(what, sizeof what, "euler %s layout %d %s n=%lld", remat_dtype_name(dt), lay,
                             jit_schedules[si], (long long)len);
                    compare(what, f, 3, c.in, 2);
                    remat_fn_free(f);
                }
            euler_case_free(&c);
        }
}

/* ==== every elementwise op and routing op the loops know ==== */

/* carry c (2,m) and s (m) [and u (m) f32 when mixed], x_t (m), consts w (m) and p (m);
 * ys: y (m). A scalar broadcast into the lanes is a constant (a closed-over
 * scalar would need a sum over the lanes in the backward: not a loop). */
static remat_fn *every_op_body(remat_dtype dt, int64_t m, int mixed)
{
    remat_fn *b = remat_fn_new("every_op");
    remat_val c = remat_arg(b, "c", dt, 2, DIMS(2, m));
    remat_val s = remat_arg(b, "s", dt, 1, DIMS(m));
    remat_val u = mixed ? remat_arg(b, "u", REMAT_F32, 1, DIMS(m)) : REMAT_NONE;
    remat_val x = remat_arg(b, "x", dt, 1, DIMS(m));
    remat_val w = remat_arg(b, "w", dt, 1, DIMS(m));
    remat_val p = remat_arg(b, "p", dt, 1, DIMS(m));
    remat_val c0 = remat_index(b, c, 0), c1 = remat_index(b, c, 1);
    remat_val ys[40];
    int ny = 0;
#define Y(v) (ys[ny++] = (v))
    remat_val pb = remat_mul(b, p, remat_broadcast_to(b, remat_scalar(b, dt, 1.25), 1, DIMS(m)));
    remat_val t = remat_add(b, remat_mul(b, remat_tanh(b, c0), w), remat_sin(b, x));
    t = remat_add(b, t, remat_mul(b, remat_cos(b, c1), pb));
    remat_val pos = remat_add_scalar(b, remat_square(b, remat_tanh(b, s)), 1.0); /* in [1, 2]: no overflow, no NaN */
    Y(t);
    t = remat_add(b, t, remat_mul_scalar(b, Y(remat_log(b, pos)), 0.1));
    t = remat_add(b, t, remat_mul_scalar(b, Y(remat_sqrt(b, pos)), 0.05));
    t = remat_add(b, t, remat_mul_scalar(b, Y(remat_exp(b, remat_mul_scalar(b, s, -0.5))), 0.02));
    t = remat_add(b, t, Y(remat_div(b, c1, pos)));
    t = remat_add(b, t, remat_mul_scalar(b, Y(remat_pow(b, pos, 1.5)), 0.01));
    static const int ks[] = {0, 1, 2, 3, 4, 5, 7, 13, -1, -2, -3, -6};
    for (size_t q = 0; q < sizeof ks / sizeof ks[0]; q++)
        t = remat_add(b, t,
                      remat_mul_scalar(b, Y(remat_integer_pow(b, remat_mul_scalar(b, pos, 0.7), ks[q])), 0.001));
    t = remat_add(b, t, Y(remat_relu(b, c0)));
    t = remat_add(b, t, remat_mul_scalar(b, Y(remat_max(b, c0, c1)), 0.3));
    t = remat_add(b, t, remat_mul_scalar(b, Y(remat_min(b, c0, x)), 0.2));
    t = remat_add(b, t, Y(remat_select(b, remat_gt(b, c0, c1), s, remat_neg(b, s))));
    t = remat_add(b, t, Y(remat_mul(b, remat_le(b, x, s), c0)));
    t = remat_add(b, t, Y(remat_mul(b, remat_ge(b, x, c1), remat_sub(b, c0, remat_mul(b, remat_lt(b, s, c0), x)))));
    t = remat_add(b, t, Y(remat_add(b, remat_eq(b, x, x), remat_ne(b, s, c1))));
    t = remat_add(b, t, remat_mul_scalar(b, Y(remat_erf(b, remat_add(b, x, c0))), 0.4));
    t = remat_add(b, t, remat_mul_scalar(b, Y(remat_log1p(b, remat_mul_scalar(b, pos, 1e-3))), 0.3));
    t = remat_add(b, t, remat_mul_scalar(b, Y(remat_expm1(b, remat_mul_scalar(b, s, -0.25))), 0.02));
    t = remat_add(b, t, remat_mul_scalar(b, Y(remat_logistic(b, remat_sub(b, x, c1))), 0.3));
    t = remat_add(b, t, Y(remat_mul(b, remat_stop_gradient(b, remat_sin(b, c1)), s)));
    remat_val narrow = remat_convert(b, t, dt == REMAT_F64 ? REMAT_F32 : REMAT_F64);
    t = remat_convert(b, remat_mul_scalar(b, narrow, 0.5), dt);
    /* routing: c' = [t ; pad(c0 (1,m)) + c1 (1,m)] via concatenate, pad, transpose */
    remat_val row0 = remat_reshape(b, remat_mul_scalar(b, t, 0.5), 2, DIMS(1, m));
    remat_val tp = remat_transpose(b, remat_reshape(b, c1, 2, DIMS(1, m)), (int[]){1, 0}); /* (m,1) */
    remat_val back = remat_transpose(b, tp, (int[]){1, 0});
    remat_val padded = remat_pad(b, remat_reshape(b, c0, 1, DIMS(m)), DIMS(0), DIMS(0), NULL);
    remat_val row1 = remat_add(b, back, remat_mul_scalar(b, remat_reshape(b, padded, 2, DIMS(1, m)), 0.9));
    remat_val rows[2] = {row0, remat_mul_scalar(b, row1, 0.5)};
    remat_fn_output(b, remat_concatenate(b, 2, rows, 0));
    remat_fn_output(b, remat_add(b, remat_mul_scalar(b, s, 0.8), remat_mul_scalar(b, t, 0.1)));
    if (mixed)
        remat_fn_output(b, remat_add(b, remat_mul_scalar(b, u, 0.7), remat_convert(b, s, REMAT_F32)));
    remat_fn_output(b, remat_mul(b, t, x));
    for (int q = 0; q < ny; q++)
        remat_fn_output(b, ys[q]);
#undef Y
    assert_fn_ok(b);
    return b;
}

/* the scan's own outputs (final carries and stacked ys), no derivative */
static remat_fn *scan_outputs(const remat_fn *body, int64_t len, int n_args, const remat_dtype *dt,
                              const remat_shape *shapes, int n_carry, int n_xs, const remat_scan_options *o,
                              int n_ys)
{
    remat_fn *f = remat_fn_new("scan_outputs");
    remat_val a[8], c[8], ys[48];
    for (int i = 0; i < n_args; i++)
        a[i] = remat_arg(f, "a", dt[i], shapes[i].rank, shapes[i].dims);
    scan_ok(f, body, len, n_carry, a, n_xs, a + n_carry, n_args - n_carry - n_xs, a + n_carry + n_xs, o, c, ys);
    for (int i = 0; i < n_carry; i++)
        remat_fn_output(f, c[i]);
    for (int i = 0; i < n_ys; i++)
        remat_fn_output(f, ys[i]);
    assert_fn_ok(f);
    return f;
}

/* the primal alone, compiled vs interpreted */
static void compare_primal(const char *what, const remat_fn *f, int n_in, const remat_tensor *in, int64_t loops)
{
    check_both(what, f, n_in, in, loops, 0);
}

static void test_scan_jit_every_op(void **state)
{
    (void)state;
    for (int mixed = 0; mixed < 2; mixed++)
        for (int di = 0; di < 2; di++)
            for (int64_t m = 1; m <= 6; m += 5) {
                const remat_dtype dt = di ? REMAT_F32 : REMAT_F64;
                remat_fn *body = every_op_body(dt, m, mixed);
                const int64_t len = 7;
                const int nc = mixed ? 3 : 2;
                remat_dtype adt[7];
                remat_shape sh[7];
                remat_tensor in[7];
                int n = 0;
                in[n] = t_rand(dt, 2, DIMS(2, m), -1, 1), adt[n] = dt, sh[n] = in[n].shape, n++;
                in[n] = t_rand(dt, 1, DIMS(m), -1, 1), adt[n] = dt, sh[n] = in[n].shape, n++;
                if (mixed)
                    in[n] = t_rand(REMAT_F32, 1, DIMS(m), -1, 1), adt[n] = REMAT_F32, sh[n] = in[n].shape, n++;
                in[n] = t_rand(dt, 2, DIMS(len, m), -1, 1), adt[n] = dt, sh[n] = in[n].shape, n++;
                in[n] = t_rand(dt, 1, DIMS(m), -1, 1), adt[n] = dt, sh[n] = in[n].shape, n++;
                in[n] = t_rand(dt, 1, DIMS(m), 0.5, 1), adt[n] = dt, sh[n] = in[n].shape, n++;
                for (int rev = 0; rev < 2; rev++)
                    for (int si = 0; si < N_JIT_SCHED; si += 3) {
                        remat_scan_options o = opts(jit_schedules[si], rev, si == 3 ? remat_nothing_saveable : NULL);
                        const int n_ys = remat_fn_num_outputs(body) - nc;
                        remat_fn *fp = scan_outputs(body, len, n, adt, sh, nc, 1, &o, n_ys);
                        compare_primal("every op, primal", fp, n, in, 1);
                        remat_fn_free(fp);
                        remat_fn *f = scan_loss(body, len, n, adt, sh, nc, 1, &o, n_ys);
                        char what[96];
                        snprintf(what, sizeof what, "every op %s m=%lld mixed=%d reverse=%d %s", remat_dtype_name(dt),
                                 (long long)m, mixed, rev, jit_schedules[si]);
                        compare(what, f, n, in, 2);
                        remat_fn_free(f);
                    }
                t_free_all(n, in);
                remat_fn_free(body);
            }
}

/* ==== bodies the loops do not take fall back to the interpreter ==== */

static void test_scan_jit_falls_back(void **state)
{
    (void)state;
    /* a matrix product in the body */
    remat_fn *b = remat_fn_new("matmul_body");
    remat_val c = remat_arg(b, "c", REMAT_F64, 1, DIMS(4));
    remat_val w = remat_arg(b, "w", REMAT_F64, 2, DIMS(4, 4));
    remat_fn_output(b, remat_tanh(b, remat_matmul(b, c, w)));
    assert_fn_ok(b);
    remat_tensor in[2] = {t_rand(REMAT_F64, 1, DIMS(4), -1, 1), t_rand(REMAT_F64, 2, DIMS(4, 4), -1, 1)};
    const remat_dtype adt[2] = {REMAT_F64, REMAT_F64};
    const remat_shape sh[2] = {in[0].shape, in[1].shape};
    remat_scan_options o = opts("binomial:2", 0, NULL);
    remat_fn *f = scan_loss(b, 9, 2, adt, sh, 1, 0, &o, 0);
    compare("matmul body", f, 2, in, 0);
    remat_fn_free(f);
    remat_fn_free(b);
    t_free_all(2, in);
}

/* erf_inv is a library function compiled code does not import
 * (vmath_erfinv.c): a body holding it runs with the interpreter's bits,
 * the loop compiled or not */
static void test_scan_jit_erf_inv_body(void **state)
{
    (void)state;
    for (int di = 0; di < 2; di++) {
        const remat_dtype dt = di ? REMAT_F32 : REMAT_F64;
        remat_fn *b = remat_fn_new("erf_inv_body");
        remat_val c = remat_arg(b, "c", dt, 1, DIMS(5));
        remat_val x = remat_arg(b, "x", dt, 1, DIMS(5));
        remat_val t = remat_mul_scalar(b, remat_tanh(b, remat_add(b, c, x)), 0.9); /* in (-0.9, 0.9) */
        remat_fn_output(b, remat_add(b, remat_mul_scalar(b, remat_erf_inv(b, t), 0.5), remat_sin(b, c)));
        assert_fn_ok(b);
        remat_tensor in[2] = {t_rand(dt, 1, DIMS(5), -1, 1), t_rand(dt, 2, DIMS(9, 5), -1, 1)};
        const remat_dtype adt[2] = {dt, dt};
        const remat_shape sh[2] = {in[0].shape, in[1].shape};
        remat_scan_options o = opts("binomial:2", 0, NULL);
        remat_fn *f = scan_loss(b, 9, 2, adt, sh, 1, 1, &o, 0);
        result a, r;
        remat_fn *g = ad_ok(AD_VALUE_AND_GRAD, f, 0, NULL);
        run_mode(g, 2, in, 1, &a);
        run_mode(g, 2, in, 0, &r);
        check_outs_bitwise("erf_inv body", &a.o, &r.o);
        outs_free(&a.o);
        outs_free(&r.o);
        remat_fn_free(g);
        remat_fn_free(f);
        remat_fn_free(b);
        t_free_all(2, in);
    }
}

/* ==== maxima ==== */

/* Maxima: over a lane's entries (axis 0 of (2,3), three lanes) in the CPU
 * kernel's order, and over the lane axis (axis 1: no lane instruction takes
 * a max across lanes, so the body is unrolled, m = 1): compiled, with the
 * interpreter's bits. The special values (+0 / -0 order, NaN) are in
 * test_while_jit's reduce_max case. */
static void test_scan_jit_reduce_max(void **state)
{
    (void)state;
    remat_scan_options o = opts("binomial:2", 0, NULL);
    for (int axis = 0; axis < 2; axis++) {
        remat_fn *b = remat_fn_new("reduce_max_body");
        remat_val c = remat_arg(b, "c", REMAT_F64, 2, DIMS(2, 3));
        remat_val mx = remat_broadcast_in_dim(b, remat_reduce_max(b, c, 1, (int[]){axis}), 2, DIMS(2, 3),
                                              (int[]){1 - axis});
        remat_fn_output(b, remat_add(b, remat_tanh(b, c), remat_mul_scalar(b, mx, 0.5)));
        assert_fn_ok(b);
        remat_tensor in2 = t_rand(REMAT_F64, 2, DIMS(2, 3), -1, 1);
        const remat_dtype adt2[1] = {REMAT_F64};
        const remat_shape sh2[1] = {in2.shape};
        remat_fn *f = scan_loss(b, 9, 1, adt2, sh2, 1, 0, &o, 0);
        compare(axis ? "reduce_max across the lanes" : "reduce_max in a lane", f, 1, &in2, 2);
        remat_fn_free(f);
        remat_fn_free(b);
        t_free_all(1, &in2);
    }
}

/* Sums over entries of one lane, in the CPU kernel's order; with a
 * closed-over scalar, whose cotangent sums across the lanes, the state is
 * unrolled instead (m = 1). */
static remat_fn *sum_body(int64_t m, int scalar_const)
{
    remat_fn *b = remat_fn_new("sums");
    remat_val c = remat_arg(b, "c", REMAT_F64, 3, DIMS(2, 3, m));
    remat_val k = scalar_const ? remat_arg(b, "k", REMAT_F64, 0, NULL) : remat_arg(b, "k", REMAT_F64, 1, DIMS(m));
    remat_val kb = scalar_const ? remat_broadcast_to(b, k, 1, DIMS(m)) : k;
    remat_val rows = remat_sum(b, remat_sin(b, c), 1, (int[]){1});   /* (2,m) */
    remat_val all = remat_sum(b, remat_cos(b, c), 2, (int[]){0, 1}); /* (m) */
    remat_val g = remat_mul(b, remat_add(b, remat_index(b, rows, 0), all), kb);
    remat_val gb = remat_broadcast_in_dim(b, g, 3, DIMS(2, 3, m), (int[]){2});
    remat_val rb = remat_broadcast_in_dim(b, rows, 3, DIMS(2, 3, m), (int[]){0, 2});
    remat_fn_output(b, remat_add(b, remat_mul_scalar(b, c, 0.9), remat_mul_scalar(b, remat_mul(b, gb, rb), 0.01)));
    assert_fn_ok(b);
    return b;
}

static void test_scan_jit_sums(void **state)
{
    (void)state;
    for (int sc = 0; sc < 2; sc++)
        for (int64_t m = 1; m <= 4; m += 3) {
            remat_fn *b = sum_body(m, sc);
            remat_tensor in[2] = {t_rand(REMAT_F64, 3, DIMS(2, 3, m), -1, 1),
                                  t_rand(REMAT_F64, sc ? 0 : 1, DIMS(m), 0.5, 1)};
            const remat_dtype adt[2] = {REMAT_F64, REMAT_F64};
            const remat_shape sh[2] = {in[0].shape, in[1].shape};
            for (int si = 0; si < N_JIT_SCHED; si += 2) {
                remat_scan_options o = opts(jit_schedules[si], 0, NULL);
                remat_fn *f = scan_loss(b, 5, 2, adt, sh, 1, 0, &o, 0);
                char what[96];
                snprintf(what, sizeof what, "sums m=%lld scalar const=%d %s", (long long)m, sc, jit_schedules[si]);
                /* a scalar const broadcast over m > 1 lanes needs a sum across lanes:
                 * no lane axis works, and the (small) state is unrolled with m = 1 */
                compare(what, f, 2, in, 2);
                remat_fn_free(f);
            }
            remat_fn_free(b);
            t_free_all(2, in);
        }
}

/* ==== sums across lanes: a batch sharing its rate constants ====
 * y (3,m) with k1, k2 scalars broadcast over the batch: their cotangents
 * are sums over the lanes (the loop adds lane after lane, as the CPU
 * reduce kernel does), and y_t = sum of B over the batch is one too. m = 64
 * is past what the unrolled (m = 1) form takes, so compiled means summed
 * across lanes. */
static void test_scan_jit_sums_across_lanes(void **state)
{
    (void)state;
    const int64_t m = 64;
    for (int di = 0; di < 2; di++) {
        const remat_dtype dt = di ? REMAT_F32 : REMAT_F64;
        remat_fn *b = remat_fn_new("shared_k");
        remat_val y = remat_arg(b, "y", dt, 2, DIMS(3, m));
        remat_val k1 = remat_arg(b, "k1", dt, 0, NULL), k2 = remat_arg(b, "k2", dt, 0, NULL);
        remat_val a = remat_index(b, y, 0), bb = remat_index(b, y, 1);
        remat_val r1 = remat_mul(b, remat_broadcast_to(b, k1, 1, DIMS(m)), a);
        remat_val r2 = remat_mul(b, remat_broadcast_to(b, k2, 1, DIMS(m)), bb);
        remat_val parts[3] = {remat_reshape(b, remat_neg(b, r1), 2, DIMS(1, m)),
                              remat_reshape(b, remat_sub(b, r1, r2), 2, DIMS(1, m)),
                              remat_reshape(b, remat_mul(b, r2, remat_broadcast_to(b, k1, 1, DIMS(m))), 2, DIMS(1, m))};
        remat_val yn = remat_add(b, y, remat_mul_scalar(b, remat_concatenate(b, 3, parts, 0), 0.01));
        remat_fn_output(b, yn);
        remat_fn_output(b, remat_sum_all(b, remat_index(b, yn, 1))); /* y_t: B summed over the batch */
        assert_fn_ok(b);
        remat_tensor in[3] = {t_rand(dt, 2, DIMS(3, m), 0, 1), t_rand(dt, 0, NULL, 0.5, 1.5),
                              t_rand(dt, 0, NULL, 0.2, 0.8)};
        const remat_dtype adt[3] = {dt, dt, dt};
        const remat_shape sh[3] = {in[0].shape, in[1].shape, in[2].shape};
        for (int si = 0; si < N_JIT_SCHED; si++) {
            remat_scan_options o = opts(jit_schedules[si], si % 2, NULL);
            char what[96];
            snprintf(what, sizeof what, "shared k %s %s", remat_dtype_name(dt), jit_schedules[si]);
            remat_fn *fp = scan_outputs(b, 9, 3, adt, sh, 1, 0, &o, 1);
            compare_primal(what, fp, 3, in, 1);
            remat_fn_free(fp);
            remat_fn *f = scan_loss(b, 9, 3, adt, sh, 1, 0, &o, 1);
            compare(what, f, 3, in, 2);
            remat_fn_free(f);
        }
        t_free_all(3, in);
        remat_fn_free(b);
    }
}

/* ==== special values: signed zeros, infinities, NaN, subnormals ====
 * The (a + b) + 0 rewrite and the -0.0 start of the consts' cotangents are
 * exact only by IEEE's signed-zero rules: every pair of special values goes
 * through the ops whose results depend on them. */
static const double special[] = {0.0, -0.0, 1.0, -1.0, INFINITY, -INFINITY, NAN, 4.9e-324, -1e308, 1e308, 2.5, -0.5};
#define N_SPECIAL ((int64_t)(sizeof special / sizeof special[0]))

static void test_scan_jit_special_values(void **state)
{
    (void)state;
    const int64_t m = N_SPECIAL * N_SPECIAL, len = 3;
    for (int di = 0; di < 2; di++) {
        const remat_dtype dt = di ? REMAT_F32 : REMAT_F64;
        remat_fn *b = remat_fn_new("special");
        remat_val c = remat_arg(b, "c", dt, 1, DIMS(m)), x = remat_arg(b, "x", dt, 1, DIMS(m));
        remat_val k = remat_arg(b, "k", dt, 1, DIMS(m));
        remat_val t = remat_add(b, remat_max(b, c, x), remat_min(b, x, c));
        t = remat_add(b, t, remat_relu(b, c));
        t = remat_add(b, t, remat_select(b, remat_gt(b, c, x), x, c));
        t = remat_add(b, t, remat_div(b, c, x));
        t = remat_add(b, t, remat_mul(b, remat_sqrt(b, x), k));
        t = remat_add(b, t, remat_neg(b, remat_mul(b, c, k)));
        remat_fn_output(b, remat_mul(b, t, k));
        remat_fn_output(b, t);
        assert_fn_ok(b);
        remat_tensor in[3] = {t_new(dt, 1, DIMS(m)), t_new(dt, 2, DIMS(len, m)), t_new(dt, 1, DIMS(m))};
        for (int64_t i = 0; i < N_SPECIAL; i++)
            for (int64_t j = 0; j < N_SPECIAL; j++) { /* every (c, k) pair, x moving along the steps */
                const int64_t l = i * N_SPECIAL + j;
                t_set(&in[0], l, special[i]);
                t_set(&in[2], l, special[(i + j) % N_SPECIAL]);
                for (int64_t q = 0; q < len; q++)
                    t_set(&in[1], q * m + l, special[(j + q) % N_SPECIAL]);
            }
        const remat_dtype adt[3] = {dt, dt, dt};
        const remat_shape sh[3] = {in[0].shape, in[1].shape, in[2].shape};
        for (int si = 0; si < N_JIT_SCHED; si += 2) {
            remat_scan_options o = opts(jit_schedules[si], 0, NULL);
            remat_fn *f = scan_outputs(b, len, 3, adt, sh, 1, 1, &o, 1);
            remat_fn *loss = remat_fn_new("special_loss"); /* sum of carry and ys, differentiated */
            remat_val a[3], co, ys;
            for (int q = 0; q < 3; q++)
                a[q] = remat_arg(loss, "a", dt, sh[q].rank, sh[q].dims);
            scan_ok(loss, b, len, 1, a, 1, a + 1, 1, a + 2, &o, &co, &ys);
            remat_fn_output(loss, remat_add(loss, remat_sum_all(loss, co), remat_sum_all(loss, ys)));
            assert_fn_ok(loss);
            char what[96];
            snprintf(what, sizeof what, "special values %s %s", remat_dtype_name(dt), jit_schedules[si]);
            compare_nan(what, loss, 3, in, 2, 1);
            check_both(what, f, 3, in, 1, 1);
            remat_fn_free(loss);
            remat_fn_free(f);
        }
        t_free_all(3, in);
        remat_fn_free(b);
    }
}

/* a body with an empty value (a sum over a zero-size slice): interpreted */
static void test_scan_jit_empty_values(void **state)
{
    (void)state;
    remat_fn *b = remat_fn_new("empty");
    remat_val c = remat_arg(b, "c", REMAT_F64, 1, DIMS(2));
    remat_val s = remat_sum_all(b, remat_slice(b, c, DIMS(0), DIMS(0), NULL));
    remat_fn_output(b, remat_add(b, remat_sin(b, c), remat_broadcast_to(b, s, 1, DIMS(2))));
    assert_fn_ok(b);
    remat_tensor in[1] = {t_rand(REMAT_F64, 1, DIMS(2), -1, 1)};
    const remat_dtype adt[1] = {REMAT_F64};
    const remat_shape sh[1] = {in[0].shape};
    remat_scan_options o = opts("binomial:2", 0, NULL);
    remat_fn *f = scan_loss(b, 4, 1, adt, sh, 1, 0, &o, 0);
    compare("zero-size sum in the body", f, 1, in, 0);
    remat_fn_free(f);
    remat_fn_free(b);
    t_free_all(1, in);
}

/* the body the lane axis must reject: a carry (m,m) has two candidate axes */
static void test_scan_jit_ambiguous_lane_uses_scalars(void **state)
{
    (void)state;
    remat_fn *b = remat_fn_new("square_state");
    remat_val c = remat_arg(b, "c", REMAT_F64, 2, DIMS(3, 3));
    remat_fn_output(b, remat_add(b, remat_sin(b, c), remat_transpose(b, c, (int[]){1, 0})));
    assert_fn_ok(b);
    remat_tensor in[1] = {t_rand(REMAT_F64, 2, DIMS(3, 3), -1, 1)};
    const remat_dtype adt[1] = {REMAT_F64};
    const remat_shape sh[1] = {in[0].shape};
    remat_scan_options o = opts("per-step", 0, NULL);
    remat_fn *f = scan_loss(b, 6, 1, adt, sh, 1, 0, &o, 0);
    compare("(3,3) carry with a transpose: unrolled with m = 1", f, 1, in, 2);
    remat_fn_free(f);
    remat_fn_free(b);
    t_free_all(1, in);
}

int main(void)
{
    setenv("REMAT_JIT", "always", 1); /* the compiled loops, on scans too short for the default policy */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scan_jit_pfr_scalar_and_batched),
        cmocka_unit_test(test_scan_jit_every_op),
        cmocka_unit_test(test_scan_jit_sums),
        cmocka_unit_test(test_scan_jit_sums_across_lanes),
        cmocka_unit_test(test_scan_jit_special_values),
        cmocka_unit_test(test_scan_jit_empty_values),
        cmocka_unit_test(test_scan_jit_falls_back),
        cmocka_unit_test(test_scan_jit_erf_inv_body),
        cmocka_unit_test(test_scan_jit_reduce_max),
        cmocka_unit_test(test_scan_jit_ambiguous_lane_uses_scalars),
    };
#if !REMAT_HAVE_GCCJIT
    printf("test_scan_jit: built without libgccjit: checking that nothing is compiled and results agree\n");
#endif
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_scan_semantics.c — the scan primitive's forward semantics and its
 * reverse mode (grad and vjp) on a body with several carries, xs, ys and consts.
 *
 * Every expectation comes from outside the scan: the same body unrolled by
 * hand into a graph with remat_call (no scan node anywhere), closed forms
 * computed here in plain C, central finite differences in f64. Schedules
 * and policies are in test_scan_schedules.c, the residual report and bad input
 * in test_scan_diagnostics.c.
 */
#include "test_scan_util.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remat/remat.h"

/* ==== a body with several carries, xs, ys and consts (items 1 and 2) ====
 *
 * body(c0 (2,3), c1 (), c2 (4), x0 (3), x1 (), W (3,3), b (4))
 *   c0' = tanh(c0 @ W + x0)
 *   c1' = 0.9 c1 + x1 + 0.01 sum(c0)
 *   c2' = sin(c2) * c1 + b
 *   y0  = sum(c0', axis 1)   (2)
 *   y1  = c1' * x1           ()
 */
static remat_fn *body_multi(remat_dtype dt)
{
    remat_fn *b = remat_fn_new("body_multi");
    remat_val c0 = remat_arg(b, "c0", dt, 2, DIMS(2, 3));
    remat_val c1 = remat_arg(b, "c1", dt, 0, NULL);
    remat_val c2 = remat_arg(b, "c2", dt, 1, DIMS(4));
    remat_val x0 = remat_arg(b, "x0", dt, 1, DIMS(3));
    remat_val x1 = remat_arg(b, "x1", dt, 0, NULL);
    remat_val w = remat_arg(b, "W", dt, 2, DIMS(3, 3));
    remat_val bb = remat_arg(b, "b", dt, 1, DIMS(4));
    remat_val n0 = remat_tanh(b, remat_add(b, remat_matmul(b, c0, w), x0));
    remat_val n1 = remat_add(b, remat_add(b, remat_mul_scalar(b, c1, 0.9), x1),
                             remat_mul_scalar(b, remat_sum_all(b, c0), 0.01));
    remat_val n2 = remat_add(b, remat_mul(b, remat_sin(b, c2), c1), bb);
    remat_fn_output(b, n0);
    remat_fn_output(b, n1);
    remat_fn_output(b, n2);
    remat_fn_output(b, remat_sum(b, n0, 1, (int[]){1}));
    remat_fn_output(b, remat_mul(b, n1, x1));
    assert_fn_ok(b);
    return b;
}

typedef enum { OUT_ALL, OUT_LOSS } out_mode;

/* L = sum(c0^2) + 1.5 c1 + sum(sin c2) + 0.5 sum(ys0^2) + sum(sin ys1) */
static remat_val loss_multi(remat_fn *f, const remat_val *c, const remat_val *ys)
{
    remat_val l = remat_sum_all(f, remat_square(f, c[0]));
    l = remat_add(f, l, remat_mul_scalar(f, c[1], 1.5));
    l = remat_add(f, l, remat_sum_all(f, remat_sin(f, c[2])));
    if (ys[0] != REMAT_NONE) {
        l = remat_add(f, l, remat_mul_scalar(f, remat_sum_all(f, remat_square(f, ys[0])), 0.5));
        l = remat_add(f, l, remat_sum_all(f, remat_sin(f, ys[1])));
    }
    return l;
}

/* args c0, c1, c2, X0 (n,3), X1 (n), W, b. With by_scan one scan node; else
 * the body called n times, step t reading row t of the xs and writing row t
 * of the ys (t = n-1..0 when reverse), as lax.scan defines it. OUT_ALL:
 * outputs c0, c1, c2, ys0, ys1 (the unrolled graph has no ys when n == 0). */
static remat_fn *model_multi(remat_dtype dt, int64_t n, bool by_scan, const remat_scan_options *opt, out_mode mode)
{
    remat_fn *body = body_multi(dt);
    remat_fn *f = remat_fn_new(by_scan ? "multi_scan" : "multi_unrolled");
    remat_val a[7];
    a[0] = remat_arg(f, "c0", dt, 2, DIMS(2, 3));
    a[1] = remat_arg(f, "c1", dt, 0, NULL);
    a[2] = remat_arg(f, "c2", dt, 1, DIMS(4));
    a[3] = remat_arg(f, "X0", dt, 2, DIMS(n, 3));
    a[4] = remat_arg(f, "X1", dt, 1, DIMS(n));
    a[5] = remat_arg(f, "W", dt, 2, DIMS(3, 3));
    a[6] = remat_arg(f, "b", dt, 1, DIMS(4));
    remat_val c[3], ys[2] = {REMAT_NONE, REMAT_NONE};
    if (by_scan) {
        scan_ok(f, body, n, 3, a, 2, a + 3, 2, a + 5, opt, c, ys);
    } else {
        bool reverse = opt && opt->reverse;
        remat_val *y0 = xcalloc((size_t)n, sizeof *y0), *y1 = xcalloc((size_t)n, sizeof *y1);
        memcpy(c, a, sizeof c);
        for (int64_t k = 0; k < n; k++) {
            int64_t t = reverse ? n - 1 - k : k;
            remat_val in[7] = {c[0], c[1], c[2], remat_index(f, a[3], t), remat_index(f, a[4], t), a[5], a[6]};
            remat_val o[5];
            assert_int_equal(remat_call(f, body, 7, in, o), REMAT_OK);
            memcpy(c, o, sizeof c);
            y0[t] = o[3];
            y1[t] = o[4];
        }
        if (n > 0) {
            ys[0] = stack(f, n, y0);
            ys[1] = stack(f, n, y1);
        }
        free(y0);
        free(y1);
    }
    if (mode == OUT_ALL) {
        for (int i = 0; i < 3; i++)
            remat_fn_output(f, c[i]);
        for (int i = 0; i < 2; i++)
            if (ys[i] != REMAT_NONE)
                remat_fn_output(f, ys[i]);
    } else {
        remat_fn_output(f, loss_multi(f, c, ys));
    }
    remat_fn_free(body);
    assert_fn_ok(f);
    return f;
}

static void inputs_multi(remat_dtype dt, int64_t n, remat_tensor *in)
{
    in[0] = t_rand(dt, 2, DIMS(2, 3), -1, 1);
    in[1] = t_rand(dt, 0, NULL, -1, 1);
    in[2] = t_rand(dt, 1, DIMS(4), -1, 1);
    in[3] = t_rand(dt, 2, DIMS(n, 3), -1, 1);
    in[4] = t_rand(dt, 1, DIMS(n), -1, 1);
    in[5] = t_rand(dt, 2, DIMS(3, 3), -0.7, 0.7);
    in[6] = t_rand(dt, 1, DIMS(4), -0.5, 0.5);
}

/* ==== 1. forward semantics ==== */

static void test_scan_forward_matches_unrolled(void **state)
{
    (void)state;
    static const int64_t lengths[] = {0, 1, 2, 5, 9};
    for (int d = 0; d < 2; d++) {
        remat_dtype dt = d ? REMAT_F32 : REMAT_F64;
        double rtol = dt == REMAT_F64 ? 1e-14 : 1e-6;
        for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++) {
            int64_t n = lengths[li];
            for (int rev = 0; rev < 2; rev++) {
                char what[96];
                snprintf(what, sizeof what, "%s n=%lld reverse=%d", remat_dtype_name(dt), (long long)n, rev);
                remat_scan_options opt = {.reverse = rev};
                remat_tensor in[7];
                inputs_multi(dt, n, in);
                remat_fn *fs = model_multi(dt, n, true, &opt, OUT_ALL);
                remat_fn *fu = model_multi(dt, n, false, &opt, OUT_ALL);
                outs_t os, ou;
                remat_stats st;
                run_fn(fs, 7, in, &os, &st, NULL);
                run_fn(fu, 7, in, &ou, NULL, NULL);
                assert_int_equal(os.n, 5);
                assert_int_equal(st.forward_evals, n);
                /* carries: same shapes and dtype as init */
                for (int i = 0; i < 3; i++) {
                    assert_int_equal(os.t[i].dtype, dt);
                    assert_true(remat_shape_equal(&os.t[i].shape, &in[i].shape));
                }
                /* ys stacked on a new leading axis of length n */
                assert_int_equal(os.t[3].shape.rank, 2);
                assert_int_equal(os.t[3].shape.dims[0], n);
                assert_int_equal(os.t[3].shape.dims[1], 2);
                assert_int_equal(os.t[4].shape.rank, 1);
                assert_int_equal(os.t[4].shape.dims[0], n);
                if (n == 0) { /* carry out = init, exactly */
                    assert_int_equal(ou.n, 3);
                    for (int i = 0; i < 3; i++)
                        assert_memory_equal(os.t[i].data, in[i].data, tbytes(dt, &in[i].shape));
                } else {
                    assert_int_equal(ou.n, 5);
                    check_outs_close(what, 0, 5, &os, &ou, rtol);
                }
                outs_free(&os);
                outs_free(&ou);
                remat_fn_free(fs);
                remat_fn_free(fu);
                t_free_all(7, in);
            }
        }
    }
}

/* carry s, x_t: s' = s + x_t, y_t = s' (and a second y, x_t * s). Forward:
 * ys = cumsum(xs); reverse: ys[t] = sum_{j >= t} x_j. Computed here in C. */
static void test_scan_cumsum_closed_form(void **state)
{
    (void)state;
    static const int64_t lengths[] = {0, 1, 2, 6};
    for (int d = 0; d < 2; d++) {
        remat_dtype dt = d ? REMAT_F32 : REMAT_F64;
        for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++) {
            int64_t n = lengths[li];
            for (int rev = 0; rev < 2; rev++) {
                remat_fn *b = remat_fn_new("cumsum_body");
                remat_val s = remat_arg(b, "s", dt, 1, DIMS(2));
                remat_val x = remat_arg(b, "x", dt, 1, DIMS(2));
                remat_val s1 = remat_add(b, s, x);
                remat_fn_output(b, s1);
                remat_fn_output(b, s1);
                remat_fn_output(b, remat_mul(b, x, s));
                assert_fn_ok(b);
                remat_fn *f = remat_fn_new("cumsum");
                remat_val a[2] = {remat_arg(f, "s0", dt, 1, DIMS(2)), remat_arg(f, "xs", dt, 2, DIMS(n, 2))};
                remat_val c, ys[2];
                remat_scan_options opt = {.reverse = rev, .schedule = spec_of("binomial:2")};
                scan_ok(f, b, n, 1, a, 1, a + 1, 0, NULL, &opt, &c, ys);
                remat_fn_output(f, c);
                remat_fn_output(f, ys[0]);
                remat_fn_output(f, ys[1]);
                assert_fn_ok(f);
                remat_tensor in[2] = {t_new(dt, 1, DIMS(2)), t_new(dt, 2, DIMS(n, 2))};
                t_set(&in[0], 0, 0.5);
                t_set(&in[0], 1, -2);
                for (int64_t i = 0; i < 2 * n; i++)
                    t_set(&in[1], i, (double)(i + 1) * (i % 2 ? -0.25 : 1)); /* exact in f32 */
                outs_t o;
                run_fn(f, 2, in, &o, NULL, NULL);
                double sum[2] = {0.5, -2};
                for (int64_t k = 0; k < n; k++) {
                    int64_t t = rev ? n - 1 - k : k;
                    for (int j = 0; j < 2; j++) {
                        double xv = t_get(&in[1], 2 * t + j);
                        double y1 = xv * sum[j];
                        sum[j] += xv;
                        if (t_get(&o.t[1], 2 * t + j) != sum[j] || t_get(&o.t[2], 2 * t + j) != y1)
                            fail_msg("%s n=%lld rev=%d: ys[%lld][%d] = %g, %g; want %g, %g", remat_dtype_name(dt),
                                     (long long)n, rev, (long long)t, j, t_get(&o.t[1], 2 * t + j),
                                     t_get(&o.t[2], 2 * t + j), sum[j], y1);
                    }
                }
                for (int j = 0; j < 2; j++)
                    assert_true(t_get(&o.t[0], j) == sum[j]);
                assert_int_equal(o.t[1].shape.dims[0], n);
                outs_free(&o);
                t_free_all(2, in);
                remat_fn_free(f);
                remat_fn_free(b);
            }
        }
    }
}

/* No carries at all (a map): ys[t] = sum(sin(x_t) * w); loss = sum(ys).
 * Value and gradient in closed form: d/dX = cos(X) w, d/dw = sum_t sin(x_t). */
static void test_scan_map_without_carries(void **state)
{
    (void)state;
    const int64_t n = 4;
    remat_fn *b = remat_fn_new("map_body");
    remat_val x = remat_arg(b, "x", REMAT_F64, 1, DIMS(3));
    remat_val w = remat_arg(b, "w", REMAT_F64, 1, DIMS(3));
    remat_fn_output(b, remat_sum_all(b, remat_mul(b, remat_sin(b, x), w)));
    assert_fn_ok(b);
    remat_tensor in[2] = {t_rand(REMAT_F64, 2, DIMS(n, 3), -2, 2), t_rand(REMAT_F64, 1, DIMS(3), -1, 1)};
    for (int si = 0; si < N_SCHEDULES; si++) {
        remat_fn *f = remat_fn_new("map");
        remat_val a[2] = {remat_arg(f, "X", REMAT_F64, 2, DIMS(n, 3)), remat_arg(f, "w", REMAT_F64, 1, DIMS(3))};
        remat_val ys;
        remat_scan_options opt = {.schedule = spec_of(schedules[si])};
        scan_ok(f, b, n, 0, NULL, 1, a, 1, a + 1, &opt, NULL, &ys);
        remat_fn_output(f, remat_sum_all(f, ys));
        assert_fn_ok(f);
        outs_t o;
        run_ad(AD_VALUE_AND_GRAD, f, 2, in, &o, NULL, NULL);
        double loss = 0, dw[3] = {0};
        for (int64_t t = 0; t < n; t++)
            for (int j = 0; j < 3; j++) {
                double xv = t_get(&in[0], 3 * t + j), wv = t_get(&in[1], j);
                loss += sin(xv) * wv;
                dw[j] += sin(xv);
                if (!(fabs(t_get(&o.t[1], 3 * t + j) - cos(xv) * wv) <= 1e-15))
                    fail_msg("map %s: dX[%lld][%d] = %.17g, want %.17g", schedules[si], (long long)t, j,
                             t_get(&o.t[1], 3 * t + j), cos(xv) * wv);
            }
        assert_true(fabs(t_get(&o.t[0], 0) - loss) <= 1e-14);
        for (int j = 0; j < 3; j++)
            if (!(fabs(t_get(&o.t[2], j) - dw[j]) <= 1e-14))
                fail_msg("map %s: dw[%d] = %.17g, want %.17g", schedules[si], j, t_get(&o.t[2], j), dw[j]);
        outs_free(&o);
        remat_fn_free(f);
    }
    t_free_all(2, in);
    remat_fn_free(b);
}

/* Carries of two dtypes (f32 (2), f64 (3)) and outputs that are the body's
 * own arguments: the f64 carry passed through unchanged is not allowed to
 * alias, y0 = x_t and y1 = the const. Against the unrolled graph. */
static remat_fn *model_mixed(int64_t n, bool by_scan, const remat_scan_options *opt)
{
    remat_fn *b = remat_fn_new("mixed_body");
    remat_val a = remat_arg(b, "a", REMAT_F32, 1, DIMS(2));
    remat_val c = remat_arg(b, "c", REMAT_F64, 1, DIMS(3));
    remat_val x = remat_arg(b, "x", REMAT_F64, 1, DIMS(3));
    remat_val k = remat_arg(b, "k", REMAT_F64, 1, DIMS(3));
    remat_val a1 = remat_mul(b, remat_sin(b, a), remat_convert(b, remat_index(b, c, 0), REMAT_F32));
    remat_val c1 = remat_add(b, remat_mul(b, remat_sin(b, c), k),
                             remat_add(b, x, remat_sum_all(b, remat_convert(b, a, REMAT_F64))));
    remat_fn_output(b, a1);
    remat_fn_output(b, c1);
    remat_fn_output(b, c); /* the carry as it came in */
    remat_fn_output(b, x);
    remat_fn_output(b, k);
    assert_fn_ok(b);
    remat_fn *f = remat_fn_new(by_scan ? "mixed_scan" : "mixed_unrolled");
    remat_val v[4] = {remat_arg(f, "a0", REMAT_F32, 1, DIMS(2)), remat_arg(f, "c0", REMAT_F64, 1, DIMS(3)),
                      remat_arg(f, "X", REMAT_F64, 2, DIMS(n, 3)), remat_arg(f, "k", REMAT_F64, 1, DIMS(3))};
    remat_val cr[2], ys[3];
    if (by_scan) {
        scan_ok(f, b, n, 2, v, 1, v + 2, 1, v + 3, opt, cr, ys);
    } else {
        remat_val *y[3];
        for (int i = 0; i < 3; i++)
            y[i] = xcalloc((size_t)n, sizeof *y[i]);
        cr[0] = v[0];
        cr[1] = v[1];
        for (int64_t t = 0; t < n; t++) {
            remat_val o[5];
            assert_int_equal(remat_call(f, b, 4, (remat_val[]){cr[0], cr[1], remat_index(f, v[2], t), v[3]}, o),
                             REMAT_OK);
            cr[0] = o[0];
            cr[1] = o[1];
            for (int i = 0; i < 3; i++)
                y[i][t] = o[2 + i];
        }
        for (int i = 0; i < 3; i++) {
            ys[i] = stack(f, n, y[i]);
            free(y[i]);
        }
    }
    remat_val l = remat_add(f, remat_sum_all(f, remat_square(f, cr[1])),
                            remat_convert(f, remat_sum_all(f, remat_sin(f, cr[0])), REMAT_F64));
    for (int i = 0; i < 3; i++)
        l = remat_add(f, l, remat_sum_all(f, remat_mul_scalar(f, remat_sin(f, ys[i]), 0.5 + i)));
    remat_fn_output(f, l);
    remat_fn_free(b);
    assert_fn_ok(f);
    return f;
}

static void test_scan_mixed_dtypes_and_passthrough(void **state)
{
    (void)state;
    const int64_t n = 6;
    remat_tensor in[4] = {t_rand(REMAT_F32, 1, DIMS(2), -1, 1), t_rand(REMAT_F64, 1, DIMS(3), -1, 1),
                          t_rand(REMAT_F64, 2, DIMS(n, 3), -1, 1), t_rand(REMAT_F64, 1, DIMS(3), -1, 1)};
    remat_fn *fu = model_mixed(n, false, NULL);
    outs_t gu, ref = {0};
    run_ad(AD_VALUE_AND_GRAD, fu, 4, in, &gu, NULL, NULL);
    for (int si = 0; si < N_SCHEDULES; si++) {
        remat_scan_options opt = {.schedule = spec_of(schedules[si])};
        remat_fn *fs = model_mixed(n, true, &opt);
        outs_t gs;
        run_ad(AD_VALUE_AND_GRAD, fs, 4, in, &gs, NULL, NULL);
        char what[64];
        snprintf(what, sizeof what, "mixed dtypes %s", schedules[si]);
        assert_int_equal(gs.t[1].dtype, REMAT_F32);
        check_outs_close(what, 0, 5, &gs, &gu, 1e-6); /* the f32 carry feeds everything */
        if (si == 0) {
            ref = gs;
        } else {
            check_outs_bitwise(what, &gs, &ref); /* contract 3 */
            outs_free(&gs);
        }
        remat_fn_free(fs);
    }
    outs_free(&ref);
    outs_free(&gu);
    remat_fn_free(fu);
    t_free_all(4, in);
}

/* ==== 2. gradients ==== */

/* Central differences of a scalar function at `in`, each entry of each input,
 * against grad (one output per input). */
static void check_fd(const char *what, const remat_fn *f, int n_in, remat_tensor *in, const outs_t *grad)
{
    remat_program *p = compile_ok(f);
    assert_int_equal(grad->n, n_in);
    for (int i = 0; i < n_in; i++) {
        for (int64_t j = 0; j < t_numel(&in[i]); j++) {
            double v = t_get(&in[i], j), h = 1e-6 * fmax(1.0, fabs(v));
            outs_t o;
            t_set(&in[i], j, v + h);
            run_prog(p, n_in, in, &o, NULL);
            double lp = t_get(&o.t[0], 0);
            outs_free(&o);
            t_set(&in[i], j, v - h);
            run_prog(p, n_in, in, &o, NULL);
            double lm = t_get(&o.t[0], 0);
            outs_free(&o);
            t_set(&in[i], j, v);
            double fd = (lp - lm) / (2 * h), g = t_get(&grad->t[i], j);
            if (!(fabs(fd - g) <= 1e-7 + 1e-6 * fabs(g)))
                fail_msg("%s: d/d input %d [%lld]: reverse mode %.12g, central difference %.12g", what, i,
                         (long long)j, g, fd);
        }
    }
    remat_program_free(p);
}

static void test_scan_grad_matches_unrolled_and_fd(void **state)
{
    (void)state;
    static const int64_t lengths[] = {0, 1, 2, 7};
    static const char *const sched[] = {"store-all", "binomial:2", "periodic:3", "online:1"};
    for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++) {
        int64_t n = lengths[li];
        for (int rev = 0; rev < 2; rev++) {
            remat_tensor in[7];
            inputs_multi(REMAT_F64, n, in);
            remat_scan_options ou_opt = {.reverse = rev};
            remat_fn *fu = model_multi(REMAT_F64, n, false, &ou_opt, OUT_LOSS);
            outs_t gu;
            run_ad(AD_VALUE_AND_GRAD, fu, 7, in, &gu, NULL, NULL);
            assert_int_equal(gu.n, 8);
            for (size_t si = 0; si < sizeof sched / sizeof sched[0]; si++) {
                char what[96];
                snprintf(what, sizeof what, "n=%lld reverse=%d %s", (long long)n, rev, sched[si]);
                remat_scan_options opt = {.reverse = rev, .schedule = spec_of(sched[si])};
                remat_fn *fs = model_multi(REMAT_F64, n, true, &opt, OUT_LOSS);
                outs_t gs;
                run_ad(AD_VALUE_AND_GRAD, fs, 7, in, &gs, NULL, NULL);
                check_outs_close(what, 0, 8, &gs, &gu, 1e-14);
                if (si == 0) { /* the gradient itself, from outside reverse mode */
                    outs_t g = {.n = 7};
                    memcpy(g.t, gs.t + 1, sizeof g.t[0] * 7);
                    check_fd(what, fs, 7, in, &g);
                }
                outs_free(&gs);
                remat_fn_free(fs);
            }
            outs_free(&gu);
            remat_fn_free(fu);
            t_free_all(7, in);
        }
    }
}

/* remat_vjp of the scan's raw outputs (carries and stacked ys) with arbitrary
 * cotangents, against the unrolled graph's VJP; w.r.t. a subset of args. */
static void test_scan_vjp_matches_unrolled(void **state)
{
    (void)state;
    const int64_t n = 6;
    static const int argsets[2][4] = {{0, 3, 5, 6}, {1, 2, 4, -1}};
    for (int rev = 0; rev < 2; rev++) {
        for (int as = 0; as < 2; as++) {
            int na = argsets[as][3] < 0 ? 3 : 4;
            remat_scan_options opt = {.reverse = rev, .schedule = spec_of(rev ? "online:2" : "two-level")};
            remat_fn *fs = model_multi(REMAT_F64, n, true, &opt, OUT_ALL);
            remat_fn *fu = model_multi(REMAT_F64, n, false, &opt, OUT_ALL);
            remat_fn *vs = NULL, *vu = NULL;
            assert_int_equal(remat_vjp(fs, na, argsets[as], &vs), REMAT_OK);
            assert_int_equal(remat_vjp(fu, na, argsets[as], &vu), REMAT_OK);
            remat_tensor in[12];
            inputs_multi(REMAT_F64, n, in);
            in[7] = t_rand(REMAT_F64, 2, DIMS(2, 3), -1, 1);
            in[8] = t_rand(REMAT_F64, 0, NULL, -1, 1);
            in[9] = t_rand(REMAT_F64, 1, DIMS(4), -1, 1);
            in[10] = t_rand(REMAT_F64, 2, DIMS(n, 2), -1, 1);
            in[11] = t_rand(REMAT_F64, 1, DIMS(n), -1, 1);
            outs_t os, ou;
            run_fn(vs, 12, in, &os, NULL, NULL);
            run_fn(vu, 12, in, &ou, NULL, NULL);
            assert_int_equal(os.n, 5 + na);
            assert_int_equal(ou.n, 5 + na);
            check_outs_close(rev ? "vjp reverse" : "vjp", 0, 5 + na, &os, &ou, 1e-14);
            outs_free(&os);
            outs_free(&ou);
            t_free_all(12, in);
            remat_fn_free(vs);
            remat_fn_free(vu);
            remat_fn_free(fs);
            remat_fn_free(fu);
        }
    }
}

/* ---- main ---- */

int main(void)
{
    remat_test_backend(); /* REMAT_BACKEND: skip (77) when it is not there */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scan_forward_matches_unrolled),
        cmocka_unit_test(test_scan_cumsum_closed_form),
        cmocka_unit_test(test_scan_map_without_carries),
        cmocka_unit_test(test_scan_mixed_dtypes_and_passthrough),
        cmocka_unit_test(test_scan_grad_matches_unrolled_and_fd),
        cmocka_unit_test(test_scan_vjp_matches_unrolled),
    };
    rng_seed(0x9e3779b97f4a7c15ull);
    return cmocka_run_group_tests_name("scan_semantics", tests, NULL, NULL);
}

/*
 * test_scan.c — the scan primitive: forward semantics, reverse mode through
 * every checkpoint schedule and body policy, measured vs predicted costs, the
 * seed values, nesting, the residual report and bad input.
 *
 * Every expectation comes from outside the scan: the same body unrolled by
 * hand into a graph with remat_call (no scan node anywhere), closed forms
 * computed here in plain C, central finite differences in f64, the schedules'
 * cost formulas written out here, the binomial optimum's published test
 * vectors, and the seed values (/work/shared/reference/seed_values.json and
 * tests/goldens/gradients.json, JAX 0.10.2 in float64). Schedules and body
 * policies are held to the store-all gradient bit for bit, as DESIGN.md
 * promises ("Schedules and policies change memory and time, never results").
 */
#include "test_util.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remat/remat.h"

/* ---- small helpers (the shared ones are in test_util.h) ---- */

static size_t align16(size_t b) { return (b + 15) / 16 * 16; }

/* ---- caller-owned tensors ---- */

static remat_tensor t_new(remat_dtype dt, int rank, const int64_t *dims)
{
    remat_tensor t = {.dtype = dt, .shape = remat_shape_make(rank, dims)};
    t.data = xcalloc(1, tbytes(dt, &t.shape));
    return t;
}

static int64_t t_numel(const remat_tensor *t) { return remat_shape_numel(&t->shape); }

static double t_get(const remat_tensor *t, int64_t i)
{
    return t->dtype == REMAT_F64 ? ((const double *)t->data)[i] : (double)((const float *)t->data)[i];
}

static void t_set(remat_tensor *t, int64_t i, double v)
{
    if (t->dtype == REMAT_F64)
        ((double *)t->data)[i] = v;
    else
        ((float *)t->data)[i] = (float)v;
}

static remat_tensor t_rand(remat_dtype dt, int rank, const int64_t *dims, double lo, double hi)
{
    remat_tensor t = t_new(dt, rank, dims);
    for (int64_t i = 0; i < t_numel(&t); i++)
        t_set(&t, i, urand(lo, hi));
    return t;
}

static void t_free_all(int n, remat_tensor *t)
{
    for (int i = 0; i < n; i++) {
        free(t[i].data);
        t[i].data = NULL;
    }
}

/* ---- compile and run ---- */

/* differentiate f (all arguments), run, free */
static void run_ad(ad_kind k, const remat_fn *f, int n_in, const remat_tensor *in, outs_t *o, remat_stats *st,
                   remat_memory_plan *plan)
{
    remat_fn *g = ad_ok(k, f, 0, NULL);
    run_fn(g, n_in, in, o, st, plan);
    remat_fn_free(g);
}

#define scan_ok(...)                                                                                        \
    do {                                                                                                    \
        if (remat_scan(__VA_ARGS__) != REMAT_OK)                                                            \
            fail_msg("scan failed: %s", remat_last_error());                                                \
    } while (0)

/* got vs want elementwise: |g - w| <= rtol * max|want| of that output
 * (the arrays mix entries of very different size, so relative to the array) */
static void check_outs_close(const char *what, int first, int count, const outs_t *got, const outs_t *want,
                             double rtol)
{
    for (int i = first; i < first + count; i++) {
        const remat_tensor *g = &got->t[i], *w = &want->t[i];
        assert_int_equal(g->dtype, w->dtype);
        if (!remat_shape_equal(&g->shape, &w->shape))
            fail_msg("%s: output %d: shape differs", what, i);
        int64_t n = t_numel(w);
        double scale = 0;
        for (int64_t j = 0; j < n; j++)
            scale = fmax(scale, fabs(t_get(w, j)));
        for (int64_t j = 0; j < n; j++) {
            double a = t_get(g, j), b = t_get(w, j);
            if (!(fabs(a - b) <= rtol * scale))
                fail_msg("%s: output %d [%lld]: got %.17g, want %.17g (rel to max %.3g)", what, i, (long long)j, a,
                         b, fabs(a - b) / (scale > 0 ? scale : 1));
        }
    }
}

static void check_outs_bitwise(const char *what, const outs_t *got, const outs_t *want)
{
    assert_int_equal(got->n, want->n);
    for (int i = 0; i < got->n; i++) {
        const remat_tensor *g = &got->t[i], *w = &want->t[i];
        assert_int_equal(g->dtype, w->dtype);
        assert_true(remat_shape_equal(&g->shape, &w->shape));
        size_t b = tbytes(w->dtype, &w->shape);
        if (memcmp(g->data, w->data, b) != 0) {
            int64_t j = 0;
            while (t_get(g, j) == t_get(w, j))
                j++;
            fail_msg("%s: output %d not bitwise identical: [%lld] %.17g vs %.17g", what, i, (long long)j,
                     t_get(g, j), t_get(w, j));
        }
    }
}

/* (n, dims...) from n values of one shape: jnp.stack */
static remat_val stack(remat_fn *f, int64_t n, const remat_val *v)
{
    remat_val *r = xcalloc((size_t)n, sizeof *r);
    for (int64_t t = 0; t < n; t++) {
        remat_shape s = remat_val_shape(f, v[t]);
        int64_t dims[REMAT_MAX_RANK];
        dims[0] = 1;
        for (int i = 0; i < s.rank; i++)
            dims[i + 1] = s.dims[i];
        r[t] = remat_reshape(f, v[t], s.rank + 1, dims);
    }
    remat_val out = remat_concatenate(f, (int)n, r, 0);
    free(r);
    return out;
}

/* The schedules of the brief, every one of them in every grid below. */
static const char *const schedules[] = {
    "store-all",  "per-step",   "periodic:1", "periodic:2", "periodic:3",  "periodic:7", "two-level",
    "two-level:5", "binomial:1", "binomial:2", "binomial:3", "binomial:5", "binomial:10", "binomial:90",
    "online:1",   "online:2",   "online:3",   "online:5",   "online:10",
};
#define N_SCHEDULES ((int)(sizeof schedules / sizeof schedules[0]))

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
            check_outs_bitwise(what, &gs, &ref);
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

/* ==== 3 and 4. a body where policies matter: matmul + tanh, xs and ys ====
 *
 * body(h (3,5), acc (), x (5), W (5,5)):
 *   h'   = tanh(h @ W + x)
 *   y    = sum(h' * h, axis 1)      (3)
 *   acc' = acc + 0.01 sum(y)
 * Carry bytes 120 and 8: neither a multiple of the 16-byte alignment.
 */
static remat_fn *body_mm(void)
{
    remat_fn *b = remat_fn_new("body_mm");
    remat_val h = remat_arg(b, "h", REMAT_F64, 2, DIMS(3, 5));
    remat_val acc = remat_arg(b, "acc", REMAT_F64, 0, NULL);
    remat_val x = remat_arg(b, "x", REMAT_F64, 1, DIMS(5));
    remat_val w = remat_arg(b, "W", REMAT_F64, 2, DIMS(5, 5));
    remat_val h1 = remat_tanh(b, remat_add(b, remat_matmul(b, h, w), x));
    remat_val y = remat_sum(b, remat_mul(b, h1, h), 1, (int[]){1});
    remat_fn_output(b, h1);
    remat_fn_output(b, remat_add(b, acc, remat_mul_scalar(b, remat_sum_all(b, y), 0.01)));
    remat_fn_output(b, y);
    assert_fn_ok(b);
    return b;
}

static const size_t mm_carry_bytes = 128 + 16; /* align16(3*5*8) + align16(8) */

/* loss(h0, acc0, X (n,5), W) = sum(h_n^2) + acc_n + sum(sin ys) */
static remat_fn *model_mm(int64_t n, bool by_scan, const remat_scan_options *opt)
{
    remat_fn *body = body_mm();
    remat_fn *f = remat_fn_new(by_scan ? "mm_scan" : "mm_unrolled");
    remat_val a[4] = {remat_arg(f, "h0", REMAT_F64, 2, DIMS(3, 5)), remat_arg(f, "acc0", REMAT_F64, 0, NULL),
                      remat_arg(f, "X", REMAT_F64, 2, DIMS(n, 5)), remat_arg(f, "W", REMAT_F64, 2, DIMS(5, 5))};
    remat_val c[2], ys = REMAT_NONE;
    if (by_scan) {
        scan_ok(f, body, n, 2, a, 1, a + 2, 1, a + 3, opt, c, &ys);
    } else {
        remat_val *y = xcalloc((size_t)n, sizeof *y);
        c[0] = a[0];
        c[1] = a[1];
        for (int64_t t = 0; t < n; t++) {
            remat_val o[3];
            assert_int_equal(remat_call(f, body, 4, (remat_val[]){c[0], c[1], remat_index(f, a[2], t), a[3]}, o),
                             REMAT_OK);
            c[0] = o[0];
            c[1] = o[1];
            y[t] = o[2];
        }
        if (n > 0)
            ys = stack(f, n, y);
        free(y);
    }
    remat_val l = remat_add(f, remat_sum_all(f, remat_square(f, c[0])), c[1]);
    if (ys != REMAT_NONE)
        l = remat_add(f, l, remat_sum_all(f, remat_sin(f, ys)));
    remat_fn_output(f, l);
    remat_fn_free(body);
    assert_fn_ok(f);
    return f;
}

static void inputs_mm(int64_t n, remat_tensor *in)
{
    in[0] = t_rand(REMAT_F64, 2, DIMS(3, 5), -1, 1);
    in[1] = t_rand(REMAT_F64, 0, NULL, -1, 1);
    in[2] = t_rand(REMAT_F64, 2, DIMS(n, 5), -1, 1);
    in[3] = t_rand(REMAT_F64, 2, DIMS(5, 5), -0.6, 0.6);
}

static const int64_t grid_lengths[] = {0, 1, 2, 3, 5, 7, 13, 16, 31, 64, 97, 128, 1000};
#define N_GRID_LENGTHS ((int)(sizeof grid_lengths / sizeof grid_lengths[0]))

static const remat_policy *grid_policy(int p)
{
    return p == 0 ? NULL : p == 1 ? remat_nothing_saveable : remat_dots_saveable;
}
static const char *grid_policy_name(int p)
{
    return p == 0 ? "no policy" : p == 1 ? "nothing_saveable" : "dots_saveable";
}

typedef struct {
    outs_t o; /* loss, d/dh0, d/dacc0, d/dX, d/dW */
    remat_stats st;
    remat_memory_plan plan;
} mm_run;

static void run_mm(int64_t n, const char *sched, int policy, remat_tensor *in, mm_run *r)
{
    remat_scan_options opt = {.schedule = spec_of(sched), .body_policy = grid_policy(policy)};
    remat_fn *f = model_mm(n, true, &opt);
    run_ad(AD_VALUE_AND_GRAD, f, 4, in, &r->o, &r->st, &r->plan);
    remat_fn_free(f);
}

static void test_scan_schedules_policies_bitwise_identical(void **state)
{
    (void)state;
    for (int li = 0; li < N_GRID_LENGTHS; li++) {
        int64_t n = grid_lengths[li];
        remat_tensor in[4];
        inputs_mm(n, in);
        mm_run ref;
        run_mm(n, "store-all", 0, in, &ref);
        if (n <= 128) { /* store-all itself against the unrolled graph */
            remat_fn *fu = model_mm(n, false, NULL);
            outs_t gu;
            run_ad(AD_VALUE_AND_GRAD, fu, 4, in, &gu, NULL, NULL);
            char what[64];
            snprintf(what, sizeof what, "store-all vs unrolled, n=%lld", (long long)n);
            check_outs_close(what, 0, 5, &ref.o, &gu, 1e-13);
            outs_free(&gu);
            remat_fn_free(fu);
        }
        for (int si = 0; si < N_SCHEDULES; si++) {
            for (int p = 0; p < 3; p++) {
                if (si == 0 && p == 0)
                    continue;
                mm_run r;
                run_mm(n, schedules[si], p, in, &r);
                char what[96];
                snprintf(what, sizeof what, "n=%lld %s %s vs store-all", (long long)n, schedules[si],
                         grid_policy_name(p));
                check_outs_bitwise(what, &r.o, &ref.o);
                outs_free(&r.o);
            }
        }
        outs_free(&ref.o);
        t_free_all(4, in);
    }
}

/* One compiled program run on inputs A, then B, then A again: the runtime's
 * schedule state, slots and tapes are per run, so A's bits come back, and B's
 * equal a fresh program's. */
static void test_scan_program_reruns_reproduce(void **state)
{
    (void)state;
    static const char *const sched[] = {"binomial:3", "online:2", "periodic:3", "per-step"};
    const int64_t n = 37;
    for (size_t si = 0; si < sizeof sched / sizeof sched[0]; si++) {
        remat_scan_options opt = {.schedule = spec_of(sched[si]), .body_policy = remat_dots_saveable};
        remat_fn *f = model_mm(n, true, &opt);
        remat_fn *g = ad_ok(AD_VALUE_AND_GRAD, f, 0, NULL);
        remat_program *p = compile_ok(g);
        remat_tensor ia[4], ib[4];
        inputs_mm(n, ia);
        inputs_mm(n, ib);
        outs_t a1, b1, a2, b_fresh;
        remat_stats s1, s2;
        run_prog(p, 4, ia, &a1, &s1);
        run_prog(p, 4, ib, &b1, NULL);
        run_prog(p, 4, ia, &a2, &s2);
        run_fn(g, 4, ib, &b_fresh, NULL, NULL);
        check_outs_bitwise(sched[si], &a2, &a1);
        check_outs_bitwise(sched[si], &b1, &b_fresh);
        assert_int_equal(s1.forward_evals, s2.forward_evals);
        assert_int_equal(s1.peak_snapshot_bytes, s2.peak_snapshot_bytes);
        assert_int_equal(s1.peak_arena_bytes, s2.peak_arena_bytes);
        outs_free(&a1);
        outs_free(&b1);
        outs_free(&a2);
        outs_free(&b_fresh);
        t_free_all(4, ia);
        t_free_all(4, ib);
        remat_program_free(p);
        remat_fn_free(g);
        remat_fn_free(f);
    }
}

/* Bytes of one step tape: the residuals of the body as the scan differentiates
 * it (a checkpoint region when a policy is given), each 16-byte aligned. */
/* One step's tape: the body's residuals, each 16-aligned, except the x_t
 * and const arguments, which the runtime reads from xs / the consts instead
 * of taping them (arguments past the first n_carry). */
static size_t tape_bytes_of(const remat_fn *body, const remat_policy *pol, int n_carry)
{
    remat_fn *cp = pol ? remat_checkpoint((remat_fn *)body, pol) : NULL;
    remat_residual_list *r = NULL;
    assert_int_equal(remat_saved_residuals(cp ? cp : body, 0, NULL, &r), REMAT_OK);
    size_t b = 0;
    for (int i = 0; i < remat_residual_list_count(r); i++) {
        const remat_residual *e = remat_residual_list_get(r, i);
        int loop_input = 0;
        for (int a = n_carry; e->kind == REMAT_RESIDUAL_ARGUMENT && a < remat_fn_num_args(body); a++)
            loop_input |= !strcmp(e->name, remat_fn_arg_name(body, a));
        if (!loop_input)
            b += align16(e->bytes);
    }
    remat_residual_list_free(r);
    remat_fn_free(cp);
    return b;
}

static int64_t ceil_div(int64_t a, int64_t b) { return a / b + (a % b != 0); }

/* The cost formulas, written out here from the schedules' documentation
 * (remat/schedule.h, DESIGN.md); online has no closed form for its peak. */
static void closed_form(const remat_schedule_spec *s, int64_t n, remat_schedule_cost *c)
{
    *c = (remat_schedule_cost){0};
    if (n == 0)
        return;
    int64_t k;
    switch (s->kind) {
    case REMAT_SCHED_STORE_ALL: *c = (remat_schedule_cost){n, 0, n}; return;
    case REMAT_SCHED_PER_STEP: *c = (remat_schedule_cost){2 * n - 1, n - 1, 1}; return;
    case REMAT_SCHED_PERIODIC:
    case REMAT_SCHED_TWO_LEVEL:
        k = s->period;
        if (k == 0)
            for (k = 1; k * k < n; k++)
                ;
        *c = (remat_schedule_cost){n + (ceil_div(n, k) - 1) * k, ceil_div(n, k) - 1, k < n ? k : n};
        return;
    case REMAT_SCHED_BINOMIAL:
        *c = (remat_schedule_cost){remat_binomial_optimum(n, s->snapshots),
                                   s->snapshots < n - 1 ? s->snapshots : n - 1, 1};
        return;
    default: c->forward_evals = -1; return;
    }
}

static void test_scan_measured_equals_predicted(void **state)
{
    (void)state;
    remat_fn *body = body_mm();
    size_t tape[3];
    for (int p = 0; p < 3; p++)
        tape[p] = tape_bytes_of(body, grid_policy(p), 2);
    /* Written out: no policy keeps h, W and tanh's output; nothing_saveable
     * the inputs h, x, W; dots_saveable adds the dot_general's output (tanh
     * is recomputed from it and x). Of those, x_t and W are read from xs and
     * the consts, not taped: 128 + 128, 128, 128 + 128. */
    assert_int_equal(tape[0], 256);
    assert_int_equal(tape[1], 128);
    assert_int_equal(tape[2], 256);
    char table[8192];
    int tl = snprintf(table, sizeof table, "%-12s %10s %10s %14s %14s\n", "n=1000", "evals", "predicted",
                      "peak snap B", "predicted B");
    for (int li = 0; li < N_GRID_LENGTHS; li++) {
        int64_t n = grid_lengths[li];
        remat_tensor in[4];
        inputs_mm(n, in);
        for (int si = 0; si < N_SCHEDULES; si++) {
            remat_schedule_spec spec = spec_of(schedules[si]);
            remat_schedule_cost pred, cf;
            assert_int_equal(remat_schedule_predict(&spec, n, &pred), REMAT_OK);
            closed_form(&spec, n, &cf);
            if (cf.forward_evals >= 0) { /* the prediction is the documented formula */
                assert_int_equal(pred.forward_evals, cf.forward_evals);
                assert_int_equal(pred.peak_snapshots, cf.peak_snapshots);
                assert_int_equal(pred.peak_tapes, cf.peak_tapes);
            } else { /* online: never better than the offline optimum, equal to it while
                        n <= (s+1)(s+2)/2 (Stumm & Walther 2010) */
                assert_true(pred.forward_evals >= remat_binomial_optimum(n, spec.snapshots));
                if (n <= (spec.snapshots + 1) * (spec.snapshots + 2) / 2)
                    assert_int_equal(pred.forward_evals, remat_binomial_optimum(n, spec.snapshots));
                assert_true(pred.peak_snapshots <= spec.snapshots);
            }
            for (int p = 0; p < 3; p++) {
                mm_run r;
                run_mm(n, schedules[si], p, in, &r);
                size_t want = (size_t)pred.peak_snapshots * mm_carry_bytes + (size_t)pred.peak_tapes * tape[p];
                /* the plan reports the same prediction and the byte sizes worked out here */
                assert_int_equal(r.plan.peak_snapshot_bytes, want);
                assert_int_equal(r.plan.scan_carry_bytes, mm_carry_bytes);
                assert_int_equal(r.plan.scan_tape_bytes, tape[p]);
                if (r.st.forward_evals != pred.forward_evals || r.st.peak_snapshot_bytes != want ||
                    r.plan.arena_bytes != r.st.peak_arena_bytes)
                    fail_msg("n=%lld %s %s: evals %lld (predicted %lld), peak snapshot bytes %zu (predicted %lld "
                             "x %zu + %lld x %zu = %zu), arena %zu (planned %zu)",
                             (long long)n, schedules[si], grid_policy_name(p), (long long)r.st.forward_evals,
                             (long long)pred.forward_evals, r.st.peak_snapshot_bytes, (long long)pred.peak_snapshots,
                             mm_carry_bytes, (long long)pred.peak_tapes, tape[p], want, r.st.peak_arena_bytes,
                             r.plan.arena_bytes);
                if (n == 1000 && p == 0 && tl < (int)sizeof table)
                    tl += snprintf(table + tl, sizeof table - (size_t)tl, "%-12s %10lld %10lld %14zu %14zu\n",
                                   schedules[si], (long long)r.st.forward_evals, (long long)pred.forward_evals,
                                   r.st.peak_snapshot_bytes, want);
                outs_free(&r.o);
            }
        }
        t_free_all(4, in);
    }
    printf("scan body_mm: carry %zu bytes, tape %zu bytes (nothing_saveable %zu, dots_saveable %zu)\n%s",
           mm_carry_bytes, tape[0], tape[1], tape[2], table);
    remat_fn_free(body);
}

/* Griewank & Walther's binomial optimum: published test vectors, and the
 * binomial schedule's measured evaluations hitting it. */
static void test_scan_binomial_optimum_vectors(void **state)
{
    (void)state;
    static const int64_t v[][3] = {{5, 2, 11},     {10, 3, 25},     {20, 3, 65},
                                   {100, 3, 590},  {100, 10, 322},  {1000, 5, 7284}};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        assert_int_equal(remat_binomial_optimum(v[i][0], v[i][1]), v[i][2]);
        char sched[32];
        snprintf(sched, sizeof sched, "binomial:%lld", (long long)v[i][1]);
        remat_tensor in[4];
        inputs_mm(v[i][0], in);
        mm_run r;
        run_mm(v[i][0], sched, 0, in, &r);
        if (r.st.forward_evals != v[i][2])
            fail_msg("binomial (%lld, %lld): %lld evaluations, optimum %lld", (long long)v[i][0],
                     (long long)v[i][1], (long long)r.st.forward_evals, (long long)v[i][2]);
        outs_free(&r.o);
        t_free_all(4, in);
    }
}

/* ==== 5. the seeds ==== */

/* body(c) = (sin c + 0.1 c, same): seed 004 section 5 */
static remat_fn *body_sin(void)
{
    remat_fn *b = remat_fn_new("scan_body");
    remat_val c = remat_arg(b, "x", REMAT_F64, 1, DIMS(100));
    remat_val c1 = remat_add(b, remat_sin(b, c), remat_mul_scalar(b, c, 0.1));
    remat_fn_output(b, c1);
    remat_fn_output(b, c1);
    assert_fn_ok(b);
    return b;
}

static void test_scan_seed_scan_sin(void **state)
{
    (void)state;
    /* seed_values.json scan_sin.grad_norm_more_digits; goldens/gradients.json
     * scan_sin: grad_norm 1.8153891594704775e-09, every entry 1.8153891594704774e-10 */
    const double want_norm = 1.8153891594704794e-09, want_entry = 1.8153891594704774e-10;
    remat_fn *body = body_sin();
    remat_fn *cp_body = remat_checkpoint(body, NULL);
    assert_non_null(cp_body);
    outs_t first = {0};
    for (int variant = 0; variant < 3; variant++) {
        remat_scan_options opt = {.body_policy = variant == 1 ? remat_nothing_saveable : NULL};
        remat_fn *f = remat_fn_new("sequential");
        remat_val x = remat_arg(f, "x", REMAT_F64, 1, DIMS(100));
        remat_val fin, traj;
        scan_ok(f, variant == 2 ? cp_body : body, 100, 1, &x, 0, NULL, 0, NULL, &opt, &fin, &traj);
        remat_fn_output(f, remat_sum_all(f, fin));
        assert_fn_ok(f);
        remat_tensor in = t_new(REMAT_F64, 1, DIMS(100));
        for (int i = 0; i < 100; i++)
            t_set(&in, i, 1.0);
        outs_t g;
        run_ad(AD_GRAD, f, 1, &in, &g, NULL, NULL);
        double norm = 0;
        for (int i = 0; i < 100; i++) {
            double e = t_get(&g.t[0], i);
            norm += e * e;
            if (!(fabs(e - want_entry) <= 1e-12 * want_entry))
                fail_msg("variant %d: grad[%d] = %.17g, want %.17g", variant, i, e, want_entry);
        }
        norm = sqrt(norm);
        if (!(fabs(norm - want_norm) <= 1e-12 * want_norm))
            fail_msg("variant %d: gradient norm %.17g, want %.17g", variant, norm, want_norm);
        if (variant == 0)
            first = g;
        else { /* "max_abs_diff_checkpointed_body": 0.0 */
            check_outs_bitwise("scan_sin checkpointed body", &g, &first);
            outs_free(&g);
        }
        free(in.data);
        remat_fn_free(f);
    }
    outs_free(&first);
    remat_fn_free(cp_body);
    remat_fn_free(body);
}

/* euler_step(C, (k1, k2, dt)) of seed 004 section 7, dt = L / n = 0.01 */
static remat_fn *body_pfr(void)
{
    remat_fn *b = remat_fn_new("euler_step");
    remat_val c = remat_arg(b, "C", REMAT_F64, 1, DIMS(3));
    remat_val k1 = remat_arg(b, "k1", REMAT_F64, 0, NULL);
    remat_val k2 = remat_arg(b, "k2", REMAT_F64, 0, NULL);
    remat_val r1 = remat_mul(b, k1, remat_index(b, c, 0));
    remat_val r2 = remat_mul(b, k2, remat_index(b, c, 1));
    remat_val parts[3] = {remat_reshape(b, remat_neg(b, r1), 1, DIMS(1)),
                          remat_reshape(b, remat_sub(b, r1, r2), 1, DIMS(1)), remat_reshape(b, r2, 1, DIMS(1))};
    remat_val dc = remat_concatenate(b, 3, parts, 0);
    remat_val c1 = remat_add(b, c, remat_mul_scalar(b, dc, 10.0 / 1000));
    remat_fn_output(b, c1);
    remat_fn_output(b, c1);
    assert_fn_ok(b);
    return b;
}

static void test_scan_seed_pfr_every_schedule(void **state)
{
    (void)state;
    /* goldens/gradients.json pfr_euler (JAX, float64); seed_values.json pfr_euler */
    const double want_j = -0.013221594662842685, want_k1 = 0.012349448250506132, want_k2 = 0.10730492281164114;
    remat_fn *body = body_pfr();
    remat_tensor in[3] = {t_new(REMAT_F64, 1, DIMS(3)), t_new(REMAT_F64, 0, NULL), t_new(REMAT_F64, 0, NULL)};
    t_set(&in[0], 0, 1.0);
    t_set(&in[1], 0, 1.0);
    t_set(&in[2], 0, 0.5);
    outs_t first = {0};
    for (int si = 0; si < N_SCHEDULES; si++) {
        for (int p = 0; p < 2; p++) {
            remat_scan_options opt = {.schedule = spec_of(schedules[si]),
                                      .body_policy = p ? remat_nothing_saveable : NULL};
            remat_fn *f = remat_fn_new("pfr");
            remat_val a[3] = {remat_arg(f, "C0", REMAT_F64, 1, DIMS(3)), remat_arg(f, "k1", REMAT_F64, 0, NULL),
                              remat_arg(f, "k2", REMAT_F64, 0, NULL)};
            remat_val fin, traj;
            scan_ok(f, body, 1000, 1, a, 0, NULL, 2, a + 1, &opt, &fin, &traj);
            remat_fn_output(f, remat_neg(f, remat_index(f, fin, 1)));
            assert_fn_ok(f);
            remat_fn *g = ad_ok(AD_VALUE_AND_GRAD, f, 2, (int[]){1, 2});
            outs_t o;
            run_fn(g, 3, in, &o, NULL, NULL);
            assert_int_equal(o.n, 3);
            double got[3] = {t_get(&o.t[0], 0), t_get(&o.t[1], 0), t_get(&o.t[2], 0)};
            double want[3] = {want_j, want_k1, want_k2};
            for (int i = 0; i < 3; i++)
                if (!(fabs(got[i] - want[i]) <= 1e-12 * fabs(want[i])))
                    fail_msg("pfr %s %s: %s = %.17g, want %.17g", schedules[si], p ? "nothing_saveable" : "",
                             i == 0 ? "J" : i == 1 ? "dJ/dk1" : "dJ/dk2", got[i], want[i]);
            if (si == 0 && p == 0) {
                first = o;
            } else {
                char what[64];
                snprintf(what, sizeof what, "pfr %s%s", schedules[si], p ? " nothing_saveable" : "");
                check_outs_bitwise(what, &o, &first);
                outs_free(&o);
            }
            remat_fn_free(g);
            remat_fn_free(f);
        }
    }
    outs_free(&first);
    t_free_all(3, in);
    remat_fn_free(body);
}

/* ==== 6. nesting ==== */

/* inner(h (3), x (), a (3)) = (tanh(h * a + x), sum of it) */
static remat_fn *body_inner(void)
{
    remat_fn *b = remat_fn_new("inner");
    remat_val h = remat_arg(b, "h", REMAT_F64, 1, DIMS(3));
    remat_val x = remat_arg(b, "x", REMAT_F64, 0, NULL);
    remat_val a = remat_arg(b, "a", REMAT_F64, 1, DIMS(3));
    remat_val h1 = remat_tanh(b, remat_add(b, remat_mul(b, h, a), x));
    remat_fn_output(b, h1);
    remat_fn_output(b, remat_sum_all(b, h1));
    assert_fn_ok(b);
    return b;
}

/* outer(c (3), row (m), a (3)): scan inner over row from c, then
 * (h_m + 0.1 c, sum(sin(inner ys))) — or the same with inner unrolled */
static remat_fn *body_outer(int64_t m, bool by_scan, const remat_scan_options *inner_opt)
{
    remat_fn *inner = body_inner();
    remat_fn *b = remat_fn_new("outer");
    remat_val c = remat_arg(b, "c", REMAT_F64, 1, DIMS(3));
    remat_val row = remat_arg(b, "row", REMAT_F64, 1, DIMS(m));
    remat_val a = remat_arg(b, "a", REMAT_F64, 1, DIMS(3));
    remat_val h, ys;
    if (by_scan) {
        scan_ok(b, inner, m, 1, &c, 1, &row, 1, &a, inner_opt, &h, &ys);
    } else {
        remat_val *y = xcalloc((size_t)m, sizeof *y);
        h = c;
        for (int64_t j = 0; j < m; j++) {
            remat_val o[2];
            assert_int_equal(remat_call(b, inner, 3, (remat_val[]){h, remat_index(b, row, j), a}, o), REMAT_OK);
            h = o[0];
            y[j] = o[1];
        }
        ys = stack(b, m, y);
        free(y);
    }
    remat_fn_output(b, remat_add(b, h, remat_mul_scalar(b, c, 0.1)));
    remat_fn_output(b, remat_sum_all(b, remat_sin(b, ys)));
    remat_fn_free(inner);
    assert_fn_ok(b);
    return b;
}

/* loss(c0 (3), X (n,m), a (3)) = sum(c_n^2) + sum(sin Y) */
static remat_fn *model_nested(int64_t n, int64_t m, bool by_scan, const remat_scan_options *outer_opt,
                              const remat_scan_options *inner_opt)
{
    remat_fn *outer = body_outer(m, by_scan, inner_opt);
    remat_fn *f = remat_fn_new(by_scan ? "nested_scan" : "nested_unrolled");
    remat_val a[3] = {remat_arg(f, "c0", REMAT_F64, 1, DIMS(3)), remat_arg(f, "X", REMAT_F64, 2, DIMS(n, m)),
                      remat_arg(f, "a", REMAT_F64, 1, DIMS(3))};
    remat_val c, ys;
    if (by_scan) {
        scan_ok(f, outer, n, 1, a, 1, a + 1, 1, a + 2, outer_opt, &c, &ys);
    } else {
        remat_val *y = xcalloc((size_t)n, sizeof *y);
        c = a[0];
        for (int64_t t = 0; t < n; t++) {
            remat_val o[2];
            assert_int_equal(remat_call(f, outer, 3, (remat_val[]){c, remat_index(f, a[1], t), a[2]}, o), REMAT_OK);
            c = o[0];
            y[t] = o[1];
        }
        ys = stack(f, n, y);
        free(y);
    }
    remat_fn_output(f, remat_add(f, remat_sum_all(f, remat_square(f, c)), remat_sum_all(f, remat_sin(f, ys))));
    remat_fn_free(outer);
    assert_fn_ok(f);
    return f;
}

static void test_scan_nested_matches_unrolled(void **state)
{
    (void)state;
    const int64_t n = 5, m = 4;
    remat_tensor in[3] = {t_rand(REMAT_F64, 1, DIMS(3), -1, 1), t_rand(REMAT_F64, 2, DIMS(n, m), -1, 1),
                          t_rand(REMAT_F64, 1, DIMS(3), -1.2, 1.2)};
    remat_fn *fu = model_nested(n, m, false, NULL, NULL);
    outs_t gu;
    run_ad(AD_VALUE_AND_GRAD, fu, 3, in, &gu, NULL, NULL);
    static const struct {
        const char *outer, *inner;
        int inner_policy;
    } v[] = {
        {"store-all", "store-all", 0},
        {"binomial:2", "periodic:2", 0},
        {"online:2", "per-step", 1},
        {"per-step", "binomial:1", 2},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        remat_scan_options oo = {.schedule = spec_of(v[i].outer)};
        remat_scan_options io = {.schedule = spec_of(v[i].inner), .body_policy = grid_policy(v[i].inner_policy)};
        remat_fn *fs = model_nested(n, m, true, &oo, &io);
        outs_t gs;
        remat_stats st;
        run_ad(AD_VALUE_AND_GRAD, fs, 3, in, &gs, &st, NULL);
        char what[96];
        snprintf(what, sizeof what, "nested outer %s inner %s", v[i].outer, v[i].inner);
        check_outs_close(what, 0, 4, &gs, &gu, 1e-14);
        outs_free(&gs);
        remat_fn_free(fs);
    }
    outs_free(&gu);
    remat_fn_free(fu);
    t_free_all(3, in);
}

/* g(h0, acc0, X, W) = (h_n, acc_n, sum(sin ys)) by a scan; G = checkpoint(g,
 * policy) called from F, loss as model_mm: against the unrolled model_mm. */
static void test_scan_inside_checkpoint_region(void **state)
{
    (void)state;
    const int64_t n = 9;
    remat_tensor in[4];
    inputs_mm(n, in);
    remat_fn *fu = model_mm(n, false, NULL);
    outs_t gu;
    run_ad(AD_VALUE_AND_GRAD, fu, 4, in, &gu, NULL, NULL);
    static const struct {
        const char *sched;
        int policy; /* 0: checkpoint default (nothing_saveable), 1: dots, 2: everything */
    } v[] = {{"store-all", 0}, {"binomial:3", 0}, {"store-all", 1}, {"periodic:2", 1}, {"online:2", 2}};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        remat_fn *body = body_mm();
        remat_fn *g = remat_fn_new("scan_region");
        remat_val a[4] = {remat_arg(g, "h0", REMAT_F64, 2, DIMS(3, 5)), remat_arg(g, "acc0", REMAT_F64, 0, NULL),
                          remat_arg(g, "X", REMAT_F64, 2, DIMS(n, 5)), remat_arg(g, "W", REMAT_F64, 2, DIMS(5, 5))};
        remat_val c[2], ys;
        remat_scan_options opt = {.schedule = spec_of(v[i].sched)};
        scan_ok(g, body, n, 2, a, 1, a + 2, 1, a + 3, &opt, c, &ys);
        remat_fn_output(g, c[0]);
        remat_fn_output(g, c[1]);
        remat_fn_output(g, remat_sum_all(g, remat_sin(g, ys)));
        assert_fn_ok(g);
        remat_fn *cg = remat_checkpoint(g, v[i].policy == 0   ? NULL
                                           : v[i].policy == 1 ? remat_dots_saveable
                                                              : remat_everything_saveable);
        assert_non_null(cg);
        remat_fn *f = remat_fn_new("calls_region");
        remat_val b[4] = {remat_arg(f, "h0", REMAT_F64, 2, DIMS(3, 5)), remat_arg(f, "acc0", REMAT_F64, 0, NULL),
                          remat_arg(f, "X", REMAT_F64, 2, DIMS(n, 5)), remat_arg(f, "W", REMAT_F64, 2, DIMS(5, 5))};
        remat_val o[3];
        assert_int_equal(remat_call(f, cg, 4, b, o), REMAT_OK);
        remat_fn_output(f, remat_add(f, remat_add(f, remat_sum_all(f, remat_square(f, o[0])), o[1]), o[2]));
        assert_fn_ok(f);
        outs_t gs;
        run_ad(AD_VALUE_AND_GRAD, f, 4, in, &gs, NULL, NULL);
        char what[96];
        snprintf(what, sizeof what, "scan in checkpoint region (%s, policy %d)", v[i].sched, v[i].policy);
        check_outs_close(what, 0, 5, &gs, &gu, 1e-13);
        outs_free(&gs);
        remat_fn_free(f);
        remat_fn_free(cg);
        remat_fn_free(g);
        remat_fn_free(body);
    }
    outs_free(&gu);
    remat_fn_free(fu);
    t_free_all(4, in);
}

/* ==== 7. the residual report ==== */

/* body(c (3), x (3), k (3)) = (sin(c) * k + x, sum of it) */
static remat_fn *body_res(void)
{
    remat_fn *b = remat_fn_new("body_res");
    remat_val c = remat_arg(b, "c", REMAT_F64, 1, DIMS(3));
    remat_val x = remat_arg(b, "x", REMAT_F64, 1, DIMS(3));
    remat_val k = remat_arg(b, "k", REMAT_F64, 1, DIMS(3));
    remat_val c1 = remat_add(b, remat_mul(b, remat_sin(b, c), k), x);
    remat_fn_output(b, c1);
    remat_fn_output(b, remat_sum_all(b, c1));
    assert_fn_ok(b);
    return b;
}

static void test_scan_residual_report_lists_snapshots(void **state)
{
    (void)state;
    const int64_t n = 100;
    remat_fn *body = body_res();
    size_t tape = tape_bytes_of(body, NULL, 1);
    static const struct {
        const char *sched;
        int64_t slots, tapes; /* written out from the schedules' documentation, n = 100 */
    } v[] = {{"store-all", 0, 100}, {"per-step", 99, 1},  {"periodic:7", 14, 7}, {"two-level", 9, 10},
             {"binomial:3", 3, 1},  {"binomial:90", 90, 1}, {"online:2", 2, 1}};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        remat_scan_options opt = {.schedule = spec_of(v[i].sched)};
        remat_fn *f = remat_fn_new("scanned");
        remat_val a[3] = {remat_arg(f, "c0", REMAT_F64, 1, DIMS(3)), remat_arg(f, "xs", REMAT_F64, 2, DIMS(n, 3)),
                          remat_arg(f, "k", REMAT_F64, 1, DIMS(3))};
        remat_val c, ys;
        scan_ok(f, body, n, 1, a, 1, a + 1, 1, a + 2, &opt, &c, &ys);
        remat_fn_output(f, remat_add(f, remat_sum_all(f, c), remat_sum_all(f, remat_square(f, ys))));
        assert_fn_ok(f);
        remat_residual_list *r = NULL;
        assert_int_equal(remat_saved_residuals(f, 0, NULL, &r), REMAT_OK);
        int found = 0;
        for (int j = 0; j < remat_residual_list_count(r); j++) {
            const remat_residual *e = remat_residual_list_get(r, j);
            if (e->kind != REMAT_RESIDUAL_SNAPSHOT)
                continue;
            found++;
            char line[256];
            remat_residual_format(e, line, sizeof line);
            assert_int_equal(e->dtype, REMAT_F64);
            assert_int_equal(e->shape.rank, 1);
            assert_int_equal(e->shape.dims[0], 3);
            if (e->count != v[i].slots)
                fail_msg("%s: count %lld, want %lld slots (%s)", v[i].sched, (long long)e->count,
                         (long long)v[i].slots, line);
            assert_non_null(e->detail);
            assert_contains(e->detail, v[i].sched);
            assert_contains(line, v[i].sched);
            /* slots of 32 bytes (f64[3] = 24, 16-aligned) and the peak tapes */
            assert_int_equal(e->bytes, (size_t)v[i].slots * 32 + (size_t)v[i].tapes * tape);
        }
        if (found != 1)
            fail_msg("%s: %d snapshot entries in the residual report, want 1", v[i].sched, found);
        if (!strcmp(v[i].sched, "binomial:3")) {
            printf("residuals of a 100-step scan, binomial:3 (tape %zu bytes):\n", tape);
            remat_residual_list_print(r, stdout);
        }
        remat_residual_list_free(r);
        remat_fn_free(f);
    }
    remat_fn_free(body);
}

/* ==== 8. bad input ==== */

/* A fresh function with c (3), xs (5,3), k (3), bad (f32[3]) to scan over. */
typedef struct {
    remat_fn *f;
    remat_val c, xs, k, c4, c32, xs_short, xs_flat, k2;
    int nodes;
} bad_ctx;

static bad_ctx bad_new(void)
{
    bad_ctx b;
    b.f = remat_fn_new("caller");
    b.c = remat_arg(b.f, "c", REMAT_F64, 1, DIMS(3));
    b.xs = remat_arg(b.f, "xs", REMAT_F64, 2, DIMS(5, 3));
    b.k = remat_arg(b.f, "k", REMAT_F64, 1, DIMS(3));
    b.c4 = remat_arg(b.f, "c4", REMAT_F64, 1, DIMS(4));
    b.c32 = remat_arg(b.f, "c32", REMAT_F32, 1, DIMS(3));
    b.xs_short = remat_arg(b.f, "xs_short", REMAT_F64, 2, DIMS(4, 3));
    b.xs_flat = remat_arg(b.f, "xs_flat", REMAT_F64, 1, DIMS(5));
    b.k2 = remat_arg(b.f, "k2", REMAT_F64, 1, DIMS(2));
    assert_fn_ok(b.f);
    b.nodes = remat_fn_num_nodes(b.f);
    return b;
}

/* st is the status of the scan called on `line`: it and the function's
 * recorded error must be `want`, the message must name this file:line and
 * every needle, and nothing may have been added to the graph. */
static void bad_check(bad_ctx *b, remat_status st, int line, remat_status want, const char *n1, const char *n2)
{
    char here[64];
    snprintf(here, sizeof here, "test_scan.c:%d:", line);
    if (st != want)
        fail_msg("line %d: status %s, want %s (%s)", line, remat_status_name(st), remat_status_name(want),
                 remat_last_error());
    assert_contains(remat_last_error(), here);
    assert_contains(remat_last_error(), n1);
    if (n2)
        assert_contains(remat_last_error(), n2);
    assert_int_equal(remat_fn_status(b->f), want);
    assert_contains(remat_fn_error(b->f), here);
    assert_int_equal(remat_fn_num_nodes(b->f), b->nodes);
    remat_fn_free(b->f);
}

static void test_scan_bad_input_names_the_input(void **state)
{
    (void)state;
    remat_fn *body = body_res(); /* (c (3), x (3), k (3)) -> (c', y) */
    remat_fn *broken = remat_fn_new("broken_body");
    remat_val bc = remat_arg(broken, "c", REMAT_F64, 1, DIMS(3));
    remat_fn_output(broken, remat_add(broken, bc, remat_arg(broken, "d", REMAT_F64, 1, DIMS(2))));
    assert_int_not_equal(remat_fn_status(broken), REMAT_OK);
    remat_fn *shrink = remat_fn_new("shrinking_body"); /* carry (3) -> (2) */
    remat_val sc = remat_arg(shrink, "c", REMAT_F64, 1, DIMS(3));
    remat_fn_output(shrink, remat_slice(shrink, sc, DIMS(0), DIMS(2), NULL));
    assert_fn_ok(shrink);
    remat_val cout, ys;
    remat_status st;
    int line;
    bad_ctx b;
    remat_scan_options bad_sched = {.schedule = {.kind = REMAT_SCHED_BINOMIAL, .snapshots = 0}};

    /* argument count: 1 carry + 1 xs + 0 consts for a body of 3 arguments */
    b = bad_new();
    line = __LINE__; st = remat_scan(b.f, body, 5, 1, &b.c, 1, &b.xs, 0, NULL, NULL, &cout, &ys);
    bad_check(&b, st, line, REMAT_ERR_ARG, "body_res", "takes 3 arguments");

    /* init carry shape */
    b = bad_new();
    line = __LINE__; st = remat_scan(b.f, body, 5, 1, &b.c4, 1, &b.xs, 1, &b.k, NULL, &cout, &ys);
    bad_check(&b, st, line, REMAT_ERR_SHAPE, "init carry 0 is f64[4]", "f64[3]");

    /* init carry dtype: a dtype error, as remat_call reports it */
    b = bad_new();
    line = __LINE__; st = remat_scan(b.f, body, 5, 1, &b.c32, 1, &b.xs, 1, &b.k, NULL, &cout, &ys);
    bad_check(&b, st, line, REMAT_ERR_DTYPE, "init carry 0 is f32[3]", "f64[3]");

    /* xs stacked with the wrong length */
    b = bad_new();
    line = __LINE__; st = remat_scan(b.f, body, 5, 1, &b.c, 1, &b.xs_short, 1, &b.k, NULL, &cout, &ys);
    bad_check(&b, st, line, REMAT_ERR_SHAPE, "xs 0 is f64[4,3]", "f64[5,3]");

    /* xs not stacked at all */
    b = bad_new();
    line = __LINE__; st = remat_scan(b.f, body, 5, 1, &b.c, 1, &b.xs_flat, 1, &b.k, NULL, &cout, &ys);
    bad_check(&b, st, line, REMAT_ERR_SHAPE, "xs 0 is f64[5]", "f64[5,3]");

    /* const shape */
    b = bad_new();
    line = __LINE__; st = remat_scan(b.f, body, 5, 1, &b.c, 1, &b.xs, 1, &b.k2, NULL, &cout, &ys);
    bad_check(&b, st, line, REMAT_ERR_SHAPE, "const 0 is f64[2]", "f64[3]");

    /* negative length */
    b = bad_new();
    line = __LINE__; st = remat_scan(b.f, body, -1, 1, &b.c, 1, &b.xs, 1, &b.k, NULL, &cout, &ys);
    bad_check(&b, st, line, REMAT_ERR_VALUE, "length -1", NULL);

    /* NULL body */
    b = bad_new();
    line = __LINE__; st = remat_scan(b.f, NULL, 5, 1, &b.c, 1, &b.xs, 1, &b.k, NULL, &cout, &ys);
    bad_check(&b, st, line, REMAT_ERR_NULL, "body is NULL", NULL);

    /* binomial with 0 snapshots */
    b = bad_new();
    line = __LINE__; st = remat_scan(b.f, body, 5, 1, &b.c, 1, &b.xs, 1, &b.k, &bad_sched, &cout, &ys);
    bad_check(&b, st, line, REMAT_ERR_ARG, "binomial:0", "snapshots");

    /* a body whose carry changes shape */
    b = bad_new();
    line = __LINE__; st = remat_scan(b.f, shrink, 5, 1, &b.c, 0, NULL, 0, NULL, NULL, &cout, NULL);
    bad_check(&b, st, line, REMAT_ERR_SHAPE, "carry 0 goes in as f64[3] but comes out as f64[2]", NULL);

    /* a body with a build error */
    b = bad_new();
    line = __LINE__; st = remat_scan(b.f, broken, 5, 1, &b.c, 0, NULL, 1, &b.k2, NULL, &cout, NULL);
    bad_check(&b, st, line, remat_fn_status(broken), "broken_body", "build error");

    /* ys wanted but no room for them */
    b = bad_new();
    line = __LINE__; st = remat_scan(b.f, body, 5, 1, &b.c, 1, &b.xs, 1, &b.k, NULL, &cout, NULL);
    bad_check(&b, st, line, REMAT_ERR_NULL, "ys is NULL", NULL);

    /* the body is untouched and still usable after all that */
    b = bad_new();
    scan_ok(b.f, body, 5, 1, &b.c, 1, &b.xs, 1, &b.k, NULL, &cout, &ys);
    remat_fn_free(b.f);

    remat_fn_free(shrink);
    remat_fn_free(broken);
    remat_fn_free(body);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scan_forward_matches_unrolled),
        cmocka_unit_test(test_scan_cumsum_closed_form),
        cmocka_unit_test(test_scan_map_without_carries),
        cmocka_unit_test(test_scan_mixed_dtypes_and_passthrough),
        cmocka_unit_test(test_scan_grad_matches_unrolled_and_fd),
        cmocka_unit_test(test_scan_vjp_matches_unrolled),
        cmocka_unit_test(test_scan_schedules_policies_bitwise_identical),
        cmocka_unit_test(test_scan_program_reruns_reproduce),
        cmocka_unit_test(test_scan_measured_equals_predicted),
        cmocka_unit_test(test_scan_binomial_optimum_vectors),
        cmocka_unit_test(test_scan_seed_scan_sin),
        cmocka_unit_test(test_scan_seed_pfr_every_schedule),
        cmocka_unit_test(test_scan_nested_matches_unrolled),
        cmocka_unit_test(test_scan_inside_checkpoint_region),
        cmocka_unit_test(test_scan_residual_report_lists_snapshots),
        cmocka_unit_test(test_scan_bad_input_names_the_input),
    };
    rng_seed(0x9e3779b97f4a7c15ull);
    return cmocka_run_group_tests_name("scan", tests, NULL, NULL);
}

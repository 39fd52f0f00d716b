/*
 * test_ad_util.c — the helpers of test_ad_util.h.
 */
#include "test_ad_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- custom op: a fused x * sin(y) ---- */

void xsin_forward(int n_in, const remat_tensor *ins, remat_tensor *out, void *ctx)
{
    ((xsin_ctx *)ctx)->forward_calls++;
    assert_int_equal(n_in, 2);
    int64_t n = remat_shape_numel(&out->shape);
    for (int64_t i = 0; i < n; i++) {
        if (out->dtype == REMAT_F64)
            ((double *)out->data)[i] = ((const double *)ins[0].data)[i] * sin(((const double *)ins[1].data)[i]);
        else
            ((float *)out->data)[i] = ((const float *)ins[0].data)[i] * sinf(((const float *)ins[1].data)[i]);
    }
}

static void xsin_vjp(int which, int n_in, const remat_tensor *ins, const remat_tensor *out,
                     const remat_tensor *dout, remat_tensor *din, void *ctx)
{
    ((xsin_ctx *)ctx)->vjp_calls++;
    assert_int_equal(n_in, 2);
    assert_true(remat_shape_equal(&out->shape, &dout->shape));
    int64_t n = remat_shape_numel(&din->shape);
    for (int64_t i = 0; i < n; i++) {
        if (din->dtype == REMAT_F64) {
            const double *x = ins[0].data, *y = ins[1].data, *g = dout->data;
            ((double *)din->data)[i] = which == 0 ? g[i] * sin(y[i]) : g[i] * x[i] * cos(y[i]);
        } else {
            const float *x = ins[0].data, *y = ins[1].data, *g = dout->data;
            ((float *)din->data)[i] = which == 0 ? g[i] * sinf(y[i]) : g[i] * x[i] * cosf(y[i]);
        }
    }
}

xsin_ctx xsin_counts;
const remat_custom_op xsin_op = {"xsin", xsin_forward, xsin_vjp, &xsin_counts};

void sigset_add(sigset *set, const char *kind, const char *type, const char *detail)
{
    assert_true(set->n < 64);
    size_t len = strlen(kind) + strlen(type) + strlen(detail) + 3;
    set->s[set->n] = xcalloc(1, len);
    snprintf(set->s[set->n], len, "%s %s %s", kind, type, detail);
    set->n++;
}

void sigset_free(sigset *set)
{
    for (int i = 0; i < set->n; i++)
        free(set->s[i]);
    set->n = 0;
}

/* remat's residuals of the VJP w.r.t. all arguments (as JAX's report) */
void sigset_from_remat(sigset *set, const remat_fn *f, size_t *bytes)
{
    remat_residual_list *r = NULL;
    if (remat_saved_residuals(f, 0, NULL, &r) != REMAT_OK)
        fail_msg("saved_residuals of '%s': %s", remat_fn_name(f), remat_last_error());
    set->n = 0;
    for (int i = 0; i < remat_residual_list_count(r); i++) {
        const remat_residual *e = remat_residual_list_get(r, i);
        char type[128];
        remat_shape_format(e->dtype, &e->shape, type, sizeof type);
        const char *kind = e->kind == REMAT_RESIDUAL_ARGUMENT ? "argument"
                           : e->kind == REMAT_RESIDUAL_NAMED  ? "named"
                           : e->kind == REMAT_RESIDUAL_OUTPUT ? "output"
                                                              : "snapshot";
        const char *detail = e->kind == REMAT_RESIDUAL_OUTPUT ? remat_op_name(e->op) : e->name ? e->name : "?";
        sigset_add(set, kind, type, detail);
        /* provenance: what the user built is located in a test_ad_*.c file */
        if (e->kind != REMAT_RESIDUAL_ARGUMENT && !contains(e->loc.file, "test_ad_"))
            fail_msg("residual %s %s located at %s", kind, type, e->loc.file ? e->loc.file : "(null)");
        assert_int_equal(e->bytes, tbytes(e->dtype, &e->shape));
    }
    if (bytes)
        *bytes = remat_residual_list_bytes(r);
    remat_residual_list_free(r);
}

/* seed 003: block(x, w) = sin(sin(x @ w)); net = sum(block^3(x)) */
remat_fn *block_fn(remat_dtype dt)
{
    int64_t d[2] = {4, 4};
    remat_fn *f = remat_fn_new("block");
    remat_val x = remat_arg(f, "x", dt, 2, d), w = remat_arg(f, "w", dt, 2, d);
    remat_fn_output(f, remat_sin(f, remat_sin(f, remat_matmul(f, x, w))));
    assert_fn_ok(f);
    return f;
}

remat_fn *block_net(const remat_fn *blk, remat_dtype dt)
{
    int64_t d[2] = {4, 4};
    remat_fn *f = remat_fn_new("net");
    remat_val x = remat_arg(f, "x", dt, 2, d), w = remat_arg(f, "w", dt, 2, d);
    for (int i = 0; i < 3; i++)
        x = remat_call1(f, blk, 2, ((remat_val[]){x, w}));
    remat_fn_output(f, remat_sum_all(f, x));
    assert_fn_ok(f);
    return f;
}

/* ---- forward mode (test_ad_jvp*.c) ---- */

void fill_uniform(double *x, int64_t n, double lo, double hi, double avoid)
{
    for (int64_t i = 0; i < n; i++) {
        x[i] = urand(lo, hi);
        if (fabs(x[i]) < avoid)
            x[i] = x[i] < 0 ? x[i] - avoid : x[i] + avoid;
    }
}

remat_fn *jvp_ok(const remat_fn *f, int n, const int *argnums)
{
    remat_fn *j = NULL;
    remat_status st = remat_jvp(f, n, argnums, &j);
    if (st != REMAT_OK)
        fail_msg("remat_jvp(%s): %s", remat_fn_name(f), remat_last_error());
    return j;
}

double dot_n(const double *a, const double *b, int64_t n)
{
    double s = 0;
    for (int64_t i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}

int count_op(const remat_fn *f, remat_op op)
{
    int n = 0;
    for (int v = 0; v < remat_fn_num_nodes(f); v++)
        n += remat_val_op(f, v) == op;
    return n;
}

/* body(c, x_t, k) = (c + 0.1 (sin(x_t) - k c), c * c): a stepper with a
 * per-step input, a const and a y */
remat_fn *jvp_scan_net(int reverse)
{
    const int64_t d3[1] = {3};
    remat_fn *body = remat_fn_new("step");
    remat_val c = remat_arg(body, "c", REMAT_F64, 1, d3);
    remat_val x = remat_arg(body, "x_t", REMAT_F64, 1, d3);
    remat_val k = remat_arg(body, "k", REMAT_F64, 1, d3);
    remat_val rate = remat_sub(body, remat_sin(body, x), remat_mul(body, k, c));
    remat_fn_output(body, remat_add(body, c, remat_mul_scalar(body, rate, 0.1)));
    remat_fn_output(body, remat_mul(body, c, c));
    assert_fn_ok(body);
    remat_fn *f = remat_fn_new(reverse ? "scan_net_reverse" : "scan_net");
    remat_val c0 = remat_arg(f, "c0", REMAT_F64, 1, d3);
    remat_val xs = remat_arg(f, "xs", REMAT_F64, 2, ((int64_t[]){20, 3}));
    remat_val kk = remat_arg(f, "k", REMAT_F64, 1, d3);
    remat_val cout, ys;
    remat_scan_options opt = {.reverse = reverse != 0};
    assert_int_equal(remat_scan(f, body, 20, 1, &c0, 1, &xs, 1, &kk, &opt, &cout, &ys), REMAT_OK);
    remat_fn_output(f, cout);
    remat_fn_output(f, ys);
    assert_fn_ok(f);
    remat_fn_free(body);
    return f;
}

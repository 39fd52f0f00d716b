/*
 * test_scan_util.c — the helpers of test_scan_util.h.
 */
#include "test_scan_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

size_t align16(size_t b) { return (b + 15) / 16 * 16; }

/* ---- caller-owned tensors ---- */

remat_tensor t_new(remat_dtype dt, int rank, const int64_t *dims)
{
    remat_tensor t = {.dtype = dt, .shape = remat_shape_make(rank, dims)};
    t.data = xcalloc(1, tbytes(dt, &t.shape));
    return t;
}

int64_t t_numel(const remat_tensor *t) { return remat_shape_numel(&t->shape); }

double t_get(const remat_tensor *t, int64_t i)
{
    return t->dtype == REMAT_F64 ? ((const double *)t->data)[i] : (double)((const float *)t->data)[i];
}

void t_set(remat_tensor *t, int64_t i, double v)
{
    if (t->dtype == REMAT_F64)
        ((double *)t->data)[i] = v;
    else
        ((float *)t->data)[i] = (float)v;
}

remat_tensor t_rand(remat_dtype dt, int rank, const int64_t *dims, double lo, double hi)
{
    remat_tensor t = t_new(dt, rank, dims);
    for (int64_t i = 0; i < t_numel(&t); i++)
        t_set(&t, i, urand(lo, hi));
    return t;
}

void t_free_all(int n, remat_tensor *t)
{
    for (int i = 0; i < n; i++) {
        free(t[i].data);
        t[i].data = NULL;
    }
}

/* ---- compile and run ---- */

/* differentiate f (all arguments), run, free */
void run_ad(ad_kind k, const remat_fn *f, int n_in, const remat_tensor *in, outs_t *o, remat_stats *st,
                   remat_memory_plan *plan)
{
    remat_fn *g = ad_ok(k, f, 0, NULL);
    run_fn(g, n_in, in, o, st, plan);
    remat_fn_free(g);
}

/* got vs want elementwise: |g - w| <= rtol * max|want| of that output
 * (the arrays mix entries of very different size, so relative to the array) */
void check_outs_close(const char *what, int first, int count, const outs_t *got, const outs_t *want,
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

void check_outs_bitwise(const char *what, const outs_t *got, const outs_t *want)
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
remat_val stack(remat_fn *f, int64_t n, const remat_val *v)
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
const char *const schedules[] = {
    "store-all",  "per-step",   "periodic:1", "periodic:2", "periodic:3",  "periodic:7", "two-level",
    "two-level:5", "binomial:1", "binomial:2", "binomial:3", "binomial:5", "binomial:10", "binomial:90",
    "online:1",   "online:2",   "online:3",   "online:5",   "online:10",
};
const int n_schedules = (int)(sizeof schedules / sizeof schedules[0]);

/* Bytes of one step tape: the residuals of the body as the scan differentiates
 * it (a checkpoint region when a policy is given), each 16-byte aligned. */
/* One step's tape: the body's residuals, each 16-aligned, except the x_t
 * and const arguments, which the runtime reads from xs / the consts instead
 * of taping them (arguments past the first n_carry). */
size_t tape_bytes_of(const remat_fn *body, const remat_policy *pol, int n_carry)
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

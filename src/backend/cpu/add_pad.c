/*
 * add_pad.c — add(x, pad(g)) in one pass, without the padded array.
 *
 * Reverse mode turns a slice into a pad of its cotangent, which is then
 * added into the accumulated cotangent: a zero-filled full-size array, a copy
 * of g into it, and a full-size add. Here out = x + 0 outside g's region and
 * x + g inside (operands in the add's order), which are the bits of the
 * unfused pair: x + (+0.0) turns -0.0 into +0.0 and quiets a signalling
 * NaN, so the elements outside the region are computed, not copied.
 */
#include <string.h>

#include "backend/cpu/cpu_kernels.h"
#include "core/assert.h"

void rmi_cpu_add_pad_plan(remat_cpu_add_pad_layout *p, remat_dtype dt, const remat_shape *out_shape,
                          const remat_shape *g_shape, const remat_pad_params *pp, int pad_first)
{
    const int r = out_shape->rank;
    REMAT_ASSERT(g_shape->rank == r && (dt == REMAT_F32 || dt == REMAT_F64));
    memset(p, 0, sizeof *p);
    p->f64 = dt == REMAT_F64;
    p->pad_first = (uint8_t)(pad_first != 0);
    p->rank = (uint8_t)(r > 0 ? r - 1 : 0);
    for (int i = 0; i < r; i++) {
        REMAT_ASSERT(pp->low[i] >= 0 && pp->high[i] >= 0 && pp->interior[i] == 0);
        REMAT_ASSERT(out_shape->dims[i] == pp->low[i] + g_shape->dims[i] + pp->high[i]);
    }
    /* the output as (outer rows..., inner); g's region as [lo, lo + gn) per axis */
    p->inner = r > 0 ? out_shape->dims[r - 1] : 1;
    p->g_inner = r > 0 ? g_shape->dims[r - 1] : 1;
    p->lo_inner = r > 0 ? pp->low[r - 1] : 0;
    for (int i = 0; i + 1 < r; i++) {
        p->dims[i] = out_shape->dims[i];
        p->lo[i] = pp->low[i];
        p->gn[i] = g_shape->dims[i];
    }
    p->rows = 1;
    for (int i = 0; i < p->rank; i++)
        p->rows *= p->dims[i];
    if (p->inner == 0)
        p->rows = 0;
}

#define ADD_PAD_BODY(T)                                                                          \
    T *restrict o = out;                                                                         \
    const T *restrict xs = x, *restrict gs = g;                                                  \
    const int64_t n = P->inner, gn = P->g_inner, lo = P->lo_inner;                               \
    int64_t idx[REMAT_MAX_RANK] = {0}, grow = 0;                                                 \
    for (int64_t row = 0; row < P->rows; row++) {                                                \
        T *restrict orow = o + row * n;                                                          \
        const T *restrict xrow = xs + row * n;                                                   \
        int in = gn > 0;                                                                         \
        for (int i = 0; i < P->rank && in; i++)                                                  \
            in = idx[i] >= P->lo[i] && idx[i] < P->lo[i] + P->gn[i];                             \
        if (!in) {                                                                               \
            for (int64_t k = 0; k < n; k++)                                                      \
                orow[k] = xrow[k] + (T)0;                                                        \
        } else {                                                                                 \
            const T *restrict grow_p = gs + grow * gn - lo;                                      \
            for (int64_t k = 0; k < lo; k++)                                                     \
                orow[k] = xrow[k] + (T)0;                                                        \
            if (P->pad_first)                                                                    \
                for (int64_t k = lo; k < lo + gn; k++)                                           \
                    orow[k] = grow_p[k] + xrow[k];                                               \
            else                                                                                 \
                for (int64_t k = lo; k < lo + gn; k++)                                           \
                    orow[k] = xrow[k] + grow_p[k];                                               \
            for (int64_t k = lo + gn; k < n; k++)                                                \
                orow[k] = xrow[k] + (T)0;                                                        \
            grow++;                                                                              \
        }                                                                                        \
        for (int i = P->rank - 1; i >= 0; i--) { /* odometer over the outer axes */              \
            if (++idx[i] < P->dims[i])                                                           \
                break;                                                                           \
            idx[i] = 0;                                                                          \
        }                                                                                        \
    }

void rmi_cpu_add_pad_run(const remat_cpu_add_pad_layout *P, void *out, const void *x, const void *g)
{
    if (P->f64) {
        ADD_PAD_BODY(double)
    } else {
        ADD_PAD_BODY(float)
    }
}

void rmi_cpu_add_pad(remat_dtype dt, void *out, const void *x, const void *g, const remat_shape *out_shape,
                     const remat_shape *g_shape, const remat_pad_params *p, int pad_first)
{
    remat_cpu_add_pad_layout P;
    rmi_cpu_add_pad_plan(&P, dt, out_shape, g_shape, p, pad_first);
    rmi_cpu_add_pad_run(&P, out, x, g);
}

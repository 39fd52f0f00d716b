/*
 * layout.c — the copy plans of transpose, broadcast_in_dim, slice, pad and
 * concatenate (layout.h), from shapes alone. Each op only computes the
 * iteration dims and the two stride vectors (in elements), then plan_make()
 *   1. drops size-1 dims and merges neighbouring dims that are contiguous in
 *      both views, so e.g. slicing whole rows becomes one contiguous copy;
 *   2. chooses: contiguous, rows (an odometer over the outer dims, the
 *      innermost dim copied as a row), or, for a 2-D transpose-like inner
 *      pair (the source contiguous along the second-innermost dim, the
 *      destination along the innermost), square tiles.
 * The CPU runs the plans (backend/cpu/structural.c), CUDA turns them into
 * strides for its copy kernel (kernels/cuda/lower.c).
 */
#include <string.h>

#include "backend/layout.h"
#include "core/assert.h"
#include "core/exhaustive.h"

static void row_major_strides(int rank, const int64_t *dims, int64_t *strides)
{
    int64_t s = 1;
    for (int i = rank - 1; i >= 0; i--) {
        strides[i] = s;
        s *= dims[i];
    }
}

/* Drop size-1 dims, then merge dim i into i+1 where both views are contiguous
 * across the pair. Returns the new rank; dims/strides are rewritten in place. */
static int coalesce(int rank, int64_t *dims, int64_t *ds, int64_t *ss)
{
    int r = 0;
    for (int i = 0; i < rank; i++) {
        if (dims[i] == 1)
            continue;
        if (r > 0 && ds[r - 1] == ds[i] * dims[i] && ss[r - 1] == ss[i] * dims[i]) {
            dims[r - 1] *= dims[i]; /* outer (r-1) absorbs inner i */
            ds[r - 1] = ds[i];
            ss[r - 1] = ss[i];
            continue;
        }
        dims[r] = dims[i];
        ds[r] = ds[i];
        ss[r] = ss[i];
        r++;
    }
    return r;
}

/* dst[sum_i k_i*ds[i]] = src[sum_i k_i*ss[i]] for every index k < dims, dst
 * and src displaced by doff/soff elements, after zeroing zero_bytes of dst.
 * Strides are in elements; dims/ds/ss are scratch copies the plan may edit. */
static void plan_make(remat_copy_plan *p, size_t esize, int rank, int64_t *dims, int64_t *ds, int64_t doff,
                      int64_t *ss, int64_t soff, size_t zero_bytes)
{
    memset(p, 0, sizeof *p);
    p->esize = (uint8_t)esize;
    p->doff = doff;
    p->soff = soff;
    p->zero_bytes = zero_bytes;
    p->kind = REMAT_COPY_EMPTY;
    for (int i = 0; i < rank; i++)
        if (dims[i] == 0)
            return;
    const int r = coalesce(rank, dims, ds, ss);
    if (r == 0 || (r == 1 && ds[0] == 1 && ss[0] == 1)) {
        p->kind = REMAT_COPY_CONTIG;
        p->n = r == 0 ? 1 : dims[0];
        return;
    }
    const bool tiled = r >= 2 && ss[r - 2] == 1 && ds[r - 1] == 1 && ss[r - 1] != 1 &&
                       ss[r - 1] != 0 && dims[r - 1] >= 8 && dims[r - 2] >= 8;
    p->kind = tiled ? REMAT_COPY_TILED : REMAT_COPY_ROWS;
    p->rank = (uint8_t)r;
    p->nouter = tiled ? r - 2 : r - 1;
    p->outer = 1;
    for (int i = 0; i < p->nouter; i++)
        p->outer *= dims[i];
    for (int i = 0; i < r; i++) {
        p->dims[i] = dims[i];
        p->ds[i] = ds[i];
        p->ss[i] = ss[i];
    }
}

void rmi_layout_transpose(remat_copy_plan *p, remat_dtype dt, const remat_shape *in_shape,
                          const int *perm)
{
    const int r = in_shape->rank;
    int64_t in_st[REMAT_MAX_RANK], dims[REMAT_MAX_RANK], ds[REMAT_MAX_RANK], ss[REMAT_MAX_RANK];
    row_major_strides(r, in_shape->dims, in_st);
    for (int i = 0; i < r; i++) {
        REMAT_ASSERT(perm[i] >= 0 && perm[i] < r);
        dims[i] = in_shape->dims[perm[i]];
        ss[i] = in_st[perm[i]];
    }
    row_major_strides(r, dims, ds);
    plan_make(p, remat_dtype_size(dt), r, dims, ds, 0, ss, 0, 0);
}

void rmi_layout_broadcast_in_dim(remat_copy_plan *p, remat_dtype dt, const remat_shape *out_shape,
                                 const remat_shape *in_shape, const int *bdims)
{
    const int r = out_shape->rank;
    int64_t in_st[REMAT_MAX_RANK], dims[REMAT_MAX_RANK], ds[REMAT_MAX_RANK], ss[REMAT_MAX_RANK];
    row_major_strides(in_shape->rank, in_shape->dims, in_st);
    for (int i = 0; i < r; i++) {
        dims[i] = out_shape->dims[i];
        ss[i] = 0; /* out dims no input dim maps to repeat the input */
    }
    for (int i = 0; i < in_shape->rank; i++) {
        const int o = bdims[i];
        REMAT_ASSERT(o >= 0 && o < r);
        REMAT_ASSERT(in_shape->dims[i] == dims[o] || in_shape->dims[i] == 1);
        if (in_shape->dims[i] != 1)
            ss[o] = in_st[i];
    }
    row_major_strides(r, dims, ds);
    plan_make(p, remat_dtype_size(dt), r, dims, ds, 0, ss, 0, 0);
}

void rmi_layout_slice(remat_copy_plan *p, remat_dtype dt, const remat_shape *in_shape,
                      const remat_slice_params *sp)
{
    const int r = in_shape->rank;
    int64_t in_st[REMAT_MAX_RANK], dims[REMAT_MAX_RANK], ds[REMAT_MAX_RANK], ss[REMAT_MAX_RANK];
    int64_t off = 0;
    row_major_strides(r, in_shape->dims, in_st);
    for (int i = 0; i < r; i++) {
        const int64_t st = sp->start[i], lim = sp->limit[i], step = sp->stride[i];
        REMAT_ASSERT(step >= 1 && st >= 0 && st <= lim && lim <= in_shape->dims[i]);
        dims[i] = (lim - st + step - 1) / step;
        ss[i] = step * in_st[i];
        off += st * in_st[i];
    }
    row_major_strides(r, dims, ds);
    plan_make(p, remat_dtype_size(dt), r, dims, ds, 0, ss, off, 0);
}

void rmi_layout_pad(remat_copy_plan *p, remat_dtype dt, const remat_shape *out_shape,
                    const remat_shape *in_shape, const remat_pad_params *pp)
{
    const int r = in_shape->rank;
    const size_t es = remat_dtype_size(dt);
    int64_t out_st[REMAT_MAX_RANK], dims[REMAT_MAX_RANK], ds[REMAT_MAX_RANK], ss[REMAT_MAX_RANK];
    int64_t off = 0;
    bool no_padding = true;
    REMAT_ASSERT(out_shape->rank == r);
    row_major_strides(r, out_shape->dims, out_st);
    row_major_strides(r, in_shape->dims, ss);
    for (int i = 0; i < r; i++) {
        const int64_t n = in_shape->dims[i];
        REMAT_ASSERT(pp->low[i] >= 0 && pp->high[i] >= 0 && pp->interior[i] >= 0);
        REMAT_ASSERT(out_shape->dims[i] ==
                     pp->low[i] + pp->high[i] + n + (n > 0 ? (n - 1) * pp->interior[i] : 0));
        no_padding = no_padding && pp->low[i] == 0 && pp->high[i] == 0 && pp->interior[i] == 0;
        dims[i] = n;
        ds[i] = (pp->interior[i] + 1) * out_st[i];
        off += pp->low[i] * out_st[i];
    }
    const int64_t n_out = remat_shape_numel(out_shape);
    if (no_padding) { /* one contiguous copy (or nothing) */
        int64_t one = 1, n = n_out;
        plan_make(p, es, 1, &n, &one, 0, (int64_t[]){1}, 0, 0);
        return;
    }
    plan_make(p, es, r, dims, ds, off, ss, 0, (size_t)n_out * es);
}

void rmi_layout_concatenate(remat_concat_plan *p, int64_t *chunks, remat_dtype dt, int n_in,
                            const remat_shape *in_shapes, int axis)
{
    REMAT_ASSERT(n_in >= 1);
    const remat_shape *s0 = &in_shapes[0];
    REMAT_ASSERT(axis >= 0 && axis < s0->rank);
    int64_t outer = 1, inner = 1, row = 0;
    for (int i = 0; i < axis; i++)
        outer *= s0->dims[i];
    for (int i = axis + 1; i < s0->rank; i++)
        inner *= s0->dims[i];
    for (int j = 0; j < n_in; j++) {
        REMAT_ASSERT(in_shapes[j].rank == s0->rank);
        chunks[j] = in_shapes[j].dims[axis] * inner;
        row += chunks[j];
    }
    *p = (remat_concat_plan){.n_in = n_in, .esize = remat_dtype_size(dt), .outer = outer, .row = row,
                             .chunks = chunks};
}

remat_copy_plan rmi_layout_contig(remat_dtype dt, size_t n)
{
    return (remat_copy_plan){.kind = n ? REMAT_COPY_CONTIG : REMAT_COPY_EMPTY,
                            .esize = (uint8_t)remat_dtype_size(dt), .n = (int64_t)n};
}

REMAT_EXHAUSTIVE_BEGIN
bool rmi_layout_copy_plan_of(remat_copy_plan *p, const remat_exec_op *op, size_t n)
{
    switch (remat_op_param_of(op->op)) {
    case REMAT_OPP_NONE: *p = rmi_layout_contig(op->dtype, n); return true; /* reshape */
    case REMAT_OPP_PERM: rmi_layout_transpose(p, op->dtype, &op->in_shapes[0], op->p.perm); return true;
    case REMAT_OPP_BDIMS:
        rmi_layout_broadcast_in_dim(p, op->dtype, &op->shape, &op->in_shapes[0], op->p.bdims);
        return true;
    case REMAT_OPP_SLICE: rmi_layout_slice(p, op->dtype, &op->in_shapes[0], op->p.slice); return true;
    case REMAT_OPP_PAD: rmi_layout_pad(p, op->dtype, &op->shape, &op->in_shapes[0], op->p.pad); return true;
    case REMAT_OPP_AXIS:
    case REMAT_OPP_FILL:
    case REMAT_OPP_ARG_POS:
    case REMAT_OPP_OUTPUT:
    case REMAT_OPP_INT_EXPONENT:
    case REMAT_OPP_EXPONENT:
    case REMAT_OPP_AXES:
    case REMAT_OPP_DOT:
    case REMAT_OPP_SOLVE:
    case REMAT_OPP_CALL:
    case REMAT_OPP_CUSTOM:
    case REMAT_OPP_HOP:
    case REMAT_OPP_COUNT:
        return false;
    }
    return false;
}
REMAT_EXHAUSTIVE_END

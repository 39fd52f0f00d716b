/* ops_shape.c — constructors of reductions and data-movement ops, with their shape rules. */
#include <string.h>

#include "ad/graph_impl.h"
#include "ad/ops_internal.h"
#include "core/assert.h"

static int *dup_ints(remat_fn *f, const int *v, int n)
{
    int *d = rmi_fn_alloc(f, sizeof(int) * REMAT_MAX_RANK);
    for (int i = 0; d && i < n; i++)
        d[i] = v[i];
    return d;
}

static int is_splat(const remat_node *n) { return n->op == REMAT_OP_CONSTANT && !n->data; }

/* reduce_sum and reduce_max: the same axes and shape rule (no axes: a itself) */
static remat_val reduce_at(remat_fn *f, remat_op op, remat_val a, int naxes, const int *axes, remat_loc loc)
{
    const char *name = remat_op_name(op);
    if (!f)
        return rmi_fn_null(loc, __func__);
    if (!rmi_fn_vals_ok(f, 1, &a))
        return REMAT_NONE;
    const remat_node *na = rmi_fn_node(f, a);
    char sa[96];
    uint32_t mask = 0;
    if (naxes < 0) {
        mask = na->shape.rank ? (uint32_t)((1u << na->shape.rank) - 1) : 0;
    } else {
        if (naxes > 0 && !axes)
            return rmi_fn_fail(f, REMAT_ERR_NULL, loc, "%s: axes is NULL", name);
        for (int i = 0; i < naxes; i++) {
            int ax = axes[i] < 0 ? axes[i] + na->shape.rank : axes[i];
            if (ax < 0 || ax >= na->shape.rank)
                return rmi_fn_fail(f, REMAT_ERR_AXIS, loc, "%s: axis %d out of range for %s", name, axes[i],
                                   rmi_fn_fmt_val(f, a, sa, sizeof sa));
            if (mask & (1u << ax))
                return rmi_fn_fail(f, REMAT_ERR_AXIS, loc, "%s: axis %d repeated for %s", name, axes[i],
                                   rmi_fn_fmt_val(f, a, sa, sizeof sa));
            mask |= 1u << ax;
        }
    }
    remat_shape s = {0};
    for (int i = 0; i < na->shape.rank; i++)
        if (!(mask & (1u << i)))
            s.dims[s.rank++] = na->shape.dims[i];
    if (mask == 0)
        return a;
    remat_node n = rmi_proto(op, (remat_dtype)na->dtype, &s, loc);
    n.p.axes_mask = mask;
    return rmi_fn_add_node(f, &n, 1, &a);
}

remat_val remat_sum_at(remat_fn *f, remat_val a, int naxes, const int *axes, remat_loc loc)
{
    return reduce_at(f, REMAT_OP_SUM, a, naxes, axes, loc);
}

remat_val remat_reduce_max_at(remat_fn *f, remat_val a, int naxes, const int *axes, remat_loc loc)
{
    return reduce_at(f, REMAT_OP_REDUCE_MAX, a, naxes, axes, loc);
}

remat_val remat_broadcast_in_dim_at(remat_fn *f, remat_val a, int rank, const int64_t *dims, const int *bdims,
                                    remat_loc loc)
{
    if (!f)
        return rmi_fn_null(loc, __func__);
    if (!rmi_fn_vals_ok(f, 1, &a))
        return REMAT_NONE;
    const remat_node *na = rmi_fn_node(f, a);
    if (!rmi_check_dims(f, "broadcast_in_dim", (remat_dtype)na->dtype, rank, dims, loc))
        return REMAT_NONE;
    char sa[96];
    if (na->shape.rank > 0 && !bdims)
        return rmi_fn_fail(f, REMAT_ERR_NULL, loc, "broadcast_in_dim: broadcast_dimensions is NULL");
    if (na->shape.rank > rank)
        return rmi_fn_fail(f, REMAT_ERR_SHAPE, loc, "broadcast_in_dim: operand %s has higher rank than %d",
                           rmi_fn_fmt_val(f, a, sa, sizeof sa), rank);
    for (int i = 0; i < na->shape.rank; i++) {
        if (bdims[i] < 0 || bdims[i] >= rank || (i > 0 && bdims[i] <= bdims[i - 1]))
            return rmi_fn_fail(f, REMAT_ERR_AXIS, loc,
                               "broadcast_in_dim: operand %s: broadcast_dimensions[%d] = %d must be increasing "
                               "and in [0, %d)",
                               rmi_fn_fmt_val(f, a, sa, sizeof sa), i, bdims[i], rank);
        if (na->shape.dims[i] != 1 && na->shape.dims[i] != dims[bdims[i]])
            return rmi_fn_fail(f, REMAT_ERR_SHAPE, loc,
                               "broadcast_in_dim: operand %s dim %d (%lld) is neither 1 nor %lld",
                               rmi_fn_fmt_val(f, a, sa, sizeof sa), i, (long long)na->shape.dims[i],
                               (long long)dims[bdims[i]]);
    }
    remat_shape s = remat_shape_make(rank, dims);
    if (remat_shape_equal(&s, &na->shape))
        return a;
    remat_node n = rmi_proto(REMAT_OP_BROADCAST, (remat_dtype)na->dtype, &s, loc);
    if (is_splat(na)) { /* fold: a splat stays a splat */
        n.op = REMAT_OP_CONSTANT;
        n.p.fill = na->p.fill;
        return rmi_fn_add_node(f, &n, 0, NULL);
    }
    if (!(n.p.bdims = dup_ints(f, bdims, na->shape.rank)))
        return REMAT_NONE;
    return rmi_fn_add_node(f, &n, 1, &a);
}

remat_val remat_broadcast_to_at(remat_fn *f, remat_val a, int rank, const int64_t *dims, remat_loc loc)
{
    if (!f)
        return rmi_fn_null(loc, __func__);
    if (!rmi_fn_vals_ok(f, 1, &a))
        return REMAT_NONE;
    const remat_node *na = rmi_fn_node(f, a);
    char sa[96];
    if (na->shape.rank > rank)
        return rmi_fn_fail(f, REMAT_ERR_SHAPE, loc, "broadcast_to: %s has higher rank than %d",
                           rmi_fn_fmt_val(f, a, sa, sizeof sa), rank);
    int bd[REMAT_MAX_RANK];
    for (int i = 0; i < na->shape.rank; i++)
        bd[i] = rank - na->shape.rank + i;
    return remat_broadcast_in_dim_at(f, a, rank, dims, bd, loc);
}

remat_val remat_reshape_at(remat_fn *f, remat_val a, int rank, const int64_t *dims, remat_loc loc)
{
    if (!f)
        return rmi_fn_null(loc, __func__);
    if (!rmi_fn_vals_ok(f, 1, &a))
        return REMAT_NONE;
    const remat_node *na = rmi_fn_node(f, a);
    if (!rmi_check_dims(f, "reshape", (remat_dtype)na->dtype, rank, dims, loc))
        return REMAT_NONE;
    remat_shape s = remat_shape_make(rank, dims);
    char sa[96], sb[96];
    if (remat_shape_numel(&s) != remat_shape_numel(&na->shape))
        return rmi_fn_fail(f, REMAT_ERR_SHAPE, loc, "reshape: cannot reshape %s to %s",
                           rmi_fn_fmt_val(f, a, sa, sizeof sa),
                           remat_shape_format((remat_dtype)na->dtype, &s, sb, sizeof sb));
    if (remat_shape_equal(&s, &na->shape))
        return a;
    remat_node n = rmi_proto(REMAT_OP_RESHAPE, (remat_dtype)na->dtype, &s, loc);
    if (is_splat(na)) {
        n.op = REMAT_OP_CONSTANT;
        n.p.fill = na->p.fill;
        return rmi_fn_add_node(f, &n, 0, NULL);
    }
    return rmi_fn_add_node(f, &n, 1, &a);
}

remat_val remat_transpose_at(remat_fn *f, remat_val a, const int *perm, remat_loc loc)
{
    if (!f)
        return rmi_fn_null(loc, __func__);
    if (!rmi_fn_vals_ok(f, 1, &a))
        return REMAT_NONE;
    const remat_node *na = rmi_fn_node(f, a);
    int r = na->shape.rank, seen = 0, ident = 1;
    if (r > 0 && !perm)
        return rmi_fn_fail(f, REMAT_ERR_NULL, loc, "transpose: permutation is NULL");
    remat_shape s = {.rank = r};
    char sa[96];
    for (int i = 0; i < r; i++) {
        if (perm[i] < 0 || perm[i] >= r || (seen & (1 << perm[i])))
            return rmi_fn_fail(f, REMAT_ERR_AXIS, loc,
                               "transpose: permutation entry %d = %d is not a permutation of 0..%d for %s", i,
                               perm[i], r - 1, rmi_fn_fmt_val(f, a, sa, sizeof sa));
        seen |= 1 << perm[i];
        s.dims[i] = na->shape.dims[perm[i]];
        ident &= perm[i] == i;
    }
    if (ident)
        return a;
    remat_node n = rmi_proto(REMAT_OP_TRANSPOSE, (remat_dtype)na->dtype, &s, loc);
    if (!(n.p.perm = dup_ints(f, perm, r)))
        return REMAT_NONE;
    return rmi_fn_add_node(f, &n, 1, &a);
}

remat_val remat_slice_at(remat_fn *f, remat_val a, const int64_t *start, const int64_t *limit,
                         const int64_t *stride, remat_loc loc)
{
    if (!f)
        return rmi_fn_null(loc, __func__);
    if (!rmi_fn_vals_ok(f, 1, &a))
        return REMAT_NONE;
    const remat_node *na = rmi_fn_node(f, a);
    int r = na->shape.rank;
    char sa[96];
    if (r > 0 && (!start || !limit))
        return rmi_fn_fail(f, REMAT_ERR_NULL, loc, "slice: start/limit is NULL");
    remat_slice_params *p = rmi_fn_alloc(f, sizeof *p);
    if (!p)
        return REMAT_NONE;
    remat_shape s = {.rank = r};
    for (int i = 0; i < r; i++) {
        int64_t st = stride ? stride[i] : 1;
        if (st < 1 || start[i] < 0 || limit[i] < start[i] || limit[i] > na->shape.dims[i])
            return rmi_fn_fail(f, REMAT_ERR_AXIS, loc,
                               "slice: axis %d: start %lld, limit %lld, stride %lld invalid for %s", i,
                               (long long)start[i], (long long)limit[i], (long long)st,
                               rmi_fn_fmt_val(f, a, sa, sizeof sa));
        p->start[i] = start[i];
        p->limit[i] = limit[i];
        p->stride[i] = st;
        s.dims[i] = (limit[i] - start[i] + st - 1) / st;
    }
    if (remat_shape_equal(&s, &na->shape))
        return a;
    remat_node n = rmi_proto(REMAT_OP_SLICE, (remat_dtype)na->dtype, &s, loc);
    n.p.slice = p;
    return rmi_fn_add_node(f, &n, 1, &a);
}

remat_val remat_index_at(remat_fn *f, remat_val a, int64_t i, remat_loc loc)
{
    if (!f)
        return rmi_fn_null(loc, __func__);
    if (!rmi_fn_vals_ok(f, 1, &a))
        return REMAT_NONE;
    const remat_node *na = rmi_fn_node(f, a);
    char sa[96];
    if (na->shape.rank < 1 || i < 0 || i >= na->shape.dims[0])
        return rmi_fn_fail(f, REMAT_ERR_AXIS, loc, "index: %lld out of range for %s", (long long)i,
                           rmi_fn_fmt_val(f, a, sa, sizeof sa));
    int64_t start[REMAT_MAX_RANK] = {0}, limit[REMAT_MAX_RANK];
    for (int d = 0; d < na->shape.rank; d++)
        limit[d] = na->shape.dims[d];
    start[0] = i;
    limit[0] = i + 1;
    remat_shape s = na->shape;
    remat_val sl = remat_slice_at(f, a, start, limit, NULL, loc);
    return remat_reshape_at(f, sl, s.rank - 1, s.dims + 1, loc);
}

remat_val remat_pad_at(remat_fn *f, remat_val a, const int64_t *low, const int64_t *high, const int64_t *interior,
                       remat_loc loc)
{
    if (!f)
        return rmi_fn_null(loc, __func__);
    if (!rmi_fn_vals_ok(f, 1, &a))
        return REMAT_NONE;
    const remat_node *na = rmi_fn_node(f, a);
    int r = na->shape.rank;
    if (r > 0 && (!low || !high))
        return rmi_fn_fail(f, REMAT_ERR_NULL, loc, "pad: low/high is NULL");
    remat_pad_params *p = rmi_fn_alloc(f, sizeof *p);
    if (!p)
        return REMAT_NONE;
    remat_shape s = {.rank = r};
    int trivial = 1;
    for (int i = 0; i < r; i++) {
        int64_t in = interior ? interior[i] : 0, d = na->shape.dims[i];
        if (low[i] < 0 || high[i] < 0 || in < 0)
            return rmi_fn_fail(f, REMAT_ERR_ARG, loc, "pad: axis %d: negative padding (%lld, %lld, %lld)", i,
                               (long long)low[i], (long long)high[i], (long long)in);
        p->low[i] = low[i];
        p->high[i] = high[i];
        p->interior[i] = in;
        int64_t grown = 0;
        if (__builtin_mul_overflow(d > 0 ? d - 1 : 0, in, &grown) || __builtin_add_overflow(grown, d, &grown) ||
            __builtin_add_overflow(grown, low[i], &grown) || __builtin_add_overflow(grown, high[i], &grown))
            return rmi_fn_fail(f, REMAT_ERR_SHAPE, loc,
                               "pad: axis %d: padding (%lld, %lld, %lld) of dim %lld overflows int64", i,
                               (long long)low[i], (long long)high[i], (long long)in, (long long)d);
        s.dims[i] = grown;
        trivial &= low[i] == 0 && high[i] == 0 && (in == 0 || d <= 1);
    }
    if (!rmi_check_dims(f, "pad", (remat_dtype)na->dtype, r, s.dims, loc))
        return REMAT_NONE;
    if (trivial)
        return a;
    remat_node n = rmi_proto(REMAT_OP_PAD, (remat_dtype)na->dtype, &s, loc);
    n.p.pad = p;
    return rmi_fn_add_node(f, &n, 1, &a);
}

remat_val remat_concatenate_at(remat_fn *f, int n, const remat_val *vals, int axis, remat_loc loc)
{
    if (!f)
        return rmi_fn_null(loc, __func__);
    if (n < 1)
        return rmi_fn_fail(f, REMAT_ERR_ARG, loc, "concatenate: needs at least one operand");
    if (!vals)
        return rmi_fn_fail(f, REMAT_ERR_NULL, loc, "concatenate: vals is NULL");
    if (!rmi_fn_vals_ok(f, n, vals))
        return REMAT_NONE;
    const remat_node *n0 = rmi_fn_node(f, vals[0]);
    int r = n0->shape.rank;
    char sa[96], sb[96];
    if (axis < 0)
        axis += r;
    if (axis < 0 || axis >= r)
        return rmi_fn_fail(f, REMAT_ERR_AXIS, loc, "concatenate: axis %d out of range for %s", axis,
                           rmi_fn_fmt_val(f, vals[0], sa, sizeof sa));
    remat_shape s = n0->shape;
    s.dims[axis] = 0;
    for (int k = 0; k < n; k++) {
        const remat_node *nk = rmi_fn_node(f, vals[k]);
        int ok = nk->dtype == n0->dtype && nk->shape.rank == r;
        for (int i = 0; ok && i < r; i++)
            ok = i == axis || nk->shape.dims[i] == n0->shape.dims[i];
        if (!ok)
            return rmi_fn_fail(f, nk->dtype != n0->dtype ? REMAT_ERR_DTYPE : REMAT_ERR_SHAPE, loc,
                               "concatenate: operand %d %s does not match operand 0 %s along axes other than %d",
                               k, rmi_fn_fmt_val(f, vals[k], sa, sizeof sa),
                               rmi_fn_fmt_val(f, vals[0], sb, sizeof sb), axis);
        if (__builtin_add_overflow(s.dims[axis], nk->shape.dims[axis], &s.dims[axis]))
            return rmi_fn_fail(f, REMAT_ERR_SHAPE, loc, "concatenate: axis %d length overflows int64 at operand %d",
                               axis, k);
    }
    if (!rmi_check_dims(f, "concatenate", (remat_dtype)n0->dtype, r, s.dims, loc))
        return REMAT_NONE;
    if (n == 1)
        return vals[0];
    remat_node nd = rmi_proto(REMAT_OP_CONCATENATE, (remat_dtype)n0->dtype, &s, loc);
    nd.p.axis = axis;
    return rmi_fn_add_node(f, &nd, n, vals);
}

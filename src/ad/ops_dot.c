/* ops_dot.c — dot_general (JAX dimension numbers) and matmul. */
#include <string.h>

#include "ad/graph_impl.h"
#include "ad/ops_internal.h"
#include "remat/ad.h"

/* Marks dims used by one operand; 0 (with a message) if a dim is bad or repeated. */
static int mark(remat_fn *f, remat_loc loc, const char *side, const char *shape, int rank, int n, const int *dims,
                uint32_t *used)
{
    for (int i = 0; i < n; i++) {
        if (dims[i] < 0 || dims[i] >= rank) {
            rmi_fn_fail(f, REMAT_ERR_AXIS, loc, "dot_general: %s dimension %d out of range for %s", side, dims[i],
                        shape);
            return 0;
        }
        if (*used & (1u << dims[i])) {
            rmi_fn_fail(f, REMAT_ERR_AXIS, loc, "dot_general: %s dimension %d used twice in %s", side, dims[i],
                        shape);
            return 0;
        }
        *used |= 1u << dims[i];
    }
    return 1;
}

remat_val remat_dot_general_at(remat_fn *f, remat_val lhs, remat_val rhs, const remat_dot_dims *d, remat_loc loc)
{
    remat_val v[2] = {lhs, rhs};
    if (!f)
        return rmi_fn_null(loc, __func__);
    if (!rmi_fn_vals_ok(f, 2, v))
        return REMAT_NONE;
    if (!d)
        return rmi_fn_fail(f, REMAT_ERR_NULL, loc, "dot_general: dimension numbers are NULL");
    const remat_node *nl = rmi_fn_node(f, lhs), *nr = rmi_fn_node(f, rhs);
    char sl[96], sr[96];
    rmi_fn_fmt_val(f, lhs, sl, sizeof sl);
    rmi_fn_fmt_val(f, rhs, sr, sizeof sr);
    if (nl->dtype != nr->dtype)
        return rmi_fn_fail(f, REMAT_ERR_DTYPE, loc, "dot_general: dtypes differ: %s and %s", sl, sr);
    if (d->n_contract < 0 || d->n_batch < 0 || d->n_contract + d->n_batch > REMAT_MAX_RANK)
        return rmi_fn_fail(f, REMAT_ERR_ARG, loc, "dot_general: bad dimension-number counts (%d, %d)",
                           d->n_contract, d->n_batch);
    uint32_t ul = 0, ur = 0;
    if (!mark(f, loc, "lhs contracting", sl, nl->shape.rank, d->n_contract, d->lhs_contract, &ul) ||
        !mark(f, loc, "rhs contracting", sr, nr->shape.rank, d->n_contract, d->rhs_contract, &ur) ||
        !mark(f, loc, "lhs batch", sl, nl->shape.rank, d->n_batch, d->lhs_batch, &ul) ||
        !mark(f, loc, "rhs batch", sr, nr->shape.rank, d->n_batch, d->rhs_batch, &ur))
        return REMAT_NONE;
    for (int i = 0; i < d->n_contract; i++)
        if (nl->shape.dims[d->lhs_contract[i]] != nr->shape.dims[d->rhs_contract[i]])
            return rmi_fn_fail(f, REMAT_ERR_SHAPE, loc,
                               "dot_general: contracting dims differ: %s dim %d vs %s dim %d", sl,
                               d->lhs_contract[i], sr, d->rhs_contract[i]);
    for (int i = 0; i < d->n_batch; i++)
        if (nl->shape.dims[d->lhs_batch[i]] != nr->shape.dims[d->rhs_batch[i]])
            return rmi_fn_fail(f, REMAT_ERR_SHAPE, loc, "dot_general: batch dims differ: %s dim %d vs %s dim %d",
                               sl, d->lhs_batch[i], sr, d->rhs_batch[i]);
    remat_shape s = {0};
    for (int i = 0; i < d->n_batch; i++)
        s.dims[s.rank++] = nl->shape.dims[d->lhs_batch[i]];
    for (int i = 0; i < nl->shape.rank; i++)
        if (!(ul & (1u << i)))
            s.dims[s.rank++] = nl->shape.dims[i];
    for (int i = 0; i < nr->shape.rank; i++)
        if (!(ur & (1u << i))) {
            if (s.rank >= REMAT_MAX_RANK)
                return rmi_fn_fail(f, REMAT_ERR_SHAPE, loc, "dot_general: output of %s and %s exceeds rank %d", sl,
                                   sr, REMAT_MAX_RANK);
            s.dims[s.rank++] = nr->shape.dims[i];
        }
    remat_node n = rmi_proto(REMAT_OP_DOT_GENERAL, (remat_dtype)nl->dtype, &s, loc);
    remat_dot_dims *dd = rmi_fn_alloc(f, sizeof *dd);
    if (!dd)
        return REMAT_NONE;
    *dd = *d;
    n.p.dot = dd;
    return rmi_fn_add_node(f, &n, 2, v);
}

remat_val remat_matmul_at(remat_fn *f, remat_val a, remat_val b, remat_loc loc)
{
    remat_val v[2] = {a, b};
    if (!f)
        return rmi_fn_null(loc, __func__);
    if (!rmi_fn_vals_ok(f, 2, v))
        return REMAT_NONE;
    const remat_node *na = rmi_fn_node(f, a), *nb = rmi_fn_node(f, b);
    char sa[96], sb[96];
    if (na->shape.rank < 1 || nb->shape.rank < 1 || nb->shape.rank > 2)
        return rmi_fn_fail(f, REMAT_ERR_SHAPE, loc, "matmul: needs a rank >= 1 and b rank 1 or 2, got %s @ %s",
                           rmi_fn_fmt_val(f, a, sa, sizeof sa), rmi_fn_fmt_val(f, b, sb, sizeof sb));
    remat_dot_dims d = {.n_contract = 1};
    d.lhs_contract[0] = na->shape.rank - 1;
    d.rhs_contract[0] = 0;
    return remat_dot_general_at(f, a, b, &d, loc);
}

/* ops_linalg.c — linear_solve: x = A^{-1} b over the last two axes of A. */
#include "ad/graph_impl.h"
#include "ad/ops_internal.h"
#include "remat/ad.h"

/* A (..., n, n) and b (..., n) or (..., n, k): the same batch dims (no
 * broadcasting), one float dtype. The output has b's shape. */
remat_val remat_linear_solve_t_at(remat_fn *f, remat_val A, remat_val b, int transpose, remat_loc loc)
{
    remat_val v[2] = {A, b};
    if (!f)
        return remat_fn_null(loc, "remat_linear_solve");
    if (!remat_fn_vals_ok(f, 2, v))
        return REMAT_NONE;
    const remat_node *na = remat_fn_node(f, A), *nb = remat_fn_node(f, b);
    char sa[96], sb[96];
    remat_fn_fmt_val(f, A, sa, sizeof sa);
    remat_fn_fmt_val(f, b, sb, sizeof sb);
    if (na->dtype != nb->dtype)
        return remat_fn_fail(f, REMAT_ERR_DTYPE, loc, "linear_solve: dtypes of A and b differ: A %s, b %s", sa, sb);
    const remat_shape *as = &na->shape, *bs = &nb->shape;
    const int r = as->rank;
    if (r < 2 || as->dims[r - 1] != as->dims[r - 2] || as->dims[r - 1] < 1)
        return remat_fn_fail(f, REMAT_ERR_SHAPE, loc,
                             "linear_solve: A must be (..., n, n) with n >= 1 (square in its last two axes), got A %s",
                             sa);
    const int64_t n = as->dims[r - 1];
    int ok = (bs->rank == r - 1 || bs->rank == r) && bs->dims[r - 2] == n;
    for (int k = 0; ok && k < r - 2; k++)
        ok = bs->dims[k] == as->dims[k];
    if (!ok)
        return remat_fn_fail(f, REMAT_ERR_SHAPE, loc,
                             "linear_solve: b must be (..., n) or (..., n, k) with A's batch dims and n = %lld "
                             "(no broadcasting), got A %s, b %s",
                             (long long)n, sa, sb);
    remat_node nd = remat_proto(REMAT_OP_LINEAR_SOLVE, (remat_dtype)nb->dtype, bs, loc);
    nd.p.solve_transpose = transpose != 0;
    return remat_fn_add_node(f, &nd, 2, v);
}

remat_val remat_linear_solve_at(remat_fn *f, remat_val A, remat_val b, remat_loc loc)
{
    return remat_linear_solve_t_at(f, A, b, 0, loc);
}

/* The batched products the solve's rules need, over A's batch dims (the
 * leading rank(A) - 2 axes of every operand). */

/* -(u v^T): u, v (..., n) or (..., n, k) -> (..., n, n), summing over k:
 * the A cotangent -b_bar x^T (u = b_bar, v = x; swapped for a transposed
 * solve, whose A cotangent is -x b_bar^T). */
remat_val remat_linear_solve_neg_outer(remat_fn *f, remat_val u, remat_val v, int a_rank, remat_loc loc)
{
    if (!remat_fn_vals_ok(f, 2, (remat_val[]){u, v}))
        return REMAT_NONE;
    const int nb = a_rank - 2, cols = remat_fn_node(f, u)->shape.rank == a_rank;
    remat_dot_dims d = {.n_contract = cols, .n_batch = nb};
    d.lhs_contract[0] = d.rhs_contract[0] = nb + 1;
    for (int k = 0; k < nb; k++)
        d.lhs_batch[k] = d.rhs_batch[k] = k;
    return remat_unary_at(f, REMAT_OP_NEG, remat_dot_general_at(f, u, v, &d, loc), loc);
}

/* M x or M^T x (transpose): M (..., n, n), x (..., n) or (..., n, k). */
remat_val remat_linear_solve_matvec(remat_fn *f, remat_val M, remat_val x, int transpose, remat_loc loc)
{
    if (!remat_fn_vals_ok(f, 2, (remat_val[]){M, x}))
        return REMAT_NONE;
    const int nb = remat_fn_node(f, M)->shape.rank - 2;
    remat_dot_dims d = {.n_contract = 1, .n_batch = nb};
    d.lhs_contract[0] = transpose ? nb : nb + 1;
    d.rhs_contract[0] = nb;
    for (int k = 0; k < nb; k++)
        d.lhs_batch[k] = d.rhs_batch[k] = k;
    return remat_dot_general_at(f, M, x, &d, loc);
}

/* ops_linalg.c — linear_solve: x = A^{-1} b over the last two axes of A, as
 * lu(A) and a solve with it (op.h). */
#include "ad/graph_impl.h"
#include "ad/ops_internal.h"
#include "remat/ad.h"

/* lu(A): A (..., n, n) -> the packed factorisation (op.h, REMAT_LU_SMALL_N) */
static remat_val lu_at(remat_fn *f, remat_val A, remat_loc loc)
{
    const remat_node *na = rmi_fn_node(f, A);
    remat_shape s = na->shape;
    const int64_t n = s.dims[s.rank - 1];
    s.dims[s.rank - 1] = n <= REMAT_LU_SMALL_N ? 2 * n : n + 1;
    remat_node nd = rmi_proto(REMAT_OP_LU, (remat_dtype)na->dtype, &s, loc);
    return rmi_fn_add_node(f, &nd, 1, &A);
}

remat_val rmi_linear_solve_t_at(remat_fn *f, remat_val A, remat_val lu, remat_val b, int transpose, remat_loc loc)
{
    remat_val v[3] = {A, lu, b};
    if (!rmi_fn_vals_ok(f, 3, v))
        return REMAT_NONE;
    const remat_node *nb = rmi_fn_node(f, b);
    remat_node nd = rmi_proto(REMAT_OP_LINEAR_SOLVE, (remat_dtype)nb->dtype, &nb->shape, loc);
    nd.p.solve_transpose = transpose != 0;
    return rmi_fn_add_node(f, &nd, 3, v);
}

/* The lu node of A already in f (several solves with one matrix, as the
 * stages of a Rosenbrock step, share one factorisation), else a new one. */
static remat_val lu_of(remat_fn *f, remat_val A, remat_loc loc)
{
    for (int32_t v = f->n_nodes - 1; v > A; v--)
        if (f->nodes[v].op == REMAT_OP_LU && f->nodes[v].in[0] == A)
            return v;
    return lu_at(f, A, loc);
}

/* A (..., n, n) and b (..., n) or (..., n, k): the same batch dims (no
 * broadcasting), one float dtype. The output has b's shape. */
remat_val remat_linear_solve_at(remat_fn *f, remat_val A, remat_val b, remat_loc loc)
{
    remat_val v[2] = {A, b};
    if (!f)
        return rmi_fn_null(loc, "remat_linear_solve");
    if (!rmi_fn_vals_ok(f, 2, v))
        return REMAT_NONE;
    const remat_node *na = rmi_fn_node(f, A), *nb = rmi_fn_node(f, b);
    char sa[96], sb[96];
    rmi_fn_fmt_val(f, A, sa, sizeof sa);
    rmi_fn_fmt_val(f, b, sb, sizeof sb);
    if (na->dtype != nb->dtype)
        return rmi_fn_fail(f, REMAT_ERR_DTYPE, loc, "linear_solve: dtypes of A and b differ: A %s, b %s", sa, sb);
    const remat_shape *as = &na->shape, *bs = &nb->shape;
    const int r = as->rank;
    if (r < 2 || as->dims[r - 1] != as->dims[r - 2] || as->dims[r - 1] < 1)
        return rmi_fn_fail(f, REMAT_ERR_SHAPE, loc,
                           "linear_solve: A must be (..., n, n) with n >= 1 (square in its last two axes), got A %s",
                           sa);
    const int64_t n = as->dims[r - 1];
    int ok = (bs->rank == r - 1 || bs->rank == r) && bs->dims[r - 2] == n;
    for (int k = 0; ok && k < r - 2; k++)
        ok = bs->dims[k] == as->dims[k];
    if (!ok)
        return rmi_fn_fail(f, REMAT_ERR_SHAPE, loc,
                           "linear_solve: b must be (..., n) or (..., n, k) with A's batch dims and n = %lld "
                           "(no broadcasting), got A %s, b %s",
                           (long long)n, sa, sb);
    return rmi_linear_solve_t_at(f, A, lu_of(f, A, loc), b, 0, loc);
}

/* The batched products the solve's rules need, over A's batch dims (the
 * leading rank(A) - 2 axes of every operand). For n <= SMALL_N they are
 * broadcasts, a multiply and a sum instead of a dot_general, so that a scan
 * body solving a small system keeps a backward and a JVP the lane compiler
 * translates (it takes no dot_general); the sum runs over k (outer
 * product) or j (matvec) in order, as the CPU reduce kernel adds. (8:
 * REMAT_LANE_SOLVE_MAX_N, the largest system the lane compiler unrolls.) */
#define SMALL_N 8

static remat_val bcast(remat_fn *f, remat_val v, const remat_shape *to, int nb, int d0, int d1, remat_loc loc)
{
    int bd[REMAT_MAX_RANK];
    for (int i = 0; i < nb; i++)
        bd[i] = i;
    bd[nb] = d0, bd[nb + 1] = d1;
    return remat_broadcast_in_dim_at(f, v, to->rank, to->dims, bd, loc);
}

/* -(u v^T): u, v (..., n) or (..., n, k) -> (..., n, n), summing over k:
 * the A cotangent -b_bar x^T (u = b_bar, v = x; swapped for a transposed
 * solve, whose A cotangent is -x b_bar^T). */
remat_val rmi_linear_solve_neg_outer(remat_fn *f, remat_val u, remat_val v, int a_rank, remat_loc loc)
{
    if (!rmi_fn_vals_ok(f, 2, (remat_val[]){u, v}))
        return REMAT_NONE;
    const remat_shape *us = &rmi_fn_node(f, u)->shape;
    const int nb = a_rank - 2, cols = us->rank == a_rank;
    const int64_t n = us->dims[nb];
    if (n > SMALL_N) {
        remat_dot_dims d = {.n_contract = cols, .n_batch = nb};
        d.lhs_contract[0] = d.rhs_contract[0] = nb + 1;
        for (int k = 0; k < nb; k++)
            d.lhs_batch[k] = d.rhs_batch[k] = k;
        return remat_unary_at(f, REMAT_OP_NEG, remat_dot_general_at(f, u, v, &d, loc), loc);
    }
    remat_shape to = *us; /* (..., n, n[, k]) */
    to.dims[nb + 1] = n;
    to.rank = nb + 2;
    if (cols)
        to.dims[to.rank++] = us->dims[nb + 1];
    remat_val p = remat_binary_at(f, REMAT_OP_MUL, bcast(f, u, &to, nb, nb, nb + 2, loc),
                                  bcast(f, v, &to, nb, nb + 1, nb + 2, loc), loc);
    if (cols)
        p = remat_sum_at(f, p, 1, (int[]){nb + 2}, loc);
    return remat_unary_at(f, REMAT_OP_NEG, p, loc);
}

/* M x or M^T x (transpose): M (..., n, n), x (..., n) or (..., n, k). */
remat_val rmi_linear_solve_matvec(remat_fn *f, remat_val M, remat_val x, int transpose, remat_loc loc)
{
    if (!rmi_fn_vals_ok(f, 2, (remat_val[]){M, x}))
        return REMAT_NONE;
    const remat_shape *ms = &rmi_fn_node(f, M)->shape, *xs = &rmi_fn_node(f, x)->shape;
    const int nb = ms->rank - 2, cols = xs->rank == ms->rank;
    if (ms->dims[nb] > SMALL_N) {
        remat_dot_dims d = {.n_contract = 1, .n_batch = nb};
        d.lhs_contract[0] = transpose ? nb : nb + 1;
        d.rhs_contract[0] = nb;
        for (int k = 0; k < nb; k++)
            d.lhs_batch[k] = d.rhs_batch[k] = k;
        return remat_dot_general_at(f, M, x, &d, loc);
    }
    /* P[..., i, j(, q)] = M[i][j] x[j(, q)], summed over j; transposed:
     * M[j][i] x[j(, q)] laid out as P[..., j, i(, q)], summed over the rows */
    remat_shape to = *ms;
    if (cols)
        to.dims[to.rank++] = xs->dims[nb + 1];
    remat_val Mb = cols ? bcast(f, M, &to, nb, nb, nb + 1, loc) : M;
    remat_val xb = bcast(f, x, &to, nb, transpose ? nb : nb + 1, nb + 2, loc);
    return remat_sum_at(f, remat_binary_at(f, REMAT_OP_MUL, Mb, xb, loc), 1, (int[]){transpose ? nb : nb + 1},
                        loc);
}

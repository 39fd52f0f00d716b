/*
 * dot_sparse.c — dot_general with a mostly-zero constant operand.
 *
 * A gas mechanism's right-hand side multiplies by constant 0/1 selections,
 * efficiencies and stoichiometry (gas_lower.c): N x K matrices with one to a
 * few non-zeros per row. Through gemm or gemv every product reads all N K
 * entries (OpenBLAS's gemm packs the whole matrix for one column first). When
 * the compiler hands the backend the constant's values (remat_exec_op.in_data)
 * and at most a quarter of them are non-zero, the lowering keeps the
 * constant's non-zeros by output row (lhs constant) or column (rhs constant)
 * and the kernel sums only those products, each output element in ascending
 * contraction order starting from +0.
 *
 * A batched product (dot_general's batch dimensions, each batch its own
 * constant block: the gas Jacobian's per-reaction slot selections) keeps the
 * non-zeros by batch and outer index alike. Where a constant times a vector
 * has mostly empty outputs (that Jacobian's blocks: a few of K species per
 * reaction), the plan lists the non-empty ones and the kernel zeroes the
 * output and sums those alone; where each output has at most one non-zero
 * (0/1 selections), the kernel is a gather, one product per output. The kernels and the finite check are built
 * per instruction set (VEC_CLONES), the same bits in each.
 *
 * The products are not promised equal to the dense path's bits (gemm sums in
 * its own blocked order); a row with one non-zero gives the same value (x * v
 * exactly, the other terms being zeros) but for the sign of a zero. A
 * non-finite entry of the other operand (where 0 * inf = NaN matters) runs the
 * dense product instead, so infinities and NaNs propagate as gemm's do.
 */
#include <math.h>
#include <string.h>

#include "backend/cpu/cpu_kernels.h"
#include "backend/layout.h"

/* the constant's non-zeros, by outer index: entries ptr[o]..ptr[o+1]-1 */
struct rmi_dot_sparse {
    remat_dot_plan pl;
    int const_lhs;   /* 1: op(lhs) is the constant, outer = its rows (m); 0: op(rhs), outer = its columns (n) */
    int64_t *ptr;    /* nb x outer + 1: batch b's outer index o at b x outer + o */
    int64_t *idx;    /* the contraction index of each non-zero */
    double *val;
    /* a constant times a vector (m or n of 1) whose outputs are mostly empty (the gas Jacobian's
     * per-reaction slot blocks: a few of K species each): the nrows outputs that have non-zeros,
     * by batch and outer index (b x outer + o); NULL: every output is summed */
    int64_t *rows, nrows;
    /* a constant times a vector with at most one non-zero per output (0/1 selections: the gas
     * right-hand side's reactant slots, its falloff gathers): output r is 0.0 + gval[r] x[gidx[r]]
     * (gval 0 and gidx 0 for an empty output), branch-free; NULL: not this form */
    int64_t *gidx;
    double *gval;
};

/* op(A)[i][j] of lhs (m x k) and op(B)[j][l] of rhs (k x n) as the plan stores them */
static double lhs_at(const remat_dot_plan *p, const double *a, int64_t i, int64_t j)
{
    return p->lhs_trans ? a[j * p->m + i] : a[i * p->k + j];
}
static double rhs_at(const remat_dot_plan *p, const double *b, int64_t j, int64_t l)
{
    return p->rhs_trans ? b[l * p->k + j] : b[j * p->n + l];
}

const rmi_dot_sparse *rmi_cpu_dot_sparse_plan(const remat_exec_op *op, void *(*alloc)(void *, size_t), void *ctx,
                                              int *oom)
{
    *oom = 0;
    if (op->dtype != REMAT_F64 || op->nin != 2 || !op->in_data || op->in_dtypes[0] != REMAT_F64 ||
        op->in_dtypes[1] != REMAT_F64)
        return NULL;
    int const_lhs = op->in_data[0] != NULL;
    if (!const_lhs && !op->in_data[1])
        return NULL;
    remat_dot_plan pl = rmi_layout_dot_general(op->dtype, &op->in_shapes[0], &op->in_shapes[1], op->p.dot);
    if (pl.nb < 1 || pl.lhs_copy || pl.rhs_copy || pl.m < 1 || pl.n < 1 || pl.k < 1)
        return NULL;
    const double *c0 = op->in_data[const_lhs ? 0 : 1];
    int64_t outer = const_lhs ? pl.m : pl.n, step = outer * pl.k, total = pl.nb * step, nnz = 0;
    for (int64_t b = 0; b < pl.nb; b++)
        for (int64_t o = 0; o < outer; o++)
            for (int64_t j = 0; j < pl.k; j++)
                nnz += (const_lhs ? lhs_at(&pl, c0 + b * step, o, j) : rhs_at(&pl, c0 + b * step, j, o)) != 0.0;
    if (total < 64 || nnz * 4 > total)
        return NULL;
    rmi_dot_sparse *s = alloc(ctx, sizeof *s);
    int64_t *ptr = alloc(ctx, sizeof *ptr * (size_t)(pl.nb * outer + 1));
    int64_t *idx = alloc(ctx, sizeof *idx * (size_t)(nnz ? nnz : 1));
    double *val = alloc(ctx, sizeof *val * (size_t)(nnz ? nnz : 1));
    if (!s || !ptr || !idx || !val) {
        *oom = 1;
        return NULL;
    }
    int vector = const_lhs ? pl.n == 1 : pl.m == 1;
    int64_t nonempty = 0, *rows = NULL;
    for (int64_t r = 0; vector && r < pl.nb * outer; r++) /* ptr is not filled yet: count again */
        for (int64_t j = 0; j < pl.k; j++)
            if ((const_lhs ? lhs_at(&pl, c0 + (r / outer) * step, r % outer, j)
                           : rhs_at(&pl, c0 + (r / outer) * step, j, r % outer)) != 0.0) {
                nonempty++;
                break;
            }
    int64_t most = 0; /* the most non-zeros of one output */
    for (int64_t r = 0; vector && r < pl.nb * outer; r++) {
        int64_t c = 0;
        for (int64_t j = 0; j < pl.k && c < 2; j++)
            c += (const_lhs ? lhs_at(&pl, c0 + (r / outer) * step, r % outer, j)
                            : rhs_at(&pl, c0 + (r / outer) * step, j, r % outer)) != 0.0;
        most = c > most ? c : most;
    }
    int64_t *gidx = NULL;
    double *gval = NULL;
    if (vector && most <= 1) {
        gidx = alloc(ctx, sizeof *gidx * (size_t)(pl.nb * outer));
        gval = alloc(ctx, sizeof *gval * (size_t)(pl.nb * outer));
        if (!gidx || !gval) {
            *oom = 1;
            return NULL;
        }
    } else if (vector && nonempty * 2 < pl.nb * outer) {
        rows = alloc(ctx, sizeof *rows * (size_t)(nonempty ? nonempty : 1));
        if (!rows) {
            *oom = 1;
            return NULL;
        }
    }
    int64_t e = 0, nr = 0;
    for (int64_t b = 0; b < pl.nb; b++) {
        const double *c = c0 + b * step;
        for (int64_t o = 0; o < outer; o++) {
            ptr[b * outer + o] = e;
            for (int64_t j = 0; j < pl.k; j++) {
                double v = const_lhs ? lhs_at(&pl, c, o, j) : rhs_at(&pl, c, j, o);
                if (v != 0.0)
                    idx[e] = j, val[e] = v, e++;
            }
            if (rows && e > ptr[b * outer + o])
                rows[nr++] = b * outer + o;
            if (gidx) {
                int one = e > ptr[b * outer + o];
                gidx[b * outer + o] = one ? idx[e - 1] : 0;
                gval[b * outer + o] = one ? val[e - 1] : 0.0;
            }
        }
    }
    ptr[pl.nb * outer] = e;
    *s = (rmi_dot_sparse){.pl = pl, .const_lhs = const_lhs, .ptr = ptr, .idx = idx, .val = val, .rows = rows,
                          .nrows = nr, .gidx = gidx, .gval = gval};
    return s;
}

/* 0 when x holds an infinity or a NaN: x * 0 is NaN for those alone and +-0 otherwise, so a sum of
 * them is 0 exactly when all are finite (eight sums, one vector wide, whatever order they add in) */
VEC_CLONES static int all_finite(const double *restrict x, int64_t n)
{
    double acc[8] = {0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++)
            acc[j] += x[i + j] * 0.0;
    for (; i < n; i++)
        acc[0] += x[i] * 0.0;
    double sum = 0.0;
    for (int j = 0; j < 8; j++)
        sum += acc[j];
    return sum == 0.0;
}

/* out[o] = sum over entry o's non-zeros (j, v) of v x[j]: a constant times a vector (either side) */
static inline void sparse_vec(const int64_t *restrict ptr, const int64_t *restrict idx, const double *restrict val,
                       int64_t outer, double *restrict out, const double *restrict x)
{
    for (int64_t o = 0; o < outer; o++) {
        double acc = 0.0;
        for (int64_t e = ptr[o]; e < ptr[o + 1]; e++)
            acc += val[e] * x[idx[e]];
        out[o] = acc;
    }
}

/* one batch: ptr is that batch's, x the other operand's block, out its output block */
static inline void sparse_one(const rmi_dot_sparse *s, const int64_t *restrict ptr, double *restrict out,
                       const double *restrict lhs, const double *restrict rhs)
{
    const remat_dot_plan *p = &s->pl;
    const int64_t *restrict idx = s->idx;
    const double *restrict val = s->val;
    if (s->const_lhs && p->n == 1) { /* the vector op(B) is contiguous whatever its flag */
        sparse_vec(ptr, idx, val, p->m, out, rhs);
    } else if (!s->const_lhs && p->m == 1) {
        sparse_vec(ptr, idx, val, p->n, out, lhs);
    } else if (s->const_lhs && !p->rhs_trans) {
        /* row i of out is the sum over row i's non-zeros (j, v) of v B[j][:], each element's terms
         * still in ascending j from +0: one contiguous pass over B's row per non-zero */
        for (int64_t i = 0; i < p->m; i++) {
            double *restrict o = out + i * p->n;
            for (int64_t l = 0; l < p->n; l++)
                o[l] = 0.0;
            for (int64_t e = ptr[i]; e < ptr[i + 1]; e++) {
                const double v = val[e], *restrict b = rhs + idx[e] * p->n;
                for (int64_t l = 0; l < p->n; l++)
                    o[l] += v * b[l];
            }
        }
    } else if (s->const_lhs) { /* out[i][l] = sum over row i's non-zeros (j, v) of v op(B)[j][l] */
        for (int64_t i = 0; i < p->m; i++)
            for (int64_t l = 0; l < p->n; l++) {
                double acc = 0.0;
                for (int64_t e = ptr[i]; e < ptr[i + 1]; e++)
                    acc += val[e] * rhs_at(p, rhs, idx[e], l);
                out[i * p->n + l] = acc;
            }
    } else { /* out[i][l] = sum over column l's non-zeros (j, v) of op(A)[i][j] v */
        for (int64_t i = 0; i < p->m; i++)
            for (int64_t l = 0; l < p->n; l++) {
                double acc = 0.0;
                for (int64_t e = ptr[l]; e < ptr[l + 1]; e++)
                    acc += lhs_at(p, lhs, i, idx[e]) * val[e];
                out[i * p->n + l] = acc;
            }
    }
}

/* every batch; a constant times a vector with mostly empty outputs writes zeros and then sums the
 * non-empty ones alone (the same +0 an empty sum gives) */
VEC_CLONES static void sparse_all(const rmi_dot_sparse *s, double *restrict out, const double *restrict lhs,
                                  const double *restrict rhs)
{
    const remat_dot_plan *p = &s->pl;
    const int64_t outer = s->const_lhs ? p->m : p->n;
    if (s->gidx) {
        /* x finite (rmi_cpu_dot_sparse): 0 x is a zero, and +0 + v x the one-term sum's bits */
        const double *x = s->const_lhs ? rhs : lhs;
        const int64_t *restrict gidx = s->gidx;
        const double *restrict gval = s->gval;
        for (int64_t b = 0; b < p->nb; b++) {
            const double *restrict xb = x + b * p->k;
            double *restrict ob = out + b * outer;
            const int64_t *restrict gi = gidx + b * outer;
            const double *restrict gv = gval + b * outer;
            for (int64_t o = 0; o < outer; o++)
                ob[o] = 0.0 + gv[o] * xb[gi[o]];
        }
        return;
    }
    if (s->rows) {
        const double *x = s->const_lhs ? rhs : lhs; /* batch b's vector at x + b k */
        memset(out, 0, sizeof *out * (size_t)(p->nb * outer));
        for (int64_t r = 0; r < s->nrows; r++) {
            const int64_t row = s->rows[r], *restrict idx = s->idx;
            const double *restrict xb = x + (row / outer) * p->k, *restrict val = s->val;
            double acc = 0.0;
            for (int64_t e = s->ptr[row]; e < s->ptr[row + 1]; e++)
                acc += val[e] * xb[idx[e]];
            out[row] = acc;
        }
        return;
    }
    for (int64_t b = 0; b < p->nb; b++)
        sparse_one(s, s->ptr + b * outer, out + b * p->m * p->n, lhs + b * p->m * p->k, rhs + b * p->k * p->n);
}

void rmi_cpu_dot_sparse(const rmi_dot_sparse *s, double *out, const double *lhs, const remat_shape *lhs_shape,
                        const double *rhs, const remat_shape *rhs_shape, const remat_dot_dims *d, void *scratch)
{
    const remat_dot_plan *p = &s->pl;
    const double *x = s->const_lhs ? rhs : lhs; /* the operand that is not the constant */
    if (!all_finite(x, p->nb * p->k * (s->const_lhs ? p->n : p->m))) {
        rmi_cpu_dot_general(REMAT_F64, out, lhs, lhs_shape, rhs, rhs_shape, d, scratch);
        return;
    }
    sparse_all(s, out, lhs, rhs);
}

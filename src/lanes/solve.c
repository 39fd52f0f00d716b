/*
 * solve.c — the unrolled lu and linear_solve of compiled scan
 * loops.
 *
 * Exactly the CPU kernels' elimination for n <= 8 (backend/linalg.c,
 * which says the order): for column c, candidate rows i = c+1.. in turn
 * are swapped into row c when |P[i][c]| > |P[c][c]| (|x| as max(x, -x),
 * which compares as fabs does), the swap two selects per element and the
 * compare's 1/0 the flag the solve replays; the candidate's magnitude is
 * kept for the next compare. Then l = P[i][c] / P[c][c] and P[i][j] - l
 * P[c][j] (mul, then sub: -ffp-contract=off), and the substitutions. Same
 * operations on the same operands in the same order, so the same bits.
 */
#include "lanes/lanes_solve.h"

#define OP(o, a, b, c) ((r = op(ctx, (o), (a), (b), (c))) >= 0)

int rmi_lanes_lu(int n, const int32_t *A, int32_t *P, remat_lanes_op_fn op, void *ctx)
{
    const int w = 2 * n;
    int32_t r;
    if (n < 1 || n > REMAT_LANE_SOLVE_MAX_N)
        return 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < w; j++)
            P[i * w + j] = j < n ? A[i * n + j] : -1;
    for (int c = 0; c < n; c++) {
        int32_t best = -1;
        for (int i = c + 1; i < n; i++) {
            if (best < 0) { /* |P[c][c]| */
                if (!OP(REMAT_OP_NEG, P[c * w + c], -1, -1) || !OP(REMAT_OP_MAX, P[c * w + c], r, -1))
                    return 0;
                best = r;
            }
            int32_t mag, cond;
            if (!OP(REMAT_OP_NEG, P[i * w + c], -1, -1) || !OP(REMAT_OP_MAX, P[i * w + c], r, -1))
                return 0;
            mag = r;
            if (!OP(REMAT_OP_GT, mag, best, -1))
                return 0;
            cond = r;
            P[i * w + n + c] = cond;
            for (int j = c; j < n; j++) {
                int32_t nc;
                if (!OP(REMAT_OP_SELECT, cond, P[i * w + j], P[c * w + j]))
                    return 0;
                nc = r;
                if (!OP(REMAT_OP_SELECT, cond, P[c * w + j], P[i * w + j]))
                    return 0;
                P[c * w + j] = nc, P[i * w + j] = r;
            }
            if (i + 1 < n) { /* the magnitude row c holds now */
                if (!OP(REMAT_OP_SELECT, cond, mag, best))
                    return 0;
                best = r;
            }
        }
        for (int i = c + 1; i < n; i++) {
            int32_t l;
            if (!OP(REMAT_OP_DIV, P[i * w + c], P[c * w + c], -1))
                return 0;
            l = P[i * w + c] = r;
            for (int j = c + 1; j < n; j++) {
                if (!OP(REMAT_OP_MUL, l, P[c * w + j], -1) || !OP(REMAT_OP_SUB, P[i * w + j], r, -1))
                    return 0;
                P[i * w + j] = r;
            }
        }
    }
    return 1;
}

/* rows a and b of X swapped where flag is nonzero */
static int swap_rows(int k, int32_t *X, int a, int b, int32_t flag, remat_lanes_op_fn op, void *ctx)
{
    int32_t r;
    for (int q = 0; q < k; q++) {
        int32_t na;
        if (!OP(REMAT_OP_SELECT, flag, X[b * k + q], X[a * k + q]))
            return 0;
        na = r;
        if (!OP(REMAT_OP_SELECT, flag, X[a * k + q], X[b * k + q]))
            return 0;
        X[a * k + q] = na, X[b * k + q] = r;
    }
    return 1;
}

/* s - u * v */
static int32_t msub(int32_t s, int32_t u, int32_t v, remat_lanes_op_fn op, void *ctx)
{
    int32_t m = op(ctx, REMAT_OP_MUL, u, v, -1);
    return m < 0 ? -1 : op(ctx, REMAT_OP_SUB, s, m, -1);
}

int rmi_lanes_lu_solve(int n, int k, int transpose, const int32_t *P, int32_t *X, remat_lanes_op_fn op, void *ctx)
{
    const int w = 2 * n;
    int32_t r;
    if (n < 1 || n > REMAT_LANE_SOLVE_MAX_N)
        return 0;
    if (!transpose) {
        for (int c = 0; c < n; c++) {
            for (int i = c + 1; i < n; i++)
                if (!swap_rows(k, X, c, i, P[i * w + n + c], op, ctx))
                    return 0;
            for (int i = c + 1; i < n; i++)
                for (int q = 0; q < k; q++)
                    if ((X[i * k + q] = msub(X[i * k + q], P[i * w + c], X[c * k + q], op, ctx)) < 0)
                        return 0;
        }
        for (int i = n - 1; i >= 0; i--)
            for (int q = 0; q < k; q++) {
                int32_t s = X[i * k + q];
                for (int j = i + 1; j < n; j++)
                    if ((s = msub(s, P[i * w + j], X[j * k + q], op, ctx)) < 0)
                        return 0;
                if (!OP(REMAT_OP_DIV, s, P[i * w + i], -1))
                    return 0;
                X[i * k + q] = r;
            }
        return 1;
    }
    for (int i = 0; i < n; i++) /* U^T z = b */
        for (int q = 0; q < k; q++) {
            int32_t s = X[i * k + q];
            for (int j = 0; j < i; j++)
                if ((s = msub(s, P[j * w + i], X[j * k + q], op, ctx)) < 0)
                    return 0;
            if (!OP(REMAT_OP_DIV, s, P[i * w + i], -1))
                return 0;
            X[i * k + q] = r;
        }
    for (int c = n - 2; c >= 0; c--) { /* the steps undone, last first */
        for (int q = 0; q < k; q++) {
            int32_t s = X[c * k + q];
            for (int i = c + 1; i < n; i++)
                if ((s = msub(s, P[i * w + c], X[i * k + q], op, ctx)) < 0)
                    return 0;
            X[c * k + q] = s;
        }
        for (int i = n - 1; i > c; i--)
            if (!swap_rows(k, X, c, i, P[i * w + n + c], op, ctx))
                return 0;
    }
    return 1;
}

/*
 * scan_lanes_solve.c — the unrolled linear_solve of compiled scan loops.
 *
 * Gaussian elimination with partial pivoting exactly as the CPU kernel for
 * n <= 8 does it (backend/cpu/linalg.c, which says the order): for column
 * c, candidate rows i = c+1.. in turn are swapped into row c when
 * |M[i][c]| > |M[c][c]| (|x| as max(x, -x), which compares as fabs does);
 * the swap is two selects per element, the candidate's magnitude kept
 * for the next compare. Then l = M[i][c] / M[c][c] and M[i][j] - l M[c][j]
 * (mul, then sub: -ffp-contract=off), and back substitution. Same
 * operations on the same operands in the same order, so the same bits.
 */
#include "scan/scan_lanes_solve.h"

#define OP(o, a, b, c) ((r = op(ctx, (o), (a), (b), (c))) < 0 ? 0 : 1)

int remat_lanes_solve(int n, int k, int32_t *M, int32_t *X, remat_lanes_op_fn op, void *ctx)
{
    int32_t r;
    if (n < 1 || n > REMAT_LANE_SOLVE_MAX_N)
        return 0;
    for (int c = 0; c < n; c++) {
        int32_t best = -1;
        for (int i = c + 1; i < n; i++) {
            if (best < 0) { /* |M[c][c]| */
                int32_t ng;
                if (!OP(REMAT_OP_NEG, M[c * n + c], -1, -1))
                    return 0;
                ng = r;
                if (!OP(REMAT_OP_MAX, M[c * n + c], ng, -1))
                    return 0;
                best = r;
            }
            int32_t mag, cond;
            if (!OP(REMAT_OP_NEG, M[i * n + c], -1, -1) || !OP(REMAT_OP_MAX, M[i * n + c], r, -1))
                return 0;
            mag = r;
            if (!OP(REMAT_OP_GT, mag, best, -1))
                return 0;
            cond = r;
            for (int j = c; j < n + k; j++) { /* row c and row i swap where cond: M's columns c.., then X's */
                int32_t *pc = j < n ? &M[c * n + j] : &X[c * k + (j - n)];
                int32_t *pi = j < n ? &M[i * n + j] : &X[i * k + (j - n)];
                int32_t nc, ni;
                if (!OP(REMAT_OP_SELECT, cond, *pi, *pc))
                    return 0;
                nc = r;
                if (!OP(REMAT_OP_SELECT, cond, *pc, *pi))
                    return 0;
                ni = r;
                *pc = nc, *pi = ni;
            }
            if (i + 1 < n) { /* the magnitude row c holds now */
                if (!OP(REMAT_OP_SELECT, cond, mag, best))
                    return 0;
                best = r;
            }
        }
        for (int i = c + 1; i < n; i++) {
            int32_t l;
            if (!OP(REMAT_OP_DIV, M[i * n + c], M[c * n + c], -1))
                return 0;
            l = r;
            for (int j = c + 1; j < n + k; j++) {
                int32_t *pi = j < n ? &M[i * n + j] : &X[i * k + (j - n)];
                const int32_t rc = j < n ? M[c * n + j] : X[c * k + (j - n)];
                if (!OP(REMAT_OP_MUL, l, rc, -1) || !OP(REMAT_OP_SUB, *pi, r, -1))
                    return 0;
                *pi = r;
            }
        }
    }
    for (int i = n - 1; i >= 0; i--)
        for (int q = 0; q < k; q++) {
            int32_t s = X[i * k + q];
            for (int j = i + 1; j < n; j++) {
                if (!OP(REMAT_OP_MUL, M[i * n + j], X[j * k + q], -1) || !OP(REMAT_OP_SUB, s, r, -1))
                    return 0;
                s = r;
            }
            if (!OP(REMAT_OP_DIV, s, M[i * n + i], -1))
                return 0;
            X[i * k + q] = r;
        }
    return 1;
}

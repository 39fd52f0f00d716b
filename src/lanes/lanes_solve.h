/*
 * lanes_solve.h (internal to src/lanes) — lu and linear_solve as straight-line lane
 * code: the CPU kernels' elimination for small n (backend/linalg.c),
 * op for op, with its pivoting done by compares and selects instead of
 * branches.
 */
#ifndef REMAT_LANES_SOLVE_H
#define REMAT_LANES_SOLVE_H

#include <stdint.h>

#include "backend/lane.h"
#include "remat/op.h"

/* the lane compiler's op emitter: r = op(a[, b[, c]]), -1 when it failed */
typedef int32_t (*remat_lanes_op_fn)(void *ctx, remat_op op, int32_t a, int32_t b, int32_t c);

/* lu of one matrix: A (n, n) registers row-major; P (n, 2n) receives the
 * packed factorisation's registers (remat/op.h), -1 for its entries that
 * are zero (the caller gives them a constant). n at most
 * REMAT_LANE_SOLVE_MAX_N. Returns 0 when an op could not be emitted. */
int rmi_lanes_lu(int n, const int32_t *A, int32_t *P, remat_lanes_op_fn op, void *ctx);

/* linear_solve of one system with P (n, 2n) from lu: X (n, k), the
 * right-hand sides' registers, is rewritten to the solution's; transpose
 * solves A^T x = b. Returns 0 when an op could not be emitted. */
int rmi_lanes_lu_solve(int n, int k, int transpose, const int32_t *P, int32_t *X, remat_lanes_op_fn op,
                       void *ctx);

#endif

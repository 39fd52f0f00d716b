/*
 * scan_lanes_solve.h (internal) — linear_solve as straight-line lane code:
 * the CPU kernel's elimination for small n (backend/cpu/linalg.c), op for
 * op, with its pivoting done by compares and selects instead of branches.
 */
#ifndef REMAT_SCAN_LANES_SOLVE_H
#define REMAT_SCAN_LANES_SOLVE_H

#include <stdint.h>

#include "backend/lane.h"
#include "remat/op.h"

/* the lane compiler's op emitter: r = op(a[, b[, c]]), -1 when it failed */
typedef int32_t (*remat_lanes_op_fn)(void *ctx, remat_op op, int32_t a, int32_t b, int32_t c);

/* The registers of one system: M (n, n) row-major, already A or A^T; X
 * (n, k) the right-hand sides. Both are rewritten to the registers that
 * hold them as the elimination goes, X ending as the solution's. n at most
 * REMAT_LANE_SOLVE_MAX_N (backend/lane.h). Returns 0 when an op could not
 * be emitted. */
int remat_lanes_solve(int n, int k, int32_t *M, int32_t *X, remat_lanes_op_fn op, void *ctx);

#endif

/* ops_internal.h (internal) — helpers shared by the op constructors. */
#ifndef REMAT_AD_OPS_INTERNAL_H
#define REMAT_AD_OPS_INTERNAL_H

#include "ad/graph_impl.h"

/* A node prototype with op, dtype, shape and location set, all else zero. */
remat_node rmi_proto(remat_op op, remat_dtype dt, const remat_shape *s, remat_loc loc);
/* Validates rank and dims, and that the element count times dt's size fits
 * in int64/size_t (recording an error on f); 1 if fine. */
int rmi_check_dims(remat_fn *f, const char *op, remat_dtype dt, int rank, const int64_t *dims, remat_loc loc);

/* linear_solve(A, lu, b) with lu = lu(A) (a node of f): A^T x = b when
 * transpose is set (the VJP's solve, with the forward's factorisation). */
remat_val rmi_linear_solve_t_at(remat_fn *f, remat_val A, remat_val lu, remat_val b, int transpose, remat_loc loc);
/* The solve rules' products over A's batch dims: -(u v^T) summed over the
 * k columns ((..., n, n), a_rank = rank of A), and M x or M^T x. */
remat_val rmi_linear_solve_neg_outer(remat_fn *f, remat_val u, remat_val v, int a_rank, remat_loc loc);
remat_val rmi_linear_solve_matvec(remat_fn *f, remat_val M, remat_val x, int transpose, remat_loc loc);

#endif

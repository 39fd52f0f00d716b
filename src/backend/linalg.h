/*
 * linalg.h — lu and linear_solve on the host: the CPU backend's kernels,
 * and the CUDA backend's host fallback for them (kernels/cuda/custom.c), so
 * both give the same bits. Plain functions over row-major host buffers.
 */
#ifndef REMAT_BACKEND_LINALG_H
#define REMAT_BACKEND_LINALG_H

#include <stddef.h>
#include <stdint.h>

#include "remat/tensor.h"

/* ---- lu and linear_solve  ----
 * lu: out (B, n, rmi_host_lu_cols(n)) = the packed factorisation
 * (remat/op.h, REMAT_LU_SMALL_N) of each matrix of A (B, n, n).
 * linear_solve: out (B, n, k) = A^{-1} b, or A^{-T} b with transpose, from
 * lu's P and b (B, n, k) (k = 1 for a vector b); all row-major. n <=
 * REMAT_LU_SMALL_N: the elimination compiled scan loops repeat op for op
 * (bitwise the same); above: LAPACK getrf/getrs. Scratch: the _scratch
 * bytes, 8-byte aligned (NULL when 0). Singular A gives inf/nan, never an
 * error. */
int64_t rmi_host_lu_cols(int64_t n);
size_t rmi_host_lu_scratch(int64_t n);
void rmi_host_lu(remat_dtype dt, void *out, const void *A, int64_t batch, int64_t n, void *scratch);
size_t rmi_host_linear_solve_scratch(remat_dtype dt, int64_t n, int64_t k);
void rmi_host_linear_solve(remat_dtype dt, void *out, const void *P, const void *b, int64_t batch, int64_t n,
                           int64_t k, int transpose, void *scratch);

#endif

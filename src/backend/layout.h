/*
 * layout.h — the layout planners both backends share: from shapes and op
 * parameters alone, which elements a structural op moves where, and how a
 * dot_general becomes a batch of gemms. No element is touched here; the CPU
 * backend (backend/cpu) and the CUDA backend (kernels/cuda) each run the
 * plans, so both move the same elements in the same order. A backend-neutral
 * header: neither backend's headers are included.
 */
#ifndef REMAT_BACKEND_LAYOUT_H
#define REMAT_BACKEND_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/backend_impl.h"
#include "remat/op.h"
#include "remat/tensor.h"

/* ---- copy plans: transpose, broadcast_in_dim, slice, pad (layout.c) ----
 * Every one is "copy elements from a strided view of the input to a strided
 * view of the output": a _plan function fills a plan from the shapes and
 * parameters alone (size-1 dims dropped, dims contiguous in both views
 * merged, then contiguous / rows / 2-D tiles chosen). The CPU runs it
 * (rmi_cpu_copy_run, backend/cpu/structural.c); CUDA turns it into strides
 * for its one copy kernel (kernels/cuda/lower.c). */
typedef enum { REMAT_COPY_EMPTY, REMAT_COPY_CONTIG, REMAT_COPY_ROWS, REMAT_COPY_TILED } remat_copy_kind;
typedef struct {
    uint8_t kind, esize, rank, nouter; /* rank: after coalescing */
    int64_t n;                         /* CONTIG: elements */
    int64_t doff, soff;                /* element offsets into out / in */
    size_t zero_bytes;                 /* out bytes zeroed first (pad) */
    int64_t outer;                     /* ROWS/TILED: product of the outer dims */
    int64_t dims[REMAT_MAX_RANK], ds[REMAT_MAX_RANK], ss[REMAT_MAX_RANK];
} remat_copy_plan;
void rmi_layout_transpose(remat_copy_plan *p, remat_dtype dt, const remat_shape *in_shape,
                          const int *perm);
void rmi_layout_broadcast_in_dim(remat_copy_plan *p, remat_dtype dt, const remat_shape *out_shape,
                                 const remat_shape *in_shape, const int *bdims);
void rmi_layout_slice(remat_copy_plan *p, remat_dtype dt, const remat_shape *in_shape,
                      const remat_slice_params *sp);
void rmi_layout_pad(remat_copy_plan *p, remat_dtype dt, const remat_shape *out_shape,
                    const remat_shape *in_shape, const remat_pad_params *pp);
/* concatenate: the output viewed as (outer, row), input j as (outer,
 * chunks[j]) */
typedef struct {
    int n_in;
    size_t esize;
    int64_t outer, row; /* output viewed as (outer, row) */
    const int64_t *chunks; /* n_in: input j is (outer, chunks[j]) */
} remat_concat_plan;
/* chunks: n_in elements of storage the plan keeps pointing at */
void rmi_layout_concatenate(remat_concat_plan *p, int64_t *chunks, remat_dtype dt, int n_in,
                            const remat_shape *in_shapes, int axis);

/* n elements of dt copied contiguously: a materialised reshape or identity */
remat_copy_plan rmi_layout_contig(remat_dtype dt, size_t n);
/* The plan of a structural op writing n elements: reshape, transpose,
 * broadcast_in_dim, slice or pad, by the op's parameter kind. false for a
 * parameter kind with no copy plan (concatenate has its own). */
bool rmi_layout_copy_plan_of(remat_copy_plan *p, const remat_exec_op *op, size_t n);

/* ---- dot_general as batched gemms (dot_layout.c) ----
 * Operands in scratch as (B, free, contract) when lhs_copy / rhs_copy (lhs
 * first, then rhs), then nb row-major gemms with these flags and strides:
 * what rmi_cpu_dot_general runs through OpenBLAS and CUDA through cuBLAS.
 * _scratch: the plan's scratch bytes (0 in the common matmul cases). */
typedef struct {
    int64_t nb, m, n, k;
    bool lhs_copy, rhs_copy;   /* transpose into scratch first */
    bool lhs_trans, rhs_trans; /* gemm flags: lhs stored (K,M), rhs stored (N,K) */
    int lhs_perm[REMAT_MAX_RANK], rhs_perm[REMAT_MAX_RANK];
    size_t scratch; /* bytes */
} remat_dot_plan;
remat_dot_plan rmi_layout_dot_general(remat_dtype dt, const remat_shape *lhs, const remat_shape *rhs,
                                      const remat_dot_dims *d);
size_t rmi_layout_dot_general_scratch(remat_dtype dt, const remat_shape *lhs, const remat_shape *rhs,
                                      const remat_dot_dims *d);

#endif

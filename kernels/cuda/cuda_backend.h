/*
 * cuda_backend.h (internal) — the pieces of the CUDA backend's vtable
 * (backend.c) that live in other files, and the vtable itself for tests that
 * plan programs without a device (tests/test_cuda_plan.c).
 */
#ifndef REMAT_CUDA_BACKEND_H
#define REMAT_CUDA_BACKEND_H

#include "backend/backend_impl.h"

/* lower.c: one op, a fused group, add(x, pad(g)) (backend_impl.h contracts) */
bool rmi_cuda_supports(const remat_exec_op *op);
size_t rmi_cuda_scratch(const remat_exec_op *op);
remat_status rmi_cuda_lower(const remat_exec_op *op, remat_instr *ins, void *(*alloc)(void *, size_t), void *ctx);
remat_status rmi_cuda_lower_fused(const remat_fused_op *op, remat_instr *ins, void *(*alloc)(void *, size_t),
                                  void *ctx);
remat_status rmi_cuda_lower_add_pad(remat_dtype dt, const remat_shape *out_shape, const remat_shape *g_shape,
                                    const remat_pad_params *pad, int pad_first, remat_instr *ins,
                                    void *(*alloc)(void *, size_t), void *ctx);
/* custom.c: ops that run on the host through copies: a caller's op, and
 * lu and linear_solve on the CPU's kernels (no cuSOLVER path yet) */
remat_status rmi_cuda_lower_custom(const remat_exec_op *op, remat_instr *ins, void *(*alloc)(void *, size_t),
                                   void *ctx);
remat_status rmi_cuda_lower_solve(const remat_exec_op *op, remat_instr *ins, void *(*alloc)(void *, size_t),
                                  void *ctx);
size_t rmi_cuda_solve_scratch(const remat_exec_op *op);
/* the ops custom.c runs on the host (remat_stats.host_ops) */
bool rmi_cuda_on_host(remat_op op);

/* backend.c: the vtable every device's backend object shares */
const remat_backend_iface *rmi_cuda_iface(void);
/* the device a CUDA backend object drives (its context), for code beside
 * the backend that needs the device itself (dist_nccl.c) */
int rmi_cuda_backend_device(const remat_backend *be);

#endif

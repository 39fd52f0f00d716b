/* fused.h (internal) — the CPU lowering of a fused elementwise group. */
#ifndef REMAT_CPU_FUSED_H
#define REMAT_CPU_FUSED_H

#include "backend/backend_impl.h"

remat_status rmi_cpu_lower_fused(const remat_fused_op *op, remat_instr *ins, void *(*alloc)(void *ctx, size_t bytes),
                                 void *ctx);

#endif

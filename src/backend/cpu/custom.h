/* custom.h (internal) — the CPU lowering of custom ops and their VJPs. */
#ifndef REMAT_CPU_CUSTOM_H
#define REMAT_CPU_CUSTOM_H

#include "backend/backend_impl.h"

/* REMAT_OP_CUSTOM (forward) or REMAT_OP_CUSTOM_VJP (op->aux: the input whose
 * cotangent it computes; the last two inputs are the output and its cotangent) */
remat_status rmi_cpu_lower_custom(const remat_exec_op *op, remat_instr *ins, void *(*alloc)(void *ctx, size_t bytes),
                                  void *ctx);

#endif

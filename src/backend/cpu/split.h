/* split.h (internal) — large elementwise instructions across the thread pool. */
#ifndef REMAT_CPU_SPLIT_H
#define REMAT_CPU_SPLIT_H

#include "backend/backend_impl.h"

/* Work is split in ranges of this many elements, and only when there are at
 * least two: waking a worker costs some microseconds, about what 16K f64
 * elements of a cheap op take. */
enum { REMAT_CPU_SPLIT_GRAIN = 16384 };

/* When ins (lowered from op) is an elementwise op on at least two grains,
 * wraps its kernel so that it runs on ranges of the output across the pool
 * (core/pool.h), each range the kernel on offset operands (a scalar operand,
 * op->scalar_mask, is not offset): element i is computed by the same code
 * whichever thread runs it, so the bits do not depend on the thread count.
 * Anything else is left as it is. */
remat_status rmi_cpu_split_large(const remat_exec_op *op, remat_instr *ins, void *(*alloc)(void *, size_t),
                                 void *ctx);

#endif

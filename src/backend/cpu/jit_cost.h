/* jit_cost.h (internal) — what gcc costs for a compilation of lane programs
 * (jit.c), and the optimisation level it runs at: the two are one model,
 * kept beside each other so that the scan's tier policy (scan_tier.c, through
 * the backend's lanes_compile_ns) predicts the compilation jit.c makes. */
#ifndef REMAT_CPU_JIT_COST_H
#define REMAT_CPU_JIT_COST_H

#include "backend/lane.h"

/* gcc's -O level for one compilation of ps[0..n-1]: 3, or 1 for a large
 * unrolled (every m == 1) set, where -O1 gives the same run time for two
 * thirds of the compile time (jit_cost.c). */
int rmi_cpu_jit_level(int n, const remat_lane_program *const *ps);

/* Predicted CPU time of that compilation, in ns: libgccjit, the assembler
 * and the linker. */
double rmi_cpu_lanes_compile_ns(int n, const remat_lane_program *const *ps);

#endif

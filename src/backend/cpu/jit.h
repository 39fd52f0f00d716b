/* jit.h (internal) — the CPU backend's compiler of lane programs (libgccjit). */
#ifndef REMAT_CPU_JIT_H
#define REMAT_CPU_JIT_H

#include "backend/lane.h"

remat_status remat_cpu_compile_lanes(int n, const remat_lane_program *const *ps, remat_lane_fn *out);

#endif

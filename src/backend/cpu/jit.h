/* jit.h (internal) — the CPU backend's compiler of lane programs (libgccjit). */
#ifndef REMAT_CPU_JIT_H
#define REMAT_CPU_JIT_H

#include <stdbool.h>

#include "backend/lane.h"
#include "remat/exec.h"

/* Only built with libgccjit (REMAT_HAVE_GCCJIT); the backend leaves its
 * vtable entries NULL otherwise. */
remat_status rmi_cpu_compile_lanes(const remat_backend *be, int n, const remat_lane_program *const *ps,
                                   remat_lane_fn *out, const char *cache_dir);
/* The same from this process's and the disk's caches only, never running gcc
 * nor loading libgccjit: REMAT_ERR_UNSUPPORTED when some program is in neither. */
remat_status rmi_cpu_load_lanes(int n, const remat_lane_program *const *ps, remat_lane_fn *out,
                                const char *cache_dir);
bool rmi_cpu_can_compile_lanes(void);
/* Whether gcc's driver runs as a process of its own (jit_tmp.h): false
 * once it could not be started and libgccjit's embedded one took over. */
bool rmi_cpu_jit_driver_external(void);

#endif

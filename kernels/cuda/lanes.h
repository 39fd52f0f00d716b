/*
 * lanes.h (internal) — the CUDA backend's compile_lanes: lane programs
 * (src/backend/lane.h) compiled by NVRTC for the architecture of the
 * backend's device (its compute capability, asked of that device, not the
 * thread's current one) and run as kernel launches.
 *
 * A compiled program is a remat_lane_fn like the CPU's: called with the
 * buffer table (device pointers: the arena, snapshots and tapes come from
 * the backend's mem_alloc), per-step strides, a step count and the lanes
 * of the call (lane.h), it launches
 * the program's kernel (lanes_gen.h) once — one schedule op (a run of
 * advances, tapes, reverses or recomputes) is one launch, the steps looping
 * inside it. remat_lane_fn carries no context, so each distinct kernel gets
 * one of REMAT_CUDA_LANES_MAX static trampolines that knows its slot;
 * identical programs for one architecture share one. Past that many the compile fails and the
 * scan interprets its body (the contract of lane.h).
 *
 * Launches go to the stream the calling thread entered (a program's
 * stream during a run, memory.cu), asynchronously, in order with the
 * backend's copies. A launch that fails is recorded process-wide;
 * rmi_cuda_lanes_check() returns it (once) as REMAT_ERR_BACKEND — the
 * backend's finish calls it.
 */
#ifndef REMAT_CUDA_LANES_H
#define REMAT_CUDA_LANES_H

#include <stdbool.h>
#include <stddef.h>

#include "backend/lane.h"
#include "remat/exec.h"

#define REMAT_CUDA_LANES_MAX 1024

remat_status rmi_cuda_compile_lanes(const remat_backend *be, int n, const remat_lane_program *const *p,
                                    remat_lane_fn *out, const char *cache_dir);

/* NVRTC's names of compute capability major.minor: "sm_<major><minor>"
 * into sm (a cubin), "compute_<major><minor>" into compute (PTX, for an
 * architecture newer than NVRTC's SASS); false for no capability CUDA
 * has (major < 1, minor outside 0..9) or names longer than n. */
bool rmi_cuda_lanes_arch(int major, int minor, char *sm, char *compute, size_t n);

/* NVRTC loads, a device is present, REMAT_NO_JIT is not set, no earlier
 * compile failed. */
bool rmi_cuda_can_compile_lanes(void);

remat_status rmi_cuda_lanes_check(void);

/* The backend's run_lanes (backend_impl.h): fn, one of compile_lanes's,
 * launched on cx's stream, a failed launch kept in cx's state for finish.
 * (Called directly, fn launches on the current device's default stream and
 * a failure waits for rmi_cuda_lanes_check.) */
struct remat_exec_ctx;
void rmi_cuda_run_lanes(const struct remat_exec_ctx *cx, remat_lane_fn fn, char *const *bufs,
                        const int64_t *strides, int64_t count, int64_t lanes);

/* kernels compiled so far (distinct programs), for stats and tests */
int rmi_cuda_lanes_count(void);

#endif

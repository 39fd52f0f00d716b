/*
 * lanes_gen.h (internal) — lane programs (src/backend/lane.h) as CUDA C++:
 * one __global__ kernel per program, for NVRTC (kernels/cuda/nvrtc.h).
 *
 * The kernel runs the program's step loop inside itself:
 *
 *   extern "C" __global__ void NAME(remat_lane_args a, long long count,
 *                                   long long lo, long long hi)
 *
 * with a.b[q] / a.st[q] the buffer table and per-step byte strides a lane
 * function takes (bufs, strides), count the steps, and [lo, hi) the lanes
 * to run (the lane function's call passes 0, lanes: lane.h moves the
 * buffers to a range's first lane).
 *
 * Two shapes, chosen per program:
 *   parallel  one thread per lane (launch: ceil((hi-lo)/REMAT_CUDA_LANES_BLOCK)
 *             blocks of REMAT_CUDA_LANES_BLOCK); state elements (carry,
 *             cotangents) live in registers for the whole call and are
 *             written back at its end. Lane j's element of a buffer is
 *             off + j*lstride: the scan's (.., m) layouts put lanes fastest,
 *             so a warp's loads and stores coalesce.
 *   serial    one thread (launch: one block of one thread) doing exactly
 *             the CPU loop, lanes in order: for programs whose lanes are
 *             not independent — sums across lanes (SUM0/ACC, post), an
 *             element every lane stores, two lanes' elements that may
 *             alias — and for m = 1. Correct and slow; the scan suites'
 *             programs of this kind are small.
 *
 * Bits: every op is written as the CPU kernel writes it (+ - * / and
 * sqrt single IEEE operations, integer_pow's square-and-multiply order,
 * max/min/relu/select's NaN rules), compiled with --fmad=false
 * --prec-div=true --prec-sqrt=true, so lanes give the CPU's bits except
 * for exp, log, sin, cos, tanh, erf and pow, which are CUDA's math library
 * (the CUDA backend's elementwise kernels call the same functions, so a
 * compiled scan and an interpreted one agree on the GPU).
 */
#ifndef REMAT_CUDA_LANES_GEN_H
#define REMAT_CUDA_LANES_GEN_H

#include <stdbool.h>

#include "backend/lane.h"

#define REMAT_CUDA_LANES_BLOCK 256

typedef struct {
    bool serial;  /* launch one thread (see above) */
    int n_bufs;   /* entries of remat_lane_args */
    size_t param_bytes;
} remat_cuda_lanes_info;

/* The NVRTC options the source is meant for (NULL-terminated). */
extern const char *const rmi_cuda_lanes_options[];

/* Writes p as the kernel `name` into *src (rmi_malloc'd, released with
 * rmi_free). REMAT_ERR_UNSUPPORTED when an op has no CUDA form or the
 * buffer table does not fit in a kernel's parameters; REMAT_ERR_NOMEM. */
remat_status rmi_cuda_lanes_source(const remat_lane_program *p, const char *name, char **src,
                                   remat_cuda_lanes_info *info);

#endif

/*
 * nvrtc.h (internal) — CUDA C++ source to PTX or a cubin through NVRTC,
 * loaded at run time (dlopen), so that building remat needs no NVRTC and a
 * process without it says why instead of failing to start.
 *
 * NVRTC and ptxas need no GPU: CI compiles every lane program of the scan
 * suites for sm_90 with them (tests/cuda_lanes_ptx.c).
 */
#ifndef REMAT_CUDA_NVRTC_H
#define REMAT_CUDA_NVRTC_H

#include <stdbool.h>
#include <stddef.h>

#include "remat/status.h"

/* Whether libnvrtc loaded (it is tried once: $REMAT_NVRTC, libnvrtc.so,
 * libnvrtc.so.13, libnvrtc.so.12, then under /usr/local/cuda/lib64); when
 * not, *why (if not NULL) says what was tried. */
bool rmi_nvrtc_available(const char **why);

/* NVRTC's version, major * 1000 + minor * 10 (12040: 12.4); 0 without it. */
int rmi_nvrtc_version(void);

typedef enum { REMAT_NVRTC_PTX, REMAT_NVRTC_CUBIN } remat_nvrtc_output;

/* Compiles src (program name `name`, for messages) with the NULL-terminated
 * options plus "-arch=<arch>" (compute_90 for PTX, sm_90 for a cubin).
 * *image (rmi_malloc'd; PTX text NUL-terminated, *size without the NUL)
 * on success. On a compile error: REMAT_ERR_BACKEND, with NVRTC's log in
 * *log (rmi_malloc'd) when log is not NULL — also on success when NVRTC
 * warned. REMAT_ERR_UNSUPPORTED without NVRTC. */
remat_status rmi_nvrtc_compile(const char *src, const char *name, const char *const *options, const char *arch,
                               remat_nvrtc_output kind, char **image, size_t *size, char **log);

#endif

/*
 * remat/dist_device.h — remat_dist_sum (remat/dist.h) for vectors that live
 * in a CUDA device's memory: the items' vectors gathered onto every rank's
 * device through NCCL, then summed there in item order, ((v0 + v1) + v2) +
 * ..., by one kernel whose adds round as the host's do (no FMA contraction),
 * so the bits are remat_dist_sum's on any number of ranks.
 *
 * NCCL is opened at run time (dlopen of libnccl.so.2), never linked: a
 * build needs only nccl.h beside the CUDA toolkit's headers. Without CUDA,
 * without nccl.h at build or libnccl at run time, remat_dist_device_new
 * returns REMAT_ERR_UNSUPPORTED saying which, on every rank alike.
 *
 *   remat_dist_device *g;
 *   if (remat_dist_device_new(d, be, &g) == REMAT_OK) {     // collective
 *       remat_dist_device_sum(g, n, owner, len, d_mine, d_sum); // device pointers (remat_backend_alloc)
 *       remat_dist_device_free(g);
 *   }
 *
 * One NCCL communicator per group, on the device of backend `be` (a CUDA
 * backend: remat_backend_cuda(N)); one device per rank (NCCL refuses two
 * ranks on one device). Collective functions: every rank, same order.
 */
#ifndef REMAT_DIST_DEVICE_H
#define REMAT_DIST_DEVICE_H

#include "export.h"
#include "dist.h"
#include "exec.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct remat_dist_device remat_dist_device;

/* Rank 0 makes the NCCL id, remat_dist_bcast hands it to the others, every
 * rank joins (ncclCommInitRank) on be's device. Collective; every rank gets
 * the same status (remat_dist_agree). */
REMAT_API remat_status remat_dist_device_new(remat_dist *d, remat_backend *be, remat_dist_device **out);
/* Collective too (the communicator's end); NULL is a no-op. */
REMAT_API void remat_dist_device_free(remat_dist_device *g);

/* remat_dist_sum with `mine` (the rank's own items' vectors, in item order)
 * and `sum` (len doubles) in be's device memory. owner as the split gives it:
 * non-decreasing (each rank one contiguous run of items). Collective; done
 * (the stream synchronised) when it returns. */
REMAT_API remat_status remat_dist_device_sum(remat_dist_device *g, int64_t n, const int *owner, int64_t len,
                                             const double *mine, double *sum);

#ifdef __cplusplus
}
#endif
#endif

/*
 * dist_nccl.c — remat_dist_device_* (remat/dist_device.h): an NCCL
 * communicator over a remat_dist group, and the deterministic device sum:
 * every rank's run of items broadcast from its owner into one (n, len)
 * buffer on every device (one ncclBroadcast per rank, grouped), then
 * summed in item order by ordered_sum.cu's kernel.
 */
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include "core/error.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/nccl_lib.h"
#include "remat/dist_device.h"

cudaError_t rmi_cuda_ordered_sum(const double *all, int64_t n, int64_t len, double *sum, cudaStream_t stream);

struct remat_dist_device {
    remat_dist *d;
    remat_backend *be;
    int rank, size, device;
    ncclComm_t comm;
    cudaStream_t stream;
    double *all; /* (items, len) on the device, grown as asked */
    size_t all_bytes;
};

/* what this rank can do alone: be is a CUDA backend, NCCL loads, a stream */
static remat_status prepare(remat_dist_device *g)
{
    if (!g->be)
        return rmi_error(REMAT_ERR_NULL, "remat_dist_device_new: be is NULL");
    if (strcmp(remat_backend_name(g->be), "cuda") != 0)
        return rmi_error(REMAT_ERR_ARG, "device sum: backend %s is not CUDA", remat_backend_name(g->be));
    char why[512];
    if (!rmi_nccl_open(why, sizeof why))
        return rmi_error(REMAT_ERR_UNSUPPORTED, "device sum: %s", why);
    /* the backend's device, asked of the backend (not found through the
     * device a probe allocation leaves this thread on) */
    g->device = rmi_cuda_backend_device(g->be);
    cudaError_t e = cudaSetDevice(g->device);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return rmi_error(REMAT_ERR_BACKEND, "device sum: device %d: %s", g->device, cudaGetErrorString(e));
    }
    e = cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return rmi_error(REMAT_ERR_BACKEND, "device sum: a stream on the device: %s", cudaGetErrorString(e));
    }
    return REMAT_OK;
}

static remat_status nccl_failed(const char *what, ncclResult_t r)
{
    return rmi_error(REMAT_ERR_BACKEND, "device sum: %s: %s", what, rmi_nccl.error_string(r));
}

remat_status remat_dist_device_new(remat_dist *d, remat_backend *be, remat_dist_device **out)
{
    if (!out)
        return rmi_error(REMAT_ERR_NULL, "device sum: output pointer is NULL");
    *out = NULL;
    remat_dist_device *g = calloc(1, sizeof *g);
    remat_status st = g ? REMAT_OK : rmi_error(REMAT_ERR_NOMEM, "device sum: out of memory");
    if (g) {
        *g = (remat_dist_device){.d = d, .be = be, .rank = remat_dist_rank(d), .size = remat_dist_size(d)};
        st = prepare(g);
    }
    if ((st = remat_dist_agree(d, st)) != REMAT_OK)
        goto fail;
    /* rank 0's id (or its failure) to every rank, then all join together */
    struct {
        int ok;
        ncclUniqueId id;
    } hello = {0};
    if (g->rank == 0)
        hello.ok = rmi_nccl.get_unique_id(&hello.id) == ncclSuccess;
    if ((st = remat_dist_bcast(d, 0, &hello, sizeof hello)) != REMAT_OK)
        goto fail;
    if (!hello.ok) {
        st = rmi_error(REMAT_ERR_BACKEND, "device sum: ncclGetUniqueId failed on rank 0");
        goto fail;
    }
    cudaSetDevice(g->device);
    ncclResult_t r = rmi_nccl.comm_init_rank(&g->comm, g->size, hello.id, g->rank);
    st = r == ncclSuccess ? REMAT_OK : nccl_failed("ncclCommInitRank", r);
    if (st != REMAT_OK)
        g->comm = NULL;
    if ((st = remat_dist_agree(d, st)) != REMAT_OK)
        goto fail;
    *out = g;
    return REMAT_OK;
fail:
    if (g && g->comm)
        rmi_nccl.comm_destroy(g->comm);
    if (g && g->stream)
        cudaStreamDestroy(g->stream);
    free(g);
    return st;
}

void remat_dist_device_free(remat_dist_device *g)
{
    if (!g)
        return;
    cudaSetDevice(g->device);
    remat_backend_free(g->be, g->all);
    if (g->comm)
        rmi_nccl.comm_destroy(g->comm);
    if (g->stream)
        cudaStreamDestroy(g->stream);
    free(g);
}

/* every rank's items broadcast from their owner into g->all, in item order */
static remat_status gather(remat_dist_device *g, int64_t n, const int *owner, int64_t len, const double *mine)
{
    ncclResult_t r = rmi_nccl.group_start();
    for (int64_t i = 0; r == ncclSuccess && i < n;) {
        int64_t j = i;
        while (j < n && owner[j] == owner[i])
            j++;
        double *dst = g->all + (size_t)(i * len);
        r = rmi_nccl.broadcast(owner[i] == g->rank ? mine : dst, dst, (size_t)((j - i) * len), ncclDouble, owner[i],
                               g->comm, g->stream);
        i = j;
    }
    ncclResult_t end = rmi_nccl.group_end();
    if (r == ncclSuccess)
        r = end;
    return r == ncclSuccess ? REMAT_OK : nccl_failed("ncclBroadcast", r);
}

remat_status remat_dist_device_sum(remat_dist_device *g, int64_t n, const int *owner, int64_t len,
                                   const double *mine, double *sum)
{
    if (!g || (n > 0 && !owner) || (len > 0 && !sum))
        return rmi_error(REMAT_ERR_NULL, "device sum: group, owner or sum is NULL");
    if (n < 0 || len < 0)
        return rmi_error(REMAT_ERR_ARG, "device sum: %lld items of %lld doubles", (long long)n, (long long)len);
    for (int64_t i = 0; i < n; i++)
        if (owner[i] < 0 || owner[i] >= g->size || (i > 0 && owner[i] < owner[i - 1]))
            return rmi_error(REMAT_ERR_ARG, "device sum: owner[%lld] = %d: owners must be ranks in "
                             "non-decreasing order (remat_dist_split's)", (long long)i, owner[i]);
    size_t bytes = sizeof(double) * (size_t)(n * len);
    if (bytes > g->all_bytes) { /* on every rank alike: the same sizes, the same history */
        remat_backend_free(g->be, g->all);
        g->all_bytes = 0;
        remat_status st = REMAT_OK;
        if (!(g->all = remat_backend_alloc(g->be, bytes)))
            st = rmi_error(REMAT_ERR_NOMEM, "device sum: %s", remat_last_error());
        /* a device out of memory on one rank: every rank learns it before NCCL's collectives */
        if ((st = remat_dist_agree(g->d, st)) != REMAT_OK)
            return st;
        g->all_bytes = bytes;
    }
    cudaSetDevice(g->device);
    remat_status st = n > 0 && len > 0 ? gather(g, n, owner, len, mine) : REMAT_OK;
    cudaError_t e = cudaSuccess;
    if (st == REMAT_OK) {
        e = rmi_cuda_ordered_sum(g->all, n, len, sum, g->stream);
        if (e == cudaSuccess)
            e = cudaStreamSynchronize(g->stream);
    }
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        st = rmi_error(REMAT_ERR_BACKEND, "device sum: %s", cudaGetErrorString(e));
    }
    ncclResult_t async = ncclSuccess;
    if (st == REMAT_OK && rmi_nccl.comm_get_async_error(g->comm, &async) == ncclSuccess && async != ncclSuccess)
        st = nccl_failed("the communicator", async);
    return st;
}

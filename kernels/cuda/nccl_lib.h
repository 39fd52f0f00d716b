/*
 * nccl_lib.h — NCCL opened at run time (dlopen of REMAT_NCCL_LIB,
 * "libnccl.so.2") by remat_dist_device_new, never linked: NCCL is no Debian
 * package, and a process that never reduces on a device does not load it.
 * The table holds the functions dist_nccl.cu calls; nccl_lib.c checks every
 * member's type against nccl.h's declaration. C and C++ include it.
 */
#ifndef REMAT_KERNELS_CUDA_NCCL_LIB_H
#define REMAT_KERNELS_CUDA_NCCL_LIB_H

#include <stddef.h>

#include <nccl.h>

#ifdef __cplusplus
extern "C" {
#endif

#define REMAT_NCCL_FUNCS(X)                                                                                        \
    X(get_unique_id, ncclGetUniqueId) X(comm_init_rank, ncclCommInitRank) X(comm_destroy, ncclCommDestroy)         \
    X(broadcast, ncclBroadcast) X(group_start, ncclGroupStart) X(group_end, ncclGroupEnd)                          \
    X(error_string, ncclGetErrorString) X(comm_get_async_error, ncclCommGetAsyncError)

typedef struct {
    ncclResult_t (*get_unique_id)(ncclUniqueId *unique_id);
    ncclResult_t (*comm_init_rank)(ncclComm_t *comm, int nranks, ncclUniqueId comm_id, int rank);
    ncclResult_t (*comm_destroy)(ncclComm_t comm);
    ncclResult_t (*broadcast)(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
                              ncclComm_t comm, cudaStream_t stream);
    ncclResult_t (*group_start)(void);
    ncclResult_t (*group_end)(void);
    const char *(*error_string)(ncclResult_t result);
    ncclResult_t (*comm_get_async_error)(ncclComm_t comm, ncclResult_t *async_error);
} remat_nccl_api;

extern remat_nccl_api rmi_nccl;

/* Opens REMAT_NCCL_LIB once per process and fills rmi_nccl; 0 with why
 * ("cannot load NCCL (libnccl.so.2): <dlerror>") otherwise. Thread-safe. */
int rmi_nccl_open(char *why, size_t why_size);

#ifdef __cplusplus
}
#endif

#endif

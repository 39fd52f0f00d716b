/*
 * cublas_lib.h — cuBLAS (and cublasLt, which it loads), opened by
 * remat_backend_cuda() (dlopen of the soname the build found,
 * REMAT_CUBLAS_LIB: "libcublas.so.13" with CUDA 13) instead of linked: a
 * process that never asks for the CUDA backend does not relocate them
 * (~75 ms of CPU at every start of the tool otherwise).
 *
 * The table holds the few functions dot.cu calls, under short names; the
 * REMAT_CUBLAS_FUNCS list pairs each with its exported symbol, and
 * cublas_lib.c checks every member's type against cublas_v2.h's
 * declaration. C and C++ (dot.cu) both include this header.
 */
#ifndef REMAT_KERNELS_CUDA_CUBLAS_LIB_H
#define REMAT_KERNELS_CUDA_CUBLAS_LIB_H

#include <stddef.h>

#include <cublas_v2.h>

#ifdef __cplusplus
extern "C" {
#endif

#define REMAT_CUBLAS_FUNCS(X)                                                                                     \
    X(create, cublasCreate_v2) X(destroy, cublasDestroy_v2) X(set_math_mode, cublasSetMathMode)                    \
    X(set_stream, cublasSetStream_v2) X(dgemm_strided_batched, cublasDgemmStridedBatched)                         \
    X(gemm_strided_batched_ex, cublasGemmStridedBatchedEx) X(status_string, cublasGetStatusString)

typedef struct {
    cublasStatus_t (*create)(cublasHandle_t *handle);
    cublasStatus_t (*destroy)(cublasHandle_t handle);
    cublasStatus_t (*set_math_mode)(cublasHandle_t handle, cublasMath_t mode);
    cublasStatus_t (*set_stream)(cublasHandle_t handle, cudaStream_t stream);
    cublasStatus_t (*dgemm_strided_batched)(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                            int m, int n, int k, const double *alpha, const double *A, int lda,
                                            long long int strideA, const double *B, int ldb, long long int strideB,
                                            const double *beta, double *C, int ldc, long long int strideC,
                                            int batchCount);
    cublasStatus_t (*gemm_strided_batched_ex)(cublasHandle_t handle, cublasOperation_t transa,
                                              cublasOperation_t transb, int m, int n, int k, const void *alpha,
                                              const void *A, cudaDataType Atype, int lda, long long int strideA,
                                              const void *B, cudaDataType Btype, int ldb, long long int strideB,
                                              const void *beta, void *C, cudaDataType Ctype, int ldc,
                                              long long int strideC, int batchCount,
                                              cublasComputeType_t computeType, cublasGemmAlgo_t algo);
    const char *(*status_string)(cublasStatus_t status);
} remat_cublas_api;

/* The table dot.cu calls through; filled by rmi_cublas_open(). */
extern remat_cublas_api rmi_cublas;

/* Opens REMAT_CUBLAS_LIB once per process (later calls give the first
 * answer) and fills rmi_cublas. 0 with why ("cannot load cuBLAS
 * (libcublas.so.13): <dlerror>") when it cannot be loaded. Thread-safe. */
int rmi_cublas_open(char *why, size_t why_size);

/* One attempt at loading lib into *api, nothing shared touched (the test's
 * seam for a missing library); the library stays loaded on success. */
int rmi_cublas_load(const char *lib, remat_cublas_api *api, char *why, size_t why_size);

#ifdef __cplusplus
}
#endif

#endif

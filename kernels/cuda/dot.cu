/*
 * dot.cu — dot_general's matrix products on cuBLAS (no hand-written GEMM);
 * the CPU reference is src/backend/cpu/dot_general.c, whose plan (which
 * operand is transposed into scratch, the gemm flags) backend.c reuses.
 *
 * The CPU calls cblas row-major: C (M,N) = op(A) (M,K) op(B) (K,N). cuBLAS
 * is column-major, where the same memory holds C^T = op(B)^T op(A)^T, so the
 * call swaps the operands and keeps the flags and leading dimensions:
 * gemm(tb, ta, N, M, K, B, ldb, A, lda, C, N), batched with strides M*K,
 * K*N, M*N. f32 computes in f32 (CUBLAS_COMPUTE_32F, no TF32), f64 in f64;
 * cuBLAS gives the same bits run to run on one GPU model, not the BLAS's
 * bits (a GEMM's summation order is the library's).
 *
 * cuBLAS is called through the table remat_backend_cuda() filled
 * (cublas_lib.h: dlopen at the backend's first use, not linked).
 *
 * Handles: one per state (rmi_cuda_state: a run's stream, used by one
 * thread at a time, as a handle must be), set to its stream before each call.
 */
#include <stdio.h>

#include "cublas_lib.h"
#include "cuda_util.cuh"

/* memory.cu: where cs keeps its handle */
cublasHandle_t *rmi_cuda_blas_slot(rmi_cuda_state *cs);

static bool blas_note(rmi_cuda_state *cs, cublasStatus_t st, const char *what)
{
    if (st == CUBLAS_STATUS_SUCCESS)
        return true;
    /* cuBLAS statuses are not cudaError_t: keep the first as a generic failure naming it */
    char buf[160];
    snprintf(buf, sizeof buf, "%s (%s)", what, rmi_cublas.status_string(st));
    return rmi_cuda_note(cs, cudaErrorUnknown, buf, __FILE__, __LINE__);
}

/* cs's handle, made on its device at the first gemm (a state is used by
 * one thread at a time, as a handle must be) */
static cublasHandle_t handle(rmi_cuda_state *cs)
{
    cublasHandle_t *slot = rmi_cuda_blas_slot(cs);
    if (!*slot) {
        cublasHandle_t h;
        (void)rmi_cuda_on(cs);
        if (!blas_note(cs, rmi_cublas.create(&h), "cublasCreate"))
            return NULL;
        /* f32 stays f32: no TF32 tensor-core rounding of the operands */
        if (!blas_note(cs, rmi_cublas.set_math_mode(h, CUBLAS_DEFAULT_MATH), "cublasSetMathMode")) {
            rmi_cublas.destroy(h);
            return NULL;
        }
        *slot = h;
    }
    return *slot;
}

extern "C" void rmi_cuda_gemm(rmi_cuda_state *cs, int f64, int a_trans, int b_trans, int64_t nb, int m, int n, int k,
                              const void *a, int lda, const void *b, int ldb, void *c)
{
    if (nb <= 0 || m <= 0 || n <= 0)
        return;
    const size_t es = f64 ? 8 : 4;
    if (k <= 0) { /* an empty contraction: zeros, as JAX */
        rmi_cuda_memset0(cs, c, (size_t)nb * (size_t)m * (size_t)n * es);
        return;
    }
    cublasHandle_t h = handle(cs);
    if (!h || !blas_note(cs, rmi_cublas.set_stream(h, rmi_cuda_on(cs)), "cublasSetStream"))
        return;
    const cublasOperation_t ta = a_trans ? CUBLAS_OP_T : CUBLAS_OP_N, tb = b_trans ? CUBLAS_OP_T : CUBLAS_OP_N;
    const long long sa = (long long)m * k, sb = (long long)k * n, sc = (long long)m * n;
    if (f64) {
        const double one = 1.0, zero = 0.0;
        blas_note(cs,
                  rmi_cublas.dgemm_strided_batched(h, tb, ta, n, m, k, &one, (const double *)b, ldb, sb,
                                                   (const double *)a, lda, sa, &zero, (double *)c, n, sc, (int)nb),
                  "cublasDgemmStridedBatched");
    } else {
        const float one = 1.0f, zero = 0.0f;
        blas_note(cs,
                  rmi_cublas.gemm_strided_batched_ex(h, tb, ta, n, m, k, &one, b, CUDA_R_32F, ldb, sb, a, CUDA_R_32F,
                                                     lda, sa, &zero, c, CUDA_R_32F, n, sc, (int)nb, CUBLAS_COMPUTE_32F,
                                                     CUBLAS_GEMM_DEFAULT),
                  "cublasGemmStridedBatchedEx");
    }
}

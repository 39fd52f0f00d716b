/*
 * dot_general.c — lax.dot_general through OpenBLAS gemm.
 *
 * Every dot_general is a batch of matrix products once each operand is viewed
 * as (B, free, contract) or (B, contract, free):
 *   lhs (B,M,K) or (B,K,M), rhs (B,N,K) or (B,K,N), out (B,M,N) with
 *   B = prod(batch dims), M = prod(lhs free), N = prod(rhs free),
 *   K = prod(contract dims), free dims in their original order (as JAX
 *   orders the output) and batch dims in the order the dimension numbers list.
 * An operand whose memory already has one of those layouts goes to gemm
 * directly (the choice is a transpose flag); otherwise it is transposed into
 * `scratch` as (B, free, contract). So the common products need no copy:
 *   x(M,K) @ w(K,N)               lhs NoTrans, rhs NoTrans
 *   g(M,N) . w(K,N)^T   -> (M,K)  contract (1),(1): lhs NoTrans, rhs Trans
 *   h(M,K)^T . g(M,N)   -> (K,N)  contract (0),(0): lhs Trans,   rhs NoTrans
 *   (B,M,K) @ (B,K,N)             batch (0),(0), one gemm per batch element.
 *
 * Layout checks ignore size-1 dims (they can sit anywhere without changing
 * the memory order). The contract dims must appear in the same pair order in
 * both operands; two pair orders are tried (sorted by lhs axis, sorted by rhs
 * axis) and the one that copies fewer bytes wins. The plan is
 * backend/dot_layout.c's, shared by the scratch query, this kernel and CUDA.
 */
#include <cblas.h>
#include <limits.h>
#include <string.h>

#include "backend/cpu/cpu_kernels.h"
#include "core/assert.h"

/* C (m x n, one of them 1) = op(A) op(B) in row-major as gemm would take them (A m x k or, transposed,
 * k x m; B k x n or n x k), as one dgemv over the operand that is a matrix */
static void gemv_f64(const double *a, const double *b, double *c, int m, int n, int k, int ta, int tb)
{
    memset(c, 0, sizeof *c * (size_t)m * (size_t)n);
    if (n == 1) /* c = op(A) b */
        cblas_dgemv(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, ta ? k : m, ta ? m : k, 1.0, a, ta ? m : k, b,
                    1, 0.0, c, 1);
    else /* c^T = op(B)^T a^T */
        cblas_dgemv(CblasRowMajor, tb ? CblasNoTrans : CblasTrans, tb ? n : k, tb ? k : n, 1.0, b, tb ? k : n, a,
                    1, 0.0, c, 1);
}

void rmi_cpu_dot_general(remat_dtype dt, void *out, const void *lhs, const remat_shape *lhs_shape,
                         const void *rhs, const remat_shape *rhs_shape, const remat_dot_dims *d,
                         void *scratch)
{
    const remat_dot_plan pl = rmi_layout_dot_general(dt, lhs_shape, rhs_shape, d);
    const size_t es = remat_dtype_size(dt);
    const int64_t nout = pl.nb * pl.m * pl.n;
    if (nout == 0)
        return;
    if (pl.k == 0) { /* empty contraction: JAX gives zeros */
        memset(out, 0, (size_t)nout * es);
        return;
    }
    REMAT_ASSERT(pl.m <= INT_MAX && pl.n <= INT_MAX && pl.k <= INT_MAX);

    const char *a = lhs, *b = rhs;
    char *sp = scratch;
    if (pl.lhs_copy) {
        REMAT_ASSERT(scratch != NULL);
        rmi_cpu_transpose(dt, sp, lhs, lhs_shape, pl.lhs_perm);
        a = sp;
        sp += (size_t)(pl.nb * pl.m * pl.k) * es;
    }
    if (pl.rhs_copy) {
        REMAT_ASSERT(scratch != NULL);
        rmi_cpu_transpose(dt, sp, rhs, rhs_shape, pl.rhs_perm);
        b = sp;
    }

    const int m = (int)pl.m, n = (int)pl.n, k = (int)pl.k;
    const enum CBLAS_TRANSPOSE ta = pl.lhs_trans ? CblasTrans : CblasNoTrans;
    const enum CBLAS_TRANSPOSE tb = pl.rhs_trans ? CblasTrans : CblasNoTrans;
    const int lda = pl.lhs_trans ? m : k, ldb = pl.rhs_trans ? k : n;
    const size_t a_step = (size_t)(pl.m * pl.k) * es, b_step = (size_t)(pl.k * pl.n) * es;
    const size_t c_step = (size_t)(pl.m * pl.n) * es;
    char *c = out;
    /* a matrix times a vector (n or m of 1, the gas mechanisms' products and their transposes): gemv,
     * which reads the matrix once; OpenBLAS's gemm would first pack the whole matrix for one column */
    if (dt == REMAT_F64 && (n == 1 || m == 1) && m + n > 2) {
        for (int64_t i = 0; i < pl.nb; i++, a += a_step, b += b_step, c += c_step)
            gemv_f64((const double *)(const void *)a, (const double *)(const void *)b, (double *)(void *)c, m, n,
                     k, pl.lhs_trans, pl.rhs_trans);
        return;
    }
    for (int64_t i = 0; i < pl.nb; i++, a += a_step, b += b_step, c += c_step) {
        if (dt == REMAT_F32)
            cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, 1.0f, (const float *)(const void *)a, lda,
                        (const float *)(const void *)b, ldb, 0.0f, (float *)(void *)c, n);
        else
            cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, 1.0, (const double *)(const void *)a, lda,
                        (const double *)(const void *)b, ldb, 0.0, (double *)(void *)c, n);
    }
}

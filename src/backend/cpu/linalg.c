/*
 * linalg.c — linear_solve: x = A^{-1} b (or A^{-T} b) for every matrix of
 * a batch, A (B, n, n) row-major, b and x (B, n, k).
 *
 * Small systems (n <= REMAT_CPU_SOLVE_SMALL_N) are solved by the Gaussian
 * elimination below, whose every operation a compiled scan loop repeats
 * (src/scan/scan_lanes_solve.c), so interpreted and compiled bodies agree
 * bit for bit. Larger ones go to LAPACK's getrf/getrs (OpenBLAS ships
 * them; Fortran symbols, Debian's libopenblas-dev has no lapacke.h).
 * Singular A: no error (a kernel cannot return one); the zero pivot is
 * divided by and x holds inf/nan, as JAX's solve on CPU.
 */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "backend/cpu/cpu_kernels.h"
#include "core/assert.h"

/* LAPACK, Fortran calling convention (the trailing length of TRANS is
 * gfortran's hidden argument; OpenBLAS's C implementation ignores it) */
void sgetrf_(const int *m, const int *n, float *a, const int *lda, int *ipiv, int *info);
void dgetrf_(const int *m, const int *n, double *a, const int *lda, int *ipiv, int *info);
void sgetrs_(const char *trans, const int *n, const int *nrhs, const float *a, const int *lda, const int *ipiv,
             float *b, const int *ldb, int *info, size_t trans_len);
void dgetrs_(const char *trans, const int *n, const int *nrhs, const double *a, const int *lda, const int *ipiv,
             double *b, const int *ldb, int *info, size_t trans_len);

/*
 * Gaussian elimination with partial pivoting on M (n, n) = A or A^T and X
 * (n, k) = b, in place; X becomes the solution. Column c's pivot: rows
 * c+1.. in turn are swapped into row c when larger in magnitude than what
 * row c holds now (strictly: the first of equal maxima stays, as LAPACK's
 * i?amax); a swap moves the old row c to the candidate's place, so the rows
 * below can end in another order than LAPACK's single swap, which only
 * matters for ties further down. Then row i loses l = M[i][c] / M[c][c]
 * times row c (columns c+1.., and X), and back substitution sums
 * X[i] - M[i][j] X[j] for j = i+1.. in order and divides by M[i][i].
 * Branch-free in the lanes: a compare and selects per candidate row.
 */
#define GE_SMALL(T, NAME, ABS)                                                       \
    static void NAME(int n, int k, T *M, T *X)                                       \
    {                                                                                \
        for (int c = 0; c < n; c++) {                                                \
            for (int i = c + 1; i < n; i++)                                          \
                if (ABS(M[i * n + c]) > ABS(M[c * n + c])) {                         \
                    for (int j = c; j < n; j++) {                                    \
                        T t = M[c * n + j];                                          \
                        M[c * n + j] = M[i * n + j], M[i * n + j] = t;               \
                    }                                                                \
                    for (int q = 0; q < k; q++) {                                    \
                        T t = X[c * k + q];                                          \
                        X[c * k + q] = X[i * k + q], X[i * k + q] = t;               \
                    }                                                                \
                }                                                                    \
            for (int i = c + 1; i < n; i++) {                                        \
                const T l = M[i * n + c] / M[c * n + c];                             \
                for (int j = c + 1; j < n; j++)                                      \
                    M[i * n + j] = M[i * n + j] - l * M[c * n + j];                  \
                for (int q = 0; q < k; q++)                                          \
                    X[i * k + q] = X[i * k + q] - l * X[c * k + q];                  \
            }                                                                        \
        }                                                                            \
        for (int i = n - 1; i >= 0; i--)                                             \
            for (int q = 0; q < k; q++) {                                            \
                T s = X[i * k + q];                                                  \
                for (int j = i + 1; j < n; j++)                                      \
                    s = s - M[i * n + j] * X[j * k + q];                             \
                X[i * k + q] = s / M[i * n + i];                                     \
            }                                                                        \
    }
GE_SMALL(float, ge_small_f32, fabsf)
GE_SMALL(double, ge_small_f64, fabs)
#undef GE_SMALL

/* LAPACK sees the row-major A as its transpose (column-major), so it
 * factors A^T: A x = b is its transposed solve ('T'), A^T x = b its plain
 * one ('N'). X (n, k) row-major goes through column-major B when k > 1. */
#define GE_LAPACK(T, NAME, GETRF, GETRS)                                              \
    static void NAME(int n, int k, int transpose, const T *A, T *X, T *M, T *Bc, int *ipiv) \
    {                                                                                 \
        int info = 0;                                                                 \
        memcpy(M, A, sizeof(T) * (size_t)n * (size_t)n);                              \
        GETRF(&n, &n, M, &n, ipiv, &info);                                            \
        REMAT_ASSERT(info >= 0); /* > 0: singular, the solve divides by the zero */ \
        T *B = k == 1 ? X : Bc;                                                       \
        if (k > 1)                                                                    \
            for (int i = 0; i < n; i++)                                               \
                for (int q = 0; q < k; q++)                                           \
                    B[(size_t)q * (size_t)n + (size_t)i] = X[(size_t)i * (size_t)k + (size_t)q]; \
        GETRS(transpose ? "N" : "T", &n, &k, M, &n, ipiv, B, &n, &info, 1);           \
        REMAT_ASSERT(info == 0);                                                      \
        if (k > 1)                                                                    \
            for (int i = 0; i < n; i++)                                               \
                for (int q = 0; q < k; q++)                                           \
                    X[(size_t)i * (size_t)k + (size_t)q] = B[(size_t)q * (size_t)n + (size_t)i]; \
    }
GE_LAPACK(float, ge_lapack_f32, sgetrf_, sgetrs_)
GE_LAPACK(double, ge_lapack_f64, dgetrf_, dgetrs_)
#undef GE_LAPACK

size_t remat_cpu_linear_solve_scratch(remat_dtype dt, int64_t n, int64_t k)
{
    size_t e = remat_dtype_size(dt), nn = (size_t)n * (size_t)n;
    if (n <= REMAT_CPU_SOLVE_SMALL_N)
        return e * nn;
    return e * (nn + (k > 1 ? (size_t)n * (size_t)k : 0)) + sizeof(int) * (size_t)n;
}

#define SOLVE_BATCH(T, SMALL, LAPACK)                                                          \
    do {                                                                                       \
        const T *a = A;                                                                        \
        T *x = out, *M = scratch;                                                              \
        T *Bc = M + (size_t)n * (size_t)n;                                                     \
        int *ipiv = (int *)(void *)(Bc + (k > 1 ? (size_t)n * (size_t)k : 0));                 \
        memcpy(x, b, sizeof(T) * (size_t)(batch * n * k));                                     \
        for (int64_t s = 0; s < batch; s++, a += n * n, x += n * k) {                          \
            if (n > REMAT_CPU_SOLVE_SMALL_N) {                                                 \
                LAPACK((int)n, (int)k, transpose, a, x, M, Bc, ipiv);                          \
                continue;                                                                      \
            }                                                                                  \
            if (transpose)                                                                     \
                for (int64_t i = 0; i < n; i++)                                                \
                    for (int64_t j = 0; j < n; j++)                                            \
                        M[i * n + j] = a[j * n + i];                                           \
            else                                                                               \
                memcpy(M, a, sizeof(T) * (size_t)(n * n));                                     \
            SMALL((int)n, (int)k, M, x);                                                       \
        }                                                                                      \
    } while (0)

void remat_cpu_linear_solve(remat_dtype dt, void *out, const void *A, const void *b, int64_t batch, int64_t n,
                            int64_t k, int transpose, void *scratch)
{
    REMAT_ASSERT(n >= 1 && n <= INT32_MAX && k <= INT32_MAX);
    if (batch == 0 || k == 0)
        return;
    switch (dt) {
    case REMAT_F32: SOLVE_BATCH(float, ge_small_f32, ge_lapack_f32); return;
    case REMAT_F64: SOLVE_BATCH(double, ge_small_f64, ge_lapack_f64); return;
    default: REMAT_UNREACHABLE("cpu: linear_solve of a non-float dtype");
    }
}

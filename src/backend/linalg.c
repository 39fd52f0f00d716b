/*
 * linalg.c — lu and linear_solve: A = the packed factorisation of each
 * matrix of a batch (A (B, n, n) row-major), then x = A^{-1} b or A^{-T} b
 * with it (b and x (B, n, k)).
 *
 * Small systems (n <= REMAT_LU_SMALL_N) use the elimination below, whose
 * every operation a compiled scan loop repeats (src/lanes/solve.c),
 * so interpreted and compiled bodies agree bit for bit. Larger ones go to
 * LAPACK's getrf/getrs (OpenBLAS ships them; Fortran symbols, Debian's
 * libopenblas-dev has no lapacke.h). Singular A: no error (a kernel cannot
 * return one); the zero pivot is divided by and x holds inf/nan, as JAX's
 * solve on CPU.
 */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "backend/linalg.h"
#include "remat/op.h"
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
 * Small n: Gaussian elimination with partial pivoting into P (n, 2n). For
 * column c the rows below, in turn, are swapped into row c when larger in
 * magnitude than what row c holds now (strictly: the first of equal maxima
 * stays, as LAPACK's i?amax); the swap moves the old row c to the
 * candidate's place, so the rows below can end in another order than
 * LAPACK's single swap, which matters only for ties further down. A swap
 * exchanges columns c.. only (the multipliers of earlier columns stay
 * where their step put them) and sets flag P[i][n + c] = 1. Then
 * l = P[i][c] / P[c][c] is stored in P[i][c] and row i loses l times row c
 * (columns c+1..).
 *
 * Solving A x = b replays each step on x: its swaps, then x[i] - l x[c];
 * then back substitution, x[i] - U[i][j] x[j] for j = i+1.. in order, / U[i][i].
 * A^T x = b: U^T z = b forward (z[i] - U[j][i] z[j], j = 0.., / U[i][i]),
 * then the steps undone backwards: z[c] - l[i][c] z[i] for i = c+1.. in
 * order, and step c's swaps in reverse order.
 */
#define ELIM(T, SFX, ABS)                                                                    \
    static void lu_small_##SFX(int n, const T *A, T *P)                                      \
    {                                                                                        \
        const int w = 2 * n;                                                                 \
        for (int i = 0; i < n; i++)                                                          \
            for (int j = 0; j < w; j++)                                                      \
                P[i * w + j] = j < n ? A[i * n + j] : (T)0;                                  \
        for (int c = 0; c < n; c++) {                                                        \
            for (int i = c + 1; i < n; i++)                                                  \
                if (ABS(P[i * w + c]) > ABS(P[c * w + c])) {                                 \
                    P[i * w + n + c] = (T)1;                                                 \
                    for (int j = c; j < n; j++) {                                            \
                        T t = P[c * w + j];                                                  \
                        P[c * w + j] = P[i * w + j], P[i * w + j] = t;                       \
                    }                                                                        \
                }                                                                            \
            for (int i = c + 1; i < n; i++) {                                                \
                const T l = P[i * w + c] / P[c * w + c];                                     \
                P[i * w + c] = l;                                                            \
                for (int j = c + 1; j < n; j++)                                              \
                    P[i * w + j] = P[i * w + j] - l * P[c * w + j];                          \
            }                                                                                \
        }                                                                                    \
    }                                                                                        \
    static void swap_rows_##SFX(T *X, int k, int a, int b)                                   \
    {                                                                                        \
        for (int q = 0; q < k; q++) {                                                        \
            T t = X[a * k + q];                                                              \
            X[a * k + q] = X[b * k + q], X[b * k + q] = t;                                   \
        }                                                                                    \
    }                                                                                        \
    static void solve_small_##SFX(int n, int k, int transpose, const T *P, T *X)             \
    {                                                                                        \
        const int w = 2 * n;                                                                 \
        if (!transpose) {                                                                    \
            for (int c = 0; c < n; c++) {                                                    \
                for (int i = c + 1; i < n; i++)                                              \
                    if (P[i * w + n + c] != (T)0)                                            \
                        swap_rows_##SFX(X, k, c, i);                                         \
                for (int i = c + 1; i < n; i++)                                              \
                    for (int q = 0; q < k; q++)                                              \
                        X[i * k + q] = X[i * k + q] - P[i * w + c] * X[c * k + q];           \
            }                                                                                \
            for (int i = n - 1; i >= 0; i--)                                                 \
                for (int q = 0; q < k; q++) {                                                \
                    T s = X[i * k + q];                                                      \
                    for (int j = i + 1; j < n; j++)                                          \
                        s = s - P[i * w + j] * X[j * k + q];                                 \
                    X[i * k + q] = s / P[i * w + i];                                         \
                }                                                                            \
            return;                                                                          \
        }                                                                                    \
        for (int i = 0; i < n; i++)                                                          \
            for (int q = 0; q < k; q++) {                                                    \
                T s = X[i * k + q];                                                          \
                for (int j = 0; j < i; j++)                                                  \
                    s = s - P[j * w + i] * X[j * k + q];                                     \
                X[i * k + q] = s / P[i * w + i];                                             \
            }                                                                                \
        for (int c = n - 2; c >= 0; c--) {                                                   \
            for (int q = 0; q < k; q++) {                                                    \
                T s = X[c * k + q];                                                          \
                for (int i = c + 1; i < n; i++)                                              \
                    s = s - P[i * w + c] * X[i * k + q];                                     \
                X[c * k + q] = s;                                                            \
            }                                                                                \
            for (int i = n - 1; i > c; i--)                                                  \
                if (P[i * w + n + c] != (T)0)                                                \
                    swap_rows_##SFX(X, k, c, i);                                             \
        }                                                                                    \
    }
ELIM(float, f32, fabsf)
ELIM(double, f64, fabs)
#undef ELIM

/* Large n: P (n, n + 1) row-major is, to LAPACK (column-major, lda n + 1),
 * A^T in its first n rows and the pivots (as floats) in row n, so A x = b
 * is its transposed solve ('T') and A^T x = b its plain one ('N'). X (n, k)
 * row-major goes through column-major B when k > 1. */
#define LAPACK(T, SFX, GETRF, GETRS)                                                          \
    static void lu_lapack_##SFX(int n, const T *A, T *P, int *ipiv)                           \
    {                                                                                         \
        int info = 0, lda = n + 1;                                                            \
        for (int i = 0; i < n; i++)                                                           \
            memcpy(P + (size_t)i * (size_t)lda, A + (size_t)i * (size_t)n, sizeof(T) * (size_t)n); \
        GETRF(&n, &n, P, &lda, ipiv, &info);                                                  \
        REMAT_ASSERT(info >= 0); /* > 0: singular, the solve divides by the zero */          \
        for (int i = 0; i < n; i++)                                                           \
            P[(size_t)i * (size_t)lda + (size_t)n] = (T)ipiv[i];                              \
    }                                                                                         \
    static void solve_lapack_##SFX(int n, int k, int transpose, const T *P, T *X, T *Bc, int *ipiv) \
    {                                                                                         \
        int info = 0, lda = n + 1;                                                            \
        for (int i = 0; i < n; i++)                                                           \
            ipiv[i] = (int)P[(size_t)i * (size_t)lda + (size_t)n];                            \
        T *B = k == 1 ? X : Bc;                                                               \
        if (k > 1)                                                                            \
            for (int i = 0; i < n; i++)                                                       \
                for (int q = 0; q < k; q++)                                                   \
                    B[(size_t)q * (size_t)n + (size_t)i] = X[(size_t)i * (size_t)k + (size_t)q]; \
        GETRS(transpose ? "N" : "T", &n, &k, P, &lda, ipiv, B, &n, &info, 1);                 \
        REMAT_ASSERT(info == 0);                                                              \
        if (k > 1)                                                                            \
            for (int i = 0; i < n; i++)                                                       \
                for (int q = 0; q < k; q++)                                                   \
                    X[(size_t)i * (size_t)k + (size_t)q] = B[(size_t)q * (size_t)n + (size_t)i]; \
    }
LAPACK(float, f32, sgetrf_, sgetrs_)
LAPACK(double, f64, dgetrf_, dgetrs_)
#undef LAPACK

int64_t rmi_host_lu_cols(int64_t n) { return n <= REMAT_LU_SMALL_N ? 2 * n : n + 1; }

size_t rmi_host_lu_scratch(int64_t n) { return n <= REMAT_LU_SMALL_N ? 0 : sizeof(int) * (size_t)n; }

size_t rmi_host_linear_solve_scratch(remat_dtype dt, int64_t n, int64_t k)
{
    if (n <= REMAT_LU_SMALL_N)
        return 0;
    return remat_dtype_size(dt) * (k > 1 ? (size_t)n * (size_t)k : 0) + sizeof(int) * (size_t)n;
}

#define LU_BATCH(T, SFX)                                                                     \
    do {                                                                                     \
        const T *a = A;                                                                      \
        T *p = out;                                                                          \
        for (int64_t s = 0; s < batch; s++, a += n * n, p += n * rmi_host_lu_cols(n)) {       \
            if (n <= REMAT_LU_SMALL_N)                                                       \
                lu_small_##SFX((int)n, a, p);                                                \
            else                                                                             \
                lu_lapack_##SFX((int)n, a, p, scratch);                                      \
        }                                                                                    \
    } while (0)

void rmi_host_lu(remat_dtype dt, void *out, const void *A, int64_t batch, int64_t n, void *scratch)
{
    REMAT_ASSERT(n >= 1 && n < INT32_MAX);
    switch (dt) {
    case REMAT_F32: LU_BATCH(float, f32); return;
    case REMAT_F64: LU_BATCH(double, f64); return;
    default: REMAT_UNREACHABLE("cpu: lu of a non-float dtype");
    }
}

#define SOLVE_BATCH(T, SFX)                                                                  \
    do {                                                                                     \
        const T *p = P;                                                                      \
        T *x = out, *Bc = scratch;                                                           \
        int *ipiv = (int *)(void *)(Bc + (k > 1 ? (size_t)n * (size_t)k : 0));                \
        memcpy(x, b, sizeof(T) * (size_t)(batch * n * k));                                   \
        for (int64_t s = 0; s < batch; s++, p += n * rmi_host_lu_cols(n), x += n * k) {       \
            if (n <= REMAT_LU_SMALL_N)                                                       \
                solve_small_##SFX((int)n, (int)k, transpose, p, x);                          \
            else                                                                             \
                solve_lapack_##SFX((int)n, (int)k, transpose, p, x, Bc, ipiv);               \
        }                                                                                    \
    } while (0)

void rmi_host_linear_solve(remat_dtype dt, void *out, const void *P, const void *b, int64_t batch, int64_t n,
                           int64_t k, int transpose, void *scratch)
{
    REMAT_ASSERT(n >= 1 && n < INT32_MAX && k < INT32_MAX);
    if (batch == 0 || k == 0)
        return;
    switch (dt) {
    case REMAT_F32: SOLVE_BATCH(float, f32); return;
    case REMAT_F64: SOLVE_BATCH(double, f64); return;
    default: REMAT_UNREACHABLE("cpu: linear_solve of a non-float dtype");
    }
}

/*
 * ew_math.cuh (internal) — one element of every elementwise op, shared by
 * the single-op kernels and the fused-group kernel (elementwise.cu), so
 * fused and unfused give the same bits, as on the CPU.
 *
 * The expressions are src/backend/cpu/elementwise.c's, element for element.
 * Built with -fmad=false -prec-div=true -prec-sqrt=true: +, -, *, /, sqrt
 * are single IEEE operations rounded to T, as on the CPU, so those ops (and
 * integer_pow, relu, square, max/min, compares, select) match the CPU bit for
 * bit. exp, log, sin, cos, tanh, erf and pow are CUDA's libdevice functions:
 * within CUDA's documented ulp bounds (kernels/README.md), not glibc's bits.
 */
#ifndef REMAT_EW_MATH_CUH
#define REMAT_EW_MATH_CUH

#include "remat/op.h"

__device__ __forceinline__ float m_exp(float x) { return expf(x); }
__device__ __forceinline__ double m_exp(double x) { return exp(x); }
__device__ __forceinline__ float m_log(float x) { return logf(x); }
__device__ __forceinline__ double m_log(double x) { return log(x); }
__device__ __forceinline__ float m_sin(float x) { return sinf(x); }
__device__ __forceinline__ double m_sin(double x) { return sin(x); }
__device__ __forceinline__ float m_cos(float x) { return cosf(x); }
__device__ __forceinline__ double m_cos(double x) { return cos(x); }
__device__ __forceinline__ float m_tanh(float x) { return tanhf(x); }
__device__ __forceinline__ double m_tanh(double x) { return tanh(x); }
__device__ __forceinline__ float m_sqrt(float x) { return sqrtf(x); }
__device__ __forceinline__ double m_sqrt(double x) { return sqrt(x); }
__device__ __forceinline__ float m_erf(float x) { return erff(x); }
__device__ __forceinline__ double m_erf(double x) { return erf(x); }
__device__ __forceinline__ float m_log1p(float x) { return log1pf(x); }
__device__ __forceinline__ double m_log1p(double x) { return log1p(x); }
__device__ __forceinline__ float m_expm1(float x) { return expm1f(x); }
__device__ __forceinline__ float m_erfinv(float x) { return erfinvf(x); }
__device__ __forceinline__ double m_erfinv(double x) { return erfinv(x); }
__device__ __forceinline__ double m_expm1(double x) { return expm1(x); }
__device__ __forceinline__ float m_pow(float x, float p) { return powf(x, p); }
__device__ __forceinline__ double m_pow(double x, double p) { return pow(x, p); }

/* op: category UNARY, parameter kind NONE. An op without a case gives NaN
 * (lowering never passes one: backend.c checks the category). */
template <typename T> __device__ __forceinline__ T ew_unary(int op, T x)
{
    switch (op) {
    case REMAT_OP_NEG: return -x;
    case REMAT_OP_EXP: return m_exp(x);
    case REMAT_OP_LOG: return m_log(x);
    case REMAT_OP_SIN: return m_sin(x);
    case REMAT_OP_COS: return m_cos(x);
    case REMAT_OP_TANH: return m_tanh(x);
    case REMAT_OP_RELU: return x <= (T)0 ? (T)0 : x; /* relu(NaN) = NaN */
    case REMAT_OP_SQUARE: return x * x;
    case REMAT_OP_SQRT: return m_sqrt(x);
    case REMAT_OP_ERF: return m_erf(x);
    case REMAT_OP_LOG1P: return m_log1p(x);
    case REMAT_OP_EXPM1: return m_expm1(x);
    case REMAT_OP_ERF_INV: return m_erfinv(x);
    case REMAT_OP_LOGISTIC: return (T)1 / ((T)1 + m_exp(-x)); /* lax.logistic as written */
    default: return (T)NAN;
    }
}

/* BINARY or COMPARE; max/min propagate NaN from either side, ties give y */
template <typename T> __device__ __forceinline__ T ew_binary(int op, T x, T y)
{
    switch (op) {
    case REMAT_OP_ADD: return x + y;
    case REMAT_OP_SUB: return x - y;
    case REMAT_OP_MUL: return x * y;
    case REMAT_OP_DIV: return x / y;
    case REMAT_OP_MAX: return (x > y || x != x) ? x : y;
    case REMAT_OP_MIN: return (x < y || x != x) ? x : y;
    case REMAT_OP_GT: return x > y ? (T)1 : (T)0;
    case REMAT_OP_GE: return x >= y ? (T)1 : (T)0;
    case REMAT_OP_LT: return x < y ? (T)1 : (T)0;
    case REMAT_OP_LE: return x <= y ? (T)1 : (T)0;
    case REMAT_OP_EQ: return x == y ? (T)1 : (T)0;
    case REMAT_OP_NE: return x != y ? (T)1 : (T)0;
    default: return (T)NAN;
    }
}

/* lax.integer_pow's square-and-multiply order (the CPU's general loop; its
 * special cases for k in -2..4 are the same products) */
template <typename T> __device__ __forceinline__ T ew_integer_pow(T x, int k)
{
    const unsigned mag = k < 0 ? 0u - (unsigned)k : (unsigned)k;
    T acc = (T)1;
    int have = 0;
    for (unsigned e = mag; e; e >>= 1) {
        if (e & 1u) {
            acc = have ? acc * x : x;
            have = 1;
        }
        if (e >> 1)
            x = x * x;
    }
    return k < 0 ? (T)1 / acc : acc;
}

/* a NaN predicate is != 0: on_true */
template <typename T> __device__ __forceinline__ T ew_select(T pred, T t, T f) { return pred != (T)0 ? t : f; }

#endif

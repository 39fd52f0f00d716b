/*
 * elementwise.c — unary, binary, compare, select, powers and dtype conversion
 * on dense arrays of n elements, f32 and f64.
 *
 * Each kernel switches on the op once and then runs one tight loop per op over
 * restrict-qualified pointers, so that gcc vectorises the arithmetic ones at
 * -O3 (the release build). The kernels are also called on tiny arrays (n = 1..3,
 * ODE right-hand sides) thousands of times per step, so there is no per-call
 * setup: no allocation, no tables, nothing but the switch.
 *
 * The f32 and f64 kernels are generated from one macro so they cannot drift
 * apart. exp, log, sin, cos, tanh, erf and pow are SLEEF's vectorised u10
 * functions (vmath.h: within 1 ulp, the bits of the compiled lane programs'
 * scalar calls); f32 uses the float functions, never a round trip through
 * double, as XLA's CPU backend does. sqrt is IEEE's, exactly rounded.
 */
#include <math.h>
#include <string.h>

#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/vmath.h"
#include "core/assert.h"
#include "core/exhaustive.h"

/* The loops that are plain IEEE arithmetic, compares and selects are built
 * for AVX-512F, AVX2 and the baseline, chosen once at load (an ifunc): the
 * fused interpreter runs them on L1-resident 256-element blocks, where the
 * baseline's SSE2 vectors made them compute-bound (the FFN's LayerNorm and
 * gelu, recomputed under remat policies). The bits are the baseline's: each
 * element is one correctly rounded operation whatever the width, and the
 * project's -ffp-contract=off keeps multiply-adds unfused in every clone. */
/* VEC_CLONES: cpu_kernels.h */

/* One loop per op; `x` (and `y`) name the current element(s). T is the
 * element type, #defined around each instantiation below. */
#define MAP1(expr)                   \
    for (size_t i = 0; i < n; i++) { \
        const T x = a[i];            \
        out[i] = (expr);             \
    }                                \
    return

#define MAP2(expr)                   \
    for (size_t i = 0; i < n; i++) { \
        const T x = a[i], y = b[i];  \
        out[i] = (expr);             \
    }                                \
    return

/* the same with one operand a scalar broadcast to n (a splat constant) */
#define MAP2_RS(expr)                \
    for (size_t i = 0; i < n; i++) { \
        const T x = a[i], y = b[0];  \
        out[i] = (expr);             \
    }                                \
    return

#define MAP2_LS(expr)                \
    for (size_t i = 0; i < n; i++) { \
        const T x = a[0], y = b[i];  \
        out[i] = (expr);             \
    }                                \
    return

/* The per-op switches below name every op (core/exhaustive.h): an op added
 * to REMAT_OP_LIST does not compile here until it has its kernel case, or is
 * listed with the ops these kernels never see. */
#define UNARY_LABELS                                                                         \
    case REMAT_OP_NEG: case REMAT_OP_EXP: case REMAT_OP_LOG: case REMAT_OP_SIN: case REMAT_OP_COS: \
    case REMAT_OP_TANH: case REMAT_OP_RELU: case REMAT_OP_SQUARE: case REMAT_OP_SQRT: case REMAT_OP_ERF: \
    case REMAT_OP_LOG1P: case REMAT_OP_EXPM1: case REMAT_OP_LOGISTIC: case REMAT_OP_ERF_INV
#define BINARY_LABELS                                                                        \
    case REMAT_OP_ADD: case REMAT_OP_SUB: case REMAT_OP_MUL: case REMAT_OP_DIV: case REMAT_OP_MAX: \
    case REMAT_OP_MIN: case REMAT_OP_GT: case REMAT_OP_GE: case REMAT_OP_LT: case REMAT_OP_LE:     \
    case REMAT_OP_EQ: case REMAT_OP_NE
/* kernels of their own (powers, select, convert) or not elementwise */
#define OTHER_LABELS                                                                         \
    case REMAT_OP_INTEGER_POW: case REMAT_OP_POW: case REMAT_OP_SELECT: case REMAT_OP_CONVERT:    \
    case REMAT_OP_CONSTANT: case REMAT_OP_ARG: case REMAT_OP_SUM: case REMAT_OP_REDUCE_MAX:        \
    case REMAT_OP_BROADCAST: case REMAT_OP_RESHAPE: case REMAT_OP_TRANSPOSE: case REMAT_OP_SLICE:  \
    case REMAT_OP_PAD: case REMAT_OP_CONCATENATE: case REMAT_OP_DOT_GENERAL: case REMAT_OP_NAME:   \
    case REMAT_OP_LU: case REMAT_OP_LINEAR_SOLVE:                                                \
    case REMAT_OP_STOP_GRADIENT: case REMAT_OP_CHECKPOINT: case REMAT_OP_PROJ: case REMAT_OP_CUSTOM: \
    case REMAT_OP_CUSTOM_VJP: case REMAT_OP_HOP: case REMAT_OP_COUNT

/* The switch of a binary kernel, for one of the MAP2 loop shapes. */
#define BINARY_SWITCH(MAP)                                                              \
    switch (op) {                                                                       \
    case REMAT_OP_ADD: MAP(x + y);                                                      \
    case REMAT_OP_SUB: MAP(x - y);                                                      \
    case REMAT_OP_MUL: MAP(x * y);                                                      \
    case REMAT_OP_DIV: MAP(x / y);                                                      \
    case REMAT_OP_MAX: MAP((x > y || x != x) ? x : y);                                  \
    case REMAT_OP_MIN: MAP((x < y || x != x) ? x : y);                                  \
    case REMAT_OP_GT: MAP(x > y ? (T)1 : (T)0);                                         \
    case REMAT_OP_GE: MAP(x >= y ? (T)1 : (T)0);                                        \
    case REMAT_OP_LT: MAP(x < y ? (T)1 : (T)0);                                         \
    case REMAT_OP_LE: MAP(x <= y ? (T)1 : (T)0);                                        \
    case REMAT_OP_EQ: MAP(x == y ? (T)1 : (T)0);                                        \
    case REMAT_OP_NE: MAP(x != y ? (T)1 : (T)0);                                        \
    UNARY_LABELS: OTHER_LABELS: REMAT_UNREACHABLE("remat_cpu_binary: not a binary elementwise op"); \
    }

/*
 * RELU: x <= 0 is false for NaN, so NaN passes through (relu(NaN) = NaN).
 * MAX/MIN: JAX's lax.max/min propagate NaN from either side (unlike C fmax).
 * Written as "(x > y || x != x) ? x : y": a NaN x is picked by the second
 * test, a NaN y wins because both tests fail; ties (including +0/-0) give y.
 *
 * integer_pow uses exactly lax.integer_pow's square-and-multiply order
 * (acc starts at the lowest set bit's power, then acc * x^(2^j) going up):
 * the same products JAX's lowering computes, so the roundings agree. Small
 * exponents get a loop of their own (vectorised, no bit loop per element).
 */
#define DEFINE_ELEMENTWISE(SFX, SQRT)                                                       \
    VEC_CLONES static void vec_unary_##SFX(remat_op op, size_t n, T *restrict out, const T *restrict a)    \
    {                                                                                        \
        switch (op) {                                                                        \
        case REMAT_OP_NEG: MAP1(-x);                                                         \
        case REMAT_OP_EXP: rmi_vm_map_##SFX(RMI_VM_EXP, n, out, a, 0); return;               \
        case REMAT_OP_LOG: rmi_vm_map_##SFX(RMI_VM_LOG, n, out, a, 0); return;               \
        case REMAT_OP_SIN: rmi_vm_map_##SFX(RMI_VM_SIN, n, out, a, 0); return;               \
        case REMAT_OP_COS: rmi_vm_map_##SFX(RMI_VM_COS, n, out, a, 0); return;               \
        case REMAT_OP_TANH: rmi_vm_map_##SFX(RMI_VM_TANH, n, out, a, 0); return;             \
        case REMAT_OP_RELU: MAP1(x <= (T)0 ? (T)0 : x);                                      \
        case REMAT_OP_SQUARE: MAP1(x * x);                                                   \
        case REMAT_OP_SQRT: MAP1(SQRT(x));                                                   \
        case REMAT_OP_ERF: rmi_vm_map_##SFX(RMI_VM_ERF, n, out, a, 0); return;               \
        case REMAT_OP_LOG1P: rmi_vm_map_##SFX(RMI_VM_LOG1P, n, out, a, 0); return;           \
        case REMAT_OP_EXPM1: rmi_vm_map_##SFX(RMI_VM_EXPM1, n, out, a, 0); return;           \
        case REMAT_OP_ERF_INV: rmi_vm_erfinv_map_##SFX(n, out, a); return;                   \
        case REMAT_OP_LOGISTIC: /* 1 / (1 + exp(-x)), as jit_gen.c emits it */               \
            for (size_t i = 0; i < n; i++)                                                   \
                out[i] = -a[i];                                                              \
            rmi_vm_map_##SFX(RMI_VM_EXP, n, out, out, 0);                                    \
            for (size_t i = 0; i < n; i++)                                                   \
                out[i] = (T)1 / ((T)1 + out[i]);                                             \
            return;                                                                          \
        BINARY_LABELS: OTHER_LABELS: REMAT_UNREACHABLE("remat_cpu_unary: not a unary elementwise op"); \
        }                                                                                    \
    }                                                                                        \
                                                                                             \
    VEC_CLONES static void vec_integer_pow_##SFX(size_t n, T *restrict out, const T *restrict a, int k)    \
    {                                                                                        \
        switch (k) {                                                                         \
        case 0: MAP1(((void)x, (T)1));                                                       \
        case 1: MAP1(x);                                                                     \
        case 2: MAP1(x * x);                                                                 \
        case 3: MAP1(x * (x * x));                                                           \
        case 4: MAP1((x * x) * (x * x));                                                     \
        case -1: MAP1((T)1 / x);                                                             \
        case -2: MAP1((T)1 / (x * x));                                                       \
        default: break;                                                                      \
        }                                                                                    \
        /* negate in unsigned so k = INT_MIN is well defined */                              \
        const unsigned mag = k < 0 ? 0u - (unsigned)k : (unsigned)k;                         \
        for (size_t i = 0; i < n; i++) {                                                     \
            T x = a[i], acc = (T)1;                                                          \
            int have = 0;                                                                    \
            for (unsigned e = mag; e; e >>= 1) {                                             \
                if (e & 1u) {                                                                \
                    acc = have ? acc * x : x;                                                \
                    have = 1;                                                                \
                }                                                                            \
                if (e >> 1)                                                                  \
                    x = x * x;                                                               \
            }                                                                                \
            out[i] = k < 0 ? (T)1 / acc : acc;                                               \
        }                                                                                    \
    }                                                                                        \
                                                                                             \
    void rmi_cpu_pow_##SFX(size_t n, T *restrict out, const T *restrict a, double p)         \
    {                                                                                        \
        rmi_vm_map_##SFX(RMI_VM_POW, n, out, a, (T)p);                                       \
    }                                                                                        \
                                                                                             \
    VEC_CLONES static void vec_binary_##SFX(remat_op op, size_t n, T *restrict out, const T *restrict a,   \
                              const T *restrict b)                                           \
    {                                                                                        \
        BINARY_SWITCH(MAP2)                                                                  \
    }                                                                                        \
                                                                                             \
    VEC_CLONES static void vec_binary_scalar_##SFX(remat_op op, size_t n, T *restrict out, const T *restrict a,   \
                                     const T *restrict b, int scalar)                        \
    {                                                                                        \
        if (scalar == 1) {                                                                   \
            BINARY_SWITCH(MAP2_RS)                                                           \
        } else {                                                                             \
            BINARY_SWITCH(MAP2_LS)                                                           \
        }                                                                                    \
    }                                                                                        \
                                                                                             \
    VEC_CLONES static void vec_select_scalar_##SFX(size_t n, T *restrict out, const T *restrict pred,      \
                                     const T *restrict on_true, int t_scalar,                \
                                     const T *restrict on_false, int f_scalar)               \
    {                                                                                        \
        const size_t st = t_scalar ? 0 : 1, sf = f_scalar ? 0 : 1;                          \
        if (!st && !sf) {                                                                    \
            const T t = on_true[0], f = on_false[0];                                         \
            for (size_t i = 0; i < n; i++)                                                   \
                out[i] = pred[i] != (T)0 ? t : f;                                            \
        } else if (!st) {                                                                    \
            const T t = on_true[0];                                                          \
            for (size_t i = 0; i < n; i++) {                                                 \
                const T f = on_false[i];                                                     \
                out[i] = pred[i] != (T)0 ? t : f;                                            \
            }                                                                                \
        } else {                                                                             \
            const T f = on_false[0];                                                         \
            for (size_t i = 0; i < n; i++) {                                                 \
                const T t = on_true[i];                                                      \
                out[i] = pred[i] != (T)0 ? t : f;                                            \
            }                                                                                \
        }                                                                                    \
    }                                                                                        \
                                                                                             \
    VEC_CLONES static void vec_select_##SFX(size_t n, T *restrict out, const T *restrict pred,             \
                              const T *restrict on_true, const T *restrict on_false)         \
    {                                                                                        \
        /* a NaN predicate is != 0, so it selects on_true. Both operands are loaded          \
         * unconditionally: with a conditional load gcc keeps a scalar branch per            \
         * element, mispredicted half the time on a relu mask; this way it is a              \
         * vector compare + blend. */                                                        \
        for (size_t i = 0; i < n; i++) {                                                     \
            const T t = on_true[i], f = on_false[i];                                         \
            out[i] = pred[i] != (T)0 ? t : f;                                                \
        }                                                                                    \
    }                                                                                             \
    /* the public-internal names call the clones: a static function's ifunc                 \
     * resolver stays local (gcc gives a global one default visibility) */                  \
    void rmi_cpu_unary_##SFX(remat_op op, size_t n, T *restrict out, const T *restrict a)    \
    {                                                                                        \
        vec_unary_##SFX(op, n, out, a);                                                      \
    }                                                                                        \
    void rmi_cpu_integer_pow_##SFX(size_t n, T *restrict out, const T *restrict a, int k)    \
    {                                                                                        \
        vec_integer_pow_##SFX(n, out, a, k);                                                 \
    }                                                                                        \
    void rmi_cpu_binary_##SFX(remat_op op, size_t n, T *restrict out, const T *restrict a,   \
                              const T *restrict b)                                           \
    {                                                                                        \
        vec_binary_##SFX(op, n, out, a, b);                                                  \
    }                                                                                        \
    void rmi_cpu_binary_scalar_##SFX(remat_op op, size_t n, T *restrict out, const T *restrict a, \
                                     const T *restrict b, int scalar)                        \
    {                                                                                        \
        vec_binary_scalar_##SFX(op, n, out, a, b, scalar);                                   \
    }                                                                                        \
    void rmi_cpu_select_scalar_##SFX(size_t n, T *restrict out, const T *restrict pred,      \
                                     const T *restrict on_true, int t_scalar,                \
                                     const T *restrict on_false, int f_scalar)               \
    {                                                                                        \
        vec_select_scalar_##SFX(n, out, pred, on_true, t_scalar, on_false, f_scalar);        \
    }                                                                                        \
    void rmi_cpu_select_##SFX(size_t n, T *restrict out, const T *restrict pred,             \
                              const T *restrict on_true, const T *restrict on_false)         \
    {                                                                                        \
        vec_select_##SFX(n, out, pred, on_true, on_false);                                   \
    }

REMAT_EXHAUSTIVE_BEGIN
#define T float
DEFINE_ELEMENTWISE(f32, sqrtf)
#undef T
#define T double
DEFINE_ELEMENTWISE(f64, sqrt)
#undef T
REMAT_EXHAUSTIVE_END

void rmi_cpu_convert(size_t n, remat_dtype out_dt, void *out, remat_dtype in_dt, const void *in)
{
    if (out_dt == in_dt) {
        if (n)
            memcpy(out, in, n * remat_dtype_size(in_dt));
        return;
    }
    if (out_dt == REMAT_F32 && in_dt == REMAT_F64) {
        float *restrict o = out;
        const double *restrict x = in;
        for (size_t i = 0; i < n; i++)
            o[i] = (float)x[i]; /* round to nearest, as convert_element_type */
        return;
    }
    if (out_dt == REMAT_F64 && in_dt == REMAT_F32) {
        double *restrict o = out;
        const float *restrict x = in;
        for (size_t i = 0; i < n; i++)
            o[i] = (double)x[i];
        return;
    }
    REMAT_UNREACHABLE("rmi_cpu_convert: unknown dtype");
}

/*
 * cpu_kernels.h — the CPU compute kernels, one function per op family.
 *
 * Plain functions over dense row-major buffers: no graphs, no allocation, no
 * global state. Every kernel is deterministic (same inputs, same bits: fixed
 * summation order, no thread-count-dependent reduction outside BLAS).
 * `n` is an element count; shapes are the remat_shape of the buffer they
 * describe. Output buffers never overlap inputs.
 */
#ifndef REMAT_CPU_KERNELS_H
#define REMAT_CPU_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "remat/op.h"
#include "remat/status.h"
#include "remat/tensor.h"
#include "backend/layout.h"

/* A kernel compiled for AVX-512, AVX2 and the baseline, picked at load time
 * (an ifunc): each element's operations are the same correctly rounded ones
 * whatever the width, and the project's -ffp-contract=off keeps multiply-adds
 * unfused in every clone, so the clones give the same bits. */
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define REMAT_TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define REMAT_TSAN 1
#endif
/* not under ThreadSanitizer: the clones' ifunc resolvers run before its
 * runtime is up, and every test of CI's TSan stage crashed at startup; not
 * under clang: Debian's clang 14 gives a static function's resolver
 * (vec_unary_f32.resolver, ...) default visibility, so libremat.so exported
 * twelve of them (tests/check_exports.sh) */
#if defined(__x86_64__) && !defined(REMAT_TSAN) && !defined(__clang__) && __GNUC__ >= 6
#define VEC_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define VEC_CLONES
#endif

/* ---- elementwise: out[i] = f(a[i]) / f(a[i], b[i]); all of length n ---- */
/* op is a unary op without a parameter (category UNARY, parameter kind NONE
 * in REMAT_OP_LIST); INTEGER_POW, POW and CONVERT have kernels of their own
 * below. f32 uses the float functions (SLEEF's, vmath.h). RELU(x) = x > 0 ? x : 0, except
 * relu(NaN) = NaN. */
void rmi_cpu_unary_f32(remat_op op, size_t n, float *out, const float *a);
void rmi_cpu_unary_f64(remat_op op, size_t n, double *out, const double *a);
/* out = a^k, k a (possibly negative) integer, by repeated multiplication
 * (in lax.integer_pow's square-and-multiply order, then 1/acc for k < 0,
 * so the roundings are JAX's; k = 0 gives 1 even for NaN) */
void rmi_cpu_integer_pow_f32(size_t n, float *out, const float *a, int k);
void rmi_cpu_integer_pow_f64(size_t n, double *out, const double *a, int k);
/* out = a^p, p real: pow() */
void rmi_cpu_pow_f32(size_t n, float *out, const float *a, double p);
void rmi_cpu_pow_f64(size_t n, double *out, const double *a, double p);
/* op: a binary op or a compare (remat_op_is_binary; compares give 1.0 / 0.0).
 * MAX/MIN follow IEEE fmax/fmin except that a NaN operand gives NaN.
 * (On a tie MAX/MIN return b, so max(+0,-0) = -0 and max(-0,+0) = +0.) */
void rmi_cpu_binary_f32(remat_op op, size_t n, float *out, const float *a, const float *b);
void rmi_cpu_binary_f64(remat_op op, size_t n, double *out, const double *a, const double *b);
/* The same with one operand a scalar (a splat constant) read from b[0]
 * (scalar == 1) or a[0] (scalar == 0); same bits as the broadcast array. */
void rmi_cpu_binary_scalar_f32(remat_op op, size_t n, float *out, const float *a, const float *b, int scalar);
void rmi_cpu_binary_scalar_f64(remat_op op, size_t n, double *out, const double *a, const double *b, int scalar);
/* out[i] = pred[i] != 0 ? on_true[i] : on_false[i] */
void rmi_cpu_select_f32(size_t n, float *out, const float *pred, const float *on_true, const float *on_false);
void rmi_cpu_select_f64(size_t n, double *out, const double *pred, const double *on_true, const double *on_false);
/* select with on_true and/or on_false a scalar read from element 0 */
void rmi_cpu_select_scalar_f32(size_t n, float *out, const float *pred, const float *on_true, int t_scalar,
                               const float *on_false, int f_scalar);
void rmi_cpu_select_scalar_f64(size_t n, double *out, const double *pred, const double *on_true, int t_scalar,
                               const double *on_false, int f_scalar);
void rmi_cpu_convert(size_t n, remat_dtype out_dt, void *out, remat_dtype in_dt, const void *in);

/* ---- structural ops (dtype-generic by element size) ---- */
/* out = transpose(in, perm): out.dims[i] = in.dims[perm[i]] */
void rmi_cpu_transpose(remat_dtype dt, void *out, const void *in,
                       const remat_shape *in_shape, const int *perm);
/* lax.broadcast_in_dim: in dim i maps to out dim bdims[i]; in dims are either
 * equal to the out dim or 1 (then repeated). */
void rmi_cpu_broadcast_in_dim(remat_dtype dt, void *out, const remat_shape *out_shape,
                              const void *in, const remat_shape *in_shape, const int *bdims);
/* lax.slice with strides (stride >= 1) */
void rmi_cpu_slice(remat_dtype dt, void *out, const void *in, const remat_shape *in_shape,
                   const remat_slice_params *p);
/* lax.pad with value 0, low/high >= 0, interior >= 0 */
void rmi_cpu_pad(remat_dtype dt, void *out, const remat_shape *out_shape, const void *in,
                 const remat_shape *in_shape, const remat_pad_params *p);
/* The same ops from a plan made once (backend/layout.h): they only move
 * elements, giving the bits of the kernels above (structural.c). */
void rmi_cpu_copy_run(const remat_copy_plan *p, void *out, const void *in);
/* lax.concatenate of n_in inputs along an axis (all shapes equal except that
 * axis), planned by rmi_layout_concatenate, which the CUDA backend shares */
void rmi_cpu_concatenate_run(const remat_concat_plan *p, void *out, const void *const *ins);

/* add(x, pad(g)) with zero interior, g (g_shape) at low[] of out_shape, f32/f64:
 * out = x + 0 outside g's region, x + g inside (g + x when pad_first), the
 * bits of pad then add (add_pad.c). out never overlaps x or g. */
typedef struct {
    uint8_t f64, pad_first, rank; /* rank: outer axes (all but the last) */
    int64_t rows, inner, g_inner, lo_inner;
    int64_t dims[REMAT_MAX_RANK], lo[REMAT_MAX_RANK], gn[REMAT_MAX_RANK];
} remat_cpu_add_pad_layout;
void rmi_cpu_add_pad_plan(remat_cpu_add_pad_layout *p, remat_dtype dt, const remat_shape *out_shape,
                          const remat_shape *g_shape, const remat_pad_params *pp, int pad_first);
void rmi_cpu_add_pad_run(const remat_cpu_add_pad_layout *p, void *out, const void *x, const void *g);
void rmi_cpu_add_pad(remat_dtype dt, void *out, const void *x, const void *g, const remat_shape *out_shape,
                     const remat_shape *g_shape, const remat_pad_params *p, int pad_first);

/* reduce_sum over the axes with reduce[axis] = true; out has the remaining
 * axes in order. Summation order is fixed (ascending index): each output is
 * ((+0 + x0) + x1) + ... over its inputs in row-major order, one running sum
 * (no lane splitting, so a sum of -0.0 is +0.0 and small sums match XLA). */
void rmi_cpu_reduce_sum(remat_dtype dt, void *out, const void *in, const remat_shape *in_shape,
                        const bool *reduce);
/* reduce_max over the same axes, as XLA: IEEE maximum (NaN propagates, +0
 * beats -0), -inf for an empty run. */
void rmi_cpu_reduce_max(remat_dtype dt, void *out, const void *in, const remat_shape *in_shape,
                        const bool *reduce);
/* The two kernels' steps, shared with fused groups that end in a reduction
 * (fused.c), which must combine exactly as they do: a running sum, and
 * IEEE 754-2019 maximum (m takes x when x > m, when x is NaN, or when they
 * are equal and m is -0; once NaN, m stays NaN). Initial values +0 and -inf. */
#define RMI_CPU_SUM_STEP(s, x) ((s) + (x))
#define RMI_CPU_MAX_STEP(m, x) (((x) > (m) || (x) != (x) || ((x) == (m) && signbit(m))) ? (x) : (m))

/* Called before lowering an op that calls OpenBLAS (gemm, getrf): under a
 * finite address-space limit, REMAT_ERR_NOMEM with a message when OpenBLAS's
 * buffer does not fit (it would retry for ever), else it makes OpenBLAS take
 * it now. Once per process; REMAT_OK without a limit (blas_reserve.c). */
remat_status rmi_cpu_blas_reserve(void);

/* ---- dot_general through OpenBLAS (cblas_sgemm / cblas_dgemm) ----
 * Output layout: (batch..., lhs free..., rhs free...), as JAX.
 * When an operand's layout is already (batch, free, contract) or
 * (batch, contract, free) (possibly with the free/contract groups each
 * contiguous), gemm is called on it directly with the transpose flag;
 * otherwise it is first copied into `scratch` in that layout.
 * rmi_layout_dot_general_scratch() (backend/layout.h) says how many bytes of
 * scratch the call needs (0 in the common matmul cases); scratch must be at least that big. */
/* Degenerate sizes: an empty output writes nothing; an empty contraction
 * (K = 0) writes zeros. Neither needs scratch. scratch may be NULL when the
 * query returned 0. */
void rmi_cpu_dot_general(remat_dtype dt, void *out, const void *lhs, const remat_shape *lhs_shape,
                         const void *rhs, const remat_shape *rhs_shape, const remat_dot_dims *d,
                         void *scratch);
/* dot_general with a mostly-zero constant operand (dot_sparse.c): the plan from the op (NULL when the op does
 * not qualify: f64, one operand's values in op->in_data, at most a quarter non-zero, no batch, no copy; *oom
 * set when alloc failed) and the kernel, which takes rmi_cpu_dot_general's arguments (its fallback) */
typedef struct rmi_dot_sparse rmi_dot_sparse;
const rmi_dot_sparse *rmi_cpu_dot_sparse_plan(const remat_exec_op *op, void *(*alloc)(void *, size_t), void *ctx,
                                              int *oom);
void rmi_cpu_dot_sparse(const rmi_dot_sparse *s, double *out, const double *lhs, const remat_shape *lhs_shape,
                        const double *rhs, const remat_shape *rhs_shape, const remat_dot_dims *d, void *scratch);

#endif

/*
 * remat/graph.h — the graph IR: functions built from primitive ops.
 *
 * A remat_fn is a DAG of typed nodes with declared arguments and outputs.
 * Values are small integer handles (remat_val) local to their function. Every
 * op constructor is a macro that records the caller's file:line, so reports
 * and errors can point at the user's source.
 *
 *   remat_fn *f = remat_fn_new("loss");
 *   remat_val w = remat_arg(f, "w", REMAT_F32, 2, ((int64_t[]){2, 2}));
 *   remat_val x = remat_arg(f, "x", REMAT_F32, 2, ((int64_t[]){1, 2}));
 *   remat_val h = remat_relu(f, remat_matmul(f, x, w));
 *   remat_fn_output(f, remat_sum_all(f, remat_square(f, h)));
 *   if (remat_fn_status(f) != REMAT_OK) puts(remat_fn_error(f));
 *
 * Build errors (shape or dtype mismatch, bad axis) make the constructor
 * return REMAT_NONE and record the first error in the function (status and a
 * message naming the op, the shapes and the caller's file:line, also in
 * remat_last_error()). The function stays usable: ops on valid values keep
 * working, ops on REMAT_NONE quietly return REMAT_NONE while the function
 * holds an error (a REMAT_NONE passed to a function with none is itself an
 * error, recorded at once). A NULL function makes every constructor return
 * REMAT_NONE with REMAT_ERR_NULL in remat_last_error(). Binary elementwise
 * ops broadcast like NumPy (inserting broadcast_in_dim nodes).
 */
#ifndef REMAT_GRAPH_H
#define REMAT_GRAPH_H

#include "export.h"

#include <stdbool.h>
#include <stdio.h>

#include "op.h"
#include "status.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct remat_fn remat_fn;
typedef int32_t remat_val;
#define REMAT_NONE ((remat_val)-1)

typedef struct {
    const char *file;
    int line;
} remat_loc;
#define REMAT_HERE ((remat_loc){__FILE__, __LINE__})

typedef struct remat_policy remat_policy; /* remat/ad.h */

/* ---- functions ---- */
/* NULL only when out of memory (remat_last_error() says so). Running out of
 * memory later, while ops are added, is a build error like any other:
 * REMAT_ERR_NOMEM in remat_fn_status. */
REMAT_API remat_fn *remat_fn_new(const char *name);
/* Functions are reference counted: a function called as a checkpoint region
 * inside another keeps it alive. _free(NULL) is a no-op. */
REMAT_API void remat_fn_free(remat_fn *f);
REMAT_API remat_fn *remat_fn_ref(remat_fn *f);
REMAT_API const char *remat_fn_name(const remat_fn *f);

/* First build error since creation (or since _clear_error), and its message. */
REMAT_API remat_status remat_fn_status(const remat_fn *f);
REMAT_API const char *remat_fn_error(const remat_fn *f);
REMAT_API void remat_fn_clear_error(remat_fn *f);

REMAT_API remat_val remat_fn_output_at(remat_fn *f, remat_val v, remat_loc loc);
#define remat_fn_output(f, v) remat_fn_output_at((f), (v), REMAT_HERE)

/* A NULL function: "(null)" (name), 0 (counts), REMAT_NONE, NULL (arg_name),
 * print does nothing; with remat_last_error() set. remat_fn_status(NULL) is
 * REMAT_ERR_NULL and remat_fn_error(NULL) "", without touching
 * remat_last_error() (it may say why f is NULL). */
REMAT_API int remat_fn_num_args(const remat_fn *f);
REMAT_API int remat_fn_num_outputs(const remat_fn *f);
REMAT_API int remat_fn_num_nodes(const remat_fn *f);
REMAT_API remat_val remat_fn_arg(const remat_fn *f, int i);
REMAT_API remat_val remat_fn_out(const remat_fn *f, int i);
REMAT_API const char *remat_fn_arg_name(const remat_fn *f, int i);
/* For a NULL function or a value not in it these return REMAT_DTYPE_COUNT,
 * a shape of rank -1 and REMAT_OP_COUNT, and set remat_last_error(). */
REMAT_API remat_dtype remat_val_dtype(const remat_fn *f, remat_val v);
REMAT_API remat_shape remat_val_shape(const remat_fn *f, remat_val v);
REMAT_API remat_op remat_val_op(const remat_fn *f, remat_val v);
/* A jaxpr-like listing. */
REMAT_API void remat_fn_print(const remat_fn *f, FILE *out);

/* ---- leaves ---- */
REMAT_API remat_val remat_arg_at(remat_fn *f, const char *name, remat_dtype dt, int rank, const int64_t *dims,
                                 remat_loc loc);
#define remat_arg(f, ...) remat_arg_at((f), __VA_ARGS__, REMAT_HERE)
/* A constant filled with one value ("splat"); rank 0 is a scalar. */
REMAT_API remat_val remat_const_fill_at(remat_fn *f, remat_dtype dt, int rank, const int64_t *dims, double value,
                                        remat_loc loc);
#define remat_const_fill(f, ...) remat_const_fill_at((f), __VA_ARGS__, REMAT_HERE)
#define remat_scalar(f, dt, v) remat_const_fill_at((f), (dt), 0, NULL, (v), REMAT_HERE)
/* A constant copied from caller memory (row-major, of dtype dt). */
REMAT_API remat_val remat_const_data_at(remat_fn *f, remat_dtype dt, int rank, const int64_t *dims, const void *data,
                                        remat_loc loc);
#define remat_const_data(f, ...) remat_const_data_at((f), __VA_ARGS__, REMAT_HERE)

/* ---- elementwise ---- */
REMAT_API remat_val remat_unary_at(remat_fn *f, remat_op op, remat_val a, remat_loc loc);
REMAT_API remat_val remat_binary_at(remat_fn *f, remat_op op, remat_val a, remat_val b, remat_loc loc);
#define remat_neg(f, a) remat_unary_at((f), REMAT_OP_NEG, (a), REMAT_HERE)
#define remat_exp(f, a) remat_unary_at((f), REMAT_OP_EXP, (a), REMAT_HERE)
#define remat_log(f, a) remat_unary_at((f), REMAT_OP_LOG, (a), REMAT_HERE)
#define remat_sin(f, a) remat_unary_at((f), REMAT_OP_SIN, (a), REMAT_HERE)
#define remat_cos(f, a) remat_unary_at((f), REMAT_OP_COS, (a), REMAT_HERE)
#define remat_tanh(f, a) remat_unary_at((f), REMAT_OP_TANH, (a), REMAT_HERE)
#define remat_relu(f, a) remat_unary_at((f), REMAT_OP_RELU, (a), REMAT_HERE)
#define remat_square(f, a) remat_unary_at((f), REMAT_OP_SQUARE, (a), REMAT_HERE)
#define remat_sqrt(f, a) remat_unary_at((f), REMAT_OP_SQRT, (a), REMAT_HERE)
/* lax.erf (libm erf/erff); d/dx = 2/sqrt(pi) exp(-x^2) */
#define remat_erf(f, a) remat_unary_at((f), REMAT_OP_ERF, (a), REMAT_HERE)
/* lax.log1p: log(1 + x), accurate for tiny x; log1p(-1) = -inf, NaN below -1 */
#define remat_log1p(f, a) remat_unary_at((f), REMAT_OP_LOG1P, (a), REMAT_HERE)
/* lax.expm1: exp(x) - 1, accurate for tiny x */
#define remat_expm1(f, a) remat_unary_at((f), REMAT_OP_EXPM1, (a), REMAT_HERE)
/* lax.logistic (jax.nn.sigmoid): 1 / (1 + exp(-x)), computed as written
 * (within 4 ulp; no NaN: exp(-x) = inf gives 0); d/dx = y (1 - y) */
#define remat_logistic(f, a) remat_unary_at((f), REMAT_OP_LOGISTIC, (a), REMAT_HERE)
/* lax.erf_inv: the inverse of erf on (-1, 1); erf_inv(+-1) = +-inf, NaN
 * outside; d/dx = sqrt(pi)/2 exp(y^2) */
#define remat_erf_inv(f, a) remat_unary_at((f), REMAT_OP_ERF_INV, (a), REMAT_HERE)
#define remat_add(f, a, b) remat_binary_at((f), REMAT_OP_ADD, (a), (b), REMAT_HERE)
#define remat_sub(f, a, b) remat_binary_at((f), REMAT_OP_SUB, (a), (b), REMAT_HERE)
#define remat_mul(f, a, b) remat_binary_at((f), REMAT_OP_MUL, (a), (b), REMAT_HERE)
#define remat_div(f, a, b) remat_binary_at((f), REMAT_OP_DIV, (a), (b), REMAT_HERE)
#define remat_max(f, a, b) remat_binary_at((f), REMAT_OP_MAX, (a), (b), REMAT_HERE)
#define remat_min(f, a, b) remat_binary_at((f), REMAT_OP_MIN, (a), (b), REMAT_HERE)
/* Compares give 1.0 / 0.0 in the operands' dtype; they have no derivative. */
#define remat_gt(f, a, b) remat_binary_at((f), REMAT_OP_GT, (a), (b), REMAT_HERE)
#define remat_ge(f, a, b) remat_binary_at((f), REMAT_OP_GE, (a), (b), REMAT_HERE)
#define remat_lt(f, a, b) remat_binary_at((f), REMAT_OP_LT, (a), (b), REMAT_HERE)
#define remat_le(f, a, b) remat_binary_at((f), REMAT_OP_LE, (a), (b), REMAT_HERE)
#define remat_eq(f, a, b) remat_binary_at((f), REMAT_OP_EQ, (a), (b), REMAT_HERE)
#define remat_ne(f, a, b) remat_binary_at((f), REMAT_OP_NE, (a), (b), REMAT_HERE)
/* a op scalar, the scalar in a's dtype */
REMAT_API remat_val remat_binary_scalar_at(remat_fn *f, remat_op op, remat_val a, double s, remat_loc loc);
#define remat_add_scalar(f, a, s) remat_binary_scalar_at((f), REMAT_OP_ADD, (a), (s), REMAT_HERE)
#define remat_mul_scalar(f, a, s) remat_binary_scalar_at((f), REMAT_OP_MUL, (a), (s), REMAT_HERE)
REMAT_API remat_val remat_integer_pow_at(remat_fn *f, remat_val a, int k, remat_loc loc);
#define remat_integer_pow(f, a, k) remat_integer_pow_at((f), (a), (k), REMAT_HERE)
REMAT_API remat_val remat_pow_at(remat_fn *f, remat_val a, double p, remat_loc loc);
#define remat_pow(f, a, p) remat_pow_at((f), (a), (p), REMAT_HERE)
/* pred != 0 ? on_true : on_false (all three broadcast together) */
REMAT_API remat_val remat_select_at(remat_fn *f, remat_val pred, remat_val on_true, remat_val on_false, remat_loc loc);
#define remat_select(f, p, t, e) remat_select_at((f), (p), (t), (e), REMAT_HERE)
REMAT_API remat_val remat_convert_at(remat_fn *f, remat_val a, remat_dtype dt, remat_loc loc);
#define remat_convert(f, a, dt) remat_convert_at((f), (a), (dt), REMAT_HERE)

/* ---- shape ops ---- */
REMAT_API remat_val remat_sum_at(remat_fn *f, remat_val a, int naxes, const int *axes, remat_loc loc);
#define remat_sum(f, ...) remat_sum_at((f), __VA_ARGS__, REMAT_HERE)
#define remat_sum_all(f, a) remat_sum_at((f), (a), -1, NULL, REMAT_HERE)
/* lax.reduce_max over the axes (naxes -1: all), as XLA: a NaN anywhere in a
 * reduced run gives NaN, an empty run gives -inf. Its VJP is JAX's: the
 * cotangent is shared equally by the positions equal to the max. */
REMAT_API remat_val remat_reduce_max_at(remat_fn *f, remat_val a, int naxes, const int *axes, remat_loc loc);
#define remat_reduce_max(f, ...) remat_reduce_max_at((f), __VA_ARGS__, REMAT_HERE)
#define remat_max_all(f, a) remat_reduce_max_at((f), (a), -1, NULL, REMAT_HERE)
/* lax.broadcast_in_dim: a's dim i becomes output dim bdims[i] */
REMAT_API remat_val remat_broadcast_in_dim_at(remat_fn *f, remat_val a, int rank, const int64_t *dims,
                                              const int *bdims, remat_loc loc);
#define remat_broadcast_in_dim(f, ...) remat_broadcast_in_dim_at((f), __VA_ARGS__, REMAT_HERE)
/* NumPy-style broadcast of a to the given shape */
REMAT_API remat_val remat_broadcast_to_at(remat_fn *f, remat_val a, int rank, const int64_t *dims, remat_loc loc);
#define remat_broadcast_to(f, ...) remat_broadcast_to_at((f), __VA_ARGS__, REMAT_HERE)
REMAT_API remat_val remat_reshape_at(remat_fn *f, remat_val a, int rank, const int64_t *dims, remat_loc loc);
#define remat_reshape(f, ...) remat_reshape_at((f), __VA_ARGS__, REMAT_HERE)
REMAT_API remat_val remat_transpose_at(remat_fn *f, remat_val a, const int *perm, remat_loc loc);
#define remat_transpose(f, ...) remat_transpose_at((f), __VA_ARGS__, REMAT_HERE)
/* stride may be NULL (all 1) */
REMAT_API remat_val remat_slice_at(remat_fn *f, remat_val a, const int64_t *start, const int64_t *limit,
                                   const int64_t *stride, remat_loc loc);
#define remat_slice(f, ...) remat_slice_at((f), __VA_ARGS__, REMAT_HERE)
/* a[i] along axis 0, dropping that axis */
REMAT_API remat_val remat_index_at(remat_fn *f, remat_val a, int64_t i, remat_loc loc);
#define remat_index(f, a, i) remat_index_at((f), (a), (i), REMAT_HERE)
/* zero padding; interior may be NULL */
REMAT_API remat_val remat_pad_at(remat_fn *f, remat_val a, const int64_t *low, const int64_t *high,
                                 const int64_t *interior, remat_loc loc);
#define remat_pad(f, ...) remat_pad_at((f), __VA_ARGS__, REMAT_HERE)
REMAT_API remat_val remat_concatenate_at(remat_fn *f, int n, const remat_val *vals, int axis, remat_loc loc);
#define remat_concatenate(f, ...) remat_concatenate_at((f), __VA_ARGS__, REMAT_HERE)

/* ---- contractions ---- */
REMAT_API remat_val remat_dot_general_at(remat_fn *f, remat_val lhs, remat_val rhs, const remat_dot_dims *d,
                                         remat_loc loc);
#define remat_dot_general(f, ...) remat_dot_general_at((f), __VA_ARGS__, REMAT_HERE)
/* a @ b: contracts a's last dim with b's first (b rank 1 or 2), no batch
 * dims, like jnp.matmul of an (..., K) array with a (K, N) matrix. */
REMAT_API remat_val remat_matmul_at(remat_fn *f, remat_val a, remat_val b, remat_loc loc);
#define remat_matmul(f, a, b) remat_matmul_at((f), (a), (b), REMAT_HERE)

/* ---- linear algebra ---- */
/* x = A^{-1} b, jnp.linalg.solve: A (..., n, n), b (..., n) or (..., n, k)
 * (k right-hand sides), the same batch dims (no implicit broadcasting; an
 * error names both shapes otherwise), one dtype (f32 or f64); x has b's
 * shape. Builds lu(A) (reused when f already has an lu of this very A
 * value, so several solves with one matrix factor it once) and the
 * primitive linear_solve(A, lu, b), with its own VJP (a solve with A^T and
 * the same lu, A_bar = -b_bar x^T) and JVP (solve(A, b_dot - A_dot x)). A
 * singular A is not an error: x then holds inf or nan where the
 * elimination divided by a zero pivot, as in JAX. Kernels: partial-pivoting
 * Gaussian elimination for n <= 8 (the same operations in compiled scan
 * loops, so both agree bit for bit), LAPACK getrf/getrs above. */
REMAT_API remat_val remat_linear_solve_at(remat_fn *f, remat_val A, remat_val b, remat_loc loc);
#define remat_linear_solve(f, A, b) remat_linear_solve_at((f), (A), (b), REMAT_HERE)

/* ---- names and calls ---- */
/* jax.ad_checkpoint.checkpoint_name: identity that tags a value for policies. */
REMAT_API remat_val remat_name_at(remat_fn *f, remat_val a, const char *name, remat_loc loc);
#define remat_name(f, a, name) remat_name_at((f), (a), (name), REMAT_HERE)
/* lax.stop_gradient: the identity on values, a zero cotangent for its input
 * (nothing downstream of it is differentiated through it). Free at run
 * time: the compiled program aliases its input. */
REMAT_API remat_val remat_stop_gradient_at(remat_fn *f, remat_val a, remat_loc loc);
#define remat_stop_gradient(f, a) remat_stop_gradient_at((f), (a), REMAT_HERE)
/* Call `callee` with nargs values; writes its outputs into outs. A callee made
 * by remat_checkpoint() becomes a checkpoint region; any other is inlined. */
REMAT_API remat_status remat_call_at(remat_fn *f, const remat_fn *callee, int nargs, const remat_val *args,
                                     remat_val *outs, remat_loc loc);
#define remat_call(f, ...) remat_call_at((f), __VA_ARGS__, REMAT_HERE)
/* Single-output convenience: returns the output or REMAT_NONE. */
REMAT_API remat_val remat_call1_at(remat_fn *f, const remat_fn *callee, int nargs, const remat_val *args,
                                   remat_loc loc);
#define remat_call1(f, ...) remat_call1_at((f), __VA_ARGS__, REMAT_HERE)

/* ---- custom ops: a user C function and its VJP as one node ----
 * forward: out = op(ins). vjp: given the inputs, the forward output and the
 * output cotangent, write the cotangent of input `which` (overwrite, not add).
 * Buffers are dense row-major in the node's dtype. Pure functions of their
 * arguments (they may be re-run when recomputed). */
typedef struct {
    const char *name;
    void (*forward)(int n_in, const remat_tensor *ins, remat_tensor *out, void *ctx);
    void (*vjp)(int which, int n_in, const remat_tensor *ins, const remat_tensor *out,
                const remat_tensor *dout, remat_tensor *din, void *ctx);
    void *ctx;
} remat_custom_op;
/* The op struct must outlive every function and program that uses it. */
REMAT_API remat_val remat_custom_at(remat_fn *f, const remat_custom_op *op, int n_in, const remat_val *ins,
                                    remat_dtype dt, int rank, const int64_t *dims, remat_loc loc);
#define remat_custom(f, ...) remat_custom_at((f), __VA_ARGS__, REMAT_HERE)

#ifdef __cplusplus
}
#endif
#endif

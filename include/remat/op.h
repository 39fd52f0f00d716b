/*
 * remat/op.h — the primitive table and the typed parameters of each primitive.
 *
 * Every node of a remat graph is one primitive. Policies (remat/ad.h) see a
 * node through remat_op_info: its primitive, dtypes, shapes and parameters,
 * never its data.
 */
#ifndef REMAT_OP_H
#define REMAT_OP_H

#include "export.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One row per primitive; every list of ops in the library is derived from
 * these rows (nothing depends on their order):
 *
 *   X(enum, name as JAX prints it, inputs (-1: variadic), category,
 *     parameter kind, derivative)
 *
 * category (remat_op_category, REMAT_OPCAT_*): what kind of computation it
 *   is, which decides constructor checks, fusion, backend dispatch and lane
 *   translation. The elementwise categories are UNARY (one operand, same
 *   dtype: integer_pow and pow too, with their exponent), BINARY, COMPARE
 *   (1 or 0 in the operands' dtype) and SELECT.
 * parameter kind (remat_op_param, REMAT_OPP_*): which member of the node's
 *   parameter union the op uses (NONE: none).
 * derivative (remat_op_deriv, REMAT_OPD_*): RULE, a VJP rule in
 *   src/ad/vjp_rules.c and a JVP rule in src/ad/jvp_rules.c; ZERO, no
 *   derivative (reverse mode treats what it computes as a constant, forward
 *   mode gives it a zero tangent); GRAPH, the transforms handle it (leaves,
 *   calls).
 *
 * Adding an op: the row, its VJP rule, its kernel, its tests; the checklist
 * is "Adding a unary op" in docs/design-notes.md, and the build stops at
 * every per-op switch the new row still lacks. */
#define REMAT_OP_LIST(X)                                                              \
    X(REMAT_OP_CONSTANT, "constant", 0, LEAF, FILL, GRAPH)                            \
    X(REMAT_OP_ARG, "argument", 0, LEAF, ARG_POS, GRAPH)                              \
    X(REMAT_OP_ADD, "add", 2, BINARY, NONE, RULE)                                     \
    X(REMAT_OP_SUB, "sub", 2, BINARY, NONE, RULE)                                     \
    X(REMAT_OP_MUL, "mul", 2, BINARY, NONE, RULE)                                     \
    X(REMAT_OP_DIV, "div", 2, BINARY, NONE, RULE)                                     \
    X(REMAT_OP_MAX, "max", 2, BINARY, NONE, RULE)                                     \
    X(REMAT_OP_MIN, "min", 2, BINARY, NONE, RULE)                                     \
    X(REMAT_OP_NEG, "neg", 1, UNARY, NONE, RULE)                                      \
    X(REMAT_OP_EXP, "exp", 1, UNARY, NONE, RULE)                                      \
    X(REMAT_OP_LOG, "log", 1, UNARY, NONE, RULE)                                      \
    X(REMAT_OP_SIN, "sin", 1, UNARY, NONE, RULE)                                      \
    X(REMAT_OP_COS, "cos", 1, UNARY, NONE, RULE)                                      \
    X(REMAT_OP_TANH, "tanh", 1, UNARY, NONE, RULE)                                    \
    X(REMAT_OP_RELU, "relu", 1, UNARY, NONE, RULE)                                    \
    X(REMAT_OP_SQUARE, "square", 1, UNARY, NONE, RULE)                                \
    X(REMAT_OP_SQRT, "sqrt", 1, UNARY, NONE, RULE)                                    \
    X(REMAT_OP_ERF, "erf", 1, UNARY, NONE, RULE)                                      \
    X(REMAT_OP_LOG1P, "log1p", 1, UNARY, NONE, RULE)                                  \
    X(REMAT_OP_EXPM1, "expm1", 1, UNARY, NONE, RULE)                                  \
    X(REMAT_OP_LOGISTIC, "logistic", 1, UNARY, NONE, RULE)                            \
    X(REMAT_OP_ERF_INV, "erf_inv", 1, UNARY, NONE, RULE)                              \
    X(REMAT_OP_INTEGER_POW, "integer_pow", 1, UNARY, INT_EXPONENT, RULE)              \
    X(REMAT_OP_POW, "pow", 1, UNARY, EXPONENT, RULE)                                  \
    X(REMAT_OP_GT, "gt", 2, COMPARE, NONE, ZERO)                                      \
    X(REMAT_OP_GE, "ge", 2, COMPARE, NONE, ZERO)                                      \
    X(REMAT_OP_LT, "lt", 2, COMPARE, NONE, ZERO)                                      \
    X(REMAT_OP_LE, "le", 2, COMPARE, NONE, ZERO)                                      \
    X(REMAT_OP_EQ, "eq", 2, COMPARE, NONE, ZERO)                                      \
    X(REMAT_OP_NE, "ne", 2, COMPARE, NONE, ZERO)                                      \
    X(REMAT_OP_SELECT, "select_n", 3, SELECT, NONE, RULE)                             \
    X(REMAT_OP_CONVERT, "convert_element_type", 1, CONVERT, NONE, RULE)               \
    X(REMAT_OP_SUM, "reduce_sum", 1, REDUCE, AXES, RULE)                              \
    X(REMAT_OP_REDUCE_MAX, "reduce_max", 1, REDUCE, AXES, RULE)                       \
    X(REMAT_OP_BROADCAST, "broadcast_in_dim", 1, STRUCTURAL, BDIMS, RULE)             \
    X(REMAT_OP_RESHAPE, "reshape", 1, STRUCTURAL, NONE, RULE)                         \
    X(REMAT_OP_TRANSPOSE, "transpose", 1, STRUCTURAL, PERM, RULE)                     \
    X(REMAT_OP_SLICE, "slice", 1, STRUCTURAL, SLICE, RULE)                            \
    X(REMAT_OP_PAD, "pad", 1, STRUCTURAL, PAD, RULE)                                  \
    X(REMAT_OP_CONCATENATE, "concatenate", -1, STRUCTURAL, AXIS, RULE)                \
    X(REMAT_OP_DOT_GENERAL, "dot_general", 2, DOT, DOT, RULE)                         \
    X(REMAT_OP_LU, "lu", 1, LINALG, NONE, ZERO)                                       \
    X(REMAT_OP_LINEAR_SOLVE, "linear_solve", 3, LINALG, SOLVE, RULE)                  \
    X(REMAT_OP_NAME, "name", 1, IDENTITY, NONE, RULE)                                 \
    X(REMAT_OP_STOP_GRADIENT, "stop_gradient", 1, IDENTITY, NONE, ZERO)               \
    X(REMAT_OP_CHECKPOINT, "checkpoint", -1, CONTROL, CALL, GRAPH)                    \
    X(REMAT_OP_PROJ, "proj", 1, CONTROL, OUTPUT, RULE)                                \
    X(REMAT_OP_CUSTOM, "custom", -1, CUSTOM, CUSTOM, RULE)                            \
    X(REMAT_OP_CUSTOM_VJP, "custom_vjp", -1, CUSTOM, CUSTOM, RULE)                    \
    X(REMAT_OP_HOP, "hop", -1, CONTROL, HOP, RULE)

typedef enum {
#define REMAT_X_(id, name, nin, cat, param, deriv) id,
    REMAT_OP_LIST(REMAT_X_)
#undef REMAT_X_
    REMAT_OP_COUNT
} remat_op;

/* lu and linear_solve (remat_linear_solve, graph.h). lu(A), A (..., n, n),
 * is A's factorisation packed in one value, its derivative left to the
 * solve (ZERO: linear_solve's rule differentiates through A, its first
 * input, as JAX's custom_linear_solve does); linear_solve(A, lu(A), b)
 * solves with it (transposed: A^T x = b). n <= REMAT_LU_SMALL_N: lu is
 * (..., n, 2n), the elimination's U and multipliers in the first n
 * columns and its row-swap flags (1/0) below the diagonal of the last n;
 * larger n: (..., n, n + 1), LAPACK getrf's factors of A^T and its
 * pivots. */
#define REMAT_LU_SMALL_N 8

/* The categories of the table. Beyond the elementwise ones: LEAF (no inputs:
 * constant, argument), CONVERT (elementwise, changes dtype), REDUCE,
 * STRUCTURAL (moves elements: broadcast, reshape, transpose, slice, pad,
 * concatenate), DOT, LINALG (dense linear algebra on the last two axes:
 * lu, linear_solve; see REMAT_LU_SMALL_N), IDENTITY (the value is its input's: name,
 * stop_gradient; compiled as an alias), CUSTOM (a caller's kernel) and
 * CONTROL (call, proj, hop: the compiler handles them, no backend does). */
typedef enum {
    REMAT_OPCAT_LEAF,
    REMAT_OPCAT_UNARY,
    REMAT_OPCAT_BINARY,
    REMAT_OPCAT_COMPARE,
    REMAT_OPCAT_SELECT,
    REMAT_OPCAT_CONVERT,
    REMAT_OPCAT_REDUCE,
    REMAT_OPCAT_STRUCTURAL,
    REMAT_OPCAT_DOT,
    REMAT_OPCAT_LINALG,
    REMAT_OPCAT_IDENTITY,
    REMAT_OPCAT_CUSTOM,
    REMAT_OPCAT_CONTROL,
    REMAT_OPCAT_COUNT
} remat_op_category;

/* The member of a node's parameters an op reads. */
typedef enum {
    REMAT_OPP_NONE,
    REMAT_OPP_FILL,         /* constant: the splat value (no data) */
    REMAT_OPP_ARG_POS,      /* argument: its position among the arguments */
    REMAT_OPP_OUTPUT,       /* proj: which output of its call or hop */
    REMAT_OPP_AXIS,         /* concatenate: the axis */
    REMAT_OPP_INT_EXPONENT, /* integer_pow: the exponent */
    REMAT_OPP_EXPONENT,     /* pow: the exponent */
    REMAT_OPP_AXES,         /* reductions: a mask of reduced axes */
    REMAT_OPP_PERM,         /* transpose: the permutation */
    REMAT_OPP_BDIMS,        /* broadcast_in_dim: output dim of each input dim */
    REMAT_OPP_DOT,          /* remat_dot_dims */
    REMAT_OPP_SOLVE,        /* linear_solve: solve with A's transpose */
    REMAT_OPP_SLICE,        /* remat_slice_params */
    REMAT_OPP_PAD,          /* remat_pad_params */
    REMAT_OPP_CALL,         /* callee and policy */
    REMAT_OPP_CUSTOM,       /* remat_custom_op */
    REMAT_OPP_HOP,          /* a higher-order primitive's rules and data */
    REMAT_OPP_COUNT
} remat_op_param;

typedef enum { REMAT_OPD_RULE, REMAT_OPD_ZERO, REMAT_OPD_GRAPH, REMAT_OPD_COUNT } remat_op_deriv;

/* The columns of op's row. For a value outside the table: "?", -2 inputs,
 * and REMAT_OPCAT_COUNT / REMAT_OPP_COUNT / REMAT_OPD_COUNT. */
REMAT_API const char *remat_op_name(remat_op op);
REMAT_API int remat_op_arity(remat_op op);
REMAT_API remat_op_category remat_op_category_of(remat_op op);
REMAT_API remat_op_param remat_op_param_of(remat_op op);
REMAT_API remat_op_deriv remat_op_deriv_of(remat_op op);
/* "unary", "binary", ...; "?" outside the enum */
REMAT_API const char *remat_op_category_name(remat_op_category c);
/* unary, binary, compare or select: one dtype, operands of the output's
 * shape, computed element by element */
REMAT_API int remat_op_is_elementwise(remat_op op);
/* binary or compare: two operands of the output's shape */
REMAT_API int remat_op_is_binary(remat_op op);

/* dot_general dimension numbers, exactly as JAX's
 * ((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch)).
 * Output dims: batch dims, then lhs free dims, then rhs free dims. */
typedef struct {
    int n_contract;
    int lhs_contract[REMAT_MAX_RANK];
    int rhs_contract[REMAT_MAX_RANK];
    int n_batch;
    int lhs_batch[REMAT_MAX_RANK];
    int rhs_batch[REMAT_MAX_RANK];
} remat_dot_dims;

/* slice: out[i] = in[start + i*stride], i < ceil((limit-start)/stride). */
typedef struct {
    int64_t start[REMAT_MAX_RANK];
    int64_t limit[REMAT_MAX_RANK];
    int64_t stride[REMAT_MAX_RANK];
} remat_slice_params;

/* pad with a zero value: low/high edge padding and interior padding (as
 * lax.pad with padding_value 0; negative low/high not supported). */
typedef struct {
    int64_t low[REMAT_MAX_RANK];
    int64_t high[REMAT_MAX_RANK];
    int64_t interior[REMAT_MAX_RANK];
} remat_pad_params;

#ifdef __cplusplus
}
#endif
#endif

/*
 * remat/op.h — the primitive table and the typed parameters of each primitive.
 *
 * Every node of a remat graph is one primitive. Policies (remat/ad.h) see a
 * node through remat_op_info: its primitive, dtypes, shapes and parameters,
 * never its data.
 */
#ifndef REMAT_OP_H
#define REMAT_OP_H

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* X(enum, name as JAX prints it, number of inputs or -1 for variadic).
 * Order matters: the elementwise ops are the ranges ADD..POW (unary among
 * them NEG..ERF) and GT..NE, which src/ad and src/exec test by range. */
#define REMAT_OP_LIST(X)                  \
    X(REMAT_OP_CONSTANT, "constant", 0)    \
    X(REMAT_OP_ARG, "argument", 0)         \
    X(REMAT_OP_ADD, "add", 2)              \
    X(REMAT_OP_SUB, "sub", 2)              \
    X(REMAT_OP_MUL, "mul", 2)              \
    X(REMAT_OP_DIV, "div", 2)              \
    X(REMAT_OP_MAX, "max", 2)              \
    X(REMAT_OP_MIN, "min", 2)              \
    X(REMAT_OP_NEG, "neg", 1)              \
    X(REMAT_OP_EXP, "exp", 1)              \
    X(REMAT_OP_LOG, "log", 1)              \
    X(REMAT_OP_SIN, "sin", 1)              \
    X(REMAT_OP_COS, "cos", 1)              \
    X(REMAT_OP_TANH, "tanh", 1)            \
    X(REMAT_OP_RELU, "relu", 1)            \
    X(REMAT_OP_SQUARE, "square", 1)        \
    X(REMAT_OP_SQRT, "sqrt", 1)            \
    X(REMAT_OP_ERF, "erf", 1)              \
    X(REMAT_OP_INTEGER_POW, "integer_pow", 1) \
    X(REMAT_OP_POW, "pow", 1)              \
    X(REMAT_OP_GT, "gt", 2)                \
    X(REMAT_OP_GE, "ge", 2)                \
    X(REMAT_OP_LT, "lt", 2)                \
    X(REMAT_OP_LE, "le", 2)                \
    X(REMAT_OP_EQ, "eq", 2)                \
    X(REMAT_OP_NE, "ne", 2)                \
    X(REMAT_OP_SELECT, "select_n", 3)      \
    X(REMAT_OP_CONVERT, "convert_element_type", 1) \
    X(REMAT_OP_SUM, "reduce_sum", 1)       \
    X(REMAT_OP_REDUCE_MAX, "reduce_max", 1) \
    X(REMAT_OP_BROADCAST, "broadcast_in_dim", 1) \
    X(REMAT_OP_RESHAPE, "reshape", 1)      \
    X(REMAT_OP_TRANSPOSE, "transpose", 1)  \
    X(REMAT_OP_SLICE, "slice", 1)          \
    X(REMAT_OP_PAD, "pad", 1)              \
    X(REMAT_OP_CONCATENATE, "concatenate", -1) \
    X(REMAT_OP_DOT_GENERAL, "dot_general", 2) \
    X(REMAT_OP_NAME, "name", 1)            \
    X(REMAT_OP_STOP_GRADIENT, "stop_gradient", 1) \
    X(REMAT_OP_CALL, "checkpoint", -1)     \
    X(REMAT_OP_PROJ, "proj", 1)            \
    X(REMAT_OP_CUSTOM, "custom", -1)       \
    X(REMAT_OP_CUSTOM_VJP, "custom_vjp", -1) \
    X(REMAT_OP_HOP, "hop", -1)

typedef enum {
#define REMAT_X_(id, name, nin) id,
    REMAT_OP_LIST(REMAT_X_)
#undef REMAT_X_
    REMAT_OP_COUNT
} remat_op;

const char *remat_op_name(remat_op op);

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

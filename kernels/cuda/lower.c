/*
 * lower.c — the CUDA backend's lowering of one op (fused groups and adds of
 * a pad: fused.c) to an instruction whose fn launches the op's kernel on the
 * stream of the state its context carries (remat_exec_ctx.state, an
 * rmi_cuda_state: cuda_kernels.h) with the instruction's device pointers.
 *
 * Dispatch follows the op table's category and parameter kind, as the CPU
 * backend's does (src/backend/cpu/cpu_backend.c), so an op added to
 * REMAT_OP_LIST stops the build here until it has a case. The shape work
 * of structural ops and dot_general is the plan the CPU runs too
 * (backend/layout.h: rmi_layout_*, rmi_layout_dot_general), made once
 * here: the same element moves and the same scratch, hence the same arena.
 */
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "backend/layout.h"
#include "core/assert.h"
#include "core/error.h"
#include "core/exhaustive.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/cuda_kernels.h"

/* elementwise parameters: mask is the op's scalar_mask (bit k: input k one element) */
typedef struct {
    int f64, op, mask, k;
    double p;
    int in_f64;
} cuda_ew;

static void k_unary(const remat_exec_ctx *cx, const remat_instr *I)
{
    const cuda_ew *E = I->aux;
    rmi_cuda_unary(cx->state, E->f64, E->op, I->n, I->out, I->in[0]);
}
static void k_binary(const remat_exec_ctx *cx, const remat_instr *I)
{
    const cuda_ew *E = I->aux;
    rmi_cuda_binary(cx->state, E->f64, E->op, I->n, I->out, I->in[0], E->mask & 1, I->in[1], (E->mask >> 1) & 1);
}
static void k_select(const remat_exec_ctx *cx, const remat_instr *I)
{
    const cuda_ew *E = I->aux;
    rmi_cuda_select(cx->state, E->f64, I->n, I->out, I->in[0], I->in[1], (E->mask >> 1) & 1, I->in[2],
                    (E->mask >> 2) & 1);
}
static void k_ipow(const remat_exec_ctx *cx, const remat_instr *I)
{
    const cuda_ew *E = I->aux;
    rmi_cuda_integer_pow(cx->state, E->f64, I->n, I->out, I->in[0], E->k);
}
static void k_pow(const remat_exec_ctx *cx, const remat_instr *I)
{
    const cuda_ew *E = I->aux;
    rmi_cuda_pow(cx->state, E->f64, I->n, I->out, I->in[0], E->p);
}
static void k_convert(const remat_exec_ctx *cx, const remat_instr *I)
{
    const cuda_ew *E = I->aux;
    rmi_cuda_convert(cx->state, I->n, E->f64, I->out, E->in_f64, I->in[0]);
}

typedef struct {
    int f64, is_max;
    remat_cuda_reduce_desc d;
} cuda_red;
static void k_reduce(const remat_exec_ctx *cx, const remat_instr *I)
{
    const cuda_red *R = I->aux;
    rmi_cuda_reduce(cx->state, R->f64, R->is_max, I->out, I->in[0], &R->d);
}

static void k_copy(const remat_exec_ctx *cx, const remat_instr *I)
{
    rmi_cuda_copy(cx->state, I->aux, I->out, I->in[0]);
}

typedef struct {
    int n_in, esize;
    int64_t outer, row;
    const int64_t *chunks;
} cuda_concat;
static void k_concat(const remat_exec_ctx *cx, const remat_instr *I)
{
    const cuda_concat *C = I->aux;
    int64_t col = 0;
    for (int j = 0; j < C->n_in; j++) {
        rmi_cuda_concat_one(cx->state, C->esize, C->outer, C->row, col, C->chunks[j], I->out, I->in[j]);
        col += C->chunks[j];
    }
}

typedef struct {
    int f64;
    remat_dot_plan pl;
    remat_cuda_copy_desc lhs, rhs; /* transposes into scratch (pl.lhs_copy / rhs_copy) */
} cuda_dot;
static void k_dot(const remat_exec_ctx *cx, const remat_instr *I)
{
    const cuda_dot *D = I->aux;
    const remat_dot_plan *pl = &D->pl;
    const char *a = I->in[0], *b = I->in[1];
    char *sp = I->scratch;
    if (pl->lhs_copy) {
        rmi_cuda_copy(cx->state, &D->lhs, sp, a);
        a = sp;
        sp += (size_t)(pl->nb * pl->m * pl->k) * (D->f64 ? 8 : 4);
    }
    if (pl->rhs_copy) {
        rmi_cuda_copy(cx->state, &D->rhs, sp, b);
        b = sp;
    }
    const int m = (int)pl->m, n = (int)pl->n, k = (int)pl->k;
    rmi_cuda_gemm(cx->state, D->f64, pl->lhs_trans, pl->rhs_trans, pl->nb, m, n, k, a, pl->lhs_trans ? m : k, b,
                  pl->rhs_trans ? k : n, I->out);
}

/* the CPU's copy plan as strides for the one copy kernel */
static void copy_desc(remat_cuda_copy_desc *d, const remat_copy_plan *p)
{
    memset(d, 0, sizeof *d);
    d->esize = p->esize;
    d->doff = p->doff;
    d->soff = p->soff;
    d->zero_bytes = p->zero_bytes;
    switch ((remat_copy_kind)p->kind) {
    case REMAT_COPY_EMPTY: d->n = 0; return;
    case REMAT_COPY_CONTIG: d->n = p->n; return; /* rank 0: one memcpy */
    case REMAT_COPY_ROWS:
    case REMAT_COPY_TILED: break;
    }
    d->rank = p->rank;
    d->n = 1;
    for (int i = 0; i < p->rank; i++) {
        d->dims[i] = p->dims[i], d->ds[i] = p->ds[i], d->ss[i] = p->ss[i];
        d->n *= p->dims[i];
    }
}

static remat_status nomem(remat_op op)
{
    return rmi_error(REMAT_ERR_NOMEM, "cuda backend: out of memory lowering '%s'", remat_op_name(op));
}

/* The elementwise ops ew_math.cuh has a case for (its switches end in a
 * default, which nvcc cannot make exhaustive): a row added to REMAT_OP_LIST
 * stops the build here until it is listed, and lists it here only with its
 * case in ew_math.cuh. */
REMAT_EXHAUSTIVE_BEGIN
static bool ew_kernel_knows(remat_op op)
{
    switch (op) {
    case REMAT_OP_NEG: case REMAT_OP_EXP: case REMAT_OP_LOG: case REMAT_OP_SIN: case REMAT_OP_COS:
    case REMAT_OP_TANH: case REMAT_OP_RELU: case REMAT_OP_SQUARE: case REMAT_OP_SQRT: case REMAT_OP_ERF:
    case REMAT_OP_LOG1P: case REMAT_OP_EXPM1: case REMAT_OP_LOGISTIC: case REMAT_OP_ERF_INV:
    case REMAT_OP_INTEGER_POW: case REMAT_OP_POW:
    case REMAT_OP_ADD: case REMAT_OP_SUB: case REMAT_OP_MUL: case REMAT_OP_DIV: case REMAT_OP_MAX:
    case REMAT_OP_MIN: case REMAT_OP_GT: case REMAT_OP_GE: case REMAT_OP_LT: case REMAT_OP_LE:
    case REMAT_OP_EQ: case REMAT_OP_NE: case REMAT_OP_SELECT:
        return true;
    case REMAT_OP_CONVERT: case REMAT_OP_CONSTANT: case REMAT_OP_ARG: case REMAT_OP_SUM:
    case REMAT_OP_REDUCE_MAX: case REMAT_OP_BROADCAST: case REMAT_OP_RESHAPE: case REMAT_OP_TRANSPOSE:
    case REMAT_OP_SLICE: case REMAT_OP_PAD: case REMAT_OP_CONCATENATE: case REMAT_OP_DOT_GENERAL:
    case REMAT_OP_NAME: case REMAT_OP_STOP_GRADIENT: case REMAT_OP_CHECKPOINT: case REMAT_OP_PROJ:
    case REMAT_OP_CUSTOM: case REMAT_OP_CUSTOM_VJP: case REMAT_OP_HOP: case REMAT_OP_LU:
    case REMAT_OP_LINEAR_SOLVE: case REMAT_OP_COUNT:
        return false;
    }
    return false;
}

/* Every category but leaves and control ops, of elementwise ops those with
 * a kernel case, of reductions only the two with kernels; f32 and f64. */
bool rmi_cuda_supports(const remat_exec_op *op)
{
    if (op->dtype != REMAT_F32 && op->dtype != REMAT_F64)
        return false;
    switch (remat_op_category_of(op->op)) {
    case REMAT_OPCAT_UNARY:
    case REMAT_OPCAT_BINARY:
    case REMAT_OPCAT_COMPARE:
    case REMAT_OPCAT_SELECT:
        return ew_kernel_knows(op->op);
    case REMAT_OPCAT_CONVERT:
    case REMAT_OPCAT_STRUCTURAL:
    case REMAT_OPCAT_DOT:
    case REMAT_OPCAT_IDENTITY:
    case REMAT_OPCAT_CUSTOM:
    case REMAT_OPCAT_LINALG:
        return true;
    case REMAT_OPCAT_REDUCE:
        return op->op == REMAT_OP_SUM || op->op == REMAT_OP_REDUCE_MAX;
    case REMAT_OPCAT_LEAF:
    case REMAT_OPCAT_CONTROL:
    case REMAT_OPCAT_COUNT:
        return false;
    }
    return false;
}
REMAT_EXHAUSTIVE_END

/* dot_general's transposes into scratch, and linear_solve's (kept, unused,
 * so that the arena plan stays the CPU's: the solve runs on the host with
 * host scratch, custom.c): the CPU's sizes */
size_t rmi_cuda_scratch(const remat_exec_op *op)
{
    const remat_op_category c = remat_op_category_of(op->op);
    if (c == REMAT_OPCAT_DOT)
        return rmi_layout_dot_general_scratch(op->dtype, &op->in_shapes[0], &op->in_shapes[1], op->p.dot);
    return c == REMAT_OPCAT_LINALG ? rmi_cuda_solve_scratch(op) : 0;
}

static cuda_ew *ew_block(const remat_exec_op *op, remat_instr *ins, void *(*alloc)(void *, size_t), void *ctx)
{
    cuda_ew *E = alloc(ctx, sizeof *E);
    if (E) {
        *E = (cuda_ew){.f64 = op->dtype == REMAT_F64, .op = (int)op->op, .mask = (int)op->scalar_mask};
        ins->aux = E;
    }
    return E;
}

REMAT_EXHAUSTIVE_BEGIN
static remat_status lower_unary(const remat_exec_op *op, remat_instr *ins, cuda_ew *E)
{
    switch (remat_op_param_of(op->op)) {
    case REMAT_OPP_NONE: ins->fn = k_unary; return REMAT_OK;
    case REMAT_OPP_INT_EXPONENT:
        if (op->p.int_exponent < INT_MIN || op->p.int_exponent > INT_MAX)
            return rmi_error(REMAT_ERR_UNSUPPORTED, "cuda backend: integer_pow exponent %lld outside int",
                             (long long)op->p.int_exponent);
        E->k = (int)op->p.int_exponent;
        ins->fn = k_ipow;
        return REMAT_OK;
    case REMAT_OPP_EXPONENT:
        E->p = op->p.exponent;
        ins->fn = k_pow;
        return REMAT_OK;
    case REMAT_OPP_FILL: case REMAT_OPP_ARG_POS: case REMAT_OPP_OUTPUT: case REMAT_OPP_AXIS:
    case REMAT_OPP_AXES: case REMAT_OPP_PERM: case REMAT_OPP_BDIMS: case REMAT_OPP_DOT:
    case REMAT_OPP_SOLVE: case REMAT_OPP_SLICE: case REMAT_OPP_PAD: case REMAT_OPP_CALL:
    case REMAT_OPP_CUSTOM: case REMAT_OPP_HOP: case REMAT_OPP_COUNT:
        break;
    }
    return rmi_error(REMAT_ERR_UNSUPPORTED, "cuda backend: unary op '%s' has a parameter it does not know",
                     remat_op_name(op->op));
}

static remat_status lower_structural(const remat_exec_op *op, remat_instr *ins, void *(*alloc)(void *, size_t),
                                     void *ctx)
{
    if (remat_op_param_of(op->op) == REMAT_OPP_AXIS) {
        remat_concat_plan P;
        cuda_concat *C = alloc(ctx, sizeof *C);
        int64_t *chunks = alloc(ctx, sizeof *chunks * (size_t)op->nin);
        if (!C || !chunks)
            return nomem(op->op);
        rmi_layout_concatenate(&P, chunks, op->dtype, op->nin, op->in_shapes, (int)op->p.axis);
        *C = (cuda_concat){.n_in = op->nin, .esize = (int)P.esize, .outer = P.outer, .row = P.row, .chunks = chunks};
        ins->fn = k_concat;
        ins->aux = C;
        return REMAT_OK;
    }
    remat_copy_plan P;
    remat_cuda_copy_desc *D = alloc(ctx, sizeof *D);
    if (!D)
        return nomem(op->op);
    if (!rmi_layout_copy_plan_of(&P, op, ins->n))
        return rmi_error(REMAT_ERR_UNSUPPORTED, "cuda backend: structural op '%s' has a parameter it does not know",
                         remat_op_name(op->op));
    copy_desc(D, &P);
    ins->fn = k_copy;
    ins->aux = D;
    return REMAT_OK;
}
REMAT_EXHAUSTIVE_END

static remat_status lower_dot(const remat_exec_op *op, remat_instr *ins, void *(*alloc)(void *, size_t), void *ctx)
{
    cuda_dot *D = alloc(ctx, sizeof *D);
    if (!D)
        return nomem(op->op);
    memset(D, 0, sizeof *D);
    D->f64 = op->dtype == REMAT_F64;
    D->pl = rmi_layout_dot_general(op->dtype, &op->in_shapes[0], &op->in_shapes[1], op->p.dot);
    const remat_dot_plan *pl = &D->pl;
    if (pl->m > INT_MAX || pl->n > INT_MAX || pl->k > INT_MAX || pl->nb > INT_MAX)
        return rmi_error(REMAT_ERR_UNSUPPORTED,
                         "cuda backend: dot_general of %lld x (%lld, %lld) . (%lld, %lld): cuBLAS takes int sizes",
                         (long long)pl->nb, (long long)pl->m, (long long)pl->k, (long long)pl->k,
                         (long long)pl->n);
    remat_copy_plan P;
    if (pl->lhs_copy) {
        rmi_layout_transpose(&P, op->dtype, &op->in_shapes[0], pl->lhs_perm);
        copy_desc(&D->lhs, &P);
    }
    if (pl->rhs_copy) {
        rmi_layout_transpose(&P, op->dtype, &op->in_shapes[1], pl->rhs_perm);
        copy_desc(&D->rhs, &P);
    }
    ins->fn = k_dot;
    ins->aux = D;
    return REMAT_OK;
}

static remat_status lower_reduce(const remat_exec_op *op, remat_instr *ins, void *(*alloc)(void *, size_t), void *ctx)
{
    cuda_red *R = alloc(ctx, sizeof *R);
    if (!R)
        return nomem(op->op);
    memset(R, 0, sizeof *R);
    R->f64 = op->dtype == REMAT_F64;
    R->is_max = op->op == REMAT_OP_REDUCE_MAX;
    R->d.rank = op->in_shapes[0].rank;
    for (int k = 0; k < R->d.rank; k++) {
        R->d.dims[k] = op->in_shapes[0].dims[k];
        R->d.reduce[k] = (uint8_t)((op->p.axes_mask >> k) & 1u);
    }
    ins->fn = k_reduce;
    ins->aux = R;
    return REMAT_OK;
}

REMAT_EXHAUSTIVE_BEGIN
remat_status rmi_cuda_lower(const remat_exec_op *op, remat_instr *ins, void *(*alloc)(void *, size_t), void *ctx)
{
    cuda_ew *E = NULL;
    switch (remat_op_category_of(op->op)) {
    case REMAT_OPCAT_UNARY:
        if (!(E = ew_block(op, ins, alloc, ctx)))
            return nomem(op->op);
        return lower_unary(op, ins, E);
    case REMAT_OPCAT_BINARY:
    case REMAT_OPCAT_COMPARE:
        if (!ew_block(op, ins, alloc, ctx))
            return nomem(op->op);
        ins->fn = k_binary;
        return REMAT_OK;
    case REMAT_OPCAT_SELECT:
        if (!ew_block(op, ins, alloc, ctx))
            return nomem(op->op);
        ins->fn = k_select;
        return REMAT_OK;
    case REMAT_OPCAT_CONVERT:
        if (!(E = ew_block(op, ins, alloc, ctx)))
            return nomem(op->op);
        E->in_f64 = op->in_dtypes[0] == REMAT_F64;
        ins->fn = k_convert;
        return REMAT_OK;
    case REMAT_OPCAT_STRUCTURAL:
        return lower_structural(op, ins, alloc, ctx);
    case REMAT_OPCAT_IDENTITY: { /* only when the compiler must materialise a copy */
        remat_cuda_copy_desc *D = alloc(ctx, sizeof *D);
        if (!D)
            return nomem(op->op);
        *D = (remat_cuda_copy_desc){.esize = (int)remat_dtype_size(op->dtype), .n = (int64_t)ins->n};
        ins->fn = k_copy;
        ins->aux = D;
        return REMAT_OK;
    }
    case REMAT_OPCAT_CUSTOM:
        return rmi_cuda_lower_custom(op, ins, alloc, ctx);
    case REMAT_OPCAT_REDUCE:
        if (op->op != REMAT_OP_SUM && op->op != REMAT_OP_REDUCE_MAX)
            break; /* a reduction without a kernel */
        return lower_reduce(op, ins, alloc, ctx);
    case REMAT_OPCAT_DOT:
        return lower_dot(op, ins, alloc, ctx);
    case REMAT_OPCAT_LINALG:
        return rmi_cuda_lower_solve(op, ins, alloc, ctx);
    case REMAT_OPCAT_LEAF:
    case REMAT_OPCAT_CONTROL:
    case REMAT_OPCAT_COUNT:
        break;
    }
    return rmi_error(REMAT_ERR_UNSUPPORTED, "cuda backend: op '%s' is not supported", remat_op_name(op->op));
}
REMAT_EXHAUSTIVE_END

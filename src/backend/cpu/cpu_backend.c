/*
 * cpu_backend.c — the CPU backend: lowers one op to a kernel adapter and its
 * parameter block. The adapters unpack the instruction and call the kernels
 * of cpu_kernels.h; they are the whole per-op dispatch cost.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend_impl.h"
#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/custom.h"
#include "backend/cpu/fused.h"
#include "backend/cpu/jit.h"
#include "backend/cpu/jit_cost.h"
#include "backend/cpu/split.h"
#include "backend/layout.h"
#include "backend/linalg.h"
#include "core/alloc.h"
#include "core/assert.h"
#include "core/error.h"
#include "core/exhaustive.h"

#define OP_OF(I) ((remat_op)(intptr_t)(I)->aux)

static void k_unary_f32(const remat_exec_ctx *cx, const remat_instr *I)
{
    rmi_cpu_unary_f32(OP_OF(I), I->n, I->out, I->in[0]);
}
static void k_unary_f64(const remat_exec_ctx *cx, const remat_instr *I)
{
    rmi_cpu_unary_f64(OP_OF(I), I->n, I->out, I->in[0]);
}
static void k_binary_f32(const remat_exec_ctx *cx, const remat_instr *I)
{
    rmi_cpu_binary_f32(OP_OF(I), I->n, I->out, I->in[0], I->in[1]);
}
static void k_binary_f64(const remat_exec_ctx *cx, const remat_instr *I)
{
    rmi_cpu_binary_f64(OP_OF(I), I->n, I->out, I->in[0], I->in[1]);
}

/* The hottest f64 ops get direct adapters (no switch on the op). Outputs
 * never overlap inputs (cpu_kernels.h), so the pointers are restrict and gcc
 * drops its runtime overlap check. Arrays of 1..3 elements (an ODE right-hand
 * side) are done one element at a time: the vectorised loop would load two
 * elements at once that the previous op often stored one at a time, and such
 * a load cannot be forwarded from the stores (a ~12-cycle stall per op). */
#define DIRECT_F64(NAME, EXPR)                                              \
    static void NAME(const remat_exec_ctx *cx, const remat_instr *I)        \
    {                                                                       \
        double *restrict o = I->out;                                        \
        const double *restrict a = I->in[0], *restrict b = I->in[1];        \
        const size_t n = I->n;                                              \
        size_t i = 0;                                                       \
        switch (n) {                                                        \
        case 3: o[i] = (EXPR), i++; /* fallthrough */                       \
        case 2: o[i] = (EXPR), i++; /* fallthrough */                       \
        case 1: o[i] = (EXPR); /* fallthrough */                            \
        case 0: return;                                                     \
        default: break;                                                     \
        }                                                                   \
        for (; i < n; i++)                                                  \
            o[i] = (EXPR);                                                  \
    }
DIRECT_F64(k_add_f64, a[i] + b[i])
DIRECT_F64(k_sub_f64, a[i] - b[i])
DIRECT_F64(k_mul_f64, a[i] * b[i])
DIRECT_F64(k_neg_f64, ((void)b, -a[i]))
/* with a scalar operand (a one-element splat constant): rs = b, ls = a */
DIRECT_F64(k_add_rs_f64, a[i] + b[0])
DIRECT_F64(k_sub_rs_f64, a[i] - b[0])
DIRECT_F64(k_mul_rs_f64, a[i] * b[0])
DIRECT_F64(k_add_ls_f64, a[0] + b[i])
DIRECT_F64(k_sub_ls_f64, a[0] - b[i])
DIRECT_F64(k_mul_ls_f64, a[0] * b[i])
#undef DIRECT_F64

/* one operand a scalar (a one-element splat constant): aux = op | (1 << 16)
 * when b is the scalar, op alone when a is */
#define SOP(I) ((remat_op)((intptr_t)(I)->aux & 0xffff))
#define SSIDE(I) ((int)((intptr_t)(I)->aux >> 16))
static void k_binary_s_f32(const remat_exec_ctx *cx, const remat_instr *I)
{
    rmi_cpu_binary_scalar_f32(SOP(I), I->n, I->out, I->in[0], I->in[1], SSIDE(I));
}
static void k_binary_s_f64(const remat_exec_ctx *cx, const remat_instr *I)
{
    rmi_cpu_binary_scalar_f64(SOP(I), I->n, I->out, I->in[0], I->in[1], SSIDE(I));
}
/* select with scalar branches: aux = the scalar mask (bit 1 on_true, bit 2 on_false) */
static void k_select_s_f32(const remat_exec_ctx *cx, const remat_instr *I)
{
    int m = (int)(intptr_t)I->aux;
    rmi_cpu_select_scalar_f32(I->n, I->out, I->in[0], I->in[1], m & 2, I->in[2], m & 4);
}
static void k_select_s_f64(const remat_exec_ctx *cx, const remat_instr *I)
{
    int m = (int)(intptr_t)I->aux;
    rmi_cpu_select_scalar_f64(I->n, I->out, I->in[0], I->in[1], m & 2, I->in[2], m & 4);
}

static void k_select_f32(const remat_exec_ctx *cx, const remat_instr *I)
{
    rmi_cpu_select_f32(I->n, I->out, I->in[0], I->in[1], I->in[2]);
}
static void k_select_f64(const remat_exec_ctx *cx, const remat_instr *I)
{
    rmi_cpu_select_f64(I->n, I->out, I->in[0], I->in[1], I->in[2]);
}
static void k_ipow_f32(const remat_exec_ctx *cx, const remat_instr *I)
{
    rmi_cpu_integer_pow_f32(I->n, I->out, I->in[0], (int)(intptr_t)I->aux);
}
static void k_ipow_f64(const remat_exec_ctx *cx, const remat_instr *I)
{
    rmi_cpu_integer_pow_f64(I->n, I->out, I->in[0], (int)(intptr_t)I->aux);
}
static void k_pow_f32(const remat_exec_ctx *cx, const remat_instr *I)
{
    rmi_cpu_pow_f32(I->n, I->out, I->in[0], *(const double *)I->aux);
}
static void k_pow_f64(const remat_exec_ctx *cx, const remat_instr *I)
{
    rmi_cpu_pow_f64(I->n, I->out, I->in[0], *(const double *)I->aux);
}

typedef struct {
    remat_dtype dt, in_dt;
    remat_shape out_shape, in_shape;
    bool reduce[REMAT_MAX_RANK];
    remat_dot_dims dot;
    remat_shape rhs_shape;
    const rmi_dot_sparse *sparse; /* dot_general with a mostly-zero constant operand, else NULL */
} struct_params;

/* transpose, broadcast_in_dim, slice, pad, materialised reshape: the shape
 * work was done at lowering */
static void k_copy_plan(const remat_exec_ctx *cx, const remat_instr *I) { rmi_cpu_copy_run(I->aux, I->out, I->in[0]); }

static void k_convert(const remat_exec_ctx *cx, const remat_instr *I)
{
    const struct_params *P = I->aux;
    rmi_cpu_convert(I->n, P->dt, I->out, P->in_dt, I->in[0]);
}
static void k_reduce(const remat_exec_ctx *cx, const remat_instr *I)
{
    const struct_params *P = I->aux;
    rmi_cpu_reduce_sum(P->dt, I->out, I->in[0], &P->in_shape, P->reduce);
}
static void k_reduce_max(const remat_exec_ctx *cx, const remat_instr *I)
{
    const struct_params *P = I->aux;
    rmi_cpu_reduce_max(P->dt, I->out, I->in[0], &P->in_shape, P->reduce);
}
static void k_dot(const remat_exec_ctx *cx, const remat_instr *I)
{
    const struct_params *P = I->aux;
    rmi_cpu_dot_general(P->dt, I->out, I->in[0], &P->in_shape, I->in[1], &P->rhs_shape, &P->dot, I->scratch);
}
static void k_dot_sparse(const remat_exec_ctx *cx, const remat_instr *I)
{
    const struct_params *P = I->aux;
    rmi_cpu_dot_sparse(P->sparse, I->out, I->in[0], &P->in_shape, I->in[1], &P->rhs_shape, &P->dot, I->scratch);
}

/* lu: A (batch, n, n); linear_solve: A, lu(A), b and out (batch, n, k) */
typedef struct {
    remat_dtype dt;
    int transpose;
    int64_t batch, n, k;
} solve_params;

static void solve_dims(const remat_exec_op *op, int64_t *batch, int64_t *n, int64_t *k)
{
    const remat_shape *a = &op->in_shapes[0];
    *n = a->dims[a->rank - 1];
    *batch = 1;
    for (int i = 0; i < a->rank - 2; i++)
        *batch *= a->dims[i];
    *k = op->shape.rank == a->rank ? op->shape.dims[a->rank - 1] : 1;
}

static void k_lu(const remat_exec_ctx *cx, const remat_instr *I)
{
    const solve_params *P = I->aux;
    rmi_host_lu(P->dt, I->out, I->in[0], P->batch, P->n, I->scratch);
}

/* inputs (A, lu(A), b): the kernel reads the factorisation and b; A is
 * there for the derivative */
static void k_linear_solve(const remat_exec_ctx *cx, const remat_instr *I)
{
    const solve_params *P = I->aux;
    rmi_host_linear_solve(P->dt, I->out, I->in[1], I->in[2], P->batch, P->n, P->k, P->transpose, I->scratch);
}

static void k_concat(const remat_exec_ctx *cx, const remat_instr *I)
{
    rmi_cpu_concatenate_run(I->aux, I->out, (const void *const *)I->in);
}

/* The CPU backend runs every category of the op table but leaves and
 * control ops (the compiler's), and no op outside the table. */
REMAT_EXHAUSTIVE_BEGIN
static bool cpu_supports(const remat_exec_op *op)
{
    switch (remat_op_category_of(op->op)) {
    case REMAT_OPCAT_UNARY:
    case REMAT_OPCAT_BINARY:
    case REMAT_OPCAT_COMPARE:
    case REMAT_OPCAT_SELECT:
    case REMAT_OPCAT_CONVERT:
    case REMAT_OPCAT_REDUCE:
    case REMAT_OPCAT_STRUCTURAL:
    case REMAT_OPCAT_DOT:
    case REMAT_OPCAT_LINALG:
    case REMAT_OPCAT_IDENTITY:
    case REMAT_OPCAT_CUSTOM:
        return (unsigned)op->dtype < REMAT_DTYPE_COUNT;
    case REMAT_OPCAT_LEAF:
    case REMAT_OPCAT_CONTROL:
    case REMAT_OPCAT_COUNT:
        return false;
    }
    return false;
}
REMAT_EXHAUSTIVE_END

static size_t cpu_scratch(const remat_exec_op *op)
{
    int64_t batch, n, k;
    const remat_op_category c = remat_op_category_of(op->op);
    if (c == REMAT_OPCAT_DOT)
        return rmi_layout_dot_general_scratch(op->dtype, &op->in_shapes[0], &op->in_shapes[1], op->p.dot);
    if (c != REMAT_OPCAT_LINALG)
        return 0;
    solve_dims(op, &batch, &n, &k);
    return op->op == REMAT_OP_LU ? rmi_host_lu_scratch(n) : rmi_host_linear_solve_scratch(op->dtype, n, k);
}

/* alloc (the program's memory) returned NULL: the compile fails, not the process */
static remat_status lower_nomem(remat_op op)
{
    return rmi_error(REMAT_ERR_NOMEM, "cpu backend: out of memory lowering '%s'", remat_op_name(op));
}

/* unary ops: by parameter kind; the op itself goes to the kernel (elementwise.c) */
REMAT_EXHAUSTIVE_BEGIN
static remat_status lower_unary(const remat_exec_op *op, remat_instr *ins, void *(*alloc)(void *, size_t), void *ctx)
{
    int f64 = op->dtype == REMAT_F64;
    switch (remat_op_param_of(op->op)) {
    case REMAT_OPP_NONE:
        if (f64 && op->op == REMAT_OP_NEG) {
            ins->fn = k_neg_f64;
            return REMAT_OK;
        }
        ins->fn = f64 ? k_unary_f64 : k_unary_f32;
        ins->aux = (const void *)(intptr_t)op->op;
        return REMAT_OK;
    case REMAT_OPP_INT_EXPONENT:
        ins->fn = f64 ? k_ipow_f64 : k_ipow_f32;
        ins->aux = (const void *)(intptr_t)op->p.int_exponent;
        return REMAT_OK;
    case REMAT_OPP_EXPONENT: {
        double *e = alloc(ctx, sizeof *e);
        if (!e)
            return lower_nomem(op->op);
        *e = op->p.exponent;
        ins->fn = f64 ? k_pow_f64 : k_pow_f32;
        ins->aux = e;
        return REMAT_OK;
    }
    case REMAT_OPP_FILL:
    case REMAT_OPP_ARG_POS:
    case REMAT_OPP_OUTPUT:
    case REMAT_OPP_AXIS:
    case REMAT_OPP_AXES:
    case REMAT_OPP_PERM:
    case REMAT_OPP_BDIMS:
    case REMAT_OPP_DOT:
    case REMAT_OPP_SOLVE:
    case REMAT_OPP_SLICE:
    case REMAT_OPP_PAD:
    case REMAT_OPP_CALL:
    case REMAT_OPP_CUSTOM:
    case REMAT_OPP_HOP:
    case REMAT_OPP_COUNT:
        break;
    }
    return rmi_error(REMAT_ERR_UNSUPPORTED, "cpu backend: unary op '%s' has a parameter it does not know",
                     remat_op_name(op->op));
}

/* binary ops and compares: the op goes to the kernel (elementwise.c) */
static remat_status lower_binary(const remat_exec_op *op, remat_instr *ins)
{
    int f64 = op->dtype == REMAT_F64;
    if (f64 && (op->op == REMAT_OP_ADD || op->op == REMAT_OP_SUB || op->op == REMAT_OP_MUL)) {
        if (!op->scalar_mask) {
            ins->fn = op->op == REMAT_OP_ADD ? k_add_f64 : op->op == REMAT_OP_SUB ? k_sub_f64 : k_mul_f64;
            return REMAT_OK;
        }
        if (op->scalar_mask == 2) {
            ins->fn = op->op == REMAT_OP_ADD ? k_add_rs_f64 : op->op == REMAT_OP_SUB ? k_sub_rs_f64 : k_mul_rs_f64;
            return REMAT_OK;
        }
        if (op->scalar_mask == 1) {
            ins->fn = op->op == REMAT_OP_ADD ? k_add_ls_f64 : op->op == REMAT_OP_SUB ? k_sub_ls_f64 : k_mul_ls_f64;
            return REMAT_OK;
        }
    }
    if (op->scalar_mask) {
        ins->fn = f64 ? k_binary_s_f64 : k_binary_s_f32;
        ins->aux = (const void *)(intptr_t)(op->op | ((op->scalar_mask & 2) ? 1 << 16 : 0));
        return REMAT_OK;
    }
    ins->fn = f64 ? k_binary_f64 : k_binary_f32;
    ins->aux = (const void *)(intptr_t)op->op;
    return REMAT_OK;
}

/* structural ops: the parameter kind names the plan */
static remat_status lower_structural(const remat_exec_op *op, remat_instr *ins, void *(*alloc)(void *, size_t),
                                     void *ctx)
{
    if (remat_op_param_of(op->op) == REMAT_OPP_AXIS) {
        remat_concat_plan *C = alloc(ctx, sizeof *C);
        int64_t *chunks = alloc(ctx, sizeof *chunks * (size_t)op->nin);
        if (!C || !chunks)
            return lower_nomem(op->op);
        rmi_layout_concatenate(C, chunks, op->dtype, op->nin, op->in_shapes, (int)op->p.axis);
        ins->fn = k_concat;
        ins->aux = C;
        return REMAT_OK;
    }
    remat_copy_plan *C = alloc(ctx, sizeof *C);
    if (!C)
        return lower_nomem(op->op);
    if (!rmi_layout_copy_plan_of(C, op, ins->n))
        return rmi_error(REMAT_ERR_UNSUPPORTED, "cpu backend: structural op '%s' has a parameter it does not know",
                         remat_op_name(op->op));
    ins->fn = k_copy_plan;
    ins->aux = C;
    return REMAT_OK;
}
REMAT_EXHAUSTIVE_END

/* the ops that share struct_params: convert, reductions, dot_general; NULL
 * when out of memory */
static struct_params *struct_block(const remat_exec_op *op, remat_instr *ins, void *(*alloc)(void *, size_t),
                                   void *ctx)
{
    struct_params *P = alloc(ctx, sizeof *P);
    if (!P)
        return NULL;
    P->dt = op->dtype;
    P->out_shape = op->shape;
    if (op->nin > 0) {
        P->in_shape = op->in_shapes[0];
        P->in_dt = op->in_dtypes[0];
    }
    ins->aux = P;
    return P;
}

/* One case per category of the op table: an op needs a line here only when
 * its category is new. */
REMAT_EXHAUSTIVE_BEGIN
static remat_status cpu_lower(const remat_exec_op *op, remat_instr *ins, void *(*alloc)(void *, size_t), void *ctx)
{
    int f64 = op->dtype == REMAT_F64;
    struct_params *P = NULL;
    switch (remat_op_category_of(op->op)) {
    case REMAT_OPCAT_UNARY:
        return lower_unary(op, ins, alloc, ctx);
    case REMAT_OPCAT_BINARY:
    case REMAT_OPCAT_COMPARE:
        return lower_binary(op, ins);
    case REMAT_OPCAT_SELECT:
        if (op->scalar_mask) {
            ins->fn = f64 ? k_select_s_f64 : k_select_s_f32;
            ins->aux = (const void *)(intptr_t)op->scalar_mask;
            return REMAT_OK;
        }
        ins->fn = f64 ? k_select_f64 : k_select_f32;
        return REMAT_OK;
    case REMAT_OPCAT_STRUCTURAL:
        return lower_structural(op, ins, alloc, ctx);
    case REMAT_OPCAT_IDENTITY: { /* only when the compiler must materialise a copy */
        remat_copy_plan *C = alloc(ctx, sizeof *C);
        if (!C)
            return lower_nomem(op->op);
        *C = rmi_layout_contig(op->dtype, ins->n);
        ins->fn = k_copy_plan;
        ins->aux = C;
        return REMAT_OK;
    }
    case REMAT_OPCAT_CUSTOM:
        return rmi_cpu_lower_custom(op, ins, alloc, ctx);
    case REMAT_OPCAT_CONVERT:
        if (!struct_block(op, ins, alloc, ctx))
            return lower_nomem(op->op);
        ins->fn = k_convert;
        return REMAT_OK;
    case REMAT_OPCAT_REDUCE:
        if (op->op != REMAT_OP_SUM && op->op != REMAT_OP_REDUCE_MAX)
            break; /* a reduction without a kernel */
        if (!(P = struct_block(op, ins, alloc, ctx)))
            return lower_nomem(op->op);
        for (int k = 0; k < P->in_shape.rank; k++)
            P->reduce[k] = (op->p.axes_mask >> k) & 1u;
        ins->fn = op->op == REMAT_OP_SUM ? k_reduce : k_reduce_max;
        return REMAT_OK;
    case REMAT_OPCAT_DOT: {
        remat_status st = rmi_cpu_blas_reserve();
        if (st != REMAT_OK)
            return st;
        if (!(P = struct_block(op, ins, alloc, ctx)))
            return lower_nomem(op->op);
        P->dot = *op->p.dot;
        P->rhs_shape = op->in_shapes[1];
        ins->fn = k_dot;
        int oom;
        if ((P->sparse = rmi_cpu_dot_sparse_plan(op, alloc, ctx, &oom)))
            ins->fn = k_dot_sparse;
        return oom ? lower_nomem(op->op) : REMAT_OK;
    }
    case REMAT_OPCAT_LINALG: {
        remat_status st = rmi_cpu_blas_reserve();
        if (st != REMAT_OK)
            return st;
        solve_params *S = alloc(ctx, sizeof *S);
        if (!S)
            return lower_nomem(op->op);
        *S = (solve_params){.dt = op->dtype, .transpose = op->op == REMAT_OP_LINEAR_SOLVE && op->p.solve_transpose};
        solve_dims(op, &S->batch, &S->n, &S->k);
        ins->fn = op->op == REMAT_OP_LU ? k_lu : k_linear_solve;
        ins->aux = S;
        return REMAT_OK;
    }
    case REMAT_OPCAT_LEAF:
    case REMAT_OPCAT_CONTROL:
    case REMAT_OPCAT_COUNT:
        break;
    }
    return rmi_error(REMAT_ERR_UNSUPPORTED, "cpu backend: op '%s' is not supported", remat_op_name(op->op));
}
REMAT_EXHAUSTIVE_END

/* cpu_lower, then large elementwise instructions split across threads */
static remat_status cpu_lower_split(const remat_exec_op *op, remat_instr *ins, void *(*alloc)(void *, size_t),
                                    void *ctx)
{
    remat_status st = cpu_lower(op, ins, alloc, ctx);
    return st == REMAT_OK ? rmi_cpu_split_large(op, ins, alloc, ctx) : st;
}

static void k_add_pad(const remat_exec_ctx *cx, const remat_instr *I)
{
    rmi_cpu_add_pad_run(I->aux, I->out, I->in[0], I->in[1]);
}

static remat_status cpu_lower_add_pad(remat_dtype dt, const remat_shape *out_shape, const remat_shape *g_shape,
                                      const remat_pad_params *pad, int pad_first, remat_instr *ins,
                                      void *(*alloc)(void *, size_t), void *ctx)
{
    remat_cpu_add_pad_layout *L = alloc(ctx, sizeof *L);
    if (!L)
        return lower_nomem(REMAT_OP_ADD);
    rmi_cpu_add_pad_plan(L, dt, out_shape, g_shape, pad, pad_first);
    ins->fn = k_add_pad;
    ins->aux = L;
    return REMAT_OK;
}

static void *cpu_mem_alloc(const remat_exec_ctx *cx, size_t bytes) { return rmi_aligned_alloc(64, bytes); }

static void cpu_mem_free(const remat_exec_ctx *cx, void *p) { rmi_free(p); }

static void cpu_mem_copy(const remat_exec_ctx *cx, void *dst, const void *src, size_t bytes)
{
    memcpy(dst, src, bytes);
}

static void cpu_mem_fill(const remat_exec_ctx *cx, void *dst, remat_dtype dt, double value, size_t n)
{
    switch (dt) {
    case REMAT_F64:
        for (size_t i = 0; i < n; i++)
            ((double *)dst)[i] = value;
        return;
    case REMAT_F32:
        for (size_t i = 0; i < n; i++)
            ((float *)dst)[i] = (float)value;
        return;
    default: REMAT_UNREACHABLE("cpu: mem_fill of a non-float dtype");
    }
}

static remat_backend cpu_backend = {
    .iface = {
        .name = "cpu",
        .supports_op = cpu_supports,
        .scratch_bytes = cpu_scratch,
        .lower = cpu_lower_split,
        .lower_fused = rmi_cpu_lower_fused,
        .fuse_reduce = true,
        .lower_add_pad = cpu_lower_add_pad,
#if REMAT_HAVE_GCCJIT
        .compile_lanes = rmi_cpu_compile_lanes,
        .can_compile_lanes = rmi_cpu_can_compile_lanes,
        .load_lanes = rmi_cpu_load_lanes,
        .lanes_compile_ns = rmi_cpu_lanes_compile_ns,
#endif
        .host_lane_cuts = true,
        .mem_alloc = cpu_mem_alloc,
        .mem_free = cpu_mem_free,
        .mem_copy = cpu_mem_copy,
        .mem_fill = cpu_mem_fill,
    },
};

remat_backend *remat_backend_cpu(void) { return &cpu_backend; }

const char *remat_backend_name(const remat_backend *be)
{
    REMAT_NULL_RETURN(be, "(null)");
    return be->iface.name;
}

/*
 * jit_gen.c — the lane-program code generator: one libgccjit function per
 * program, every op written as the CPU kernel writes it (see jit.c's header
 * for the function's shape and why the bits equal the interpreter's).
 */
#if REMAT_HAVE_GCCJIT

#include <stdio.h>

#include "backend/cpu/jit_gen.h"
#include "backend/cpu/vmath.h"
#include "core/alloc.h"
#include "core/assert.h"
#include "core/exhaustive.h"
#include "remat/op.h"

/* the kernels' functions: SLEEF's scalar twin of their vectors (vmath.h), sqrt IEEE's */
static const rmi_vm_fn vm_of[M_COUNT] = {RMI_VM_EXP, RMI_VM_LOG, RMI_VM_SIN, RMI_VM_COS,
                                         RMI_VM_TANH, RMI_VM_COUNT, RMI_VM_ERF, RMI_VM_LOG1P,
                                         RMI_VM_EXPM1, RMI_VM_POW};

static const char *math_name(int f, int which)
{
    if (which == M_SQRT)
        return f ? "sqrt" : "sqrtf";
    return rmi_vm_scalar_name(vm_of[which], f);
}

typedef struct {
    const remat_lane_program *p;
    gcc_jit_context *c;
    gcc_jit_type *t_f[2], *t_fp[2], *t_i64, *t_int, *t_bool, *t_void, *t_charp;
    gcc_jit_function *fn;
    remat_jit_math *math;
    gcc_jit_block *cur;
    gcc_jit_lvalue **reg, **pbuf, **stride, *s, *j;
    int64_t *state_off; /* m == 1: the state elements kept in locals */
    int32_t *state_buf;
    gcc_jit_lvalue **state_local;
    int n_state;
    int n_blocks;
} gen;

static int fidx(remat_dtype dt) { return dt == REMAT_F64; }

static gcc_jit_rvalue *rv(gcc_jit_lvalue *l) { return gcc_jit_lvalue_as_rvalue(l); }

static gcc_jit_rvalue *i64c(gen *g, int64_t v) { return gcc_jit_context_new_rvalue_from_long(g->c, g->t_i64, (long)v); }

static gcc_jit_rvalue *fconst(gen *g, remat_dtype dt, double v)
{
    return gcc_jit_context_new_rvalue_from_double(g->c, g->t_f[fidx(dt)], dt == REMAT_F32 ? (double)(float)v : v);
}

/* named, so that the IR dump (the disk cache's key) holds no addresses */
static gcc_jit_block *new_block(gen *g)
{
    char name[32];
    snprintf(name, sizeof name, "b%d", g->n_blocks++);
    return gcc_jit_function_new_block(g->fn, name);
}

static gcc_jit_function *math_fn(gen *g, remat_dtype dt, int which)
{
    const int f = fidx(dt);
    if (!g->math->fn[f][which]) {
        gcc_jit_param *ps[2] = {gcc_jit_context_new_param(g->c, NULL, g->t_f[f], "x"),
                                gcc_jit_context_new_param(g->c, NULL, g->t_f[f], "y")};
        g->math->fn[f][which] = gcc_jit_context_new_function(g->c, NULL, GCC_JIT_FUNCTION_IMPORTED, g->t_f[f],
                                                         math_name(f, which), which == M_POW ? 2 : 1, ps, 0);
    }
    return g->math->fn[f][which];
}

static gcc_jit_rvalue *call1(gen *g, remat_dtype dt, int which, gcc_jit_rvalue *x)
{
    return gcc_jit_context_new_call(g->c, NULL, math_fn(g, dt, which), 1, &x);
}

/* the state local of (buf, off), m == 1 */
static gcc_jit_lvalue *state_local(gen *g, int32_t buf, int64_t off)
{
    for (int k = 0; k < g->n_state; k++)
        if (g->state_buf[k] == buf && g->state_off[k] == off)
            return g->state_local[k];
    REMAT_UNREACHABLE("jit: a state element was not collected");
}

static gcc_jit_lvalue *element(gen *g, int32_t buf, int64_t off, int64_t lstride)
{
    const remat_lane_buf *B = &g->p->bufs[buf];
    if (B->state && g->p->m == 1)
        return state_local(g, buf, off);
    gcc_jit_rvalue *base = gcc_jit_context_new_cast(g->c, NULL, rv(g->pbuf[buf]), g->t_fp[fidx(B->dt)]);
    gcc_jit_rvalue *idx = i64c(g, off);
    if (g->p->m > 1 && lstride != 0)
        idx = gcc_jit_context_new_binary_op(
            g->c, NULL, GCC_JIT_BINARY_OP_PLUS, g->t_i64, idx,
            gcc_jit_context_new_binary_op(g->c, NULL, GCC_JIT_BINARY_OP_MULT, g->t_i64, rv(g->j), i64c(g, lstride)));
    return gcc_jit_context_new_array_access(g->c, NULL, base, idx);
}

/* dst = cond ? x : y, as a branch diamond (gcc's if-conversion makes it a
 * select or a blend; libgccjit 12 has no conditional expression) */
static void assign_cond(gen *g, gcc_jit_lvalue *dst, gcc_jit_rvalue *cond, gcc_jit_rvalue *x, gcc_jit_rvalue *y)
{
    gcc_jit_block *bt = new_block(g), *bf = new_block(g), *join = new_block(g);
    gcc_jit_block_end_with_conditional(g->cur, NULL, cond, bt, bf);
    gcc_jit_block_add_assignment(bt, NULL, dst, x);
    gcc_jit_block_end_with_jump(bt, NULL, join);
    gcc_jit_block_add_assignment(bf, NULL, dst, y);
    gcc_jit_block_end_with_jump(bf, NULL, join);
    g->cur = join;
}

static gcc_jit_rvalue *cmp(gen *g, enum gcc_jit_comparison k, gcc_jit_rvalue *x, gcc_jit_rvalue *y)
{
    return gcc_jit_context_new_comparison(g->c, NULL, k, x, y);
}

static gcc_jit_rvalue *bin(gen *g, enum gcc_jit_binary_op k, remat_dtype dt, gcc_jit_rvalue *x, gcc_jit_rvalue *y)
{
    return gcc_jit_context_new_binary_op(g->c, NULL, k, g->t_f[fidx(dt)], x, y);
}

/* integer_pow exactly as remat_cpu_integer_pow_* computes it */
static gcc_jit_rvalue *integer_pow(gen *g, remat_dtype dt, gcc_jit_lvalue *dst, gcc_jit_rvalue *x, int k)
{
    gcc_jit_rvalue *one = fconst(g, dt, 1.0);
    switch (k) {
    case 0: return one;
    case 1: return x;
    case 2: return bin(g, GCC_JIT_BINARY_OP_MULT, dt, x, x);
    case 3: return bin(g, GCC_JIT_BINARY_OP_MULT, dt, x, bin(g, GCC_JIT_BINARY_OP_MULT, dt, x, x));
    case 4:
        return bin(g, GCC_JIT_BINARY_OP_MULT, dt, bin(g, GCC_JIT_BINARY_OP_MULT, dt, x, x),
                   bin(g, GCC_JIT_BINARY_OP_MULT, dt, x, x));
    case -1: return bin(g, GCC_JIT_BINARY_OP_DIVIDE, dt, one, x);
    case -2: return bin(g, GCC_JIT_BINARY_OP_DIVIDE, dt, one, bin(g, GCC_JIT_BINARY_OP_MULT, dt, x, x));
    default: break;
    }
    /* square-and-multiply with explicit temporaries (each product rounded once) */
    gcc_jit_type *T = g->t_f[fidx(dt)];
    char name[32];
    snprintf(name, sizeof name, "pw%d", g->n_blocks++);
    gcc_jit_lvalue *xp = gcc_jit_function_new_local(g->fn, NULL, T, name);
    gcc_jit_block_add_assignment(g->cur, NULL, xp, x);
    gcc_jit_rvalue *acc = NULL;
    const unsigned mag = k < 0 ? 0u - (unsigned)k : (unsigned)k;
    for (unsigned e = mag; e; e >>= 1) {
        if (e & 1u) {
            gcc_jit_rvalue *v = acc ? bin(g, GCC_JIT_BINARY_OP_MULT, dt, acc, rv(xp)) : rv(xp);
            gcc_jit_block_add_assignment(g->cur, NULL, dst, v);
            acc = rv(dst);
        }
        if (e >> 1)
            gcc_jit_block_add_assignment(g->cur, NULL, xp, bin(g, GCC_JIT_BINARY_OP_MULT, dt, rv(xp), rv(xp)));
    }
    return k < 0 ? bin(g, GCC_JIT_BINARY_OP_DIVIDE, dt, one, acc) : acc;
}

static gcc_jit_rvalue *as_t(gen *g, remat_dtype dt, gcc_jit_rvalue *cond)
{
    return gcc_jit_context_new_cast(g->c, NULL, gcc_jit_context_new_cast(g->c, NULL, cond, g->t_int), g->t_f[fidx(dt)]);
}

/* One case per op (core/exhaustive.h): an op added to REMAT_OP_LIST does not
 * compile here until it has its code or is listed as never in a lane program. */
REMAT_EXHAUSTIVE_BEGIN
static int emit_op(gen *g, int i)
{
    const remat_lane_ins *I = &g->p->ins[i];
    const remat_dtype dt = I->dt;
    gcc_jit_lvalue *dst = g->reg[i];
    gcc_jit_rvalue *x = I->a >= 0 ? rv(g->reg[I->a]) : NULL, *y = I->b >= 0 ? rv(g->reg[I->b]) : NULL;
    gcc_jit_rvalue *v = NULL;
    switch ((remat_op)I->op) {
    case REMAT_OP_ADD: v = bin(g, GCC_JIT_BINARY_OP_PLUS, dt, x, y); break;
    case REMAT_OP_SUB: v = bin(g, GCC_JIT_BINARY_OP_MINUS, dt, x, y); break;
    case REMAT_OP_MUL: v = bin(g, GCC_JIT_BINARY_OP_MULT, dt, x, y); break;
    case REMAT_OP_DIV: v = bin(g, GCC_JIT_BINARY_OP_DIVIDE, dt, x, y); break;
    case REMAT_OP_SQUARE: v = bin(g, GCC_JIT_BINARY_OP_MULT, dt, x, x); break;
    case REMAT_OP_NEG: v = gcc_jit_context_new_unary_op(g->c, NULL, GCC_JIT_UNARY_OP_MINUS, g->t_f[fidx(dt)], x); break;
    case REMAT_OP_EXP: v = call1(g, dt, M_EXP, x); break;
    case REMAT_OP_LOG: v = call1(g, dt, M_LOG, x); break;
    case REMAT_OP_SIN: v = call1(g, dt, M_SIN, x); break;
    case REMAT_OP_COS: v = call1(g, dt, M_COS, x); break;
    case REMAT_OP_TANH: v = call1(g, dt, M_TANH, x); break;
    case REMAT_OP_SQRT: v = call1(g, dt, M_SQRT, x); break;
    case REMAT_OP_ERF: v = call1(g, dt, M_ERF, x); break;
    case REMAT_OP_LOG1P: v = call1(g, dt, M_LOG1P, x); break;
    case REMAT_OP_EXPM1: v = call1(g, dt, M_EXPM1, x); break;
    case REMAT_OP_LOGISTIC: { /* 1 / (1 + exp(-x)), elementwise.c's order */
        gcc_jit_rvalue *e = call1(g, dt, M_EXP,
                                  gcc_jit_context_new_unary_op(g->c, NULL, GCC_JIT_UNARY_OP_MINUS, g->t_f[fidx(dt)], x));
        v = bin(g, GCC_JIT_BINARY_OP_DIVIDE, dt, fconst(g, dt, 1.0), bin(g, GCC_JIT_BINARY_OP_PLUS, dt, fconst(g, dt, 1.0), e));
        break;
    }
    case REMAT_OP_POW: {
        gcc_jit_rvalue *args[2] = {x, fconst(g, dt, I->imm)};
        v = gcc_jit_context_new_call(g->c, NULL, math_fn(g, dt, M_POW), 2, args);
        break;
    }
    case REMAT_OP_INTEGER_POW: v = integer_pow(g, dt, dst, x, (int)I->imm); break;
    case REMAT_OP_GT: v = as_t(g, dt, cmp(g, GCC_JIT_COMPARISON_GT, x, y)); break;
    case REMAT_OP_GE: v = as_t(g, dt, cmp(g, GCC_JIT_COMPARISON_GE, x, y)); break;
    case REMAT_OP_LT: v = as_t(g, dt, cmp(g, GCC_JIT_COMPARISON_LT, x, y)); break;
    case REMAT_OP_LE: v = as_t(g, dt, cmp(g, GCC_JIT_COMPARISON_LE, x, y)); break;
    case REMAT_OP_EQ: v = as_t(g, dt, cmp(g, GCC_JIT_COMPARISON_EQ, x, y)); break;
    case REMAT_OP_NE: v = as_t(g, dt, cmp(g, GCC_JIT_COMPARISON_NE, x, y)); break;
    case REMAT_OP_MAX:
    case REMAT_OP_MIN: {
        gcc_jit_rvalue *c1 = cmp(g, I->op == REMAT_OP_MAX ? GCC_JIT_COMPARISON_GT : GCC_JIT_COMPARISON_LT, x, y);
        gcc_jit_rvalue *c2 = cmp(g, GCC_JIT_COMPARISON_NE, x, x);
        assign_cond(g, dst, gcc_jit_context_new_binary_op(g->c, NULL, GCC_JIT_BINARY_OP_LOGICAL_OR, g->t_bool, c1, c2),
                    x, y);
        return 1;
    }
    case REMAT_OP_RELU:
        assign_cond(g, dst, cmp(g, GCC_JIT_COMPARISON_LE, x, fconst(g, dt, 0.0)), fconst(g, dt, 0.0), x);
        return 1;
    case REMAT_OP_SELECT:
        assign_cond(g, dst, cmp(g, GCC_JIT_COMPARISON_NE, x, fconst(g, g->p->ins[I->a].dt, 0.0)), y,
                    rv(g->reg[I->c]));
        return 1;
    case REMAT_OP_CONVERT: v = gcc_jit_context_new_cast(g->c, NULL, x, g->t_f[fidx(dt)]); break;
    /* never in a lane program (scan_lanes.c translates elementwise ops and
     * converts only): the kernel is not compiled and the scan interprets */
    case REMAT_OP_CONSTANT: case REMAT_OP_ARG: case REMAT_OP_SUM: case REMAT_OP_REDUCE_MAX: case REMAT_OP_BROADCAST:
    case REMAT_OP_RESHAPE: case REMAT_OP_TRANSPOSE: case REMAT_OP_SLICE: case REMAT_OP_PAD: case REMAT_OP_CONCATENATE:
    case REMAT_OP_DOT_GENERAL: case REMAT_OP_LU: case REMAT_OP_LINEAR_SOLVE: case REMAT_OP_NAME:
    /* erf_inv is a library function (vmath_erfinv.c) compiled code cannot
     * import: a program holding it runs interpreted, the same bits */
    case REMAT_OP_ERF_INV:
    case REMAT_OP_STOP_GRADIENT: case REMAT_OP_CHECKPOINT: case REMAT_OP_PROJ: case REMAT_OP_CUSTOM:
    case REMAT_OP_CUSTOM_VJP: case REMAT_OP_HOP: case REMAT_OP_COUNT:
        return 0;
    }
    gcc_jit_block_add_assignment(g->cur, NULL, dst, v);
    return 1;
}

REMAT_EXHAUSTIVE_END

/* ---- blocked programs (jit.c's header): the lanes in blocks, each
 * transcendental one call of the interpreted kernels' map on the block ---- */

/* rmi_vm_map_any's fn for a lane op in a blocked program; -1: inline code */
static int map_of(remat_op op)
{
    switch (op) {
    case REMAT_OP_EXP: case REMAT_OP_LOGISTIC: return RMI_VM_EXP; /* logistic: 1 / (1 + exp(-x)) */
    case REMAT_OP_LOG: return RMI_VM_LOG;
    case REMAT_OP_SIN: return RMI_VM_SIN;
    case REMAT_OP_COS: return RMI_VM_COS;
    case REMAT_OP_TANH: return RMI_VM_TANH;
    case REMAT_OP_ERF: return RMI_VM_ERF;
    case REMAT_OP_LOG1P: return RMI_VM_LOG1P;
    case REMAT_OP_EXPM1: return RMI_VM_EXPM1;
    case REMAT_OP_POW: return RMI_VM_POW;
    case REMAT_OP_ERF_INV: return RMI_VM_COUNT;
    default: return -1;
    }
}

static bool is_map(const remat_lane_ins *I) { return I->kind == REMAT_LANE_OP && map_of((remat_op)I->op) >= 0; }

/* Blocked: many lanes, no state, no sums across lanes, no exit, and a
 * transcendental (the fused groups of exec/fuse_jit.c that hold one). */
bool rmi_jit_blocked(const remat_lane_program *p)
{
    if (p->m < 2)
        return false;
    for (int b = 0; b < p->n_bufs; b++)
        if (p->bufs[b].state)
            return false;
    bool any = false;
    for (int i = 0; i < p->n_ins; i++) {
        const remat_lane_ins *I = &p->ins[i];
        if (I->post || (I->kind != REMAT_LANE_LOAD && I->kind != REMAT_LANE_CONST && I->kind != REMAT_LANE_OP &&
                        I->kind != REMAT_LANE_STORE))
            return false;
        any |= is_map(I);
    }
    return any;
}

typedef struct {
    int *seg;               /* an instruction's segment; a map op's: the segment its input is copied in */
    int *loaded;            /* segment + 1 where the register was last read back from its array */
    gcc_jit_lvalue **arr;   /* a register's block (map op: its result), NULL when it stays in its segment */
    gcc_jit_lvalue **in;    /* a map op's argument block */
    gcc_jit_lvalue *jb, *mb, *jend;
} blocked;

static gcc_jit_rvalue *jj(gen *g, blocked *B)
{
    return gcc_jit_context_new_binary_op(g->c, NULL, GCC_JIT_BINARY_OP_MINUS, g->t_i64, rv(g->j), rv(B->jb));
}

static gcc_jit_lvalue *at(gen *g, blocked *B, gcc_jit_lvalue *arr)
{
    return gcc_jit_context_new_array_access(g->c, NULL, rv(arr), jj(g, B));
}

static gcc_jit_rvalue *addr0(gen *g, gcc_jit_lvalue *arr)
{
    gcc_jit_type *vp = gcc_jit_type_get_pointer(g->t_void);
    return gcc_jit_context_new_cast(
        g->c, NULL, gcc_jit_lvalue_get_address(gcc_jit_context_new_array_access(g->c, NULL, rv(arr), i64c(g, 0)), NULL),
        vp);
}

/* register r in segment k: computed there, or read back from its block */
static void ensure(gen *g, blocked *B, int r, int k)
{
    if (r < 0 || (B->seg[r] == k && !is_map(&g->p->ins[r])) || B->loaded[r] == k + 1)
        return;
    const remat_lane_ins *R = &g->p->ins[r];
    gcc_jit_rvalue *v = rv(at(g, B, B->arr[r]));
    if (R->kind == REMAT_LANE_OP && R->op == REMAT_OP_LOGISTIC)
        v = bin(g, GCC_JIT_BINARY_OP_DIVIDE, R->dt, fconst(g, R->dt, 1.0),
                bin(g, GCC_JIT_BINARY_OP_PLUS, R->dt, fconst(g, R->dt, 1.0), v));
    gcc_jit_block_add_assignment(g->cur, NULL, g->reg[r], v);
    B->loaded[r] = k + 1;
}

static gcc_jit_lvalue *block_local(gen *g, remat_dtype dt, int64_t len, const char *pre, int i)
{
    char name[32];
    snprintf(name, sizeof name, "%s%d", pre, i);
    return gcc_jit_function_new_local(g->fn, NULL, gcc_jit_context_new_array_type(g->c, NULL, g->t_f[fidx(dt)], (int)len),
                                      name);
}

static gcc_jit_rvalue *vmap(gen *g)
{
    if (!g->math->vmap) {
        gcc_jit_type *ts[6] = {g->t_int, g->t_int, g->t_i64, gcc_jit_type_get_pointer(g->t_void),
                               gcc_jit_type_get_pointer(g->t_void),
                               g->t_f[1]};
        g->math->vmap_t = gcc_jit_context_new_function_ptr_type(g->c, NULL, g->t_void, 6, ts, 0);
        g->math->vmap = gcc_jit_context_new_global(g->c, NULL, GCC_JIT_GLOBAL_EXPORTED, g->math->vmap_t, RMI_JIT_VMAP);
    }
    return rv(g->math->vmap);
}

/* The lanes of one step (`lanes` of them) in blocks of at most bl, from
 * g->cur; ends jumping to `after`. Segment k's loop runs the instructions
 * between map op k - 1 and map op k over the block and copies map op k's
 * argument into its block; then the map runs on it. */
static int emit_blocked_lanes(gen *g, blocked *B, int n_maps, int64_t bl, gcc_jit_rvalue *lanes, gcc_jit_block *after)
{
    const remat_lane_program *p = g->p;
    gcc_jit_block *jb_cond = new_block(g), *jb_body = new_block(g);
    gcc_jit_block_add_assignment(g->cur, NULL, B->jb, i64c(g, 0));
    gcc_jit_block_end_with_jump(g->cur, NULL, jb_cond);
    gcc_jit_block_end_with_conditional(jb_cond, NULL, cmp(g, GCC_JIT_COMPARISON_LT, rv(B->jb), lanes), jb_body, after);
    g->cur = jb_body;
    gcc_jit_rvalue *left = gcc_jit_context_new_binary_op(g->c, NULL, GCC_JIT_BINARY_OP_MINUS, g->t_i64, lanes, rv(B->jb));
    assign_cond(g, B->mb, cmp(g, GCC_JIT_COMPARISON_GT, left, i64c(g, bl)), i64c(g, bl), left);
    gcc_jit_block_add_assignment(g->cur, NULL, B->jend,
                                 gcc_jit_context_new_binary_op(g->c, NULL, GCC_JIT_BINARY_OP_PLUS, g->t_i64, rv(B->jb),
                                                               rv(B->mb)));
    for (int k = 0; k <= n_maps; k++) {
        gcc_jit_block *jc = new_block(g), *body = new_block(g), *next = new_block(g);
        gcc_jit_block_add_assignment(g->cur, NULL, g->j, rv(B->jb));
        gcc_jit_block_end_with_jump(g->cur, NULL, jc);
        gcc_jit_block_end_with_conditional(jc, NULL, cmp(g, GCC_JIT_COMPARISON_LT, rv(g->j), rv(B->jend)), body, next);
        g->cur = body;
        int m = -1; /* map op k */
        for (int i = 0; i < p->n_ins; i++) {
            const remat_lane_ins *I = &p->ins[i];
            if (B->seg[i] != k)
                continue;
            if (is_map(I)) {
                m = i;
                continue;
            }
            ensure(g, B, I->a, k), ensure(g, B, I->b, k), ensure(g, B, I->c, k);
            switch (I->kind) {
            case REMAT_LANE_LOAD:
                gcc_jit_block_add_assignment(g->cur, NULL, g->reg[i], rv(element(g, I->buf, I->off, I->lstride)));
                break;
            case REMAT_LANE_CONST: gcc_jit_block_add_assignment(g->cur, NULL, g->reg[i], fconst(g, I->dt, I->imm)); break;
            case REMAT_LANE_STORE:
                gcc_jit_block_add_assignment(g->cur, NULL, element(g, I->buf, I->off, I->lstride), rv(g->reg[I->a]));
                break;
            default:
                if (!emit_op(g, i))
                    return 0;
                break;
            }
            if (B->arr[i])
                gcc_jit_block_add_assignment(g->cur, NULL, at(g, B, B->arr[i]), rv(g->reg[i]));
        }
        if (m >= 0) { /* its argument into its block (logistic's negated, elementwise.c's order) */
            const remat_lane_ins *M = &p->ins[m];
            ensure(g, B, M->a, k);
            gcc_jit_rvalue *x = rv(g->reg[M->a]);
            if (M->op == REMAT_OP_LOGISTIC)
                x = gcc_jit_context_new_unary_op(g->c, NULL, GCC_JIT_UNARY_OP_MINUS, g->t_f[fidx(M->dt)], x);
            gcc_jit_block_add_assignment(g->cur, NULL, at(g, B, B->in[m]), x);
        }
        gcc_jit_block_add_assignment_op(g->cur, NULL, g->j, GCC_JIT_BINARY_OP_PLUS, i64c(g, 1));
        gcc_jit_block_end_with_jump(g->cur, NULL, jc);
        g->cur = next;
        if (m >= 0) {
            const remat_lane_ins *M = &p->ins[m];
            gcc_jit_rvalue *args[6] = {
                gcc_jit_context_new_rvalue_from_long(g->c, g->t_int, map_of((remat_op)M->op)),
                gcc_jit_context_new_rvalue_from_long(g->c, g->t_int, M->dt == REMAT_F64),
                rv(B->mb), addr0(g, B->arr[m]), addr0(g, B->in[m]),
                gcc_jit_context_new_rvalue_from_double(g->c, g->t_f[1], M->op == REMAT_OP_POW ? M->imm : 0.0)};
            gcc_jit_block_add_eval(g->cur, NULL, gcc_jit_context_new_call_through_ptr(g->c, NULL, vmap(g), 6, args));
        }
    }
    gcc_jit_block_add_assignment_op(g->cur, NULL, B->jb, GCC_JIT_BINARY_OP_PLUS, i64c(g, bl));
    gcc_jit_block_end_with_jump(g->cur, NULL, jb_cond);
    return 1;
}

/* The blocks of every register read outside its segment, the block length
 * (their total at most BLOCKED_BYTES where it can: a fused group runs on
 * threads whose whole stack may be 32 KB, test_exec_rewrites),
 * then the lanes. 0: unsupported, -1: out of memory. */
enum { BLOCKED_LANES = 256, BLOCKED_BYTES = 8 << 10 };

static int emit_blocked(gen *g, gcc_jit_rvalue *lanes, gcc_jit_block *after)
{
    const remat_lane_program *p = g->p;
    const int n = p->n_ins;
    blocked B = {.seg = rmi_calloc((size_t)n + 1, sizeof(int)), .loaded = rmi_calloc((size_t)n + 1, sizeof(int)),
                 .arr = rmi_calloc((size_t)n + 1, sizeof(gcc_jit_lvalue *)),
                 .in = rmi_calloc((size_t)n + 1, sizeof(gcc_jit_lvalue *))};
    bool *need = rmi_calloc((size_t)n + 1, sizeof(bool));
    int made = -1;
    if (!B.seg || !B.loaded || !B.arr || !B.in || !need)
        goto out;
    int n_maps = 0;
    for (int i = 0; i < n; i++)
        B.seg[i] = n_maps, n_maps += is_map(&p->ins[i]);
    int64_t arr_bytes = 0; /* per lane of a block */
    for (int i = 0; i < n; i++) {
        const remat_lane_ins *I = &p->ins[i];
        const int32_t ops[3] = {I->a, I->b, I->c};
        for (int t = 0; t < 3; t++)
            if (ops[t] >= 0 && (is_map(&p->ins[ops[t]]) || B.seg[ops[t]] != B.seg[i]))
                need[ops[t]] = true;
        arr_bytes += is_map(I) ? (int64_t)remat_dtype_size((remat_dtype)I->dt) : 0;
    }
    for (int i = 0; i < n; i++)
        arr_bytes += need[i] || is_map(&p->ins[i]) ? (int64_t)remat_dtype_size((remat_dtype)p->ins[i].dt) : 0;
    int64_t bl = BLOCKED_LANES;
    while (bl > 16 && arr_bytes * bl > BLOCKED_BYTES)
        bl /= 2;
    for (int i = 0; i < n; i++) {
        if (need[i] || is_map(&p->ins[i]))
            B.arr[i] = block_local(g, p->ins[i].dt, bl, "v", i);
        if (is_map(&p->ins[i]))
            B.in[i] = block_local(g, p->ins[i].dt, bl, "u", i);
    }
    B.jb = gcc_jit_function_new_local(g->fn, NULL, g->t_i64, "jb");
    B.mb = gcc_jit_function_new_local(g->fn, NULL, g->t_i64, "mb");
    B.jend = gcc_jit_function_new_local(g->fn, NULL, g->t_i64, "jend");
    made = emit_blocked_lanes(g, &B, n_maps, bl, lanes, after);
out:
    rmi_free(B.seg), rmi_free(B.loaded), rmi_free(B.arr), rmi_free(B.in), rmi_free(need);
    return made;
}

static int collect_state(gen *g)
{
    const remat_lane_program *p = g->p;
    g->state_off = rmi_malloc(sizeof *g->state_off * (size_t)(p->n_ins + 1));
    g->state_buf = rmi_malloc(sizeof *g->state_buf * (size_t)(p->n_ins + 1));
    g->state_local = rmi_malloc(sizeof *g->state_local * (size_t)(p->n_ins + 1));
    if (!g->state_off || !g->state_buf || !g->state_local)
        return 0;
    if (p->m != 1)
        return 1;
    for (int i = 0; i < p->n_ins; i++) {
        const remat_lane_ins *I = &p->ins[i];
        if ((I->kind != REMAT_LANE_LOAD && I->kind != REMAT_LANE_STORE) || !p->bufs[I->buf].state)
            continue;
        int k = 0;
        while (k < g->n_state && !(g->state_buf[k] == I->buf && g->state_off[k] == I->off))
            k++;
        if (k < g->n_state)
            continue;
        char name[32];
        snprintf(name, sizeof name, "k%d", k);
        g->state_buf[k] = I->buf, g->state_off[k] = I->off;
        g->state_local[k] = gcc_jit_function_new_local(g->fn, NULL, g->t_f[fidx(p->bufs[I->buf].dt)], name);
        g->n_state++;
    }
    return 1;
}

static gcc_jit_lvalue *state_memory(gen *g, int k)
{
    const remat_lane_buf *B = &g->p->bufs[g->state_buf[k]];
    gcc_jit_rvalue *base = gcc_jit_context_new_cast(g->c, NULL, rv(g->pbuf[g->state_buf[k]]), g->t_fp[fidx(B->dt)]);
    return gcc_jit_context_new_array_access(g->c, NULL, base, i64c(g, g->state_off[k]));
}

/* A program's EXIT (lane.h), at the end of a step: when its register is 0
 * the steps run so far go to its element and the run ends (`done` writes
 * the state back). 0 when its register may differ between lanes. */
static int exit_after_step(gen *g, gcc_jit_block *done)
{
    const remat_lane_program *p = g->p;
    const remat_lane_ins *X = p->n_ins > 0 ? &p->ins[p->n_ins - 1] : NULL;
    if (!X || X->kind != REMAT_LANE_EXIT)
        return 1;
    const remat_lane_ins *A = &p->ins[X->a];
    if (p->m > 1 && !A->post)
        return 0;
    gcc_jit_block *stop = new_block(g), *go = new_block(g);
    gcc_jit_block_end_with_conditional(g->cur, NULL, cmp(g, GCC_JIT_COMPARISON_EQ, rv(g->reg[X->a]), fconst(g, A->dt, 0.0)),
                                       stop, go);
    gcc_jit_rvalue *ran = gcc_jit_context_new_binary_op(g->c, NULL, GCC_JIT_BINARY_OP_PLUS, g->t_i64, rv(g->s), i64c(g, 1));
    gcc_jit_block_add_assignment(stop, NULL, element(g, X->buf, X->off, 0),
                                 gcc_jit_context_new_cast(g->c, NULL, ran, g->t_f[fidx(p->bufs[X->buf].dt)]));
    gcc_jit_block_end_with_jump(stop, NULL, done);
    g->cur = go;
    return 1;
}

/* Builds the function `name` into g->c; 0 when an op is not supported, -1
 * when out of memory. */
static int generate(gen *g, const char *name_fn)
{
    const remat_lane_program *p = g->p;
    gcc_jit_context *c = g->c;
    g->t_f[0] = gcc_jit_context_get_type(c, GCC_JIT_TYPE_FLOAT);
    g->t_f[1] = gcc_jit_context_get_type(c, GCC_JIT_TYPE_DOUBLE);
    g->t_fp[0] = gcc_jit_type_get_pointer(g->t_f[0]);
    g->t_fp[1] = gcc_jit_type_get_pointer(g->t_f[1]);
    g->t_i64 = gcc_jit_context_get_type(c, GCC_JIT_TYPE_LONG_LONG);
    g->t_int = gcc_jit_context_get_type(c, GCC_JIT_TYPE_INT);
    g->t_bool = gcc_jit_context_get_type(c, GCC_JIT_TYPE_BOOL);
    g->t_void = gcc_jit_context_get_type(c, GCC_JIT_TYPE_VOID);
    g->t_charp = gcc_jit_type_get_pointer(gcc_jit_context_get_type(c, GCC_JIT_TYPE_CHAR));
    gcc_jit_param *params[4] = {
        gcc_jit_context_new_param(c, NULL, gcc_jit_type_get_pointer(g->t_charp), "bufs"),
        gcc_jit_context_new_param(c, NULL, gcc_jit_type_get_pointer(g->t_i64), "strides"),
        gcc_jit_context_new_param(c, NULL, g->t_i64, "count"),
        gcc_jit_context_new_param(c, NULL, g->t_i64, "lanes"),
    };
    g->fn = gcc_jit_context_new_function(c, NULL, GCC_JIT_FUNCTION_EXPORTED, g->t_void, name_fn, 4, params, 0);
    g->reg = rmi_calloc((size_t)p->n_ins + 1, sizeof *g->reg);
    g->pbuf = rmi_calloc((size_t)p->n_bufs + 1, sizeof *g->pbuf);
    g->stride = rmi_calloc((size_t)p->n_bufs + 1, sizeof *g->stride);
    if (!g->reg || !g->pbuf || !g->stride || !collect_state(g))
        return -1;
    char name[32];
    gcc_jit_block *entry = new_block(g), *s_cond = new_block(g), *s_body = new_block(g), *done = new_block(g);
    for (int b = 0; b < p->n_bufs; b++) {
        snprintf(name, sizeof name, "p%d", b);
        g->pbuf[b] = gcc_jit_function_new_local(g->fn, NULL, g->t_charp, name);
        snprintf(name, sizeof name, "st%d", b);
        g->stride[b] = gcc_jit_function_new_local(g->fn, NULL, g->t_i64, name);
        gcc_jit_block_add_assignment(
            entry, NULL, g->pbuf[b],
            rv(gcc_jit_context_new_array_access(c, NULL, gcc_jit_param_as_rvalue(params[0]), i64c(g, b))));
        gcc_jit_block_add_assignment(
            entry, NULL, g->stride[b],
            rv(gcc_jit_context_new_array_access(c, NULL, gcc_jit_param_as_rvalue(params[1]), i64c(g, b))));
    }
    for (int k = 0; k < g->n_state; k++)
        gcc_jit_block_add_assignment(entry, NULL, g->state_local[k], rv(state_memory(g, k)));
    g->s = gcc_jit_function_new_local(g->fn, NULL, g->t_i64, "s");
    g->j = gcc_jit_function_new_local(g->fn, NULL, g->t_i64, "j");
    gcc_jit_block_add_assignment(entry, NULL, g->s, i64c(g, 0));
    gcc_jit_block_end_with_jump(entry, NULL, s_cond);
    gcc_jit_block_end_with_conditional(
        s_cond, NULL, cmp(g, GCC_JIT_COMPARISON_LT, rv(g->s), gcc_jit_param_as_rvalue(params[2])), s_body, done);

    gcc_jit_block *j_cond = NULL, *s_latch = new_block(g), *post = new_block(g);
    for (int i = 0; i < p->n_ins; i++) /* every register is a local of the function */
        if (p->ins[i].kind != REMAT_LANE_STORE && p->ins[i].kind != REMAT_LANE_ACC &&
            p->ins[i].kind != REMAT_LANE_EXIT) {
            snprintf(name, sizeof name, "r%d", i);
            g->reg[i] = gcc_jit_function_new_local(g->fn, NULL, g->t_f[fidx(p->ins[i].dt)], name);
        }
    if (rmi_jit_blocked(p)) { /* the lanes in blocks, the transcendentals as the kernels' maps */
        g->cur = s_body;
        const int made = emit_blocked(g, gcc_jit_param_as_rvalue(params[3]), post);
        if (made <= 0)
            return made;
        g->cur = post;
        goto step_end;
    }
    for (int i = 0; i < p->n_ins; i++) /* sums across lanes start each step at +0 */
        if (p->ins[i].kind == REMAT_LANE_SUM0)
            gcc_jit_block_add_assignment(s_body, NULL, g->reg[i], fconst(g, p->ins[i].dt, 0.0));
    if (p->m > 1) {
        j_cond = new_block(g);
        gcc_jit_block_add_assignment(s_body, NULL, g->j, i64c(g, 0));
        gcc_jit_block_end_with_jump(s_body, NULL, j_cond);
        g->cur = new_block(g);
        /* the lanes of this call, a run-time count (lane.h) */
        gcc_jit_block_end_with_conditional(
            j_cond, NULL, cmp(g, GCC_JIT_COMPARISON_LT, rv(g->j), gcc_jit_param_as_rvalue(params[3])), g->cur, post);
    } else {
        g->cur = s_body;
    }
    for (int phase = 0; phase < 2; phase++) { /* the lanes, then once per step after them */
        for (int i = 0; i < p->n_ins; i++) {
            const remat_lane_ins *I = &p->ins[i];
            if (I->kind == REMAT_LANE_SUM0 || (I->post != 0) != (phase == 1))
                continue;
            switch (I->kind) {
            case REMAT_LANE_LOAD:
                gcc_jit_block_add_assignment(g->cur, NULL, g->reg[i], rv(element(g, I->buf, I->off, I->lstride)));
                break;
            case REMAT_LANE_CONST:
                gcc_jit_block_add_assignment(g->cur, NULL, g->reg[i], fconst(g, I->dt, I->imm));
                break;
            case REMAT_LANE_STORE:
                gcc_jit_block_add_assignment(g->cur, NULL, element(g, I->buf, I->off, I->lstride),
                                             rv(g->reg[I->a]));
                break;
            case REMAT_LANE_ACC:
                gcc_jit_block_add_assignment(g->cur, NULL, g->reg[I->a],
                                             bin(g, GCC_JIT_BINARY_OP_PLUS, I->dt, rv(g->reg[I->a]), rv(g->reg[I->b])));
                break;
            case REMAT_LANE_OP:
                if (!emit_op(g, i))
                    return 0;
                break;
            case REMAT_LANE_EXIT: break; /* after the step (below) */
            default: return 0;
            }
        }
        if (phase == 0) {
            if (p->m > 1) {
                gcc_jit_block_add_assignment_op(g->cur, NULL, g->j, GCC_JIT_BINARY_OP_PLUS, i64c(g, 1));
                gcc_jit_block_end_with_jump(g->cur, NULL, j_cond);
            } else {
                gcc_jit_block_end_with_jump(g->cur, NULL, post);
            }
            g->cur = post;
        }
    }
step_end:
    if (!exit_after_step(g, done))
        return 0;
    gcc_jit_block_end_with_jump(g->cur, NULL, s_latch);
    for (int b = 0; b < p->n_bufs; b++) /* p_b = &p_b[st_b] */
        gcc_jit_block_add_assignment(
            s_latch, NULL, g->pbuf[b],
            gcc_jit_lvalue_get_address(gcc_jit_context_new_array_access(c, NULL, rv(g->pbuf[b]), rv(g->stride[b])),
                                       NULL));
    gcc_jit_block_add_assignment_op(s_latch, NULL, g->s, GCC_JIT_BINARY_OP_PLUS, i64c(g, 1));
    gcc_jit_block_end_with_jump(s_latch, NULL, s_cond);
    for (int k = 0; k < g->n_state; k++)
        gcc_jit_block_add_assignment(done, NULL, state_memory(g, k), rv(g->state_local[k]));
    gcc_jit_block_end_with_void_return(done, NULL);
    return 1;
}

static void gen_free(gen *g)
{
    rmi_free(g->reg), rmi_free(g->pbuf), rmi_free(g->stride);
    rmi_free(g->state_off), rmi_free(g->state_buf), rmi_free(g->state_local);
}


int rmi_jit_generate(gcc_jit_context *c, remat_jit_math *math, const remat_lane_program *p, const char *name)
{
    gen g = {.p = p, .c = c, .math = math};
    const int made = generate(&g, name);
    gen_free(&g);
    return made;
}

#endif

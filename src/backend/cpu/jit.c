/*
 * jit.c — compiles lane programs (backend/lane.h) into native loops with
 * libgccjit, GCC's code generator as a library (Debian: libgccjit-12-dev).
 *
 * The generated function is, for a program with m lanes:
 *
 *   void lane(char **bufs, long long *strides, long long count)
 *   {
 *       char *p_b = bufs[b]; long long st_b = strides[b];    every buffer used
 *       T k_e = ((T *)p_b)[off];                               m == 1: state in locals
 *       for (long long s = 0; s < count; s++) {
 *           for (long long j = 0; j < m; j++) {               (no loop when m == 1)
 *               T r_i = ((T *)p_b)[off + j * lstride];        LOAD
 *               T r_i = r_a * r_b;                             OP, CONST
 *               ((T *)p_b)[off + j * lstride] = r_a;           STORE
 *           }
 *           p_b += st_b;
 *       }
 *       ((T *)p_b)[off] = k_e;                                 m == 1: state back
 *   }
 *
 * Bits: every op is written as the CPU kernel writes it (elementwise.c:
 * max/min/relu/select as the same conditionals, integer_pow's products in
 * the same order, libm for exp/log/sin/cos/tanh/sqrt/erf/pow and their float
 * versions for f32), compiled with -ffp-contract=off so that no multiply and
 * add are fused, and without -ffast-math, so nothing is reassociated: the
 * results equal the interpreter's bit for bit (tests/test_scan_jit.c).
 *
 * Compiling costs ~60 ms for a small body (much of it the assembler and
 * linker runs libgccjit makes) and grows with its size (the scan module
 * bounds that), so a scan's kernels are compiled together, and cached
 * for the life of the process by their full contents: the many programs a
 * test grid or a schedule comparison compiles from one body share one
 * compilation. Across processes, the shared objects gcc makes are kept on
 * disk (jit_disk.h), keyed by the IR libgccjit dumps, so a later process
 * builds the context but runs no gcc.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/jit.h"
#include "core/alloc.h"
#include "core/assert.h"
#include "core/error.h"
#include "core/exhaustive.h"
#include "remat/op.h"

#if REMAT_HAVE_GCCJIT

#include <dlfcn.h>
#include <libgccjit.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/cpu/jit_disk.h"

/* ---- the cache ---- */

/* Where a compilation's code lives: in libgccjit's result (compiled in
 * memory), or in a shared object loaded from the disk cache (jit_disk.h). */
typedef struct {
    gcc_jit_result *res;
    void *dl;
} lane_code;

typedef struct {
    size_t len;
    unsigned char *key;
    lane_code code; /* zero: held by another entry of the same compilation */
    remat_lane_fn fn;
} cache_entry;

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
/* libgccjit promises that threads may each build and compile their own
 * context, but ThreadSanitizer sees two compilations racing on strings
 * inside libgccjit 12 (gcc itself runs under libgccjit's own global lock;
 * building the context before it does not). Compilations take turns here:
 * they would mostly wait on libgccjit's lock anyway. */
static pthread_mutex_t gccjit_lock = PTHREAD_MUTEX_INITIALIZER;
static cache_entry *cache;
static int n_cache, cap_cache;

typedef struct {
    unsigned char *p;
    size_t len, cap;
} bytes;

static int put(bytes *b, const void *v, size_t n)
{
    if (b->len + n > b->cap) {
        size_t nc = b->cap ? b->cap * 2 : 1024;
        while (nc < b->len + n)
            nc *= 2;
        unsigned char *q = remat_realloc(b->p, nc);
        if (!q)
            return 0;
        b->p = q, b->cap = nc;
    }
    memcpy(b->p + b->len, v, n);
    b->len += n;
    return 1;
}

/* Field by field: the structs have padding, which callers need not zero. */
static int program_key(const remat_lane_program *p, bytes *k)
{
    int ok = put(k, &p->m, sizeof p->m) && put(k, &p->n_bufs, sizeof p->n_bufs) && put(k, &p->n_ins, sizeof p->n_ins);
    for (int b = 0; ok && b < p->n_bufs; b++)
        ok = put(k, &p->bufs[b].dt, 1) && put(k, &p->bufs[b].state, 1);
    for (int i = 0; ok && i < p->n_ins; i++) {
        const remat_lane_ins *I = &p->ins[i];
        ok = put(k, &I->kind, 1) && put(k, &I->dt, 1) && put(k, &I->op, 2) && put(k, &I->post, 1) &&
             put(k, &I->a, 4) && put(k, &I->b, 4) &&
             put(k, &I->c, 4) && put(k, &I->buf, 4) && put(k, &I->off, 8) && put(k, &I->lstride, 8) &&
             put(k, &I->imm, 8);
    }
    return ok;
}

/* ---- code generation ---- */

enum { M_EXP, M_LOG, M_SIN, M_COS, M_TANH, M_SQRT, M_ERF, M_POW, M_COUNT };
static const char *const math_names[2][M_COUNT] = {
    {"expf", "logf", "sinf", "cosf", "tanhf", "sqrtf", "erff", "powf"},
    {"exp", "log", "sin", "cos", "tanh", "sqrt", "erf", "pow"},
};

typedef struct {
    const remat_lane_program *p;
    gcc_jit_context *c;
    gcc_jit_type *t_f[2], *t_fp[2], *t_i64, *t_int, *t_bool, *t_void, *t_charp;
    gcc_jit_function *fn, *math[2][M_COUNT];
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
    if (!g->math[f][which]) {
        gcc_jit_param *ps[2] = {gcc_jit_context_new_param(g->c, NULL, g->t_f[f], "x"),
                                gcc_jit_context_new_param(g->c, NULL, g->t_f[f], "y")};
        g->math[f][which] = gcc_jit_context_new_function(g->c, NULL, GCC_JIT_FUNCTION_IMPORTED, g->t_f[f],
                                                         math_names[f][which], which == M_POW ? 2 : 1, ps, 0);
    }
    return g->math[f][which];
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
    case REMAT_OP_DOT_GENERAL: case REMAT_OP_NAME: case REMAT_OP_STOP_GRADIENT: case REMAT_OP_CHECKPOINT:
    case REMAT_OP_PROJ: case REMAT_OP_CUSTOM: case REMAT_OP_CUSTOM_VJP: case REMAT_OP_HOP: case REMAT_OP_COUNT:
        return 0;
    }
    gcc_jit_block_add_assignment(g->cur, NULL, dst, v);
    return 1;
}

REMAT_EXHAUSTIVE_END

static int collect_state(gen *g)
{
    const remat_lane_program *p = g->p;
    g->state_off = remat_malloc(sizeof *g->state_off * (size_t)(p->n_ins + 1));
    g->state_buf = remat_malloc(sizeof *g->state_buf * (size_t)(p->n_ins + 1));
    g->state_local = remat_malloc(sizeof *g->state_local * (size_t)(p->n_ins + 1));
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
    gcc_jit_param *params[3] = {
        gcc_jit_context_new_param(c, NULL, gcc_jit_type_get_pointer(g->t_charp), "bufs"),
        gcc_jit_context_new_param(c, NULL, gcc_jit_type_get_pointer(g->t_i64), "strides"),
        gcc_jit_context_new_param(c, NULL, g->t_i64, "count"),
    };
    g->fn = gcc_jit_context_new_function(c, NULL, GCC_JIT_FUNCTION_EXPORTED, g->t_void, name_fn, 3, params, 0);
    g->reg = remat_calloc((size_t)p->n_ins + 1, sizeof *g->reg);
    g->pbuf = remat_calloc((size_t)p->n_bufs + 1, sizeof *g->pbuf);
    g->stride = remat_calloc((size_t)p->n_bufs + 1, sizeof *g->stride);
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
        if (p->ins[i].kind != REMAT_LANE_STORE && p->ins[i].kind != REMAT_LANE_ACC) {
            snprintf(name, sizeof name, "r%d", i);
            g->reg[i] = gcc_jit_function_new_local(g->fn, NULL, g->t_f[fidx(p->ins[i].dt)], name);
        }
    for (int i = 0; i < p->n_ins; i++) /* sums across lanes start each step at +0 */
        if (p->ins[i].kind == REMAT_LANE_SUM0)
            gcc_jit_block_add_assignment(s_body, NULL, g->reg[i], fconst(g, p->ins[i].dt, 0.0));
    if (p->m > 1) {
        j_cond = new_block(g);
        gcc_jit_block_add_assignment(s_body, NULL, g->j, i64c(g, 0));
        gcc_jit_block_end_with_jump(s_body, NULL, j_cond);
        g->cur = new_block(g);
        gcc_jit_block_end_with_conditional(j_cond, NULL, cmp(g, GCC_JIT_COMPARISON_LT, rv(g->j), i64c(g, p->m)),
                                           g->cur, post);
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
    remat_free(g->reg), remat_free(g->pbuf), remat_free(g->stride);
    remat_free(g->state_off), remat_free(g->state_buf), remat_free(g->state_local);
}

static void code_release(lane_code *code)
{
    if (code->res)
        gcc_jit_result_release(code->res);
    if (code->dl)
        dlclose(code->dl);
    *code = (lane_code){0};
}

static void *code_get(const lane_code *code, const char *name)
{
    return code->res ? gcc_jit_result_get_code(code->res, name) : code->dl ? dlsym(code->dl, name) : NULL;
}

static int has_lanes(const lane_code *code, int n)
{
    char name[32];
    for (int k = 0; k < n; k++) {
        snprintf(name, sizeof name, "lane%d", k);
        if (!code_get(code, name))
            return 0;
    }
    return 1;
}

/* The disk cache's key: what the code depends on besides the IR (remat's
 * and libgccjit's versions, the options), then the IR as libgccjit dumps it
 * (its reproducer-like text of every type, function and statement). */
static int disk_key(gcc_jit_context *c, const char *opts, bytes *key)
{
    char head[512];
    int v[3] = {0, 0, 0};
#ifdef LIBGCCJIT_HAVE_gcc_jit_version
    v[0] = gcc_jit_version_major(), v[1] = gcc_jit_version_minor(), v[2] = gcc_jit_version_patchlevel();
#endif
    const int hn = snprintf(head, sizeof head, "remat %s | libgccjit %d.%d.%d | %s\n", REMAT_VERSION_STRING, v[0],
                            v[1], v[2], opts);
    const int fd = memfd_create("remat-lanes-ir", MFD_CLOEXEC);
    if (fd < 0 || hn <= 0 || (size_t)hn >= sizeof head || !put(key, head, (size_t)hn)) {
        if (fd >= 0)
            close(fd);
        return 0;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    gcc_jit_context_dump_to_file(c, path, 0);
    struct stat st;
    int ok = fstat(fd, &st) == 0 && st.st_size > 0 && lseek(fd, 0, SEEK_SET) == 0;
    char buf[8192];
    for (off_t left = ok ? st.st_size : 0; ok && left > 0;) {
        const ssize_t r = read(fd, buf, sizeof buf);
        ok = r > 0 && put(key, buf, (size_t)r);
        left -= r;
    }
    close(fd);
    return ok;
}

/* Compiles c into a shared object in the cache directory, loads it and
 * stores it under key; on any failure the caller compiles in memory. */
static void *compile_to_disk(gcc_jit_context *c, const char *dir, const bytes *key)
{
    char so[4200];
    snprintf(so, sizeof so, "%s/.so-XXXXXX", dir);
    const int fd = mkstemp(so);
    if (fd < 0)
        return NULL;
    close(fd);
    gcc_jit_context_compile_to_file(c, GCC_JIT_OUTPUT_KIND_DYNAMIC_LIBRARY, so);
    void *dl = gcc_jit_context_get_first_error(c) ? NULL : dlopen(so, RTLD_NOW | RTLD_LOCAL);
    if (dl)
        remat_jit_disk_store(dir, key->p, key->len, so);
    unlink(so);
    return dl;
}

/* All n programs into one context (one assembler and linker run, which is
 * most of libgccjit's ~20 ms per compilation), functions lane0..lane<n-1>;
 * taken from the disk cache when an earlier process compiled the same. */
static remat_status compile_new(int n, const remat_lane_program *const *ps, lane_code *code, remat_lane_fn *fn)
{
    gcc_jit_context *c = gcc_jit_context_acquire();
    if (!c)
        return remat_error(REMAT_ERR_BACKEND, "jit: libgccjit gave no context");
    gcc_jit_context_set_int_option(c, GCC_JIT_INT_OPTION_OPTIMIZATION_LEVEL, 3);
    gcc_jit_context_set_bool_print_errors_to_stderr(c, 0); /* reported once, by the caller */
    char opts[256] = "-O3 -ffp-contract=off";
#if defined(__x86_64__)
    /* libgccjit has no -march=native: name the level this CPU has. Wider
     * vectors change no bits (IEEE ops, no contraction, scalar libm calls). */
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("bmi2"))
        strcat(opts, " -march=x86-64-v3");
#endif
    int scalar = 1;
    for (int k = 0; k < n; k++)
        scalar &= ps[k]->m == 1;
    if (scalar) /* a serial chain of scalar ops: packing pairs into vectors only adds shuffles to it */
        strcat(opts, " -fno-tree-slp-vectorize");
    else /* the buffers may alias as far as gcc knows: let it check them all at run time and vectorise */
        strcat(opts, " --param=vect-max-version-for-alias-checks=200");
    char one[64];
    for (const char *o = opts + 4; *o;) { /* every option after -O3 */
        size_t len = strcspn(o, " ");
        snprintf(one, sizeof one, "%.*s", (int)len, o);
        gcc_jit_context_add_command_line_option(c, one);
        o += len + (o[len] == ' ');
    }
    remat_status st = REMAT_OK;
    gcc_jit_function *math[2][M_COUNT] = {{0}};
    char name[32];
    for (int k = 0; k < n && st == REMAT_OK; k++) {
        gen g = {.p = ps[k], .c = c};
        memcpy(g.math, math, sizeof math); /* imported once per context */
        snprintf(name, sizeof name, "lane%d", k);
        const int made = generate(&g, name);
        if (made < 0)
            st = remat_error(REMAT_ERR_NOMEM, "jit: out of memory generating %s", name); /* interpreted */
        else if (!made)
            st = REMAT_ERR_UNSUPPORTED; /* an op this compiler does not know: interpret */
        memcpy(math, g.math, sizeof math);
        gen_free(&g);
    }
    if (st == REMAT_OK) {
        const char *dump = getenv("REMAT_JIT_DUMP"); /* a directory: the assembly of each compilation */
        if (dump && *dump) {
            static atomic_int seq; /* threads compiling at once get distinct files */
            char path[4096];
            snprintf(path, sizeof path, "%s/lane%d.s", dump, atomic_fetch_add(&seq, 1));
            gcc_jit_context_compile_to_file(c, GCC_JIT_OUTPUT_KIND_ASSEMBLER, path);
        }
        char dir[4096];
        bytes key = {0};
        if (remat_jit_disk_dir(dir, sizeof dir) && disk_key(c, opts, &key)) {
            code->dl = remat_jit_disk_load(dir, key.p, key.len);
            if (code->dl && !has_lanes(code, n)) /* the key matched: cannot happen short of a broken file system */
                code_release(code);
            if (!code->dl)
                code->dl = compile_to_disk(c, dir, &key);
        }
        remat_free(key.p);
        if (!code->dl)
            code->res = gcc_jit_context_compile(c);
        for (int k = 0; k < n && st == REMAT_OK; k++) {
            snprintf(name, sizeof name, "lane%d", k);
            fn[k] = (remat_lane_fn)code_get(code, name);
            if (!fn[k]) {
                const char *e = gcc_jit_context_get_first_error(c);
                st = remat_error(REMAT_ERR_BACKEND, "jit: libgccjit failed: %s", e ? e : "(no message)");
            }
        }
        if (st != REMAT_OK)
            code_release(code);
    }
    gcc_jit_context_release(c);
    return st;
}

/* Set when libgccjit cannot produce code at all (no assembler or linker, no
 * writable TMPDIR): later calls do not try again, and the reason is printed
 * once, because interpreting instead is correct but slower. */
static int broken;

/* libgccjit's embedded driver runs `as` and `ld` found on PATH, and calls
 * exit() when it cannot: so look first (binutils, a dependency of
 * libgccjit0, puts them in /usr/bin). */
static int on_path(const char *tool)
{
    const char *path = getenv("PATH");
    char buf[4096];
    while (path && *path) {
        const char *colon = strchr(path, ':');
        const size_t len = colon ? (size_t)(colon - path) : strlen(path);
        if (len > 0 && len + strlen(tool) + 2 < sizeof buf) {
            memcpy(buf, path, len);
            snprintf(buf + len, sizeof buf - len, "/%s", tool);
            if (access(buf, X_OK) == 0)
                return 1;
        }
        path = colon ? colon + 1 : NULL;
    }
    return 0;
}

static int find(const bytes *k, remat_lane_fn *fn)
{
    for (int i = 0; i < n_cache; i++)
        if (cache[i].len == k->len && !memcmp(cache[i].key, k->p, k->len)) {
            *fn = cache[i].fn;
            return 1;
        }
    return 0;
}

bool remat_cpu_can_compile_lanes(void)
{
    const char *e = getenv("REMAT_NO_JIT");
    if (e && *e && strcmp(e, "0"))
        return false;
    pthread_mutex_lock(&cache_lock);
    const int b = broken;
    pthread_mutex_unlock(&cache_lock);
    return !b;
}

/* Programs are cached one by one, so a later call asking for a subset (the
 * backward node of a scan after its forward node compiled every kernel of
 * the body) finds them all; those not found are compiled together. The cache
 * lock is not held while compiling (seconds for a large body): another
 * thread's lookups go on, and two threads compiling the same programs at once
 * both compile (one after the other, gccjit_lock), the second keeping the
 * first's code. */
remat_status remat_cpu_compile_lanes(int n, const remat_lane_program *const *ps, remat_lane_fn *out)
{
    REMAT_ASSERT(n >= 1 && ps && out);
    if (!remat_cpu_can_compile_lanes())
        return REMAT_ERR_UNSUPPORTED;
    bytes *keys = remat_calloc((size_t)n, sizeof *keys);
    const remat_lane_program **miss = remat_malloc(sizeof *miss * (size_t)n);
    remat_lane_fn *fns = remat_malloc(sizeof *fns * (size_t)n);
    int *idx = remat_malloc(sizeof *idx * (size_t)n), ok = keys && miss && fns && idx;
    for (int i = 0; ok && i < n; i++) {
        REMAT_ASSERT(ps[i] && ps[i]->m >= 1);
        ok = program_key(ps[i], &keys[i]);
    }
    remat_status st = ok ? REMAT_OK : remat_error(REMAT_ERR_NOMEM, "jit: out of memory");
    int n_miss = 0;
    pthread_mutex_lock(&cache_lock);
    for (int i = 0; st == REMAT_OK && i < n; i++)
        if (!find(&keys[i], &out[i]))
            idx[n_miss] = i, miss[n_miss++] = ps[i];
    pthread_mutex_unlock(&cache_lock);

    lane_code code = {0};
    if (st == REMAT_OK && n_miss > 0 && !(on_path("as") && on_path("ld")))
        st = remat_error(REMAT_ERR_BACKEND, "jit: no assembler and linker (as, ld) on PATH");
    else if (st == REMAT_OK && n_miss > 0) {
        pthread_mutex_lock(&gccjit_lock);
        st = compile_new(n_miss, miss, &code, fns);
        pthread_mutex_unlock(&gccjit_lock);
    }

    pthread_mutex_lock(&cache_lock);
    if (st == REMAT_ERR_BACKEND && !broken) {
        broken = 1;
        fprintf(stderr, "remat: scan loops will be interpreted, compiling them failed: %s "
                        "(REMAT_NO_JIT=1 skips compiling)\n", remat_last_error());
    }
    if (st == REMAT_OK && n_miss > 0 && n_cache + n_miss > cap_cache) {
        int nc = cap_cache ? 2 * cap_cache : 16;
        while (nc < n_cache + n_miss)
            nc *= 2;
        cache_entry *q = remat_realloc(cache, sizeof *q * (size_t)nc);
        if (q)
            cache = q, cap_cache = nc;
        else
            st = remat_error(REMAT_ERR_NOMEM, "jit: out of memory");
    }
    int kept = 0; /* the result is kept (by its first new entry) for the life of the process */
    for (int j = 0; st == REMAT_OK && j < n_miss; j++) {
        const int i = idx[j];
        if (find(&keys[i], &out[i])) /* another thread compiled it meanwhile: use that */
            continue;
        cache[n_cache++] = (cache_entry){.len = keys[i].len, .key = keys[i].p, .code = kept ? (lane_code){0} : code,
                                         .fn = fns[j]};
        kept = 1;
        keys[i].p = NULL; /* the cache owns it */
        out[i] = fns[j];
    }
    pthread_mutex_unlock(&cache_lock);
    if (!kept)
        code_release(&code);
    for (int i = 0; keys && i < n; i++)
        remat_free(keys[i].p);
    remat_free(keys), remat_free(miss), remat_free(fns), remat_free(idx);
    return st;
}

#endif

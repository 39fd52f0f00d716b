/*
 * lanes_gen.c — the CUDA C++ of a lane program (lanes_gen.h): the
 * parallel/serial choice, state elements in registers, one statement per
 * instruction.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/exhaustive.h"
#include "kernels/cuda/lanes_gen.h"
#include "remat/op.h"

const char *const rmi_cuda_lanes_options[] = {"--fmad=false", "--prec-div=true", "--prec-sqrt=true",
                                                "--ftz=false", "-std=c++17", NULL};

/* kernel parameters: CUDA 12.1+ on sm_70+ takes up to 32764 bytes */
#define PARAM_MAX 32764

typedef struct {
    char *s;
    size_t n, cap;
    bool oom;
} sbuf;

__attribute__((format(printf, 2, 3))) static void put(sbuf *b, const char *fmt, ...)
{
    for (;;) {
        if (b->oom)
            return;
        va_list ap;
        va_start(ap, fmt);
        const int k = vsnprintf(b->s ? b->s + b->n : NULL, b->s ? b->cap - b->n : 0, fmt, ap);
        va_end(ap);
        if (b->s && (size_t)k < b->cap - b->n) {
            b->n += (size_t)k;
            return;
        }
        const size_t cap = (b->cap + (size_t)k + 1) * 2;
        char *s = rmi_realloc(b->s, cap);
        if (!s)
            b->oom = true;
        else
            b->s = s, b->cap = cap;
    }
}

typedef struct {
    const remat_lane_program *p;
    sbuf b;
    bool serial;
    int32_t *cached; /* per instruction: the state local it reads or writes, or -1 */
    int n_cached;
    int32_t *k_buf;
    int64_t *k_off, *k_lstride;
    bool *k_stored;
} gen;

static const char *ty(int dt) { return dt == REMAT_F64 ? "double" : "float"; }

/* a literal of exactly the bits (double)(dt)v has */
static void lit(gen *g, int dt, double v)
{
    if (dt == REMAT_F64) {
        uint64_t u;
        memcpy(&u, &v, sizeof u);
        put(&g->b, "__longlong_as_double(0x%016" PRIx64 "LL)", u);
    } else {
        const float f = (float)v;
        uint32_t u;
        memcpy(&u, &f, sizeof u);
        put(&g->b, "__int_as_float(0x%08" PRIx32 ")", u);
    }
}

static void element(gen *g, const remat_lane_ins *I)
{
    const int dt = g->p->bufs[I->buf].dt;
    put(&g->b, "((%s *)p%d)[%" PRId64 "LL", ty(dt), I->buf, I->off);
    if (I->lstride != 0 && g->p->m > 1)
        put(&g->b, " + j * %" PRId64 "LL", I->lstride);
    put(&g->b, "]");
}

/* where instruction i's LOAD reads or STORE writes */
static void place(gen *g, int i)
{
    if (g->cached[i] >= 0)
        put(&g->b, "k%d", g->cached[i]);
    else
        element(g, &g->p->ins[i]);
}

/* integer_pow as remat_cpu_integer_pow_* computes it (backend/cpu/elementwise.c) */
static void integer_pow(gen *g, int i, int k)
{
    const remat_lane_ins *I = &g->p->ins[i];
    const char *T = ty(I->dt);
    const int a = I->a;
    switch (k) {
    case 0: put(&g->b, "r%d = ", i), lit(g, I->dt, 1.0), put(&g->b, ";\n"); return;
    case 1: put(&g->b, "r%d = r%d;\n", i, a); return;
    case 2: put(&g->b, "r%d = r%d * r%d;\n", i, a, a); return;
    case 3: put(&g->b, "r%d = r%d * (r%d * r%d);\n", i, a, a, a); return;
    case 4: put(&g->b, "r%d = (r%d * r%d) * (r%d * r%d);\n", i, a, a, a, a); return;
    case -1: put(&g->b, "r%d = ", i), lit(g, I->dt, 1.0), put(&g->b, " / r%d;\n", a); return;
    case -2: put(&g->b, "r%d = ", i), lit(g, I->dt, 1.0), put(&g->b, " / (r%d * r%d);\n", a, a); return;
    default: break;
    }
    /* square-and-multiply, each product rounded once */
    put(&g->b, "{ %s xp = r%d;", T, a);
    bool acc = false;
    const unsigned mag = k < 0 ? 0u - (unsigned)k : (unsigned)k;
    for (unsigned e = mag; e; e >>= 1) {
        if (e & 1u) {
            if (acc)
                put(&g->b, " r%d = r%d * xp;", i, i);
            else
                put(&g->b, " r%d = xp;", i);
            acc = true;
        }
        if (e >> 1)
            put(&g->b, " xp = xp * xp;");
    }
    if (k < 0)
        put(&g->b, " r%d = ", i), lit(g, I->dt, 1.0), put(&g->b, " / r%d;", i);
    put(&g->b, " }\n");
}

static void call1(gen *g, int i, const char *f32, const char *f64)
{
    const remat_lane_ins *I = &g->p->ins[i];
    put(&g->b, "r%d = %s(r%d);\n", i, I->dt == REMAT_F64 ? f64 : f32, I->a);
}

static void compare(gen *g, int i, const char *rel)
{
    const remat_lane_ins *I = &g->p->ins[i];
    put(&g->b, "r%d = (r%d %s r%d) ? ", i, I->a, rel, I->b);
    lit(g, I->dt, 1.0), put(&g->b, " : "), lit(g, I->dt, 0.0), put(&g->b, ";\n");
}

/* One case per op (core/exhaustive.h), as backend/cpu/jit_gen.c. 0: no
 * CUDA form (never in a lane program). */
REMAT_EXHAUSTIVE_BEGIN
static int emit_op(gen *g, int i)
{
    const remat_lane_ins *I = &g->p->ins[i];
    const int a = I->a, b = I->b;
    switch ((remat_op)I->op) {
    case REMAT_OP_ADD: put(&g->b, "r%d = r%d + r%d;\n", i, a, b); return 1;
    case REMAT_OP_SUB: put(&g->b, "r%d = r%d - r%d;\n", i, a, b); return 1;
    case REMAT_OP_MUL: put(&g->b, "r%d = r%d * r%d;\n", i, a, b); return 1;
    case REMAT_OP_DIV: put(&g->b, "r%d = r%d / r%d;\n", i, a, b); return 1;
    case REMAT_OP_SQUARE: put(&g->b, "r%d = r%d * r%d;\n", i, a, a); return 1;
    case REMAT_OP_NEG: put(&g->b, "r%d = -r%d;\n", i, a); return 1;
    case REMAT_OP_EXP: call1(g, i, "expf", "exp"); return 1;
    case REMAT_OP_LOG: call1(g, i, "logf", "log"); return 1;
    case REMAT_OP_SIN: call1(g, i, "sinf", "sin"); return 1;
    case REMAT_OP_COS: call1(g, i, "cosf", "cos"); return 1;
    case REMAT_OP_TANH: call1(g, i, "tanhf", "tanh"); return 1;
    case REMAT_OP_SQRT: call1(g, i, "sqrtf", "sqrt"); return 1;
    case REMAT_OP_ERF: call1(g, i, "erff", "erf"); return 1;
    case REMAT_OP_LOG1P: call1(g, i, "log1pf", "log1p"); return 1;
    case REMAT_OP_EXPM1: call1(g, i, "expm1f", "expm1"); return 1;
    case REMAT_OP_ERF_INV: call1(g, i, "erfinvf", "erfinv"); return 1;
    case REMAT_OP_LOGISTIC:
        put(&g->b, "r%d = %s / (%s + %s(-r%d));\n", i, I->dt == REMAT_F64 ? "1.0" : "1.0f",
            I->dt == REMAT_F64 ? "1.0" : "1.0f", I->dt == REMAT_F64 ? "exp" : "expf", I->a);
        return 1;
    case REMAT_OP_POW:
        put(&g->b, "r%d = %s(r%d, ", i, I->dt == REMAT_F64 ? "pow" : "powf", a);
        lit(g, I->dt, I->imm), put(&g->b, ");\n");
        return 1;
    case REMAT_OP_INTEGER_POW: integer_pow(g, i, (int)I->imm); return 1;
    case REMAT_OP_GT: compare(g, i, ">"); return 1;
    case REMAT_OP_GE: compare(g, i, ">="); return 1;
    case REMAT_OP_LT: compare(g, i, "<"); return 1;
    case REMAT_OP_LE: compare(g, i, "<="); return 1;
    case REMAT_OP_EQ: compare(g, i, "=="); return 1;
    case REMAT_OP_NE: compare(g, i, "!="); return 1;
    case REMAT_OP_MAX: put(&g->b, "r%d = (r%d > r%d || r%d != r%d) ? r%d : r%d;\n", i, a, b, a, a, a, b); return 1;
    case REMAT_OP_MIN: put(&g->b, "r%d = (r%d < r%d || r%d != r%d) ? r%d : r%d;\n", i, a, b, a, a, a, b); return 1;
    case REMAT_OP_RELU:
        put(&g->b, "r%d = (r%d <= ", i, a), lit(g, I->dt, 0.0), put(&g->b, ") ? "), lit(g, I->dt, 0.0);
        put(&g->b, " : r%d;\n", a);
        return 1;
    case REMAT_OP_SELECT: /* a NaN predicate is != 0: on_true, as the CPU kernel */
        put(&g->b, "r%d = (r%d != ", i, a), lit(g, g->p->ins[a].dt, 0.0), put(&g->b, ") ? r%d : r%d;\n", b, I->c);
        return 1;
    case REMAT_OP_CONVERT: put(&g->b, "r%d = (%s)r%d;\n", i, ty(I->dt), a); return 1;
    case REMAT_OP_CONSTANT: case REMAT_OP_ARG: case REMAT_OP_SUM: case REMAT_OP_REDUCE_MAX: case REMAT_OP_BROADCAST:
    case REMAT_OP_RESHAPE: case REMAT_OP_TRANSPOSE: case REMAT_OP_SLICE: case REMAT_OP_PAD: case REMAT_OP_CONCATENATE:
    case REMAT_OP_DOT_GENERAL: case REMAT_OP_LU: case REMAT_OP_LINEAR_SOLVE: case REMAT_OP_NAME:
    case REMAT_OP_STOP_GRADIENT: case REMAT_OP_CHECKPOINT:
    case REMAT_OP_PROJ: case REMAT_OP_CUSTOM: case REMAT_OP_CUSTOM_VJP: case REMAT_OP_HOP: case REMAT_OP_COUNT:
        return 0;
    }
    return 0;
}
REMAT_EXHAUSTIVE_END

static bool is_mem(const remat_lane_ins *I) { return I->kind == REMAT_LANE_LOAD || I->kind == REMAT_LANE_STORE; }

/* Whether lanes may run at once, one thread each: no sums across lanes, no
 * element every lane stores, and no stored element of one lane that is
 * another lane's element of the same buffer (off - off' a multiple of the
 * lane stride within m lanes; two lane strides in one stored buffer count
 * as aliasing). */
static bool lanes_independent(const remat_lane_program *p)
{
    if (p->m == 1)
        return false;
    for (int i = 0; i < p->n_ins; i++) {
        const remat_lane_ins *I = &p->ins[i];
        if (I->kind == REMAT_LANE_SUM0 || I->kind == REMAT_LANE_ACC || I->kind == REMAT_LANE_EXIT || I->post ||
            (I->kind == REMAT_LANE_STORE && I->lstride == 0))
            return false;
    }
    for (int i = 0; i < p->n_ins; i++) {
        const remat_lane_ins *S = &p->ins[i];
        if (S->kind != REMAT_LANE_STORE)
            continue;
        for (int q = 0; q < p->n_ins; q++) {
            const remat_lane_ins *X = &p->ins[q];
            if (!is_mem(X) || X->buf != S->buf || X->off == S->off)
                continue;
            if (X->lstride != S->lstride)
                return false;
            const int64_t d = S->off - X->off, ls = S->lstride;
            if (d % ls == 0 && (d / ls < p->m && d / ls > -p->m))
                return false;
        }
    }
    return true;
}

/* State elements kept in registers: m = 1 (serial), or parallel buffers
 * whose every access has the one lane stride. */
static int collect_state(gen *g)
{
    const remat_lane_program *p = g->p;
    const size_t n = (size_t)p->n_ins + 1;
    g->cached = rmi_malloc(sizeof *g->cached * n);
    g->k_buf = rmi_malloc(sizeof *g->k_buf * n);
    g->k_off = rmi_malloc(sizeof *g->k_off * n);
    g->k_lstride = rmi_malloc(sizeof *g->k_lstride * n);
    g->k_stored = rmi_calloc(n, sizeof *g->k_stored);
    if (!g->cached || !g->k_buf || !g->k_off || !g->k_lstride || !g->k_stored)
        return 0;
    for (int i = 0; i < p->n_ins; i++)
        g->cached[i] = -1;
    if (g->serial && p->m != 1)
        return 1;
    for (int i = 0; i < p->n_ins; i++) {
        const remat_lane_ins *I = &p->ins[i];
        if (!is_mem(I) || !p->bufs[I->buf].state)
            continue;
        bool one_stride = true;
        for (int q = 0; q < p->n_ins && p->m > 1; q++)
            one_stride &= !is_mem(&p->ins[q]) || p->ins[q].buf != I->buf || p->ins[q].lstride == I->lstride;
        if (!one_stride)
            continue;
        int k = 0;
        while (k < g->n_cached && !(g->k_buf[k] == I->buf && g->k_off[k] == I->off))
            k++;
        if (k == g->n_cached)
            g->k_buf[k] = I->buf, g->k_off[k] = I->off, g->k_lstride[k] = p->m > 1 ? I->lstride : 0, g->n_cached++;
        g->k_stored[k] |= I->kind == REMAT_LANE_STORE;
        g->cached[i] = k;
    }
    return 1;
}

static void state_element(gen *g, int k)
{
    const remat_lane_ins I = {.buf = g->k_buf[k], .off = g->k_off[k], .lstride = g->k_lstride[k]};
    element(g, &I);
}

static int emit_ins(gen *g, int i)
{
    const remat_lane_ins *I = &g->p->ins[i];
    put(&g->b, "    ");
    switch (I->kind) {
    case REMAT_LANE_LOAD: put(&g->b, "r%d = ", i), place(g, i), put(&g->b, ";\n"); return 1;
    case REMAT_LANE_CONST: put(&g->b, "r%d = ", i), lit(g, I->dt, I->imm), put(&g->b, ";\n"); return 1;
    case REMAT_LANE_STORE: place(g, i), put(&g->b, " = r%d;\n", I->a); return 1;
    case REMAT_LANE_ACC: put(&g->b, "r%d = r%d + r%d;\n", I->a, I->a, I->b); return 1;
    case REMAT_LANE_OP: return emit_op(g, i);
    default: return 0;
    }
}

static int generate(gen *g, const char *name)
{
    const remat_lane_program *p = g->p;
    const int nb = p->n_bufs > 0 ? p->n_bufs : 1;
    put(&g->b, "/* remat lane program: m %" PRId64 ", %d instructions, %d buffers, %s */\n", p->m, p->n_ins,
        p->n_bufs, g->serial ? "serial" : "one thread per lane");
    put(&g->b, "struct remat_lane_args { char *b[%d]; long long st[%d]; };\n", nb, nb);
    put(&g->b, "extern \"C\" __global__ void __launch_bounds__(%d) %s(const remat_lane_args a, long long count, "
               "long long lo, long long hi)\n{\n", REMAT_CUDA_LANES_BLOCK, name);
    if (g->serial)
        put(&g->b, "  if (blockIdx.x != 0 || threadIdx.x != 0) return;\n  long long j = lo;\n");
    else
        put(&g->b, "  const long long j = lo + (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
                   "  if (j >= hi) return;\n");
    for (int q = 0; q < p->n_bufs; q++)
        put(&g->b, "  char *p%d = a.b[%d];\n", q, q);
    for (int i = 0; i < p->n_ins; i++)
        if (p->ins[i].kind != REMAT_LANE_STORE && p->ins[i].kind != REMAT_LANE_ACC &&
            p->ins[i].kind != REMAT_LANE_EXIT)
            put(&g->b, "  %s r%d;\n", ty(p->ins[i].dt), i);
    for (int k = 0; k < g->n_cached; k++) {
        put(&g->b, "  %s k%d = ", ty(p->bufs[g->k_buf[k]].dt), k), state_element(g, k), put(&g->b, ";\n");
    }
    put(&g->b, "  for (long long s = 0; s < count; s++) {\n");
    for (int i = 0; i < p->n_ins; i++) /* sums across lanes start each step at +0 */
        if (p->ins[i].kind == REMAT_LANE_SUM0)
            put(&g->b, "    r%d = ", i), lit(g, p->ins[i].dt, 0.0), put(&g->b, ";\n");
    if (g->serial)
        put(&g->b, "  for (j = lo; j < hi; j++) {\n");
    for (int phase = 0; phase < 2; phase++) { /* the lanes, then once per step after them */
        for (int i = 0; i < p->n_ins; i++) {
            const remat_lane_ins *I = &p->ins[i];
            if (I->kind == REMAT_LANE_SUM0 || I->kind == REMAT_LANE_EXIT || (I->post != 0) != (phase == 1))
                continue; /* an exit comes after the step (below) */
            if (!emit_ins(g, i))
                return 0;
        }
        if (phase == 0 && g->serial)
            put(&g->b, "  }\n");
    }
    const remat_lane_ins *X = p->n_ins > 0 ? &p->ins[p->n_ins - 1] : NULL;
    if (X && X->kind == REMAT_LANE_EXIT) { /* lane.h: serial (lanes_independent), a uniform register */
        if (p->m > 1 && !p->ins[X->a].post)
            return 0;
        const remat_lane_ins at = {.buf = X->buf, .off = X->off, .lstride = 0};
        put(&g->b, "    if (r%d == ", X->a), lit(g, p->ins[X->a].dt, 0.0), put(&g->b, ") {\n      ");
        element(g, &at), put(&g->b, " = (%s)(s + 1);\n      break;\n    }\n", ty(p->bufs[X->buf].dt));
    }
    for (int q = 0; q < p->n_bufs; q++)
        put(&g->b, "    p%d += a.st[%d];\n", q, q);
    put(&g->b, "  }\n");
    for (int k = 0; k < g->n_cached; k++)
        if (g->k_stored[k])
            put(&g->b, "  "), state_element(g, k), put(&g->b, " = k%d;\n", k);
    put(&g->b, "}\n");
    return 1;
}

remat_status rmi_cuda_lanes_source(const remat_lane_program *p, const char *name, char **src,
                                   remat_cuda_lanes_info *info)
{
    *src = NULL;
    const int nb = p->n_bufs > 0 ? p->n_bufs : 1;
    const size_t param_bytes = (size_t)nb * 16 + 3 * sizeof(long long);
    if (param_bytes > PARAM_MAX)
        return rmi_error(REMAT_ERR_UNSUPPORTED, "CUDA lanes: %d buffers do not fit in a kernel's parameters",
                         p->n_bufs);
    gen g = {.p = p, .serial = !lanes_independent(p)};
    remat_status st = REMAT_OK;
    if (!collect_state(&g))
        st = rmi_error(REMAT_ERR_NOMEM, "CUDA lanes: %d instructions", p->n_ins);
    else if (!generate(&g, name))
        st = rmi_error(REMAT_ERR_UNSUPPORTED, "CUDA lanes: an instruction without a CUDA form");
    else if (g.b.oom)
        st = rmi_error(REMAT_ERR_NOMEM, "CUDA lanes: the source of %d instructions", p->n_ins);
    rmi_free(g.cached), rmi_free(g.k_buf), rmi_free(g.k_off), rmi_free(g.k_lstride), rmi_free(g.k_stored);
    if (st != REMAT_OK) {
        rmi_free(g.b.s);
        return st;
    }
    *src = g.b.s;
    *info = (remat_cuda_lanes_info){.serial = g.serial, .n_bufs = p->n_bufs, .param_bytes = param_bytes};
    return REMAT_OK;
}

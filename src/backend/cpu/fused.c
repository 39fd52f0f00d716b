/*
 * fused.c — one instruction for a group of elementwise ops (a fused chain).
 *
 * The group's micro-ops run block by block: FUSED_BLOCK elements of every
 * micro-op, then the next block, so an intermediate lives in a small
 * register (2 KiB for f64, in a buffer of the thread's) that stays in L1,
 * instead of streaming a full array through memory per op. Each micro-op calls the very kernel its op
 * would call unfused (elementwise.c) on the block, so the bits are the same:
 * the same operations in the same order, each rounded to T and stored.
 * Large groups are split across the thread pool (core/pool.h) in whole
 * blocks; each element's arithmetic is the same on any thread. A group
 * exec compiled into one loop (remat_fused_op.compiled, exec/fuse_jit.c)
 * runs that loop instead, over ranges of elements on the pool.
 *
 * A group that ends in a reduction (remat_fused_op.red) computes its chain a
 * block at a time into a register, interpreted or compiled, and folds each
 * element into its output in the reduce kernel's order (reduce.c: one
 * running value per output, ascending, from its initial value, with the
 * kernel's step): the chain is never stored and the bits are unfused ones.
 * It is split across the pool by outputs.
 */
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "backend/backend_impl.h"
#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/fused.h"
#include "backend/cpu/split.h"
#include "core/assert.h"
#include "core/error.h"
#include "core/exhaustive.h"
#include "core/pool.h"

/* A group is split across the thread pool (split.h) in ranges of whole
 * blocks, so every element sees the block computation it would on one
 * thread: the bits do not depend on the thread count. */
enum { FUSED_BLOCK = 256 };
_Static_assert(REMAT_CPU_SPLIT_GRAIN % FUSED_BLOCK == 0, "split ranges must be whole fused blocks");

typedef struct {
    remat_fused_op F;
    const uint8_t *kind; /* remat_fused_uop_kind of each micro-op */
    remat_pool_site site; /* whether splitting the group pays (core/pool.h; the program's memory, written by runs) */
} cpu_fused;

/* The micro-ops' registers: REMAT_FUSED_MAX_REGS blocks, 47 KB in f64, more
 * than a thread's whole stack may be (`ulimit -s 32`, a small pthread
 * stack). One buffer per thread instead, made at its first fused group and
 * freed when the thread exits: a lookup per range, no allocation per call.
 * Made with the C library's allocator, not remat's (core/alloc.h): it is the
 * thread's, not a program's, and a run cannot fail for it (without it the
 * registers go on the stack, as they did). */
enum { REGS_BYTES = REMAT_FUSED_MAX_REGS * FUSED_BLOCK * sizeof(double) };
static pthread_key_t regs_key;
static pthread_once_t regs_once = PTHREAD_ONCE_INIT;
static int regs_key_ok;

static void regs_key_make(void) { regs_key_ok = pthread_key_create(&regs_key, free) == 0; }

static void *thread_regs(void)
{
    pthread_once(&regs_once, regs_key_make);
    if (!regs_key_ok)
        return NULL;
    void *r = pthread_getspecific(regs_key);
    if (!r && posix_memalign(&r, 64, REGS_BYTES) == 0 && pthread_setspecific(regs_key, r) != 0) {
        free(r);
        r = NULL;
    }
    return r;
}

/* out (m) = uop applied to src (m, or one element where *_s) */
#define DEFINE_FUSED(SFX)                                                                              \
    /* Elements [s, s + m) of broadcast input e (x, remat_fused_op.row_in,     \
     * col_in): a row's run of x in place when it does not wrap, else copied   \
     * into reg (the values, unchanged: the bits of the materialised array) */ \
    static const T *fused_bcast_##SFX(const remat_fused_op *F, const void *xv, int e, size_t s, size_t m, T *reg) \
    {                                                                                                  \
        const T *x = xv;                                                                               \
        const size_t L = (size_t)F->lanes;                                                             \
        size_t q = s / L, r = s % L;                                                                   \
        if (rmi_fused_mask_has(F->row_in, e)) {                                                        \
            if (r + m <= L)                                                                            \
                return x + r;                                                                          \
            for (size_t j = 0; j < m; j++) {                                                           \
                reg[j] = x[r];                                                                         \
                r = r + 1 == L ? 0 : r + 1;                                                            \
            }                                                                                          \
            return reg;                                                                                \
        }                                                                                              \
        for (size_t j = 0; j < m; j++) {                                                               \
            reg[j] = x[q];                                                                             \
            if (++r == L)                                                                              \
                r = 0, q++;                                                                            \
        }                                                                                              \
        return reg;                                                                                    \
    }                                                                                                  \
                                                                                                       \
    static void fused_uop_##SFX(const remat_fused_uop *u, remat_fused_uop_kind kind, size_t m, T *out, \
                                const T *const src[3], const int sc[3])                                \
    {                                                                                                  \
        switch (kind) {                                                                                \
        case REMAT_UOP_UNARY: rmi_cpu_unary_##SFX(u->op, m, out, src[0]); return;                      \
        case REMAT_UOP_INTEGER_POW: rmi_cpu_integer_pow_##SFX(m, out, src[0], (int)u->int_exponent); return;   \
        case REMAT_UOP_POW: rmi_cpu_pow_##SFX(m, out, src[0], u->exponent); return;                    \
        case REMAT_UOP_SELECT:                                                                         \
            if (sc[1] || sc[2])                                                                        \
                rmi_cpu_select_scalar_##SFX(m, out, src[0], src[1], sc[1], src[2], sc[2]);            \
            else                                                                                       \
                rmi_cpu_select_##SFX(m, out, src[0], src[1], src[2]);                                  \
            return;                                                                                    \
        case REMAT_UOP_BCAST: REMAT_ASSERT(0); return; /* read in fused_blocks */                    \
        case REMAT_UOP_BINARY:                                                                         \
            if (sc[1])                                                                                 \
                rmi_cpu_binary_scalar_##SFX(u->op, m, out, src[0], src[1], 1);                        \
            else if (sc[0])                                                                            \
                rmi_cpu_binary_scalar_##SFX(u->op, m, out, src[0], src[1], 0);                        \
            else                                                                                       \
                rmi_cpu_binary_##SFX(u->op, m, out, src[0], src[1]);                                  \
            return;                                                                                    \
        }                                                                                              \
    }                                                                                                  \
                                                                                                       \
    /* elements [s, s + m) of the group's micro-ops, the last one's into root */                     \
    static void fused_block_##SFX(const remat_instr *I, size_t s, size_t m, T (*regs)[FUSED_BLOCK], T *root) \
    {                                                                                                  \
        const cpu_fused *C = I->aux;                                                                   \
        const remat_fused_op *F = &C->F;                                                               \
        const int last = F->n_uops - 1;                                                                \
        const T *rp[REMAT_FUSED_MAX_REGS]; /* register r's block: regs[r], or a broadcast's vector */ \
        for (int k = 0; k <= last; k++) {                                                              \
            const remat_fused_uop *u = &F->uops[k];                                                    \
            if (C->kind[k] == REMAT_UOP_BCAST) {                                                       \
                rp[u->dst] = fused_bcast_##SFX(F, I->in[-1 - u->src[0]], -1 - u->src[0], s, m, regs[u->dst]); \
                continue;                                                                              \
            }                                                                                          \
            const T *src[3] = {NULL, NULL, NULL};                                                      \
            int sc[3] = {0, 0, 0};                                                                     \
            for (int j = 0; j < 3; j++) {                                                              \
                int r = u->src[j];                                                                     \
                if (r >= 0) {                                                                          \
                    src[j] = rp[r];                                                                    \
                } else if (r != INT16_MIN) {                                                           \
                    int e = -1 - r;                                                                    \
                    sc[j] = rmi_fused_mask_has(F->scalar_in, e);                                       \
                    src[j] = (const T *)I->in[e] + (sc[j] ? 0 : s);                                    \
                }                                                                                      \
            }                                                                                          \
            fused_uop_##SFX(u, (remat_fused_uop_kind)C->kind[k], m, k == last ? root : regs[u->dst], src, sc); \
            if (k < last)                                                                              \
                rp[u->dst] = regs[u->dst];                                                             \
        }                                                                                              \
    }                                                                                                  \
                                                                                                       \
    static void fused_blocks_##SFX(const remat_instr *I, int64_t begin, int64_t end, T (*regs)[FUSED_BLOCK]) \
    {                                                                                                  \
        T *out = I->out;                                                                               \
        for (size_t s = (size_t)begin; s < (size_t)end; s += FUSED_BLOCK) {                            \
            const size_t m = (size_t)end - s < FUSED_BLOCK ? (size_t)end - s : FUSED_BLOCK;            \
            fused_block_##SFX(I, s, m, regs, out + s);                                                 \
        }                                                                                              \
    }                                                                                                  \
                                                                                                       \
    /* Outputs [ob, oe) of a group that ends in a reduction (remat_fused_op.red):      \
     * the chain block by block into tmp (interpreted, or the compiled loop over a     \
     * block that stays in one grid row), each element then combined into its output  \
     * in ascending order from the kernel's initial value with the kernel's step       \
     * (reduce.c): the order of rmi_cpu_reduce_sum/max, so the same bits. */          \
    /* the chain's elements [s, s + m) into tmp, interpreted or compiled */                         \
    static inline void red_chain_##SFX(const remat_instr *I, size_t s, size_t m, T (*regs)[FUSED_BLOCK], T *tmp) \
    {                                                                                                  \
        if (((const cpu_fused *)I->aux)->F.compiled)                                                   \
            compiled_chain(I, s, m, tmp);                                                              \
        else                                                                                           \
            fused_block_##SFX(I, s, m, regs, tmp);                                                     \
    }                                                                                                  \
                                                                                                       \
    /* Outputs [ob, oe) of a group that ends in a reduction (remat_fused_op.red):      \
     * the chain block by block into a register (interpreted, or the compiled loop     \
     * over a block that stays in one grid row), each element then combined into its  \
     * output in ascending order from the kernel's initial value with the kernel's     \
     * step (reduce.c): the order of rmi_cpu_reduce_sum/max, so the same bits. Long    \
     * rows go 4 at a time, as the kernel's row sums do (4 independent chains: the     \
     * order within each output is unchanged), when 4 registers are free. */          \
    static void fused_red_##SFX(const remat_instr *I, int64_t ob, int64_t oe, T (*regs)[FUSED_BLOCK])        \
    {                                                                                                  \
        const cpu_fused *C = I->aux;                                                                   \
        const remat_fused_op *F = &C->F;                                                               \
        const size_t R = (size_t)F->red_len, L = (size_t)F->lanes;                                     \
        const bool is_max = F->red == REMAT_OP_REDUCE_MAX;                                             \
        const T init = is_max ? (T)-INFINITY : (T)0;                                                   \
        T *out = I->out;                                                                               \
        size_t o = (size_t)ob;                                                                         \
        if (R >= FUSED_BLOCK && F->n_regs + 4 <= REMAT_FUSED_MAX_REGS && (L == 0 || R % L == 0)) {     \
            T *t0 = regs[REMAT_FUSED_MAX_REGS - 1], *t1 = regs[REMAT_FUSED_MAX_REGS - 2],              \
              *t2 = regs[REMAT_FUSED_MAX_REGS - 3], *t3 = regs[REMAT_FUSED_MAX_REGS - 4];              \
            for (; o + 4 <= (size_t)oe; o += 4) {                                                      \
                T a0 = init, a1 = init, a2 = init, a3 = init;                                          \
                for (size_t j = 0; j < R;) {                                                           \
                    size_t m = R - j < FUSED_BLOCK ? R - j : FUSED_BLOCK;                              \
                    if (F->compiled && L > 0 && j % L + m > L)                                         \
                        m = L - j % L;                                                                 \
                    const size_t s = o * R + j;                                                        \
                    red_chain_##SFX(I, s, m, regs, t0);                                                \
                    red_chain_##SFX(I, s + R, m, regs, t1);                                            \
                    red_chain_##SFX(I, s + 2 * R, m, regs, t2);                                        \
                    red_chain_##SFX(I, s + 3 * R, m, regs, t3);                                        \
                    if (is_max)                                                                        \
                        for (size_t k = 0; k < m; k++) {                                               \
                            a0 = RMI_CPU_MAX_STEP(a0, t0[k]);                                          \
                            a1 = RMI_CPU_MAX_STEP(a1, t1[k]);                                          \
                            a2 = RMI_CPU_MAX_STEP(a2, t2[k]);                                          \
                            a3 = RMI_CPU_MAX_STEP(a3, t3[k]);                                          \
                        }                                                                              \
                    else                                                                               \
                        for (size_t k = 0; k < m; k++) {                                               \
                            a0 = RMI_CPU_SUM_STEP(a0, t0[k]);                                          \
                            a1 = RMI_CPU_SUM_STEP(a1, t1[k]);                                          \
                            a2 = RMI_CPU_SUM_STEP(a2, t2[k]);                                          \
                            a3 = RMI_CPU_SUM_STEP(a3, t3[k]);                                          \
                        }                                                                              \
                    j += m;                                                                            \
                }                                                                                      \
                out[o] = a0, out[o + 1] = a1, out[o + 2] = a2, out[o + 3] = a3;                        \
            }                                                                                          \
        }                                                                                              \
        T *tmp = regs[REMAT_FUSED_MAX_REGS - 1];                                                       \
        size_t row_end = (o + 1) * R;                                                                  \
        T acc = init;                                                                                  \
        for (size_t s = o * R, end = (size_t)oe * R; s < end;) {                                       \
            size_t m = end - s < FUSED_BLOCK ? end - s : FUSED_BLOCK;                                  \
            if (F->compiled && L > 0 && s % L + m > L)                                                 \
                m = L - s % L;                                                                         \
            red_chain_##SFX(I, s, m, regs, tmp);                                                       \
            for (size_t j = 0; j < m; j++) {                                                           \
                acc = is_max ? RMI_CPU_MAX_STEP(acc, tmp[j]) : RMI_CPU_SUM_STEP(acc, tmp[j]);          \
                if (++s == row_end) {                                                                  \
                    out[o++] = acc;                                                                    \
                    acc = init;                                                                        \
                    row_end += R;                                                                      \
                }                                                                                      \
            }                                                                                          \
        }                                                                                              \
    }                                                                                                  \
                                                                                                       \
    __attribute__((noinline)) static void fused_red_on_stack_##SFX(const remat_instr *I, int64_t ob, int64_t oe) \
    {                                                                                                  \
        T regs[REMAT_FUSED_MAX_REGS][FUSED_BLOCK];                                                     \
        fused_red_##SFX(I, ob, oe, regs);                              \
    }                                                                                                  \
                                                                                                       \
    static void fused_red_range_##SFX(void *ctx, int64_t ob, int64_t oe)                               \
    {                                                                                                  \
        T(*regs)[FUSED_BLOCK] = thread_regs();                                                         \
        if (regs)                                                                                      \
            fused_red_##SFX(ctx, ob, oe, regs);                        \
        else                                                                                           \
            fused_red_on_stack_##SFX(ctx, ob, oe);                                                     \
    }                                                                                                  \
                                                                                                       \
    /* split by outputs, each output's whole run on one thread */                                    \
    static void k_fused_red_##SFX(const remat_exec_ctx *cx, const remat_instr *I)                      \
    {                                                                                                  \
        cpu_fused *C = (cpu_fused *)I->aux;                                                            \
        const int64_t R = C->F.red_len, grain = REMAT_CPU_SPLIT_GRAIN / R > 0 ? REMAT_CPU_SPLIT_GRAIN / R : 1; \
        rmi_parallel_for_site(&C->site, (int64_t)I->n, grain, fused_red_range_##SFX, (void *)I);     \
    }                                                                                                  \
                                                                                                       \
    /* the registers on the stack: only when no thread buffer could be made */                       \
    __attribute__((noinline)) static void fused_blocks_on_stack_##SFX(const remat_instr *I, int64_t begin, \
                                                                      int64_t end)                     \
    {                                                                                                  \
        T regs[REMAT_FUSED_MAX_REGS][FUSED_BLOCK];                                                     \
        fused_blocks_##SFX(I, begin, end, regs);                                                       \
    }                                                                                                  \
                                                                                                       \
    static void fused_range_##SFX(void *ctx, int64_t begin, int64_t end)                             \
    {                                                                                                  \
        T(*regs)[FUSED_BLOCK] = thread_regs();                                                         \
        if (regs)                                                                                      \
            fused_blocks_##SFX(ctx, begin, end, regs);                                                 \
        else                                                                                           \
            fused_blocks_on_stack_##SFX(ctx, begin, end);                                              \
    }                                                                                                  \
                                                                                                       \
    static void k_fused_##SFX(const remat_exec_ctx *cx, const remat_instr *I)                          \
    {                                                                                                  \
        cpu_fused *C = (cpu_fused *)I->aux; /* writable: the program's memory */                       \
        rmi_parallel_for_site(&C->site, (int64_t)I->n, REMAT_CPU_SPLIT_GRAIN, fused_range_##SFX,   \
                              (void *)I);                                                              \
    }

/* A compiled chain of a group that ends in a reduction: its elements
 * [s, s + m) into tmp (m lanes, count 1; in a grid, within one row) */
static void compiled_chain(const remat_instr *I, size_t s, size_t m, void *tmp)
{
    const cpu_fused *C = I->aux;
    const remat_fused_op *F = &C->F;
    const size_t es = remat_dtype_size(F->dtype), L = (size_t)F->lanes;
    char *bufs[REMAT_FUSED_MAX_IN + 1];
    int64_t strides[REMAT_FUSED_MAX_IN + 1] = {0};
    for (int k = 0; k < F->nin; k++) {
        const size_t off = rmi_fused_mask_has(F->scalar_in, k) ? 0
                           : rmi_fused_mask_has(F->row_in, k)  ? s % L
                           : rmi_fused_mask_has(F->col_in, k)  ? s / L
                                                               : s;
        bufs[k] = (char *)I->in[k] + off * es;
    }
    bufs[F->nin] = tmp;
    F->compiled(bufs, strides, 1, (int64_t)m);
}

REMAT_EXHAUSTIVE_BEGIN
#define T float
DEFINE_FUSED(f32)
#undef T
#define T double
DEFINE_FUSED(f64)
#undef T

REMAT_EXHAUSTIVE_END

/* A compiled group (remat_fused_op.compiled): lanes [begin, end) of its loop,
 * every element buffer moved to lane begin */
static void compiled_range(void *ctx, int64_t begin, int64_t end)
{
    const remat_instr *I = ctx;
    const cpu_fused *C = I->aux;
    const size_t es = remat_dtype_size(C->F.dtype);
    char *bufs[3 * REMAT_FUSED_MAX_UOPS + 1];
    int64_t strides[3 * REMAT_FUSED_MAX_UOPS + 1] = {0};
    if (C->F.lanes > 0) { /* rows [begin, end) of the grid, a step per row */
        const int64_t L = C->F.lanes, row = L * (int64_t)es;
        for (int k = 0; k < C->F.nin; k++) {
            const bool one = rmi_fused_mask_has(C->F.scalar_in, k) || rmi_fused_mask_has(C->F.row_in, k),
                       col = rmi_fused_mask_has(C->F.col_in, k);
            strides[k] = one ? 0 : col ? (int64_t)es : row;
            bufs[k] = (char *)I->in[k] + begin * strides[k];
        }
        strides[C->F.nin] = row;
        bufs[C->F.nin] = (char *)I->out + begin * row;
        C->F.compiled(bufs, strides, end - begin, L);
        return;
    }
    for (int k = 0; k < C->F.nin; k++)
        bufs[k] = (char *)I->in[k] + (rmi_fused_mask_has(C->F.scalar_in, k) ? 0 : (size_t)begin * es);
    bufs[C->F.nin] = (char *)I->out + (size_t)begin * es;
    C->F.compiled(bufs, strides, 1, end - begin);
}

static void k_fused_compiled(const remat_exec_ctx *cx, const remat_instr *I)
{
    cpu_fused *C = (cpu_fused *)I->aux;
    if (C->F.lanes > 0) { /* split by grid rows, ranges of about the grain's elements */
        const int64_t L = C->F.lanes, grain = REMAT_CPU_SPLIT_GRAIN / L > 0 ? REMAT_CPU_SPLIT_GRAIN / L : 1;
        rmi_parallel_for_site(&C->site, (int64_t)I->n / L, grain, compiled_range, (void *)I);
        return;
    }
    rmi_parallel_for_site(&C->site, (int64_t)I->n, REMAT_CPU_SPLIT_GRAIN, compiled_range, (void *)I);
}

remat_status rmi_cpu_lower_fused(const remat_fused_op *op, remat_instr *ins, void *(*alloc)(void *, size_t),
                                 void *ctx)
{
    if (op->dtype != REMAT_F32 && op->dtype != REMAT_F64)
        return rmi_error(REMAT_ERR_UNSUPPORTED, "cpu backend: a fused group of dtype %d", (int)op->dtype);
    REMAT_ASSERT(op->n_regs <= REMAT_FUSED_MAX_REGS && op->n_uops >= 1);
    cpu_fused *C = alloc(ctx, sizeof *C);
    remat_fused_uop *u = alloc(ctx, sizeof *u * (size_t)op->n_uops);
    uint8_t *kind = alloc(ctx, (size_t)op->n_uops);
    if (!C || !u || !kind)
        return rmi_error(REMAT_ERR_NOMEM, "cpu backend: out of memory lowering a fused group of %d ops",
                         op->n_uops);
    for (int k = 0; k < op->n_uops; k++) {
        const int kd = rmi_fused_uop_kind_of(op->uops[k].op);
        if (kd < 0)
            return rmi_error(REMAT_ERR_UNSUPPORTED, "cpu backend: '%s' in a fused group is not elementwise",
                             remat_op_name(op->uops[k].op));
        REMAT_ASSERT(kd != REMAT_UOP_BCAST || (k < op->n_uops - 1 && op->lanes > 0));
        u[k] = op->uops[k];
        kind[k] = (uint8_t)kd;
    }
    *C = (cpu_fused){.F = *op};
    C->F.uops = u;
    C->kind = kind;
    REMAT_ASSERT(op->nin <= 3 * REMAT_FUSED_MAX_UOPS);
    if (op->red_len > 0) { /* the last register block holds the chain's block */
        REMAT_ASSERT((op->red == REMAT_OP_SUM || op->red == REMAT_OP_REDUCE_MAX) &&
                     op->n_regs < REMAT_FUSED_MAX_REGS);
        ins->fn = op->dtype == REMAT_F64 ? k_fused_red_f64 : k_fused_red_f32;
        ins->aux = C;
        return REMAT_OK;
    }
    ins->fn = op->compiled ? k_fused_compiled : op->dtype == REMAT_F64 ? k_fused_f64 : k_fused_f32;
    ins->aux = C;
    return REMAT_OK;
}

/*
 * fuse_jit.c — a fused elementwise group compiled into one native loop.
 *
 * A fused group (fuse.c) is the scalar code of one element run for every
 * element: a lane program (backend/lane.h) with one lane per element. Its
 * external inputs are LOADs (lane stride 1, or 0 for a scalar operand), its
 * micro-ops OPs in the same order on the same operands, its root a STORE:
 * the backend's lane compiler (the CPU's: libgccjit, jit.c) turns it into
 * one loop in which no intermediate leaves a register, with the bits of the
 * blocked interpreter (contract 2: each op is written as the kernel writes
 * it). The lanes are independent, so the backend may run any range of them
 * on any thread (contract 4).
 *
 * When a group is compiled (the rule docs/DESIGN.md states, "Compiled
 * fusion"): never with jit = never; never for a group of one op (no
 * intermediate to keep out of memory). A group holding a transcendental
 * (exp, log, sin, cos, tanh, erf, pow, log1p, expm1, logistic, erf_inv)
 * compiles too: the CPU's compiler runs such a program's lanes in blocks and
 * each transcendental as one call of the interpreter's own SLEEF vector map
 * on the block (backend/cpu/jit.c, "Blocked programs"), so it keeps the
 * interpreter's speed for those and its bits. Otherwise with jit =
 * always; with jit = auto when the code is at hand (this process's cache or
 * the disk's: a read and a dlopen), or when the group's work per run
 * (elements x micro-ops) reaches FUSE_JIT_MIN_WORK, where one run's saved
 * memory passes are worth a noticeable share of a compile (~60 ms, once per
 * distinct group and machine thanks to the disk cache).
 *
 * A group that reads a broadcast row or column vector in place (fuse.c,
 * remat_fused_op.lanes) is a program of `lanes` lanes run one step per row
 * of its grid: the vector is a LOAD of lane stride 1 and step stride 0 (a
 * row) or lane stride 0 and step stride 1 (a column), the broadcast
 * micro-op no instruction at all.
 *
 * A group that ends in a reduction (remat_fused_op.red) compiles its chain
 * alone, one lane per chain element (n * red_len of them), the reduction
 * counted as one more op of work; the backend calls the loop on a block at
 * a time and folds the block into the outputs in its reduce kernel's order
 * (cpu/fused.c). A chain of one op then compiles too: its value is the
 * intermediate kept out of memory.
 */
#include "exec/fuse.h"

#include "core/alloc.h"
#include "exec/exec_op.h"
#include "exec/passes.h"
#include "exec/program_impl.h"

enum { FUSE_JIT_MIN_WORK = 1 << 20 };

/* F as a lane program of m lanes into ins (2 * n_uops + nin + 1 slots) and
 * bufs (nin + 1): buffers 0..nin-1 the external inputs, nin the output. */
static void describe(const remat_fused_op *F, int64_t m, remat_lane_ins *ins, remat_lane_buf *bufs,
                     remat_lane_program *p)
{
    int32_t reg_ins[REMAT_FUSED_MAX_REGS];
    int n = 0;
    for (int k = 0; k <= F->nin; k++)
        bufs[k] = (remat_lane_buf){.dt = (uint8_t)F->dtype};
    for (int k = 0; k < F->nin; k++) {
        const bool one = rmi_fused_mask_has(F->scalar_in, k) || rmi_fused_mask_has(F->col_in, k);
        ins[n++] = (remat_lane_ins){.kind = REMAT_LANE_LOAD, .dt = (uint8_t)F->dtype, .a = -1, .b = -1, .c = -1,
                                    .buf = k, .lstride = one ? 0 : 1};
    }
    for (int r = 0; r < REMAT_FUSED_MAX_REGS; r++)
        reg_ins[r] = -1;
    for (int k = 0; k < F->n_uops; k++) {
        const remat_fused_uop *u = &F->uops[k];
        if (u->op == REMAT_OP_BROADCAST) { /* its register is its input's LOAD */
            reg_ins[u->dst] = -1 - u->src[0];
            continue;
        }
        int32_t src[3];
        for (int j = 0; j < 3; j++)
            src[j] = u->src[j] >= 0 ? reg_ins[u->src[j]] : u->src[j] == INT16_MIN ? -1 : -1 - u->src[j];
        ins[n] = (remat_lane_ins){.kind = REMAT_LANE_OP, .dt = (uint8_t)F->dtype, .op = (uint16_t)u->op,
                                  .a = src[0], .b = src[1], .c = src[2], .buf = -1,
                                  .imm = u->op == REMAT_OP_INTEGER_POW ? (double)u->int_exponent : u->exponent};
        if (k < F->n_uops - 1)
            reg_ins[u->dst] = n;
        n++;
    }
    ins[n] = (remat_lane_ins){.kind = REMAT_LANE_STORE, .dt = (uint8_t)F->dtype, .a = n - 1, .b = -1, .c = -1,
                              .buf = F->nin, .lstride = 1};
    n++;
    *p = (remat_lane_program){.m = m, .n_ins = n, .ins = ins, .n_bufs = F->nin + 1, .bufs = bufs};
}

remat_status rmi_fuse_compile(remat_compile_ctx *c, remat_fused_op *F, int64_t n)
{
    const remat_backend *be = c->be;
    const remat_compile_options *o = &c->p->counters->opts;
    F->compiled = NULL;
    /* host_lane_cuts: the backend's compiled lanes run on the host, as its
     * fused instructions do (the CPU's); CUDA lowers its groups itself */
    /* a group ending in a reduction: its chain of n * red_len elements is
     * the program, and a chain of one op keeps an intermediate out of memory */
    const int n_ops = F->n_uops + (F->red_len > 0);
    if (F->red_len > 0)
        n *= F->red_len;
    if (o->jit == REMAT_JIT_NEVER || !be->iface.compile_lanes || !be->iface.host_lane_cuts || n_ops < 2 || n < 1)
        return REMAT_OK;
    if (be->iface.can_compile_lanes && !be->iface.can_compile_lanes())
        return REMAT_OK;
    remat_lane_ins *ins = rmi_malloc(sizeof *ins * (size_t)(F->nin + F->n_uops + 1));
    remat_lane_buf *bufs = rmi_malloc(sizeof *bufs * (size_t)(F->nin + 1));
    if (!ins || !bufs) {
        rmi_free(ins);
        rmi_free(bufs);
        return rmi_compile_nomem("a fused group's lane program");
    }
    remat_lane_program p;
    const remat_lane_program *pp = &p;
    describe(F, F->lanes > 0 ? F->lanes : n, ins, bufs, &p);
    const char *dir = rmi_lane_cache_dir(o);
    remat_lane_fn fn = NULL;
    const bool big = (double)n * n_ops >= FUSE_JIT_MIN_WORK;
    remat_status st = REMAT_ERR_UNSUPPORTED;
    if (o->jit == REMAT_JIT_ALWAYS || big)
        st = be->iface.compile_lanes(be, 1, &pp, &fn, dir);
    else if (be->iface.load_lanes)
        st = be->iface.load_lanes(1, &pp, &fn, dir);
    rmi_free(ins);
    rmi_free(bufs);
    if (st == REMAT_ERR_NOMEM)
        return st; /* the compile fails, as it does for the other passes' memory */
    /* any other failure (no compiler, not cached) leaves the group interpreted */
    F->compiled = st == REMAT_OK ? fn : NULL;
    c->p->n_fused_compiled += F->compiled != NULL;
    return REMAT_OK;
}

/*
 * remat/scan.h — a lax.scan-like loop primitive whose reverse pass runs a
 * checkpoint schedule.
 *
 * body(carry..., x_t..., consts...) -> (carry'..., y_t...)
 *
 * xs are stacked along axis 0 (length rows) and sliced per step; ys come out
 * stacked the same way. consts are the values the body closes over (weights,
 * rate constants): ordinary inputs of the scan node that receive gradients.
 * The loop is one node: nothing is unrolled. Reverse mode builds one VJP of
 * the body, once, and the scan runtime replays the schedule's actions
 * (remat/schedule.h) with a snapshot store, so a 10^6-step loop is
 * differentiated in the memory of the schedule's snapshots.
 *
 * Speed: when the body is elementwise along one axis that all carries share
 * (a batch of independent problems), or small enough to unroll (an ODE step
 * on a few species), remat_compile turns it into native loops (libgccjit),
 * and runs of the schedule execute as single calls: a few ns per step
 * instead of tens of ns per op. Results are the interpreter's bit for bit;
 * remat_memory_plan.compiled_loops says whether it happened. Other bodies
 * (matrix products, custom ops) are interpreted.
 *
 * Compiled loops: only where it pays. Compiling costs gcc ~30 ms plus
 * ~0.1-0.15 ms per lane instruction of the body's programs (~50 ms for a
 * small body, ~0.65 s for Robertson's unrolled Rodas5 step at -O1; a few ms
 * from the disk cache, remat/exec.h), interpreting ~1.5 ns per lane
 * instruction and step (+0.5 ns per lane): a 1000-step gradient is done
 * interpreted long before gcc is. The policy, from the environment at
 * remat_compile (REMAT_JIT):
 *   auto (default)  compile at remat_compile when one run's predicted
 *                   interpreted work (the schedule's evaluations x the body's
 *                   instructions, the cost model above) exceeds the
 *                   compile's predicted cost; else take the code if this
 *                   process or the disk cache has it and the run is worth
 *                   loading it for (0.3 ms); else start interpreted
 *                   (remat_memory_plan.deferred_loops) and count the
 *                   predicted work of the runs of every scan of the
 *                   process with the same body (an ODE's intervals, a fit's
 *                   rebuilt programs): the run that brings it past the
 *                   compile's cost compiles the body (into the disk cache)
 *                   and the others take the code at their next run (never
 *                   more than about twice the better choice in hindsight);
 *                   the disk cache is asked once, when the work passes a
 *                   load's cost. The forward and backward nodes of one
 *                   gradient decide alike at remat_compile. No fixed size
 *                   limit decides: large bodies only cost more to compile
 *                   (a safety cap of 20000 lane instructions a kernel
 *                   remains).
 *   always          compile every body that can be (what tests and
 *                   benchmarks of the compiled loops set)
 *   never           interpret; REMAT_NO_JIT=1 is the same and wins.
 * (The variables are remat_compile's defaults; remat_compile_opts takes the
 * mode per call, remat_compile_options.jit in remat/exec.h.)
 * REMAT_JIT_DEBUG=1 prints each scan's prediction and decision on stderr.
 * A large batch of independent lanes may run its reverse pass a block of
 * lanes at a time, each block's forward and reverse back to back so that
 * its snapshots and tapes stay in cache, at the price of one more pass over
 * the steps (remat_memory_plan.scan_block_lanes, REMAT_SCAN_BLOCK=N, or the
 * option scan_block_lanes, forces blocks of N lanes, 0 none).
 *
 *   remat_scan_options opt = {.schedule = {.kind = REMAT_SCHED_BINOMIAL, .snapshots = 10}};
 *   remat_val carry_out;
 *   remat_scan(f, euler_step, 1000, 1, &c0, 0, NULL, 2, (remat_val[]){k1, k2}, &opt, &carry_out, NULL);
 */
#ifndef REMAT_SCAN_H
#define REMAT_SCAN_H

#include "export.h"
#include "ad.h"
#include "schedule.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    bool reverse;                    /* iterate t = length-1 .. 0 */
    remat_schedule_spec schedule;    /* zero-initialised: store_all */
    const remat_policy *body_policy; /* non-NULL: the body is a checkpoint
                                        region with this policy, as
                                        scan(checkpoint(body, policy)) */
    int unroll;                      /* lax.scan's unroll: the interpreter runs
                                        this many body evaluations as one
                                        sub-program per iteration of its
                                        plain (untaped) loop, the rest of a
                                        run one at a time. 0 (C's zero
                                        initialisation) means 1; negative is
                                        REMAT_ERR_VALUE. Compiled loops
                                        ignore it. Results are the same bits
                                        for every value (the same ops in the
                                        same order, contract 3). */
} remat_scan_options;

/* Adds a scan node to f. init: n_carry values matching the body's first
 * n_carry arguments; xs: n_xs values of shape (length, ...); consts: the
 * body's remaining arguments. Writes the final carries into carry_out
 * (n_carry) and the stacked ys into ys (body outputs beyond the carries; may
 * be NULL when there are none). opt may be NULL (store_all, forward). */
REMAT_API remat_status remat_scan_at(remat_fn *f, const remat_fn *body, int64_t length, int n_carry,
                                     const remat_val *init, int n_xs, const remat_val *xs, int n_consts,
                                     const remat_val *consts, const remat_scan_options *opt, remat_val *carry_out,
                                     remat_val *ys, remat_loc loc);
#define remat_scan(f, ...) remat_scan_at((f), __VA_ARGS__, REMAT_HERE)

#ifdef __cplusplus
}
#endif
#endif

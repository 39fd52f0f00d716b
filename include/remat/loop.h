/*
 * remat/loop.h — a while-loop of unknown length whose reverse pass runs a
 * checkpoint schedule (online by default): the primitive under adaptive
 * step-size integrators.
 *
 *   cond(carry..., consts...) -> keep_going            scalar, != 0: iterate
 *   body(carry..., consts...) -> (carry'..., accepted) accepted: scalar, != 0: keep
 *
 * As jax.lax.while_loop, cond is checked before each iteration, so a loop
 * may run zero times. remat has no bool or integer dtypes: the flags are
 * rank-0 f32/f64 values (compares give 1.0 / 0.0), and n_iter is an f64
 * scalar (exact up to 2^53 iterations).
 *
 * Carries. The first n_diff carries are the differentiated state (an ODE's
 * y); the others are control state (time, step size, controller memory,
 * counters) through which no derivative flows: stop_gradient semantics,
 * their tangents and cotangents are zero, and the derivative of the state
 * through them is dropped (an adaptive integrator's step sizes are treated
 * as constants of the reverse pass, as diffrax does). When an iteration's
 * `accepted` is 0 the loop keeps the n_diff carries unchanged (a select) and
 * the iteration is absent from the reverse pass: no tape, no VJP (a
 * rejected step). Control carries always take the body's values. Carries of
 * every kind keep their dtype and shape from iteration to iteration.
 *
 * Gradients are with respect to the init of the n_diff carries and to the
 * consts (the init of control carries gets a zero cotangent). The reverse
 * pass is exact for the iterations that ran: the discrete adjoint of the
 * accepted iterations unrolled, reversed last to first, and bitwise the
 * same under every schedule, as for remat_scan. It reruns the body from
 * snapshots of all carries (control included), so the body must be a pure
 * function of its arguments.
 *
 * Schedules. The default (schedule NULL) is online with
 * REMAT_WHILE_DEFAULT_SNAPSHOTS slots: the length is learnt as the loop
 * runs, one forward pass. Every other kind works too; those that need the
 * length up front (store-all, per-step, periodic, two-level, binomial) get
 * it from a counting pass (the body and cond run once more over the
 * iterations, without tapes, before the schedule's forward phase); those
 * evaluations are counted in remat_stats.forward_evals and
 * remat_memory_plan.forward_evals. An iteration is one step of the
 * schedule, rejected or not. A memory budget (opt.memory_budget) picks the
 * fastest schedule whose store fits within max_steps iterations
 * (remat_schedule_for_budget at length max_steps, with the carries' and
 * the body tape's bytes), taking online:S where that gives binomial:S (the
 * same store, no counting pass), when the loop is built (its body is then
 * differentiated at once, for the tape's size); REMAT_ERR_BUDGET names the
 * least that fits.
 *
 * Memory. The store of snapshots and tapes is a value like a scan's, sized
 * when compiled for the worst case the schedule can need within max_steps
 * (online:S and binomial:S: S snapshots and one tape; store-all: max_steps
 * tapes), plus one bit per iteration for `accepted`.
 *
 * Compiled loops. A body and cond that the scan's lane translator takes
 * (elementwise ops, small unrolled states, one lane) run as native loops
 * under the same tier policy as scans (REMAT_JIT=auto|always|never,
 * remat/scan.h): one call iterates while cond holds, and the reverse pass
 * runs the body's compiled tape / reverse / recompute steps over the
 * accepted iterations. Results, bits of `accepted`, evaluation counts and
 * gradients are the interpreted loop's, bit for bit. "auto" compiles once
 * the loop's interpreted runs have taken about as long as compiling would
 * (or at once when the code is in the disk cache).
 *
 * Forward mode (remat_jvp): a while-loop over the body's JVP carrying a
 * tangent for each of the n_diff carries (kept with them on a rejected
 * iteration); control carries get none.
 *
 * Errors. Running more than max_steps iterations is a run-time error:
 * remat_run returns REMAT_ERR_VALUE with a message naming the loop (its
 * cond/body and where it was built) and max_steps; the outputs are then
 * not valid.
 *
 *   // Euler steps of y' = -k y until y < 0.1 (y differentiated, t control)
 *   remat_while_options opt = {.max_steps = 10000};  // online:16
 *   remat_val out[2], n;
 *   remat_while(f, below, euler, 2, 1, (remat_val[]){y0, t0}, 1, &k, &opt, out, &n);
 */
#ifndef REMAT_LOOP_H
#define REMAT_LOOP_H

#include "export.h"
#include "ad.h"
#include "schedule.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Snapshots of the default online schedule. Online checkpointing
 * (src/adjoint/sched_online.c) with 16 slots evaluates the body 2.8x per
 * iteration over 100 iterations, 4.8x over 1000 to 3000, 5.7x over 10^4
 * (8 slots: 3.6x, 5.5x, 8.1x; remat_schedule_predict), for a store of 16
 * carries: a few kB for an ODE's state. */
#define REMAT_WHILE_DEFAULT_SNAPSHOTS 16

typedef struct {
    int64_t max_steps;               /* > 0: most iterations (accepted or not) */
    /* NULL: online:REMAT_WHILE_DEFAULT_SNAPSHOTS; else any spec (the
     * brief's draft had a spec by value, zero meaning online, but a zero
     * spec is store-all, which remat_schedule_parse("store-all") gives) */
    const remat_schedule_spec *schedule;
    /* > 0, with schedule NULL: the most bytes the store's snapshots and
     * tapes may take; the schedule is picked from it (below). 0: none. */
    int64_t memory_budget;
    const remat_policy *body_policy; /* non-NULL: the body is a checkpoint region with
                                        this policy (as in remat_scan_options) */
} remat_while_options;

/* Adds a while node to f. init: n_carry values matching the body's and
 * cond's first n_carry arguments; consts: their remaining arguments (the
 * same for both). Writes the final carries into carry_out (n_carry) and the
 * number of iterations run (accepted or not; f64 scalar) into *n_iter when
 * n_iter is not NULL. Errors (naming the argument): n_diff outside
 * 0..n_carry, argument counts, cond not returning one scalar, body not
 * returning n_carry + 1 values, a carry changing shape or dtype, init or
 * consts not matching, max_steps < 1, a bad schedule. */
REMAT_API remat_status remat_while_at(remat_fn *f, const remat_fn *cond, const remat_fn *body, int n_carry, int n_diff,
                                      const remat_val *init, int n_consts, const remat_val *consts,
                                      const remat_while_options *opt, remat_val *carry_out, remat_val *n_iter,
                                      remat_loc loc);
#define remat_while(f, ...) remat_while_at((f), __VA_ARGS__, REMAT_HERE)

#ifdef __cplusplus
}
#endif
#endif

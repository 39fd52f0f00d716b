/*
 * scan_replay.h (internal) — the one loop that replays a checkpoint
 * schedule, and the executor interface it drives.
 *
 * The replay consumes the schedule's runs (remat_schedule_next_run), keeps
 * the bookkeeping every executor needs — the current carry index, which
 * slot holds which carry, the kept tapes as spans of consecutive steps
 * (LIFO), live and peak counts — and turns each run into executor ops
 * (scan_xop): a run of TAPEs is one TAPE op over n steps, a per-step
 * forward one SHOT_ADVANCE op, and so on. An executor only executes ops; it
 * never sees an action or a slot table:
 *
 *   ADVANCE      steps k .. k+n-1, not recorded
 *   SHOT         slot := the current carry
 *   RESTORE      the current carry := slot
 *   SHOT_ADVANCE for q < n: slot + q*dslot := carry, then advance step k+q
 *   TAPE         steps k .. k+n-1 recorded into tapes j .. j+n-1
 *   REVERSE      steps k, k-1, .. k-n+1 reversed from tapes j, j-1, ..
 *   RECOMPUTE    steps k, k-1, .. each evaluated with recording from
 *                snapshot slot + q*dslot (slot -1, n 1: from the current
 *                carry) and reversed at once
 *
 * (k is the loop index: a reverse scan's step t = n-1-k, executors map it.)
 *
 * Executors: interpreted (sub-programs, scan_exec_interp.c), compiled
 * lanes (backend/lane.h kernels, scan_exec_lanes.c) and counting (here: the
 * evaluations each program does, which decides which programs a node
 * compiles and is what a run must measure). All walk op lists with
 * scan_walk() below, instantiated per executor so the calls are direct.
 *
 * A node's ops are a plan computed once at lowering (the schedule is a pure
 * function of its spec and length), so running a node costs no schedule
 * generation — ~20 us for binomial:10 over 1000 steps, more than the
 * arithmetic of its 4636 evaluations. The plan then also drops snapshots
 * nobody restores (online moves its newest one along), renames slots so
 * that strided ops line up (scan_slots.c) and merges adjacent ops. A plan over SCAN_PLAN_MAX_OPS ops is not kept: such a node
 * replays the schedule at each run, executing ops a chunk at a time.
 * (remat_compile_options.scan_plan_max_ops, REMAT_SCAN_PLAN_MAX_OPS=N in the
 * environment by default, moves the limit, so that tests can run the
 * streamed path on short scans.)
 */
#ifndef REMAT_SCAN_REPLAY_H
#define REMAT_SCAN_REPLAY_H

#include <stdbool.h>

#include "scan/scan_impl.h"

typedef enum {
    XOP_ADVANCE,
    XOP_SHOT,
    XOP_RESTORE,
    XOP_SHOT_ADVANCE,
    XOP_TAPE,
    XOP_REVERSE,
    XOP_RECOMPUTE,
} scan_xop_kind;

typedef struct {
    int32_t kind; /* scan_xop_kind */
    int32_t slot, dslot;
    int64_t step, count;
    int64_t tape;
} scan_xop;

typedef struct {
    void (*advance)(void *x, int64_t step, int64_t count);
    void (*snapshot)(void *x, int slot);
    void (*restore)(void *x, int slot);
    void (*shot_advance)(void *x, int64_t step, int64_t count, int slot, int dslot);
    void (*tape)(void *x, int64_t step, int64_t count, int64_t tape);
    void (*reverse)(void *x, int64_t step, int64_t count, int64_t tape);
    void (*recompute)(void *x, int64_t step, int64_t count, int slot, int dslot);
} scan_executor;

#if defined(__GNUC__)
#define SCAN_ALWAYS_INLINE __attribute__((always_inline)) inline
#else
#define SCAN_ALWAYS_INLINE inline
#endif

/* Executes n ops. X is a constant the caller's compiler sees (a static
 * const executor), so each call below is a direct call. */
static SCAN_ALWAYS_INLINE void scan_walk(const scan_executor *X, void *x, const scan_xop *op, int64_t n)
{
    for (const scan_xop *end = op + n; op < end; op++)
        switch ((scan_xop_kind)op->kind) {
        case XOP_ADVANCE: X->advance(x, op->step, op->count); break;
        case XOP_SHOT: X->snapshot(x, op->slot); break;
        case XOP_RESTORE: X->restore(x, op->slot); break;
        case XOP_SHOT_ADVANCE: X->shot_advance(x, op->step, op->count, op->slot, op->dslot); break;
        case XOP_TAPE: X->tape(x, op->step, op->count, op->tape); break;
        case XOP_REVERSE: X->reverse(x, op->step, op->count, op->tape); break;
        case XOP_RECOMPUTE: X->recompute(x, op->step, op->count, op->slot, op->dslot); break;
        }
}

/* Evaluations by body program: plain (advance), record (the VJP's forward
 * half: tapes and recomputations), reverse (its backward half). */
typedef struct {
    int64_t plain, record, reverse;
} scan_evals;

/* What a schedule phase does, counted by replaying it (the counting
 * executor), and the store it holds at its peak. */
typedef struct {
    scan_evals evals;
    int64_t peak_slots, peak_tapes; /* over the forward phase; the reverse's include it */
} scan_phase_cost;

enum { SCAN_PHASE_FORWARD, SCAN_PHASE_REVERSE };

/* scan_xops.c: op lists. push appends op to buf[0..*n), merged into the
 * op before it when the two are one (a restore and a recompute from the
 * carry, adjacent advances, strided snapshots or recomputes, ...). */
void rmi_scan_ops_push(scan_xop *buf, int64_t *n, scan_xop op);
/* adds the evaluations of ops to *evals (the counting executor) */
void rmi_scan_ops_count(const scan_xop *ops, int64_t n, scan_evals *evals);
/* marks SHOT ops whose snapshot no later op reads before its slot is
 * written again (kind -1), over both phases (the reverse reads what the
 * forward took) */
remat_status rmi_scan_ops_drop_dead_shots(scan_xop *const ops[2], const int64_t n[2], int64_t max_slots);
/* scan_slots.c: ops (both phases, unmerged, dropped shots kind -1) with
 * their snapshots in slots < max_slots chosen so that strided ops line up
 * (each snapshot in one slot from its write to its last read: the same
 * steps from the same carries), merged into out[ph][0..n_out[ph]), malloc'd.
 * REMAT_ERR_NOMEM (out NULL) on failure. */
remat_status rmi_scan_ops_rename_slots(scan_xop *const ops[2], const int64_t n[2], int64_t max_slots,
                                       scan_xop *out[2], int64_t n_out[2]);

/* A node's ops, replayed at lowering. */
typedef struct {
    bool kept;          /* false: over SCAN_PLAN_MAX_OPS, replayed at each run */
    scan_xop *ops[2];   /* per phase */
    int64_t n_ops[2];
    scan_phase_cost cost[2];
} scan_plan;

#define SCAN_PLAN_MAX_OPS ((int64_t)1 << 18)

/* Replays d's schedule (d->sched over d->length) once: the cost of both
 * phases and, when small enough, their ops, in memory from alloc(ctx)
 * (living as long as the plan is used). max_ops: remat_compile_options'
 * scan_plan_max_ops (0: SCAN_PLAN_MAX_OPS; REMAT_SCAN_PLAN_NONE: keep none).
 * REMAT_ERR_NOMEM on failure. */
remat_status rmi_scan_plan_build(const remat_scan_data *d, scan_plan *plan, int64_t max_ops,
                                 void *(*alloc)(void *ctx, size_t bytes), void *ctx);

/* Whether a schedule's slot is in the slow tier (two-tier: the slots past
 * its RAM ones) rather than the loop's store. */
static inline bool rmi_scan_slot_slow(const remat_schedule_spec *s, int64_t slot)
{
    return s->kind == REMAT_SCHED_TWO_TIER && slot >= s->snapshots;
}

/* What the replay needs of a loop: its schedule, its length and the
 * capacities of its store (slots, tapes). */
typedef struct {
    remat_schedule_spec sched;
    int64_t length; /* -1: unknown until reveal() (below) gives it; ONLINE only */
    int64_t max_slots, peak_tapes;
} scan_replay_dims;

#define SCAN_REPLAY_STOP (-2)
#define SCAN_REPLAY_STOPPED REMAT_ERR_VALUE

/* Runs one phase of d's schedule, handing ops to run(x, ops, n) a chunk at
 * a time. A loop whose length is unknown (a while-loop, d->length -1, the
 * forward phase only) is asked before each of the schedule's runs:
 * reveal(x, c), with every op so far run and the executor at carry c,
 * returns the length once it is known (at most c + 1; then no more
 * questions), -1 while it is not, or SCAN_REPLAY_STOP to end the replay
 * there (the executor keeps the reason), which returns SCAN_REPLAY_STOPPED.
 * REMAT_ERR_NOMEM (nothing run) when the schedule's state cannot be
 * allocated. *length (may be NULL): the length, as revealed; peak (may be
 * NULL): the most slots and tapes held at once up to the phase's end. */
remat_status rmi_scan_replay_stream(const scan_replay_dims *d, int phase, int64_t (*reveal)(void *x, int64_t c),
                                    void (*run)(void *x, const scan_xop *ops, int64_t n), void *x,
                                    int64_t *length, int64_t peak[2]);

/* Runs one phase of a plan that was not kept: replays the schedule again,
 * handing ops to run(x, ops, n) a chunk at a time. REMAT_ERR_NOMEM (nothing
 * run) when the schedule's state cannot be allocated. */
remat_status rmi_scan_plan_stream(const remat_scan_data *d, int phase, void (*run)(void *x, const scan_xop *ops, int64_t n),
                            void *x);

#endif

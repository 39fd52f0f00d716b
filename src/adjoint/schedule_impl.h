/*
 * schedule_impl.h (internal) — the schedule object and the per-kind vtable.
 *
 * GSL-style strategy objects: each kind is a `static const remat_schedule_type`
 * in its own file (sched_<kind>.c), exported as a `const remat_schedule_type *`
 * below. schedule.c owns the dispatch and the queue; a kind's `step` decides
 * the next few runs of actions (remat_action_run, remat/schedule.h) and pushes
 * them with rmi_sched_emit_run(), or single actions with rmi_sched_emit().
 * A kind emits a repetitive stretch (store-all's tapes, per-step's
 * snapshot/advance pairs, a periodic segment's tapes, Revolve's descents by
 * one step and its one-step reversals) as one run when it decides it, rather
 * than action by action: that is what lets the runtime execute it without
 * per-action overhead. Every kind allocates all of its
 * state in `init`, so neither next() nor next_run() ever allocates.
 */
#ifndef REMAT_ADJOINT_SCHEDULE_IMPL_H
#define REMAT_ADJOINT_SCHEDULE_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include "core/assert.h"
#include "remat/schedule.h"

/* The most runs one `step` call pushes. One decision of a kind pushes at most
 * REMAT_SCHED_STEP_MAX (Revolve's first turn: TAPE, END_FORWARD, REVERSE,
 * FREE; a periodic segment: RESTORE, its TAPE run, FREE, its REVERSE run);
 * binomial and online make decisions while that many still fit, so that one
 * trip through the dispatch serves several runs. */
#define REMAT_SCHED_STEP_MAX 4
#define REMAT_SCHED_QUEUE_CAP 16

typedef struct remat_schedule_type {
    const char *name; /* as parse() spells it, e.g. "binomial" */
    /* Allocate the kind's state; s->spec, s->n are set (s->n == -1 for ONLINE). */
    remat_status (*init)(remat_schedule *s);
    /* Push at least one run, or set s->done. Called only with an empty queue. */
    void (*step)(remat_schedule *s);
    /* ONLINE only (NULL elsewhere): the length has been revealed. */
    void (*set_length)(remat_schedule *s, int64_t length);
    void (*free)(remat_schedule *s);
    /* Cost for a valid spec and length >= 0. */
    remat_status (*predict)(const remat_schedule_spec *spec, int64_t length,
                            remat_schedule_cost *cost);
} remat_schedule_type;

/* The run remat_schedule_next() is expanding, taken off the queue. act[] is
 * the current repetition, already shifted; each finished repetition adds
 * dstep to every step and slot_inc[i] to every slot, the whole array at once
 * (entries past n are never handed out). */
typedef struct {
    remat_action act[REMAT_RUN_MAX_PATTERN];
    int slot_inc[REMAT_RUN_MAX_PATTERN]; /* dslot for TAKESHOT/RESTORE/FREE, else 0 */
    int n, pos;    /* pattern length; the next action of act[] to hand out */
    int64_t left;  /* repetitions left, the current one included; 0: nothing held */
    int64_t dstep;
    int dslot;
} remat_sched_cursor;

struct remat_schedule {
    remat_sched_cursor cur; /* first: all next() touches on its fast path */
    const remat_schedule_type *type;
    remat_schedule_spec spec;
    int64_t n;         /* number of steps; -1 while an ONLINE length is unknown */
    int64_t max_slots; /* reported by remat_schedule_max_slots() */
    bool done;
    /* Filled only by `step`, which runs only when the queue is empty: a flat
     * array read from qhead up to qtail, no wrap-around. */
    int qhead, qtail;
    remat_action_run queue[REMAT_SCHED_QUEUE_CAP];
    void *state; /* the kind's own state, allocated in init */
};

static inline remat_action rmi_sched_action(remat_action_kind kind, int64_t step, int slot)
{
    return (remat_action){.kind = kind, .step = step, .slot = slot};
}

/* Append a run to s's queue. Asserts the queue has room and the run is well
 * formed: 1 <= n <= REMAT_RUN_MAX_PATTERN, count >= 1, and END_FORWARD/DONE
 * only as a run of their own (n == 1, count == 1), which remat/schedule.h
 * promises consumers. Field by field, like every copy of a run (schedule.c):
 * the source was just written that way. */
static inline void rmi_sched_emit_run(remat_schedule *s, const remat_action_run *run)
{
    REMAT_ASSERT(s->qtail < REMAT_SCHED_QUEUE_CAP);
    REMAT_ASSERT(run->n >= 1 && run->n <= REMAT_RUN_MAX_PATTERN && run->count >= 1);
    remat_action_run *q = &s->queue[s->qtail++];
    q->n = run->n;
    for (int i = 0; i < run->n; i++) {
        REMAT_ASSERT((run->n == 1 && run->count == 1) || (run->pat[i].kind != REMAT_ACT_END_FORWARD &&
                                                          run->pat[i].kind != REMAT_ACT_DONE));
        q->pat[i].kind = run->pat[i].kind;
        q->pat[i].step = run->pat[i].step;
        q->pat[i].slot = run->pat[i].slot;
    }
    q->count = run->count;
    q->dstep = run->dstep;
    q->dslot = run->dslot;
}

/* Append a run of n actions, written in place: the caller sets pat[0..n-1]
 * with rmi_sched_set() (nothing is zeroed first, nor copied). For the
 * Revolve and online runs, which never hold END_FORWARD or DONE. */
static inline remat_action_run *rmi_sched_emit_open(remat_schedule *s, int n, int64_t count,
                                                    int64_t dstep, int dslot)
{
    REMAT_ASSERT(s->qtail < REMAT_SCHED_QUEUE_CAP);
    REMAT_ASSERT(n >= 1 && n <= REMAT_RUN_MAX_PATTERN && count >= 1);
    remat_action_run *q = &s->queue[s->qtail++];
    q->n = n;
    q->count = count;
    q->dstep = dstep;
    q->dslot = dslot;
    return q;
}

static inline void rmi_sched_set(remat_action *a, remat_action_kind kind, int64_t step, int slot)
{
    a->kind = kind;
    a->step = step;
    a->slot = slot;
}

/* Whether `step` may make another decision: room for REMAT_SCHED_STEP_MAX. */
static inline bool rmi_sched_room(const remat_schedule *s)
{
    return s->qtail <= REMAT_SCHED_QUEUE_CAP - REMAT_SCHED_STEP_MAX;
}
/* Append a run of one action, written in place with no run built and copied
 * (pat[1..] keep whatever they held: unused): what binomial and online emit
 * between their runs. */
static inline void rmi_sched_emit(remat_schedule *s, remat_action_kind kind, int64_t step,
                                  int slot)
{
    REMAT_ASSERT(s->qtail < REMAT_SCHED_QUEUE_CAP);
    remat_action_run *q = &s->queue[s->qtail++];
    q->n = 1;
    q->pat[0].kind = kind;
    q->pat[0].step = step;
    q->pat[0].slot = slot;
    q->count = 1;
    q->dstep = 0;
    q->dslot = 0;
}

extern const remat_schedule_type *const rmi_schedule_type_store_all;
extern const remat_schedule_type *const rmi_schedule_type_per_step;
extern const remat_schedule_type *const rmi_schedule_type_periodic;
extern const remat_schedule_type *const rmi_schedule_type_two_level;
extern const remat_schedule_type *const rmi_schedule_type_binomial;
extern const remat_schedule_type *const rmi_schedule_type_online;
extern const remat_schedule_type *const rmi_schedule_type_two_tier;

/* The two-tier recursion's least cost for the whole scan (evaluations + W
 * writes + R reads, sched_two_tier.c); -1 when no schedule exists or the
 * table is too large (the message says which). */
double rmi_sched_two_tier_optimum(const remat_schedule_spec *spec, int64_t n);
/* How many two-tier tables the process has solved (the others came from
 * its cache of solved tables, sched_two_tier.c). */
int64_t rmi_sched_two_tier_tables_solved(void);

/* Periodic internals shared with two-level (sched_periodic.c). */
remat_status rmi_sched_periodic_init_k(remat_schedule *s, int64_t period);
void rmi_sched_periodic_step(remat_schedule *s);
void rmi_sched_periodic_free(remat_schedule *s);
void rmi_sched_periodic_cost(int64_t length, int64_t period, remat_schedule_cost *cost);
/* ceil(sqrt(n)), at least 1: the two-level default period. */
int64_t rmi_sched_two_level_period(int64_t length);

#endif

/*
 * sched_periodic.c — CVODES-style two-pass checkpointing (Serban & Hindmarsh,
 * "CVODES: the sensitivity-enabled ODE solver in SUNDIALS", 2005): the forward
 * phase keeps the carry at the start of every segment of k steps; the reverse
 * phase restores each segment once, re-runs it with every step taped, and
 * reverses it from the tapes.
 *
 * The last segment (steps L..n-1, L = (m-1)k, m = ceil(n/k)) is taped on the
 * way forward, so its start is never snapshotted:
 *   evaluations  n + (m-1)*k   (every step but the last segment's twice)
 *   snapshots    m - 1         (slot j holds carry j*k)
 *   tapes        min(k, n)     (one segment's worth)
 * A segment's slot is freed as soon as the segment is taped again, before its
 * steps are reversed.
 *
 * Every repetitive stretch is one run (remat_action_run): the forward
 * snapshot/advance pairs, each segment's tapes and the REVERSEs that consume
 * them, so a runtime executes a segment as two loops.
 */
#include <limits.h>
#include <stdlib.h>

#include "adjoint/schedule_impl.h"
#include "core/alloc.h"
#include "core/assert.h"
#include "core/error.h"

typedef enum {
    PER_FORWARD, /* snapshot and advance over every segment but the last */
    PER_LAST,    /* tape the last segment, END_FORWARD, reverse it */
    PER_SEGMENT, /* segment j: restore, re-tape, free, reverse */
    PER_DONE
} periodic_phase;

typedef struct {
    int64_t k, m, last; /* period, segment count, first step of the last segment */
    int64_t j;          /* PER_SEGMENT: the segment to reverse next */
    periodic_phase phase;
} periodic_state;

static int64_t ceil_div(int64_t a, int64_t b) { return a / b + (a % b != 0); }

remat_status rmi_sched_periodic_init_k(remat_schedule *s, int64_t period)
{
    REMAT_ASSERT(period >= 1 && s->n >= 0);
    periodic_state *st = rmi_calloc(1, sizeof *st);
    if (!st)
        return rmi_error(REMAT_ERR_NOMEM, "periodic: out of memory");
    st->k = period;
    st->m = ceil_div(s->n, period);
    if (st->m - 1 > INT_MAX) { /* slot numbers are ints */
        rmi_free(st);
        return rmi_error(REMAT_ERR_ARG,
                         "periodic:%lld: %lld steps need more than %d snapshot slots",
                         (long long)period, (long long)s->n, INT_MAX);
    }
    st->last = st->m > 0 ? (st->m - 1) * period : 0;
    st->phase = st->m >= 2 ? PER_FORWARD : PER_LAST;
    s->state = st;
    s->max_slots = st->m > 0 ? st->m - 1 : 0;
    return REMAT_OK;
}

/* A run of `count` actions of one kind, steps from `step` by dstep. */
static void emit_steps(remat_schedule *s, remat_action_kind kind, int64_t step, int64_t count,
                       int64_t dstep)
{
    rmi_sched_emit_run(s, &(remat_action_run){
        .n = 1, .pat = {rmi_sched_action(kind, step, -1)}, .count = count, .dstep = dstep});
}

void rmi_sched_periodic_step(remat_schedule *s)
{
    periodic_state *st = s->state;
    int64_t k = st->k, n = s->n;
    switch (st->phase) {
    case PER_FORWARD: /* segment j = 0 .. m-2: slot j := carry jk, advance to (j+1)k */
        rmi_sched_emit_run(s, &(remat_action_run){
            .n = 2,
            .pat = {rmi_sched_action(REMAT_ACT_TAKESHOT, 0, 0),
                    rmi_sched_action(REMAT_ACT_ADVANCE, k, -1)},
            .count = st->m - 1, .dstep = k, .dslot = 1});
        st->phase = PER_LAST;
        return;
    case PER_LAST: /* steps last .. n-1, taped on the way forward */
        if (n > 0)
            emit_steps(s, REMAT_ACT_TAPE, st->last, n - st->last, 1);
        rmi_sched_emit(s, REMAT_ACT_END_FORWARD, n, -1);
        if (n > 0)
            emit_steps(s, REMAT_ACT_REVERSE, n - 1, n - st->last, -1);
        st->j = st->m - 2;
        st->phase = st->j >= 0 ? PER_SEGMENT : PER_DONE;
        return;
    case PER_SEGMENT: { /* steps a .. a+k-1 */
        int64_t a = st->j * k;
        rmi_sched_emit(s, REMAT_ACT_RESTORE, a, (int)st->j);
        emit_steps(s, REMAT_ACT_TAPE, a, k, 1);
        rmi_sched_emit(s, REMAT_ACT_FREE, a, (int)st->j);
        emit_steps(s, REMAT_ACT_REVERSE, a + k - 1, k, -1);
        if (--st->j < 0)
            st->phase = PER_DONE;
        return;
    }
    case PER_DONE: s->done = true; return;
    }
}

void rmi_sched_periodic_free(remat_schedule *s) { rmi_free(s->state); }

void rmi_sched_periodic_cost(int64_t n, int64_t k, remat_schedule_cost *cost)
{
    int64_t m = ceil_div(n, k);
    if (n == 0) {
        *cost = (remat_schedule_cost){0};
        return;
    }
    int64_t redo = (m - 1) * k; /* <= n - 1, no overflow */
    *cost = (remat_schedule_cost){
        .forward_evals = n + redo, .peak_snapshots = m - 1, .peak_tapes = k < n ? k : n};
}

static remat_status periodic_init(remat_schedule *s)
{
    return rmi_sched_periodic_init_k(s, s->spec.period);
}

static remat_status periodic_predict(const remat_schedule_spec *spec, int64_t n,
                                     remat_schedule_cost *cost)
{
    rmi_sched_periodic_cost(n, spec->period, cost);
    return REMAT_OK;
}

static const remat_schedule_type periodic_type = {
    .name = "periodic",
    .init = periodic_init,
    .step = rmi_sched_periodic_step,
    .free = rmi_sched_periodic_free,
    .predict = periodic_predict,
};

const remat_schedule_type *const rmi_schedule_type_periodic = &periodic_type;

/*
 * sched_per_step.c — snapshot every carry, re-tape each step in the reverse
 * phase (what `scan(checkpoint(body))` does in JAX): slot i holds carry i for
 * i < n-1, the last step is taped on the way forward. 2n-1 evaluations, n-1
 * snapshots, one tape at a time.
 */
#include <limits.h>
#include <stdlib.h>

#include "adjoint/schedule_impl.h"
#include "core/alloc.h"
#include "core/error.h"

/* The forward snapshots and the reverse re-tapes are one run each; the last
 * step (taped on the way forward and reversed at once) is three single
 * actions between them. */
typedef enum { PS_FORWARD, PS_LAST, PS_REVERSE, PS_DONE } per_step_phase;

typedef struct {
    per_step_phase phase;
} per_step_state;

static remat_status per_step_init(remat_schedule *s)
{
    if (s->n - 1 > INT_MAX) /* slot numbers are ints */
        return rmi_error(REMAT_ERR_ARG, "per-step: %lld steps need more than %d snapshot slots",
                         (long long)s->n, INT_MAX);
    per_step_state *st = rmi_calloc(1, sizeof *st);
    if (!st)
        return rmi_error(REMAT_ERR_NOMEM, "per-step: out of memory");
    st->phase = s->n >= 2 ? PS_FORWARD : PS_LAST;
    s->state = st;
    s->max_slots = s->n > 1 ? s->n - 1 : 0;
    return REMAT_OK;
}

static void per_step_step(remat_schedule *s)
{
    per_step_state *st = s->state;
    int64_t n = s->n;
    switch (st->phase) {
    case PS_FORWARD: /* at carry i = 0 .. n-2: slot i := carry i, advance to i+1 */
        rmi_sched_emit_run(s, &(remat_action_run){
            .n = 2,
            .pat = {rmi_sched_action(REMAT_ACT_TAKESHOT, 0, 0),
                    rmi_sched_action(REMAT_ACT_ADVANCE, 1, -1)},
            .count = n - 1, .dstep = 1, .dslot = 1});
        st->phase = PS_LAST;
        return;
    case PS_LAST:
        if (n > 0) { /* the last step: tape it, reverse it at once */
            rmi_sched_emit(s, REMAT_ACT_TAPE, n - 1, -1);
            rmi_sched_emit(s, REMAT_ACT_END_FORWARD, n, -1);
            rmi_sched_emit(s, REMAT_ACT_REVERSE, n - 1, -1);
        } else {
            rmi_sched_emit(s, REMAT_ACT_END_FORWARD, 0, -1);
        }
        st->phase = n >= 2 ? PS_REVERSE : PS_DONE;
        return;
    case PS_REVERSE: /* steps i = n-2 .. 0: back to carry i, re-tape and reverse */
        rmi_sched_emit_run(s, &(remat_action_run){
            .n = 3,
            .pat = {rmi_sched_action(REMAT_ACT_RESTORE, n - 2, (int)(n - 2)),
                    rmi_sched_action(REMAT_ACT_REVERSE, n - 2, -1),
                    rmi_sched_action(REMAT_ACT_FREE, n - 2, (int)(n - 2))},
            .count = n - 1, .dstep = -1, .dslot = -1});
        st->phase = PS_DONE;
        return;
    case PS_DONE: s->done = true; return;
    }
}

static void per_step_free(remat_schedule *s) { rmi_free(s->state); }

static remat_status per_step_predict(const remat_schedule_spec *spec, int64_t n,
                                     remat_schedule_cost *cost)
{
    (void)spec;
    if (n > 0)
        *cost = (remat_schedule_cost){.forward_evals = 2 * n - 1, .peak_snapshots = n - 1,
                                      .peak_tapes = 1};
    return REMAT_OK;
}

static const remat_schedule_type per_step_type = {
    .name = "per-step",
    .init = per_step_init,
    .step = per_step_step,
    .free = per_step_free,
    .predict = per_step_predict,
};

const remat_schedule_type *const rmi_schedule_type_per_step = &per_step_type;

/*
 * sched_per_step.c — snapshot every carry, re-tape each step in the reverse
 * phase (what `scan(checkpoint(body))` does in JAX): slot i holds carry i for
 * i < n-1, the last step is taped on the way forward. 2n-1 evaluations, n-1
 * snapshots, one tape at a time.
 */
#include <limits.h>
#include <stdlib.h>

#include "adjoint/schedule_impl.h"
#include "core/error.h"

typedef enum { PS_SHOT, PS_ADVANCE, PS_RESTORE, PS_REVERSE, PS_FREE, PS_DONE } per_step_phase;

typedef struct {
    int64_t i; /* the carry or step the phase refers to */
    per_step_phase phase;
} per_step_state;

static remat_status per_step_init(remat_schedule *s)
{
    if (s->n - 1 > INT_MAX) /* slot numbers are ints */
        return remat_error(REMAT_ERR_ARG, "per-step: %lld steps need more than %d snapshot slots",
                           (long long)s->n, INT_MAX);
    per_step_state *st = calloc(1, sizeof *st);
    if (!st)
        return remat_error(REMAT_ERR_NOMEM, "per-step: out of memory");
    st->phase = PS_SHOT;
    s->state = st;
    s->max_slots = s->n > 1 ? s->n - 1 : 0;
    return REMAT_OK;
}

static void per_step_step(remat_schedule *s)
{
    per_step_state *st = s->state;
    switch (st->phase) {
    case PS_SHOT: /* at carry i of the forward phase */
        if (st->i + 1 < s->n) {
            remat_sched_emit(s, REMAT_ACT_TAKESHOT, st->i, (int)st->i);
            st->phase = PS_ADVANCE;
            return;
        }
        if (s->n > 0) { /* the last step: tape it, reverse it at once */
            remat_sched_emit(s, REMAT_ACT_TAPE, s->n - 1, -1);
            remat_sched_emit(s, REMAT_ACT_END_FORWARD, s->n, -1);
            remat_sched_emit(s, REMAT_ACT_REVERSE, s->n - 1, -1);
        } else {
            remat_sched_emit(s, REMAT_ACT_END_FORWARD, 0, -1);
        }
        st->i = s->n - 2;
        st->phase = PS_RESTORE;
        return;
    case PS_ADVANCE:
        remat_sched_emit(s, REMAT_ACT_ADVANCE, st->i + 1, -1);
        st->i++;
        st->phase = PS_SHOT;
        return;
    case PS_RESTORE:
        if (st->i < 0) {
            st->phase = PS_DONE;
            s->done = true;
            return;
        }
        remat_sched_emit(s, REMAT_ACT_RESTORE, st->i, (int)st->i);
        st->phase = PS_REVERSE;
        return;
    case PS_REVERSE:
        remat_sched_emit(s, REMAT_ACT_REVERSE, st->i, -1);
        st->phase = PS_FREE;
        return;
    case PS_FREE:
        remat_sched_emit(s, REMAT_ACT_FREE, st->i, (int)st->i);
        st->i--;
        st->phase = PS_RESTORE;
        return;
    case PS_DONE: s->done = true; return;
    }
}

static void per_step_free(remat_schedule *s) { free(s->state); }

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

const remat_schedule_type *const remat_schedule_type_per_step = &per_step_type;

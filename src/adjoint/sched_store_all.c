/*
 * sched_store_all.c — tape every step in the forward phase, reverse from the
 * tapes: n evaluations, n tapes, no snapshot (the initial carry is the scan's
 * own input, never copied into a slot).
 */
#include <stdlib.h>

#include "adjoint/schedule_impl.h"
#include "core/error.h"

typedef struct {
    int64_t next;  /* forward: next step to tape; reverse: next step to reverse */
    bool reversing;
} store_all_state;

static remat_status store_all_init(remat_schedule *s)
{
    store_all_state *st = calloc(1, sizeof *st);
    if (!st)
        return remat_error(REMAT_ERR_NOMEM, "store-all: out of memory");
    s->state = st;
    s->max_slots = 0;
    return REMAT_OK;
}

static void store_all_step(remat_schedule *s)
{
    store_all_state *st = s->state;
    if (!st->reversing) {
        if (st->next < s->n) {
            remat_sched_emit(s, REMAT_ACT_TAPE, st->next, -1);
            st->next++;
            return;
        }
        remat_sched_emit(s, REMAT_ACT_END_FORWARD, s->n, -1);
        st->reversing = true;
        st->next = s->n - 1;
        return;
    }
    if (st->next >= 0) {
        remat_sched_emit(s, REMAT_ACT_REVERSE, st->next, -1);
        st->next--;
        return;
    }
    s->done = true;
}

static void store_all_free(remat_schedule *s) { free(s->state); }

static remat_status store_all_predict(const remat_schedule_spec *spec, int64_t n,
                                      remat_schedule_cost *cost)
{
    (void)spec;
    *cost = (remat_schedule_cost){.forward_evals = n, .peak_snapshots = 0, .peak_tapes = n};
    return REMAT_OK;
}

static const remat_schedule_type store_all_type = {
    .name = "store-all",
    .init = store_all_init,
    .step = store_all_step,
    .free = store_all_free,
    .predict = store_all_predict,
};

const remat_schedule_type *const remat_schedule_type_store_all = &store_all_type;

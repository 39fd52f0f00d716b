/*
 * sched_store_all.c — tape every step in the forward phase, reverse from the
 * tapes: n evaluations, n tapes, no snapshot (the initial carry is the scan's
 * own input, never copied into a slot).
 */
#include <stdlib.h>

#include "adjoint/schedule_impl.h"
#include "core/alloc.h"
#include "core/error.h"

/* Each phase emits one run: the forward phase's tapes, END_FORWARD, the
 * reverse phase's REVERSEs. */
typedef enum { SA_TAPE, SA_END, SA_REVERSE, SA_DONE } store_all_phase;

typedef struct {
    store_all_phase phase;
} store_all_state;

static remat_status store_all_init(remat_schedule *s)
{
    store_all_state *st = rmi_calloc(1, sizeof *st);
    if (!st)
        return rmi_error(REMAT_ERR_NOMEM, "store-all: out of memory");
    st->phase = s->n > 0 ? SA_TAPE : SA_END;
    s->state = st;
    s->max_slots = 0;
    return REMAT_OK;
}

static void store_all_step(remat_schedule *s)
{
    store_all_state *st = s->state;
    switch (st->phase) {
    case SA_TAPE: /* steps 0 .. n-1 */
        rmi_sched_emit_run(s, &(remat_action_run){
            .n = 1, .pat = {rmi_sched_action(REMAT_ACT_TAPE, 0, -1)},
            .count = s->n, .dstep = 1});
        st->phase = SA_END;
        return;
    case SA_END:
        rmi_sched_emit(s, REMAT_ACT_END_FORWARD, s->n, -1);
        st->phase = s->n > 0 ? SA_REVERSE : SA_DONE;
        return;
    case SA_REVERSE: /* steps n-1 .. 0 */
        rmi_sched_emit_run(s, &(remat_action_run){
            .n = 1, .pat = {rmi_sched_action(REMAT_ACT_REVERSE, s->n - 1, -1)},
            .count = s->n, .dstep = -1});
        st->phase = SA_DONE;
        return;
    case SA_DONE: s->done = true; return;
    }
}

static void store_all_free(remat_schedule *s) { rmi_free(s->state); }

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

const remat_schedule_type *const rmi_schedule_type_store_all = &store_all_type;

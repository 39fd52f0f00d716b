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
 */
#include <limits.h>
#include <stdlib.h>

#include "adjoint/schedule_impl.h"
#include "core/assert.h"
#include "core/error.h"

typedef enum {
    PER_FWD_SHOT,   /* at the start of segment j of the forward phase */
    PER_FWD_ADVANCE,
    PER_FWD_TAPE,   /* taping the last segment, next step i */
    PER_REV,        /* reversing steps of the current segment from tapes */
    PER_RESTORE,    /* segment j: restore its start */
    PER_RETAPE,     /* segment j: tape step i */
    PER_DONE
} periodic_phase;

typedef struct {
    int64_t k, m, last; /* period, segment count, first step of the last segment */
    int64_t j, i, stop; /* current segment, step; PER_REV reverses i down to stop */
    periodic_phase phase;
} periodic_state;

static int64_t ceil_div(int64_t a, int64_t b) { return a / b + (a % b != 0); }

remat_status remat_sched_periodic_init_k(remat_schedule *s, int64_t period)
{
    REMAT_ASSERT(period >= 1 && s->n >= 0);
    periodic_state *st = calloc(1, sizeof *st);
    if (!st)
        return remat_error(REMAT_ERR_NOMEM, "periodic: out of memory");
    st->k = period;
    st->m = ceil_div(s->n, period);
    if (st->m - 1 > INT_MAX) { /* slot numbers are ints */
        free(st);
        return remat_error(REMAT_ERR_ARG,
                           "periodic:%lld: %lld steps need more than %d snapshot slots",
                           (long long)period, (long long)s->n, INT_MAX);
    }
    st->last = st->m > 0 ? (st->m - 1) * period : 0;
    st->phase = PER_FWD_SHOT;
    s->state = st;
    s->max_slots = st->m > 0 ? st->m - 1 : 0;
    return REMAT_OK;
}

void remat_sched_periodic_step(remat_schedule *s)
{
    periodic_state *st = s->state;
    switch (st->phase) {
    case PER_FWD_SHOT:
        if (st->j < st->m - 1) {
            remat_sched_emit(s, REMAT_ACT_TAKESHOT, st->j * st->k, (int)st->j);
            st->phase = PER_FWD_ADVANCE;
        } else {
            st->i = st->last;
            st->phase = PER_FWD_TAPE;
        }
        return;
    case PER_FWD_ADVANCE:
        remat_sched_emit(s, REMAT_ACT_ADVANCE, (st->j + 1) * st->k, -1);
        st->j++;
        st->phase = PER_FWD_SHOT;
        return;
    case PER_FWD_TAPE:
        if (st->i < s->n) {
            remat_sched_emit(s, REMAT_ACT_TAPE, st->i, -1);
            st->i++;
            return;
        }
        remat_sched_emit(s, REMAT_ACT_END_FORWARD, s->n, -1);
        st->i = s->n - 1;
        st->stop = st->last;
        st->j = st->m - 1; /* the segment being reversed */
        st->phase = PER_REV;
        return;
    case PER_REV:
        if (st->i >= st->stop && st->i >= 0) {
            remat_sched_emit(s, REMAT_ACT_REVERSE, st->i, -1);
            st->i--;
            return;
        }
        st->j--;
        st->phase = st->j >= 0 ? PER_RESTORE : PER_DONE;
        if (st->j < 0)
            s->done = true;
        return;
    case PER_RESTORE:
        remat_sched_emit(s, REMAT_ACT_RESTORE, st->j * st->k, (int)st->j);
        st->i = st->j * st->k;
        st->phase = PER_RETAPE;
        return;
    case PER_RETAPE:
        if (st->i < (st->j + 1) * st->k) {
            remat_sched_emit(s, REMAT_ACT_TAPE, st->i, -1);
            st->i++;
            return;
        }
        remat_sched_emit(s, REMAT_ACT_FREE, st->j * st->k, (int)st->j);
        st->i = (st->j + 1) * st->k - 1;
        st->stop = st->j * st->k;
        st->phase = PER_REV;
        return;
    case PER_DONE: s->done = true; return;
    }
}

void remat_sched_periodic_free(remat_schedule *s) { free(s->state); }

void remat_sched_periodic_cost(int64_t n, int64_t k, remat_schedule_cost *cost)
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
    return remat_sched_periodic_init_k(s, s->spec.period);
}

static remat_status periodic_predict(const remat_schedule_spec *spec, int64_t n,
                                     remat_schedule_cost *cost)
{
    remat_sched_periodic_cost(n, spec->period, cost);
    return REMAT_OK;
}

static const remat_schedule_type periodic_type = {
    .name = "periodic",
    .init = periodic_init,
    .step = remat_sched_periodic_step,
    .free = remat_sched_periodic_free,
    .predict = periodic_predict,
};

const remat_schedule_type *const remat_schedule_type_periodic = &periodic_type;

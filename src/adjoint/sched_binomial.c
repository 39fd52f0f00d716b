/*
 * sched_binomial.c — Revolve (Griewank & Walther, ACM TOMS 26(1), 2000) for a
 * known length n and s snapshots.
 *
 * The whole scan is one Revolve range [0, n) whose first descent is the
 * forward phase: snapshots at the split points, the last step taped ("first
 * turn"), END_FORWARD, then its reversal. The snapshot of carry 0 is one of
 * the s (the Griewank–Walther count), taken only when n >= 2. More than n-1
 * snapshots are never useful, so s is clamped to n-1:
 *   evaluations  n + F(n, s)      (remat_binomial_optimum)
 *   snapshots    min(s, n-1)      (every slot is live at END_FORWARD)
 *   tapes        1
 *
 * Runs (remat/schedule.h; the Revolve engine groups its own actions, the
 * stream is the same action for action):
 *   [TAKESHOT c slot p, ADVANCE c+1] x m (dstep +1, dslot +1)
 *       a descent whose splits are 1: in ranges with at least l-1 snapshots,
 *       and at the start of some (binomial:10, 20 steps: carries 0..6)
 *   [RESTORE k slot p, REVERSE k, FREE k slot p] x m (dstep -1, dslot -1)
 *       one-step ranges in a row, the last turn down to carry 0 among them
 *   [RESTORE a,] [TAKESHOT a,] ADVANCE a+j [, REVERSE a+j], count 1
 *       one level of any other descent (REVERSE when its right part is one
 *       step: every turn of a one-snapshot range)
 *   single actions: the first turn (TAPE, END_FORWARD, REVERSE), the REVERSE
 *   that ends a descent by one step, DONE.
 * With s >= n-1 that is per-step's runs exactly. binomial:10 over 1000 steps:
 * 4429 actions in 1014 runs.
 */
#include <limits.h>
#include <stdlib.h>

#include "adjoint/revolve.h"
#include "core/alloc.h"
#include "core/error.h"

typedef struct {
    remat_revolve_engine engine;
    bool started;
} binomial_state;

static int64_t clamp_snapshots(int64_t s, int64_t n) { return s < n - 1 ? s : (n > 1 ? n - 1 : 0); }

static remat_status binomial_init(remat_schedule *s)
{
    int64_t slots = clamp_snapshots(s->spec.snapshots, s->n);
    if (slots > INT_MAX)
        return rmi_error(REMAT_ERR_ARG, "binomial:%lld: more than %d snapshot slots",
                         (long long)s->spec.snapshots, INT_MAX);
    binomial_state *st = rmi_calloc(1, sizeof *st);
    if (!st)
        return rmi_error(REMAT_ERR_NOMEM, "binomial: out of memory");
    /* Each nested range holds one snapshot fewer: at most slots+1 frames.
     * No range has a larger repetition number than the whole scan's, T: a
     * beta table for t <= T serves every split (one snapshot splits without). */
    int64_t reps = s->n >= 2 && slots >= 2 ? rmi_revolve_reps(s->n, slots) : 0;
    remat_status rc = rmi_revolve_engine_init(&st->engine, slots + 2, slots, reps + 1);
    if (rc != REMAT_OK) {
        rmi_free(st);
        return rc;
    }
    rmi_revolve_engine_fill(&st->engine, reps);
    for (int64_t i = slots - 1; i >= 0; i--) /* slot 0 is taken first */
        rmi_revolve_pool_put(&st->engine, (int)i);
    st->engine.n = s->n;
    st->engine.forward_open = true;
    if (s->n > 0)
        rmi_revolve_push(&st->engine, 0, s->n, slots, reps, -1);
    s->state = st;
    s->max_slots = slots;
    return REMAT_OK;
}

static void binomial_step(remat_schedule *s)
{
    binomial_state *st = s->state;
    if (s->n == 0 && !st->started) {
        rmi_sched_emit(s, REMAT_ACT_END_FORWARD, 0, -1);
        st->started = true;
        return;
    }
    st->started = true;
    if (!rmi_revolve_step(&st->engine, s)) {
        s->done = true;
        return;
    }
    while (rmi_sched_room(s) && rmi_revolve_step(&st->engine, s))
        ;
}

static void binomial_free(remat_schedule *s)
{
    binomial_state *st = s->state;
    if (!st)
        return;
    rmi_revolve_engine_release(&st->engine);
    rmi_free(st);
}

static remat_status binomial_predict(const remat_schedule_spec *spec, int64_t n,
                                     remat_schedule_cost *cost)
{
    if (n == 0)
        return REMAT_OK;
    *cost = (remat_schedule_cost){.forward_evals = remat_binomial_optimum(n, spec->snapshots),
                                  .peak_snapshots = clamp_snapshots(spec->snapshots, n),
                                  .peak_tapes = 1};
    return REMAT_OK;
}

static const remat_schedule_type binomial_type = {
    .name = "binomial",
    .init = binomial_init,
    .step = binomial_step,
    .free = binomial_free,
    .predict = binomial_predict,
};

const remat_schedule_type *const rmi_schedule_type_binomial = &binomial_type;

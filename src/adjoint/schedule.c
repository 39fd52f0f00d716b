/*
 * schedule.c — dispatch from a remat_schedule_spec to the kind's vtable, the
 * queue of runs with the cursor that expands them for remat_schedule_next(),
 * and the cost entry points.
 */
#include <stdlib.h>

#include "adjoint/revolve.h"
#include "adjoint/schedule_impl.h"
#include "core/alloc.h"
#include "core/assert.h"
#include "core/error.h"

static const remat_schedule_type *kind_type(remat_schedule_kind kind)
{
    switch (kind) {
    case REMAT_SCHED_STORE_ALL: return rmi_schedule_type_store_all;
    case REMAT_SCHED_PER_STEP: return rmi_schedule_type_per_step;
    case REMAT_SCHED_PERIODIC: return rmi_schedule_type_periodic;
    case REMAT_SCHED_TWO_LEVEL: return rmi_schedule_type_two_level;
    case REMAT_SCHED_BINOMIAL: return rmi_schedule_type_binomial;
    case REMAT_SCHED_ONLINE: return rmi_schedule_type_online;
    case REMAT_SCHED_TWO_TIER: return rmi_schedule_type_two_tier;
    case REMAT_SCHED_KIND_COUNT: break;
    }
    return NULL;
}

/* Errors name the spec the way parse() would spell it. */
static remat_status check_spec(const remat_schedule_spec *spec)
{
    if (!spec)
        return rmi_error(REMAT_ERR_NULL, "schedule: spec is NULL");
    const remat_schedule_type *type = kind_type(spec->kind);
    if (!type)
        return rmi_error(REMAT_ERR_ARG, "schedule: kind %d is not a remat_schedule_kind",
                         (int)spec->kind);
    switch (spec->kind) {
    case REMAT_SCHED_PERIODIC:
        if (spec->period < 1)
            return rmi_error(REMAT_ERR_ARG, "periodic:%lld: period must be >= 1",
                             (long long)spec->period);
        break;
    case REMAT_SCHED_TWO_LEVEL:
        if (spec->period < 0)
            return rmi_error(REMAT_ERR_ARG,
                             "two-level:%lld: period must be >= 1 (or 0 for ceil(sqrt(n)))",
                             (long long)spec->period);
        break;
    case REMAT_SCHED_BINOMIAL:
    case REMAT_SCHED_ONLINE:
        if (spec->snapshots < 1)
            return rmi_error(REMAT_ERR_ARG, "%s:%lld: snapshots must be >= 1", type->name,
                             (long long)spec->snapshots);
        break;
    case REMAT_SCHED_TWO_TIER:
        if (spec->snapshots < 0 || spec->disk_snapshots < 0 || spec->snapshots + spec->disk_snapshots < 1)
            return rmi_error(REMAT_ERR_ARG, "two-tier:%lld:%lld: slots must be >= 0, at least 1 in all",
                             (long long)spec->snapshots, (long long)spec->disk_snapshots);
        if (!(spec->disk_write >= 0 && spec->disk_write < 1e300) || !(spec->disk_read >= 0 && spec->disk_read < 1e300))
            return rmi_error(REMAT_ERR_ARG, "two-tier:%lld:%lld:%g:%g: costs must be finite and >= 0",
                             (long long)spec->snapshots, (long long)spec->disk_snapshots, spec->disk_write,
                             spec->disk_read);
        break;
    default: break;
    }
    return REMAT_OK;
}

remat_status remat_schedule_new(const remat_schedule_spec *spec, int64_t length,
                                remat_schedule **out)
{
    if (!out)
        return rmi_error(REMAT_ERR_NULL, "remat_schedule_new: out is NULL");
    *out = NULL;
    remat_status st = check_spec(spec);
    if (st != REMAT_OK)
        return st;
    bool online = spec->kind == REMAT_SCHED_ONLINE;
    if (!online && length < 0)
        return rmi_error(REMAT_ERR_ARG, "schedule: length %lld is negative", (long long)length);
    remat_schedule *s = rmi_calloc(1, sizeof *s);
    if (!s)
        return rmi_error(REMAT_ERR_NOMEM, "schedule: out of memory");
    s->type = kind_type(spec->kind);
    s->spec = *spec;
    s->n = online ? -1 : length; /* ONLINE learns it from set_length() */
    st = s->type->init(s);
    if (st != REMAT_OK) {
        rmi_free(s);
        return st;
    }
    *out = s;
    return REMAT_OK;
}

void remat_schedule_free(remat_schedule *s)
{
    if (!s)
        return;
    if (s->type->free)
        s->type->free(s);
    rmi_free(s);
}

void remat_schedule_set_length(remat_schedule *s, int64_t length)
{
    REMAT_NULL_RETURN(s, );
    REMAT_ASSERT(length >= 0);
    if (s->type->set_length) {
        s->type->set_length(s, length);
        return;
    }
    REMAT_ASSERT(length == s->n); /* known-length kinds: a consistency check */
}

/* Fill the queue when it is empty; false when the schedule is done. */
static bool queue_ready(remat_schedule *s)
{
    while (s->qhead == s->qtail) {
        if (s->done)
            return false;
        s->qhead = s->qtail = 0;
        s->type->step(s);
    }
    return true;
}

static bool has_slot(remat_action_kind kind)
{
    return kind == REMAT_ACT_TAKESHOT || kind == REMAT_ACT_RESTORE || kind == REMAT_ACT_FREE;
}

/* Field by field, here and below: the source was just written field by field,
 * and a whole-struct copy reads it back with wider loads that cannot be
 * forwarded from those stores (a stall of a dozen cycles per action). */
static inline void copy_action(remat_action *to, const remat_action *from)
{
    to->kind = from->kind;
    to->step = from->step;
    to->slot = from->slot;
}

/* The current repetition of the cursor is over: shift to the next one. */
static inline void cursor_repeat(remat_sched_cursor *c)
{
    c->pos = 0;
    if (--c->left == 0)
        return;
    for (int i = 0; i < REMAT_RUN_MAX_PATTERN; i++) {
        c->act[i].step += c->dstep;
        c->act[i].slot += c->slot_inc[i];
    }
}

/* next() with nothing left in the cursor: a run of one action (all that
 * binomial and online emit) goes straight out; a longer one is loaded into
 * the cursor. Kept out of line so that the fast path needs no stack frame. */
__attribute__((noinline)) static void next_slow(remat_schedule *s, remat_action *a)
{
    if (!queue_ready(s)) {
        a->kind = REMAT_ACT_DONE;
        a->step = s->n;
        a->slot = -1;
        return;
    }
    const remat_action_run *run = &s->queue[s->qhead++];
    if (run->n == 1 && run->count == 1) {
        copy_action(a, &run->pat[0]);
        return;
    }
    remat_sched_cursor *c = &s->cur;
    for (int i = 0; i < REMAT_RUN_MAX_PATTERN; i++) { /* unused entries: zero, shifted harmlessly */
        if (i < run->n)
            copy_action(&c->act[i], &run->pat[i]);
        else
            c->act[i] = (remat_action){0};
        c->slot_inc[i] = i < run->n && has_slot(run->pat[i].kind) ? run->dslot : 0;
    }
    c->n = run->n;
    c->left = run->count;
    c->dstep = run->dstep;
    c->dslot = run->dslot;
    copy_action(a, &c->act[0]);
    c->pos = 1;
    if (c->n == 1)
        cursor_repeat(c);
}

/* The hot path: inside a run, one copy and one compare per action. No NULL
 * checks (s and a are dereferenced at once anyway). */
/* What a NULL schedule answers: the end (DONE, step 0, no slot). */
static const remat_action null_done = {.kind = REMAT_ACT_DONE, .step = 0, .slot = -1};

void remat_schedule_next(remat_schedule *s, remat_action *a)
{
    REMAT_NULL_RETURN(a, );
    if (!s)
        *a = null_done;
    REMAT_NULL_RETURN(s, );
    remat_sched_cursor *c = &s->cur;
    if (c->left == 0) {
        next_slow(s, a);
        return;
    }
    copy_action(a, &c->act[c->pos]);
    if (++c->pos == c->n)
        cursor_repeat(c);
}

void remat_schedule_next_run(remat_schedule *s, remat_action_run *r)
{
    REMAT_NULL_RETURN(r, );
    if (!s)
        *r = (remat_action_run){.n = 1, .pat = {null_done}, .count = 1};
    REMAT_NULL_RETURN(s, );
    remat_sched_cursor *c = &s->cur;
    if (c->left == 0) {
        if (queue_ready(s)) { /* pat[n..] are unused: left as they are */
            const remat_action_run *q = &s->queue[s->qhead++];
            r->n = q->n;
            for (int i = 0; i < q->n; i++)
                copy_action(&r->pat[i], &q->pat[i]);
            r->count = q->count;
            r->dstep = q->dstep;
            r->dslot = q->dslot;
        } else
            *r = (remat_action_run){
                .n = 1, .pat = {rmi_sched_action(REMAT_ACT_DONE, s->n, -1)}, .count = 1};
        return;
    }
    /* next() has taken part of a run: hand out what the cursor holds. */
    *r = (remat_action_run){.n = c->n - c->pos, .count = 1};
    for (int i = 0; i < r->n; i++)
        copy_action(&r->pat[i], &c->act[c->pos + i]);
    if (c->pos > 0) { /* the rest of the current repetition */
        cursor_repeat(c);
        return;
    }
    r->count = c->left;
    r->dstep = c->dstep;
    r->dslot = c->dslot;
    c->left = 0;
}

int64_t remat_schedule_max_slots(const remat_schedule *s)
{
    REMAT_NULL_RETURN(s, -1);
    return s->max_slots;
}

remat_status remat_schedule_predict(const remat_schedule_spec *spec, int64_t length,
                                    remat_schedule_cost *cost)
{
    remat_status st = check_spec(spec);
    if (st != REMAT_OK)
        return st;
    if (!cost)
        return rmi_error(REMAT_ERR_NULL, "remat_schedule_predict: cost is NULL");
    if (length < 0)
        return rmi_error(REMAT_ERR_ARG, "schedule: length %lld is negative", (long long)length);
    *cost = (remat_schedule_cost){0};
    return kind_type(spec->kind)->predict(spec, length, cost);
}

int64_t remat_binomial_optimum(int64_t length, int64_t snapshots)
{
    if (length <= 0)
        return 0;
    if (length >= 2 && snapshots < 1)
        return -1; /* nothing can bring back a carry without a snapshot */
    int64_t s = snapshots < length - 1 ? snapshots : length - 1;
    int64_t f = rmi_revolve_advances(length, s);
    return f > INT64_MAX - length ? INT64_MAX : length + f;
}

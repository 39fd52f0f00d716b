/*
 * schedule.c — dispatch from a remat_schedule_spec to the kind's vtable, the
 * action queue, and the cost entry points.
 */
#include <stdlib.h>

#include "adjoint/revolve.h"
#include "adjoint/schedule_impl.h"
#include "core/assert.h"
#include "core/error.h"

static const remat_schedule_type *kind_type(remat_schedule_kind kind)
{
    switch (kind) {
    case REMAT_SCHED_STORE_ALL: return remat_schedule_type_store_all;
    case REMAT_SCHED_PER_STEP: return remat_schedule_type_per_step;
    case REMAT_SCHED_PERIODIC: return remat_schedule_type_periodic;
    case REMAT_SCHED_TWO_LEVEL: return remat_schedule_type_two_level;
    case REMAT_SCHED_BINOMIAL: return remat_schedule_type_binomial;
    case REMAT_SCHED_ONLINE: return remat_schedule_type_online;
    case REMAT_SCHED_KIND_COUNT: break;
    }
    return NULL;
}

/* Errors name the spec the way parse() would spell it. */
static remat_status check_spec(const remat_schedule_spec *spec)
{
    if (!spec)
        return remat_error(REMAT_ERR_NULL, "schedule: spec is NULL");
    const remat_schedule_type *type = kind_type(spec->kind);
    if (!type)
        return remat_error(REMAT_ERR_ARG, "schedule: kind %d is not a remat_schedule_kind",
                           (int)spec->kind);
    switch (spec->kind) {
    case REMAT_SCHED_PERIODIC:
        if (spec->period < 1)
            return remat_error(REMAT_ERR_ARG, "periodic:%lld: period must be >= 1",
                               (long long)spec->period);
        break;
    case REMAT_SCHED_TWO_LEVEL:
        if (spec->period < 0)
            return remat_error(REMAT_ERR_ARG,
                               "two-level:%lld: period must be >= 1 (or 0 for ceil(sqrt(n)))",
                               (long long)spec->period);
        break;
    case REMAT_SCHED_BINOMIAL:
    case REMAT_SCHED_ONLINE:
        if (spec->snapshots < 1)
            return remat_error(REMAT_ERR_ARG, "%s:%lld: snapshots must be >= 1", type->name,
                               (long long)spec->snapshots);
        break;
    default: break;
    }
    return REMAT_OK;
}

void remat_sched_emit(remat_schedule *s, remat_action_kind kind, int64_t step, int slot)
{
    REMAT_ASSERT(s->qlen < REMAT_SCHED_QUEUE_CAP);
    int at = (s->qhead + s->qlen) % REMAT_SCHED_QUEUE_CAP;
    s->queue[at] = (remat_action){.kind = kind, .step = step, .slot = slot};
    s->qlen++;
}

remat_status remat_schedule_new(const remat_schedule_spec *spec, int64_t length,
                                remat_schedule **out)
{
    if (!out)
        return remat_error(REMAT_ERR_NULL, "remat_schedule_new: out is NULL");
    *out = NULL;
    remat_status st = check_spec(spec);
    if (st != REMAT_OK)
        return st;
    bool online = spec->kind == REMAT_SCHED_ONLINE;
    if (!online && length < 0)
        return remat_error(REMAT_ERR_ARG, "schedule: length %lld is negative", (long long)length);
    remat_schedule *s = calloc(1, sizeof *s);
    if (!s)
        return remat_error(REMAT_ERR_NOMEM, "schedule: out of memory");
    s->type = kind_type(spec->kind);
    s->spec = *spec;
    s->n = online ? -1 : length; /* ONLINE learns it from set_length() */
    st = s->type->init(s);
    if (st != REMAT_OK) {
        free(s);
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
    free(s);
}

void remat_schedule_set_length(remat_schedule *s, int64_t length)
{
    REMAT_ASSERT(s && length >= 0);
    if (s->type->set_length) {
        s->type->set_length(s, length);
        return;
    }
    REMAT_ASSERT(length == s->n); /* known-length kinds: a consistency check */
}

void remat_schedule_next(remat_schedule *s, remat_action *a)
{
    REMAT_ASSERT(s && a);
    while (s->qlen == 0 && !s->done)
        s->type->step(s);
    if (s->qlen == 0) {
        *a = (remat_action){.kind = REMAT_ACT_DONE, .step = s->n, .slot = -1};
        return;
    }
    *a = s->queue[s->qhead];
    s->qhead = (s->qhead + 1) % REMAT_SCHED_QUEUE_CAP;
    s->qlen--;
}

int64_t remat_schedule_max_slots(const remat_schedule *s)
{
    REMAT_ASSERT(s);
    return s->max_slots;
}

remat_status remat_schedule_predict(const remat_schedule_spec *spec, int64_t length,
                                    remat_schedule_cost *cost)
{
    remat_status st = check_spec(spec);
    if (st != REMAT_OK)
        return st;
    if (!cost)
        return remat_error(REMAT_ERR_NULL, "remat_schedule_predict: cost is NULL");
    if (length < 0)
        return remat_error(REMAT_ERR_ARG, "schedule: length %lld is negative", (long long)length);
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
    int64_t f = remat_revolve_advances(length, s);
    return f > INT64_MAX - length ? INT64_MAX : length + f;
}

/*
 * schedule_impl.h (internal) — the schedule object and the per-kind vtable.
 *
 * GSL-style strategy objects: each kind is a `static const remat_schedule_type`
 * in its own file (sched_<kind>.c), exported as a `const remat_schedule_type *`
 * below. schedule.c owns the dispatch and the action queue; a kind's `step`
 * decides the next few actions and pushes them with remat_sched_emit(). Every
 * kind allocates all of its state in `init`, so remat_schedule_next() never
 * allocates.
 */
#ifndef REMAT_ADJOINT_SCHEDULE_IMPL_H
#define REMAT_ADJOINT_SCHEDULE_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include "remat/schedule.h"

/* The most actions one `step` call pushes (Revolve's first turn:
 * TAPE, END_FORWARD, REVERSE, FREE). */
#define REMAT_SCHED_QUEUE_CAP 4

typedef struct remat_schedule_type {
    const char *name; /* as parse() spells it, e.g. "binomial" */
    /* Allocate the kind's state; s->spec, s->n are set (s->n == -1 for ONLINE). */
    remat_status (*init)(remat_schedule *s);
    /* Push at least one action, or set s->done. Called only with an empty queue. */
    void (*step)(remat_schedule *s);
    /* ONLINE only (NULL elsewhere): the length has been revealed. */
    void (*set_length)(remat_schedule *s, int64_t length);
    void (*free)(remat_schedule *s);
    /* Cost for a valid spec and length >= 0. */
    remat_status (*predict)(const remat_schedule_spec *spec, int64_t length,
                            remat_schedule_cost *cost);
} remat_schedule_type;

struct remat_schedule {
    const remat_schedule_type *type;
    remat_schedule_spec spec;
    int64_t n;         /* number of steps; -1 while an ONLINE length is unknown */
    int64_t max_slots; /* reported by remat_schedule_max_slots() */
    bool done;
    int qhead, qlen;
    remat_action queue[REMAT_SCHED_QUEUE_CAP];
    void *state; /* the kind's own state, allocated in init */
};

/* Append one action to s's queue (asserts the queue has room). */
void remat_sched_emit(remat_schedule *s, remat_action_kind kind, int64_t step, int slot);

extern const remat_schedule_type *const remat_schedule_type_store_all;
extern const remat_schedule_type *const remat_schedule_type_per_step;
extern const remat_schedule_type *const remat_schedule_type_periodic;
extern const remat_schedule_type *const remat_schedule_type_two_level;
extern const remat_schedule_type *const remat_schedule_type_binomial;
extern const remat_schedule_type *const remat_schedule_type_online;

/* Periodic internals shared with two-level (sched_periodic.c). */
remat_status remat_sched_periodic_init_k(remat_schedule *s, int64_t period);
void remat_sched_periodic_step(remat_schedule *s);
void remat_sched_periodic_free(remat_schedule *s);
void remat_sched_periodic_cost(int64_t length, int64_t period, remat_schedule_cost *cost);
/* ceil(sqrt(n)), at least 1: the two-level default period. */
int64_t remat_sched_two_level_period(int64_t length);

#endif

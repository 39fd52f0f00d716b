/*
 * revolve.h (internal) — Griewank–Walther binomial checkpointing: the cost
 * formulas and a Revolve engine that reverses a range of steps with a given
 * number of snapshot slots.
 *
 * Counting convention (Griewank & Walther, ACM TOMS 26(1), 2000): `s` counts
 * every snapshot a range may hold, the one of its own first carry included.
 * beta(s, t) = C(s+t, t) is the most steps s snapshots reverse with each step
 * advanced at most t times; the repetition number of (l, s) is the t with
 * beta(s, t-1) < l <= beta(s, t); reversing l steps from a stored first carry
 * takes F(l, s) = t*l - beta(s+1, t-1) advances, plus one recording evaluation
 * per step.
 *
 * The engine splits a range of l >= 2 steps with s >= 1 snapshots at the
 * optimal first advance j (1 <= j < l): any j with
 * beta(s, t-2) <= j <= beta(s, t-1) and beta(s-1, t-1) <= l-j <= beta(s-1, t)
 * gives j + F(l-j, s-1) + F(j, s) = F(l, s) (both F are then linear in j, and
 * the Pascal rule sums them to F(l, s)); it takes the smallest such j, and
 * j = l-1 for s = 1 (no snapshot for the right part: its single step only).
 *
 * The engine is used by the binomial schedule (the whole scan is one range
 * whose first descent is the forward phase) and by the online schedule (one
 * range per gap between its stored snapshots, after the forward phase).
 */
#ifndef REMAT_ADJOINT_REVOLVE_H
#define REMAT_ADJOINT_REVOLVE_H

#include <stdbool.h>
#include <stdint.h>

#include "adjoint/schedule_impl.h"

/* beta(s, t) = C(s+t, t); 0 for t < 0; saturates at INT64_MAX. */
int64_t rmi_revolve_beta(int64_t s, int64_t t);
/* The repetition number t of l >= 1 steps with s >= 1 snapshots. */
int64_t rmi_revolve_reps(int64_t l, int64_t s);
/* F(l, s): advances Revolve needs to reverse l >= 0 steps whose first carry
 * is held, with s >= 1 snapshots (s = 0 allowed for l <= 1). Saturates. */
int64_t rmi_revolve_advances(int64_t l, int64_t s);

/* A range [a, b) to reverse (steps b-1 .. a), with s snapshots, its own
 * included; slot holds carry a, or is -1 when the runtime's current carry is a
 * (the snapshot is then taken only if the range needs to come back to a).
 * t is an upper bound on the repetition number of (b-a, s), 0 when unknown:
 * a split of a range with repetition number t leaves parts whose repetition
 * numbers are at most t (right part) and t-1 (left part), so a frame
 * inherits its parent's and the exact value is a step or two down from it. */
typedef struct {
    int64_t a, b, s, t;
    int slot;
} remat_revolve_frame;

typedef struct {
    remat_revolve_frame *frames; /* explicit stack instead of recursion */
    int64_t depth, cap;
    int *pool; /* free slot numbers, used LIFO */
    int64_t npool, pool_cap;
    int64_t c;          /* the runtime's current carry index, -1 if unknown */
    int64_t n;          /* length of the scan */
    bool forward_open;  /* binomial: the first descent is the forward phase */
    /* beta(s, t) for s < tab_s, t < tab_t (tab_t may grow up to tab_cols):
     * a split then reads a handful of table entries instead of computing
     * binomial coefficients. Entries outside are computed. */
    int64_t *tab;
    int64_t tab_s, tab_t, tab_cols;
} remat_revolve_engine;

/* Allocate room for `frames` frames and `slots` slot numbers (pool empty),
 * and a beta table of slots+1 rows and up to `tab_cols` columns (fewer when
 * that would be large; 0: none). */
remat_status rmi_revolve_engine_init(remat_revolve_engine *e, int64_t frames, int64_t slots,
                                     int64_t tab_cols);
/* Fill the beta table for t <= t_max (as far as it was allocated). */
void rmi_revolve_engine_fill(remat_revolve_engine *e, int64_t t_max);
void rmi_revolve_engine_release(remat_revolve_engine *e);
void rmi_revolve_pool_put(remat_revolve_engine *e, int slot);
int rmi_revolve_pool_take(remat_revolve_engine *e);
/* t: the range's repetition number or a bound on it, 0 when unknown. */
void rmi_revolve_push(remat_revolve_engine *e, int64_t a, int64_t b, int64_t s, int64_t t,
                      int slot);
/* Emit the next actions of the top range into s's queue (at most
 * REMAT_SCHED_QUEUE_CAP runs); false when no range is left. Repetitive
 * stretches come out as runs (see revolve.c), whose expansion is the
 * action stream of the plain recursion. */
bool rmi_revolve_step(remat_revolve_engine *e, remat_schedule *s);

#endif

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
int64_t remat_revolve_beta(int64_t s, int64_t t);
/* The repetition number t of l >= 1 steps with s >= 1 snapshots. */
int64_t remat_revolve_reps(int64_t l, int64_t s);
/* F(l, s): advances Revolve needs to reverse l >= 0 steps whose first carry
 * is held, with s >= 1 snapshots (s = 0 allowed for l <= 1). Saturates. */
int64_t remat_revolve_advances(int64_t l, int64_t s);
/* The optimal first advance j (1 <= j < l) for l >= 2 steps, s >= 1 snapshots:
 * any j with beta(s, t-2) <= j <= beta(s, t-1) and
 * beta(s-1, t-1) <= l-j <= beta(s-1, t) gives j + F(l-j, s-1) + F(j, s) = F(l, s)
 * (both F are then linear in j, and the Pascal rule sums them to F(l, s)). */
int64_t remat_revolve_split(int64_t l, int64_t s);

/* A range [a, b) to reverse (steps b-1 .. a), with s snapshots, its own
 * included; slot holds carry a, or is -1 when the runtime's current carry is a
 * (the snapshot is then taken only if the range needs to come back to a). */
typedef struct {
    int64_t a, b, s;
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
} remat_revolve_engine;

/* Allocate room for `frames` frames and `slots` slot numbers (pool empty). */
remat_status remat_revolve_engine_init(remat_revolve_engine *e, int64_t frames, int64_t slots);
void remat_revolve_engine_release(remat_revolve_engine *e);
void remat_revolve_pool_put(remat_revolve_engine *e, int slot);
int remat_revolve_pool_take(remat_revolve_engine *e);
void remat_revolve_push(remat_revolve_engine *e, int64_t a, int64_t b, int64_t s, int slot);
/* Emit the next actions of the top range into s's queue; false when no range
 * is left. */
bool remat_revolve_step(remat_revolve_engine *e, remat_schedule *s);

#endif

/*
 * ensemble_hand.h — a hand-written forward-sensitivity loop for an ensemble
 * of A->B->C plug-flow reactors, the reference bench_ensemble holds
 * `remat_pfr_ensemble` against. Plain C, no remat.
 *
 *   y' = f(y) = [-k1 A, k1 A - k2 B, k2 B]
 *   s_j' = f_y s_j + df/dk_j,  s_j = dy/dk_j, j = 1, 2
 *
 * Explicit Euler on y and on both s_j together (the discrete forward
 * sensitivities, what forward mode through Euler computes), m reactors as
 * lanes in structure-of-arrays form, the step loop outside and the lane loop
 * inside, so each step is a vectorised pass over the lanes in cache.
 */
#ifndef BENCH_ENSEMBLE_HAND_H
#define BENCH_ENSEMBLE_HAND_H

#include <stdint.h>

/* k1, k2: (m,); out: (m, 3) outlet; jac: (m, 3, 2) d outlet / d (k1, k2).
 * work: 9 m doubles. */
void ensemble_hand_euler(int64_t m, int64_t steps, double h, const double y0[3], const double *k1, const double *k2,
                         double *out, double *jac, double *work);

#endif

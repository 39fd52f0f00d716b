/*
 * pfr_hand.h — hand-written store-all discrete adjoints of the A->B->C
 * plug-flow reactor, the references the benchmarks hold remat against
 * (bench_scan, bench_pfr). Plain C, no remat.
 *
 *   y' = f(y) = [-k1 A, k1 A - k2 B, k2 B],  gradient w.r.t. (k1, k2)
 *
 * Each forward pass keeps every state it needs (store-all), then one reverse
 * sweep carries lambda = dJ/dy back with f's Jacobians
 *   f_y^T w = [k1 (w_B - w_A), k2 (w_C - w_B), 0]
 *   f_p^T w = [A (w_B - w_A), B (w_C - w_B)].
 *
 *   double y[3 * 1001], loss, g[2];
 *   pfr_hand_euler(1000, 0.01, (double[]){1, 0, 0}, 1.0, 0.5, y, &loss, g);
 *   // loss = -B(10), g = d loss / d (k1, k2)
 */
#ifndef BENCH_PFR_HAND_H
#define BENCH_PFR_HAND_H

#include <stddef.h>
#include <stdint.h>

/* Explicit Euler, loss -B(steps h). y: (steps+1, 3), every state. The
 * forward forms y + f(y) h in the order remat's Euler step does. */
void pfr_hand_euler(int64_t steps, double h, const double y0[3], double k1, double k2, double *y, double *loss,
                    double g[2]);

/* m independent reactors, structure of arrays: each species one row of m per
 * step, so the inner loops over the batch vectorise. loss = -sum_j B_j(L). */
typedef struct {
    int64_t steps, m;
    double h;
    const double *k1, *k2;             /* (m,) */
    double *a, *b, *c;                 /* (steps+1, m) each: every state; row 0 the inlet */
    double *la, *lb, *lc, *g1, *g2;    /* (m,) */
    double loss;
} pfr_hand_soa;

void pfr_hand_euler_soa(pfr_hand_soa *P);

/* The same, lane block by lane block: the forward and the reverse sweep of
 * `block` lanes run back to back, their states in ba/bb/bc ((steps+1, block)
 * each), so that one block's states stay in cache. The inlet is row 0 of
 * P->a/b/c; loss, la..g2 as pfr_hand_euler_soa (the loss summed in lane
 * order, so the bits are the same). */
void pfr_hand_euler_soa_blocked(pfr_hand_soa *P, int64_t block, double *ba, double *bb, double *bc);

/* ---- any explicit Runge–Kutta tableau, with observations ----
 *
 * Stages as diffrax (and remat/ode.h) form them: k_i = h f(y + sum_j a_ij k_j),
 * y' = y + sum_i b_i k_i. The integration runs through n_int intervals, the
 * k-th of steps[k] equal steps h[k], and the state at the end of each
 * interval is an output (a data time, the outlet). The loss is
 *   data == NULL: -B at the last output (the seed objective)
 *   else:         sum over outputs k and species s of (y_s(t_k) - data[3k+s])^2
 * and its reverse sweep adds dloss/dy(t_k) to lambda at each output, so the
 * data are jumps of the adjoint. */
typedef enum { PFR_HAND_EULER = 0, PFR_HAND_RK4, PFR_HAND_TSIT5, PFR_HAND_METHOD_COUNT } pfr_hand_method;

typedef struct {
    pfr_hand_method method;
    int n_int;
    const int64_t *steps; /* [n_int] */
    const double *h;      /* [n_int] */
    const double *data;   /* NULL or [n_int][3] */
    double *work;         /* pfr_hand_rk_work_doubles() doubles: stage states of every step */
} pfr_hand_rk_problem;

size_t pfr_hand_rk_work_doubles(const pfr_hand_rk_problem *p);
/* Returns the loss, writes its gradient to g. */
double pfr_hand_rk(const pfr_hand_rk_problem *p, const double y0[3], double k1, double k2, double g[2]);

#endif

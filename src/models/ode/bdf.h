/*
 * bdf.h (internal; src/models/ode and tests only) — a variable-order
 * (1..5), variable-step BDF integrator in plain C over callbacks: no graph.
 * bdf.c has the method and its sources; bdf_mech.c runs a mechanism with it.
 */
#ifndef REMAT_MODELS_ODE_BDF_H
#define REMAT_MODELS_ODE_BDF_H

#include <stdint.h>

#include "remat/ode.h"

#define RMI_BDF_MAX_ORDER 5

/* The system y' = f(t, y), y of n numbers. rhs writes f(t, y) into f and
 * returns 0 (nonzero: f could not be evaluated there, taken as a Newton
 * failure); jac writes J = df/dy at (t, y), row-major (J[i n + j] =
 * df_i/dy_j), and returns 0 (nonzero: the step fails as with rhs). */
typedef struct {
    int n;
    int (*rhs)(void *ctx, double t, const double *y, double *f);
    int (*jac)(void *ctx, double t, const double *y, double *J);
    void *ctx;
} rmi_bdf_problem;

typedef struct {
    double rtol, atol;  /* rtol > 0, atol >= 0: weights rtol |y_i| + atol */
    int64_t max_steps;  /* attempts (accepted, error-test and Newton failures); 0: 4096 */
    double h0;          /* first step; 0: Hairer's selection */
    int max_order;      /* 1..5; 0: 5 */
} rmi_bdf_options;

/* Integrates from y0 at t0 and writes y at times[0..K-1] (increasing, >=
 * t0) into ys (K, n), each row from the interpolating polynomial of the
 * step that covers its time (a time equal to t0 is y0). Stops at the last
 * time or on failure: then stats->code is REMAT_ODE_BDF_MAX_STEPS or
 * REMAT_ODE_BDF_COLLAPSED, stats->t the time reached, and the rows not
 * reached are NaN. REMAT_OK unless the arguments are bad or memory runs
 * out (those return the error; a failed integration is REMAT_OK with its
 * code). */
remat_status rmi_bdf_solve(const rmi_bdf_problem *p, const rmi_bdf_options *o, double t0, const double *y0,
                           int K, const double *times, double *ys, remat_ode_bdf_stats *stats);

#endif

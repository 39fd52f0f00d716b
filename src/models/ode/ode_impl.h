/*
 * ode_impl.h (internal) — one-step methods as tableaus.
 *
 * One static const tableau per method, each in its own file (euler.c, rk4.c,
 * tsit5.c, rodas5.c), read by one generic stage emitter per family: explicit
 * Runge–Kutta (step.c) and Rosenbrock (rosenbrock.c). Adding a method is
 * adding a table.
 */
#ifndef REMAT_MODELS_ODE_IMPL_H
#define REMAT_MODELS_ODE_IMPL_H

#include "remat/ode.h"

#define ODE_MAX_STAGES 8

/* A Rosenbrock method in the W-transformed form (Hairer & Wanner II, IV.7,
 * (4.7')): with W = I/(h gamma) - J, J = df/dy at (t, y),
 *   u_i = y + sum_{j<i} a_ij k_j,
 *   W k_i = f(t + c_i h, u_i) + h d_i df/dt + (1/h) sum_{j<i} C_ij k_j,
 *   y' = y + sum_i b_i k_i,   error estimate sum_i e_i k_i. */
typedef struct {
    double gamma;
    const double *a; /* strictly lower triangle by rows, as ode_tableau's */
    const double *C; /* strictly lower triangle by rows */
    const double *c; /* [stages] */
    const double *d; /* [stages] */
    const double *b; /* [stages] */
    const double *e; /* [stages] embedded error weights */
} ode_rosenbrock;

typedef struct {
    const char *name;
    int order;
    int stages;      /* right-hand side evaluations per step */
    const double *c; /* [stages], c[0] = 0 */
    const double *a; /* strictly lower triangle by rows: a_ij (j < i) at a[i*(i-1)/2 + j] */
    const double *b; /* [stages] solution weights */
    const ode_rosenbrock *ros; /* non-NULL: a Rosenbrock method (stages solve with W) */
} ode_tableau;

extern const ode_tableau remat_ode_euler_tableau;
extern const ode_tableau remat_ode_rk4_tableau;
extern const ode_tableau remat_ode_tsit5_tableau;
extern const ode_tableau remat_ode_rodas5_tableau;

/* NULL out of range. */
const ode_tableau *remat_ode_tableau(remat_ode_method method);

/* Emits one Rosenbrock step of tb (tb->ros != NULL) into f, arguments as
 * remat_ode_step's; *err (may be NULL) gets the embedded error estimate
 * sum_i e_i k_i, shaped like y. */
remat_status remat_ode_rosenbrock_step(remat_fn *f, const remat_mechanism *m, const ode_tableau *tb, remat_val t,
                                       remat_val h, remat_val y, remat_val params, remat_val *y_next,
                                       remat_val *err);

#endif

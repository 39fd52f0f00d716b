/*
 * ode_impl.h (internal) — explicit Runge–Kutta methods as Butcher tableaus.
 *
 * One static const tableau per method, each in its own file (euler.c, rk4.c,
 * tsit5.c), read by one generic stage emitter (step.c): adding a method is
 * adding a table.
 */
#ifndef REMAT_MODELS_ODE_IMPL_H
#define REMAT_MODELS_ODE_IMPL_H

#include "remat/ode.h"

#define ODE_MAX_STAGES 8

typedef struct {
    const char *name;
    int order;
    int stages;      /* right-hand side evaluations per step */
    const double *c; /* [stages], c[0] = 0 */
    const double *a; /* strictly lower triangle by rows: a_ij (j < i) at a[i*(i-1)/2 + j] */
    const double *b; /* [stages] solution weights */
} ode_tableau;

extern const ode_tableau remat_ode_euler_tableau;
extern const ode_tableau remat_ode_rk4_tableau;
extern const ode_tableau remat_ode_tsit5_tableau;

/* NULL out of range. */
const ode_tableau *remat_ode_tableau(remat_ode_method method);

#endif

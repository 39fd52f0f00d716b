/*
 * objective.h (internal) — the objective interface the optimizers see: a
 * weighted least-squares objective F(p) = sum_k r_k(p)^2 over N residuals in
 * P natural parameters, behind a small vtable. The fit's problem implements
 * it (spread.c: the experiments, evaluated alone or spread over ranks); the
 * tests implement it with fakes (tests/test_fit_optimizers_fake.c). Nothing
 * here knows of ODEs, programs or ranks.
 *
 * Layer 1 of fit/'s chain (docs/DESIGN.md, "fit/ as a chain"): includes no
 * other fit/ header.
 */
#ifndef REMAT_MODELS_FIT_OBJECTIVE_H
#define REMAT_MODELS_FIT_OBJECTIVE_H

#include <stdint.h>

#include "remat/status.h"

typedef struct {
    /* F(p) and, when r is non-NULL, the N residuals r(p). */
    remat_status (*residuals)(void *self, const double *p, double *F, double *r);
    /* F(p) and dF/dp (P). */
    remat_status (*gradient)(void *self, const double *p, double *F, double *grad);
    /* J = dr/dp, N x P row-major. Columns of parameters the caller keeps
     * fixed may be left as they were. */
    remat_status (*jacobian)(void *self, const double *p, double *J);
    /* A step every evaluator of the objective takes together (a driver's
     * memory before its first evaluation): the status every one agrees on.
     * NULL: alone, local is the answer. */
    remat_status (*agree)(void *self, remat_status local);
    /* Why F or its derivative is not finite at p, when the objective knows
     * (a rate that cannot be computed, an integration that gave up); NULL
     * (the op or its answer): no reason known. */
    const char *(*explain)(void *self, const double *p);
} fit_objective_ops;

typedef struct {
    const fit_objective_ops *ops;
    void *self;
    int P;         /* parameters */
    int64_t n_res; /* residuals N */
} fit_objective;

static inline remat_status fit_obj_residuals(const fit_objective *o, const double *p, double *F, double *r)
{
    return o->ops->residuals(o->self, p, F, r);
}

static inline remat_status fit_obj_gradient(const fit_objective *o, const double *p, double *F, double *grad)
{
    return o->ops->gradient(o->self, p, F, grad);
}

static inline remat_status fit_obj_jacobian(const fit_objective *o, const double *p, double *J)
{
    return o->ops->jacobian(o->self, p, J);
}

static inline remat_status fit_obj_agree(const fit_objective *o, remat_status local)
{
    return o->ops->agree ? o->ops->agree(o->self, local) : local;
}

static inline const char *fit_obj_explain(const fit_objective *o, const double *p)
{
    return o->ops->explain ? o->ops->explain(o->self, p) : NULL;
}

#endif

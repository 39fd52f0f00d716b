/*
 * remat/optim.h — first-order optimisers on a plain double vector.
 *
 * Adam with optax.adam's exact semantics (Kingma & Ba 2015, as optax writes
 * it), so a fit driven by remat follows the trajectory a JAX script takes:
 *
 *   mu     = (1 - b1) g   + b1 mu           nu = (1 - b2) g^2 + b2 nu
 *   t      = t + 1
 *   mu_hat = mu / (1 - b1^t)                nu_hat = nu / (1 - b2^t)
 *   params = params + (-lr) * mu_hat / (sqrt(nu_hat + eps_root) + eps)
 *
 * then, when bounds are given, params = min(max(params, lo), hi) — the
 * projection a script writes as jnp.maximum(params, lo) after
 * optax.apply_updates. The gradients are read, not kept: the caller owns and
 * overwrites them each step.
 *
 *   remat_adam_options o = remat_adam_optax(0.1);
 *   o.lo = (double[]){0.01, 0.01};
 *   remat_adam *adam;
 *   remat_adam_new(2, &o, &adam);
 *   for (int i = 0; i < 50; i++) {
 *       loss_and_grad(params, grads);          // e.g. a compiled remat_value_and_grad
 *       remat_adam_update(adam, params, grads);
 *   }
 *   remat_adam_free(adam);
 */
#ifndef REMAT_OPTIM_H
#define REMAT_OPTIM_H

#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    double lr;        /* learning rate, > 0 */
    double b1, b2;    /* moment decay rates, in [0, 1) */
    double eps;       /* added to sqrt(nu_hat), >= 0 */
    double eps_root;  /* added to nu_hat under the root, >= 0 (optax default 0) */
    const double *lo; /* NULL, or n lower bounds (-INFINITY: none); copied by _new */
    const double *hi; /* NULL, or n upper bounds (+INFINITY: none); copied by _new */
} remat_adam_options;

/* optax.adam(lr) defaults: b1 0.9, b2 0.999, eps 1e-8, eps_root 0, no bounds. */
remat_adam_options remat_adam_optax(double lr);

typedef struct remat_adam remat_adam;

/* An optimiser for n parameters with zero moments and step count 0.
 * Rejects bad options (naming them) and bounds with lo > hi. */
remat_status remat_adam_new(int64_t n, const remat_adam_options *opt, remat_adam **out);
void remat_adam_free(remat_adam *a); /* NULL is a no-op */

/* One step: updates params (n) in place from grads (n) and projects them on
 * the bounds. A non-finite gradient returns REMAT_ERR_NUMERIC naming its
 * index, with params and the optimiser state untouched. */
remat_status remat_adam_update(remat_adam *a, double *params, const double *grads);

/* Steps taken (optax's count). */
int64_t remat_adam_count(const remat_adam *a);
/* Back to zero moments and count 0 (bounds kept). */
void remat_adam_reset(remat_adam *a);
/* The first and second moments (n each), read-only. */
const double *remat_adam_mu(const remat_adam *a);
const double *remat_adam_nu(const remat_adam *a);

#ifdef __cplusplus
}
#endif
#endif

/*
 * remat/optim.h — first-order optimisers on a plain double (or float) vector:
 * Adam and SGD with momentum, each following optax.
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

#include "export.h"

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
REMAT_API remat_adam_options remat_adam_optax(double lr);

typedef struct remat_adam remat_adam;

/* An optimiser for n parameters with zero moments and step count 0.
 * Rejects bad options (naming them) and bounds with lo > hi. */
REMAT_API remat_status remat_adam_new(int64_t n, const remat_adam_options *opt, remat_adam **out);
REMAT_API void remat_adam_free(remat_adam *a); /* NULL is a no-op */

/* One step: updates params (n) in place from grads (n) and projects them on
 * the bounds. A non-finite gradient returns REMAT_ERR_NUMERIC naming its
 * index, with params and the optimiser state untouched. */
REMAT_API remat_status remat_adam_update(remat_adam *a, double *params, const double *grads);

/* The same step on f32 parameters and gradients, in optax's f32 arithmetic
 * (a JAX script training f32 parameters, jax_enable_x64 off): the moments
 * are kept as f32 values (stored in the double mu and nu, exactly), every
 * operation is rounded to f32 in optax's order with no fused multiply-add,
 * the Python floats b1, b2, 1 - b1, 1 - b2, eps, eps_root and -lr enter as
 * f32 (their f32 rounding), and b^t is the f32 rounding of (f32 b)^t (XLA's
 * f32 pow may differ from it by an ulp, for a last-bit difference in the
 * step). Bounds are rounded to f32. Switching between the f64 and the f32
 * update on one optimiser is allowed: the f32 step rounds the moments. */
REMAT_API remat_status remat_adam_update_f32(remat_adam *a, float *params, const float *grads);

/* Sets the learning rate of the next steps (> 0 and finite), moments and
 * count kept: optax.inject_hyperparams, for a schedule or a reduce-on-plateau
 * the caller runs. REMAT_ERR_VALUE naming the rate otherwise. */
REMAT_API remat_status remat_adam_set_lr(remat_adam *a, double lr);

/* Steps taken (optax's count). The accessors answer a NULL state with
 * remat_last_error() set and 0 or NULL; reset does nothing. */
REMAT_API int64_t remat_adam_count(const remat_adam *a);
/* Back to zero moments and count 0 (bounds kept). */
REMAT_API void remat_adam_reset(remat_adam *a);
/* The first and second moments (n each), read-only. */
REMAT_API const double *remat_adam_mu(const remat_adam *a);
REMAT_API const double *remat_adam_nu(const remat_adam *a);

/* ---- SGD with momentum ----
 *
 * optax.sgd(learning_rate, momentum, nesterov): optax.trace followed by
 * scale_by_learning_rate,
 *
 *   trace  = g + momentum * trace
 *   update = nesterov ? g + momentum * trace : trace
 *   params = params + (-lr) * update
 *
 * and momentum 0 is optax's momentum=None (plain SGD, params + (-lr) * g,
 * no trace kept; nesterov has no effect).
 *
 *   remat_sgd_options o = remat_sgd_optax(0.1);
 *   o.momentum = 0.9;
 *   remat_sgd *sgd;
 *   remat_sgd_new(n, &o, &sgd);
 *   ... remat_sgd_update_f32(sgd, params, grads); ...
 *   remat_sgd_free(sgd);
 */
typedef struct {
    double lr;       /* learning rate, > 0 and finite */
    double momentum; /* trace decay in [0, 1); 0: plain SGD (optax momentum=None) */
    int nesterov;    /* 1: Nesterov momentum (optax nesterov=True) */
} remat_sgd_options;

/* optax.sgd(lr) defaults: momentum None (0 here), nesterov False. */
REMAT_API remat_sgd_options remat_sgd_optax(double lr);

typedef struct remat_sgd remat_sgd;

/* An optimiser for n parameters with a zero trace and step count 0.
 * Rejects bad options, naming them. */
REMAT_API remat_status remat_sgd_new(int64_t n, const remat_sgd_options *opt, remat_sgd **out);
REMAT_API void remat_sgd_free(remat_sgd *s); /* NULL is a no-op */

/* One step on params (n) from grads (n). A non-finite gradient returns
 * REMAT_ERR_NUMERIC naming its index, with params and the trace untouched. */
REMAT_API remat_status remat_sgd_update(remat_sgd *s, double *params, const double *grads);
/* The same in optax's f32 arithmetic (f32 parameters, jax_enable_x64 off):
 * the trace kept as f32 values (in the double trace, exactly), momentum and
 * -lr rounded to f32, every operation rounded to f32 in the order above, no
 * fused multiply-add. */
REMAT_API remat_status remat_sgd_update_f32(remat_sgd *s, float *params, const float *grads);

REMAT_API int64_t remat_sgd_count(const remat_sgd *s); /* steps taken */
REMAT_API void remat_sgd_reset(remat_sgd *s);          /* zero trace, count 0 */
/* The momentum trace (n), read-only; zeros when momentum is 0. */
REMAT_API const double *remat_sgd_trace(const remat_sgd *s);

#ifdef __cplusplus
}
#endif
#endif

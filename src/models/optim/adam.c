/*
 * adam.c — Adam (Kingma & Ba, ICLR 2015) in optax's formulation
 * (optax.scale_by_adam followed by scale_by_learning_rate): moments updated
 * as (1 - b) x + b m, bias correction by 1 - b^t with the incremented count,
 * update -lr * mu_hat / (sqrt(nu_hat + eps_root) + eps). Every expression
 * keeps optax's operand order so the iterates agree with a JAX run to the
 * last bits the libm pow allows.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "remat/optim.h"

struct remat_adam {
    int64_t n, count;
    remat_adam_options opt;
    double *mu, *nu, *lo, *hi; /* lo, hi: NULL when absent */
};

remat_adam_options remat_adam_optax(double lr)
{
    return (remat_adam_options){.lr = lr, .b1 = 0.9, .b2 = 0.999, .eps = 1e-8, .eps_root = 0.0};
}

void remat_adam_free(remat_adam *a)
{
    if (!a)
        return;
    rmi_free(a->mu);
    rmi_free(a->nu);
    rmi_free(a->lo);
    rmi_free(a->hi);
    rmi_free(a);
}

static double *copy_bounds(const double *src, int64_t n)
{
    double *d = rmi_malloc(sizeof *d * (size_t)(n ? n : 1));
    if (d && n)
        memcpy(d, src, sizeof *d * (size_t)n);
    return d;
}

remat_status remat_adam_new(int64_t n, const remat_adam_options *opt, remat_adam **out)
{
    if (!out)
        return rmi_error(REMAT_ERR_NULL, "adam: output pointer is NULL");
    *out = NULL;
    if (!opt)
        return rmi_error(REMAT_ERR_NULL, "adam: options are NULL");
    if (n < 0)
        return rmi_error(REMAT_ERR_VALUE, "adam: parameter count %lld is negative", (long long)n);
    if (!(opt->lr > 0 && isfinite(opt->lr)))
        return rmi_error(REMAT_ERR_VALUE, "adam: learning rate %g must be positive and finite", opt->lr);
    if (!(opt->b1 >= 0 && opt->b1 < 1) || !(opt->b2 >= 0 && opt->b2 < 1))
        return rmi_error(REMAT_ERR_VALUE, "adam: decay rates b1 = %g, b2 = %g must lie in [0, 1)", opt->b1,
                         opt->b2);
    if (!(opt->eps >= 0 && isfinite(opt->eps)) || !(opt->eps_root >= 0 && isfinite(opt->eps_root)))
        return rmi_error(REMAT_ERR_VALUE, "adam: eps = %g and eps_root = %g must be finite and >= 0", opt->eps,
                         opt->eps_root);
    if (opt->eps == 0 && opt->eps_root == 0)
        return rmi_error(REMAT_ERR_VALUE, "adam: eps and eps_root are both 0 (a zero gradient would divide 0 by 0)");
    for (int64_t i = 0; i < n; i++) {
        double lo = opt->lo ? opt->lo[i] : -INFINITY, hi = opt->hi ? opt->hi[i] : INFINITY;
        if (isnan(lo) || isnan(hi) || lo > hi)
            return rmi_error(REMAT_ERR_VALUE, "adam: parameter %lld: bounds [%g, %g] are empty or NaN",
                             (long long)i, lo, hi);
    }
    remat_adam *a = rmi_calloc(1, sizeof *a);
    if (!a)
        goto fail;
    a->n = n;
    a->opt = *opt;
    a->opt.lo = a->opt.hi = NULL; /* the copies below are used */
    size_t bytes = sizeof(double) * (size_t)(n ? n : 1);
    a->mu = rmi_calloc(1, bytes);
    a->nu = rmi_calloc(1, bytes);
    if (!a->mu || !a->nu)
        goto fail;
    if (opt->lo && !(a->lo = copy_bounds(opt->lo, n)))
        goto fail;
    if (opt->hi && !(a->hi = copy_bounds(opt->hi, n)))
        goto fail;
    *out = a;
    return REMAT_OK;
fail:
    remat_adam_free(a);
    return rmi_error(REMAT_ERR_NOMEM, "adam: out of memory for %lld parameters", (long long)n);
}

/* lax.max / lax.min: NaN propagates (jnp.maximum(nan, lo) is nan) */
static double max_nan(double x, double y) { return (x > y || x != x) ? x : y; }
static double min_nan(double x, double y) { return (x < y || x != x) ? x : y; }

remat_status remat_adam_update(remat_adam *a, double *params, const double *grads)
{
    if (!a || !params || !grads)
        return rmi_error(REMAT_ERR_NULL, "adam update: %s is NULL",
                         !a ? "the optimiser" : !params ? "params" : "grads");
    /* checked up front: a rejected step leaves params and state untouched */
    for (int64_t i = 0; i < a->n; i++)
        if (!isfinite(grads[i]))
            return rmi_error(REMAT_ERR_NUMERIC, "adam update: gradient %lld is %g", (long long)i, grads[i]);
    const remat_adam_options *o = &a->opt;
    int64_t t = a->count + 1;
    double bc1 = 1 - pow(o->b1, (double)t), bc2 = 1 - pow(o->b2, (double)t);
    for (int64_t i = 0; i < a->n; i++) {
        double g = grads[i];
        double mu = (1 - o->b1) * g + o->b1 * a->mu[i];
        double nu = (1 - o->b2) * (g * g) + o->b2 * a->nu[i];
        double mu_hat = mu / bc1, nu_hat = nu / bc2;
        double u = mu_hat / (sqrt(nu_hat + o->eps_root) + o->eps);
        double p = params[i] + -o->lr * u;
        if (a->lo)
            p = max_nan(p, a->lo[i]);
        if (a->hi)
            p = min_nan(p, a->hi[i]);
        a->mu[i] = mu;
        a->nu[i] = nu;
        params[i] = p;
    }
    a->count = t;
    return REMAT_OK;
}

static float max_nan_f(float x, float y) { return (x > y || x != x) ? x : y; }
static float min_nan_f(float x, float y) { return (x < y || x != x) ? x : y; }

/* optax on f32 parameters: the Python-float hyperparameters are weakly typed
 * and enter as their f32 rounding; 1 - b is formed in Python (double) first.
 * b^t: jnp.power(b, count) in f32; here the f32 rounding of the exact power
 * of the f32 base. No fused multiply-add (the build is ISO C11, where GCC
 * keeps contraction off). */
remat_status remat_adam_update_f32(remat_adam *a, float *params, const float *grads)
{
    if (!a || !params || !grads)
        return rmi_error(REMAT_ERR_NULL, "adam update_f32: %s is NULL",
                         !a ? "the optimiser" : !params ? "params" : "grads");
    for (int64_t i = 0; i < a->n; i++)
        if (!isfinite(grads[i]))
            return rmi_error(REMAT_ERR_NUMERIC, "adam update_f32: gradient %lld is %g", (long long)i,
                             (double)grads[i]);
    const remat_adam_options *o = &a->opt;
    int64_t t = a->count + 1;
    float b1 = (float)o->b1, b2 = (float)o->b2, c1 = (float)(1 - o->b1), c2 = (float)(1 - o->b2);
    float eps = (float)o->eps, eps_root = (float)o->eps_root, step = (float)-o->lr;
    float bc1 = 1.0f - (float)pow((double)b1, (double)t), bc2 = 1.0f - (float)pow((double)b2, (double)t);
    for (int64_t i = 0; i < a->n; i++) {
        float g = grads[i];
        float mu = c1 * g + b1 * (float)a->mu[i];
        float nu = c2 * (g * g) + b2 * (float)a->nu[i];
        float mu_hat = mu / bc1, nu_hat = nu / bc2;
        float u = mu_hat / (sqrtf(nu_hat + eps_root) + eps);
        float p = params[i] + step * u;
        if (a->lo)
            p = max_nan_f(p, (float)a->lo[i]);
        if (a->hi)
            p = min_nan_f(p, (float)a->hi[i]);
        a->mu[i] = mu;
        a->nu[i] = nu;
        params[i] = p;
    }
    a->count = t;
    return REMAT_OK;
}

remat_status remat_adam_set_lr(remat_adam *a, double lr)
{
    if (!a)
        return rmi_error(REMAT_ERR_NULL, "adam set_lr: the optimiser is NULL");
    if (!(lr > 0 && isfinite(lr)))
        return rmi_error(REMAT_ERR_VALUE, "adam set_lr: learning rate %g must be positive and finite", lr);
    a->opt.lr = lr;
    return REMAT_OK;
}

int64_t remat_adam_count(const remat_adam *a)
{
    REMAT_NULL_RETURN(a, 0);
    return a->count;
}


void remat_adam_reset(remat_adam *a)
{
    REMAT_NULL_RETURN(a, );
    a->count = 0;
    if (a->n) {
        memset(a->mu, 0, sizeof *a->mu * (size_t)a->n);
        memset(a->nu, 0, sizeof *a->nu * (size_t)a->n);
    }
}

const double *remat_adam_mu(const remat_adam *a)
{
    REMAT_NULL_RETURN(a, NULL);
    return a->mu;
}

const double *remat_adam_nu(const remat_adam *a)
{
    REMAT_NULL_RETURN(a, NULL);
    return a->nu;
}


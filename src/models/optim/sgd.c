/*
 * sgd.c — stochastic gradient descent with (Nesterov) momentum in optax's
 * formulation (optax.sgd = optax.trace then scale_by_learning_rate; Polyak
 * 1964, Sutskever et al. 2013 for the Nesterov form): the trace is
 * g + momentum * trace, the update is the trace, or g + momentum * trace
 * with Nesterov, scaled by -lr. Operand order as in optax, so a step agrees
 * with a JAX run bit for bit, in f64 as in f32.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "remat/optim.h"

struct remat_sgd {
    int64_t n, count;
    remat_sgd_options opt;
    double *trace; /* (n); the f32 step keeps f32 values in it */
};

remat_sgd_options remat_sgd_optax(double lr) { return (remat_sgd_options){.lr = lr}; }

void remat_sgd_free(remat_sgd *s)
{
    if (!s)
        return;
    rmi_free(s->trace);
    rmi_free(s);
}

remat_status remat_sgd_new(int64_t n, const remat_sgd_options *opt, remat_sgd **out)
{
    if (!out)
        return rmi_error(REMAT_ERR_NULL, "sgd: output pointer is NULL");
    *out = NULL;
    if (!opt)
        return rmi_error(REMAT_ERR_NULL, "sgd: options are NULL");
    if (n < 0)
        return rmi_error(REMAT_ERR_VALUE, "sgd: parameter count %lld is negative", (long long)n);
    if (!(opt->lr > 0 && isfinite(opt->lr)))
        return rmi_error(REMAT_ERR_VALUE, "sgd: learning rate %g must be positive and finite", opt->lr);
    if (!(opt->momentum >= 0 && opt->momentum < 1))
        return rmi_error(REMAT_ERR_VALUE, "sgd: momentum %g must lie in [0, 1) (0: none)", opt->momentum);
    remat_sgd *s = rmi_calloc(1, sizeof *s);
    if (!s || !(s->trace = rmi_calloc((size_t)(n ? n : 1), sizeof *s->trace))) {
        rmi_free(s);
        return rmi_error(REMAT_ERR_NOMEM, "sgd: out of memory for %lld parameters", (long long)n);
    }
    s->n = n;
    s->opt = *opt;
    *out = s;
    return REMAT_OK;
}

#define CHECK_UPDATE(what)                                                                                   \
    do {                                                                                                     \
        if (!s || !params || !grads)                                                                         \
            return rmi_error(REMAT_ERR_NULL, "sgd " what ": %s is NULL",                                     \
                             !s ? "the optimiser" : !params ? "params" : "grads");                           \
        for (int64_t i = 0; i < s->n; i++)                                                                   \
            if (!isfinite(grads[i]))                                                                         \
                return rmi_error(REMAT_ERR_NUMERIC, "sgd " what ": gradient %lld is %g", (long long)i,       \
                                 (double)grads[i]);                                                          \
    } while (0)

remat_status remat_sgd_update(remat_sgd *s, double *params, const double *grads)
{
    CHECK_UPDATE("update");
    double m = s->opt.momentum, step = -s->opt.lr;
    for (int64_t i = 0; i < s->n; i++) {
        double g = grads[i], u = g;
        if (m != 0) { /* momentum=None in optax: no trace at all */
            double tr = g + m * s->trace[i];
            u = s->opt.nesterov ? g + m * tr : tr;
            s->trace[i] = tr;
        }
        params[i] = params[i] + step * u;
    }
    s->count++;
    return REMAT_OK;
}

remat_status remat_sgd_update_f32(remat_sgd *s, float *params, const float *grads)
{
    CHECK_UPDATE("update_f32");
    /* weakly typed Python floats: their f32 rounding (no fused multiply-add:
     * the build is ISO C11, where GCC keeps contraction off) */
    float m = (float)s->opt.momentum, step = (float)-s->opt.lr;
    for (int64_t i = 0; i < s->n; i++) {
        float g = grads[i], u = g;
        if (s->opt.momentum != 0) {
            float tr = g + m * (float)s->trace[i];
            u = s->opt.nesterov ? g + m * tr : tr;
            s->trace[i] = tr;
        }
        params[i] = params[i] + step * u;
    }
    s->count++;
    return REMAT_OK;
}

int64_t remat_sgd_count(const remat_sgd *s)
{
    REMAT_NULL_RETURN(s, 0);
    return s->count;
}


void remat_sgd_reset(remat_sgd *s)
{
    REMAT_NULL_RETURN(s, );
    s->count = 0;
    memset(s->trace, 0, sizeof *s->trace * (size_t)(s->n ? s->n : 1));
}

const double *remat_sgd_trace(const remat_sgd *s)
{
    REMAT_NULL_RETURN(s, NULL);
    return s->trace;
}


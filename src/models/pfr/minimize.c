/*
 * minimize.c — bounded quasi-Newton on a reactor's objective
 * (remat_pfr_minimize): NLopt's L-BFGS with box constraints or SLSQP over the
 * free parameters, with a projected-gradient convergence test NLopt lacks.
 *
 * NLopt counts evaluations, not iterations; every evaluation is one run of
 * the objective's value-and-gradient program. The gradient test is made in
 * the objective callback: when it holds, NLopt is stopped there
 * (nlopt_force_stop) and the point it was called at is the answer. Otherwise
 * NLopt's best point is. A trial point whose integration fails is told a
 * value far above every finite one with a zero gradient (the fit's rule,
 * opt_nlopt.c), so the line search backs off.
 */
#include <math.h>
#include <nlopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "models/pfr/pfr_impl.h"

typedef struct {
    remat_pfr *r;
    const remat_pfr_minimize_options *o;
    nlopt_opt opt;
    int n, *idx;         /* free parameters: n of them, their indices */
    const double *lo, *hi;
    double *p, *g;       /* all parameters; the objective's gradient */
    double *best_p, best_f;
    double f0, reject;
    double gtol;
    int evals, rejected, max_evals;
    int maxed;           /* stopped at max_evals */
    int grad_met;        /* the gradient test held at best_p */
    double best_rel;     /* rel_grad at best_p */
    remat_status st;     /* the start's failure */
} mn_ctx;

/* Dennis & Schnabel's relative gradient of the projected gradient */
static double rel_grad(const mn_ctx *c, double f)
{
    double m = 0, den = fmax(fmax(fabs(f), fabs(c->f0)), 1e-300);
    for (int j = 0; j < c->n; j++) {
        int i = c->idx[j];
        double gi = c->g[i], pi = c->p[i];
        if ((pi <= c->lo[i] && gi > 0) || (pi >= c->hi[i] && gi < 0))
            continue; /* descent leaves the box */
        m = fmax(m, fabs(gi) * fmax(fabs(pi), 1.0) / den);
    }
    return m;
}

static double mn_f(unsigned n, const double *x, double *grad, void *vc)
{
    mn_ctx *c = vc;
    if (c->maxed || c->grad_met || c->st != REMAT_OK) { /* stopped: NLopt may call once more */
        nlopt_force_stop(c->opt);
        if (grad)
            memset(grad, 0, sizeof *grad * n);
        return c->best_f;
    }
    for (unsigned j = 0; j < n; j++)
        c->p[c->idx[j]] = x[j];
    double f;
    remat_status st = remat_pfr_objective(c->r, c->p, &f, c->g);
    int finite = st == REMAT_OK && isfinite(f);
    for (int i = 0; finite && i < c->r->P; i++)
        finite = isfinite(c->g[i]);
    int first = c->evals == 0;
    c->evals++;
    if (!finite) {
        if (first) {
            c->st = st != REMAT_OK ? st
                                  : rmi_error(REMAT_ERR_NUMERIC, "pfr minimize: the objective at the start is not finite");
            nlopt_force_stop(c->opt);
            return HUGE_VAL;
        }
        c->rejected++;
        if (grad)
            memset(grad, 0, sizeof *grad * n);
        return c->reject;
    }
    if (first) {
        c->f0 = f;
        c->reject = fabs(f) * 1e6 + 1e6;
    }
    for (unsigned j = 0; j < n; j++)
        if (grad)
            grad[j] = c->g[c->idx[j]];
    double rg = rel_grad(c, f);
    if (first || f < c->best_f) {
        c->best_f = f;
        c->best_rel = rg;
        memcpy(c->best_p, c->p, sizeof *c->p * (size_t)c->r->P);
    }
    if (c->evals >= c->max_evals) { /* NLopt's own count may run one past it */
        c->maxed = 1;
        nlopt_force_stop(c->opt);
    }
    if (c->o->progress)
        c->o->progress(&(remat_pfr_minimize_progress){.evaluation = c->evals - 1, .objective = f, .rel_grad = rg,
                                                      .params = c->p},
                       c->o->progress_ctx);
    if (rg <= c->gtol && f <= c->best_f) {
        c->grad_met = 1;
        nlopt_force_stop(c->opt);
    }
    return f;
}

static remat_status check(remat_pfr *r, const remat_pfr_minimize_options *o, const double *params,
                          const double *lo, const double *hi, int *n_free)
{
    if (r->opt.goal == REMAT_PFR_NO_GOAL)
        return rmi_error(REMAT_ERR_ARG, "pfr minimize: the reactor has no objective (goal)");
    if ((int)o->method < 0 || o->method >= REMAT_PFR_MINIMIZER_COUNT)
        return rmi_error(REMAT_ERR_ARG, "pfr minimize: unknown method %d", (int)o->method);
    if (o->max_evals < 0 || o->gtol < 0 || o->xtol < 0 || o->ftol < 0 || !isfinite(o->gtol) ||
        !isfinite(o->xtol) || !isfinite(o->ftol))
        return rmi_error(REMAT_ERR_VALUE, "pfr minimize: max_evals, gtol, xtol and ftol must be finite and >= 0");
    remat_status st = pfr_inputs(r, params); /* finite, named otherwise */
    if (st != REMAT_OK)
        return st;
    *n_free = 0;
    for (int i = 0; i < r->P; i++) {
        if (o->fixed && o->fixed[i])
            continue;
        ++*n_free;
        if (!(lo[i] <= params[i] && params[i] <= hi[i]))
            return rmi_error(REMAT_ERR_VALUE, "pfr minimize: parameter '%s' = %g lies outside its bounds [%g, %g]",
                             remat_mechanism_param_name(r->m, i), params[i], lo[i], hi[i]);
    }
    if (*n_free == 0)
        return rmi_error(REMAT_ERR_ARG, "pfr minimize: every parameter of %s is fixed: nothing to optimise",
                         remat_mechanism_source(r->m));
    return REMAT_OK;
}

static void finish(mn_ctx *c, nlopt_result res, remat_pfr_minimize_result *out)
{
    out->evaluations = c->evals;
    out->rejected = c->rejected;
    out->objective = c->best_f;
    out->rel_grad = c->best_rel;
    out->at_bound = 0;
    for (int j = 0; j < c->n; j++) {
        int i = c->idx[j];
        out->at_bound += c->best_p[i] <= c->lo[i] || c->best_p[i] >= c->hi[i];
    }
    const char *why = NULL;
    out->converged = true;
    if (c->grad_met)
        why = "projected gradient below gtol";
    else if (c->maxed) {
        out->converged = false;
        why = "max evaluations reached";
    } else if (res == NLOPT_XTOL_REACHED)
        why = "step below xtol";
    else if (res == NLOPT_FTOL_REACHED)
        why = "change of the objective below ftol";
    else if (res == NLOPT_SUCCESS || res == NLOPT_ROUNDOFF_LIMITED)
        why = res == NLOPT_SUCCESS ? "the method's own test (NLopt success)" : "NLopt roundoff limited";
    else {
        out->converged = false;
        why = res == NLOPT_MAXEVAL_REACHED ? "max evaluations reached" : nlopt_result_to_string(res);
        if (!why)
            why = "NLopt failed";
    }
    snprintf(out->message, sizeof out->message, "%s: %s after %d evaluations (relative gradient %.3g, gtol %.3g)",
             out->converged ? "converged" : "stopped", why, c->evals, c->best_rel, c->gtol);
}

remat_status remat_pfr_minimize(remat_pfr *r, const remat_pfr_minimize_options *o, double params[],
                                remat_pfr_minimize_result *result)
{
    if (!r || !o || !params || !result)
        return rmi_error(REMAT_ERR_NULL, "pfr minimize: %s is NULL",
                         !r ? "the reactor" : !o ? "the options" : !params ? "params" : "result");
    memset(result, 0, sizeof *result);
    int P = r->P, n = 0;
    mn_ctx c = {.r = r, .o = o, .best_f = HUGE_VAL};
    double *buf = rmi_calloc((size_t)(6 * P + 1), sizeof *buf);
    c.idx = rmi_calloc((size_t)P + 1, sizeof *c.idx);
    if (!buf || !c.idx) {
        rmi_free(buf);
        rmi_free(c.idx);
        return rmi_error(REMAT_ERR_NOMEM, "pfr: out of memory");
    }
    double *lo = buf, *hi = buf + P, *x = buf + 2 * P, *xlo = buf + 3 * P, *xhi = buf + 4 * P;
    c.p = buf + 5 * P;
    for (int i = 0; i < P; i++) {
        lo[i] = o->lo ? o->lo[i] : remat_mechanism_param_lo(r->m, i);
        hi[i] = o->hi ? o->hi[i] : remat_mechanism_param_hi(r->m, i);
    }
    c.lo = lo;
    c.hi = hi;
    remat_status st = check(r, o, params, lo, hi, &n);
    double *mem = st == REMAT_OK ? rmi_calloc((size_t)(2 * P), sizeof *mem) : NULL;
    if (st == REMAT_OK && !mem)
        st = rmi_error(REMAT_ERR_NOMEM, "pfr: out of memory");
    if (st != REMAT_OK) {
        rmi_free(buf);
        rmi_free(c.idx);
        return st;
    }
    c.g = mem;
    c.best_p = mem + P;
    c.n = n;
    c.gtol = o->gtol > 0 ? o->gtol : 1e-8;
    memcpy(c.p, params, sizeof *params * (size_t)P);
    for (int i = 0, j = 0; i < P; i++) {
        if (o->fixed && o->fixed[i])
            continue;
        c.idx[j] = i;
        x[j] = params[i];
        xlo[j] = lo[i];
        xhi[j] = hi[i];
        j++;
    }
    c.opt = nlopt_create(o->method == REMAT_PFR_SLSQP ? NLOPT_LD_SLSQP : NLOPT_LD_LBFGS, (unsigned)n);
    if (!c.opt) {
        rmi_free(buf);
        rmi_free(c.idx);
        rmi_free(mem);
        return rmi_error(REMAT_ERR_NOMEM, "pfr minimize: NLopt could not be created");
    }
    double xtol = o->xtol > 0 ? o->xtol : 1e-12;
    nlopt_set_min_objective(c.opt, mn_f, &c);
    nlopt_set_lower_bounds(c.opt, xlo);
    nlopt_set_upper_bounds(c.opt, xhi);
    nlopt_set_xtol_rel(c.opt, xtol);
    nlopt_set_xtol_abs1(c.opt, xtol);
    nlopt_set_ftol_rel(c.opt, o->ftol > 0 ? o->ftol : 1e-15);
    c.max_evals = o->max_evals > 0 ? o->max_evals : 500;
    nlopt_set_maxeval(c.opt, c.max_evals);
    double fbest = NAN;
    nlopt_result res = nlopt_optimize(c.opt, x, &fbest);
    st = c.st;
    if (st == REMAT_OK && c.evals == 0)
        st = rmi_error(REMAT_ERR_NUMERIC, "pfr minimize: NLopt stopped before the first evaluation (%s)",
                       nlopt_result_to_string(res));
    if (st == REMAT_OK) {
        finish(&c, res, result);
        memcpy(params, c.best_p, sizeof *params * (size_t)P);
    }
    nlopt_destroy(c.opt);
    rmi_free(buf);
    rmi_free(c.idx);
    rmi_free(mem);
    return st;
}

/*
 * opt_nlopt.c — bounded quasi-Newton through NLopt's NLOPT_LD_LBFGS
 * (Nocedal's L-BFGS with box constraints as NLopt implements it, from
 * Luksan's code), in x = theta with the bounds mapped into theta.
 *
 * NLopt does not report iterations, so every evaluation counts as one (the
 * history then holds every point tried, line-search trials included) and
 * max_iters bounds the evaluations. NLopt returns its best point, which
 * becomes the result.
 *
 * NLopt ends its run at the first NaN objective. A non-finite objective or
 * gradient after the first evaluation is a trial point past where the
 * integration holds: NLopt is told a value far above every finite one (and
 * a zero gradient), so its line search backs off; the point is not recorded.
 */
#include <math.h>
#include <nlopt.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "models/fit/optimize.h"

typedef struct {
    fit_run *run;
    nlopt_opt opt;
    int evals;
    double reject; /* set after the first evaluation */
    int rejected;
} nl_ctx;

static double nl_f(unsigned n, const double *x, double *grad, void *vc)
{
    nl_ctx *c = vc;
    fit_run *run = c->run;
    if (run->st != REMAT_OK || run->user_stop) {
        nlopt_force_stop(c->opt);
        return HUGE_VAL;
    }
    run->iter = c->evals++;
    double F;
    double *gx = grad ? grad : run->gp; /* without grad the chain rule may overwrite gp in place */
    int r = run->iter == 0 ? fit_eval_grad_x(run, x, &F, gx) : fit_eval_grad_x_trial(run, x, &F, gx);
    if (r == 0) {
        nlopt_force_stop(c->opt);
        return HUGE_VAL;
    }
    if (r < 0) {
        memset(gx, 0, sizeof *gx * n);
        c->rejected++;
        return c->reject;
    }
    if (run->iter == 0) {
        run->F0 = F;
        c->reject = fit_reject_value(F);
    }
    if (fit_record(run, F, fit_inf_norm((int)n, gx), run->p) != REMAT_OK || run->user_stop)
        nlopt_force_stop(c->opt);
    return F;
}

remat_status fit_opt_nlopt(fit_run *run)
{
    const fit_vars *v = run->vars;
    int n = run->n;
    nl_ctx c = {.run = run};
    double *x = rmi_calloc((size_t)n, sizeof *x);
    c.opt = nlopt_create(NLOPT_LD_LBFGS, (unsigned)n);
    if (fit_ready(run, x && c.opt ? REMAT_OK : rmi_error(REMAT_ERR_NOMEM, "out of memory")) != REMAT_OK) {
        rmi_free(x);
        if (c.opt)
            nlopt_destroy(c.opt);
        return run->st;
    }
    nlopt_set_min_objective(c.opt, nl_f, &c);
    nlopt_set_lower_bounds(c.opt, v->tlo);
    nlopt_set_upper_bounds(c.opt, v->thi);
    nlopt_set_xtol_rel(c.opt, run->xtol);
    nlopt_set_xtol_abs1(c.opt, run->xtol);
    nlopt_set_ftol_rel(c.opt, run->ftol);
    nlopt_set_maxeval(c.opt, run->max_iters);
    fit_x_start(v, x);
    double best = NAN;
    nlopt_result res = nlopt_optimize(c.opt, x, &best);
    if (run->st == REMAT_OK && !run->user_stop && c.evals > 0) {
        /* NLopt's answer is its best point, not the last one tried */
        fit_x_to_p(v, x, run->p);
        memcpy(run->res->params, run->p, sizeof *run->p * (size_t)run->obj->P);
        run->res->objective = best;
    }
    const char *why = nlopt_result_to_string(res);
    switch (res) {
    case NLOPT_SUCCESS:
    case NLOPT_STOPVAL_REACHED:
    case NLOPT_FTOL_REACHED:
    case NLOPT_XTOL_REACHED:
    case NLOPT_ROUNDOFF_LIMITED: /* at the minimum to working precision */
        fit_finish(run, 1, "converged: NLopt L-BFGS %s after %d evaluations (F = %.6g)", why, c.evals, best);
        break;
    case NLOPT_MAXEVAL_REACHED:
    case NLOPT_MAXTIME_REACHED:
        fit_finish(run, 0, "stopped: %d evaluations (max_iters) without convergence (F = %.6g)", c.evals, best);
        break;
    default:
        fit_finish(run, 0, "stopped: NLopt L-BFGS %s after %d evaluations (F = %.6g)", why ? why : "failed",
                   c.evals, best);
        break;
    }
    nlopt_destroy(c.opt);
    rmi_free(x);
    return run->st;
}

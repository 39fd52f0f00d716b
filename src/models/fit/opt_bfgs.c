/*
 * opt_bfgs.c — BFGS through GSL's gsl_multimin_fdfminimizer_vector_bfgs2
 * (Fletcher's line search with the strong Wolfe conditions, Fletcher,
 * "Practical Methods of Optimization", 1987), unbounded in x: theta, or
 * for a bounded parameter the MINUIT variable that maps into its box, as
 * for lm (vars.c).
 *
 * Every evaluation is one run of the value_and_grad program; GSL asks for f,
 * df and fdf separately at the same points, so the last point is cached.
 * Stopping: ||dF/dx||_inf <= gtol F(start); a relative decrease of F below
 * ftol together with a relative step below xtol; or GSL_ENOPROG (the line
 * search found no lower point), accepted as converged when the gradient has
 * already fallen by 1e-6 of its start.
 *
 * A trial point of the line search whose objective or gradient is not finite
 * (a step so long that the explicit integrator blows up) is told a value far
 * above every finite one, with a zero gradient: the search brackets the step
 * there and interpolates back towards the last good point, as it does after
 * any step that increases F. Only the start must be finite.
 */
#include <gsl/gsl_errno.h>
#include <gsl/gsl_multimin.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "models/fit/optimize.h"

typedef struct {
    fit_run *run;
    double *xc;  /* [n] cached point */
    double *gxc; /* [n] its gradient in x */
    double Fc;
    int valid;
    int started;   /* past the start point: non-finite trial points are rejected */
    double reject; /* the value a rejected point is told */
    int rejected;  /* how many */
} bfgs_ctx;

static void eval(bfgs_ctx *c, const gsl_vector *x)
{
    fit_run *run = c->run;
    int n = run->n;
    int same = c->valid;
    for (int j = 0; same && j < n; j++)
        same = gsl_vector_get(x, (size_t)j) == c->xc[j];
    if (same)
        return;
    for (int j = 0; j < n; j++)
        c->xc[j] = gsl_vector_get(x, (size_t)j);
    c->valid = 1;
    if (run->st != REMAT_OK) { /* stopped: let GSL's line search run out without work */
        c->Fc = NAN;
        return;
    }
    int r = c->started ? fit_eval_grad_x_trial(run, c->xc, &c->Fc, c->gxc)
                       : fit_eval_grad_x(run, c->xc, &c->Fc, c->gxc);
    if (r == 0) {
        c->Fc = NAN; /* run->st says why; the loop stops after this call */
    } else if (r < 0) {
        c->Fc = c->reject;
        memset(c->gxc, 0, sizeof *c->gxc * (size_t)run->n);
        c->rejected++;
    }
}

static double b_f(const gsl_vector *x, void *vc)
{
    bfgs_ctx *c = vc;
    eval(c, x);
    return c->Fc;
}

static void b_df(const gsl_vector *x, void *vc, gsl_vector *g)
{
    bfgs_ctx *c = vc;
    eval(c, x);
    for (int j = 0; j < c->run->n; j++)
        gsl_vector_set(g, (size_t)j, c->run->st == REMAT_OK ? c->gxc[j] : NAN);
}

static void b_fdf(const gsl_vector *x, void *vc, double *f, gsl_vector *g)
{
    *f = b_f(x, vc);
    b_df(x, vc, g);
}

remat_status fit_opt_bfgs(fit_run *run)
{
    int n = run->n;
    fit_gsl_quiet_begin();
    bfgs_ctx c = {.run = run};
    c.xc = rmi_calloc((size_t)n, sizeof *c.xc);
    c.gxc = rmi_calloc((size_t)n, sizeof *c.gxc);
    gsl_vector *x = gsl_vector_alloc((size_t)n);
    double *xprev = rmi_calloc((size_t)n, sizeof *xprev);
    gsl_multimin_fdfminimizer *s = gsl_multimin_fdfminimizer_alloc(gsl_multimin_fdfminimizer_vector_bfgs2, (size_t)n);
    if (fit_ready(run, c.xc && c.gxc && x && xprev && s ? REMAT_OK
                                                               : rmi_error(REMAT_ERR_NOMEM, "out of memory")) !=
        REMAT_OK)
        goto done;
    gsl_multimin_function_fdf fdf = {.f = b_f, .df = b_df, .fdf = b_fdf, .n = (size_t)n, .params = &c};
    fit_x_start(run->vars, x->data);
    run->iter = 0;
    /* first trial step 0.5 in theta: a factor e^0.5 on a log-scale constant */
    int status = gsl_multimin_fdfminimizer_set(s, &fdf, x, 0.5, 0.1);
    if (run->st != REMAT_OK)
        goto done;
    if (status) {
        fit_fail_gsl(run, status);
        goto done;
    }
    double F = s->f, gn = fit_inf_norm(n, s->gradient->data), gn0 = gn;
    c.started = 1;
    c.reject = fit_reject_value(F);
    if (fit_record_start(run, F, gn, s->x->data))
        goto done;
    for (int it = 1; !run->user_stop; it++) {
        if (!fit_iteration_begin(run, it, F))
            goto done;
        double Fprev = F;
        memcpy(xprev, s->x->data, sizeof *xprev * (size_t)n);
        status = gsl_multimin_fdfminimizer_iterate(s);
        if (run->st != REMAT_OK)
            goto done;
        if (status == GSL_ENOPROG) {
            int ok = gn <= 1e-6 * gn0;
            fit_finish(run, ok, "%s: the line search finds no lower point (F = %.6g, |grad| = %.3g)",
                       ok ? "converged" : "stopped", F, gn);
            goto done;
        }
        if (status) {
            fit_fail_gsl(run, status);
            goto done;
        }
        F = s->f;
        gn = fit_inf_norm(n, s->gradient->data);
        if (fit_record_x(run, F, gn, s->x->data) != REMAT_OK)
            goto done;
        double *dx = xprev; /* the step, in place of the point it started from */
        for (int j = 0; j < n; j++)
            dx[j] = s->x->data[j] - xprev[j];
        int small_step = fit_step_below_xtol(run, s->x->data, dx);
        int small_change = fabs(Fprev - F) <= run->ftol * fmax(F, 1e-300);
        if (F == 0 || gn <= run->gtol * run->F0 || (small_step && small_change)) {
            fit_finish(run, 1, "converged: %s after %d iterations (F = %.6g)",
                       F == 0 ? "exact fit" : gn <= run->gtol * run->F0 ? "gradient below gtol"
                                                                        : "step and change below xtol, ftol",
                       it, F);
            goto done;
        }
    }
    fit_finish(run, 0, "stopped");
done:
    fit_gsl_quiet_end();
    if (s)
        gsl_multimin_fdfminimizer_free(s);
    if (x)
        gsl_vector_free(x);
    rmi_free(xprev);
    rmi_free(c.xc);
    rmi_free(c.gxc);
    return run->st;
}

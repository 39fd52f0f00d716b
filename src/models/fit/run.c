/*
 * run.c — one run of an optimizer (optimize.h): the history, the stop
 * messages, and the steps every iterative driver takes the same way:
 * evaluating at x through the variable transforms, recording, the
 * iteration budget and GSL's step test.
 */
#include <gsl/gsl_errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/assert.h"
#include "core/error.h"
#include "models/fit/optimize.h"

double fit_inf_norm(int n, const double *v)
{
    double m = 0;
    for (int i = 0; i < n; i++) {
        if (isnan(v[i]))
            return NAN;
        m = fmax(m, fabs(v[i]));
    }
    return m;
}

static void format_params(const fit_run *run, const double *p, char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = 0;
    for (int i = 0; i < run->obj->P && o + 1 < len; i++) {
        int w = snprintf(buf + o, len - o, "%s%s=%.9g", i ? ", " : "", run->names[i], p[i]);
        if (w < 0)
            break;
        o += (size_t)w;
    }
}

int fit_check_finite(fit_run *run, const char *what, double F, int n, const double *g, const double *p)
{
    int bad_g = -1;
    for (int i = 0; g && i < n; i++)
        if (!isfinite(g[i])) {
            bad_g = i;
            break;
        }
    if (isfinite(F) && bad_g < 0)
        return 1;
    char ps[300], gs[128] = "";
    format_params(run, p, ps, sizeof ps);
    if (isfinite(F))
        snprintf(gs, sizeof gs, " (d/d%s is %g)", run->names[run->vars->free_idx[bad_g]], g[bad_g]);
    /* the objective may know why (a rate that cannot be computed at an
     * initial state, an adaptive integration that gave up) */
    const char *why = p ? fit_obj_explain(run->obj, p) : NULL;
    if (why)
        snprintf(run->res->message, sizeof run->res->message, "fit: iteration %d: the %s is %s%s at %s: %s", run->iter,
                 isfinite(F) ? "gradient" : what, isfinite(F) ? "not finite" : (isnan(F) ? "nan" : "inf"), gs, ps,
                 why);
    else
        snprintf(run->res->message, sizeof run->res->message,
                 "fit: iteration %d: the %s is %s%s at %s (a step too large for the integrator? try more steps, "
                 "another start or bounds)",
                 run->iter, isfinite(F) ? "gradient" : what, isfinite(F) ? "not finite" : (isnan(F) ? "nan" : "inf"),
                 gs, ps);
    run->st = rmi_error(REMAT_ERR_NUMERIC, "%s", run->res->message);
    return 0;
}

remat_status fit_fail(fit_run *run, remat_status st)
{
    snprintf(run->res->message, sizeof run->res->message, "fit: iteration %d: %s", run->iter, remat_last_error());
    run->st = rmi_error(st, "%s", run->res->message);
    return st;
}

remat_status fit_ready(fit_run *run, remat_status local)
{
    remat_status st = fit_obj_agree(run->obj, local);
    return st == REMAT_OK ? REMAT_OK : fit_fail(run, st);
}

remat_status fit_record(fit_run *run, double F, double gnorm, const double *p)
{
    remat_fit_result *r = run->res;
    int P = run->obj->P;
    if (r->n_history == run->hist_cap) {
        int cap = run->hist_cap ? 2 * run->hist_cap : 64;
        double *ho = rmi_realloc(r->history_objective, sizeof *ho * (size_t)cap);
        if (ho)
            r->history_objective = ho;
        double *hp = ho ? rmi_realloc(r->history_params, sizeof *hp * (size_t)cap * (size_t)P) : NULL;
        if (hp)
            r->history_params = hp;
        if (!ho || !hp) {
            run->st = rmi_error(REMAT_ERR_NOMEM, "fit: out of memory for the history");
            snprintf(r->message, sizeof r->message, "%s", remat_last_error());
            return run->st;
        }
        run->hist_cap = cap;
    }
    r->history_objective[r->n_history] = F;
    memcpy(r->history_params + (size_t)r->n_history * (size_t)P, p, sizeof *p * (size_t)P);
    r->n_history++;
    r->iterations = run->iter;
    r->objective = F;
    memcpy(r->params, p, sizeof *p * (size_t)P);
    if (run->progress) {
        remat_fit_progress pr = {
            .iteration = run->iter,
            .objective = F,
            .grad_norm = gnorm,
            .n_params = P,
            .params = p,
            .param_names = run->names,
            .optimizer = r->optimizer,
        };
        if (run->progress(&pr, run->progress_ctx))
            run->user_stop = 1;
    }
    return REMAT_OK;
}

void fit_finish(fit_run *run, int converged, const char *fmt, ...)
{
    remat_fit_result *r = run->res;
    r->converged = converged && run->st == REMAT_OK && !run->user_stop;
    if (run->st != REMAT_OK)
        return; /* the message names the failure already */
    if (run->user_stop) {
        snprintf(r->message, sizeof r->message, "stopped by the progress callback after iteration %d",
                 r->iterations);
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->message, sizeof r->message, fmt, ap);
    va_end(ap);
}

/* ---- the steps the iterative drivers (opt_*.c) share ---- */

int fit_eval_grad_x_trial(fit_run *run, const double *x, double *F, double *gx)
{
    fit_x_to_p(run->vars, x, run->p);
    remat_status st = fit_obj_gradient(run->obj, run->p, F, run->gp);
    if (st != REMAT_OK) {
        fit_fail(run, st);
        return 0;
    }
    fit_grad_to_x(run->vars, x, run->p, run->gp, gx);
    int finite = isfinite(*F);
    for (int i = 0; finite && i < run->n; i++)
        finite = isfinite(gx[i]);
    return finite ? 1 : -1;
}

int fit_eval_grad_x(fit_run *run, const double *x, double *F, double *gx)
{
    int r = fit_eval_grad_x_trial(run, x, F, gx);
    return r >= 0 ? r : fit_check_finite(run, "objective", *F, run->n, gx, run->p);
}

double fit_reject_value(double F0) { return 1e10 * (fabs(F0) + 1.0) + 1e30; }

remat_status fit_record_x(fit_run *run, double F, double gnorm, const double *x)
{
    fit_x_to_p(run->vars, x, run->p);
    return fit_record(run, F, gnorm, run->p);
}

int fit_record_start(fit_run *run, double F, double gnorm, const double *x)
{
    run->F0 = F;
    if (fit_record_x(run, F, gnorm, x) != REMAT_OK)
        return 1;
    if (gnorm == 0) {
        fit_finish(run, 1, "converged: the gradient is 0 at the start (F = %.6g)", F);
        return 1;
    }
    return 0;
}

int fit_iteration_begin(fit_run *run, int it, double F)
{
    if (it > run->max_iters) {
        fit_finish(run, 0, "stopped: %d iterations (max_iters) without convergence (F = %.6g)", run->max_iters, F);
        return 0;
    }
    run->iter = it;
    return 1;
}

int fit_step_below_xtol(const fit_run *run, const double *x, const double *dx)
{
    int small = 1;
    for (int j = 0; j < run->n; j++)
        if (!(fabs(dx[j]) <= run->xtol * (run->xtol + fabs(x[j]))))
            small = 0;
    return small;
}

remat_status fit_fail_gsl(fit_run *run, int gsl_status)
{
    return fit_fail(run, rmi_error(REMAT_ERR_BACKEND, "GSL: %s", gsl_strerror(gsl_status)));
}

/* GSL's error handler is one process-wide variable. A save/off/restore per
 * fit, run from two threads at once, can restore "off" over the default or
 * the default under a running fit (which then aborts on a GSL error): so the
 * first fit in turns it off, the last one out puts back what it found. */
static pthread_mutex_t gsl_handler_lock = PTHREAD_MUTEX_INITIALIZER;
static int gsl_quiet_depth;
static gsl_error_handler_t *gsl_saved_handler;

void fit_gsl_quiet_begin(void)
{
    pthread_mutex_lock(&gsl_handler_lock);
    if (gsl_quiet_depth++ == 0)
        gsl_saved_handler = gsl_set_error_handler_off();
    pthread_mutex_unlock(&gsl_handler_lock);
}

void fit_gsl_quiet_end(void)
{
    pthread_mutex_lock(&gsl_handler_lock);
    REMAT_ASSERT(gsl_quiet_depth > 0);
    if (--gsl_quiet_depth == 0)
        gsl_set_error_handler(gsl_saved_handler);
    pthread_mutex_unlock(&gsl_handler_lock);
}

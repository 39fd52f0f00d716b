/*
 * vars.c — the optimizer's variables, the history and the stop messages.
 *
 * x -> theta -> p per free parameter: theta = x, or for LM and BFGS with
 * bounds the MINUIT transform (F. James, MINUIT Reference Manual, CERN D506,
 * sec. 1.3; as lmfit uses it) that maps an unbounded x into [lo, hi] in theta; then
 * p = exp(theta) on the log scale, p = theta on the linear one. Fixed
 * parameters keep their start values.
 *
 * The last section holds the steps every iterative driver takes the same way:
 * evaluating at x, recording, the iteration budget and GSL's step test.
 */
#include <gsl/gsl_errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/assert.h"
#include "core/error.h"
#include "models/fit/fit_impl.h"

static double theta_of(const struct remat_fit *fit, int j, double x)
{
    double lo = fit->tlo[j], hi = fit->thi[j];
    switch (fit->map[j]) {
    case VAR_SIN: return lo + (hi - lo) * (sin(x) + 1.0) / 2.0;
    case VAR_LOWER: return lo - 1.0 + sqrt(x * x + 1.0);
    case VAR_UPPER: return hi + 1.0 - sqrt(x * x + 1.0);
    default: return x;
    }
}

static double dtheta_dx(const struct remat_fit *fit, int j, double x)
{
    switch (fit->map[j]) {
    case VAR_SIN: return (fit->thi[j] - fit->tlo[j]) * cos(x) / 2.0;
    case VAR_LOWER: return x / sqrt(x * x + 1.0);
    case VAR_UPPER: return -x / sqrt(x * x + 1.0);
    default: return 1.0;
    }
}

void fit_x_start(const struct remat_fit *fit, double *x)
{
    memcpy(x, fit->x0, sizeof *x * (size_t)fit->n_free);
}

void fit_x_setup(struct remat_fit *fit)
{
    double *x = fit->x0;
    for (int j = 0; j < fit->n_free; j++) {
        int i = fit->free_idx[j];
        double th = fit->logscale[i] ? log(fit->start[i]) : fit->start[i], lo = fit->tlo[j], hi = fit->thi[j];
        switch (fit->map[j]) {
        case VAR_SIN: x[j] = asin(fmax(-1.0, fmin(1.0, 2.0 * (th - lo) / (hi - lo) - 1.0))); break;
        case VAR_LOWER: x[j] = sqrt(fmax(0.0, (th - lo + 1.0) * (th - lo + 1.0) - 1.0)); break;
        case VAR_UPPER: x[j] = sqrt(fmax(0.0, (hi - th + 1.0) * (hi - th + 1.0) - 1.0)); break;
        default: x[j] = th; break;
        }
    }
}

void fit_x_to_p(const struct remat_fit *fit, const double *x, double *p)
{
    memcpy(p, fit->start, sizeof *p * (size_t)fit->P);
    for (int j = 0; j < fit->n_free; j++) {
        int i = fit->free_idx[j];
        if (x[j] == fit->x0[j])
            continue; /* the start itself, not exp(log(start)) one ulp away */
        double th = theta_of(fit, j, x[j]);
        p[i] = fit->logscale[i] ? exp(th) : th;
        /* the transform is exact in theta; keep p inside the natural box when
         * rounding in exp() would step over it */
        p[i] = fmin(fmax(p[i], fit->lo[i]), fit->hi[i]);
    }
}

double fit_dp_dx(const struct remat_fit *fit, const double *x, const double *p, int j)
{
    int i = fit->free_idx[j];
    return (fit->logscale[i] ? p[i] : 1.0) * dtheta_dx(fit, j, x[j]);
}

void fit_grad_to_x(const struct remat_fit *fit, const double *x, const double *p, const double *gp, double *gx)
{
    for (int j = 0; j < fit->n_free; j++)
        gx[j] = gp[fit->free_idx[j]] * fit_dp_dx(fit, x, p, j);
}

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

static void format_params(const struct remat_fit *fit, const double *p, char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = 0;
    for (int i = 0; i < fit->P && o + 1 < len; i++) {
        int w = snprintf(buf + o, len - o, "%s%s=%.9g", i ? ", " : "", fit->names[i], p[i]);
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
    const struct remat_fit *fit = run->fit;
    char ps[300], gs[128] = "";
    format_params(fit, p, ps, sizeof ps);
    if (isfinite(F))
        snprintf(gs, sizeof gs, " (d/d%s is %g)", fit->names[fit->free_idx[bad_g]], g[bad_g]);
    /* a rate that cannot be computed at an initial state is named; more
     * steps would not help there */
    const char *rates = NULL;
    double *in = p ? malloc(sizeof *in * (size_t)(fit->P + fit->C + 1)) : NULL;
    for (int e = 0; in && !rates && e < fit->E; e++) {
        fit_rate_input_values(fit, &fit->exp[e], p, in);
        if (remat_mechanism_check_rates(fit->m, fit->opt.t0, fit->exp[e].y0, in) == REMAT_ERR_NUMERIC)
            rates = remat_last_error();
    }
    free(in);
    /* an adaptive integration that failed says why (max_steps, stiffness) */
    double stats[REMAT_ODE_STATS];
    remat_ode_options oo = {.method = fit->opt.method, .max_steps = fit->opt.max_steps};
    if (!rates && p && fit->opt.adaptive && remat_fit_integration_stats(fit, p, stats) == REMAT_OK &&
        remat_ode_stats_check(&oo, stats) != REMAT_OK)
        rates = remat_last_error();
    if (rates)
        snprintf(run->res->message, sizeof run->res->message, "fit: iteration %d: the %s is %s%s at %s: %s", run->iter,
                 isfinite(F) ? "gradient" : what, isfinite(F) ? "not finite" : (isnan(F) ? "nan" : "inf"), gs, ps,
                 rates);
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

remat_status fit_record(fit_run *run, double F, double gnorm, const double *p)
{
    remat_fit_result *r = run->res;
    int P = run->fit->P;
    if (r->n_history == run->hist_cap) {
        int cap = run->hist_cap ? 2 * run->hist_cap : 64;
        double *ho = realloc(r->history_objective, sizeof *ho * (size_t)cap);
        if (ho)
            r->history_objective = ho;
        double *hp = ho ? realloc(r->history_params, sizeof *hp * (size_t)cap * (size_t)P) : NULL;
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
    const remat_fit_options *o = &run->fit->opt;
    if (o->progress) {
        remat_fit_progress pr = {
            .iteration = run->iter,
            .objective = F,
            .grad_norm = gnorm,
            .n_params = P,
            .params = p,
            .param_names = (const char *const *)run->fit->names,
            .optimizer = r->optimizer,
        };
        if (o->progress(&pr, o->progress_ctx))
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
    fit_x_to_p(run->fit, x, run->p);
    remat_status st = fit_eval_grad(run->fit, run->p, F, run->gp);
    if (st != REMAT_OK) {
        fit_fail(run, st);
        return 0;
    }
    fit_grad_to_x(run->fit, x, run->p, run->gp, gx);
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
    fit_x_to_p(run->fit, x, run->p);
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

/*
 * integration.c — what the integrator did at given parameters
 * (remat_fit_integration_stats), for the report and for a fit whose
 * adaptive integration failed: the residuals are NaN then, and only the
 * integrator's stats say whether max_steps ran out or the problem is stiff.
 */
#include <math.h>
#include <stdio.h>

#include "core/alloc.h"
#include "core/error.h"
#include "models/fit/fit_impl.h"

/* experiment e's stats at params */
static remat_status experiment_stats(const remat_fit *fit, int e, const double *params, double *stats)
{
    if (fit_exp_rows(&fit->exp[e])) { /* the row scan's steps, counted: nothing to integrate */
        const fit_exp *x = &fit->exp[e];
        for (int i = 0; i < REMAT_ODE_STATS; i++)
            stats[i] = 0;
        for (int64_t k = 0; k < x->rows; k++)
            stats[REMAT_ODE_STAT_ACCEPTED] += x->nsteps[k];
        stats[REMAT_ODE_STAT_T] = remat_dataset_times(x->d)[x->rows - 1];
        return REMAT_OK;
    }
    remat_ode_options o = fit_ode_options(fit, &fit->exp[e]);
    o.scan = (remat_scan_options){0}; /* forward only */
    double *in = rmi_malloc(sizeof *in * (size_t)(fit->P + fit->C + 1)); /* params, then conditions */
    if (!in)
        return rmi_error(REMAT_ERR_NOMEM, "fit: out of memory");
    fit_rate_input_values(fit, &fit->exp[e], params, in);
    remat_status st = remat_ode_run_once(fit->m, &o, fit->exp[e].y0, in, remat_backend_cpu(), fit->opt.compile, NULL, stats);
    rmi_free(in);
    return st;
}

remat_status remat_fit_integration_stats(const remat_fit *fit, const double *params, double *stats)
{
    if (!fit || !params || !stats)
        return rmi_error(REMAT_ERR_NULL, "fit: integration stats: %s is NULL",
                         !fit ? "the fit" : !params ? "params" : "stats");
    double total[REMAT_ODE_STATS] = {0}, one[REMAT_ODE_STATS];
    total[REMAT_ODE_STAT_T] = INFINITY;
    for (int e = 0; e < fit->E; e++) {
        remat_status st = experiment_stats(fit, e, params, one);
        if (st != REMAT_OK)
            return st;
        total[REMAT_ODE_STAT_ACCEPTED] += one[REMAT_ODE_STAT_ACCEPTED];
        total[REMAT_ODE_STAT_REJECTED] += one[REMAT_ODE_STAT_REJECTED];
        if (total[REMAT_ODE_STAT_CODE] == 0 && one[REMAT_ODE_STAT_CODE] != 0) {
            total[REMAT_ODE_STAT_CODE] = one[REMAT_ODE_STAT_CODE];
            total[REMAT_ODE_STAT_T] = one[REMAT_ODE_STAT_T];
        } else if (total[REMAT_ODE_STAT_CODE] == 0 && one[REMAT_ODE_STAT_T] < total[REMAT_ODE_STAT_T]) {
            total[REMAT_ODE_STAT_T] = one[REMAT_ODE_STAT_T];
        }
    }
    for (int i = 0; i < REMAT_ODE_STATS; i++)
        stats[i] = total[i];
    return REMAT_OK;
}

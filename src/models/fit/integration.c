/*
 * integration.c — what the integrator did at given parameters
 * (remat_fit_integration_stats), for the report and for a fit whose
 * adaptive integration failed: the residuals are NaN then, and only the
 * integrator's stats say whether max_steps ran out or the problem is stiff.
 */
#include <math.h>
#include <stdio.h>

#include "core/error.h"
#include "models/fit/fit_impl.h"

/* experiment e's stats at params */
static remat_status experiment_stats(const remat_fit *fit, int e, const double *params, double *stats)
{
    int64_t S = fit->S, P = fit->P;
    remat_ode_options o = fit_ode_options(fit, &fit->exp[e]);
    o.scan = (remat_scan_options){0}; /* forward only */
    remat_fn *f = remat_fn_new("fit_integration_stats");
    remat_program *prog = NULL;
    if (!f)
        return rmi_error(REMAT_ERR_NOMEM, "fit: out of memory");
    remat_val p = remat_arg(f, "params", REMAT_F64, 1, &P);
    remat_val y0 = remat_const_data(f, REMAT_F64, 1, &S, fit->exp[e].y0);
    remat_val ys, sv;
    remat_status st = remat_ode_integrate_stats(f, fit->m, &o, y0, fit_rate_inputs(fit, f, &fit->exp[e], p), &ys, &sv);
    if (st == REMAT_OK) {
        remat_fn_output(f, sv);
        st = remat_compile(f, remat_backend_cpu(), &prog);
    }
    if (st == REMAT_OK) {
        remat_tensor in = fit_vec((double *)params, P);
        remat_tensor res = remat_tensor_f64(stats, 1, (int64_t[]){REMAT_ODE_STATS});
        st = remat_run(prog, 1, &in, 1, &res, NULL);
    }
    remat_program_free(prog);
    remat_fn_free(f);
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

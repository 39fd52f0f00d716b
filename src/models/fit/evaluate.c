/*
 * evaluate.c — a fit's compiled programs run over this rank's experiments
 * in the natural scale: their compact residuals, their (F_e, dF_e/dp), F and
 * dF/dp; why an objective is not finite; and the public calls that read or
 * evaluate the problem (remat_fit_objective, _residuals, _predict, ...)
 * through the objective (fit->obj, spread.c).
 */
#include <math.h>
#include <stdlib.h>

#include "core/alloc.h"
#include "core/error.h"
#include "models/fit/fit_impl.h"

remat_tensor fit_vec(double *data, int64_t n)
{
    return remat_tensor_f64(data, 1, &n);
}

remat_status fit_local_residuals(struct remat_fit *fit, const double *p, double *mine)
{
    int L = fit->n_local;
    if (L == 0)
        return REMAT_OK;
    remat_tensor in = fit_vec((double *)p, fit->P);
    remat_tensor *out = rmi_malloc(sizeof *out * (size_t)L);
    if (!out)
        return rmi_error(REMAT_ERR_NOMEM, "fit: out of memory");
    for (int l = 0; l < L; l++)
        out[l] = fit_vec(fit->exp[fit->local[l]].r_full, fit->exp[fit->local[l]].rows * fit->S);
    remat_status st = remat_run(fit->res, 1, &in, L, out, NULL);
    rmi_free(out);
    int64_t k = 0;
    for (int l = 0; st == REMAT_OK && l < L; l++) {
        const fit_exp *x = &fit->exp[fit->local[l]];
        for (int64_t i = 0; i < x->n_meas; i++)
            mine[k++] = x->r_full[x->meas[i]];
    }
    return st;
}

/* The VJP of each local experiment's sum of squares with cotangent 1. */
remat_status fit_local_objectives(struct remat_fit *fit, const double *p)
{
    int L = fit->n_local, P = fit->P;
    if (L == 0)
        return REMAT_OK;
    remat_tensor *in = rmi_malloc(sizeof *in * (size_t)(2 * L)), *out = rmi_malloc(sizeof *out * (size_t)(2 * L));
    if (!in || !out) {
        rmi_free(in);
        rmi_free(out);
        return rmi_error(REMAT_ERR_NOMEM, "fit: out of memory");
    }
    static double one = 1.0;
    for (int l = 0; l < L; l++) {
        double *item = fit->items + (size_t)l * (1 + (size_t)P);
        in[l] = fit_vec((double *)p, P);
        in[L + l] = remat_tensor_f64(&one, 0, NULL);
        out[l] = remat_tensor_f64(item, 0, NULL);
        out[L + l] = fit_vec(item + 1, P);
    }
    remat_status st = remat_run(fit->vg, 2 * L, in, 2 * L, out, NULL);
    rmi_free(in);
    rmi_free(out);
    return st;
}

remat_status fit_local_grad(struct remat_fit *fit, const double *p, double *F, double *grad)
{
    remat_tensor in = fit_vec((double *)p, fit->P);
    remat_tensor out[2] = {remat_tensor_f64(F, 0, NULL), fit_vec(grad, fit->P)};
    return remat_run(fit->vg, 1, &in, 2, out, NULL);
}

const char *fit_explain_nonfinite(struct remat_fit *fit, const double *p)
{
    /* a rate that cannot be computed at an initial state is named; more
     * steps would not help there */
    double *in = rmi_malloc(sizeof *in * (size_t)(fit->P + fit->C + 1)); /* params, then conditions */
    const char *rates = NULL;
    for (int e = 0; in && !rates && e < fit->E; e++) {
        fit_rate_input_values(fit, &fit->exp[e], p, in);
        if (remat_mechanism_check_rates(fit->m, fit->opt.t0, fit->exp[e].y0, in) == REMAT_ERR_NUMERIC)
            rates = remat_last_error();
    }
    rmi_free(in);
    if (rates)
        return rates;
    /* an adaptive integration that failed says why (max_steps, stiffness) */
    double stats[REMAT_ODE_STATS];
    remat_ode_options oo = {.method = fit->opt.method, .max_steps = fit->opt.max_steps};
    if (fit->opt.adaptive && remat_fit_integration_stats(fit, p, stats) == REMAT_OK &&
        remat_ode_stats_check(&oo, stats) != REMAT_OK)
        return remat_last_error();
    return NULL;
}

/* ---- public accessors that read the problem ---- */

void remat_fit_schedule(const remat_fit *fit, remat_schedule_spec *spec)
{
    REMAT_NULL_RETURN(fit, );
    REMAT_NULL_RETURN(spec, );
    *spec = fit->spec;
}

const double *remat_fit_initial_state(const remat_fit *fit, int e)
{
    REMAT_NULL_RETURN(fit, NULL);
    if (e < 0 || e >= fit->E) {
        rmi_error(REMAT_ERR_ARG, "fit: no experiment %d", e);
        return NULL;
    }
    return fit->exp[e].y0;
}

int64_t remat_fit_residual_count(const remat_fit *fit)
{
    REMAT_NULL_RETURN(fit, 0);
    return fit->n_res;
}


static remat_status check_params(const remat_fit *fit, const double *params)
{
    if (!fit || !params)
        return rmi_error(REMAT_ERR_NULL, "fit: %s is NULL", !fit ? "the fit" : "params");
    for (int i = 0; i < fit->P; i++)
        if (!isfinite(params[i]))
            return rmi_error(REMAT_ERR_VALUE, "fit: parameter '%s' is %g", fit->names[i], params[i]);
    return REMAT_OK;
}

remat_status remat_fit_objective(remat_fit *fit, const double *params, double *objective)
{
    remat_status st = check_params(fit, params);
    if (st == REMAT_OK && !objective)
        st = rmi_error(REMAT_ERR_NULL, "fit: objective is NULL");
    return st == REMAT_OK ? fit_obj_residuals(&fit->obj, params, objective, NULL) : st;
}

remat_status remat_fit_residuals(remat_fit *fit, const double *params, double *r)
{
    double F;
    remat_status st = check_params(fit, params);
    return st == REMAT_OK ? fit_obj_residuals(&fit->obj, params, &F, r) : st;
}

double remat_fit_predict_step(const remat_fit *fit)
{
    REMAT_NULL_RETURN(fit, 0);
    return fit->opt.adaptive ? 0 : fit->dt > 0 ? fit->dt : fit->finest_h;
}

remat_status remat_fit_predict(const remat_fit *fit, int e, const double *params, int n_times, const double *times,
                               double *out)
{
    remat_status st = check_params(fit, params);
    if (st != REMAT_OK)
        return st;
    if (e < 0 || e >= fit->E)
        return rmi_error(REMAT_ERR_ARG, "fit: predict: no experiment %d (there are %d)", e, fit->E);
    if (n_times < 1 || !times || !out)
        return rmi_error(REMAT_ERR_ARG, "fit: predict: needs n_times >= 1 (got %d), times and out", n_times);
    remat_ode_options o = fit_ode_options(fit, &fit->exp[e]);
    o.n_times = n_times;
    o.times = times;
    if (!o.adaptive) {
        o.dt = remat_fit_predict_step(fit);
        o.steps = 0;
    }
    o.scan = (remat_scan_options){0}; /* forward only: the schedule does not matter */
    double *in = rmi_malloc(sizeof *in * (size_t)(fit->P + fit->C + 1)); /* params, then conditions */
    if (!in)
        return rmi_error(REMAT_ERR_NOMEM, "fit: out of memory");
    fit_rate_input_values(fit, &fit->exp[e], params, in);
    st = remat_ode_run_once(fit->m, &o, fit->exp[e].y0, in, NULL, fit->opt.compile, out, NULL);
    rmi_free(in);
    return st;
}

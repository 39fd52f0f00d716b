/*
 * evaluate.c — a fit's compiled programs run in the natural scale: F and
 * the compact residuals, F and dF/dp (alone or summed per experiment over
 * the ranks), and the public calls that read or evaluate the problem
 * (remat_fit_objective, _residuals, _predict, ...).
 */
#include <math.h>
#include <stdlib.h>

#include "core/error.h"
#include "models/fit/fit_impl.h"

remat_tensor fit_vec(double *data, int64_t n)
{
    return remat_tensor_f64(data, 1, &n);
}

/* The local experiments' compact residuals into mine: each experiment's
 * class program run on its data. */
static remat_status local_residuals(struct remat_fit *fit, const double *p, double *mine)
{
    int64_t k = 0;
    for (int l = 0; l < fit->n_local; l++) {
        const fit_exp *x = &fit->exp[fit->local[l]];
        remat_tensor in[5], out = fit_vec(x->r_full, x->rows * fit->S);
        int n = fit_inputs(fit, fit->local[l], p, NULL, 0, in);
        remat_status st = remat_run(fit->cls[x->cls].res, n, in, 1, &out, NULL);
        if (st != REMAT_OK)
            return st;
        for (int64_t i = 0; i < x->n_meas; i++)
            mine[k++] = x->r_full[x->meas[i]];
    }
    return REMAT_OK;
}

remat_status fit_eval_residuals(struct remat_fit *fit, const double *p, double *F, double *r)
{
    double *all = r ? r : fit->rall;
    remat_status st = local_residuals(fit, p, fit->rloc ? fit->rloc : all);
    fit->evals++;
    st = fit_spread_residuals(fit, st, all);
    if (st != REMAT_OK)
        return st;
    double sum = 0;
    for (int64_t k = 0; k < fit->n_res; k++)
        sum += all[k] * all[k];
    *F = sum;
    return REMAT_OK;
}

/* (F_e, dF_e/dp) of each local experiment into fit->items: its class's
 * value_and_grad of its sum of squares. */
static remat_status local_objectives(struct remat_fit *fit, const double *p)
{
    int P = fit->P;
    for (int l = 0; l < fit->n_local; l++) {
        const fit_exp *x = &fit->exp[fit->local[l]];
        double *item = fit->items + (size_t)l * (1 + (size_t)P);
        remat_tensor in[5], out[2] = {remat_tensor_f64(item, 0, NULL), fit_vec(item + 1, P)};
        int n = fit_inputs(fit, fit->local[l], p, NULL, 0, in);
        remat_status st = remat_run(fit->cls[x->cls].vg, n, in, 2, out, NULL);
        if (st != REMAT_OK)
            return st;
    }
    return REMAT_OK;
}

/* F and dF/dp summed over the experiments in experiment order (alone: every
 * experiment is local) */
remat_status fit_eval_grad(struct remat_fit *fit, const double *p, double *F, double *grad)
{
    fit->evals++;
    if (fit->per_experiment_sum)
        return fit_spread_objective(fit, local_objectives(fit, p), F, grad);
    int P = fit->P;
    double one[1 + 64], *item = P < 64 ? one : malloc(sizeof *item * (size_t)(1 + P));
    if (!item)
        return rmi_error(REMAT_ERR_NOMEM, "fit: out of memory");
    *F = 0;
    for (int i = 0; i < P; i++)
        grad[i] = 0;
    remat_status st = REMAT_OK;
    for (int l = 0; l < fit->n_local && st == REMAT_OK; l++) {
        const fit_exp *x = &fit->exp[fit->local[l]];
        remat_tensor in[5], out[2] = {remat_tensor_f64(item, 0, NULL), fit_vec(item + 1, P)};
        int n = fit_inputs(fit, fit->local[l], p, NULL, 0, in);
        st = remat_run(fit->cls[x->cls].vg, n, in, 2, out, NULL);
        *F += item[0];
        for (int i = 0; i < P; i++)
            grad[i] += item[1 + i];
    }
    if (item != one)
        free(item);
    return st;
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
    return st == REMAT_OK ? fit_eval_residuals(fit, params, objective, NULL) : st;
}

remat_status remat_fit_residuals(remat_fit *fit, const double *params, double *r)
{
    double F;
    remat_status st = check_params(fit, params);
    return st == REMAT_OK ? fit_eval_residuals(fit, params, &F, r) : st;
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
    int64_t S = fit->S, P = fit->P;
    remat_ode_options o = fit_ode_options(fit, &fit->exp[e]);
    o.n_times = n_times;
    o.times = times;
    if (!o.adaptive) {
        o.dt = remat_fit_predict_step(fit);
        o.steps = 0;
    }
    o.scan = (remat_scan_options){0}; /* forward only: the schedule does not matter */
    remat_fn *f = remat_fn_new("fit_predict");
    remat_program *prog = NULL;
    if (!f)
        return rmi_error(REMAT_ERR_NOMEM, "fit: out of memory");
    remat_val p = remat_arg(f, "params", REMAT_F64, 1, &P);
    remat_val y0 = remat_const_data(f, REMAT_F64, 1, &S, fit->exp[e].y0);
    remat_val ys;
    st = remat_ode_integrate(f, fit->m, &o, y0, p, &ys);
    if (st == REMAT_OK) {
        remat_fn_output(f, ys);
        st = remat_compile_env(f, &prog);
    }
    if (st == REMAT_OK) {
        remat_tensor in = fit_vec((double *)params, P);
        remat_tensor res = remat_tensor_f64(out, 2, (int64_t[]){n_times, S});
        st = remat_run(prog, 1, &in, 1, &res, NULL);
    }
    remat_program_free(prog);
    remat_fn_free(f);
    return st;
}

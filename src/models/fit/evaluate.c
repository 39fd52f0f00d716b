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

/* Each local experiment's class program run on its data; the measured
 * cells kept, in experiment order. */
remat_status fit_local_residuals(struct remat_fit *fit, const double *p, double *mine)
{
    int64_t k = 0;
    for (int l = 0; l < fit->n_local; l++) {
        const fit_exp *x = &fit->exp[fit->local[l]];
        remat_tensor in[8], out = fit_vec(x->r_full, x->rows * fit->S);
        int n = fit_inputs(fit, fit->local[l], p, NULL, 0, in);
        remat_status st = remat_run(fit->cls[x->cls].res, n, in, 1, &out, NULL);
        if (st != REMAT_OK)
            return st;
        for (int64_t i = 0; i < x->n_meas; i++)
            mine[k++] = x->r_full[x->meas[i]];
    }
    return REMAT_OK;
}

/* (F_e, dF_e/dp) of each local experiment into fit->items: its class's
 * value_and_grad of its sum of squares. */
remat_status fit_local_objectives(struct remat_fit *fit, const double *p)
{
    int P = fit->P;
    for (int l = 0; l < fit->n_local; l++) {
        const fit_exp *x = &fit->exp[fit->local[l]];
        double *item = fit->items + (size_t)l * (1 + (size_t)P);
        remat_tensor in[8], out[2] = {remat_tensor_f64(item, 0, NULL), fit_vec(item + 1, P)};
        int n = fit_inputs(fit, fit->local[l], p, NULL, 0, in);
        remat_status st = remat_run(fit->cls[x->cls].vg, n, in, 2, out, NULL);
        if (st != REMAT_OK)
            return st;
    }
    return REMAT_OK;
}

/* F and dF/dp summed over the local experiments in experiment order */
remat_status fit_local_grad(struct remat_fit *fit, const double *p, double *F, double *grad)
{
    int P = fit->P;
    double one[1 + 64], *item = P < 64 ? one : rmi_malloc(sizeof *item * (size_t)(1 + P));
    if (!item)
        return rmi_error(REMAT_ERR_NOMEM, "fit: out of memory");
    *F = 0;
    for (int i = 0; i < P; i++)
        grad[i] = 0;
    remat_status st = REMAT_OK;
    for (int l = 0; l < fit->n_local && st == REMAT_OK; l++) {
        const fit_exp *x = &fit->exp[fit->local[l]];
        remat_tensor in[8], out[2] = {remat_tensor_f64(item, 0, NULL), fit_vec(item + 1, P)};
        int n = fit_inputs(fit, fit->local[l], p, NULL, 0, in);
        st = remat_run(fit->cls[x->cls].vg, n, in, 2, out, NULL);
        *F += item[0];
        for (int i = 0; i < P; i++)
            grad[i] += item[1 + i];
    }
    if (item != one)
        rmi_free(item);
    return st;
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
    /* an ignition delay whose T never gets there */
    for (int e = 0; e < fit->E; e++) {
        fit_exp *x = &fit->exp[e];
        if (x->delay && fit_delay_locate(fit, e, p) == REMAT_OK && isnan(x->tau_hat)) {
            rmi_error(REMAT_ERR_NUMERIC,
                      "%s: T does not reach its initial %g K + %g K (the ignition delay) before t = %g s, %g "
                      "times the measured delay",
                      remat_dataset_path(x->d), x->y0[fit->S - 1], REMAT_FIT_DELAY_RISE, fit_delay_horizon(fit, x),
                      REMAT_FIT_DELAY_HORIZON);
            return remat_last_error();
        }
    }
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

/* The prediction program for n times: (y0, rate inputs, ts (n,)[, nsteps
 * (n,)]) -> ys (n, S), the times an input (remat_ode_integrate_times
 * adaptive, remat_ode_integrate_rows with fixed steps: steps is then the
 * most steps of an interval; 0: adaptive), so it depends on n and steps
 * only and serves every experiment and call: kept in fit->predict
 * (FIT_PREDICT_SLOTS of them, the oldest replaced). */
static remat_status predict_program(struct remat_fit *fit, int n, int64_t steps, remat_program **out)
{
    for (int i = 0; i < FIT_PREDICT_SLOTS; i++)
        if (fit->predict[i].prog && fit->predict[i].n == n && fit->predict[i].steps == steps) {
            *out = fit->predict[i].prog;
            return REMAT_OK;
        }
    int64_t S = fit->S, PI = remat_mechanism_input_count(fit->m), N = n;
    remat_fn *f = remat_fn_new("fit_predict");
    if (!f)
        return rmi_error(REMAT_ERR_NOMEM, "fit: out of memory");
    remat_val y0 = remat_arg(f, "y0", REMAT_F64, 1, &S);
    remat_val p = PI ? remat_arg(f, "params", REMAT_F64, 1, &PI) : REMAT_NONE;
    remat_val ts = remat_arg(f, "times", REMAT_F64, 1, &N), ys;
    remat_val ns = steps ? remat_arg(f, "steps", REMAT_F64, 1, &N) : REMAT_NONE;
    remat_ode_options o = fit_ode_options(fit, &fit->exp[0]); /* the experiment-free options */
    o.scan = (remat_scan_options){0};                          /* forward only */
    if (steps && o.adjoint != REMAT_ODE_ADJOINT_DISCRETE) {
        /* forward only, no adjoint's op; the steps the fit's continuous
         * adjoint integrates (rows_adjoint.c): every interval's own, tsit5's
         * and dopri5's too (dt 0) */
        o.adjoint = REMAT_ODE_ADJOINT_DISCRETE;
        o.dt = 0;
    }
    o.max_steps = steps ? steps : o.max_steps;
    remat_status st = steps ? remat_ode_integrate_rows(f, fit->m, &o, y0, p, ts, ns, &ys)
                            : remat_ode_integrate_times(f, fit->m, &o, y0, p, ts, &ys, NULL);
    if (st == REMAT_OK) {
        remat_fn_output(f, ys);
        st = remat_fn_status(f) == REMAT_OK ? REMAT_OK
                                            : rmi_error(remat_fn_status(f), "fit: predict: %s", remat_fn_error(f));
    }
    remat_program *prog = NULL;
    if (st == REMAT_OK)
        st = fit_compile(fit, f, &prog);
    remat_fn_free(f);
    if (st != REMAT_OK)
        return st;
    fit_predict_slot *slot = &fit->predict[fit->predict_next];
    fit->predict_next = (fit->predict_next + 1) % FIT_PREDICT_SLOTS;
    remat_program_free(slot->prog);
    *slot = (fit_predict_slot){.n = n, .steps = steps, .prog = prog};
    fit->predict_builds++;
    *out = prog;
    return REMAT_OK;
}

/* the kept program for these times (steps: predict_program's) run for
 * experiment e with rate inputs in */
static remat_status predict_run(const remat_fit *fit, int e, const double *in, int n, const double *times,
                                int64_t steps, double *nsteps, double *out)
{
    remat_program *prog = NULL;
    remat_status st = predict_program((struct remat_fit *)fit, n, steps, &prog); /* the cache is the fit's own state */
    if (st != REMAT_OK)
        return st;
    int64_t S = fit->S, PI = remat_mechanism_input_count(fit->m), N = n;
    remat_tensor ins[4] = {fit_vec(fit->exp[e].y0, S), fit_vec((double *)in, PI), fit_vec((double *)times, N),
                           fit_vec(nsteps, N)};
    if (!PI)
        ins[1] = ins[2], ins[2] = ins[3];
    remat_tensor o1 = remat_tensor_f64(out, 2, (int64_t[]){N, S});
    return remat_run(prog, (PI ? 3 : 2) + (steps ? 1 : 0), ins, 1, &o1, NULL);
}

void fit_predict_release(struct remat_fit *fit)
{
    for (int i = 0; i < FIT_PREDICT_SLOTS; i++)
        remat_program_free(fit->predict[i].prog);
}

int64_t remat_fit_predict_builds(const remat_fit *fit)
{
    REMAT_NULL_RETURN(fit, 0);
    return fit->predict_builds;
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
    if (o.adaptive) /* the times are an input: checked here, as the reader of opt.times would */
        for (int i = 0; i < n_times; i++)
            if (!isfinite(times[i]) || times[i] < fit->opt.t0 || (i > 0 && !(times[i] > times[i - 1])))
                return rmi_error(REMAT_ERR_ARG,
                                 "fit: predict: times[%d] = %g: the times must be finite, increasing and >= t0 = %g",
                                 i, times[i], fit->opt.t0);
    /* fixed steps: the row scan, its step counts those of the per-interval
     * grid (checked there) */
    int64_t steps = 0, *count = NULL;
    double *nsteps = NULL;
    if (fit_rows_scan(fit)) {
        count = rmi_malloc(sizeof *count * (size_t)n_times);
        nsteps = rmi_malloc(sizeof *nsteps * (size_t)n_times);
        st = !count || !nsteps ? rmi_error(REMAT_ERR_NOMEM, "fit: out of memory") : remat_ode_count_steps(&o, count, NULL);
        for (int k = 0; st == REMAT_OK && k < n_times; k++) {
            nsteps[k] = (double)count[k];
            steps = count[k] > steps ? count[k] : steps;
        }
        steps = steps < 1 ? 1 : steps; /* every time at t0: no step, but the program's while loop takes max_steps >= 1 */
        rmi_free(count);
        if (st != REMAT_OK) {
            rmi_free(nsteps);
            return st;
        }
    }
    double *in = rmi_malloc(sizeof *in * (size_t)(fit->P + fit->C + 1)); /* params, then conditions */
    if (!in) {
        rmi_free(nsteps);
        return rmi_error(REMAT_ERR_NOMEM, "fit: out of memory");
    }
    fit_rate_input_values(fit, &fit->exp[e], params, in);
    if (o.adaptive || steps) /* kept programs: a plot's experiments and repeated calls compile nothing more */
        st = predict_run(fit, e, in, n_times, times, steps, nsteps, out);
    else
        st = remat_ode_run_once(fit->m, &o, fit->exp[e].y0, in, NULL, fit->opt.compile, out, NULL);
    rmi_free(in);
    rmi_free(nsteps);
    return st;
}

/*
 * fit.c — options, the parameter scales and bounds, and one run: resolve the
 * optimizer, start from the start values, hand over to one driver
 * (opt_lm.c, opt_bfgs.c, opt_nlopt.c, opt_adam.c), return the result.
 * multistart.c runs it from each start.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "models/fit/fit_impl.h"
#include "remat/gas.h"

static const char *const optimizer_names[REMAT_FIT_OPTIMIZER_COUNT] = {
    [REMAT_FIT_AUTO] = "auto",
    [REMAT_FIT_LM] = "lm",
    [REMAT_FIT_BFGS] = "bfgs",
    [REMAT_FIT_ADAM] = "adam",
    [REMAT_FIT_LBFGSB] = "lbfgs-b",
};

const char *remat_fit_optimizer_name(remat_fit_optimizer o)
{
    return (unsigned)o < REMAT_FIT_OPTIMIZER_COUNT ? optimizer_names[o] : "?";
}

remat_status remat_fit_optimizer_parse(const char *text, remat_fit_optimizer *out)
{
    REMAT_NULL_RETURN(text, REMAT_ERR_NULL);
    REMAT_NULL_RETURN(out, REMAT_ERR_NULL);
    for (int i = 0; i < REMAT_FIT_OPTIMIZER_COUNT; i++)
        if (!strcmp(text, optimizer_names[i])) {
            *out = (remat_fit_optimizer)i;
            return REMAT_OK;
        }
    return rmi_error(REMAT_ERR_ARG, "unknown optimizer '%s' (expected auto, lm, bfgs, lbfgs-b or adam)", text);
}

remat_fit_options remat_fit_defaults(void)
{
    return (remat_fit_options){.optimizer = REMAT_FIT_AUTO, .method = REMAT_ODE_TSIT5, .adaptive = true,
                               .rtol = REMAT_FIT_DEFAULT_RTOL, .atol = REMAT_FIT_DEFAULT_ATOL};
}

void remat_fit_result_clear(remat_fit_result *r)
{
    if (!r)
        return;
    for (int i = 0; r->param_names && i < r->n_params; i++)
        rmi_free(r->param_names[i]);
    rmi_free(r->param_names);
    rmi_free(r->params);
    rmi_free(r->history_objective);
    rmi_free(r->history_params);
    rmi_free(r->start_objectives);
    rmi_free(r->start_params);
    for (int k = 0; r->start_messages && k < r->n_starts; k++)
        rmi_free(r->start_messages[k]);
    rmi_free(r->start_messages);
    memset(r, 0, sizeof *r);
}

static remat_status check_options(const remat_mechanism *m, int n_data, remat_dataset *const *data,
                                  const remat_fit_options *o)
{
    if (!m || !data || !o)
        return rmi_error(REMAT_ERR_NULL, "fit: %s is NULL", !m ? "the mechanism" : !data ? "the data" : "options");
    if (n_data < 1)
        return rmi_error(REMAT_ERR_ARG, "fit: needs at least one experiment (n_data = %d)", n_data);
    for (int e = 0; e < n_data; e++) {
        if (!data[e])
            return rmi_error(REMAT_ERR_NULL, "fit: experiment %d is NULL", e);
        if (remat_dataset_species_count(data[e]) != remat_mechanism_species_count(m))
            return rmi_error(REMAT_ERR_ARG, "fit: %s was read for a mechanism with %d species, not %s (%d)",
                             remat_dataset_path(data[e]), remat_dataset_species_count(data[e]),
                             remat_mechanism_source(m), remat_mechanism_species_count(m));
    }
    if ((unsigned)o->optimizer >= REMAT_FIT_OPTIMIZER_COUNT)
        return rmi_error(REMAT_ERR_ARG, "fit: unknown optimizer %d", (int)o->optimizer);
    if ((unsigned)o->jacobian >= REMAT_FIT_JACOBIAN_COUNT)
        return rmi_error(REMAT_ERR_ARG, "fit: unknown Jacobian mode %d", (int)o->jacobian);
    if ((unsigned)o->method >= REMAT_ODE_METHOD_COUNT)
        return rmi_error(REMAT_ERR_ARG, "fit: unknown integration method %d", (int)o->method);
    if (o->method == REMAT_ODE_BDF)
        return rmi_error(REMAT_ERR_UNSUPPORTED, "fit: method bdf integrates forward only and a fit needs the "
                                                "residuals' Jacobian: use rodas5 (or another method)");
    if ((unsigned)o->adjoint >= REMAT_ODE_ADJOINT_COUNT)
        return rmi_error(REMAT_ERR_ARG, "fit: unknown adjoint %d (expected discrete, backsolve or interpolating)",
                         (int)o->adjoint);
    if (o->adjoint != REMAT_ODE_ADJOINT_DISCRETE && o->jacobian == REMAT_FIT_JACOBIAN_FORWARD)
        return rmi_error(REMAT_ERR_UNSUPPORTED, "fit: the %s adjoint takes reverse-mode Jacobians only: "
                                                "jacobian forward has no adjoint to use (give auto or reverse)",
                         remat_ode_adjoint_name(o->adjoint));
    if (!isfinite(o->t0))
        return rmi_error(REMAT_ERR_VALUE, "fit: t0 = %g is not finite", o->t0);
    if (!(o->dt >= 0 && isfinite(o->dt)))
        return rmi_error(REMAT_ERR_VALUE, "fit: dt = %g must be a positive finite step (or 0)", o->dt);
    if (o->steps < 0)
        return rmi_error(REMAT_ERR_VALUE, "fit: steps = %lld must be >= 1 per data interval (or 0)",
                         (long long)o->steps);
    if (o->dt > 0 && o->steps > 0)
        return rmi_error(REMAT_ERR_ARG, "fit: give dt or steps, not both (dt = %g, steps = %lld)", o->dt,
                         (long long)o->steps);
    if (o->adaptive && !remat_ode_method_adaptive(o->method))
        return rmi_error(REMAT_ERR_ARG, "fit: method %s has no error estimate: adaptive stepping needs tsit5, dopri5 or rodas5 "
                                          "(adaptive = false for fixed steps)",
                         remat_ode_method_name(o->method));
    if (o->adaptive && (o->dt > 0 || o->steps > 0))
        return rmi_error(REMAT_ERR_ARG, "fit: adaptive stepping chooses its steps: give no dt or steps (dt = %g, "
                                          "steps = %lld), or set adaptive = false for fixed steps",
                         o->dt, (long long)o->steps);
    if (o->adaptive && !(o->rtol > 0 && isfinite(o->rtol)))
        return rmi_error(REMAT_ERR_VALUE, "fit: rtol = %g must be a positive finite tolerance", o->rtol);
    if (o->adaptive && !(o->atol >= 0 && isfinite(o->atol)))
        return rmi_error(REMAT_ERR_VALUE, "fit: atol = %g must be a finite tolerance >= 0", o->atol);
    if (o->adaptive && o->max_steps < 0)
        return rmi_error(REMAT_ERR_VALUE, "fit: max_steps = %lld is negative", (long long)o->max_steps);
    if (o->memory_budget < 0)
        return rmi_error(REMAT_ERR_VALUE, "fit: memory budget %lld is negative", (long long)o->memory_budget);
    if (o->max_iters < 0)
        return rmi_error(REMAT_ERR_VALUE, "fit: max_iters = %d is negative", o->max_iters);
    if (!(o->lr >= 0 && isfinite(o->lr)))
        return rmi_error(REMAT_ERR_VALUE, "fit: learning rate %g must be positive and finite", o->lr);
    if (!(o->xtol >= 0 && o->gtol >= 0 && o->ftol >= 0))
        return rmi_error(REMAT_ERR_VALUE, "fit: tolerances must be >= 0 (xtol %g, gtol %g, ftol %g)", o->xtol,
                         o->gtol, o->ftol);
    if (o->starts < 0)
        return rmi_error(REMAT_ERR_VALUE, "fit: starts = %d must be >= 1 (or 0: the start only)", o->starts);
    if ((unsigned)o->weighting > REMAT_FIT_WEIGHT_RELATIVE)
        return rmi_error(REMAT_ERR_ARG, "fit: unknown weighting %d", (int)o->weighting);
    for (int k = 0; o->conds && k < remat_mechanism_cond_count(m); k++)
        if (!isfinite(o->conds[k]))
            return rmi_error(REMAT_ERR_VALUE, "fit: condition '%s' is %g", remat_mechanism_cond_name(m, k),
                             o->conds[k]);
    for (int s = 0; o->sigma && s < remat_mechanism_species_count(m); s++)
        if (!(o->sigma[s] > 0 && isfinite(o->sigma[s])))
            return rmi_error(REMAT_ERR_VALUE, "fit: sigma of species '%s' is %g: it must be positive and finite",
                             remat_mechanism_species_name(m, s), o->sigma[s]);
    if (!(o->delay_sigma >= 0 && isfinite(o->delay_sigma)))
        return rmi_error(REMAT_ERR_VALUE, "fit: delay_sigma is %g: an ignition delay's sigma is positive and finite "
                         "(0: 1)", o->delay_sigma);
    if (o->memory_budget == 0 && o->scan.schedule.kind != REMAT_SCHED_STORE_ALL) {
        remat_schedule *s;
        remat_status st = remat_schedule_new(&o->scan.schedule, 1, &s);
        if (st != REMAT_OK) {
            char why[400];
            snprintf(why, sizeof why, "%s", remat_last_error());
            return rmi_error(st, "fit: schedule: %s", why);
        }
        remat_schedule_free(s);
    }
    return REMAT_OK;
}

/* Start values, scales, bounds in theta, the free set, the optimizer. */
static remat_status setup_params(struct remat_fit *fit)
{
    const remat_fit_options *o = &fit->opt;
    int P = fit->P;
    fit->names = rmi_calloc((size_t)P, sizeof *fit->names);
    fit->vars.start = rmi_calloc((size_t)P, sizeof *fit->vars.start);
    fit->vars.lo = rmi_calloc((size_t)P, sizeof *fit->vars.lo);
    fit->vars.hi = rmi_calloc((size_t)P, sizeof *fit->vars.hi);
    fit->vars.logscale = rmi_calloc((size_t)P, sizeof *fit->vars.logscale);
    fit->vars.fixed = rmi_calloc((size_t)P, sizeof *fit->vars.fixed);
    fit->vars.free_idx = rmi_calloc((size_t)P, sizeof *fit->vars.free_idx);
    fit->vars.tlo = rmi_calloc((size_t)P, sizeof *fit->vars.tlo);
    fit->vars.thi = rmi_calloc((size_t)P, sizeof *fit->vars.thi);
    fit->vars.map = rmi_calloc((size_t)P, sizeof *fit->vars.map);
    fit->vars.x0 = rmi_calloc((size_t)P, sizeof *fit->vars.x0);
    fit->vars.P = P;
    if (!fit->vars.x0 || !fit->names || !fit->vars.start || !fit->vars.lo || !fit->vars.hi ||
        !fit->vars.logscale || !fit->vars.fixed || !fit->vars.free_idx || !fit->vars.tlo || !fit->vars.thi ||
        !fit->vars.map)
        return rmi_error(REMAT_ERR_NOMEM, "fit: out of memory");
    for (int i = 0; i < P; i++) {
        const char *name = remat_mechanism_param_name(fit->m, i);
        fit->names[i] = rmi_strdup(name);
        if (!fit->names[i])
            return rmi_error(REMAT_ERR_NOMEM, "fit: out of memory");
        double v = o->start ? o->start[i] : remat_mechanism_param_value(fit->m, i);
        double lo = remat_mechanism_param_lo(fit->m, i), hi = remat_mechanism_param_hi(fit->m, i);
        fit->vars.start[i] = v;
        fit->vars.lo[i] = lo;
        fit->vars.hi[i] = hi;
        fit->vars.fixed[i] = o->fixed && o->fixed[i];
        if (!isfinite(v))
            return rmi_error(REMAT_ERR_VALUE, "fit: start value of '%s' is %g", name, v);
        if (v < lo || v > hi)
            return rmi_error(REMAT_ERR_VALUE, "fit: start value %g of '%s' is outside its bounds [%g, %g]", v,
                             name, lo, hi);
        remat_fit_scale sc = o->scale ? o->scale[i] : REMAT_FIT_SCALE_AUTO;
        if ((unsigned)sc > REMAT_FIT_SCALE_LINEAR)
            return rmi_error(REMAT_ERR_ARG, "fit: unknown scale %d for '%s'", (int)sc, name);
        if (sc == REMAT_FIT_SCALE_LOG && !(v > 0))
            return rmi_error(REMAT_ERR_VALUE, "fit: '%s' is on the log scale but starts at %g (must be > 0)",
                             name, v);
        /* a declared lower bound <= 0 says the value may reach zero or below
         * (log scale there lost on the battery: fit.h, "Parameter scale");
         * Adam's steps need the log scale's unit for a bound of 0 too */
        int linear_lo = o->optimizer == REMAT_FIT_ADAM ? lo < 0 : lo <= 0;
        /* a network's weight (remat/mechanism.h "Networks") takes either sign: linear */
        int weight = remat_mechanism_param_net(fit->m, i) >= 0;
        fit->vars.logscale[i] = sc == REMAT_FIT_SCALE_LOG ||
                                (sc == REMAT_FIT_SCALE_AUTO && v > 0 && !weight && !(isfinite(lo) && linear_lo));
    }
    fit->optimizer = o->optimizer;
    if (fit->optimizer == REMAT_FIT_AUTO)
        fit->optimizer = REMAT_FIT_LM; /* the battery's winner, bounds or not (fit.h) */
    /* GSL's LM and BFGS are unbounded: both run on the MINUIT variable that
     * maps the whole line into the box (as lmfit does for every method) */
    fit_vars_setup(&fit->vars, fit->optimizer == REMAT_FIT_LM || fit->optimizer == REMAT_FIT_BFGS);
    if (fit->vars.n_free == 0)
        return rmi_error(REMAT_ERR_ARG, "fit: %s", P ? "every parameter is fixed: nothing to fit"
                                                       : "the mechanism has no parameters: nothing to fit");
    return REMAT_OK;
}

static void release(struct remat_fit *fit)
{
    fit_predict_release(fit);
    fit_problem_release(fit);
    for (int i = 0; fit->names && i < fit->P; i++)
        rmi_free(fit->names[i]);
    rmi_free(fit->names);
    rmi_free(fit->vars.start);
    rmi_free(fit->vars.lo);
    rmi_free(fit->vars.hi);
    rmi_free(fit->vars.logscale);
    rmi_free(fit->vars.fixed);
    rmi_free(fit->vars.free_idx);
    rmi_free(fit->vars.tlo);
    rmi_free(fit->vars.thi);
    rmi_free(fit->vars.map);
    rmi_free(fit->vars.x0);
    rmi_free(fit->cond_default);
    rmi_free(fit->knots);
    rmi_free(fit);
}

remat_status remat_fit_new(const remat_mechanism *m, int n_data, remat_dataset *const *data,
                           const remat_fit_options *opt, remat_fit **out)
{
    if (!out)
        return rmi_error(REMAT_ERR_NULL, "fit: output pointer is NULL");
    *out = NULL;
    remat_status st = check_options(m, n_data, data, opt);
    if (st != REMAT_OK)
        return st;
    struct remat_fit *fit = rmi_calloc(1, sizeof *fit);
    if (!fit) { /* the others' first agreement below is this one */
        st = rmi_error(REMAT_ERR_NOMEM, "fit: out of memory");
        return fit_agree(opt->dist, st);
    }
    fit->m = m;
    fit->S = remat_mechanism_species_count(m);
    fit->P = remat_mechanism_param_count(m);
    fit->E = n_data;
    fit->C = remat_mechanism_cond_count(m);
    fit->opt = *opt;
    st = setup_params(fit);
    /* a gas mechanism's pressure: each experiment's own while it is fixed */
    int iP = remat_gas_species_count(m) > 0 ? remat_mechanism_param_find(m, "P") : -1;
    fit->iP = iP >= 0 && st == REMAT_OK && fit->vars.fixed[iP] ? iP : -1;
    fit->CI = fit->C + (fit->iP >= 0);
    if (st == REMAT_OK && !(fit->cond_default = rmi_malloc(sizeof *fit->cond_default * (size_t)(fit->C + 1))))
        st = rmi_error(REMAT_ERR_NOMEM, "fit: out of memory");
    for (int k = 0; st == REMAT_OK && k < fit->C; k++)
        fit->cond_default[k] = opt->conds ? opt->conds[k] : remat_mechanism_cond_value(m, k);
    /* adaptive steps end on the control profiles' knots (fit_ode_options) */
    fit->nknots = opt->adaptive ? remat_mechanism_control_knots(m, NULL, 0) : 0;
    if (st == REMAT_OK && fit->nknots > 0 && !(fit->knots = rmi_malloc(sizeof *fit->knots * (size_t)fit->nknots)))
        st = rmi_error(REMAT_ERR_NOMEM, "fit: out of memory");
    if (st == REMAT_OK && fit->nknots > 0)
        remat_mechanism_control_knots(m, fit->knots, fit->nknots);
    /* with a group: every rank goes on, or none (a rank that failed alone,
     * out of memory, say, must not leave the others in a collective) */
    st = fit_agree(opt->dist, st);
    bool together = st == REMAT_OK; /* the same on every rank */
    if (st == REMAT_OK)
        st = fit_problem_init(fit, data);
    if (together)
        st = fit_agree(opt->dist, st);
    /* the caller's arrays are read only here */
    fit->opt.y0 = NULL;
    fit->opt.start = NULL;
    fit->opt.scale = NULL;
    fit->opt.fixed = NULL;
    fit->opt.sigma = NULL;
    fit->opt.conds = NULL;
    if (st != REMAT_OK) {
        release(fit);
        return st;
    }
    *out = fit;
    return REMAT_OK;
}

void remat_fit_free(remat_fit *fit)
{
    if (fit)
        release(fit);
}

const char *fit_driver_name(const struct remat_fit *fit)
{
    switch (fit->optimizer) {
    case REMAT_FIT_LM: return "lm";
    case REMAT_FIT_ADAM: return "adam";
    case REMAT_FIT_LBFGSB: return "lbfgs-b";
    default: return "bfgs";
    }
}

remat_status fit_run_single(remat_fit *fit, remat_fit_result *result)
{
    memset(result, 0, sizeof *result);
    int P = fit->P;
    remat_fit_result *r = result;
    r->n_params = P;
    r->optimizer = fit_driver_name(fit);
    r->jacobian = fit->optimizer == REMAT_FIT_LM ? remat_fit_jacobian_name(fit->jac_mode) : NULL;
    r->n_residuals = fit->n_res;
    r->params = rmi_calloc((size_t)P, sizeof *r->params);
    r->param_names = rmi_calloc((size_t)P, sizeof *r->param_names);
    const remat_fit_options *o = &fit->opt;
    fit_run run = {.obj = &fit->obj,
                   .vars = &fit->vars,
                   .names = (const char *const *)fit->names,
                   .res = r,
                   .n = fit->vars.n_free,
                   .lr = o->lr,
                   .lm_more_scaling = o->lm_more_scaling,
                   .progress = o->progress,
                   .progress_ctx = o->progress_ctx};
    run.p = rmi_calloc((size_t)P, sizeof *run.p);
    run.gp = rmi_calloc((size_t)P, sizeof *run.gp);
    remat_status st = REMAT_OK;
    if (!r->params || !r->param_names || !run.p || !run.gp)
        st = rmi_error(REMAT_ERR_NOMEM, "fit: out of memory");
    for (int i = 0; st == REMAT_OK && i < P; i++)
        if (!(r->param_names[i] = rmi_strdup(fit->names[i])))
            st = rmi_error(REMAT_ERR_NOMEM, "fit: out of memory");
    st = fit_agree(fit->group, st); /* before the driver's collectives: every rank goes on, or none */
    if (st != REMAT_OK) {
        snprintf(r->message, sizeof r->message, "%s", remat_last_error());
        rmi_free(run.p);
        rmi_free(run.gp);
        return st;
    }
    memcpy(r->params, fit->vars.start, sizeof *r->params * (size_t)P);
    r->objective = NAN;
    static const int default_iters[REMAT_FIT_OPTIMIZER_COUNT] = {
        [REMAT_FIT_LM] = 200, [REMAT_FIT_BFGS] = 500, [REMAT_FIT_ADAM] = 5000, [REMAT_FIT_LBFGSB] = 2000};
    run.max_iters = o->max_iters > 0 ? o->max_iters : default_iters[fit->optimizer];
    run.xtol = o->xtol > 0 ? o->xtol : 1e-12;
    run.gtol = o->gtol > 0 ? o->gtol : 1e-12;
    run.ftol = o->ftol > 0 ? o->ftol : 1e-15;
    int64_t evals0 = fit->evals;
    switch (fit->optimizer) {
    case REMAT_FIT_LM: st = fit_opt_lm(&run); break;
    case REMAT_FIT_ADAM: st = fit_opt_adam(&run); break;
    case REMAT_FIT_LBFGSB: st = fit_opt_nlopt(&run); break;
    default: st = fit_opt_bfgs(&run); break;
    }
    r->evaluations = fit->evals - evals0;
    if (st != REMAT_OK)
        rmi_error(st, "%s", r->message); /* the message of record, whatever ran after it */
    rmi_free(run.p);
    rmi_free(run.gp);
    return st;
}

remat_status remat_fit_run_once(const remat_mechanism *m, int n_data, remat_dataset *const *data,
                                const remat_fit_options *opt, remat_fit_result *result)
{
    if (!result)
        return rmi_error(REMAT_ERR_NULL, "fit: result is NULL");
    memset(result, 0, sizeof *result);
    remat_fit *fit;
    remat_status st = remat_fit_new(m, n_data, data, opt, &fit);
    if (st != REMAT_OK) {
        snprintf(result->message, sizeof result->message, "%s", remat_last_error());
        return st;
    }
    st = remat_fit_run(fit, result);
    remat_fit_free(fit);
    return st;
}

/*
 * reactor.c — a plug-flow reactor on top of remat/ode.h (see remat/pfr.h):
 * the options checked, the reactor made and freed, and the public calls that
 * run its programs (built on first use: programs.c) and check what they give
 * (diagnose.c).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "models/pfr/pfr_impl.h"

#define DEFAULT_PROFILE_POINTS 100

/* the integration over [0, L] (*L) the options ask for */
remat_ode_options pfr_ode_options(const remat_pfr_options *o, const double *L)
{
    return (remat_ode_options){.method = o->method, .n_times = 1, .times = L, .dt = o->dt, .steps = o->steps,
                               .scan = {.schedule = o->schedule}, .adaptive = o->adaptive, .rtol = o->rtol,
                               .atol = o->atol, .max_steps = o->max_steps, .adjoint = o->adjoint};
}

/* adaptive options are checked where the ODE module checks them: building
 * the integration once, into a throw-away function */
static remat_status check_adaptive(const remat_mechanism *m, const remat_ode_options *oo)
{
    int64_t S = remat_mechanism_species_count(m), P = remat_mechanism_input_count(m);
    remat_fn *f = remat_fn_new("pfr_check");
    if (!f)
        return rmi_error(REMAT_ERR_NOMEM, "pfr: out of memory");
    remat_val y0 = remat_arg(f, "inlet", REMAT_F64, 1, &S), ys;
    remat_val p = P ? remat_arg(f, "params", REMAT_F64, 1, &P) : REMAT_NONE;
    remat_status st = remat_ode_integrate(f, m, oo, y0, p, &ys);
    remat_fn_free(f);
    if (st != REMAT_OK) {
        char why[512];
        snprintf(why, sizeof why, "%s", remat_last_error());
        st = rmi_error(st, "pfr: %s", why);
    }
    return st;
}

remat_status remat_pfr_new(const remat_mechanism *m, const remat_pfr_options *opt, remat_pfr **out)
{
    if (!out)
        return rmi_error(REMAT_ERR_NULL, "pfr: output pointer is NULL");
    *out = NULL;
    if (!m || !opt)
        return rmi_error(REMAT_ERR_NULL, "pfr: %s is NULL", !m ? "the mechanism" : "the options");
    int S = remat_mechanism_species_count(m), P = remat_mechanism_param_count(m);
    if (!remat_ode_method_order(opt->method))
        return rmi_error(REMAT_ERR_ARG, "pfr: unknown integration method %d", (int)opt->method);
    if (!(opt->length > 0 && isfinite(opt->length)))
        return rmi_error(REMAT_ERR_VALUE, "pfr: the reactor length %g must be positive and finite", opt->length);
    if (opt->adaptive && (opt->steps != 0 || opt->dt != 0))
        return rmi_error(REMAT_ERR_ARG, "pfr: adaptive stepping chooses its steps: give no steps (%lld) or dt (%g)",
                         (long long)opt->steps, opt->dt);
    if (opt->adaptive && opt->profile_points < 0)
        return rmi_error(REMAT_ERR_VALUE, "pfr: profile_points = %lld is negative", (long long)opt->profile_points);
    if (!opt->adaptive && opt->steps != 0 && opt->dt != 0)
        return rmi_error(REMAT_ERR_ARG, "pfr: give either steps (%lld) or dt (%g), not both",
                         (long long)opt->steps, opt->dt);
    if (!opt->adaptive && (opt->steps < 0 || (opt->steps == 0 && !(opt->dt > 0 && isfinite(opt->dt)))))
        return rmi_error(REMAT_ERR_VALUE, "pfr: needs steps >= 1 or a positive finite dt (steps %lld, dt %g)",
                         (long long)opt->steps, opt->dt);
    if (!opt->inlet)
        return rmi_error(REMAT_ERR_NULL, "pfr: the inlet concentrations are NULL");
    for (int s = 0; s < S; s++)
        if (!isfinite(opt->inlet[s]))
            return rmi_error(REMAT_ERR_VALUE, "pfr: the inlet concentration of '%s' is %g",
                             remat_mechanism_species_name(m, s), opt->inlet[s]);
    for (int c = 0; opt->conds && c < remat_mechanism_cond_count(m); c++)
        if (!isfinite(opt->conds[c]))
            return rmi_error(REMAT_ERR_VALUE, "pfr: condition '%s' is %g", remat_mechanism_cond_name(m, c),
                             opt->conds[c]);
    if (opt->goal != REMAT_PFR_NO_GOAL && opt->goal != REMAT_PFR_MAXIMIZE && opt->goal != REMAT_PFR_MINIMIZE)
        return rmi_error(REMAT_ERR_ARG, "pfr: unknown goal %d", (int)opt->goal);
    if (opt->goal != REMAT_PFR_NO_GOAL && (opt->species < 0 || opt->species >= S))
        return rmi_error(REMAT_ERR_ARG, "pfr: objective species %d is not one of the %d species of %s",
                         opt->species, S, remat_mechanism_source(m));
    if ((unsigned)opt->adjoint >= REMAT_ODE_ADJOINT_COUNT)
        return rmi_error(REMAT_ERR_ARG, "pfr: unknown adjoint %d (expected discrete, backsolve or interpolating)", (int)opt->adjoint);
    remat_schedule_cost cost;
    remat_status st = remat_schedule_predict(&opt->schedule, 1, &cost);
    if (st != REMAT_OK)
        return st;
    double L = opt->length;
    remat_ode_options oo = pfr_ode_options(opt, &L);
    int64_t n = opt->profile_points ? opt->profile_points : DEFAULT_PROFILE_POINTS;
    if (opt->adaptive)
        st = check_adaptive(m, &oo);
    else
        st = remat_ode_count_steps(&oo, NULL, &n);
    if (st != REMAT_OK)
        return st;
    int PI = remat_mechanism_input_count(m);
    remat_pfr *r = rmi_calloc(1, sizeof *r);
    if (!r || !(r->inlet = rmi_malloc(sizeof *r->inlet * (size_t)(S ? S : 1))) ||
        !(r->in = rmi_malloc(sizeof *r->in * (size_t)(PI ? PI : 1)))) {
        if (r)
            rmi_free(r->inlet);
        rmi_free(r);
        return rmi_error(REMAT_ERR_NOMEM, "pfr: out of memory");
    }
    for (int c = P; c < PI; c++)
        r->in[c] = opt->conds ? opt->conds[c - P] : remat_mechanism_cond_value(m, c - P);
    memcpy(r->inlet, opt->inlet, sizeof *r->inlet * (size_t)S);
    r->m = m;
    r->opt = *opt;
    r->opt.inlet = r->inlet;
    r->opt.conds = NULL; /* copied into r->in */
    r->S = S;
    r->P = P;
    r->PI = PI;
    r->steps = n; /* adaptive: the profile's intervals */
    r->h = L / (double)n; /* remat_ode_integrate's h for one interval from 0 */
    *out = r;
    return REMAT_OK;
}

void remat_pfr_free(remat_pfr *r)
{
    if (!r)
        return;
    remat_program_free(r->outlet);
    remat_program_free(r->profile);
    remat_program_free(r->objective);
    remat_fn_free(r->outlet_fn);
    remat_fn_free(r->profile_fn);
    remat_fn_free(r->objective_fn);
    rmi_free(r->inlet);
    rmi_free(r->in);
    rmi_free(r);
}

const remat_mechanism *remat_pfr_mechanism(const remat_pfr *r)
{
    REMAT_NULL_RETURN(r, NULL);
    return r->m;
}

int64_t remat_pfr_steps(const remat_pfr *r)
{
    REMAT_NULL_RETURN(r, -1);
    return r->steps;
}

double remat_pfr_step_size(const remat_pfr *r)
{
    REMAT_NULL_RETURN(r, NAN);
    return r->h;
}

remat_status pfr_compile(const remat_pfr_options *o, const remat_fn *f, remat_program **out)
{
    return o->compile ? remat_compile_opts(f, NULL, o->compile, out) : remat_compile_env(f, out);
}

remat_status pfr_run(remat_program *prog, const remat_pfr *r, const double *params, int n_out,
                     double *const *out)
{
    remat_tensor in[2], o[2];
    int n_in = remat_program_num_inputs(prog);
    in[0] = remat_program_input_desc(prog, 0);
    in[0].data = r->inlet;
    if (n_in > 1) {
        in[1] = remat_program_input_desc(prog, 1);
        in[1].data = (double *)params;
    }
    for (int i = 0; i < n_out; i++) {
        o[i] = remat_program_output_desc(prog, i);
        o[i].data = out[i];
    }
    return remat_run(prog, n_in, in, n_out, o, NULL);
}

remat_status pfr_inputs(remat_pfr *r, const double *params)
{
    if (r->P && !params)
        return rmi_error(REMAT_ERR_NULL, "pfr: params are NULL (%s has %d parameters)",
                         remat_mechanism_source(r->m), r->P);
    for (int i = 0; i < r->P; i++)
        if (!isfinite(params[i]))
            return rmi_error(REMAT_ERR_VALUE, "pfr: parameter '%s' is %g", remat_mechanism_param_name(r->m, i),
                             params[i]);
    if (r->P && params != r->in)
        memcpy(r->in, params, sizeof *params * (size_t)r->P);
    return REMAT_OK;
}

remat_status remat_pfr_outlet(remat_pfr *r, const double params[], double outlet[])
{
    if (!r || !outlet)
        return rmi_error(REMAT_ERR_NULL, "pfr outlet: %s is NULL", !r ? "the reactor" : "the output");
    remat_status st = pfr_inputs(r, params);
    if (st == REMAT_OK)
        st = pfr_check_step(r, r->in);
    if (st == REMAT_OK && !r->outlet)
        st = pfr_build_outlet(r);
    if (st == REMAT_OK)
        st = pfr_run(r->outlet, r, r->in, 1, (double *[]){outlet});
    return st == REMAT_OK ? pfr_check_finite(r, r->in, outlet) : st;
}

remat_status remat_pfr_profile(remat_pfr *r, const double params[], double z[], double y[])
{
    if (!r || !y)
        return rmi_error(REMAT_ERR_NULL, "pfr profile: %s is NULL", !r ? "the reactor" : "the output");
    remat_status st = pfr_inputs(r, params);
    if (st == REMAT_OK)
        st = pfr_check_step(r, r->in);
    if (st == REMAT_OK && !r->profile)
        st = pfr_build_profile(r);
    if (st == REMAT_OK)
        st = pfr_run(r->profile, r, r->in, 1, (double *[]){y + r->S});
    if (st != REMAT_OK)
        return st;
    memcpy(y, r->inlet, sizeof *y * (size_t)r->S);
    if (z)
        for (int64_t i = 0; i <= r->steps; i++)
            z[i] = (double)i * r->h;
    return pfr_check_finite(r, r->in, y + (size_t)r->steps * (size_t)r->S);
}

remat_status remat_pfr_objective(remat_pfr *r, const double params[], double *objective, double grad[])
{
    if (!r || !objective)
        return rmi_error(REMAT_ERR_NULL, "pfr objective: %s is NULL", !r ? "the reactor" : "the output");
    if (r->opt.goal == REMAT_PFR_NO_GOAL)
        return rmi_error(REMAT_ERR_ARG, "pfr objective: the reactor has no goal (maximize or minimize a species)");
    remat_status st = pfr_inputs(r, params);
    if (st == REMAT_OK)
        st = pfr_check_step(r, r->in);
    if (st == REMAT_OK && !r->objective)
        st = pfr_build_objective(r);
    if (st != REMAT_OK)
        return st;
    double *g = NULL; /* d/d(params and conditions) */
    if (r->P && !(g = rmi_malloc(sizeof *g * (size_t)r->PI)))
        return rmi_error(REMAT_ERR_NOMEM, "pfr: out of memory");
    st = pfr_run(r->objective, r, r->in, r->P ? 2 : 1, (double *[]){objective, g});
    if (st == REMAT_OK && grad && r->P)
        memcpy(grad, g, sizeof *grad * (size_t)r->P);
    rmi_free(g);
    remat_status why = st == REMAT_OK && !isfinite(*objective) ? pfr_adaptive_failure(r, r->in) : REMAT_OK;
    if (why != REMAT_OK)
        st = why;
    else if (st == REMAT_OK && !isfinite(*objective) && pfr_hopeless(r, r->in) != REMAT_OK)
        st = REMAT_ERR_NUMERIC;
    else if (st == REMAT_OK && !isfinite(*objective))
        st = rmi_error(REMAT_ERR_NUMERIC,
                       "pfr: %s: the outlet concentration of '%s' is %g — the integration is unstable at step "
                       "size %g (%s, %lld steps); take more steps or a higher-order method",
                       remat_mechanism_source(r->m), remat_mechanism_species_name(r->m, r->opt.species),
                       *objective, r->h, remat_ode_method_name(r->opt.method), (long long)r->steps);
    return st;
}

const char *remat_pfr_species_role(const remat_mechanism *m, int species)
{
    REMAT_NULL_RETURN(m, NULL);
    int formed = 0, consumed = 0;
    for (int k = 0; k < remat_mechanism_reaction_count(m); k++) {
        double nu = remat_mechanism_reaction_stoich(m, k, species);
        formed |= nu > 0;
        consumed |= nu < 0;
    }
    return formed && consumed ? "intermediate" : formed ? "product" : consumed ? "reactant" : "";
}

/*
 * reactor.c — a plug-flow reactor on top of remat/ode.h (see remat/pfr.h).
 *
 * Three programs, each compiled the first time it is asked for:
 *   outlet:    (inlet, params) -> C(L)                    remat_ode_integrate, forward only
 *   profile:   (inlet, params) -> C(z_1..z_n) stacked     one scan whose ys are the states
 *   objective: (inlet, params) -> (±C_s(L), d/dparams)    value_and_grad of the outlet
 * The profile's step is built exactly as remat_ode_integrate builds its
 * interval step (t = t_start + j*h from a step counter carried beside y,
 * when the rates read t), so its last row is the outlet bit for bit.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "remat/exec.h"
#include "remat/pfr.h"

struct remat_pfr {
    const remat_mechanism *m;
    remat_pfr_options opt;
    double *inlet;
    int S, P;
    int64_t steps;
    double h;
    remat_program *outlet, *profile, *objective;
    /* the functions they were compiled from: a program reads its scan nodes'
     * data, which the function owns, so each function lives as long as its
     * program */
    remat_fn *outlet_fn, *profile_fn, *objective_fn;
};

#define DEFAULT_PROFILE_POINTS 100

static remat_status run(remat_program *prog, const remat_pfr *r, const double *params, int n_out, double *const *out);
static remat_status check_params(const remat_pfr *r, const double *params);

/* the integration over [0, L] (*L) the options ask for */
static remat_ode_options ode_options(const remat_pfr_options *o, const double *L)
{
    return (remat_ode_options){.method = o->method, .n_times = 1, .times = L, .dt = o->dt, .steps = o->steps,
                               .scan = {.schedule = o->schedule}, .adaptive = o->adaptive, .rtol = o->rtol,
                               .atol = o->atol, .max_steps = o->max_steps};
}

/* adaptive options are checked where the ODE module checks them: building
 * the integration once, into a throw-away function */
static remat_status check_adaptive(const remat_mechanism *m, const remat_ode_options *oo)
{
    int64_t S = remat_mechanism_species_count(m), P = remat_mechanism_param_count(m);
    remat_fn *f = remat_fn_new("pfr_check");
    if (!f)
        return remat_error(REMAT_ERR_NOMEM, "pfr: out of memory");
    remat_val y0 = remat_arg(f, "inlet", REMAT_F64, 1, &S), ys;
    remat_val p = P ? remat_arg(f, "params", REMAT_F64, 1, &P) : REMAT_NONE;
    remat_status st = remat_ode_integrate(f, m, oo, y0, p, &ys);
    remat_fn_free(f);
    if (st != REMAT_OK) {
        char why[512];
        snprintf(why, sizeof why, "%s", remat_last_error());
        st = remat_error(st, "pfr: %s", why);
    }
    return st;
}

remat_status remat_pfr_new(const remat_mechanism *m, const remat_pfr_options *opt, remat_pfr **out)
{
    if (!out)
        return remat_error(REMAT_ERR_NULL, "pfr: output pointer is NULL");
    *out = NULL;
    if (!m || !opt)
        return remat_error(REMAT_ERR_NULL, "pfr: %s is NULL", !m ? "the mechanism" : "the options");
    int S = remat_mechanism_species_count(m), P = remat_mechanism_param_count(m);
    if (!remat_ode_method_order(opt->method))
        return remat_error(REMAT_ERR_ARG, "pfr: unknown integration method %d", (int)opt->method);
    if (!(opt->length > 0 && isfinite(opt->length)))
        return remat_error(REMAT_ERR_VALUE, "pfr: the reactor length %g must be positive and finite", opt->length);
    if (opt->adaptive && (opt->steps != 0 || opt->dt != 0))
        return remat_error(REMAT_ERR_ARG, "pfr: adaptive stepping chooses its steps: give no steps (%lld) or dt (%g)",
                           (long long)opt->steps, opt->dt);
    if (opt->adaptive && opt->profile_points < 0)
        return remat_error(REMAT_ERR_VALUE, "pfr: profile_points = %lld is negative", (long long)opt->profile_points);
    if (!opt->adaptive && opt->steps != 0 && opt->dt != 0)
        return remat_error(REMAT_ERR_ARG, "pfr: give either steps (%lld) or dt (%g), not both",
                           (long long)opt->steps, opt->dt);
    if (!opt->adaptive && (opt->steps < 0 || (opt->steps == 0 && !(opt->dt > 0 && isfinite(opt->dt)))))
        return remat_error(REMAT_ERR_VALUE, "pfr: needs steps >= 1 or a positive finite dt (steps %lld, dt %g)",
                           (long long)opt->steps, opt->dt);
    if (!opt->inlet)
        return remat_error(REMAT_ERR_NULL, "pfr: the inlet concentrations are NULL");
    for (int s = 0; s < S; s++)
        if (!isfinite(opt->inlet[s]))
            return remat_error(REMAT_ERR_VALUE, "pfr: the inlet concentration of '%s' is %g",
                               remat_mechanism_species_name(m, s), opt->inlet[s]);
    if (opt->goal != REMAT_PFR_NO_GOAL && opt->goal != REMAT_PFR_MAXIMIZE && opt->goal != REMAT_PFR_MINIMIZE)
        return remat_error(REMAT_ERR_ARG, "pfr: unknown goal %d", (int)opt->goal);
    if (opt->goal != REMAT_PFR_NO_GOAL && (opt->species < 0 || opt->species >= S))
        return remat_error(REMAT_ERR_ARG, "pfr: objective species %d is not one of the %d species of %s",
                           opt->species, S, remat_mechanism_source(m));
    remat_schedule_cost cost;
    remat_status st = remat_schedule_predict(&opt->schedule, 1, &cost);
    if (st != REMAT_OK)
        return st;
    double L = opt->length;
    remat_ode_options oo = ode_options(opt, &L);
    int64_t n = opt->profile_points ? opt->profile_points : DEFAULT_PROFILE_POINTS;
    if (opt->adaptive)
        st = check_adaptive(m, &oo);
    else
        st = remat_ode_count_steps(&oo, NULL, &n);
    if (st != REMAT_OK)
        return st;
    remat_pfr *r = calloc(1, sizeof *r);
    if (!r || !(r->inlet = malloc(sizeof *r->inlet * (size_t)(S ? S : 1)))) {
        free(r);
        return remat_error(REMAT_ERR_NOMEM, "pfr: out of memory");
    }
    memcpy(r->inlet, opt->inlet, sizeof *r->inlet * (size_t)S);
    r->m = m;
    r->opt = *opt;
    r->opt.inlet = r->inlet;
    r->S = S;
    r->P = P;
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
    free(r->inlet);
    free(r);
}

const remat_mechanism *remat_pfr_mechanism(const remat_pfr *r) { return r->m; }
int64_t remat_pfr_steps(const remat_pfr *r) { return r->steps; }
double remat_pfr_step_size(const remat_pfr *r) { return r->h; }

/* f(inlet (S,), params (P,)) with the arguments declared; params is
 * REMAT_NONE when the mechanism has none. */
static remat_fn *new_fn(const remat_pfr *r, const char *name, remat_val *y0, remat_val *p)
{
    remat_fn *f = remat_fn_new(name);
    if (!f)
        return NULL;
    int64_t S = r->S, P = r->P;
    *y0 = remat_arg(f, "inlet", REMAT_F64, 1, &S);
    *p = P ? remat_arg(f, "params", REMAT_F64, 1, &P) : REMAT_NONE;
    return f;
}

/* Compiles f into *prog, keeping f in *keep (see struct remat_pfr); frees f on error. */
static remat_status finish(remat_fn *f, remat_status st, remat_program **prog, remat_fn **keep)
{
    if (st == REMAT_OK && remat_fn_status(f) != REMAT_OK)
        st = remat_error(remat_fn_status(f), "pfr: %s", remat_fn_error(f));
    remat_backend *be = NULL;
    if (st == REMAT_OK)
        st = remat_backend_from_env(&be);
    if (st == REMAT_OK)
        st = remat_compile(f, be, prog);
    if (st == REMAT_OK)
        *keep = f;
    else
        remat_fn_free(f);
    return st;
}

/* C(L): (S,) */
static remat_status outlet_value(const remat_pfr *r, remat_fn *f, remat_val y0, remat_val p, remat_val *c)
{
    double L = r->opt.length;
    remat_ode_options oo = ode_options(&r->opt, &L);
    remat_val ys;
    remat_status st = remat_ode_integrate(f, r->m, &oo, y0, p, &ys);
    *c = st == REMAT_OK ? remat_index(f, ys, 0) : REMAT_NONE;
    return st;
}

/* adaptive: C(z_1..z_n), one integration through the profile points */
static remat_status build_adaptive_profile(remat_pfr *r)
{
    double *z = malloc(sizeof *z * (size_t)r->steps);
    if (!z)
        return remat_error(REMAT_ERR_NOMEM, "pfr: out of memory");
    for (int64_t i = 0; i < r->steps; i++)
        z[i] = i + 1 == r->steps ? r->opt.length : (double)(i + 1) * r->h;
    remat_ode_options oo = ode_options(&r->opt, &r->opt.length);
    oo.n_times = (int)r->steps;
    oo.times = z;
    remat_val y0, p, ys;
    remat_fn *f = new_fn(r, "pfr_profile", &y0, &p);
    remat_status st = f ? remat_ode_integrate(f, r->m, &oo, y0, p, &ys) : remat_error(REMAT_ERR_NOMEM, "pfr: out of memory");
    free(z);
    if (!f)
        return st;
    if (st == REMAT_OK)
        remat_fn_output(f, ys);
    return finish(f, st, &r->profile, &r->profile_fn);
}

remat_status remat_pfr_integration_stats(remat_pfr *r, const double params[], double stats[REMAT_ODE_STATS])
{
    if (!r || !stats)
        return remat_error(REMAT_ERR_NULL, "pfr stats: %s is NULL", !r ? "the reactor" : "the output");
    remat_status st = check_params(r, params);
    if (st != REMAT_OK)
        return st;
    double L = r->opt.length;
    remat_ode_options oo = ode_options(&r->opt, &L);
    oo.scan = (remat_scan_options){0};
    remat_val y0, p, ys, sv;
    remat_fn *f = new_fn(r, "pfr_stats", &y0, &p);
    if (!f)
        return remat_error(REMAT_ERR_NOMEM, "pfr: out of memory");
    remat_program *prog = NULL;
    st = remat_ode_integrate_stats(f, r->m, &oo, y0, p, &ys, &sv);
    if (st == REMAT_OK) {
        remat_fn_output(f, sv);
        st = remat_compile(f, remat_backend_cpu(), &prog);
    }
    if (st == REMAT_OK)
        st = run(prog, r, params, 1, (double *[]){stats});
    remat_program_free(prog);
    remat_fn_free(f);
    return st;
}

static remat_status build_outlet(remat_pfr *r)
{
    remat_val y0, p, c;
    remat_fn *f = new_fn(r, "pfr_outlet", &y0, &p);
    if (!f)
        return remat_error(REMAT_ERR_NOMEM, "pfr: out of memory");
    remat_status st = outlet_value(r, f, y0, p, &c);
    if (st == REMAT_OK)
        remat_fn_output(f, c);
    return finish(f, st, &r->outlet, &r->outlet_fn);
}

static remat_status build_objective(remat_pfr *r)
{
    remat_val y0, p, c;
    remat_fn *f = new_fn(r, "pfr_objective", &y0, &p), *vg = NULL;
    if (!f)
        return remat_error(REMAT_ERR_NOMEM, "pfr: out of memory");
    remat_status st = outlet_value(r, f, y0, p, &c);
    if (st == REMAT_OK) {
        remat_val cs = remat_index(f, c, r->opt.species);
        remat_fn_output(f, r->opt.goal == REMAT_PFR_MAXIMIZE ? remat_neg(f, cs) : cs);
        if (remat_fn_status(f) != REMAT_OK)
            st = remat_error(remat_fn_status(f), "pfr: %s", remat_fn_error(f));
    }
    if (st == REMAT_OK && r->P) {
        st = remat_value_and_grad(f, 1, (const int[]){1}, &vg);
        remat_fn_free(f);
        f = vg;
    }
    return finish(f, st, &r->objective, &r->objective_fn);
}

/* body(y, [j,] [t_start,] h, [params]) -> (y', [j + 1,] y'): remat_ode_integrate's
 * interval step with the state also emitted as the scan's per-step output */
static remat_status build_profile(remat_pfr *r)
{
    if (r->opt.adaptive)
        return build_adaptive_profile(r);
    int timed = remat_kinetics_uses_indep(r->m);
    int64_t S = r->S, P = r->P;
    remat_fn *b = remat_fn_new("pfr_profile_step");
    if (!b)
        return remat_error(REMAT_ERR_NOMEM, "pfr: out of memory");
    remat_val y = remat_arg(b, "y", REMAT_F64, 1, &S);
    remat_val j = timed ? remat_arg(b, "step", REMAT_F64, 0, NULL) : REMAT_NONE;
    remat_val t0 = timed ? remat_arg(b, "t_start", REMAT_F64, 0, NULL) : REMAT_NONE;
    remat_val h = remat_arg(b, "h", REMAT_F64, 0, NULL);
    remat_val p = P ? remat_arg(b, "params", REMAT_F64, 1, &P) : REMAT_NONE;
    remat_val t = timed ? remat_add(b, t0, remat_mul(b, j, h)) : REMAT_NONE, y1;
    remat_status st = remat_ode_step(b, r->m, r->opt.method, t, h, y, p, &y1);
    if (st == REMAT_OK) {
        remat_fn_output(b, y1);
        if (timed)
            remat_fn_output(b, remat_add_scalar(b, j, 1.0));
        remat_fn_output(b, y1);
        if (remat_fn_status(b) != REMAT_OK)
            st = remat_error(remat_fn_status(b), "pfr: profile step: %s", remat_fn_error(b));
    }
    if (st != REMAT_OK) {
        remat_fn_free(b);
        return st;
    }
    remat_val y0, pa;
    remat_fn *f = new_fn(r, "pfr_profile", &y0, &pa);
    if (!f) {
        remat_fn_free(b);
        return remat_error(REMAT_ERR_NOMEM, "pfr: out of memory");
    }
    remat_val init[2] = {y0, remat_scalar(f, REMAT_F64, 0.0)}, consts[3], carry[2], ys;
    int nc = 0;
    if (timed)
        consts[nc++] = remat_scalar(f, REMAT_F64, 0.0);
    consts[nc++] = remat_scalar(f, REMAT_F64, r->h);
    if (P)
        consts[nc++] = pa;
    st = remat_scan(f, b, r->steps, timed ? 2 : 1, init, 0, NULL, nc, consts, NULL, carry, &ys);
    remat_fn_free(b);
    if (st == REMAT_OK)
        remat_fn_output(f, ys);
    return finish(f, st, &r->profile, &r->profile_fn);
}

static remat_status run(remat_program *prog, const remat_pfr *r, const double *params, int n_out, double *const *out)
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

static remat_status check_params(const remat_pfr *r, const double *params)
{
    if (r->P && !params)
        return remat_error(REMAT_ERR_NULL, "pfr: params are NULL (%s has %d parameters)",
                           remat_mechanism_source(r->m), r->P);
    for (int i = 0; i < r->P; i++)
        if (!isfinite(params[i]))
            return remat_error(REMAT_ERR_VALUE, "pfr: parameter '%s' is %g", remat_mechanism_param_name(r->m, i),
                               params[i]);
    return REMAT_OK;
}

/* Why the integration gave a value that is not finite, when more steps
 * cannot help: a rate that cannot be computed at the inlet (the mechanism
 * names the expression), or rates so fast against the inlet concentrations
 * that a stable explicit method would need more than 2^53 steps (a param of
 * 1e308). REMAT_OK when neither: the steps are too large. */
static remat_status hopeless(const remat_pfr *r, const double *params)
{
    if (remat_mechanism_check_rates(r->m, 0.0, r->inlet, params) != REMAT_OK)
        return REMAT_ERR_NUMERIC;
    double *f = malloc(sizeof *f * (size_t)r->S), scale = 0, rate = 0;
    int fastest = 0;
    if (!f || remat_mechanism_eval_rhs(r->m, 0.0, r->inlet, params, f) != REMAT_OK) {
        free(f);
        return REMAT_OK; /* nothing more to say than the caller's message */
    }
    for (int s = 0; s < r->S; s++) {
        scale = fmax(scale, fabs(r->inlet[s]));
        if (fabs(f[s]) > rate)
            rate = fabs(f[s]), fastest = s;
    }
    double length = r->h * (double)r->steps, need = scale > 0 ? rate / scale * length : 0;
    remat_status st = REMAT_OK;
    char about[48];
    snprintf(about, sizeof about, isfinite(need) ? "about %.2g" : "more than 1e308", need);
    if (need > 0x1p53)
        st = remat_error(REMAT_ERR_NUMERIC,
                         "pfr: %s: d%s/d%s is %g at the inlet: over a reactor of length %g a stable explicit "
                         "method would need %s steps, more than can be taken (2^53); check the parameter values",
                         remat_mechanism_source(r->m), remat_mechanism_species_name(r->m, fastest),
                         remat_mechanism_indep_name(r->m), f[fastest], length, about);
    free(f);
    return st;
}

/* An adaptive integration that produced a non-finite value: its own reason
 * (max_steps, stiffness) as REMAT_ERR_NUMERIC, after a rate that cannot be
 * computed (hopeless); REMAT_OK when neither says why. */
static remat_status adaptive_failure(remat_pfr *r, const double *params)
{
    double stats[REMAT_ODE_STATS];
    double L = r->opt.length;
    remat_ode_options oo = ode_options(&r->opt, &L);
    if (!r->opt.adaptive)
        return REMAT_OK;
    if (hopeless(r, params) != REMAT_OK)
        return REMAT_ERR_NUMERIC;
    if (remat_pfr_integration_stats(r, params, stats) == REMAT_OK && remat_ode_stats_check(&oo, stats) != REMAT_OK) {
        char why[512];
        snprintf(why, sizeof why, "%s", remat_last_error());
        return remat_error(REMAT_ERR_NUMERIC, "pfr: %s: %s", remat_mechanism_source(r->m), why);
    }
    return REMAT_OK;
}

/* A concentration that is not finite: hopeless() says why when it can,
 * else the steps are too large for the rates. */
static remat_status check_finite(remat_pfr *r, const double *params, const double *c)
{
    int bad = 0;
    for (int s = 0; s < r->S; s++)
        bad |= !isfinite(c[s]);
    remat_status why = bad ? adaptive_failure(r, params) : REMAT_OK;
    if (why != REMAT_OK)
        return why;
    for (int s = 0; s < r->S; s++)
        if (!isfinite(c[s]))
            return hopeless(r, params) != REMAT_OK
                       ? REMAT_ERR_NUMERIC
                       : remat_error(REMAT_ERR_NUMERIC,
                               "pfr: %s: the concentration of '%s' is %g at the outlet — the integration is "
                               "unstable at step size %g (%s, %lld steps); take more steps or a higher-order method",
                               remat_mechanism_source(r->m), remat_mechanism_species_name(r->m, s), c[s], r->h,
                               remat_ode_method_name(r->opt.method), (long long)r->steps);
    return REMAT_OK;
}

remat_status remat_pfr_outlet(remat_pfr *r, const double params[], double outlet[])
{
    if (!r || !outlet)
        return remat_error(REMAT_ERR_NULL, "pfr outlet: %s is NULL", !r ? "the reactor" : "the output");
    remat_status st = check_params(r, params);
    if (st == REMAT_OK && !r->outlet)
        st = build_outlet(r);
    if (st == REMAT_OK)
        st = run(r->outlet, r, params, 1, (double *[]){outlet});
    return st == REMAT_OK ? check_finite(r, params, outlet) : st;
}

remat_status remat_pfr_profile(remat_pfr *r, const double params[], double z[], double y[])
{
    if (!r || !y)
        return remat_error(REMAT_ERR_NULL, "pfr profile: %s is NULL", !r ? "the reactor" : "the output");
    remat_status st = check_params(r, params);
    if (st == REMAT_OK && !r->profile)
        st = build_profile(r);
    if (st == REMAT_OK)
        st = run(r->profile, r, params, 1, (double *[]){y + r->S});
    if (st != REMAT_OK)
        return st;
    memcpy(y, r->inlet, sizeof *y * (size_t)r->S);
    if (z)
        for (int64_t i = 0; i <= r->steps; i++)
            z[i] = (double)i * r->h;
    return check_finite(r, params, y + (size_t)r->steps * (size_t)r->S);
}

remat_status remat_pfr_objective(remat_pfr *r, const double params[], double *objective, double grad[])
{
    if (!r || !objective)
        return remat_error(REMAT_ERR_NULL, "pfr objective: %s is NULL", !r ? "the reactor" : "the output");
    if (r->opt.goal == REMAT_PFR_NO_GOAL)
        return remat_error(REMAT_ERR_ARG, "pfr objective: the reactor has no goal (maximize or minimize a species)");
    remat_status st = check_params(r, params);
    if (st == REMAT_OK && !r->objective)
        st = build_objective(r);
    if (st != REMAT_OK)
        return st;
    double *g = grad;
    if (r->P && !g && !(g = malloc(sizeof *g * (size_t)r->P)))
        return remat_error(REMAT_ERR_NOMEM, "pfr: out of memory");
    st = run(r->objective, r, params, r->P ? 2 : 1, (double *[]){objective, g});
    if (g != grad)
        free(g);
    remat_status why = st == REMAT_OK && !isfinite(*objective) ? adaptive_failure(r, params) : REMAT_OK;
    if (why != REMAT_OK)
        st = why;
    else if (st == REMAT_OK && !isfinite(*objective) && hopeless(r, params) != REMAT_OK)
        st = REMAT_ERR_NUMERIC;
    else if (st == REMAT_OK && !isfinite(*objective))
        st = remat_error(REMAT_ERR_NUMERIC,
                         "pfr: %s: the outlet concentration of '%s' is %g — the integration is unstable at step "
                         "size %g (%s, %lld steps); take more steps or a higher-order method",
                         remat_mechanism_source(r->m), remat_mechanism_species_name(r->m, r->opt.species),
                         *objective, r->h, remat_ode_method_name(r->opt.method), (long long)r->steps);
    return st;
}

static double concentration(const remat_pfr *r, double objective)
{
    return r->opt.goal == REMAT_PFR_MAXIMIZE ? -objective : objective;
}

remat_status remat_pfr_adam(remat_pfr *r, const remat_adam_options *adam, int64_t iters, double params[],
                            double conc_before[], double params_after[], double *conc_final)
{
    if (!r || !adam || !params)
        return remat_error(REMAT_ERR_NULL, "pfr adam: %s is NULL",
                           !r ? "the reactor" : !adam ? "the options" : "params");
    if (r->P == 0)
        return remat_error(REMAT_ERR_ARG, "pfr adam: %s has no parameters to optimise", remat_mechanism_source(r->m));
    if (iters < 0)
        return remat_error(REMAT_ERR_VALUE, "pfr adam: iterations %lld is negative", (long long)iters);
    remat_adam *a;
    remat_status st = remat_adam_new(r->P, adam, &a);
    if (st != REMAT_OK)
        return st;
    double *g = malloc(sizeof *g * (size_t)r->P), loss;
    if (!g) {
        remat_adam_free(a);
        return remat_error(REMAT_ERR_NOMEM, "pfr: out of memory");
    }
    for (int64_t i = 0; i < iters && st == REMAT_OK; i++) {
        st = remat_pfr_objective(r, params, &loss, g);
        if (st == REMAT_OK && (st = remat_adam_update(a, params, g)) != REMAT_OK) {
            char why[512];
            snprintf(why, sizeof why, "%s", remat_last_error());
            st = remat_error(st, "pfr adam: iteration %lld: %s", (long long)i, why);
        }
        if (st == REMAT_OK && conc_before)
            conc_before[i] = concentration(r, loss);
        if (st == REMAT_OK && params_after)
            memcpy(params_after + (size_t)i * (size_t)r->P, params, sizeof *params * (size_t)r->P);
    }
    if (st == REMAT_OK && conc_final && (st = remat_pfr_objective(r, params, &loss, NULL)) == REMAT_OK)
        *conc_final = concentration(r, loss);
    free(g);
    remat_adam_free(a);
    return st;
}

const char *remat_pfr_species_role(const remat_mechanism *m, int species)
{
    int formed = 0, consumed = 0;
    for (int k = 0; k < remat_mechanism_reaction_count(m); k++) {
        double nu = remat_mechanism_reaction_stoich(m, k, species);
        formed |= nu > 0;
        consumed |= nu < 0;
    }
    return formed && consumed ? "intermediate" : formed ? "product" : consumed ? "reactant" : "";
}

static const double seed_inlet[3] = {1.0, 0.0, 0.0};
static const double seed_start[2] = {0.5, 0.3};
static const remat_pfr_seed_problem seed = {
    .name = "A->B->C",
    .mechanism = "# A -> B -> C, first order, in a plug-flow reactor (seed 004, section 7)\n"
                 "indep z\n"
                 "param k1 = 1.0\n"
                 "param k2 = 0.5\n"
                 "A -> B : k1\n"
                 "B -> C : k2\n",
    .inlet = seed_inlet,
    .length = 10.0,
    .steps = 1000,
    .method = REMAT_ODE_EULER,
    .species = "B",
    .goal = REMAT_PFR_MAXIMIZE,
    .start = seed_start,
    .lr = 0.1,
    .iters = 50,
    .min_param = 0.01,
};

const remat_pfr_seed_problem *remat_pfr_seed(void) { return &seed; }

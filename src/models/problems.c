/* problems.c — reference problems for schedule comparisons (see remat/problems.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "remat/exec.h"
#include "remat/problems.h"

enum { PFR_EULER, SIN_CHAIN, PFR_MECHANISM };

struct remat_problem {
    int kind;
    int64_t steps;
    int n_in;
    remat_tensor in[3];
    double y0[3], k[2], *x;
    /* PFR_MECHANISM: the reactor (inlet and params in x), its names */
    const remat_mechanism *mech;
    remat_pfr_options pfr;
    char *name, *description;
};

static const struct {
    const char *name, *description;
} known[] = {
    [PFR_EULER] = {"pfr-euler", "A->B->C plug-flow reactor, explicit Euler, L=10, loss -C_B(L), grad (k1, k2)"},
    [SIN_CHAIN] = {"sin", "x=ones(100), x <- sin(x) + 0.1 x per step, loss sum(x), grad x"},
};

remat_status remat_problem_new(const char *name, int64_t steps, remat_problem **out)
{
    REMAT_NULL_RETURN(out, REMAT_ERR_NULL);
    *out = NULL;
    REMAT_NULL_RETURN(name, REMAT_ERR_NULL);
    int kind = -1;
    for (int i = 0; i < 2 && name; i++)
        if (!strcmp(name, known[i].name))
            kind = i;
    if (kind < 0)
        return rmi_error(REMAT_ERR_ARG, "unknown problem '%s' (expected pfr-euler or sin)", name ? name : "(null)");
    if (steps < 0)
        return rmi_error(REMAT_ERR_VALUE, "problem %s: steps %lld is negative", name, (long long)steps);
    remat_problem *p = calloc(1, sizeof *p);
    if (!p)
        return rmi_error(REMAT_ERR_NOMEM, "problem: out of memory");
    p->kind = kind;
    p->steps = steps;
    if (kind == PFR_EULER) {
        p->y0[0] = 1.0;
        p->k[0] = 1.0;
        p->k[1] = 0.5;
        p->n_in = 3;
        p->in[0] = remat_tensor_f64(p->y0, 1, (int64_t[]){3});
        p->in[1] = remat_tensor_f64(&p->k[0], 0, NULL);
        p->in[2] = remat_tensor_f64(&p->k[1], 0, NULL);
    } else {
        p->x = malloc(sizeof *p->x * 100);
        if (!p->x) {
            free(p);
            return rmi_error(REMAT_ERR_NOMEM, "problem: out of memory");
        }
        for (int i = 0; i < 100; i++)
            p->x[i] = 1.0;
        p->n_in = 1;
        p->in[0] = remat_tensor_f64(p->x, 1, (int64_t[]){100});
    }
    *out = p;
    return REMAT_OK;
}

/* The reactor's ODE options: one output time, L */
/* k, then the conditions (o->conds or the declared defaults) as constants:
 * what the rates read (remat/mechanism.h) */
static remat_val rate_inputs(remat_fn *f, const remat_mechanism *m, const remat_pfr_options *o, remat_val k)
{
    int64_t C = remat_mechanism_cond_count(m);
    if (C == 0)
        return k;
    double c[C];
    for (int64_t i = 0; i < C; i++)
        c[i] = o->conds ? o->conds[i] : remat_mechanism_cond_value(m, (int)i);
    return remat_concatenate(f, 2, (remat_val[]){k, remat_const_data(f, REMAT_F64, 1, &C, c)}, 0);
}

static remat_ode_options ode_options(const remat_pfr_options *o, const double *L)
{
    return (remat_ode_options){.method = o->method, .n_times = 1, .times = L, .dt = o->dt, .steps = o->steps,
                               .adaptive = o->adaptive, .rtol = o->rtol, .atol = o->atol, .max_steps = o->max_steps};
}

/* Adaptive: the loop's iterations (accepted and rejected attempts) at the
 * problem's inlet and params, from one forward run, which the schedules'
 * predictions take as the length; an integration that fails (max_steps, a
 * stiff problem under an explicit method) is the error, in the integrator's
 * words. */
static remat_status count_attempts(const remat_mechanism *mech, const remat_pfr_options *opt, double *x,
                                   int64_t *attempts)
{
    int64_t S = remat_mechanism_species_count(mech), P = remat_mechanism_param_count(mech);
    double L = opt->length, stats[REMAT_ODE_STATS];
    remat_ode_options oo = ode_options(opt, &L);
    remat_fn *f = remat_fn_new("pfr_attempts");
    remat_program *prog = NULL;
    if (!f)
        return rmi_error(REMAT_ERR_NOMEM, "problem: out of memory");
    remat_val y0 = remat_arg(f, "inlet", REMAT_F64, 1, &S), k = remat_arg(f, "params", REMAT_F64, 1, &P), ys, sv;
    remat_status st = remat_ode_integrate_stats(f, mech, &oo, y0, rate_inputs(f, mech, opt, k), &ys, &sv);
    if (st == REMAT_OK) {
        remat_fn_output(f, sv);
        st = remat_compile_env(f, &prog);
    }
    if (st == REMAT_OK) {
        remat_tensor in[2] = {remat_tensor_f64(x, 1, &S), remat_tensor_f64(x + S, 1, &P)};
        remat_tensor o = remat_tensor_f64(stats, 1, (int64_t[]){REMAT_ODE_STATS});
        st = remat_run(prog, 2, in, 1, &o, NULL);
    }
    if (st == REMAT_OK)
        st = remat_ode_stats_check(&oo, stats);
    if (st == REMAT_OK)
        *attempts = (int64_t)(stats[REMAT_ODE_STAT_ACCEPTED] + stats[REMAT_ODE_STAT_REJECTED]);
    remat_program_free(prog);
    remat_fn_free(f);
    return st;
}

remat_status remat_problem_from_mechanism(const remat_mechanism *mech, const remat_pfr_options *opt,
                                          const double *params, remat_problem **out)
{
    if (!out)
        return rmi_error(REMAT_ERR_NULL, "problem: output pointer is NULL");
    *out = NULL;
    remat_pfr *r;
    remat_status st = remat_pfr_new(mech, opt, &r); /* checks the options, counts the steps */
    if (st != REMAT_OK)
        return st;
    int64_t steps = remat_pfr_steps(r);
    remat_pfr_free(r);
    if (opt->goal == REMAT_PFR_NO_GOAL)
        return rmi_error(REMAT_ERR_ARG, "problem from %s: needs a goal (maximize or minimize a species) for its loss",
                         remat_mechanism_source(mech));
    int64_t S = remat_mechanism_species_count(mech), P = remat_mechanism_param_count(mech);
    if (P == 0)
        return rmi_error(REMAT_ERR_ARG, "problem from %s: the mechanism has no parameters to differentiate",
                         remat_mechanism_source(mech));
    remat_problem *p = calloc(1, sizeof *p);
    int64_t C = remat_mechanism_cond_count(mech);
    if (!p || !(p->x = malloc(sizeof *p->x * (size_t)(S + P + C))))
        goto nomem;
    for (int64_t i = 0; i < C; i++) /* kept here: the options' array need not outlive p */
        p->x[S + P + i] = opt->conds ? opt->conds[i] : remat_mechanism_cond_value(mech, (int)i);
    memcpy(p->x, opt->inlet, sizeof *p->x * (size_t)S);
    if (params)
        memcpy(p->x + S, params, sizeof *p->x * (size_t)P);
    else
        remat_mechanism_param_values(mech, p->x + S);
    p->kind = PFR_MECHANISM;
    p->steps = steps;
    if (opt->adaptive) {
        st = count_attempts(mech, opt, p->x, &p->steps);
        if (st != REMAT_OK) {
            char why[512];
            snprintf(why, sizeof why, "%s", remat_last_error());
            remat_problem_free(p);
            return rmi_error(st, "problem from %s: %s", remat_mechanism_source(mech), why);
        }
    }
    p->mech = mech;
    p->pfr = *opt;
    p->pfr.inlet = p->x;
    p->pfr.conds = p->x + S + P;
    p->n_in = 2;
    p->in[0] = remat_tensor_f64(p->x, 1, &S);
    p->in[1] = remat_tensor_f64(p->x + S, 1, &P);
    const char *src = remat_mechanism_source(mech);
    char desc[512];
    char method[96];
    if (opt->adaptive)
        snprintf(method, sizeof method, "adaptive %s (rtol %g, atol %g: %lld attempts)",
                 remat_ode_method_name(opt->method), opt->rtol, opt->atol, (long long)p->steps);
    else
        snprintf(method, sizeof method, "%s", remat_ode_method_name(opt->method));
    int len = snprintf(desc, sizeof desc, "plug-flow reactor, %s, L=%g, loss %sC_%s(L), grad (", method,
                       opt->length, opt->goal == REMAT_PFR_MAXIMIZE ? "-" : "",
                       remat_mechanism_species_name(mech, opt->species));
    for (int i = 0; i < P && len < (int)sizeof desc; i++)
        len += snprintf(desc + len, sizeof desc - (size_t)len, "%s%s", i ? ", " : "",
                        remat_mechanism_param_name(mech, i));
    if (len < (int)sizeof desc)
        snprintf(desc + len, sizeof desc - (size_t)len, ")");
    if (!(p->name = strdup(src)) || !(p->description = strdup(desc)))
        goto nomem;
    *out = p;
    return REMAT_OK;
nomem:
    remat_problem_free(p);
    return rmi_error(REMAT_ERR_NOMEM, "problem: out of memory");
}

void remat_problem_free(remat_problem *p)
{
    if (!p)
        return;
    free(p->x);
    free(p->name);
    free(p->description);
    free(p);
}

const char *remat_problem_name(const remat_problem *p)
{
    REMAT_NULL_RETURN(p, NULL);
    return p->name ? p->name : known[p->kind].name;
}

const char *remat_problem_description(const remat_problem *p)
{
    REMAT_NULL_RETURN(p, NULL);
    return p->description ? p->description : known[p->kind].description;
}

int64_t remat_problem_steps(const remat_problem *p)
{
    REMAT_NULL_RETURN(p, -1);
    return p->steps;
}

int remat_problem_num_inputs(const remat_problem *p)
{
    REMAT_NULL_RETURN(p, 0);
    return p->n_in;
}

const remat_tensor *remat_problem_inputs(const remat_problem *p)
{
    REMAT_NULL_RETURN(p, NULL);
    return p->in;
}

int remat_problem_num_grads(const remat_problem *p)
{
    REMAT_NULL_RETURN(p, 0);
    return p->kind == PFR_EULER ? 2 : 1;
}

const char *remat_problem_grad_name(const remat_problem *p, int i)
{
    static const char *pfr[] = {"k1", "k2"};
    REMAT_NULL_RETURN(p, NULL);
    if (i < 0 || i >= remat_problem_num_grads(p)) {
        rmi_error(REMAT_ERR_ARG, "%s: no gradient %d (the problem has %d)", __func__, i, remat_problem_num_grads(p));
        return NULL;
    }
    return p->kind == PFR_EULER ? pfr[i] : p->kind == PFR_MECHANISM ? "params" : "x";
}

/* y' = y + h * [-k1 A, k1 A - k2 B, k2 B] */
static remat_fn *euler_body(double h)
{
    remat_fn *b = remat_fn_new("pfr_euler_step");
    remat_val y = remat_arg(b, "y", REMAT_F64, 1, (int64_t[]){3});
    remat_val k1 = remat_arg(b, "k1", REMAT_F64, 0, NULL);
    remat_val k2 = remat_arg(b, "k2", REMAT_F64, 0, NULL);
    remat_val r1 = remat_mul(b, k1, remat_index(b, y, 0));
    remat_val r2 = remat_mul(b, k2, remat_index(b, y, 1));
    int64_t one[1] = {1};
    remat_val parts[3] = {remat_reshape(b, remat_neg(b, r1), 1, one), remat_reshape(b, remat_sub(b, r1, r2), 1, one),
                          remat_reshape(b, r2, 1, one)};
    remat_val dy = remat_concatenate(b, 3, parts, 0);
    remat_fn_output(b, remat_add(b, y, remat_mul_scalar(b, dy, h)));
    return b;
}

static remat_fn *sin_body(void)
{
    remat_fn *b = remat_fn_new("sin_step");
    remat_val x = remat_arg(b, "x", REMAT_F64, 1, (int64_t[]){100});
    remat_fn_output(b, remat_add(b, remat_sin(b, x), remat_mul_scalar(b, x, 0.1)));
    return b;
}

/* f(inlet, params) = ±C_s(L) through remat_ode_integrate, one scan with opt */
static remat_status mechanism_build(const remat_problem *p, const remat_scan_options *opt, remat_fn **out)
{
    int64_t S = remat_mechanism_species_count(p->mech), P = remat_mechanism_param_count(p->mech);
    double L = p->pfr.length;
    remat_ode_options oo = ode_options(&p->pfr, &L);
    if (opt)
        oo.scan = *opt;
    remat_fn *f = remat_fn_new("pfr_loss");
    remat_val y0 = remat_arg(f, "inlet", REMAT_F64, 1, &S);
    remat_val k = remat_arg(f, "params", REMAT_F64, 1, &P);
    remat_val ys;
    remat_status st = remat_ode_integrate(f, p->mech, &oo, y0, rate_inputs(f, p->mech, &p->pfr, k), &ys);
    if (st == REMAT_OK) {
        remat_val c = remat_index(f, remat_index(f, ys, 0), p->pfr.species);
        remat_fn_output(f, p->pfr.goal == REMAT_PFR_MAXIMIZE ? remat_neg(f, c) : c);
        if (remat_fn_status(f) != REMAT_OK)
            st = rmi_error(remat_fn_status(f), "problem %s: %s", p->name, remat_fn_error(f));
    }
    if (st == REMAT_OK)
        st = remat_value_and_grad(f, 1, (const int[]){1}, out);
    remat_fn_free(f);
    return st;
}

remat_status remat_problem_build(const remat_problem *p, const remat_scan_options *opt, remat_fn **out)
{
    if (!p || !out)
        return rmi_error(REMAT_ERR_NULL, "problem build: NULL argument");
    *out = NULL;
    if (p->kind == PFR_MECHANISM)
        return mechanism_build(p, opt, out);
    remat_fn *f = remat_fn_new(known[p->kind].name);
    remat_fn *body;
    remat_status st;
    remat_val carry;
    if (p->kind == PFR_EULER) {
        body = euler_body(p->steps > 0 ? 10.0 / (double)p->steps : 0.0);
        remat_val y0 = remat_arg(f, "y0", REMAT_F64, 1, (int64_t[]){3});
        remat_val k[2] = {remat_arg(f, "k1", REMAT_F64, 0, NULL), remat_arg(f, "k2", REMAT_F64, 0, NULL)};
        st = remat_scan(f, body, p->steps, 1, &y0, 0, NULL, 2, k, opt, &carry, NULL);
        if (st == REMAT_OK)
            remat_fn_output(f, remat_neg(f, remat_index(f, carry, 1)));
    } else {
        body = sin_body();
        remat_val x = remat_arg(f, "x", REMAT_F64, 1, (int64_t[]){100});
        st = remat_scan(f, body, p->steps, 1, &x, 0, NULL, 0, NULL, opt, &carry, NULL);
        if (st == REMAT_OK)
            remat_fn_output(f, remat_sum_all(f, carry));
    }
    remat_fn_free(body);
    if (st == REMAT_OK) {
        static const int pfr_wrt[2] = {1, 2}, sin_wrt[1] = {0};
        st = p->kind == PFR_EULER ? remat_value_and_grad(f, 2, pfr_wrt, out) : remat_value_and_grad(f, 1, sin_wrt, out);
    }
    remat_fn_free(f);
    return st;
}

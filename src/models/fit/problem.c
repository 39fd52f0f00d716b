/*
 * problem.c — the least-squares problem of a fit: data and initial states
 * checked and laid out, the residual graphs built from the public API
 * (remat_ode_integrate through each experiment's data times), compiled once,
 * and run for F, dF/dp and dr/dp in the natural scale.
 *
 * Residuals are (y(t_r) - data) * mask over the full K x S grid of each
 * experiment, the mask 0 at cells not measured, so the graph needs no gather;
 * the host keeps the list of measured cells to compact them for LM.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "models/fit/fit_impl.h"

#define DEFAULT_STEPS_PER_SPAN 200

/* over the experiments a process evaluates (all of them alone; spread.c) */
typedef enum {
    BUILD_RES,       /* (p) -> r_1..r_E */
    BUILD_RES_SPLIT, /* (p_1..p_E) -> r_1..r_E: one parameter copy per experiment */
    BUILD_OBJ,       /* (p) -> sum of squares */
    BUILD_OBJ_SPLIT  /* (p_1..p_E) -> ss_1..ss_E: each experiment's sum of squares */
} build_mode;

static remat_status prepare_experiment(struct remat_fit *fit, int e, const remat_dataset *d)
{
    fit_exp *x = &fit->exp[e];
    const char *path = remat_dataset_path(d);
    int S = fit->S;
    x->d = d;
    x->rows = (int64_t)remat_dataset_rows(d);
    const double *times = remat_dataset_times(d);
    if (!(times[0] >= fit->opt.t0))
        return remat_error(REMAT_ERR_VALUE, "fit: %s: the first data row is at %s = %.17g, before the start t0 = %.17g",
                           path, remat_dataset_indep_name(d), times[0], fit->opt.t0);
    size_t cells = (size_t)x->rows * (size_t)S;
    x->y0 = calloc((size_t)S, sizeof *x->y0);
    x->target = calloc(cells, sizeof *x->target);
    x->mask = calloc(cells, sizeof *x->mask);
    x->meas = calloc(cells, sizeof *x->meas);
    x->r_full = calloc(cells, sizeof *x->r_full);
    x->ct = calloc(cells, sizeof *x->ct);
    x->dp = calloc((size_t)fit->P, sizeof *x->dp);
    x->dr = calloc(cells, sizeof *x->dr);
    if (!x->y0 || !x->target || !x->mask || !x->meas || !x->r_full || !x->ct || !x->dp || !x->dr)
        return remat_error(REMAT_ERR_NOMEM, "fit: %s: out of memory for %zu cells", path, cells);

    const double *given = fit->opt.y0 ? fit->opt.y0[e] : NULL;
    int from_row0 = !given;
    if (given) {
        for (int s = 0; s < S; s++) {
            if (!isfinite(given[s]))
                return remat_error(REMAT_ERR_VALUE, "fit: %s: initial value of species '%s' is %g", path,
                                   remat_mechanism_species_name(fit->m, s), given[s]);
            x->y0[s] = given[s];
        }
    } else {
        if (times[0] != fit->opt.t0)
            return remat_error(REMAT_ERR_VALUE,
                               "fit: %s: no initial state: the first row is at %s = %.17g, not at the start "
                               "t0 = %.17g (give the initial state, e.g. --init)",
                               path, remat_dataset_indep_name(d), times[0], fit->opt.t0);
        for (int s = 0; s < S; s++) {
            if (!remat_dataset_is_measured(d, 0, s))
                return remat_error(REMAT_ERR_VALUE,
                                   "fit: %s: no initial state: the first row does not give species '%s' "
                                   "(give every species there, or the initial state, e.g. --init)",
                                   path, remat_mechanism_species_name(fit->m, s));
            x->y0[s] = remat_dataset_value(d, 0, s);
        }
    }
    x->n_meas = 0;
    for (int64_t r = 0; r < x->rows; r++) {
        if (r == 0 && from_row0)
            continue; /* the initial state itself: its residual is identically 0 */
        for (int s = 0; s < S; s++)
            if (remat_dataset_is_measured(d, (size_t)r, s)) {
                int64_t c = r * S + s;
                double v = remat_dataset_value(d, (size_t)r, s);
                /* the weight rides on the mask: r = (y - data) w, J follows */
                double sc = remat_dataset_sigma(d, (size_t)r, s);
                double w = !isnan(sc) ? 1.0 / sc : fit->opt.sigma ? 1.0 / fit->opt.sigma[s] : 1.0;
                if (fit->opt.weighting == REMAT_FIT_WEIGHT_RELATIVE) {
                    if (v == 0)
                        return remat_error(REMAT_ERR_VALUE,
                                           "fit: %s: relative weighting divides by the data, but species '%s' "
                                           "is 0 at %s = %.17g (row %lld): give a sigma instead",
                                           path, remat_mechanism_species_name(fit->m, s),
                                           remat_dataset_indep_name(d), times[r], (long long)r + 1);
                    w /= fabs(v);
                }
                x->target[c] = v;
                x->mask[c] = w;
                x->meas[x->n_meas++] = c;
            }
    }
    return REMAT_OK;
}

remat_ode_options fit_ode_options(const struct remat_fit *fit, const fit_exp *x)
{
    return (remat_ode_options){
        .method = fit->opt.method,
        .t0 = fit->opt.t0,
        .n_times = (int)x->rows,
        .times = remat_dataset_times(x->d),
        .dt = fit->dt,
        .steps = fit->steps,
        .scan = {.schedule = fit->spec, .body_policy = fit->opt.scan.body_policy},
        .adaptive = fit->opt.adaptive,
        .rtol = fit->opt.rtol,
        .atol = fit->opt.atol,
        .max_steps = fit->opt.max_steps,
    };
}

/* The step grid: default dt, the longest interval scan and the finest step. */
static remat_status plan_grid(struct remat_fit *fit)
{
    fit->dt = fit->opt.dt;
    fit->steps = fit->opt.steps;
    if (fit->opt.adaptive) { /* each interval is one loop of at most max_steps attempts */
        fit->longest_scan = fit->opt.max_steps ? fit->opt.max_steps : 4096;
        fit->finest_h = 0;
        return REMAT_OK;
    }
    if (fit->dt == 0 && fit->steps == 0) {
        double span = 0;
        for (int e = 0; e < fit->E; e++) {
            const fit_exp *x = &fit->exp[e];
            span = fmax(span, remat_dataset_times(x->d)[x->rows - 1] - fit->opt.t0);
        }
        if (!(span > 0))
            return remat_error(REMAT_ERR_VALUE, "fit: every data row is at the start t0 = %.17g: nothing to fit",
                               fit->opt.t0);
        fit->dt = span / DEFAULT_STEPS_PER_SPAN;
    }
    fit->longest_scan = 0;
    fit->finest_h = INFINITY;
    for (int e = 0; e < fit->E; e++) {
        const fit_exp *x = &fit->exp[e];
        remat_ode_options o = fit_ode_options(fit, x);
        int64_t *steps = malloc(sizeof *steps * (size_t)x->rows);
        if (!steps)
            return remat_error(REMAT_ERR_NOMEM, "fit: out of memory");
        remat_status st = remat_ode_count_steps(&o, steps, NULL);
        if (st != REMAT_OK) {
            char why[512];
            snprintf(why, sizeof why, "%s", remat_last_error());
            free(steps);
            return remat_error(st, "fit: %s: %s", remat_dataset_path(x->d), why);
        }
        double prev = fit->opt.t0;
        for (int64_t k = 0; k < x->rows; k++) {
            double tk = remat_dataset_times(x->d)[k];
            if (steps[k] > 0) {
                fit->longest_scan = steps[k] > fit->longest_scan ? steps[k] : fit->longest_scan;
                fit->finest_h = fmin(fit->finest_h, (tk - prev) / (double)steps[k]);
            }
            prev = tk;
        }
        free(steps);
    }
    return REMAT_OK;
}

/* r_e = (y(t) - data) * mask, flattened to (K*S,). */
static remat_status build_experiment(const struct remat_fit *fit, remat_fn *f, int e, remat_val p, remat_val *r)
{
    const fit_exp *x = &fit->exp[e];
    int64_t S = fit->S, KS[2] = {x->rows, S}, n = x->rows * S;
    remat_val y0 = remat_const_data(f, REMAT_F64, 1, &S, x->y0);
    remat_ode_options o = fit_ode_options(fit, x);
    remat_val ys;
    remat_status st = remat_ode_integrate(f, fit->m, &o, y0, p, &ys);
    if (st != REMAT_OK) {
        char why[512];
        snprintf(why, sizeof why, "%s", remat_last_error());
        return remat_error(st, "fit: %s: %s", remat_dataset_path(x->d), why);
    }
    remat_val tgt = remat_const_data(f, REMAT_F64, 2, KS, x->target);
    remat_val msk = remat_const_data(f, REMAT_F64, 2, KS, x->mask);
    *r = remat_reshape(f, remat_mul(f, remat_sub(f, ys, tgt), msk), 1, &n);
    return REMAT_OK;
}

static remat_status build(const struct remat_fit *fit, build_mode mode, int n, const int *exps, remat_fn **out)
{
    *out = NULL;
    int64_t P = fit->P;
    bool split = mode == BUILD_RES_SPLIT || mode == BUILD_OBJ_SPLIT;
    remat_fn *f = remat_fn_new(mode == BUILD_OBJ || mode == BUILD_OBJ_SPLIT ? "fit_objective" : "fit_residuals");
    if (!f)
        return remat_error(REMAT_ERR_NOMEM, "fit: out of memory");
    remat_val p = REMAT_NONE, total = REMAT_NONE;
    if (!split)
        p = remat_arg(f, "params", REMAT_F64, 1, &P);
    else
        for (int l = 0; l < n; l++) {
            char name[32];
            snprintf(name, sizeof name, "params_%d", exps[l]);
            remat_arg(f, name, REMAT_F64, 1, &P);
        }
    remat_status st = REMAT_OK;
    for (int l = 0; l < n && st == REMAT_OK; l++) {
        remat_val r;
        st = build_experiment(fit, f, exps[l], split ? remat_fn_arg(f, l) : p, &r);
        if (st != REMAT_OK)
            break;
        if (mode == BUILD_OBJ) {
            remat_val ss = remat_sum_all(f, remat_square(f, r));
            total = total == REMAT_NONE ? ss : remat_add(f, total, ss);
        } else if (mode == BUILD_OBJ_SPLIT) {
            remat_fn_output(f, remat_sum_all(f, remat_square(f, r)));
        } else {
            remat_fn_output(f, r);
        }
    }
    if (st == REMAT_OK && mode == BUILD_OBJ)
        remat_fn_output(f, total);
    if (st == REMAT_OK && remat_fn_status(f) != REMAT_OK)
        st = remat_error(remat_fn_status(f), "fit: building the residual graph: %s", remat_fn_error(f));
    if (st != REMAT_OK) {
        remat_fn_free(f);
        return st;
    }
    *out = f;
    return REMAT_OK;
}

/* The program that holds the step tapes: value_and_grad (gradient methods) or
 * the VJP with the cotangent as an input (LM; the gradient methods too with
 * per-experiment sums, the cotangents 1). The functions are freed once
 * compiled: a program owns all it reads (a compiled scan copies its node's
 * data, exec.h). Over experiments exps[0..n), none: no program. */
static remat_status compile_reverse(const struct remat_fit *fit, int lm, int n, const int *exps,
                                    remat_program **out)
{
    *out = NULL;
    if (n == 0)
        return REMAT_OK;
    remat_fn *src = NULL, *g = NULL;
    bool split = lm || fit->per_experiment_sum;
    remat_status st = build(fit, lm ? BUILD_RES_SPLIT : split ? BUILD_OBJ_SPLIT : BUILD_OBJ, n, exps, &src);
    if (st == REMAT_OK)
        st = split ? remat_vjp(src, 0, NULL, &g) : remat_value_and_grad(src, 1, (int[]){0}, &g);
    if (st == REMAT_OK)
        st = remat_compile_env(g, out);
    remat_fn_free(g);
    remat_fn_free(src);
    return st;
}

static remat_status pick_schedule_probe(struct remat_fit *fit)
{
    if (!remat_dist_is_root(fit->group))
        return REMAT_OK;
    fit->spec = (remat_schedule_spec){.kind = REMAT_SCHED_STORE_ALL};
    int *all = malloc(sizeof *all * (size_t)fit->E);
    if (!all)
        return remat_error(REMAT_ERR_NOMEM, "fit: out of memory");
    for (int e = 0; e < fit->E; e++)
        all[e] = e;
    remat_program *probe;
    remat_status st = compile_reverse(fit, fit->optimizer == REMAT_FIT_LM, fit->E, all, &probe);
    free(all);
    remat_memory_plan plan = {0};
    if (st == REMAT_OK)
        remat_program_plan(probe, &plan);
    remat_program_free(probe);
    if (st != REMAT_OK)
        return st;
    st = remat_schedule_for_budget(fit->opt.memory_budget, fit->longest_scan, (int64_t)plan.scan_carry_bytes,
                                   (int64_t)plan.scan_tape_bytes, &fit->spec);
    if (st != REMAT_OK) {
        char why[512];
        snprintf(why, sizeof why, "%s", remat_last_error());
        return remat_error(st, "fit: %s (the longest data interval takes %lld steps)", why,
                           (long long)fit->longest_scan);
    }
    return REMAT_OK;
}

/* memory_budget: compile once with store-all to learn one carry's and one
 * step tape's bytes, then let remat_schedule_for_budget pick. Over every
 * experiment, as one process would; in a group rank 0 probes and tells the
 * others (so every rank runs the same schedule). */
static remat_status pick_schedule(struct remat_fit *fit)
{
    fit->spec = fit->opt.scan.schedule;
    if (fit->opt.memory_budget <= 0)
        return REMAT_OK;
    remat_status st = pick_schedule_probe(fit);
    if (!fit->group)
        return st;
    st = remat_dist_agree(fit->group, st);
    return st == REMAT_OK ? remat_dist_bcast(fit->group, 0, &fit->spec, sizeof fit->spec) : st;
}

/* With a group: every rank's status agreed on, so that all go on to the
 * next collective or none does. */
static remat_status fit_sync(const struct remat_fit *fit, remat_status st)
{
    return fit->opt.dist ? remat_dist_agree(fit->opt.dist, st) : st;
}

remat_status fit_problem_init(struct remat_fit *fit, remat_dataset *const *data)
{
    fit->exp = calloc((size_t)fit->E, sizeof *fit->exp);
    fit->grad_p = calloc((size_t)fit->P, sizeof *fit->grad_p);
    fit->pbuf = calloc((size_t)fit->P, sizeof *fit->pbuf);
    remat_status st = REMAT_OK;
    if (!fit->exp || !fit->grad_p || !fit->pbuf)
        st = remat_error(REMAT_ERR_NOMEM, "fit: out of memory");
    fit->n_res = 0;
    fit->max_meas = 0;
    for (int e = 0; st == REMAT_OK && e < fit->E; e++) {
        st = prepare_experiment(fit, e, data[e]);
        fit->n_res += fit->exp[e].n_meas;
        if (fit->exp[e].n_meas > fit->max_meas)
            fit->max_meas = fit->exp[e].n_meas;
    }
    if (st == REMAT_OK && fit->n_res == 0)
        st = remat_error(REMAT_ERR_VALUE, "fit: the data have no measured value after the initial states");
    if (st == REMAT_OK)
        st = plan_grid(fit);
    if (st == REMAT_OK)
        st = fit_spread_setup(fit);
    st = fit_sync(fit, st); /* before the first collective */
    if (st == REMAT_OK)
        st = pick_schedule(fit);
    if (st == REMAT_OK && fit->n_local > 0) /* a rank with no experiment runs no program */
        st = build(fit, BUILD_RES, fit->n_local, fit->local, &fit->res_fn);
    if (st == REMAT_OK && fit->n_local > 0)
        st = remat_compile_env(fit->res_fn, &fit->res);
    st = fit_sync(fit, st);
    if (st != REMAT_OK)
        return st;
    fit->jac_mode = fit_jacobian_resolve(fit);
    if (fit->optimizer != REMAT_FIT_LM) /* the statistics compile a Jacobian when asked */
        return compile_reverse(fit, 0, fit->n_local, fit->local, &fit->vg);
    return fit_jacobian_compile(fit);
}

remat_status fit_compile_vjp(struct remat_fit *fit)
{
    return compile_reverse(fit, 1, fit->n_local, fit->local, &fit->vjp);
}

void fit_problem_release(struct remat_fit *fit)
{
    for (int e = 0; fit->exp && e < fit->E; e++) {
        fit_exp *x = &fit->exp[e];
        free(x->y0);
        free(x->target);
        free(x->mask);
        free(x->meas);
        free(x->r_full);
        free(x->ct);
        free(x->dp);
        free(x->dr);
    }
    free(fit->exp);
    free(fit->grad_p);
    free(fit->pbuf);
    remat_program_free(fit->res);
    remat_program_free(fit->vg);
    remat_program_free(fit->vjp);
    remat_program_free(fit->jvp);
    remat_fn_free(fit->res_fn);
    free(fit->tan);
    fit_spread_release(fit);
}

remat_tensor fit_vec(double *data, int64_t n)
{
    return remat_tensor_f64(data, 1, &n);
}

/* The local experiments' compact residuals into mine. */
static remat_status local_residuals(struct remat_fit *fit, const double *p, double *mine)
{
    int L = fit->n_local;
    if (L == 0)
        return REMAT_OK;
    remat_tensor in = fit_vec((double *)p, fit->P);
    remat_tensor *out = malloc(sizeof *out * (size_t)L);
    if (!out)
        return remat_error(REMAT_ERR_NOMEM, "fit: out of memory");
    for (int l = 0; l < L; l++)
        out[l] = fit_vec(fit->exp[fit->local[l]].r_full, fit->exp[fit->local[l]].rows * fit->S);
    remat_status st = remat_run(fit->res, 1, &in, L, out, NULL);
    free(out);
    int64_t k = 0;
    for (int l = 0; st == REMAT_OK && l < L; l++) {
        const fit_exp *x = &fit->exp[fit->local[l]];
        for (int64_t i = 0; i < x->n_meas; i++)
            mine[k++] = x->r_full[x->meas[i]];
    }
    return st;
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

/* (F_e, dF_e/dp) of each local experiment into fit->items: the VJP of
 * their sums of squares with cotangent 1. */
static remat_status local_objectives(struct remat_fit *fit, const double *p)
{
    int L = fit->n_local, P = fit->P;
    if (L == 0)
        return REMAT_OK;
    remat_tensor *in = malloc(sizeof *in * (size_t)(2 * L)), *out = malloc(sizeof *out * (size_t)(2 * L));
    if (!in || !out) {
        free(in);
        free(out);
        return remat_error(REMAT_ERR_NOMEM, "fit: out of memory");
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
    free(in);
    free(out);
    return st;
}

remat_status fit_eval_grad(struct remat_fit *fit, const double *p, double *F, double *grad)
{
    fit->evals++;
    if (fit->per_experiment_sum)
        return fit_spread_objective(fit, local_objectives(fit, p), F, grad);
    remat_tensor in = fit_vec((double *)p, fit->P);
    remat_tensor out[2] = {remat_tensor_f64(F, 0, NULL), fit_vec(grad, fit->P)};
    return remat_run(fit->vg, 1, &in, 2, out, NULL);
}

/* ---- public accessors that read the problem ---- */

void remat_fit_schedule(const remat_fit *fit, remat_schedule_spec *spec)
{
    if (fit && spec)
        *spec = fit->spec;
}

const double *remat_fit_initial_state(const remat_fit *fit, int e)
{
    if (!fit || e < 0 || e >= fit->E) {
        remat_error(REMAT_ERR_ARG, "fit: no experiment %d", e);
        return NULL;
    }
    return fit->exp[e].y0;
}

int64_t remat_fit_residual_count(const remat_fit *fit) { return fit ? fit->n_res : 0; }

static remat_status check_params(const remat_fit *fit, const double *params)
{
    if (!fit || !params)
        return remat_error(REMAT_ERR_NULL, "fit: %s is NULL", !fit ? "the fit" : "params");
    for (int i = 0; i < fit->P; i++)
        if (!isfinite(params[i]))
            return remat_error(REMAT_ERR_VALUE, "fit: parameter '%s' is %g", fit->names[i], params[i]);
    return REMAT_OK;
}

remat_status remat_fit_objective(remat_fit *fit, const double *params, double *objective)
{
    remat_status st = check_params(fit, params);
    if (st == REMAT_OK && !objective)
        st = remat_error(REMAT_ERR_NULL, "fit: objective is NULL");
    return st == REMAT_OK ? fit_eval_residuals(fit, params, objective, NULL) : st;
}

remat_status remat_fit_residuals(remat_fit *fit, const double *params, double *r)
{
    double F;
    remat_status st = check_params(fit, params);
    return st == REMAT_OK ? fit_eval_residuals(fit, params, &F, r) : st;
}

remat_status remat_fit_predict(const remat_fit *fit, int e, const double *params, int n_times, const double *times,
                               double *out)
{
    remat_status st = check_params(fit, params);
    if (st != REMAT_OK)
        return st;
    if (e < 0 || e >= fit->E)
        return remat_error(REMAT_ERR_ARG, "fit: predict: no experiment %d (there are %d)", e, fit->E);
    if (n_times < 1 || !times || !out)
        return remat_error(REMAT_ERR_ARG, "fit: predict: needs n_times >= 1 (got %d), times and out", n_times);
    int64_t S = fit->S, P = fit->P;
    remat_ode_options o = fit_ode_options(fit, &fit->exp[e]);
    o.n_times = n_times;
    o.times = times;
    if (!o.adaptive) {
        o.dt = fit->dt > 0 ? fit->dt : fit->finest_h;
        o.steps = 0;
    }
    o.scan = (remat_scan_options){0}; /* forward only: the schedule does not matter */
    remat_fn *f = remat_fn_new("fit_predict");
    remat_program *prog = NULL;
    if (!f)
        return remat_error(REMAT_ERR_NOMEM, "fit: out of memory");
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

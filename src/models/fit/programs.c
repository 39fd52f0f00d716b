/*
 * programs.c — a fit's graphs, built from the public API (remat_ode_integrate
 * through each experiment's data times, then (y - data) * mask), and
 * compiled: the residuals, the reverse program that holds the step tapes
 * (value_and_grad, or the VJP for LM), and the schedule a memory budget
 * picks by compiling a store-all probe.
 */
#include <stdio.h>
#include <stdlib.h>

#include "core/error.h"
#include "models/fit/fit_impl.h"

/* over the experiments a process evaluates (all of them alone; spread.c) */
typedef enum {
    BUILD_RES,       /* (p) -> r_1..r_E */
    BUILD_RES_SPLIT, /* (p_1..p_E) -> r_1..r_E: one parameter copy per experiment */
    BUILD_OBJ,       /* (p) -> sum of squares */
    BUILD_OBJ_SPLIT  /* (p_1..p_E) -> ss_1..ss_E: each experiment's sum of squares */
} build_mode;

/* r_e = (y(t) - data) * mask, flattened to (K*S,). */
static remat_status build_experiment(const struct remat_fit *fit, remat_fn *f, int e, remat_val p, remat_val *r)
{
    const fit_exp *x = &fit->exp[e];
    int64_t S = fit->S, KS[2] = {x->rows, S}, n = x->rows * S;
    remat_val y0 = remat_const_data(f, REMAT_F64, 1, &S, x->y0);
    remat_ode_options o = fit_ode_options(fit, x);
    remat_val ys;
    remat_status st = remat_ode_integrate(f, fit->m, &o, y0, fit_rate_inputs(fit, f, x, p), &ys);
    if (st != REMAT_OK) {
        char why[512];
        snprintf(why, sizeof why, "%s", remat_last_error());
        return rmi_error(st, "fit: %s: %s", remat_dataset_path(x->d), why);
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
        return rmi_error(REMAT_ERR_NOMEM, "fit: out of memory");
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
        st = rmi_error(remat_fn_status(f), "fit: building the residual graph: %s", remat_fn_error(f));
    if (st != REMAT_OK) {
        remat_fn_free(f);
        return st;
    }
    *out = f;
    return REMAT_OK;
}

remat_status fit_build_residuals(const struct remat_fit *fit, int n, const int *exps, remat_fn **out)
{
    return build(fit, BUILD_RES, n, exps, out);
}

/* The program that holds the step tapes: value_and_grad (gradient methods) or
 * the VJP with the cotangent as an input (LM; the gradient methods too with
 * per-experiment sums, the cotangents 1). The functions are freed once
 * compiled: a program owns all it reads (a compiled scan copies its node's
 * data, exec.h). Over experiments exps[0..n), none: no program. */
remat_status fit_compile_reverse(const struct remat_fit *fit, int lm, int n, const int *exps, remat_program **out)
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
        return rmi_error(REMAT_ERR_NOMEM, "fit: out of memory");
    for (int e = 0; e < fit->E; e++)
        all[e] = e;
    remat_program *probe;
    remat_status st = fit_compile_reverse(fit, fit->optimizer == REMAT_FIT_LM, fit->E, all, &probe);
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
        return rmi_error(st, "fit: %s (the longest data interval takes %lld steps)", why,
                         (long long)fit->longest_scan);
    }
    return REMAT_OK;
}

/* memory_budget: compile once with store-all to learn one carry's and one
 * step tape's bytes, then let remat_schedule_for_budget pick. Over every
 * experiment, as one process would; in a group rank 0 probes and tells the
 * others (so every rank runs the same schedule). */
remat_status fit_pick_schedule(struct remat_fit *fit)
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

remat_status fit_compile_vjp(struct remat_fit *fit)
{
    return fit_compile_reverse(fit, 1, fit->n_local, fit->local, &fit->vjp);
}

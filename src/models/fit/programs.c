/*
 * programs.c — a fit's graphs, built from the public API (the integration
 * through an experiment's data times, then (y - data) * mask), and
 * compiled once per class of experiments (fit_impl.h): the residuals, the
 * reverse programs that hold the step tapes (value_and_grad of one
 * experiment's sum of squares, or the VJP for LM), the JVP, and the
 * schedule a memory budget picks by compiling store-all probes. With
 * adaptive stepping the data times are an input (dense output,
 * remat_ode_integrate_times), so 10,000 files of one length run one set of
 * programs 10,000 times instead of compiling 10,000 loops. An experiment's
 * conditions (remat/mechanism.h "cond") are an input too, so experiments at
 * different temperatures share programs.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/alloc.h"
#include "core/error.h"
#include "models/fit/fit_impl.h"

/* Classes: adaptive experiments of equal rows share one, as do fixed steps
 * in the row scan (fit_exp_rows: the step counts are an input), with any
 * adjoint. Linear in experiments for the common case of one row count. */
remat_status fit_classes_init(struct remat_fit *fit)
{
    fit->cls = rmi_calloc((size_t)fit->E, sizeof *fit->cls);
    if (!fit->cls)
        return rmi_error(REMAT_ERR_NOMEM, "fit: out of memory");
    fit->n_cls = 0;
    for (int e = 0; e < fit->E; e++) {
        fit_exp *x = &fit->exp[e];
        int c = -1;
        /* the last class first: files of one study usually have one length */
        for (int k = fit->n_cls - 1; (fit->opt.adaptive || fit_exp_rows(x)) && k >= 0 && c < 0; k--)
            if (fit->cls[k].rows == x->rows && fit->cls[k].delay == x->delay)
                c = k;
        if (c < 0) {
            c = fit->n_cls++;
            fit->cls[c] = (fit_class){.rows = x->rows, .first = e, .delay = x->delay};
        }
        x->cls = c;
    }
    for (int l = 0; l < fit->n_local; l++)
        fit->cls[fit->exp[fit->local[l]].cls].n_local++;
    return REMAT_OK;
}

void fit_classes_release(struct remat_fit *fit)
{
    for (int c = 0; fit->cls && c < fit->n_cls; c++) {
        fit_class *k = &fit->cls[c];
        remat_program_free(k->res);
        remat_program_free(k->vg);
        remat_program_free(k->vjp);
        remat_program_free(k->jvp);
        remat_program_free(k->locate);
        remat_fn_free(k->res_fn);
    }
    rmi_free(fit->cls);
    fit->cls = NULL;
}

int fit_inputs(const struct remat_fit *fit, int e, const double *p, double *extra, int64_t n_extra, remat_tensor *in)
{
    fit_exp *x = &fit->exp[e];
    int64_t KS[2] = {x->rows, fit->S};
    if (x->delay && fit_delay_locate((struct remat_fit *)fit, e, p) != REMAT_OK)
        x->tau_hat = x->slope = NAN; /* out of memory: NaN residuals */
    in[0] = fit_vec((double *)p, fit->P);
    in[1] = fit_vec(x->y0, fit->S);
    in[2] = fit_vec(x->delay ? &x->tau_hat : (double *)remat_dataset_times(x->d), x->rows);
    in[3] = remat_tensor_f64(x->target, 2, KS);
    in[4] = remat_tensor_f64(x->mask, 2, KS);
    int n = 5;
    if (x->nsteps)
        in[n++] = fit_vec(x->nsteps, x->rows);
    if (fit->CI > 0)
        in[n++] = fit_vec(x->cond, fit->CI);
    if (x->delay)
        in[n++] = fit_vec(&x->slope, 1);
    if (extra)
        in[n++] = fit_vec(extra, n_extra);
    return n;
}

/* (p, y0, ts, tgt, msk[, nsteps][, conds]) -> r = (y(ts) - tgt) * msk flattened (K*S,), or its
 * sum of squares (obj): class c's function, its experiment `first` giving
 * the step grid of a fixed-step fit. */
static remat_status build(const struct remat_fit *fit, int c, int obj, remat_fn **out)
{
    *out = NULL;
    const fit_class *k = &fit->cls[c];
    const fit_exp *x = &fit->exp[k->first];
    int64_t P = fit->P, S = fit->S, K = k->rows, KS[2] = {K, S}, n = K * S;
    remat_fn *f = remat_fn_new(obj ? "fit_objective" : "fit_residuals");
    if (!f)
        return rmi_error(REMAT_ERR_NOMEM, "fit: out of memory");
    remat_val p = remat_arg(f, "params", REMAT_F64, 1, &P);
    remat_val y0 = remat_arg(f, "y0", REMAT_F64, 1, &S);
    remat_val ts = remat_arg(f, "times", REMAT_F64, 1, &K);
    remat_val tgt = remat_arg(f, "target", REMAT_F64, 2, KS);
    remat_val msk = remat_arg(f, "mask", REMAT_F64, 2, KS);
    remat_val nsteps = fit_exp_rows(x) ? remat_arg(f, "steps", REMAT_F64, 1, &K) : REMAT_NONE;
    int64_t CI = fit->CI;
    /* what the rates read: the parameters (an experiment's P its own), then the conditions */
    remat_val rin = fit_rate_inputs(fit, f, p, CI > 0 ? remat_arg(f, "conds", REMAT_F64, 1, &CI) : REMAT_NONE);
    remat_ode_options o = fit_ode_options(fit, x);
    remat_val slope = k->delay ? remat_arg(f, "slope", REMAT_F64, 1, (int64_t[]){1}) : REMAT_NONE;
    remat_val ys;
    if (fit_exp_rows(x)) /* the row scan's most steps of an interval */
        o.max_steps = fit->longest_scan > 1 ? fit->longest_scan : 1;
    remat_status st = fit_exp_rows(x)    ? remat_ode_integrate_rows(f, fit->m, &o, y0, rin, ts, nsteps, &ys)
                      : fit->opt.adaptive ? remat_ode_integrate_times(f, fit->m, &o, y0, rin, ts, &ys, NULL)
                                          : remat_ode_integrate(f, fit->m, &o, y0, rin, &ys);
    if (st == REMAT_OK && k->delay) /* the delay's Newton step from tau_hat (delay.c) */
        ys = fit_delay_graph(fit, f, y0, ys, ts, slope);
    if (st != REMAT_OK) {
        char why[512];
        snprintf(why, sizeof why, "%s", remat_last_error());
        remat_fn_free(f);
        return rmi_error(st, "fit: %s: %s", remat_dataset_path(x->d), why);
    }
    remat_val r = remat_reshape(f, remat_mul(f, remat_sub(f, ys, tgt), msk), 1, &n);
    remat_fn_output(f, obj ? remat_sum_all(f, remat_square(f, r)) : r);
    if (remat_fn_status(f) != REMAT_OK) {
        st = rmi_error(remat_fn_status(f), "fit: building the residual graph: %s", remat_fn_error(f));
        remat_fn_free(f);
        return st;
    }
    *out = f;
    return REMAT_OK;
}

/* Class c's program of kind, compiled (the functions freed once compiled:
 * a program owns all it reads; res_fn is kept for the JVP). */
static remat_status compile_class(struct remat_fit *fit, int c, fit_prog kind, remat_program **out)
{
    fit_class *k = &fit->cls[c];
    remat_fn *src = NULL, *g = NULL;
    remat_status st = REMAT_OK;
    if ((kind == FIT_PROG_RES || kind == FIT_PROG_JVP) && !k->res_fn)
        st = build(fit, c, 0, &k->res_fn);
    if (st != REMAT_OK)
        return st;
    switch (kind) {
    case FIT_PROG_RES:
        return fit_compile(fit, k->res_fn, out);
    case FIT_PROG_JVP:
        st = remat_jvp(k->res_fn, 1, (int[]){0}, &g);
        break;
    case FIT_PROG_VG:
        st = build(fit, c, 1, &src);
        if (st == REMAT_OK)
            st = remat_value_and_grad(src, 1, (int[]){0}, &g);
        break;
    case FIT_PROG_VJP:
        st = build(fit, c, 0, &src);
        if (st == REMAT_OK)
            st = remat_vjp(src, 1, (int[]){0}, &g);
        break;
    }
    if (st == REMAT_OK)
        st = fit_compile(fit, g, out);
    remat_fn_free(g);
    remat_fn_free(src);
    return st;
}

static remat_program **slot(fit_class *k, fit_prog kind)
{
    return kind == FIT_PROG_RES ? &k->res : kind == FIT_PROG_VG ? &k->vg : kind == FIT_PROG_VJP ? &k->vjp : &k->jvp;
}

remat_status fit_compile_classes(struct remat_fit *fit, fit_prog kind)
{
    for (int c = 0; c < fit->n_cls; c++) {
        fit_class *k = &fit->cls[c];
        if (k->n_local == 0 || *slot(k, kind))
            continue;
        remat_status st = compile_class(fit, c, kind, slot(k, kind));
        if (st != REMAT_OK)
            return st;
    }
    return REMAT_OK;
}

/* memory_budget: compile each class's reverse program once with store-all
 * to learn the largest carry and step tape, then let
 * remat_schedule_for_budget pick. Over every experiment, as one process
 * would (spread.c's fit_pick_schedule runs it on rank 0 and tells the
 * others). */
remat_status fit_schedule_probe(struct remat_fit *fit)
{
    fit->spec = (remat_schedule_spec){.kind = REMAT_SCHED_STORE_ALL};
    size_t carry = 0, tape = 0;
    remat_status st = REMAT_OK;
    for (int c = 0; c < fit->n_cls && st == REMAT_OK; c++) {
        remat_program *probe = NULL;
        st = compile_class(fit, c, fit->optimizer == REMAT_FIT_LM ? FIT_PROG_VJP : FIT_PROG_VG, &probe);
        remat_memory_plan plan = {0};
        if (st == REMAT_OK)
            remat_program_plan(probe, &plan);
        remat_program_free(probe);
        carry = plan.scan_carry_bytes > carry ? plan.scan_carry_bytes : carry;
        tape = plan.scan_tape_bytes > tape ? plan.scan_tape_bytes : tape;
    }
    if (st != REMAT_OK)
        return st;
    /* the row scan's schedule is its scan over the rows'; an adaptive
     * fit's is its one loop over all of an experiment's output times, of
     * at most max_steps attempts (plan_grid's longest_scan) */
    int64_t length = fit_rows_scan(fit) ? fit->most_rows : fit->longest_scan;
    st = remat_schedule_for_budget(fit->opt.memory_budget, length, (int64_t)carry, (int64_t)tape,
                                   &fit->spec);
    if (st != REMAT_OK) {
        char why[512];
        snprintf(why, sizeof why, "%s", remat_last_error());
        return rmi_error(st, fit_rows_scan(fit)
                                 ? "fit: %s (the longest experiment has %lld rows)"
                                 : "fit: %s (each experiment is one adaptive loop of up to max_steps = %lld step "
                                   "attempts over all its data times)",
                         why, (long long)length);
    }
    return REMAT_OK;
}

remat_status fit_compile(const struct remat_fit *fit, const remat_fn *fn, remat_program **out)
{
    return fit->opt.compile ? remat_compile_opts(fn, NULL, fit->opt.compile, out) : remat_compile_env(fn, out);
}

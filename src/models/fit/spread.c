/*
 * spread.c — the fit's objective (objective.h) over many processes
 * (remat/fit.h, "Many processes"): a wrapper of this rank's evaluations
 * (evaluate.c, jacobian.c) that gathers the residual and Jacobian blocks in
 * experiment order and sums the per-experiment objective and gradient in
 * experiment order; which rank evaluates which experiment; starts spread
 * over ranks; and every agreement between ranks the fit makes (setup,
 * schedule, Jacobian compile, a driver's memory, statistics). This is the
 * one file of fit/ that calls remat/dist.h (tests/check_includes.sh checks
 * it); models/ include no MPI header. Alone (no group) each agreement is
 * the local status and each gather the local rows.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "models/fit/fit_impl.h"

static const fit_objective_ops spread_ops;

remat_status fit_agree(remat_dist *d, remat_status st)
{
    return d ? remat_dist_agree(d, st) : st;
}

remat_status fit_spread_setup(struct remat_fit *fit)
{
    fit->obj = (fit_objective){.ops = &spread_ops, .self = fit, .P = fit->P, .n_res = fit->n_res};
    remat_dist *d = fit->opt.dist;
    int E = fit->E, P = fit->P;
    fit->per_experiment_sum = d != NULL;
    fit->spread_starts = d && remat_dist_size(d) > 1 && fit->opt.starts > 1;
    fit->group = d && !fit->spread_starts ? d : NULL;
    fit->owner = rmi_calloc((size_t)E, sizeof *fit->owner);
    fit->local = rmi_calloc((size_t)E, sizeof *fit->local);
    fit->len = rmi_calloc((size_t)E, sizeof *fit->len);
    fit->rall = rmi_calloc((size_t)fit->n_res, sizeof *fit->rall);
    double *cost = rmi_calloc((size_t)E, sizeof *cost);
    if (!fit->owner || !fit->local || !fit->len || !fit->rall || !cost) {
        rmi_free(cost);
        return rmi_error(REMAT_ERR_NOMEM, "fit: out of memory");
    }
    /* an experiment's cost: its cells (every row is an output time of its
     * integration, every species a state) */
    for (int e = 0; e < E; e++)
        cost[e] = (double)fit->exp[e].rows * fit->S;
    remat_status st = fit->group ? remat_dist_split(fit->group, E, cost, fit->owner) : REMAT_OK;
    rmi_free(cost);
    if (st != REMAT_OK)
        return st;
    int rank = remat_dist_rank(fit->group);
    fit->n_local = 0;
    fit->local_res = 0;
    fit->local_max_meas = 0;
    for (int e = 0; e < E; e++)
        if (fit->owner[e] == rank) {
            fit->local[fit->n_local++] = e;
            fit->local_res += fit->exp[e].n_meas;
            if (fit->exp[e].n_meas > fit->local_max_meas)
                fit->local_max_meas = fit->exp[e].n_meas;
        }
    if (remat_dist_size(fit->group) > 1) {
        fit->rloc = rmi_calloc((size_t)fit->local_res + 1, sizeof *fit->rloc);
        fit->jloc = rmi_calloc((size_t)fit->local_res * (size_t)P + 1, sizeof *fit->jloc);
        if (!fit->rloc || !fit->jloc)
            return rmi_error(REMAT_ERR_NOMEM, "fit: out of memory for %lld residuals' Jacobian rows",
                             (long long)fit->local_res);
    }
    if (fit->per_experiment_sum) { /* n_local items and the sum */
        fit->items = rmi_calloc(((size_t)fit->n_local + 1) * (1 + (size_t)P), sizeof *fit->items);
        if (!fit->items)
            return rmi_error(REMAT_ERR_NOMEM, "fit: out of memory");
    }
    return REMAT_OK;
}

void fit_spread_release(struct remat_fit *fit)
{
    rmi_free(fit->owner);
    rmi_free(fit->local);
    rmi_free(fit->len);
    rmi_free(fit->rall);
    rmi_free(fit->rloc);
    rmi_free(fit->jloc);
    rmi_free(fit->items);
}

static remat_status gather_rows(struct remat_fit *fit, remat_status local, int64_t width, const double *mine,
                                double *all)
{
    if (!fit->group)
        return local;
    remat_status st = remat_dist_agree(fit->group, local);
    if (st != REMAT_OK || !fit->rloc) /* one rank: mine is all */
        return st;
    for (int e = 0; e < fit->E; e++)
        fit->len[e] = fit->exp[e].n_meas * width;
    return remat_dist_gather(fit->group, fit->E, fit->owner, fit->len, mine, all);
}

static remat_status spread_objective(struct remat_fit *fit, remat_status local, double *F, double *grad)
{
    remat_status st = fit_agree(fit->group, local);
    if (st != REMAT_OK)
        return st;
    int64_t w = 1 + fit->P;
    double *sum = fit->items + (size_t)fit->n_local * (size_t)w;
    st = remat_dist_sum(fit->group, fit->E, fit->owner, w, fit->items, sum);
    if (st != REMAT_OK)
        return st;
    *F = sum[0];
    memcpy(grad, sum + 1, sizeof *grad * (size_t)fit->P);
    return REMAT_OK;
}

/* ---- the objective the optimizers see ---- */

static remat_status obj_residuals(void *self, const double *p, double *F, double *r)
{
    struct remat_fit *fit = self;
    double *all = r ? r : fit->rall;
    remat_status st = fit_local_residuals(fit, p, fit->rloc ? fit->rloc : all);
    fit->evals++;
    st = gather_rows(fit, st, 1, fit->rloc, all);
    if (st != REMAT_OK)
        return st;
    double sum = 0;
    for (int64_t k = 0; k < fit->n_res; k++)
        sum += all[k] * all[k];
    *F = sum;
    return REMAT_OK;
}

static remat_status obj_gradient(void *self, const double *p, double *F, double *grad)
{
    struct remat_fit *fit = self;
    fit->evals++;
    if (fit->per_experiment_sum)
        return spread_objective(fit, fit_local_objectives(fit, p), F, grad);
    return fit_local_grad(fit, p, F, grad);
}

/* With a group this is collective (every rank compiles, or learns that one
 * could not): jac_ready, not the programs, says it is done, since a rank
 * with no experiment has none. */
remat_status fit_jacobian_compile(struct remat_fit *fit)
{
    if (fit->jac_ready)
        return REMAT_OK;
    if (fit->jac_mode == REMAT_FIT_JACOBIAN_FORWARD) {
        remat_status st = fit_agree(fit->group, fit_jacobian_compile_local(fit, REMAT_FIT_JACOBIAN_FORWARD));
        /* an op of the residuals without a JVP rule: reverse mode still works
         * when the mode was the fit's own pick; asked for, it is the error */
        if (st != REMAT_ERR_UNSUPPORTED || fit->opt.jacobian != REMAT_FIT_JACOBIAN_AUTO) {
            fit->jac_ready = st == REMAT_OK;
            return st;
        }
        rmi_free(fit->tan);
        fit->tan = NULL;
        fit->jac_mode = REMAT_FIT_JACOBIAN_REVERSE;
    }
    remat_status st = fit_agree(fit->group, fit_jacobian_compile_local(fit, REMAT_FIT_JACOBIAN_REVERSE));
    fit->jac_ready = st == REMAT_OK;
    return st;
}

static remat_status obj_jacobian(void *self, const double *p, double *J)
{
    struct remat_fit *fit = self;
    remat_status st = fit_jacobian_compile(fit); /* agreed on with a group */
    if (st != REMAT_OK)
        return st;
    double *mine = fit->jloc ? fit->jloc : J; /* the local rows */
    return gather_rows(fit, fit_local_jacobian(fit, p, mine), fit->P, fit->jloc, J);
}

static remat_status obj_agree(void *self, remat_status local)
{
    return fit_agree(((struct remat_fit *)self)->group, local);
}

static const char *obj_explain(void *self, const double *p) { return fit_explain_nonfinite(self, p); }

static const fit_objective_ops spread_ops = {
    .residuals = obj_residuals,
    .gradient = obj_gradient,
    .jacobian = obj_jacobian,
    .agree = obj_agree,
    .explain = obj_explain,
};

/* memory_budget: rank 0 probes (programs.c) and tells the others, so that
 * every rank runs the same schedule. */
remat_status fit_pick_schedule(struct remat_fit *fit)
{
    fit->spec = fit->opt.scan.schedule;
    if (fit->opt.memory_budget <= 0)
        return REMAT_OK;
    remat_status st = remat_dist_is_root(fit->group) ? fit_schedule_probe(fit) : REMAT_OK;
    if (!fit->group)
        return st;
    st = remat_dist_agree(fit->group, st);
    return st == REMAT_OK ? remat_dist_bcast(fit->group, 0, &fit->spec, sizeof fit->spec) : st;
}

/* ---- starts over ranks ---- */

static int start_owner(const struct remat_fit *fit, int n_starts, int k)
{
    if (!fit->spread_starts)
        return remat_dist_rank(fit->opt.dist);
    int size = remat_dist_size(fit->opt.dist);
    /* contiguous blocks, as remat_dist_split gives equal items */
    return (int)((int64_t)k * size / n_starts);
}

int fit_spread_owns_start(const struct remat_fit *fit, int n_starts, int k)
{
    return start_owner(fit, n_starts, k) == remat_dist_rank(fit->opt.dist);
}

/* A failed start's message travels as MSG_DOUBLES doubles of its bytes
 * (remat_dist_gather moves doubles): the owner's to every rank. */
#define MSG_DOUBLES 64 /* 512 bytes: remat_fit_result.message */

remat_status fit_spread_gather_messages(struct remat_fit *fit, int n, char **msgs)
{
    remat_dist *d = fit->opt.dist;
    int rank = remat_dist_rank(d), m = 0;
    int *owner = rmi_malloc(sizeof *owner * (size_t)n);
    int64_t *len = rmi_malloc(sizeof *len * (size_t)n);
    double *mine = rmi_calloc((size_t)n * MSG_DOUBLES, sizeof *mine);
    double *all = rmi_calloc((size_t)n * MSG_DOUBLES, sizeof *all);
    remat_status st = owner && len && mine && all ? REMAT_OK : rmi_error(REMAT_ERR_NOMEM, "fit: out of memory");
    st = remat_dist_agree(d, st);
    for (int k = 0; st == REMAT_OK && k < n; k++) {
        owner[k] = start_owner(fit, n, k);
        len[k] = MSG_DOUBLES;
        if (owner[k] == rank) {
            char *dst = (char *)(mine + (size_t)m * MSG_DOUBLES);
            if (msgs[k])
                snprintf(dst, MSG_DOUBLES * sizeof(double), "%s", msgs[k]);
            m++;
        }
    }
    if (st == REMAT_OK)
        st = remat_dist_gather(d, n, owner, len, mine, all);
    for (int k = 0; st == REMAT_OK && k < n; k++) {
        const char *src = (const char *)(all + (size_t)k * MSG_DOUBLES);
        rmi_free(msgs[k]);
        msgs[k] = NULL;
        if (src[0]) {
            size_t l = strnlen(src, MSG_DOUBLES * sizeof(double) - 1);
            if (!(msgs[k] = rmi_malloc(l + 1)))
                st = rmi_error(REMAT_ERR_NOMEM, "fit: out of memory");
            else {
                memcpy(msgs[k], src, l);
                msgs[k][l] = 0;
            }
        }
    }
    rmi_free(owner);
    rmi_free(len);
    rmi_free(mine);
    rmi_free(all);
    return st;
}

/* A result as doubles: objective, iterations, evaluations, converged,
 * n_history, params[P], history objectives, history params; the message
 * goes as bytes. */
static remat_status bcast_result(struct remat_fit *fit, int root, remat_fit_result *r)
{
    remat_dist *d = fit->opt.dist;
    int P = fit->P, me = remat_dist_rank(d) == root;
    double head[5] = {r->objective, r->iterations, (double)r->evaluations, r->converged, r->n_history};
    remat_status st = remat_dist_bcast(d, root, head, sizeof head);
    if (st == REMAT_OK)
        st = remat_dist_bcast(d, root, r->message, sizeof r->message);
    if (st != REMAT_OK)
        return st;
    if (!me) {
        int nh = (int)head[4];
        r->objective = head[0];
        r->iterations = (int)head[1];
        r->evaluations = (int64_t)head[2];
        r->converged = head[3] != 0;
        r->n_history = nh;
        r->n_params = P;
        r->n_residuals = fit->n_res;
        r->optimizer = fit_driver_name(fit);
        r->jacobian = fit->optimizer == REMAT_FIT_LM ? remat_fit_jacobian_name(fit->jac_mode) : NULL;
        r->params = rmi_calloc((size_t)P + 1, sizeof *r->params);
        r->param_names = rmi_calloc((size_t)P + 1, sizeof *r->param_names);
        r->history_objective = rmi_calloc((size_t)nh + 1, sizeof *r->history_objective);
        r->history_params = rmi_calloc((size_t)nh * (size_t)P + 1, sizeof *r->history_params);
        int ok = r->params && r->param_names && r->history_objective && r->history_params;
        for (int i = 0; ok && i < P; i++)
            ok = (r->param_names[i] = rmi_strdup(fit->names[i])) != NULL;
        st = ok ? REMAT_OK : rmi_error(REMAT_ERR_NOMEM, "fit: out of memory");
    }
    /* a rank out of memory still takes part, into scratch */
    st = remat_dist_agree(d, st);
    if (st == REMAT_OK)
        st = remat_dist_bcast(d, root, r->params, sizeof *r->params * (size_t)P);
    if (st == REMAT_OK)
        st = remat_dist_bcast(d, root, r->history_objective, sizeof(double) * (size_t)r->n_history);
    if (st == REMAT_OK)
        st = remat_dist_bcast(d, root, r->history_params, sizeof(double) * (size_t)r->n_history * (size_t)P);
    return st;
}

remat_status fit_spread_starts(struct remat_fit *fit, int n_starts, double *objs, int64_t *evals,
                               remat_status local, int best_k, remat_fit_result *best, int failed_k,
                               remat_fit_result *failed, int *have_best)
{
    *have_best = 0;
    remat_dist *d = fit->opt.dist;
    remat_status st = remat_dist_agree(d, local);
    if (st != REMAT_OK)
        return st;
    int *owner = rmi_malloc(sizeof *owner * (size_t)n_starts);
    int64_t *len = rmi_malloc(sizeof *len * (size_t)n_starts);
    double *mine = rmi_malloc(sizeof *mine * 2 * (size_t)n_starts);
    double *all = rmi_malloc(sizeof *all * 2 * (size_t)n_starts);
    st = owner && len && mine && all ? REMAT_OK : rmi_error(REMAT_ERR_NOMEM, "fit: out of memory");
    st = remat_dist_agree(d, st);
    int m = 0;
    for (int k = 0; st == REMAT_OK && k < n_starts; k++) {
        owner[k] = start_owner(fit, n_starts, k);
        len[k] = 2;
        if (owner[k] == remat_dist_rank(d)) {
            mine[m++] = objs[k];
            mine[m++] = (double)evals[k];
        }
    }
    if (st == REMAT_OK)
        st = remat_dist_gather(d, n_starts, owner, len, mine, all);
    /* the best is the first start with the least SSE, as one rank finds
     * it; when none succeeded, every start failed and start 0 is the first */
    int best_at = -1, failed_at = -1;
    for (int k = 0; st == REMAT_OK && k < n_starts; k++) {
        objs[k] = all[2 * k];
        evals[k] = (int64_t)all[2 * k + 1];
        if (!isnan(objs[k]) && (best_at < 0 || objs[k] < objs[best_at]))
            best_at = k;
        if (isnan(objs[k]) && failed_at < 0)
            failed_at = k;
    }
    int k = best_at >= 0 ? best_at : failed_at;
    if (st == REMAT_OK && k >= 0) {
        remat_fit_result *r = best_at >= 0 ? best : failed;
        int root = owner[k];
        if (root != remat_dist_rank(d) || (best_at >= 0 ? best_k : failed_k) != k) {
            remat_fit_result_clear(r); /* only the owner's copy of start k is kept */
            memset(r, 0, sizeof *r);
        }
        st = bcast_result(fit, root, r);
        *have_best = best_at >= 0;
    }
    rmi_free(owner);
    rmi_free(len);
    rmi_free(mine);
    rmi_free(all);
    return st;
}

/* Every experiment's model delay on every rank: each rank evaluates its own
 * (fit->local; NaN for a profile or a delay not reached), then they are
 * gathered (one double per experiment) as the residuals are. */
remat_status remat_fit_delays(remat_fit *fit, const double *params, double *tau)
{
    if (!fit || !params || !tau)
        return rmi_error(REMAT_ERR_NULL, "fit: delays: %s is NULL", !fit ? "the fit" : !params ? "params" : "tau");
    int E = fit->E;
    double *mine = fit->group ? rmi_calloc((size_t)fit->n_local + 1, sizeof *mine) : NULL;
    remat_status st = fit->group && !mine ? rmi_error(REMAT_ERR_NOMEM, "fit: out of memory") : REMAT_OK;
    for (int e = 0; e < E; e++)
        tau[e] = NAN;
    for (int l = 0; st == REMAT_OK && l < fit->n_local; l++) {
        int e = fit->local[l];
        double v = NAN;
        if (fit->exp[e].delay)
            st = fit_delay_eval(fit, e, params, &v);
        if (mine)
            mine[l] = v;
        else
            tau[e] = v;
    }
    if (fit->group) {
        st = remat_dist_agree(fit->group, st);
        for (int e = 0; e < E; e++)
            fit->len[e] = 1;
        if (st == REMAT_OK)
            st = remat_dist_gather(fit->group, E, fit->owner, fit->len, mine, tau);
    }
    rmi_free(mine);
    return st;
}

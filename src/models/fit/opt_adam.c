/*
 * opt_adam.c — Adam (remat/optim.h, optax.adam) for a least-squares fit, run
 * the way a careful optax script runs it:
 *
 * - scale-aware variables: Adam's step is about lr in every variable
 *   whatever the gradient's size, so the variable must have a natural unit.
 *   A log-scale parameter's theta = log k is one (a step is a relative change
 *   of k; fit.c puts Adam's positive rate constants on the log scale even
 *   with a lower bound of 0). A linear-scale parameter is divided by its box
 *   width when both bounds are finite, else by |start| (1 for a start of 0):
 *   u = theta / s.
 * - bounds by projection onto the box in u after each step (optax:
 *   jnp.clip after apply_updates).
 * - reduce on plateau (optax.contrib.reduce_on_plateau): when the best
 *   objective has not fallen by PLATEAU_RTOL relative over PATIENCE steps,
 *   lr is multiplied by FACTOR and the run goes on from the best point with
 *   fresh moments. A constant lr leaves Adam circling the optimum at a
 *   distance of about lr; the reductions let it settle.
 * - a step whose objective or gradient is not finite (the integrator failed
 *   at the new point) is rejected as a trial point: back to the best point,
 *   lr times FACTOR, fresh moments.
 * - stopping: converged when the objective is 0, the gradient falls below
 *   gtol F(start), or lr has been reduced below MIN_LR_RATIO of its start
 *   (no relative improvement left at any rate); stopped after max_iters steps
 *   (rejected ones included).
 * - the result is the best point seen (the history keeps every accepted
 *   iterate), as a script keeping its best loss returns it.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "models/fit/optimize.h"
#include "remat/optim.h"

#define PATIENCE 50       /* steps without PLATEAU_RTOL relative progress */
#define PLATEAU_RTOL 1e-4 /* of the best objective */
#define FACTOR 0.5        /* lr reduction on a plateau or a rejected step */
#define MIN_LR_RATIO 1e-3 /* lr below this times its start: converged */

typedef struct {
    fit_run *run;
    int n;
    double *s;        /* [n] theta = u s */
    double *u, *gu;   /* [n] Adam's variables and gradient */
    double *x, *gx;   /* [n] theta and dF/dtheta at the current point */
    double *xb, *gxb; /* [n] the best point and its gradient */
    double F, Fb, gn, gnb;
} adam_state;

/* Per-variable unit: 1 on the log scale, the box width or |start| on the linear one. */
static double var_scale(const fit_vars *v, int j)
{
    int i = v->free_idx[j];
    if (v->logscale[i])
        return 1.0;
    double w = v->thi[j] - v->tlo[j];
    if (isfinite(w) && w > 0)
        return w;
    return v->start[i] != 0 ? fabs(v->start[i]) : 1.0;
}

static void keep_best(adam_state *a)
{
    a->Fb = a->F;
    a->gnb = a->gn;
    memcpy(a->xb, a->x, sizeof *a->x * (size_t)a->n);
    memcpy(a->gxb, a->gx, sizeof *a->gx * (size_t)a->n);
}

static void back_to_best(adam_state *a)
{
    a->F = a->Fb;
    a->gn = a->gnb;
    memcpy(a->x, a->xb, sizeof *a->x * (size_t)a->n);
    memcpy(a->gx, a->gxb, sizeof *a->gx * (size_t)a->n);
}

/* A smaller rate from the best point, after a step that failed or a
 * plateau: fresh moments, the plateau count started again. */
static void restart_smaller(adam_state *a, remat_adam *adam, double *lr, double *plateau_ref, int *since,
                            int *reductions)
{
    (*reductions)++;
    *lr *= FACTOR;
    back_to_best(a);
    remat_adam_reset(adam);
    remat_adam_set_lr(adam, *lr);
    *plateau_ref = a->Fb;
    *since = 0;
}

/* The result is the best point: objective and parameters (the history ends
 * at the last accepted iterate). */
static void report_best(adam_state *a)
{
    fit_run *run = a->run;
    fit_x_to_p(run->vars, a->xb, run->p);
    run->res->objective = a->Fb;
    memcpy(run->res->params, run->p, sizeof *run->p * (size_t)run->obj->P);
}

remat_status fit_opt_adam(fit_run *run)
{
    const fit_vars *v = run->vars;
    int n = run->n;
    double lr0 = run->lr > 0 ? run->lr : REMAT_FIT_ADAM_DEFAULT_LR, lr = lr0;
    adam_state a = {.run = run, .n = n};
    double *buf = rmi_calloc((size_t)n * 9, sizeof *buf);
    remat_adam *adam = NULL;
    remat_status st = REMAT_OK;
    if (buf) {
        a.s = buf, a.u = buf + n, a.gu = buf + 2 * n, a.x = buf + 3 * n, a.gx = buf + 4 * n;
        a.xb = buf + 5 * n, a.gxb = buf + 6 * n;
        double *lo = buf + 7 * n, *hi = buf + 8 * n;
        for (int j = 0; j < n; j++) {
            a.s[j] = var_scale(v, j);
            lo[j] = v->tlo[j] / a.s[j];
            hi[j] = v->thi[j] / a.s[j];
        }
        remat_adam_options ao = remat_adam_optax(lr0);
        if (v->bounded) {
            ao.lo = lo;
            ao.hi = hi;
        }
        st = remat_adam_new(n, &ao, &adam);
    } else {
        st = rmi_error(REMAT_ERR_NOMEM, "out of memory");
    }
    /* every rank's allocations agreed on before the evaluations' collectives */
    if (fit_ready(run, st) != REMAT_OK)
        goto done;
    fit_x_start(v, a.x);
    run->iter = 0;
    if (!fit_eval_grad_x(run, a.x, &a.F, a.gx))
        goto done;
    a.gn = fit_inf_norm(n, a.gx);
    keep_best(&a);
    if (fit_record_start(run, a.F, a.gn, a.x))
        goto done;
    double plateau_ref = a.F; /* the best objective when the plateau count began */
    int since = 0, rejected = 0, reductions = 0, last_rejected = 0;
    for (int it = 1; !run->user_stop; it++) {
        if (a.F == 0 || a.gn <= run->gtol * run->F0) {
            fit_finish(run, 1, "converged: %s after %d Adam steps (F = %.6g)",
                       a.F == 0 ? "exact fit" : "gradient below gtol", it - 1, a.F);
            goto done;
        }
        if (lr < MIN_LR_RATIO * lr0 && last_rejected) {
            fit_finish(run, 0,
                       "stopped: the integration fails at every step from the best point, down to lr %g "
                       "(%d rejected steps; best F = %.6g after %d steps)",
                       lr / FACTOR, rejected, a.Fb, it - 1);
            goto done;
        }
        if (lr < MIN_LR_RATIO * lr0) {
            fit_finish(run, 1,
                       "converged: no relative decrease of %g in %d steps at any learning rate down to %g "
                       "(%d reductions, %d rejected steps; best F = %.6g after %d steps)",
                       PLATEAU_RTOL, PATIENCE, lr / FACTOR, reductions, rejected, a.Fb, it - 1);
            goto done;
        }
        if (it > run->max_iters) {
            fit_finish(run, 0, "stopped: %d Adam steps (max_iters) without convergence (lr %g of %g; best F = %.6g)",
                       run->max_iters, lr, lr0, a.Fb);
            goto done;
        }
        run->iter = it;
        for (int j = 0; j < n; j++) {
            a.u[j] = a.x[j] / a.s[j];
            a.gu[j] = a.gx[j] * a.s[j];
        }
        st = remat_adam_update(adam, a.u, a.gu);
        if (st != REMAT_OK) {
            fit_fail(run, st);
            goto done;
        }
        for (int j = 0; j < n; j++)
            a.x[j] = a.u[j] * a.s[j];
        int r = fit_eval_grad_x_trial(run, a.x, &a.F, a.gx);
        if (r == 0)
            goto done;
        if (r < 0) { /* the integrator failed there: a shorter step from the best point */
            rejected++;
            last_rejected = 1;
            restart_smaller(&a, adam, &lr, &plateau_ref, &since, &reductions);
            continue;
        }
        a.gn = fit_inf_norm(n, a.gx);
        if (fit_record_x(run, a.F, a.gn, a.x) != REMAT_OK)
            goto done;
        if (a.F < a.Fb)
            keep_best(&a);
        if (a.Fb < plateau_ref * (1 - PLATEAU_RTOL)) {
            plateau_ref = a.Fb;
            since = 0;
        } else if (++since >= PATIENCE) {
            last_rejected = 0;
            restart_smaller(&a, adam, &lr, &plateau_ref, &since, &reductions);
        }
    }
    fit_finish(run, 0, "stopped");
done:
    if (run->st == REMAT_OK && buf && run->res->n_history > 0)
        report_best(&a);
    remat_adam_free(adam);
    rmi_free(buf);
    return run->st;
}

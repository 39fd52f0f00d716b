/*
 * opt_lm.c — Levenberg–Marquardt through GSL's gsl_multifit_nlinear: trust
 * region with the LM subproblem, QR solver, Nielsen's damping updates (GSL's
 * defaults, as in Moré 1978 / Nielsen 1999), and Levenberg's scaling D = I
 * rather than GSL's default, Moré's (opt.lm_more_scaling): Moré's scales
 * each variable by the largest column norm of J seen so far, and GSL's
 * manual finds Levenberg's more robust where parameters "evaporate" (run off
 * to infinity): BoxBOD's b2 does under Moré's from NIST's first start, to
 * 7.8e5 at SSE 9771.5 against the optimum's 1168.0 (adaptive Rodas5);
 * on the battery under adaptive Tsit5 Levenberg's scaling reaches 11/11
 * declared starts and 80% of all starts against 10/11 and 72% (fit.h).
 *
 * The Jacobian comes from reverse mode (problem.c: one VJP run per row of the
 * largest experiment's block) in p, then scaled column by column by dp/dx.
 * Stopping: a step |dx_j| <= xtol (xtol + |x_j|) (GSL's test), a gradient
 * ||dF/dx||_inf <= gtol F(start) (relative, so the units of the data do not
 * matter), an exact fit, or GSL_ENOPROG: 15 damped trial steps in a row failed
 * to lower F, which at a minimum means it is found to machine precision.
 */
#include <gsl/gsl_blas.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_multifit_nlinear.h>
#include <math.h>
#include <stdlib.h>

#include "core/alloc.h"
#include "core/error.h"
#include "models/fit/optimize.h"

/* a trial point whose residuals are not finite gets this in every residual:
 * ||f|| is then larger than at any finite iterate, so GSL rejects the step
 * (an Inf would not do: GSL's rho test lets NaN through) */
#define REJECT_RESIDUAL 1e100

typedef struct {
    fit_run *run;
    double *J;  /* [N][P] natural */
    double *pt; /* [P] */
    int at_start;
} lm_ctx;

static int lm_f(const gsl_vector *x, void *vctx, gsl_vector *f)
{
    lm_ctx *c = vctx;
    fit_run *run = c->run;
    fit_x_to_p(run->vars, x->data, c->pt);
    double F;
    remat_status st = fit_obj_residuals(run->obj, c->pt, &F, f->data);
    if (st != REMAT_OK) {
        fit_fail(run, st);
        return GSL_EFAILED;
    }
    if (!isfinite(F)) {
        if (c->at_start) {
            fit_check_finite(run, "objective", F, 0, NULL, c->pt);
            return GSL_EFAILED;
        }
        for (size_t i = 0; i < f->size; i++)
            f->data[i * f->stride] = REJECT_RESIDUAL;
    }
    return GSL_SUCCESS;
}

static int lm_df(const gsl_vector *x, void *vctx, gsl_matrix *J)
{
    lm_ctx *c = vctx;
    fit_run *run = c->run;
    const fit_vars *v = run->vars;
    int64_t N = run->obj->n_res, P = run->obj->P;
    fit_x_to_p(v, x->data, c->pt);
    remat_status st = fit_obj_jacobian(run->obj, c->pt, c->J);
    if (st != REMAT_OK) {
        fit_fail(run, st);
        return GSL_EFAILED;
    }
    for (int j = 0; j < run->n; j++) {
        double s = fit_dp_dx(v, x->data, c->pt, j);
        int i = v->free_idx[j];
        for (int64_t k = 0; k < N; k++) {
            double Jkj = c->J[k * P + i] * s;
            if (!isfinite(Jkj)) {
                fit_check_finite(run, "Jacobian", Jkj, 0, NULL, c->pt);
                return GSL_EFAILED;
            }
            J->data[(size_t)k * J->tda + (size_t)j] = Jkj;
        }
    }
    return GSL_SUCCESS;
}

static double objective(const gsl_multifit_nlinear_workspace *w)
{
    double nf = gsl_blas_dnrm2(w->f);
    return nf * nf;
}

/* dF/dx = 2 J^T f; GSL keeps g = J^T f */
static double grad_norm(const gsl_multifit_nlinear_workspace *w)
{
    return 2.0 * fit_inf_norm((int)w->g->size, w->g->data);
}

remat_status fit_opt_lm(fit_run *run)
{
    int n = run->n, P = run->obj->P;
    size_t N = (size_t)run->obj->n_res;
    if (N < (size_t)n) {
        run->st = rmi_error(REMAT_ERR_VALUE,
                            "fit: lm needs at least as many measured cells (%zu) as free parameters (%d)", N, n);
        snprintf(run->res->message, sizeof run->res->message, "%s", remat_last_error());
        return run->st;
    }
    fit_gsl_quiet_begin();
    gsl_multifit_nlinear_parameters prm = gsl_multifit_nlinear_default_parameters();
    prm.scale = run->lm_more_scaling ? gsl_multifit_nlinear_scale_more : gsl_multifit_nlinear_scale_levenberg;
    gsl_multifit_nlinear_workspace *w = gsl_multifit_nlinear_alloc(gsl_multifit_nlinear_trust, &prm, N, (size_t)n);
    gsl_vector *x = gsl_vector_alloc((size_t)n);
    lm_ctx c = {.run = run, .at_start = 1};
    c.J = rmi_malloc(sizeof *c.J * N * (size_t)P);
    c.pt = rmi_malloc(sizeof *c.pt * (size_t)P);
    if (fit_ready(run, w && x && c.J && c.pt ? REMAT_OK
                                                     : rmi_error(REMAT_ERR_NOMEM, "out of memory for a %zu x %d "
                                                                 "Jacobian", N, n)) != REMAT_OK)
        goto done;
    gsl_multifit_nlinear_fdf fdf = {.f = lm_f, .df = lm_df, .n = N, .p = (size_t)n, .params = &c};
    fit_x_start(run->vars, x->data);
    run->iter = 0;
    int status = gsl_multifit_nlinear_init(x, &fdf, w);
    c.at_start = 0;
    if (run->st != REMAT_OK)
        goto done;
    if (status) {
        fit_fail_gsl(run, status);
        goto done;
    }
    double F = objective(w), gn = grad_norm(w);
    if (fit_record_start(run, F, gn, w->x->data))
        goto done;
    for (int it = 1; !run->user_stop; it++) {
        if (!fit_iteration_begin(run, it, F))
            goto done;
        status = gsl_multifit_nlinear_iterate(w);
        if (run->st != REMAT_OK)
            goto done;
        if (status == GSL_ENOPROG) {
            fit_finish(run, 1,
                       "converged: no damped step lowers the sum of squares any more (F = %.6g, |grad| = %.3g)",
                       F, gn);
            goto done;
        }
        if (status) {
            fit_fail_gsl(run, status);
            goto done;
        }
        F = objective(w);
        gn = grad_norm(w);
        if (fit_record_x(run, F, gn, w->x->data) != REMAT_OK)
            goto done;
        int small_step = fit_step_below_xtol(run, w->x->data, w->dx->data);
        if (F == 0 || gn <= run->gtol * run->F0 || small_step) {
            fit_finish(run, 1, "converged: %s after %d iterations (F = %.6g)",
                       F == 0 ? "exact fit" : small_step ? "relative step below xtol" : "gradient below gtol", it, F);
            goto done;
        }
    }
    fit_finish(run, 0, "stopped");
done:
    fit_gsl_quiet_end();
    if (x)
        gsl_vector_free(x);
    if (w)
        gsl_multifit_nlinear_free(w);
    rmi_free(c.J);
    rmi_free(c.pt);
    return run->st;
}

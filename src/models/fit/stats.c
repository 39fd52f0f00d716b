/*
 * stats.c — what a regression tool reports at the optimum (remat/fit.h,
 * remat_fit_statistics): standard errors, 95% intervals, correlations and
 * the identifiability test, from one reverse-mode Jacobian.
 *
 * The covariance s^2 (J^T J)^-1 is formed from the SVD of J with columns
 * scaled by |p| (J D = U S V^T, D = diag|p|): (J^T J)^-1 = D V S^-2 V^T D,
 * which never forms J^T J (whose condition number is the square of J's) and
 * whose small singular values name the directions the data do not fix
 * (Bates & Watts, Nonlinear Regression Analysis, 1988, sec. 2.3; the same
 * test as lmfit's and Matlab's nlparci warnings).
 */
#include <gsl/gsl_cdf.h>
#include <gsl/gsl_linalg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "models/fit/fit_impl.h"

void remat_fit_stats_clear(remat_fit_stats *s)
{
    if (!s)
        return;
    rmi_free(s->se);
    rmi_free(s->ci_lo);
    rmi_free(s->ci_hi);
    rmi_free(s->corr);
    rmi_free(s->unidentifiable);
    memset(s, 0, sizeof *s);
}

static remat_status alloc_stats(remat_fit_stats *s, int P)
{
    size_t n = (size_t)P;
    s->se = rmi_malloc(sizeof *s->se * n);
    s->ci_lo = rmi_malloc(sizeof *s->ci_lo * n);
    s->ci_hi = rmi_malloc(sizeof *s->ci_hi * n);
    s->corr = rmi_malloc(sizeof *s->corr * n * n);
    s->unidentifiable = rmi_calloc(n, sizeof *s->unidentifiable);
    if (!s->se || !s->ci_lo || !s->ci_hi || !s->corr || !s->unidentifiable)
        return rmi_error(REMAT_ERR_NOMEM, "fit: out of memory for the statistics");
    for (size_t i = 0; i < n; i++) {
        s->se[i] = s->ci_lo[i] = s->ci_hi[i] = NAN;
        for (size_t j = 0; j < n; j++)
            s->corr[i * n + j] = NAN;
    }
    return REMAT_OK;
}

/* cov (n x n, free parameters) from the SVD of the column-scaled J; flags
 * the parameters in the directions of the small singular values. */
static void covariance(remat_fit_stats *s, const struct remat_fit *fit, const gsl_matrix *V, const gsl_vector *S,
                       const double *d, double *cov, int *inf_se)
{
    int n = fit->vars.n_free;
    double smax = gsl_vector_get(S, 0), smin = gsl_vector_get(S, (size_t)n - 1);
    s->cond = smin > 0 ? (smax / smin) * (smax / smin) : INFINITY;
    for (int k = 0; k < n; k++) {
        double sk = gsl_vector_get(S, (size_t)k);
        if (sk > REMAT_FIT_IDENTIFIABLE_RTOL * smax)
            continue;
        for (int j = 0; j < n; j++)
            if (fabs(gsl_matrix_get(V, (size_t)j, (size_t)k)) >= 0.1) {
                s->unidentifiable[fit->vars.free_idx[j]] = true;
                if (sk == 0)
                    inf_se[j] = 1;
            }
    }
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++) {
            double v = 0;
            for (int k = 0; k < n; k++) {
                double sk = gsl_vector_get(S, (size_t)k);
                if (sk > 0)
                    v += gsl_matrix_get(V, (size_t)a, (size_t)k) * gsl_matrix_get(V, (size_t)b, (size_t)k) / (sk * sk);
            }
            cov[a * n + b] = s->s2 * d[a] * d[b] * v;
        }
}

remat_status remat_fit_statistics(remat_fit *fit, const double *params, remat_fit_stats *s)
{
    if (!s)
        return rmi_error(REMAT_ERR_NULL, "fit: statistics output is NULL");
    memset(s, 0, sizeof *s);
    if (!fit || !params)
        return rmi_error(REMAT_ERR_NULL, "fit: %s is NULL", !fit ? "the fit" : "params");
    int P = fit->P, n = fit->vars.n_free;
    int64_t N = fit->n_res;
    if (N - n < 1)
        return rmi_error(REMAT_ERR_VALUE,
                         "fit: statistics need more measured cells (%lld) than free parameters (%d): "
                         "no degrees of freedom left",
                         (long long)N, n);
    s->n_params = P;
    s->n_free = n;
    s->n_residuals = N;
    s->dof = N - n;
    double *J = rmi_malloc(sizeof *J * (size_t)N * (size_t)P), *d = rmi_malloc(sizeof *d * (size_t)n);
    double *cov = rmi_malloc(sizeof *cov * (size_t)n * (size_t)n);
    int *inf_se = rmi_calloc((size_t)n, sizeof *inf_se);
    gsl_matrix *A = gsl_matrix_alloc((size_t)N, (size_t)n), *V = gsl_matrix_alloc((size_t)n, (size_t)n);
    gsl_vector *S = gsl_vector_alloc((size_t)n), *work = gsl_vector_alloc((size_t)n);
    remat_status st = alloc_stats(s, P);
    if (st == REMAT_OK && (!J || !d || !cov || !inf_se || !A || !V || !S || !work))
        st = rmi_error(REMAT_ERR_NOMEM, "fit: out of memory for a %lld x %d Jacobian", (long long)N, n);
    st = fit_agree(fit->group, st); /* every rank goes on to the collectives below, or none */
    if (st == REMAT_OK)
        st = remat_fit_objective(fit, params, &s->sse);
    if (st == REMAT_OK)
        st = fit_obj_jacobian(&fit->obj, params, J);
    for (int j = 0; st == REMAT_OK && j < n; j++) {
        int i = fit->vars.free_idx[j];
        d[j] = params[i] != 0 ? fabs(params[i]) : 1.0;
        for (int64_t k = 0; k < N; k++) {
            double v = J[k * P + i];
            if (!isfinite(v)) {
                st = rmi_error(REMAT_ERR_NUMERIC, "fit: statistics: the Jacobian is %g in d/d%s", v, fit->names[i]);
                break;
            }
            gsl_matrix_set(A, (size_t)k, (size_t)j, v * d[j]);
        }
    }
    if (st == REMAT_OK) {
        fit_gsl_quiet_begin();
        int gs = gsl_linalg_SV_decomp(A, V, S, work);
        fit_gsl_quiet_end();
        if (gs)
            st = rmi_error(REMAT_ERR_BACKEND, "fit: statistics: GSL's SVD failed");
    }
    if (st == REMAT_OK) {
        s->s2 = s->sse / (double)s->dof;
        s->t95 = gsl_cdf_tdist_Pinv(0.975, (double)s->dof);
        covariance(s, fit, V, S, d, cov, inf_se);
        for (int a = 0; a < n; a++) {
            int i = fit->vars.free_idx[a];
            s->se[i] = inf_se[a] ? INFINITY : sqrt(fmax(cov[a * n + a], 0.0));
            s->ci_lo[i] = params[i] - s->t95 * s->se[i];
            s->ci_hi[i] = params[i] + s->t95 * s->se[i];
            s->n_unidentifiable += s->unidentifiable[i];
        }
        for (int a = 0; a < n; a++)
            for (int b = 0; b < n; b++) {
                int i = fit->vars.free_idx[a], j = fit->vars.free_idx[b];
                double q = s->se[i] * s->se[j];
                s->corr[(size_t)i * (size_t)P + (size_t)j] =
                    a == b ? 1.0 : (q > 0 && isfinite(q) ? cov[a * n + b] / q : NAN);
            }
    }
    rmi_free(J);
    rmi_free(d);
    rmi_free(cov);
    rmi_free(inf_se);
    gsl_matrix_free(A);
    gsl_matrix_free(V);
    gsl_vector_free(S);
    gsl_vector_free(work);
    if (st != REMAT_OK) {
        char why[512];
        snprintf(why, sizeof why, "%s", remat_last_error());
        remat_fit_stats_clear(s);
        return rmi_error(st, "%s", why);
    }
    return REMAT_OK;
}

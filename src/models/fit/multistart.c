/*
 * multistart.c — remat_fit_run: the optimizer from the start values and,
 * with opt.starts = N > 1, from N - 1 seeded random starts; the best fit is
 * the result, with the spread of the optima (remat/fit.h, "Multi-start").
 *
 * The random starts are drawn from opt.seed by fit_vars_draw_start (vars.h,
 * where their rules are); every rank draws every start: the same stream.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "models/fit/fit_impl.h"

#define SPREAD_RTOL 1e-4 /* a start "reached the best" within this relative SSE */

static void restore(struct remat_fit *fit, const double *declared)
{
    memcpy(fit->vars.start, declared, sizeof *declared * (size_t)fit->P);
    fit_x_setup(&fit->vars);
}

remat_status remat_fit_run(remat_fit *fit, remat_fit_result *result)
{
    if (!result)
        return rmi_error(REMAT_ERR_NULL, "fit: result is NULL");
    memset(result, 0, sizeof *result);
    if (!fit)
        return rmi_error(REMAT_ERR_NULL, "fit: the fit is NULL");
    int n = fit->opt.starts > 1 ? fit->opt.starts : 1;
    double *objs = rmi_malloc(sizeof *objs * (size_t)n), *declared = rmi_malloc(sizeof *declared * (size_t)fit->P);
    if (!objs || !declared) {
        rmi_free(objs);
        rmi_free(declared);
        snprintf(result->message, sizeof result->message, "fit: out of memory");
        return rmi_error(REMAT_ERR_NOMEM, "fit: out of memory");
    }
    memcpy(declared, fit->vars.start, sizeof *declared * (size_t)fit->P);
    uint64_t rng = fit->opt.seed;
    /* each start's point and a failed start's message, for the result */
    double *points = rmi_malloc(sizeof *points * (size_t)n * (size_t)(fit->P ? fit->P : 1));
    char **msgs = rmi_calloc((size_t)n, sizeof *msgs);
    remat_fit_result best = {0}, failed = {0};
    int have_best = 0, have_failed = 0, n_failed = 0, best_k = -1, failed_k = -1;
    int64_t evals = 0, *start_evals = rmi_calloc((size_t)n, sizeof *start_evals);
    remat_status st = start_evals && points && msgs ? REMAT_OK : rmi_error(REMAT_ERR_NOMEM, "fit: out of memory");
    remat_status local = st; /* spread starts: the error that stopped this rank's */
    if (st != REMAT_OK && !fit->spread_starts) {
        snprintf(result->message, sizeof result->message, "%s", remat_last_error());
        goto done;
    }
    for (int k = 0; k < n; k++) {
        if (k > 0)
            fit_vars_draw_start(&fit->vars, declared, &rng); /* every rank draws every start: the same stream */
        objs[k] = NAN;
        if (points)
            memcpy(points + (size_t)k * (size_t)fit->P, fit->vars.start, sizeof *points * (size_t)fit->P);
        if (!fit_spread_owns_start(fit, n, k) || local != REMAT_OK)
            continue;
        remat_fit_result r;
        remat_status sk = fit_run_single(fit, &r);
        evals += r.evaluations;
        start_evals[k] = r.evaluations;
        objs[k] = sk == REMAT_OK ? r.objective : NAN;
        if (sk == REMAT_OK && (!have_best || r.objective < best.objective)) {
            remat_fit_result_clear(&best);
            best = r;
            have_best = 1;
            best_k = k;
        } else if (sk == REMAT_ERR_NUMERIC) {
            /* one start that blows up the integration is one failed start */
            n_failed++;
            msgs[k] = rmi_strdup(r.message[0] ? r.message : remat_last_error()); /* NULL: said without it */
            if (!have_failed) {
                failed = r;
                have_failed = 1;
                failed_k = k;
            } else {
                remat_fit_result_clear(&r);
            }
        } else if (sk != REMAT_OK && fit->spread_starts) {
            local = sk; /* agreed on with the other ranks below */
            remat_fit_result_clear(&r);
        } else if (sk != REMAT_OK) {
            remat_fit_result_clear(&best);
            remat_fit_result_clear(&failed);
            *result = r;
            st = sk;
            goto done;
        } else {
            remat_fit_result_clear(&r);
        }
    }
    if (fit->spread_starts) {
        st = fit_spread_starts(fit, n, objs, start_evals, local, best_k, &best, failed_k, &failed, &have_best);
        if (st != REMAT_OK) {
            remat_fit_result_clear(&best);
            remat_fit_result_clear(&failed);
            snprintf(result->message, sizeof result->message, "%s", remat_last_error());
            goto done;
        }
        if (have_best)
            remat_fit_result_clear(&failed);
        if ((st = fit_spread_gather_messages(fit, n, msgs)) != REMAT_OK) {
            remat_fit_result_clear(&best);
            remat_fit_result_clear(&failed);
            snprintf(result->message, sizeof result->message, "%s", remat_last_error());
            goto done;
        }
        evals = 0;
        n_failed = 0;
        for (int k = 0; k < n; k++) {
            evals += start_evals[k];
            n_failed += isnan(objs[k]) != 0;
        }
    }
    if (have_best) {
        remat_fit_result_clear(&failed);
        *result = best;
    } else {
        *result = failed; /* every start failed: the first one's message */
        st = rmi_error(REMAT_ERR_NUMERIC, "%s", result->message);
    }
    result->evaluations = evals;
    result->n_starts = n;
    result->starts_failed = n_failed;
    for (int k = 0; have_best && k < n; k++)
        result->starts_at_best += objs[k] <= result->objective + SPREAD_RTOL * fabs(result->objective);
    result->start_objectives = objs;
    result->start_params = points;
    result->start_messages = msgs;
    objs = points = NULL;
    msgs = NULL;
done:
    restore(fit, declared);
    rmi_free(start_evals);
    rmi_free(objs);
    rmi_free(points);
    for (int k = 0; msgs && k < n; k++)
        rmi_free(msgs[k]);
    rmi_free(msgs);
    rmi_free(declared);
    return st;
}

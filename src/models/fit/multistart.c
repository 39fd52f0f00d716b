/*
 * multistart.c — remat_fit_run: the optimizer from the start values and,
 * with opt.starts = N > 1, from N - 1 seeded random starts; the best fit is
 * the result, with the spread of the optima (remat/fit.h, "Multi-start").
 *
 * Random starts, per free parameter, drawn with splitmix64 (Steele, Lea &
 * Flood 2014) from opt.seed, the same rules as bench/bench_battery.c:
 *   log scale   log-uniform in [lo, hi] when both are positive and finite;
 *               in [min(hi 1e-6, start/10), hi] when lo is 0 (or none) and
 *               hi finite; in [max(lo, start/10), start 10] when hi is
 *               infinite;
 *   linear      uniform in [lo, hi], an infinite end replaced by
 *               start -+ max(|start|, 1).
 * Fixed parameters keep their values.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "models/fit/fit_impl.h"

#define SPREAD_RTOL 1e-4 /* a start "reached the best" within this relative SSE */

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double uniform01(uint64_t *s) { return (double)(splitmix64(s) >> 11) * 0x1.0p-53; }

static void draw_start(struct remat_fit *fit, const double *declared, uint64_t *rng)
{
    for (int j = 0; j < fit->n_free; j++) {
        int i = fit->free_idx[j];
        double lo = fit->lo[i], hi = fit->hi[i], v = declared[i], u = uniform01(rng), p;
        if (fit->logscale[i]) {
            double a, b;
            if (lo > 0 && isfinite(hi)) {
                a = lo;
                b = hi;
            } else if (isfinite(hi)) {
                a = fmin(hi * 1e-6, v / 10);
                b = hi;
            } else {
                a = fmax(lo, v / 10);
                b = v * 10;
            }
            p = exp(log(a) + u * (log(b) - log(a)));
        } else {
            double w = fmax(fabs(v), 1.0), a = isfinite(lo) ? lo : v - w, b = isfinite(hi) ? hi : v + w;
            p = a + u * (b - a);
        }
        fit->start[i] = fmin(fmax(p, lo), hi);
    }
    fit_x_setup(fit);
}

/* A failed start's message travels as MSG_DOUBLES doubles of its bytes
 * (remat_dist_gather moves doubles): the owner's to every rank. */
#define MSG_DOUBLES 64 /* 512 bytes: remat_fit_result.message */

static remat_status gather_messages(struct remat_fit *fit, int n, char **msgs)
{
    remat_dist *d = fit->opt.dist;
    int rank = remat_dist_rank(d), m = 0;
    int *owner = malloc(sizeof *owner * (size_t)n);
    int64_t *len = malloc(sizeof *len * (size_t)n);
    double *mine = calloc((size_t)n * MSG_DOUBLES, sizeof *mine), *all = calloc((size_t)n * MSG_DOUBLES, sizeof *all);
    remat_status st = owner && len && mine && all ? REMAT_OK : rmi_error(REMAT_ERR_NOMEM, "fit: out of memory");
    st = remat_dist_agree(d, st);
    for (int k = 0; st == REMAT_OK && k < n; k++) {
        owner[k] = fit_spread_start_owner(fit, n, k);
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
        free(msgs[k]);
        msgs[k] = NULL;
        if (src[0] && !(msgs[k] = strndup(src, MSG_DOUBLES * sizeof(double) - 1)))
            st = rmi_error(REMAT_ERR_NOMEM, "fit: out of memory");
    }
    free(owner);
    free(len);
    free(mine);
    free(all);
    return st;
}

static void restore(struct remat_fit *fit, const double *declared)
{
    memcpy(fit->start, declared, sizeof *declared * (size_t)fit->P);
    fit_x_setup(fit);
}

remat_status remat_fit_run(remat_fit *fit, remat_fit_result *result)
{
    if (!result)
        return rmi_error(REMAT_ERR_NULL, "fit: result is NULL");
    memset(result, 0, sizeof *result);
    if (!fit)
        return rmi_error(REMAT_ERR_NULL, "fit: the fit is NULL");
    int n = fit->opt.starts > 1 ? fit->opt.starts : 1;
    double *objs = malloc(sizeof *objs * (size_t)n), *declared = malloc(sizeof *declared * (size_t)fit->P);
    if (!objs || !declared) {
        free(objs);
        free(declared);
        snprintf(result->message, sizeof result->message, "fit: out of memory");
        return rmi_error(REMAT_ERR_NOMEM, "fit: out of memory");
    }
    memcpy(declared, fit->start, sizeof *declared * (size_t)fit->P);
    uint64_t rng = fit->opt.seed;
    double *points = malloc(sizeof *points * (size_t)n * (size_t)(fit->P ? fit->P : 1));
    char **msgs = calloc((size_t)n, sizeof *msgs);
    remat_fit_result best = {0}, failed = {0};
    int have_best = 0, have_failed = 0, n_failed = 0, best_k = -1, failed_k = -1;
    int rank = remat_dist_rank(fit->opt.dist);
    int64_t evals = 0, *start_evals = calloc((size_t)n, sizeof *start_evals);
    remat_status st = start_evals && points && msgs ? REMAT_OK : rmi_error(REMAT_ERR_NOMEM, "fit: out of memory");
    remat_status local = st; /* spread starts: the error that stopped this rank's */
    if (st != REMAT_OK && !fit->spread_starts) {
        snprintf(result->message, sizeof result->message, "%s", remat_last_error());
        goto done;
    }
    for (int k = 0; k < n; k++) {
        if (k > 0)
            draw_start(fit, declared, &rng); /* every rank draws every start: the same stream */
        objs[k] = NAN;
        if (points)
            memcpy(points + (size_t)k * (size_t)fit->P, fit->start, sizeof *points * (size_t)fit->P);
        if (fit_spread_start_owner(fit, n, k) != rank || local != REMAT_OK)
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
            msgs[k] = strdup(r.message[0] ? r.message : remat_last_error()); /* NULL: said without it */
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
        if ((st = gather_messages(fit, n, msgs)) != REMAT_OK) {
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
    free(start_evals);
    free(objs);
    free(points);
    for (int k = 0; msgs && k < n; k++)
        free(msgs[k]);
    free(msgs);
    free(declared);
    return st;
}

/*
 * diagnose.c — why a reactor's integration gave a concentration that is not
 * finite: a rate that cannot be computed at the inlet or further on, rates
 * too fast for any number of steps, an adaptive integration's own failure,
 * or else steps too large for the rates.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "models/pfr/pfr_impl.h"

#define PROFILE_CAP ((int64_t)1 << 25) /* doubles of a profile run to find where a rate failed (256 MiB) */

/* Whether a rate cannot be computed at z with the state y: the mechanism's
 * message (file:line:column, the expression, z, why) set, wrapped in pfr's. */
static int rate_fails_at(const remat_pfr *r, double z, const double *y, const double *params)
{
    if (remat_mechanism_check_rates(r->m, z, y, params) == REMAT_OK)
        return 0;
    char why[512];
    snprintf(why, sizeof why, "%s", remat_last_error());
    rmi_error(REMAT_ERR_NUMERIC, "pfr: %s (inside the reactor: no step size avoids it)", why);
    return 1;
}

/* A rate that cannot be computed somewhere inside the reactor (k / (z - 5)):
 * the profile is run to the first row i that is not finite, and the rates
 * are checked with row i - 1's state (unless it has blown up) through that
 * step: at its start, middle and end, and, adaptive, at the z where the
 * integration stopped and that z rounded (it creeps up to a pole without
 * landing on it). 1 with the message set when one fails. */
static int singular_rate(remat_pfr *r, const double *params)
{
    int64_t rows = r->steps + 1, S = r->S;
    if (S == 0 || rows > PROFILE_CAP / S || (!r->profile && pfr_build_profile(r) != REMAT_OK))
        return 0;
    double *y = rmi_malloc(sizeof *y * (size_t)(rows * S)), stats[REMAT_ODE_STATS];
    int found = 0;
    if (!y)
        return 0;
    memcpy(y, r->inlet, sizeof *y * (size_t)S);
    if (pfr_run(r->profile, r, params, 1, (double *[]){y + S}) != REMAT_OK)
        goto done;
    int64_t i = 1;
    for (int bad = 0; i < rows && !bad; i += !bad)
        for (int64_t s = 0; s < S; s++)
            bad |= !isfinite(y[i * S + s]);
    if (i >= rows)
        goto done;
    const double *y0 = y + (i - 1) * S;
    /* a state already far past the inlet's scale is a blow-up (an unstable
     * step, k A^2 overflowing), not a pole the rates run into */
    double scale = 1;
    for (int64_t s = 0; s < S; s++)
        scale = fmax(scale, fabs(r->inlet[s]));
    for (int64_t s = 0; s < S; s++)
        if (!(fabs(y0[s]) <= 1e6 * scale))
            goto done;
    double z0 = (double)(i - 1) * r->h, z1 = (double)i * r->h;
    double at[3 + 16] = {z0, z0 + r->h / 2, z1};
    int n = 3;
    /* a failed adaptive integration leaves every row of the profile NaN: the
     * z it reached says where, with the last state known before it */
    if (r->opt.adaptive && remat_pfr_integration_stats(r, params, stats) == REMAT_OK) {
        double t = stats[REMAT_ODE_STAT_T];
        n = 0;
        at[n++] = t;
        for (int digits = 1; digits <= 15; digits++) {
            char buf[32];
            snprintf(buf, sizeof buf, "%.*g", digits, t);
            double rounded = strtod(buf, NULL);
            if (fabs(rounded - t) <= 1e-6 * fmax(fabs(t), r->h))
                at[n++] = rounded;
        }
    }
    for (int k = 0; k < n && !found; k++)
        found = rate_fails_at(r, at[k], y0, params);
done:
    rmi_free(y);
    return found;
}

/* Why the integration gave a value that is not finite, when more steps
 * cannot help: a rate that cannot be computed at the inlet or on the way
 * (the mechanism names the expression, and z), or rates so fast against the inlet concentrations
 * that a stable explicit method would need more than 2^53 steps (a param of
 * 1e308). REMAT_OK when neither: the steps are too large. */
remat_status pfr_hopeless(remat_pfr *r, const double *params)
{
    if (remat_mechanism_check_rates(r->m, 0.0, r->inlet, params) != REMAT_OK || singular_rate(r, params))
        return REMAT_ERR_NUMERIC;
    double *f = rmi_malloc(sizeof *f * (size_t)r->S), scale = 0, rate = 0;
    int fastest = 0;
    if (!f || remat_mechanism_eval_rhs(r->m, 0.0, r->inlet, params, f) != REMAT_OK) {
        rmi_free(f);
        return REMAT_OK; /* nothing more to say than the caller's message */
    }
    for (int s = 0; s < r->S; s++) {
        scale = fmax(scale, fabs(r->inlet[s]));
        if (fabs(f[s]) > rate)
            rate = fabs(f[s]), fastest = s;
    }
    double length = r->h * (double)r->steps, need = scale > 0 ? rate / scale * length : 0;
    remat_status st = REMAT_OK;
    char about[48];
    snprintf(about, sizeof about, isfinite(need) ? "about %.2g" : "more than 1e308", need);
    if (need > 0x1p53)
        st = rmi_error(REMAT_ERR_NUMERIC,
                       "pfr: %s: d%s/d%s is %g at the inlet: over a reactor of length %g a stable explicit "
                       "method would need %s steps, more than can be taken (2^53); check the parameter values",
                       remat_mechanism_source(r->m), remat_mechanism_species_name(r->m, fastest),
                       remat_mechanism_indep_name(r->m), f[fastest], length, about);
    rmi_free(f);
    return st;
}

/* An adaptive integration that produced a non-finite value: its own reason
 * (max_steps, stiffness) as REMAT_ERR_NUMERIC, after a rate that cannot be
 * computed (hopeless); REMAT_OK when neither says why. */
remat_status pfr_adaptive_failure(remat_pfr *r, const double *params)
{
    double stats[REMAT_ODE_STATS];
    double L = r->opt.length;
    remat_ode_options oo = pfr_ode_options(&r->opt, &L);
    if (!r->opt.adaptive)
        return REMAT_OK;
    if (pfr_hopeless(r, params) != REMAT_OK)
        return REMAT_ERR_NUMERIC;
    if (remat_pfr_integration_stats(r, params, stats) == REMAT_OK && remat_ode_stats_check(&oo, stats) != REMAT_OK) {
        char why[512];
        snprintf(why, sizeof why, "%s", remat_last_error());
        return rmi_error(REMAT_ERR_NUMERIC, "pfr: %s: %s", remat_mechanism_source(r->m), why);
    }
    return REMAT_OK;
}

/* A concentration that is not finite: pfr_pfr_hopeless() says why when it can,
 * else the steps are too large for the rates. */
remat_status pfr_check_finite(remat_pfr *r, const double *params, const double *c)
{
    int bad = 0;
    for (int s = 0; s < r->S; s++)
        bad |= !isfinite(c[s]);
    remat_status why = bad ? pfr_adaptive_failure(r, params) : REMAT_OK;
    if (why != REMAT_OK)
        return why;
    for (int s = 0; s < r->S; s++)
        if (!isfinite(c[s]))
            return pfr_hopeless(r, params) != REMAT_OK
                       ? REMAT_ERR_NUMERIC
                       : rmi_error(REMAT_ERR_NUMERIC,
                               "pfr: %s: the concentration of '%s' is %g at the outlet — the integration is "
                               "unstable at step size %g (%s, %lld steps); take more steps or a higher-order method",
                               remat_mechanism_source(r->m), remat_mechanism_species_name(r->m, s), c[s], r->h,
                               remat_ode_method_name(r->opt.method), (long long)r->steps);
    return REMAT_OK;
}

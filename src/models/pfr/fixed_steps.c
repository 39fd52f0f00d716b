/*
 * fixed_steps.c — the equal steps that integrate as adaptive stepping does
 * (remat_pfr_fixed_steps), for the ensemble, whose lanes step together.
 *
 * Adaptive stepping (diffrax's PID controller) spends its steps where the
 * solution moves; equal steps spread them, so the accepted count is a lower
 * bound on what they need, and doublings from it find the count: the first
 * n whose outlet is within the tolerance of n/2's (so, by the method's order
 * p, its own error is about 1/(2^p - 1) of that: well inside the tolerance,
 * with a margin for the other parameter sets of an ensemble) and of the
 * adaptive outlet. Each count is a new reactor: its program is a scan of
 * that length, compiled once.
 *
 * Where the adaptive run crosses a stiff transient (an ignition) it takes
 * tiny steps there and large ones elsewhere; equal steps small enough for
 * the transient are then orders of magnitude more than the adaptive count
 * (h2o2.yaml at 1100 K went on to 2^22 steps, nine minutes, and failed).
 * So the search stops at MAX_FIXED_RATIO times the count it starts from,
 * with a message that says equal steps cannot follow the transient.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "models/pfr/pfr_impl.h"

#define MAX_FIXED_STEPS (INT64_C(1) << 22)
#define MAX_FIXED_RATIO 64 /* equal steps at most this many times the adaptive count (or 16) */

static int within(int S, const double *a, const double *b, double rtol, double atol)
{
    for (int s = 0; s < S; s++)
        if (!(fabs(a[s] - b[s]) <= rtol * fabs(b[s]) + atol))
            return 0;
    return 1;
}

remat_status remat_pfr_fixed_steps(const remat_mechanism *m, const remat_pfr_options *opt, const double params[],
                                   int64_t *steps, int64_t *adaptive_steps)
{
    if (!m || !opt || !steps)
        return rmi_error(REMAT_ERR_NULL, "pfr fixed steps: %s is NULL",
                         !m ? "the mechanism" : !opt ? "the options" : "steps");
    if (!opt->adaptive)
        return rmi_error(REMAT_ERR_ARG, "pfr fixed steps: the options are not adaptive: nothing to match");
    int S = remat_mechanism_species_count(m);
    double *ya = rmi_calloc((size_t)S * 3 + 1, sizeof *ya), *yf = ya + S, *yprev = ya + 2 * S;
    if (!ya)
        return rmi_error(REMAT_ERR_NOMEM, "pfr: out of memory");
    remat_pfr *r = NULL;
    double stats[REMAT_ODE_STATS];
    remat_status st = remat_pfr_new(m, opt, &r);
    if (st == REMAT_OK)
        st = remat_pfr_outlet(r, params, ya);
    if (st == REMAT_OK)
        st = remat_pfr_integration_stats(r, params, stats);
    remat_pfr_free(r);
    if (st != REMAT_OK) {
        rmi_free(ya);
        return st;
    }
    int64_t na = (int64_t)stats[REMAT_ODE_STAT_ACCEPTED];
    if (adaptive_steps)
        *adaptive_steps = na;
    remat_pfr_options fo = *opt;
    fo.adaptive = false;
    fo.rtol = fo.atol = 0;
    fo.max_steps = 0;
    fo.profile_points = 0;
    fo.dt = 0;
    int have_prev = 0;
    int64_t n0 = na > 16 ? na : 16, cap = n0 <= MAX_FIXED_STEPS / MAX_FIXED_RATIO ? n0 * MAX_FIXED_RATIO
                                                                                : MAX_FIXED_STEPS;
    int64_t last = 0;
    for (int64_t n = n0; n <= cap; n *= 2) {
        last = n;
        fo.steps = n;
        st = remat_pfr_new(m, &fo, &r);
        if (st == REMAT_OK)
            st = remat_pfr_outlet(r, params, yf);
        remat_pfr_free(r);
        if (st == REMAT_ERR_NUMERIC) { /* an unstable explicit step: more steps */
            have_prev = 0;
            continue;
        }
        if (st != REMAT_OK)
            break;
        if (have_prev && within(S, yf, yprev, opt->rtol, opt->atol) && within(S, yf, ya, opt->rtol, opt->atol)) {
            *steps = n;
            rmi_free(ya);
            return REMAT_OK;
        }
        memcpy(yprev, yf, sizeof *yf * (size_t)S);
        have_prev = 1;
    }
    rmi_free(ya);
    if (st != REMAT_OK && st != REMAT_ERR_NUMERIC)
        return st;
    return rmi_error(REMAT_ERR_NUMERIC,
                     "pfr fixed steps: equal %s steps cannot follow this integration's stiff transient in %s: its "
                     "adaptive stepping takes %lld steps (rtol %g, atol %g), and no count of equal steps from %lld "
                     "to %lld (%lldx) gives its outlet within that tolerance",
                     remat_ode_method_name(opt->method), remat_mechanism_source(m), (long long)na, opt->rtol,
                     opt->atol, (long long)n0, (long long)last, (long long)(last / n0));
}

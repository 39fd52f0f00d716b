/*
 * stability.c — a fixed step too large for the rates, said before it is run
 * (pfr_check_step), and concentrations the integration made negative
 * (remat_pfr_negative).
 *
 * The step test is linear stability at the inlet (Hairer–Wanner II, IV.2): a
 * decaying mode lambda of the Jacobian d f / d y is integrated stably by a
 * fixed explicit step h only while h |lambda| stays within the method's real
 * stability interval (remat_ode_stability_bound); beyond it the mode grows by
 * |R(h lambda)| > 1 a step, e.g. Euler's 1 - h k = -2 for k = 3, h = 1. The
 * Jacobian is taken by forward differences at two widths, and the fastest
 * mode by power iteration; when the two Jacobians disagree (a rate that is
 * not smooth there, sqrt(A) at A = 0) or the iteration does not settle (a
 * complex pair, two modes as fast) the test says nothing rather than guess;
 * so it does for more than MAX_SPECIES species, where it would not be cheap.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/alloc.h"
#include "core/error.h"
#include "models/pfr/pfr_impl.h"
#include "remat/gas.h"

#define STEP_MARGIN 1.05   /* h |lambda| past the bound by more than the estimate's error */
#define POWER_TOL 1e-6     /* relative residual |J v - lambda v| of a settled mode */
#define COUNT_SLACK 1e-4   /* the step counts suggested round lambda's estimate to this */
#define NEGATIVE_RTOL 1e-6 /* a concentration below -1e-6 * scale is not rounding */
#define MAX_SPECIES 512    /* past this the S x S Jacobian (and S + 1 passes over the rates) is not cheap: no check */

/* d f / d y at (0, inlet, params) by forward differences of width w * scale
 * into J (S x S, row i = d f_i): 0 when some rate is not finite there */
static int jacobian(const remat_pfr *r, const double *params, double w, double *J, double *y, double *f0, double *f1)
{
    int S = r->S;
    double scale = 0;
    for (int s = 0; s < S; s++)
        scale = fmax(scale, fabs(r->inlet[s]));
    if (scale == 0)
        scale = 1;
    if (remat_mechanism_eval_rhs(r->m, 0.0, r->inlet, params, f0) != REMAT_OK)
        return 0;
    for (int j = 0; j < S; j++) {
        for (int s = 0; s < S; s++)
            y[s] = r->inlet[s];
        double d = w * fmax(fabs(y[j]), scale);
        y[j] += d;
        d = y[j] - r->inlet[j]; /* the width as represented */
        if (remat_mechanism_eval_rhs(r->m, 0.0, y, params, f1) != REMAT_OK)
            return 0;
        for (int i = 0; i < S; i++) {
            J[(size_t)i * (size_t)S + (size_t)j] = (f1[i] - f0[i]) / d;
            if (!isfinite(J[(size_t)i * (size_t)S + (size_t)j]))
                return 0;
        }
    }
    return 1;
}

/* The dominant eigenvalue of J (S x S) by power iteration, its eigenvector
 * in v; 0 when it does not settle to a real value. */
static int dominant_mode(int S, const double *J, double *v, double *w, double *lambda)
{
    double norm = 0;
    for (int s = 0; s < S; s++) {
        v[s] = 1.0 + 0.1 * s; /* not orthogonal to a mode by symmetry */
        norm += v[s] * v[s];
    }
    int iters = (int)fmin(1000, fmax(50, 1e7 / ((double)S * S)));
    for (int it = 0; it < iters; it++) {
        norm = sqrt(norm);
        for (int s = 0; s < S; s++)
            v[s] /= norm;
        double l = 0, res = 0, wn = 0;
        for (int i = 0; i < S; i++) {
            w[i] = 0;
            for (int j = 0; j < S; j++)
                w[i] += J[(size_t)i * (size_t)S + (size_t)j] * v[j];
            l += v[i] * w[i];
        }
        for (int i = 0; i < S; i++) {
            res += (w[i] - l * v[i]) * (w[i] - l * v[i]);
            wn += w[i] * w[i];
        }
        *lambda = l;
        if (wn == 0)
            return 0; /* J v = 0: nothing moves */
        if (sqrt(res) <= POWER_TOL * fabs(l))
            return 1;
        for (int s = 0; s < S; s++)
            v[s] = w[s];
        norm = wn;
    }
    return 0;
}

remat_status pfr_check_step(const remat_pfr *r, const double *params)
{
    double bound = remat_ode_stability_bound(r->opt.method);
    if (r->opt.adaptive || !isfinite(bound) || r->S == 0 || r->S > MAX_SPECIES)
        return REMAT_OK;
    size_t S = (size_t)r->S;
    double *J = rmi_malloc(sizeof *J * S * S * 2), *buf = rmi_malloc(sizeof *buf * S * 5);
    remat_status st = REMAT_OK;
    double lambda = 0, lambda2 = 0;
    if (!J || !buf) {
        st = rmi_error(REMAT_ERR_NOMEM, "pfr: out of memory");
        goto done;
    }
    double *y = buf, *f0 = buf + S, *f1 = buf + 2 * S, *v = buf + 3 * S, *w = buf + 4 * S;
    if (!jacobian(r, params, 0x1p-20, J, y, f0, f1) || !jacobian(r, params, 0x1p-24, J + S * S, y, f0, f1))
        goto done;
    /* the two widths agree where the rates are smooth */
    for (size_t i = 0; i < S * S; i++)
        if (fabs(J[i] - J[S * S + i]) > 1e-3 * (fabs(J[i]) + fabs(J[S * S + i])) + 1e-12)
            goto done;
    if (!dominant_mode(r->S, J, v, w, &lambda) || !dominant_mode(r->S, J + S * S, v, w, &lambda2))
        goto done;
    double hl = r->h * -lambda, L = r->h * (double)r->steps;
    if (!(lambda < 0 && hl > STEP_MARGIN * bound))
        goto done;
    /* the suggestion keeps h |lambda| within half the bound: stable with room,
     * and for Euler (1 - h k >= 0) no overshoot below zero */
    double need = ceil(L * -lambda / (bound / 2) * (1 - COUNT_SLACK)); /* not 31 for a lambda of 3 + 1e-7 */
    if (!(need <= 0x1p53))
        goto done; /* pfr_hopeless says why more steps cannot help */
    double stable_from = floor(L * -lambda / bound * (1 + COUNT_SLACK)) + 1;
    int fastest = 0; /* the species that consumes itself fastest, to name */
    for (size_t s = 0; s < S; s++)
        if (J[s * S + s] < J[(size_t)fastest * S + (size_t)fastest])
            fastest = (int)s;
    st = rmi_error(REMAT_ERR_NUMERIC,
                   "pfr: %s: the integration is unstable: the step size %g (%s, %lld steps over L = %g) is beyond "
                   "%s's stability bound: at the inlet the fastest mode decays at rate %.4g (d f/d y has the "
                   "eigenvalue %.4g; '%s' is consumed fastest), and a step h is stable only while h * %.4g <= %.4g "
                   "(here %.4g); take more steps (stable from %.0f; --steps %.0f keeps well inside), or the stiff "
                   "method rodas5",
                   remat_mechanism_source(r->m), r->h, remat_ode_method_name(r->opt.method), (long long)r->steps, L,
                   remat_ode_method_name(r->opt.method), -lambda, lambda,
                   remat_mechanism_species_name(r->m, fastest), -lambda, bound, hl, stable_from, need);
done:
    rmi_free(J);
    rmi_free(buf);
    return st;
}

int remat_pfr_negative_states(const remat_mechanism *m, const double *y0, double rtol, double atol, int64_t rows,
                              const double *y, int64_t *row, int *species)
{
    REMAT_NULL_RETURN(m, 0);
    REMAT_NULL_RETURN(y0, 0);
    REMAT_NULL_RETURN(y, 0);
    int S = remat_mechanism_species_count(m), ngas = remat_gas_species_count(m);
    /* the scale of the concentrations (mole fractions) alone: a state no
     * reaction forms or consumes that is not a gas species (a gas
     * mechanism's T of ~1000 K, a .mech file's T' = 0) does not set it */
    double scale = 0;
    for (int s = 0; s < S; s++)
        if (s < ngas || *remat_pfr_species_role(m, s))
            scale = fmax(scale, fabs(y0[s]));
    if (scale == 0)
        scale = 1;
    double tol = scale * fmax(NEGATIVE_RTOL, rtol) + atol;
    for (int64_t i = 0; i < rows; i++)
        for (int s = 0; s < S; s++) {
            double c = y[(size_t)i * (size_t)S + (size_t)s];
            if (c < -tol && y0[s] >= 0 && *remat_pfr_species_role(m, s)) {
                if (row)
                    *row = i;
                if (species)
                    *species = s;
                return 1;
            }
        }
    return 0;
}

int remat_pfr_negative(const remat_pfr *r, int64_t rows, const double *y, int64_t *row, int *species)
{
    REMAT_NULL_RETURN(r, 0);
    int a = r->opt.adaptive;
    return remat_pfr_negative_states(r->m, r->inlet, a ? r->opt.rtol : 0, a ? r->opt.atol : 0, rows, y, row, species);
}

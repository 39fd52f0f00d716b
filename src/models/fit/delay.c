/*
 * delay.c — ignition-delay experiments of a fit (remat/fit.h "Ignition
 * delays"): a gas mechanism's data file whose first column is `tau` gives
 * the delay of its experiment, the time at which T first reaches its
 * initial value + REMAT_FIT_DELAY_RISE K (as tests/test_gas_cantera.c and
 * Cantera's goldens define it).
 *
 * The delay tau(p) is the root of T(t; p) = T0 + rise. The host finds it
 * (fit_delay_locate): one compiled program integrates with dense output to
 * DELAY_POINTS times over the experiment's horizon, the first crossing's
 * interval is sampled again at DELAY_POINTS times, and the crossing in that
 * interval (width horizon / DELAY_POINTS^2) is the secant's: tau_hat, with
 * the secant slope s ~ dT/dt there. Both are inputs of the residual graph,
 * which integrates to tau_hat and takes one Newton step,
 *   tau = tau_hat - (T(tau_hat; p) - T0 - rise) / s,
 * whose value is tau_hat corrected to second order and whose derivative is
 * the implicit function theorem's, dtau/dp = -(dT(tau)/dp) / (dT/dt): exact
 * at the root up to s's error (the secant of the dense output over
 * 1e-6 of the horizon), through every AD mode of the fit. Without a
 * crossing in the horizon tau_hat is NaN, and so is the residual.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "core/assert.h"
#include "core/error.h"
#include "models/fit/fit_impl.h"
#include "remat/gas.h"

#define DELAY_POINTS 1000

int fit_delay_is(const remat_mechanism *m, const remat_dataset *d)
{
    return remat_gas_species_count(m) > 0 && strcmp(remat_dataset_indep_name(d), "tau") == 0;
}

double fit_delay_horizon(const remat_fit *fit, const fit_exp *x)
{
    return fit->opt.t0 + REMAT_FIT_DELAY_HORIZON * (remat_dataset_times(x->d)[0] - fit->opt.t0);
}

remat_val fit_delay_graph(const remat_fit *fit, remat_fn *f, remat_val y0, remat_val ys, remat_val ts,
                          remat_val slope)
{
    int64_t S = fit->S, iT = S - 1, one = 1, row[2] = {1, S};
    remat_val T = remat_reshape(f, remat_slice(f, ys, (int64_t[]){0, iT}, (int64_t[]){1, S}, NULL), 1, &one);
    remat_val T0 = remat_slice(f, y0, (int64_t[]){iT}, (int64_t[]){S}, NULL);
    remat_val miss = remat_sub(f, T, remat_add(f, T0, remat_const_fill(f, REMAT_F64, 1, &one, REMAT_FIT_DELAY_RISE)));
    remat_val tau = remat_sub(f, ts, remat_div(f, miss, slope));
    return remat_broadcast_to(f, remat_reshape(f, tau, 2, (int64_t[]){1, 1}), 2, row);
}

/* class c's locate program: (p, y0, ts (DELAY_POINTS,)[, conds]) -> ys */
static remat_status locate_program(struct remat_fit *fit, fit_class *k)
{
    const fit_exp *x = &fit->exp[k->first];
    int64_t P = fit->P, S = fit->S, N = DELAY_POINTS, CI = fit->CI;
    remat_fn *f = remat_fn_new("fit_delay_locate");
    if (!f)
        return rmi_error(REMAT_ERR_NOMEM, "fit: out of memory");
    remat_val p = remat_arg(f, "params", REMAT_F64, 1, &P);
    remat_val y0 = remat_arg(f, "y0", REMAT_F64, 1, &S);
    remat_val ts = remat_arg(f, "times", REMAT_F64, 1, &N);
    remat_val rin = fit_rate_inputs(fit, f, p, CI > 0 ? remat_arg(f, "conds", REMAT_F64, 1, &CI) : REMAT_NONE);
    remat_ode_options o = fit_ode_options(fit, x);
    o.scan = (remat_scan_options){0}; /* forward only */
    remat_val ys;
    remat_status st = remat_ode_integrate_times(f, fit->m, &o, y0, rin, ts, &ys, NULL);
    if (st == REMAT_OK) {
        remat_fn_output(f, ys);
        st = remat_fn_status(f) == REMAT_OK ? fit_compile(fit, f, &k->locate)
                                            : rmi_error(remat_fn_status(f), "fit: the delay's graph: %s",
                                                        remat_fn_error(f));
    }
    remat_fn_free(f);
    return st;
}

remat_status fit_delay_compile(struct remat_fit *fit)
{
    for (int c = 0; c < fit->n_cls; c++) {
        fit_class *k = &fit->cls[c];
        if (k->delay && k->n_local > 0 && !k->locate) {
            remat_status st = locate_program(fit, k);
            if (st != REMAT_OK)
                return st;
        }
    }
    return REMAT_OK;
}

/* ys (DELAY_POINTS x S) at ts; NaN rows when the integration fails */
static void sample(struct remat_fit *fit, int e, const double *p, const double *ts, double *ys)
{
    fit_exp *x = &fit->exp[e];
    int64_t N = DELAY_POINTS, NS[2] = {N, fit->S};
    remat_tensor in[4] = {fit_vec((double *)p, fit->P), fit_vec(x->y0, fit->S), fit_vec((double *)ts, N)};
    int n = 3;
    if (fit->CI > 0)
        in[n++] = fit_vec(x->cond, fit->CI);
    remat_tensor out = remat_tensor_f64(ys, 2, NS);
    if (remat_run(fit->cls[x->cls].locate, n, in, 1, &out, NULL) != REMAT_OK)
        for (int64_t i = 0; i < N * fit->S; i++)
            ys[i] = NAN;
}

/* the first j with ys[j][T] >= target (-1: none) */
static int64_t first_crossing(const double *ys, int64_t S, double target)
{
    for (int64_t j = 0; j < DELAY_POINTS; j++) {
        double T = ys[j * S + S - 1];
        if (isnan(T))
            return -1;
        if (T >= target)
            return j;
    }
    return -1;
}

remat_status fit_delay_locate(struct remat_fit *fit, int e, const double *p)
{
    fit_exp *x = &fit->exp[e];
    fit_class *k = &fit->cls[x->cls];
    if (x->located && memcmp(x->located_p, p, sizeof *p * (size_t)fit->P) == 0)
        return REMAT_OK;
    REMAT_ASSERT(k->locate); /* fit_delay_compile */
    int64_t S = fit->S, N = DELAY_POINTS;
    double *ts = rmi_malloc(sizeof *ts * (size_t)N), *ys = rmi_malloc(sizeof *ys * (size_t)(N * S));
    if (!ts || !ys) {
        rmi_free(ts), rmi_free(ys);
        return rmi_error(REMAT_ERR_NOMEM, "fit: out of memory");
    }
    double t0 = fit->opt.t0, H = fit_delay_horizon(fit, x), target = x->y0[S - 1] + REMAT_FIT_DELAY_RISE;
    double lo = t0, hi = H, tau = NAN, slope = NAN;
    for (int pass = 0; pass < 2; pass++) {
        /* pass 0: (t0, H] in N steps; pass 1: [lo, hi] at N points, both ends included */
        for (int64_t j = 0; j < N; j++)
            ts[j] = pass == 0 ? t0 + (H - t0) * (double)(j + 1) / (double)N
                              : lo + (hi - lo) * (double)j / (double)(N - 1);
        if (pass == 1)
            ts[N - 1] = hi;
        sample(fit, e, p, ts, ys);
        int64_t j = first_crossing(ys, S, target);
        if (j < 0 || (pass == 1 && j == 0))
            break;
        double Ta = j > 0 ? ys[(j - 1) * S + S - 1] : x->y0[S - 1], Tb = ys[j * S + S - 1];
        lo = j > 0 ? ts[j - 1] : t0, hi = ts[j];
        if (pass == 1) {
            slope = (Tb - Ta) / (hi - lo);
            tau = lo + (target - Ta) / slope;
        }
    }
    rmi_free(ts), rmi_free(ys);
    x->tau_hat = tau;
    x->slope = slope;
    memcpy(x->located_p, p, sizeof *p * (size_t)fit->P);
    x->located = true;
    return REMAT_OK;
}

/* Experiment e's model delay at params on this process (its programs). */
remat_status fit_delay_eval(struct remat_fit *fit, int e, const double *params, double *tau)
{
    *tau = NAN;
    fit_exp *x = &fit->exp[e];
    fit_class *k = &fit->cls[x->cls];
    if (!k->res || !k->locate)
        return rmi_error(REMAT_ERR_UNSUPPORTED, "fit: delay: experiment %d is evaluated by another process", e);
    remat_tensor in[8], out = fit_vec(x->r_full, x->rows * fit->S);
    int n = fit_inputs(fit, e, params, NULL, 0, in);
    remat_status st = remat_run(k->res, n, in, 1, &out, NULL);
    if (st != REMAT_OK)
        return st;
    int iT = fit->S - 1; /* r = (tau - measured) w */
    *tau = x->r_full[iT] / x->mask[iT] + x->target[iT];
    return REMAT_OK;
}

remat_status remat_fit_delay(remat_fit *fit, int e, const double *params, double *tau)
{
    if (!fit || !params || !tau)
        return rmi_error(REMAT_ERR_NULL, "fit: delay: %s is NULL", !fit ? "the fit" : !params ? "params" : "tau");
    *tau = NAN;
    if (e < 0 || e >= fit->E || !fit->exp[e].delay)
        return rmi_error(REMAT_ERR_ARG, "fit: delay: experiment %d %s", e,
                         e < 0 || e >= fit->E ? "does not exist" : "is not an ignition delay (first column tau)");
    return fit_delay_eval(fit, e, params, tau);
}

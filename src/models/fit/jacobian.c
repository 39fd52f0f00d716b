/*
 * jacobian.c — the Jacobian of the weighted residuals, J = dr/dp (N x P), by
 * whichever mode takes fewer program runs: forward mode runs the JVP of the
 * residual function once per free parameter (column j: J e_j), reverse mode
 * runs the VJP once per measured cell of the largest experiment (row j: e_j^T
 * J; every experiment has its own parameter copy, so one run gives a row of
 * each). A fit of 5 rate constants to 40 cells is 5 runs forward, 40 reverse.
 *
 * The residual function already carries the sigma weights in its mask, so
 * both modes differentiate r = (y - data) w and agree to rounding.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/assert.h"
#include "core/error.h"
#include "models/fit/fit_impl.h"

static const char *const jacobian_names[REMAT_FIT_JACOBIAN_COUNT] = {
    [REMAT_FIT_JACOBIAN_AUTO] = "auto",
    [REMAT_FIT_JACOBIAN_FORWARD] = "forward",
    [REMAT_FIT_JACOBIAN_REVERSE] = "reverse",
};

const char *remat_fit_jacobian_name(remat_fit_jacobian j)
{
    return (unsigned)j < REMAT_FIT_JACOBIAN_COUNT ? jacobian_names[j] : "?";
}

remat_status remat_fit_jacobian_parse(const char *text, remat_fit_jacobian *out)
{
    if (!text || !out)
        return rmi_error(REMAT_ERR_NULL, "fit: Jacobian mode: %s is NULL", !text ? "the text" : "out");
    for (int i = 0; i < REMAT_FIT_JACOBIAN_COUNT; i++)
        if (!strcmp(text, jacobian_names[i])) {
            *out = (remat_fit_jacobian)i;
            return REMAT_OK;
        }
    return rmi_error(REMAT_ERR_ARG, "unknown Jacobian mode '%s' (expected auto, forward or reverse)", text);
}

remat_fit_jacobian fit_jacobian_resolve(const struct remat_fit *fit)
{
    if (fit->opt.jacobian != REMAT_FIT_JACOBIAN_AUTO)
        return fit->opt.jacobian;
    if (fit->opt.adjoint != REMAT_ODE_ADJOINT_DISCRETE)
        return REMAT_FIT_JACOBIAN_REVERSE; /* a continuous adjoint's op has no forward mode */
    /* program runs per Jacobian: n_free JVPs against max_meas VJPs; a JVP
     * also costs less than a VJP (no tape), so a tie goes forward */
    return fit->vars.n_free <= fit->max_meas ? REMAT_FIT_JACOBIAN_FORWARD : REMAT_FIT_JACOBIAN_REVERSE;
}

static remat_status compile_jvp(struct remat_fit *fit)
{
    if (!fit->tan)
        fit->tan = rmi_calloc((size_t)fit->P, sizeof *fit->tan);
    if (!fit->tan)
        return rmi_error(REMAT_ERR_NOMEM, "fit: out of memory");
    return fit_compile_classes(fit, FIT_PROG_JVP); /* a rank with no experiment: none */
}

remat_status fit_jacobian_compile_local(struct remat_fit *fit, remat_fit_jacobian mode)
{
    REMAT_ASSERT(mode == REMAT_FIT_JACOBIAN_FORWARD || mode == REMAT_FIT_JACOBIAN_REVERSE);
    if (mode == REMAT_FIT_JACOBIAN_FORWARD)
        return compile_jvp(fit);
    return fit_compile_classes(fit, FIT_PROG_VJP); /* kept ones stay; a rank with no experiment: none */
}

/* Column i of the local experiments' rows of J for each free parameter i:
 * one JVP per experiment with tangent e_i. */
static remat_status jacobian_forward(struct remat_fit *fit, const double *p, double *J)
{
    int E = fit->n_local, P = fit->P;
    memset(fit->tan, 0, sizeof *fit->tan * (size_t)P);
    remat_status st = REMAT_OK;
    for (int j = 0; j < fit->vars.n_free && st == REMAT_OK; j++) {
        int i = fit->vars.free_idx[j];
        fit->tan[i] = 1.0;
        int64_t row = 0;
        for (int e = 0; e < E && st == REMAT_OK; e++) {
            fit_exp *x = &fit->exp[fit->local[e]];
            int64_t n = x->rows * fit->S;
            remat_tensor in[8], out[2] = {fit_vec(x->r_full, n), fit_vec(x->dr, n)};
            int n_in = fit_inputs(fit, fit->local[e], p, fit->tan, P, in);
            st = remat_run(fit->cls[x->cls].jvp, n_in, in, 2, out, NULL);
            for (int64_t k = 0; k < x->n_meas && st == REMAT_OK; k++, row++)
                J[(size_t)row * (size_t)P + (size_t)i] = x->dr[x->meas[k]];
        }
        fit->evals++;
        fit->tan[i] = 0.0;
    }
    return st;
}

/* Row j of each local experiment's block: one VJP per experiment with
 * cotangent e_j, for the experiments that have a j-th cell. */
static remat_status jacobian_reverse(struct remat_fit *fit, const double *p, double *J)
{
    int E = fit->n_local, P = fit->P;
    remat_status st = REMAT_OK;
    int64_t row0 = 0;
    for (int e = 0; e < E && st == REMAT_OK; e++) {
        fit_exp *x = &fit->exp[fit->local[e]];
        int64_t n = x->rows * fit->S;
        memset(x->ct, 0, sizeof *x->ct * (size_t)n);
        remat_tensor in[8], out[2] = {fit_vec(x->r_full, n), fit_vec(x->dp, P)};
        int n_in = fit_inputs(fit, fit->local[e], p, x->ct, n, in);
        for (int64_t j = 0; j < x->n_meas && st == REMAT_OK; j++) {
            x->ct[x->meas[j]] = 1.0;
            st = remat_run(fit->cls[x->cls].vjp, n_in, in, 2, out, NULL);
            x->ct[x->meas[j]] = 0.0;
            memcpy(J + (size_t)(row0 + j) * (size_t)P, x->dp, sizeof *J * (size_t)P);
        }
        row0 += x->n_meas;
    }
    fit->evals += fit->max_meas; /* the runs of one process with every experiment */
    return st;
}

remat_status fit_local_jacobian(struct remat_fit *fit, const double *p, double *J)
{
    return fit->jac_mode == REMAT_FIT_JACOBIAN_FORWARD ? jacobian_forward(fit, p, J) : jacobian_reverse(fit, p, J);
}

remat_fit_jacobian remat_fit_jacobian_mode(const remat_fit *fit)
{
    REMAT_NULL_RETURN(fit, REMAT_FIT_JACOBIAN_AUTO);
    return fit->jac_mode;
}

remat_status remat_fit_jacobian_at(remat_fit *fit, const double *params, double *J)
{
    if (!fit || !params || !J)
        return rmi_error(REMAT_ERR_NULL, "fit: jacobian: %s is NULL", !fit ? "the fit" : !params ? "params" : "J");
    for (int i = 0; i < fit->P; i++)
        if (!isfinite(params[i]))
            return rmi_error(REMAT_ERR_VALUE, "fit: jacobian: parameter '%s' is %g", fit->names[i], params[i]);
    memset(J, 0, sizeof *J * (size_t)fit->n_res * (size_t)fit->P);
    remat_status st = fit_obj_jacobian(&fit->obj, params, J);
    for (int i = 0; st == REMAT_OK && i < fit->P; i++)
        if (fit->vars.fixed[i])
            for (int64_t k = 0; k < fit->n_res; k++)
                J[(size_t)k * (size_t)fit->P + (size_t)i] = 0.0;
    return st;
}

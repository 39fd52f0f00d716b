/*
 * ensemble.c — many parameter sets through one reactor (remat/pfr.h,
 * remat_pfr_ensemble_*).
 *
 * One program over B lanes, compiled once and run once per chunk of up to B
 * sets: the inlet (S,) broadcast to y0 (B, S), the parameters (B, P) one set
 * per lane (remat_ode_integrate's batched params), fixed steps, the outlet
 * (B, S). Its forward-mode JVP with respect to the parameters is the program
 * that runs: one run per varied parameter j, with the tangent e_j on every
 * lane, gives the outlet (bitwise the plain integration's, remat_jvp keeps
 * the primal) and the column d C(L) / d p_j of every lane. Forward mode
 * because the Jacobian is S x Q and a set varies few parameters: Q passes
 * with no tape, where reverse mode would take S passes, each with one. The
 * scan's lane analysis compiles the loop (the lane axis is B).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "remat/ad.h"
#include "remat/exec.h"
#include "remat/pfr.h"

struct remat_pfr_ensemble {
    const remat_mechanism *m;
    int S, P, Q;
    int64_t B;
    int *vary;           /* (Q,) parameter indices */
    double *inlet;       /* (S,) */
    double *base;        /* (P,) values of the parameters not varied */
    double *params;      /* (B, P) this chunk's sets */
    double *tangent;     /* (B, P): e_j on every lane */
    double *t_out;       /* (B, S) */
    double *outlet;      /* (B, S) */
    remat_fn *fn, *jvp;  /* kept while their programs live (a program reads its scans' data) */
    remat_program *fwd;
};

static remat_status build(remat_pfr_ensemble *e, const remat_pfr_options *opt)
{
    int64_t S = e->S, B = e->B, yd[2] = {B, S}, pd[2] = {B, e->P};
    remat_fn *f = e->fn = remat_fn_new("pfr_ensemble");
    if (!f)
        return remat_error(REMAT_ERR_NOMEM, "pfr ensemble: out of memory");
    remat_val inlet = remat_arg(f, "inlet", REMAT_F64, 1, &S);
    remat_val p = remat_arg(f, "params", REMAT_F64, 2, pd);
    remat_val y0 = remat_broadcast_to(f, inlet, 2, yd), ys;
    double L = opt->length;
    remat_ode_options oo = {.method = opt->method, .n_times = 1, .times = &L, .dt = opt->dt, .steps = opt->steps};
    remat_status st = remat_ode_integrate(f, e->m, &oo, y0, p, &ys);
    if (st != REMAT_OK) {
        char why[512];
        snprintf(why, sizeof why, "%s", remat_last_error());
        return remat_error(st, "pfr ensemble: %s", why);
    }
    remat_fn_output(f, remat_index(f, ys, 0));
    if (remat_fn_status(f) != REMAT_OK)
        return remat_error(remat_fn_status(f), "pfr ensemble: %s", remat_fn_error(f));
    if ((st = remat_jvp(f, 1, (const int[]){1}, &e->jvp)) != REMAT_OK)
        return st;
    remat_backend *be = NULL;
    if ((st = remat_backend_from_env(&be)) != REMAT_OK)
        return st;
    return remat_compile(e->jvp, be, &e->fwd);
}

remat_status remat_pfr_ensemble_new(const remat_mechanism *m, const remat_pfr_options *opt, int64_t lanes, int n_vary,
                                    const int *vary, const double *base, remat_pfr_ensemble **out)
{
    if (!out)
        return remat_error(REMAT_ERR_NULL, "pfr ensemble: output pointer is NULL");
    *out = NULL;
    if (!m || !opt || !base || (n_vary > 0 && !vary))
        return remat_error(REMAT_ERR_NULL, "pfr ensemble: %s is NULL",
                           !m ? "the mechanism" : !opt ? "the options" : !base ? "base" : "vary");
    int S = remat_mechanism_species_count(m), P = remat_mechanism_param_count(m);
    if (opt->adaptive)
        return remat_error(REMAT_ERR_ARG, "pfr ensemble: the lanes of an ensemble step together: fixed steps only "
                                          "(steps or dt, not adaptive)");
    if (lanes < 1 || lanes > (1 << 20))
        return remat_error(REMAT_ERR_VALUE, "pfr ensemble: lanes = %lld, expected 1 to %d", (long long)lanes, 1 << 20);
    if (n_vary < 1 || n_vary > P)
        return remat_error(REMAT_ERR_VALUE, "pfr ensemble: %d varied parameters, %s has %d", n_vary,
                           remat_mechanism_source(m), P);
    for (int j = 0; j < n_vary; j++) {
        if (vary[j] < 0 || vary[j] >= P)
            return remat_error(REMAT_ERR_ARG, "pfr ensemble: varied parameter %d is not one of the %d of %s", vary[j],
                               P, remat_mechanism_source(m));
        for (int k = 0; k < j; k++)
            if (vary[k] == vary[j])
                return remat_error(REMAT_ERR_ARG, "pfr ensemble: parameter '%s' is varied twice",
                                   remat_mechanism_param_name(m, vary[j]));
    }
    for (int i = 0; i < P; i++)
        if (!isfinite(base[i]))
            return remat_error(REMAT_ERR_VALUE, "pfr ensemble: parameter '%s' is %g", remat_mechanism_param_name(m, i),
                               base[i]);
    remat_pfr *check; /* the reactor's own checks of the options, as remat_pfr_new words them */
    remat_status st = remat_pfr_new(m, opt, &check);
    if (st != REMAT_OK)
        return st;
    remat_pfr_free(check);
    remat_pfr_ensemble *e = calloc(1, sizeof *e);
    if (!e)
        return remat_error(REMAT_ERR_NOMEM, "pfr ensemble: out of memory");
    size_t bp = (size_t)lanes * (size_t)P, bs = (size_t)lanes * (size_t)S;
    *e = (remat_pfr_ensemble){.m = m, .S = S, .P = P, .Q = n_vary, .B = lanes};
    e->vary = malloc(sizeof *e->vary * (size_t)n_vary);
    e->inlet = malloc(sizeof *e->inlet * (size_t)S);
    e->base = malloc(sizeof *e->base * (size_t)P);
    e->params = malloc(sizeof *e->params * bp);
    e->tangent = calloc(bp, sizeof *e->tangent);
    e->t_out = malloc(sizeof *e->t_out * bs);
    e->outlet = malloc(sizeof *e->outlet * bs);
    if (!e->vary || !e->inlet || !e->base || !e->params || !e->tangent || !e->t_out || !e->outlet) {
        st = remat_error(REMAT_ERR_NOMEM, "pfr ensemble: out of memory for %lld lanes", (long long)lanes);
        goto fail;
    }
    memcpy(e->vary, vary, sizeof *vary * (size_t)n_vary);
    memcpy(e->inlet, opt->inlet, sizeof *e->inlet * (size_t)S);
    memcpy(e->base, base, sizeof *base * (size_t)P);
    for (int64_t b = 0; b < lanes; b++)
        memcpy(e->params + (size_t)b * (size_t)P, base, sizeof *base * (size_t)P);
    if ((st = build(e, opt)) != REMAT_OK)
        goto fail;
    *out = e;
    return REMAT_OK;
fail:
    remat_pfr_ensemble_free(e);
    return st;
}

void remat_pfr_ensemble_free(remat_pfr_ensemble *e)
{
    if (!e)
        return;
    remat_program_free(e->fwd);
    remat_fn_free(e->jvp);
    remat_fn_free(e->fn);
    free(e->vary);
    free(e->inlet);
    free(e->base);
    free(e->params);
    free(e->tangent);
    free(e->t_out);
    free(e->outlet);
    free(e);
}

int64_t remat_pfr_ensemble_lanes(const remat_pfr_ensemble *e) { return e->B; }

/* the forward program once: (inlet, params, tangent) -> (outlet, J tangent) */
static remat_status run_fwd(remat_pfr_ensemble *e, double *outlet, double *t_out)
{
    remat_program *prog = e->fwd;
    remat_tensor in[3], o[2];
    double *data_in[3] = {e->inlet, e->params, e->tangent}, *data_out[2] = {outlet, t_out};
    for (int i = 0; i < 3; i++) {
        in[i] = remat_program_input_desc(prog, i);
        in[i].data = data_in[i];
    }
    for (int i = 0; i < 2; i++) {
        o[i] = remat_program_output_desc(prog, i);
        o[i].data = data_out[i];
    }
    return remat_run(prog, 3, in, 2, o, NULL);
}

remat_status remat_pfr_ensemble_run(remat_pfr_ensemble *e, int64_t n, const double *sets, double *outlet, double *jac)
{
    if (!e || !sets || !outlet)
        return remat_error(REMAT_ERR_NULL, "pfr ensemble run: %s is NULL",
                           !e ? "the ensemble" : !sets ? "the sets" : "the outlet");
    if (n < 0 || n > e->B)
        return remat_error(REMAT_ERR_VALUE, "pfr ensemble run: %lld sets for %lld lanes", (long long)n,
                           (long long)e->B);
    int S = e->S, P = e->P, Q = e->Q;
    for (int64_t i = 0; i < n; i++)
        for (int j = 0; j < Q; j++) {
            double v = sets[(size_t)i * (size_t)Q + (size_t)j];
            if (!isfinite(v))
                return remat_error(REMAT_ERR_VALUE, "pfr ensemble run: set %lld: parameter '%s' is %g", (long long)i,
                                   remat_mechanism_param_name(e->m, e->vary[j]), v);
            e->params[(size_t)i * (size_t)P + (size_t)e->vary[j]] = v;
        }
    /* lanes past n keep the sets they last had: finite, and never read */
    remat_status st = REMAT_OK;
    for (int j = 0; j < Q && st == REMAT_OK; j++) {
        for (int64_t b = 0; b < e->B; b++)
            e->tangent[(size_t)b * (size_t)P + (size_t)e->vary[j]] = 1.0;
        st = run_fwd(e, e->outlet, e->t_out);
        for (int64_t b = 0; b < e->B; b++)
            e->tangent[(size_t)b * (size_t)P + (size_t)e->vary[j]] = 0.0;
        for (int64_t i = 0; jac && i < n; i++)
            for (int s = 0; s < S; s++)
                jac[((size_t)i * (size_t)S + (size_t)s) * (size_t)Q + (size_t)j] = e->t_out[(size_t)i * (size_t)S + (size_t)s];
        if (!jac)
            break; /* the outlet needs one pass */
    }
    if (st == REMAT_OK)
        memcpy(outlet, e->outlet, sizeof *outlet * (size_t)n * (size_t)S);
    return st;
}

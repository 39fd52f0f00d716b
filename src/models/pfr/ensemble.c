/*
 * ensemble.c — many parameter sets through one reactor (remat/pfr.h,
 * remat_pfr_ensemble_*).
 *
 * One program over B lanes, compiled once and run once per chunk of up to B
 * sets: the inlet (S,) broadcast to y0 (B, S), the parameters (B, P) one set
 * per lane, fixed steps, and the forward sensitivities. Its scan carries the
 * state y and one tangent T_q = dy/dp E_q per varied parameter q; the body
 * is remat_ode_integrate's interval step (t = t_start + j h) with the step's
 * JVP (remat_jvp w.r.t. y and the parameters) inlined once per direction E_q
 * (the one-hot (B, P) of parameter vary[q] on every lane). The primal of the
 * first copy is the new state — remat_jvp keeps f's bits, so the outlet is
 * bitwise remat_pfr_outlet's — and the copies' primal halves are the same
 * scalar code on the same registers, which the lane compiler's C compiler
 * computes once: a run costs about one step plus Q tangent steps, not Q
 * steps and Q tangents. Forward mode because the Jacobian is S x Q with few
 * parameters per set, and it keeps no tape.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "remat/ad.h"
#include "remat/exec.h"
#include "remat/kinetics.h"
#include "remat/pfr.h"

/* directions of one run: the loop's body holds the step's JVP once per direction */
#define ENSEMBLE_MAX_Q 64

struct remat_pfr_ensemble {
    const remat_mechanism *m;
    int S, P, Q;
    int64_t B;
    int *vary;           /* (Q,) parameter indices */
    double *inlet;       /* (S,) */
    double *base;        /* (P,) values of the parameters not varied */
    double *params;      /* (B, P) this chunk's sets */
    double *tangent;     /* (Q, B, P): e_vary[q] on every lane */
    double *t_out;       /* (Q, B, S) */
    double *outlet;      /* (B, S) */
    remat_fn *fn, *body; /* kept while the program lives (a program reads its scans' data) */
    remat_program *fwd;
};

/* g(y (B,S), [t], h, p (B,P)) -> y': one step of the integrator */
static remat_status step_fn(const remat_pfr_ensemble *e, const remat_pfr_options *opt, int timed, remat_fn **out)
{
    int64_t yd[2] = {e->B, e->S}, pd[2] = {e->B, e->P};
    remat_fn *g = *out = remat_fn_new("pfr_ensemble_step");
    if (!g)
        return rmi_error(REMAT_ERR_NOMEM, "pfr ensemble: out of memory");
    remat_val y = remat_arg(g, "y", REMAT_F64, 2, yd);
    remat_val t = timed ? remat_arg(g, "t", REMAT_F64, 0, NULL) : REMAT_NONE;
    remat_val h = remat_arg(g, "h", REMAT_F64, 0, NULL);
    remat_val p = remat_arg(g, "params", REMAT_F64, 2, pd), y1;
    remat_status st = remat_ode_step(g, e->m, opt->method, t, h, y, p, &y1);
    if (st != REMAT_OK)
        return st;
    remat_fn_output(g, y1);
    return remat_fn_status(g) == REMAT_OK ? REMAT_OK
                                          : rmi_error(remat_fn_status(g), "pfr ensemble: %s", remat_fn_error(g));
}

/* body(y, T_1..T_Q, [j], [t_start], h, p, E_1..E_Q) -> (y', T_1'..T_Q', [j + 1]):
 * remat_ode_integrate's interval step (t = t_start + j h) and its JVP in
 * each direction E_q, the step inlined once per direction */
static remat_status body_fn(const remat_pfr_ensemble *e, const remat_fn *gj, int timed, remat_fn **out)
{
    int Q = e->Q;
    int64_t yd[2] = {e->B, e->S}, pd[2] = {e->B, e->P};
    remat_fn *b = *out = remat_fn_new("pfr_ensemble_body");
    if (!b)
        return rmi_error(REMAT_ERR_NOMEM, "pfr ensemble: out of memory");
    remat_val y = remat_arg(b, "y", REMAT_F64, 2, yd), T[ENSEMBLE_MAX_Q], E[ENSEMBLE_MAX_Q];
    for (int q = 0; q < Q; q++)
        T[q] = remat_arg(b, "t_y", REMAT_F64, 2, yd);
    remat_val j = timed ? remat_arg(b, "step", REMAT_F64, 0, NULL) : REMAT_NONE;
    remat_val t0 = timed ? remat_arg(b, "t_start", REMAT_F64, 0, NULL) : REMAT_NONE;
    remat_val h = remat_arg(b, "h", REMAT_F64, 0, NULL);
    remat_val p = remat_arg(b, "params", REMAT_F64, 2, pd);
    for (int q = 0; q < Q; q++)
        E[q] = remat_arg(b, "t_params", REMAT_F64, 2, pd);
    remat_val t = timed ? remat_add(b, t0, remat_mul(b, j, h)) : REMAT_NONE, y1 = REMAT_NONE, T1[ENSEMBLE_MAX_Q];
    for (int q = 0; q < Q; q++) {
        remat_val args[6], outs[2];
        int na = 0;
        args[na++] = y;
        if (timed)
            args[na++] = t;
        args[na++] = h;
        args[na++] = p;
        args[na++] = T[q];
        args[na++] = E[q];
        remat_status st = remat_call(b, gj, na, args, outs);
        if (st != REMAT_OK)
            return st;
        if (q == 0)
            y1 = outs[0];
        T1[q] = outs[1];
    }
    remat_fn_output(b, y1);
    for (int q = 0; q < Q; q++)
        remat_fn_output(b, T1[q]);
    if (timed)
        remat_fn_output(b, remat_add_scalar(b, j, 1.0));
    return remat_fn_status(b) == REMAT_OK ? REMAT_OK
                                          : rmi_error(remat_fn_status(b), "pfr ensemble: %s", remat_fn_error(b));
}

/* f(inlet, params, E_1..E_Q) -> (C(L), dC(L)/dp E_1, ...): one scan of body */
static remat_status build(remat_pfr_ensemble *e, const remat_pfr_options *opt)
{
    double L = opt->length;
    remat_ode_options oo = {.method = opt->method, .n_times = 1, .times = &L, .dt = opt->dt, .steps = opt->steps};
    int64_t n, S = e->S, yd[2] = {e->B, e->S}, pd[2] = {e->B, e->P};
    remat_status st = remat_ode_count_steps(&oo, NULL, &n);
    if (st != REMAT_OK)
        return st;
    int timed = remat_kinetics_uses_indep(e->m), Q = e->Q;
    remat_fn *g = NULL, *gj = NULL;
    if ((st = step_fn(e, opt, timed, &g)) == REMAT_OK)
        st = remat_jvp(g, 2, (const int[]){0, timed ? 3 : 2}, &gj);
    if (st == REMAT_OK)
        st = body_fn(e, gj, timed, &e->body);
    remat_fn_free(g);
    remat_fn_free(gj);
    if (st != REMAT_OK)
        return st;
    remat_fn *f = e->fn = remat_fn_new("pfr_ensemble");
    if (!f)
        return rmi_error(REMAT_ERR_NOMEM, "pfr ensemble: out of memory");
    remat_val inlet = remat_arg(f, "inlet", REMAT_F64, 1, &S);
    remat_val p = remat_arg(f, "params", REMAT_F64, 2, pd);
    remat_val init[ENSEMBLE_MAX_Q + 2], consts[ENSEMBLE_MAX_Q + 3], carry[ENSEMBLE_MAX_Q + 2];
    int ni = 0, nc = 0;
    init[ni++] = remat_broadcast_to(f, inlet, 2, yd);
    for (int q = 0; q < Q; q++)
        init[ni++] = remat_const_fill(f, REMAT_F64, 2, yd, 0.0);
    if (timed) {
        init[ni++] = remat_scalar(f, REMAT_F64, 0.0);
        consts[nc++] = remat_scalar(f, REMAT_F64, 0.0);
    }
    consts[nc++] = remat_scalar(f, REMAT_F64, L / (double)n);
    consts[nc++] = p;
    for (int q = 0; q < Q; q++)
        consts[nc++] = remat_arg(f, "t_params", REMAT_F64, 2, pd);
    if ((st = remat_scan(f, e->body, n, ni, init, 0, NULL, nc, consts, NULL, carry, NULL)) != REMAT_OK)
        return st;
    for (int q = 0; q <= Q; q++)
        remat_fn_output(f, carry[q]);
    if (remat_fn_status(f) != REMAT_OK)
        return rmi_error(remat_fn_status(f), "pfr ensemble: %s", remat_fn_error(f));
    remat_backend *be = NULL;
    if ((st = remat_backend_from_env(&be)) != REMAT_OK)
        return st;
    return remat_compile(f, be, &e->fwd);
}

remat_status remat_pfr_ensemble_new(const remat_mechanism *m, const remat_pfr_options *opt, int64_t lanes, int n_vary,
                                    const int *vary, const double *base, remat_pfr_ensemble **out)
{
    if (!out)
        return rmi_error(REMAT_ERR_NULL, "pfr ensemble: output pointer is NULL");
    *out = NULL;
    if (!m || !opt || !base || (n_vary > 0 && !vary))
        return rmi_error(REMAT_ERR_NULL, "pfr ensemble: %s is NULL",
                         !m ? "the mechanism" : !opt ? "the options" : !base ? "base" : "vary");
    int S = remat_mechanism_species_count(m), P = remat_mechanism_param_count(m);
    if (opt->adaptive)
        return rmi_error(REMAT_ERR_ARG, "pfr ensemble: the lanes of an ensemble step together: fixed steps only "
                                          "(steps or dt, not adaptive)");
    if (lanes < 1 || lanes > (1 << 20))
        return rmi_error(REMAT_ERR_VALUE, "pfr ensemble: lanes = %lld, expected 1 to %d", (long long)lanes, 1 << 20);
    if (n_vary < 1 || n_vary > P || n_vary > ENSEMBLE_MAX_Q)
        return rmi_error(REMAT_ERR_VALUE, "pfr ensemble: %d varied parameters: %s has %d, and a set varies at most %d",
                         n_vary, remat_mechanism_source(m), P, ENSEMBLE_MAX_Q);
    for (int j = 0; j < n_vary; j++) {
        if (vary[j] < 0 || vary[j] >= P)
            return rmi_error(REMAT_ERR_ARG, "pfr ensemble: varied parameter %d is not one of the %d of %s", vary[j],
                             P, remat_mechanism_source(m));
        for (int k = 0; k < j; k++)
            if (vary[k] == vary[j])
                return rmi_error(REMAT_ERR_ARG, "pfr ensemble: parameter '%s' is varied twice",
                                 remat_mechanism_param_name(m, vary[j]));
    }
    for (int i = 0; i < P; i++)
        if (!isfinite(base[i]))
            return rmi_error(REMAT_ERR_VALUE, "pfr ensemble: parameter '%s' is %g", remat_mechanism_param_name(m, i),
                             base[i]);
    remat_pfr *check; /* the reactor's own checks of the options, as remat_pfr_new words them */
    remat_status st = remat_pfr_new(m, opt, &check);
    if (st != REMAT_OK)
        return st;
    remat_pfr_free(check);
    remat_pfr_ensemble *e = calloc(1, sizeof *e);
    if (!e)
        return rmi_error(REMAT_ERR_NOMEM, "pfr ensemble: out of memory");
    /* the programs' params: the parameters, then the conditions (opt.conds or the defaults) */
    int PI = remat_mechanism_input_count(m);
    size_t bp = (size_t)lanes * (size_t)PI, bs = (size_t)lanes * (size_t)S;
    *e = (remat_pfr_ensemble){.m = m, .S = S, .P = PI, .Q = n_vary, .B = lanes};
    e->vary = malloc(sizeof *e->vary * (size_t)n_vary);
    e->inlet = malloc(sizeof *e->inlet * (size_t)S);
    e->base = malloc(sizeof *e->base * (size_t)(PI ? PI : 1));
    e->params = malloc(sizeof *e->params * bp);
    e->tangent = calloc(bp * (size_t)n_vary, sizeof *e->tangent);
    e->t_out = malloc(sizeof *e->t_out * bs * (size_t)n_vary);
    e->outlet = malloc(sizeof *e->outlet * bs);
    if (!e->vary || !e->inlet || !e->base || !e->params || !e->tangent || !e->t_out || !e->outlet) {
        st = rmi_error(REMAT_ERR_NOMEM, "pfr ensemble: out of memory for %lld lanes", (long long)lanes);
        goto fail;
    }
    memcpy(e->vary, vary, sizeof *vary * (size_t)n_vary);
    memcpy(e->inlet, opt->inlet, sizeof *e->inlet * (size_t)S);
    memcpy(e->base, base, sizeof *base * (size_t)P);
    for (int c = P; c < PI; c++)
        e->base[c] = opt->conds ? opt->conds[c - P] : remat_mechanism_cond_value(m, c - P);
    for (int64_t b = 0; b < lanes; b++) {
        memcpy(e->params + (size_t)b * (size_t)PI, e->base, sizeof *base * (size_t)PI);
        for (int q = 0; q < n_vary; q++)
            e->tangent[(size_t)q * bp + (size_t)b * (size_t)PI + (size_t)vary[q]] = 1.0;
    }
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
    remat_fn_free(e->body);
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

int64_t remat_pfr_ensemble_lanes(const remat_pfr_ensemble *e)
{
    REMAT_NULL_RETURN(e, 0);
    return e->B;
}

int remat_pfr_ensemble_negative(const remat_pfr_ensemble *e, int64_t n, const double *outlet, int64_t *set,
                                int *species)
{
    REMAT_NULL_RETURN(e, 0);
    REMAT_NULL_RETURN(outlet, 0);
    return remat_pfr_negative_states(e->m, e->inlet, 0, 0, n, outlet, set, species);
}

/* one run: (inlet, params, E_1..E_Q) -> (outlet, dC/dp E_1, ...) */
static remat_status run_fwd(remat_pfr_ensemble *e)
{
    remat_program *prog = e->fwd;
    int Q = e->Q;
    size_t bp = (size_t)e->B * (size_t)e->P, bs = (size_t)e->B * (size_t)e->S;
    remat_tensor in[ENSEMBLE_MAX_Q + 2], o[ENSEMBLE_MAX_Q + 1];
    for (int i = 0; i < Q + 2; i++) {
        in[i] = remat_program_input_desc(prog, i);
        in[i].data = i == 0 ? e->inlet : i == 1 ? e->params : e->tangent + (size_t)(i - 2) * bp;
    }
    for (int i = 0; i < Q + 1; i++) {
        o[i] = remat_program_output_desc(prog, i);
        o[i].data = i == 0 ? e->outlet : e->t_out + (size_t)(i - 1) * bs;
    }
    return remat_run(prog, Q + 2, in, Q + 1, o, NULL);
}

remat_status remat_pfr_ensemble_run(remat_pfr_ensemble *e, int64_t n, const double *sets, double *outlet, double *jac)
{
    if (!e || !sets || !outlet)
        return rmi_error(REMAT_ERR_NULL, "pfr ensemble run: %s is NULL",
                         !e ? "the ensemble" : !sets ? "the sets" : "the outlet");
    if (n < 0 || n > e->B)
        return rmi_error(REMAT_ERR_VALUE, "pfr ensemble run: %lld sets for %lld lanes", (long long)n,
                         (long long)e->B);
    int S = e->S, P = e->P, Q = e->Q;
    for (int64_t i = 0; i < n; i++)
        for (int j = 0; j < Q; j++) {
            double v = sets[(size_t)i * (size_t)Q + (size_t)j];
            if (!isfinite(v))
                return rmi_error(REMAT_ERR_VALUE, "pfr ensemble run: set %lld: parameter '%s' is %g", (long long)i,
                                 remat_mechanism_param_name(e->m, e->vary[j]), v);
            e->params[(size_t)i * (size_t)P + (size_t)e->vary[j]] = v;
        }
    /* lanes past n keep the sets they last had: finite, and never read */
    remat_status st = run_fwd(e);
    if (st != REMAT_OK)
        return st;
    memcpy(outlet, e->outlet, sizeof *outlet * (size_t)n * (size_t)S);
    size_t bs = (size_t)e->B * (size_t)S;
    for (int64_t i = 0; jac && i < n; i++)
        for (int s = 0; s < S; s++)
            for (int j = 0; j < Q; j++)
                jac[((size_t)i * (size_t)S + (size_t)s) * (size_t)Q + (size_t)j] =
                    e->t_out[(size_t)j * bs + (size_t)i * (size_t)S + (size_t)s];
    return REMAT_OK;
}

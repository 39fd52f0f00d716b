/*
 * programs.c — a reactor's programs, each compiled the first time it is asked for:
 *   outlet:    (inlet, params) -> C(L)                    remat_ode_integrate, forward only
 *   profile:   (inlet, params) -> C(z_1..z_n) stacked     one scan whose ys are the states
 *              (adaptive: one loop, the points from its dense output)
 *   objective: (inlet, params) -> (±C_s(L), d/dparams)    value_and_grad of the outlet
 * The profile's step is built exactly as remat_ode_integrate builds its
 * interval step (t = t_start + j*h from a step counter carried beside y,
 * when the rates read t), so its last row is the outlet bit for bit.
 * Also the one-off program of remat_pfr_integration_stats.
 */
#include <stdlib.h>

#include "core/alloc.h"
#include "core/error.h"
#include "models/pfr/pfr_impl.h"

/* f(inlet (S,), params (P,)) with the arguments declared; params is
 * REMAT_NONE when the mechanism has none. */
static remat_fn *new_fn(const remat_pfr *r, const char *name, remat_val *y0, remat_val *p)
{
    remat_fn *f = remat_fn_new(name);
    if (!f)
        return NULL;
    int64_t S = r->S, P = r->PI;
    *y0 = remat_arg(f, "inlet", REMAT_F64, 1, &S);
    *p = P ? remat_arg(f, "params", REMAT_F64, 1, &P) : REMAT_NONE;
    return f;
}

/* Compiles f into *prog, keeping f in *keep (see struct remat_pfr); frees f on error. */
static remat_status finish(const remat_pfr *r, remat_fn *f, remat_status st, remat_program **prog, remat_fn **keep)
{
    if (st == REMAT_OK && remat_fn_status(f) != REMAT_OK)
        st = rmi_error(remat_fn_status(f), "pfr: %s", remat_fn_error(f));
    if (st == REMAT_OK)
        st = pfr_compile(&r->opt, f, prog);
    if (st == REMAT_OK)
        *keep = f;
    else
        remat_fn_free(f);
    return st;
}

/* The outlet integration's options. Adaptive: its output times are the
 * control profiles' knots inside (0, L), then L, so that every step ends
 * at a jump rather than crossing it (remat_mechanism_control_knots: the
 * error control of a step across a jump can pass a step whose stages split
 * the jump wrongly, and the gradient then shares dC/dT between the two
 * values wrongly); fixed steps: L alone (a knot on a step boundary).
 * *times (NULL when L alone) is the caller's to free. */
static remat_status outlet_options(const remat_pfr *r, remat_ode_options *oo, double **times)
{
    *times = NULL;
    *oo = pfr_ode_options(&r->opt, &r->opt.length);
    int nk = r->opt.adaptive ? remat_mechanism_control_knots(r->m, NULL, 0) : 0;
    if (nk == 0)
        return REMAT_OK;
    double *z = rmi_malloc(sizeof *z * (size_t)(nk + 1));
    if (!z)
        return rmi_error(REMAT_ERR_NOMEM, "pfr: out of memory");
    remat_mechanism_control_knots(r->m, z, nk);
    int n = 0;
    for (int i = 0; i < nk; i++)
        if (z[i] > 0 && z[i] < r->opt.length)
            z[n++] = z[i];
    z[n++] = r->opt.length;
    oo->n_times = n;
    oo->times = z;
    *times = z;
    return REMAT_OK;
}

/* C(L): (S,) */
static remat_status outlet_value(const remat_pfr *r, remat_fn *f, remat_val y0, remat_val p, remat_val *c)
{
    double *times;
    remat_ode_options oo;
    remat_val ys;
    remat_status st = outlet_options(r, &oo, &times);
    if (st == REMAT_OK)
        st = remat_ode_integrate(f, r->m, &oo, y0, p, &ys);
    *c = st == REMAT_OK ? remat_index(f, ys, oo.n_times - 1) : REMAT_NONE;
    rmi_free(times);
    return st;
}

/* adaptive: C(z_1..z_n), one integration whose dense output gives the
 * profile points (remat/ode.h "Dense output"): one loop whatever n, so the
 * graph, its compile time and memory do not grow with the points (one loop
 * per interval took 19 s and 1.27 GB for 100 points of GRI-Mech 3.0) */
static remat_status build_adaptive_profile(remat_pfr *r)
{
    double *z = rmi_malloc(sizeof *z * (size_t)r->steps);
    if (!z)
        return rmi_error(REMAT_ERR_NOMEM, "pfr: out of memory");
    for (int64_t i = 0; i < r->steps; i++)
        z[i] = i + 1 == r->steps ? r->opt.length : (double)(i + 1) * r->h;
    remat_ode_options oo = pfr_ode_options(&r->opt, &r->opt.length);
    oo.n_times = (int)r->steps;
    oo.times = z;
    oo.dense = true;
    /* steps end on the control profiles' knots, as the outlet's do */
    int nk = remat_mechanism_control_knots(r->m, NULL, 0);
    double *knots = nk > 0 ? rmi_malloc(sizeof *knots * (size_t)nk) : NULL;
    if (nk > 0 && !knots) {
        rmi_free(z);
        return rmi_error(REMAT_ERR_NOMEM, "pfr: out of memory");
    }
    if (nk > 0)
        remat_mechanism_control_knots(r->m, knots, nk);
    oo.n_jumps = nk > 0 ? nk : 0;
    oo.jump_ts = knots;
    remat_val y0, p, ys;
    remat_fn *f = new_fn(r, "pfr_profile", &y0, &p);
    remat_status st = f ? remat_ode_integrate(f, r->m, &oo, y0, p, &ys) : rmi_error(REMAT_ERR_NOMEM, "pfr: out of memory");
    rmi_free(z);
    rmi_free(knots);
    if (!f)
        return st;
    if (st == REMAT_OK)
        remat_fn_output(f, ys);
    return finish(r, f, st, &r->profile, &r->profile_fn);
}

remat_status remat_pfr_integration_stats(remat_pfr *r, const double params[], double stats[REMAT_ODE_STATS])
{
    if (!r || !stats)
        return rmi_error(REMAT_ERR_NULL, "pfr stats: %s is NULL", !r ? "the reactor" : "the output");
    remat_status st = pfr_inputs(r, params); /* diagnose.c passes r->in itself */
    if (st != REMAT_OK)
        return st;
    double *times;
    remat_ode_options oo;
    if ((st = outlet_options(r, &oo, &times)) != REMAT_OK)
        return st;
    oo.scan = (remat_scan_options){0};
    /* r->in: params, conds */
    st = remat_ode_run_once(r->m, &oo, r->inlet, r->in, remat_backend_cpu(), r->opt.compile, NULL, stats);
    rmi_free(times);
    return st;
}

remat_status pfr_build_outlet(remat_pfr *r)
{
    remat_val y0, p, c;
    remat_fn *f = new_fn(r, "pfr_outlet", &y0, &p);
    if (!f)
        return rmi_error(REMAT_ERR_NOMEM, "pfr: out of memory");
    remat_status st = outlet_value(r, f, y0, p, &c);
    if (st == REMAT_OK)
        remat_fn_output(f, c);
    return finish(r, f, st, &r->outlet, &r->outlet_fn);
}

remat_status pfr_build_objective(remat_pfr *r)
{
    remat_val y0, p, c;
    remat_fn *f = new_fn(r, "pfr_objective", &y0, &p), *vg = NULL;
    if (!f)
        return rmi_error(REMAT_ERR_NOMEM, "pfr: out of memory");
    remat_status st = outlet_value(r, f, y0, p, &c);
    if (st == REMAT_OK) {
        remat_val cs = remat_index(f, c, r->opt.species);
        remat_fn_output(f, r->opt.goal == REMAT_PFR_MAXIMIZE ? remat_neg(f, cs) : cs);
        if (remat_fn_status(f) != REMAT_OK)
            st = rmi_error(remat_fn_status(f), "pfr: %s", remat_fn_error(f));
    }
    if (st == REMAT_OK && r->P) {
        st = remat_value_and_grad(f, 1, (const int[]){1}, &vg);
        remat_fn_free(f);
        f = vg;
    }
    return finish(r, f, st, &r->objective, &r->objective_fn);
}

/* body(y, [j,] [t_start,] h, [params]) -> (y', [j + 1,] y'): remat_ode_integrate's
 * interval step with the state also emitted as the scan's per-step output */
remat_status pfr_build_profile(remat_pfr *r)
{
    if (r->opt.adaptive)
        return build_adaptive_profile(r);
    int timed = remat_kinetics_uses_indep(r->m);
    int64_t S = r->S, P = r->PI;
    remat_fn *b = remat_fn_new("pfr_profile_step");
    if (!b)
        return rmi_error(REMAT_ERR_NOMEM, "pfr: out of memory");
    remat_val y = remat_arg(b, "y", REMAT_F64, 1, &S);
    remat_val j = timed ? remat_arg(b, "step", REMAT_F64, 0, NULL) : REMAT_NONE;
    remat_val t0 = timed ? remat_arg(b, "t_start", REMAT_F64, 0, NULL) : REMAT_NONE;
    remat_val h = remat_arg(b, "h", REMAT_F64, 0, NULL);
    remat_val p = P ? remat_arg(b, "params", REMAT_F64, 1, &P) : REMAT_NONE;
    remat_val t = timed ? remat_add(b, t0, remat_mul(b, j, h)) : REMAT_NONE, y1;
    remat_status st = remat_ode_step(b, r->m, r->opt.method, t, h, y, p, &y1);
    if (st == REMAT_OK) {
        remat_fn_output(b, y1);
        if (timed)
            remat_fn_output(b, remat_add_scalar(b, j, 1.0));
        remat_fn_output(b, y1);
        if (remat_fn_status(b) != REMAT_OK)
            st = rmi_error(remat_fn_status(b), "pfr: profile step: %s", remat_fn_error(b));
    }
    if (st != REMAT_OK) {
        remat_fn_free(b);
        return st;
    }
    remat_val y0, pa;
    remat_fn *f = new_fn(r, "pfr_profile", &y0, &pa);
    if (!f) {
        remat_fn_free(b);
        return rmi_error(REMAT_ERR_NOMEM, "pfr: out of memory");
    }
    remat_val init[2] = {y0, remat_scalar(f, REMAT_F64, 0.0)}, consts[3], carry[2], ys;
    int nc = 0;
    if (timed)
        consts[nc++] = remat_scalar(f, REMAT_F64, 0.0);
    consts[nc++] = remat_scalar(f, REMAT_F64, r->h);
    if (P)
        consts[nc++] = pa;
    st = remat_scan(f, b, r->steps, timed ? 2 : 1, init, 0, NULL, nc, consts, NULL, carry, &ys);
    remat_fn_free(b);
    if (st == REMAT_OK)
        remat_fn_output(f, ys);
    return finish(r, f, st, &r->profile, &r->profile_fn);
}

/*
 * fixed_dense.c — fixed steps with the output times as data of the loop
 * (remat_ode_integrate_times with adaptive false; issue 21): one scan of
 * opt->steps steps of opt->dt from t0 on a uniform grid t_j = t0 + j dt,
 * whatever the number of output times K, carrying y, fy = f(t, y), a step
 * counter and the rows (S, K). Grid point t_j owns the rows within
 * REMAT_ODE_GRID_TOL j dt of it: after the step from t_j to t_{j+1} the rows
 * owned by t_{j+1} take y' itself (no interpolation: as accurate as the
 * method, and remat_ode_integrate's rows there to rounding, whose steps are
 * dt to rounding on a grid row), and the rows strictly between the two
 * points' bands take the step's continuous extension at theta = (t_k - t)/dt
 * (dense.c): tsit5's and dopri5's own, from the stages this body keeps and
 * the FSAL stage dt f(t + dt, y') (which the next step reuses as its first:
 * no extra right-hand side); rodas5's own, from its stages (fy carried
 * unread); euler's and rk4's the cubic Hermite
 * interpolant of y, y', dt f(t, y), dt f(t + dt, y') (one more right-hand
 * side per step). A step costs O(K S) for the rows besides its stages.
 * Reverse mode runs through the extension (theta and the row masks are
 * control values); memory O(K S) per snapshot of opt->scan's schedule plus
 * its step tapes, the zero spec meaning binomial with
 * REMAT_WHILE_DEFAULT_SNAPSHOTS (16) slots, as the adaptive loops' zero spec
 * means online.
 */
#include <stdbool.h>
#include <stdio.h>

#include "core/alloc.h"
#include "core/error.h"
#include "models/ode/ode_impl.h"
#include "remat/loop.h"

/* ode_impl.h: one step with its stages kept (also rows.c's grid) */
remat_status ode_step_kept(remat_fn *b, const ode_rhs *r, const ode_tableau *tb, remat_val t, remat_val tn,
                           remat_val h, remat_val y, remat_val fy, remat_val p, remat_val *k, remat_val *y1,
                           remat_val *fy1)
{
    if (tb->ros) { /* f(t, y) comes with J inside the step: fy passed on unread */
        *fy1 = fy;
        return rmi_ode_rosenbrock_step(b, r, tb, r->timed ? t : REMAT_NONE, h, y, p, y1, NULL, k);
    }
    k[0] = remat_mul(b, h, fy);
    for (int i = 1; i < tb->stages; i++) {
        remat_val yi = remat_add(b, y, ode_combine(b, i, tb->a + i * (i - 1) / 2, k));
        remat_val ti = REMAT_NONE;
        if (r->timed)
            ti = tb->c[i] == 1.0 ? tn : remat_add(b, t, remat_mul_scalar(b, h, tb->c[i]));
        remat_val fi;
        remat_status st = ode_rhs_eval(b, r, ti, yi, p, &fi);
        if (st != REMAT_OK)
            return st;
        k[i] = remat_mul(b, h, fi);
    }
    *y1 = remat_add(b, y, ode_combine(b, tb->stages, tb->b, k));
    remat_status st = ode_rhs_eval(b, r, r->timed ? tn : REMAT_NONE, *y1, p, fy1);
    if (st == REMAT_OK)
        k[tb->stages] = remat_mul(b, h, *fy1);
    return st;
}

/* body(y, fy, j, out, t0, h, ts[, params]) -> (y', f(t + h, y'), j + 1, out') */
static remat_status make_body(const remat_mechanism *m, const remat_ode_options *opt, remat_dtype dt, int64_t S,
                              int64_t K, const remat_shape *ps, remat_fn **out)
{
    *out = NULL;
    ode_rhs r = ode_rhs_of(m);
    const ode_tableau *tb = rmi_ode_tableau(opt->method);
    if (!tb)
        return rmi_error(REMAT_ERR_ARG, "ode: unknown method %d", (int)opt->method);
    remat_fn *b = remat_fn_new("fixed_dense_step");
    if (!b)
        return rmi_error(REMAT_ERR_NOMEM, "ode: out of memory");
    int64_t SK[2] = {S, K}, S1[2] = {S, 1}, oneK[2] = {1, K};
    remat_val y = remat_arg(b, "y", dt, 1, &S);
    remat_val fy = remat_arg(b, "fy", dt, 1, &S);
    remat_val j = remat_arg(b, "step", dt, 0, NULL);
    remat_val rows = remat_arg(b, "rows", dt, 2, SK);
    remat_val t0 = remat_arg(b, "t0", dt, 0, NULL);
    remat_val h = remat_arg(b, "h", dt, 0, NULL);
    remat_val ts = remat_arg(b, "ts", dt, 1, &K);
    remat_val p = ps ? remat_arg(b, "params", dt, ps->rank, ps->dims) : REMAT_NONE;
    remat_val j1 = remat_add_scalar(b, j, 1.0);
    remat_val t = remat_add(b, t0, remat_mul(b, j, h)), tn = remat_add(b, t0, remat_mul(b, j1, h));
    remat_val y1, fy1, k[ODE_MAX_STAGES + 1];
    bool own = ode_has_extension(tb); /* the method's continuous extension (tsit5, dopri5, rodas5) */
    static const ode_tableau hermite = {.name = "hermite"}; /* dense NULL: the cubic Hermite rows */
    remat_status st;
    if (own) {
        st = ode_step_kept(b, &r, tb, t, tn, h, y, fy, p, k, &y1, &fy1);
    } else {
        st = remat_ode_step(b, m, opt->method, r.timed ? t : REMAT_NONE, h, y, p, &y1);
        if (st == REMAT_OK)
            st = ode_rhs_eval(b, &r, r.timed ? tn : REMAT_NONE, y1, p, &fy1);
        if (st == REMAT_OK)
            k[0] = remat_mul(b, fy, h), k[1] = remat_mul(b, fy1, h);
    }
    if (st != REMAT_OK) {
        remat_fn_free(b);
        return st;
    }
    /* the grid point t0 + j dt owns the rows within REMAT_ODE_GRID_TOL j dt
     * of it: those at the step's end take y' itself (no interpolation), and
     * only the rows strictly between the two bands are interpolated */
    remat_val band = remat_mul_scalar(b, remat_mul(b, j, h), REMAT_ODE_GRID_TOL);
    remat_val band1 = remat_mul_scalar(b, remat_mul(b, j1, h), REMAT_ODE_GRID_TOL);
    remat_val d = remat_sub(b, ts, tn);
    remat_val on = remat_mul(b, remat_le(b, d, band1), remat_ge(b, d, remat_neg(b, band1)));
    remat_val inside = remat_mul(b, remat_gt(b, ts, remat_add(b, t, band)), remat_lt(b, d, remat_neg(b, band1)));
    remat_val rows1 = ode_dense_update_masked(b, own ? tb : &hermite, dt, S, K, rows, ts, t, inside, y, y1, h, k);
    if (rows1 == REMAT_NONE) {
        remat_fn_free(b);
        return rmi_error(REMAT_ERR_NOMEM, "ode: out of memory");
    }
    remat_val ends = remat_broadcast_to(b, remat_reshape(b, y1, 2, S1), 2, SK);
    rows1 = remat_select(b, remat_reshape(b, on, 2, oneK), ends, rows1);
    remat_fn_output(b, y1);
    remat_fn_output(b, fy1);
    remat_fn_output(b, j1);
    remat_fn_output(b, rows1);
    if (remat_fn_status(b) != REMAT_OK) {
        st = rmi_error(remat_fn_status(b), "ode: building the fixed dense step: %s", remat_fn_error(b));
        remat_fn_free(b);
        return st;
    }
    *out = b;
    return REMAT_OK;
}

remat_status ode_integrate_fixed_dense(remat_fn *f, const remat_mechanism *m, const remat_ode_options *opt,
                                       remat_val y0, remat_val params, remat_val ts, int64_t K,
                                       remat_val *y_at_outputs)
{
    *y_at_outputs = REMAT_NONE;
    remat_dtype dt = remat_val_dtype(f, y0);
    remat_shape ys = remat_val_shape(f, y0);
    int64_t S = remat_mechanism_species_count(m);
    if (ys.rank != 1 || ys.dims[0] != S) {
        char a[96];
        return rmi_error(REMAT_ERR_SHAPE, "ode: y0 is %s, expected %s[%lld] (fixed steps at times as a value)",
                         remat_shape_format(dt, &ys, a, sizeof a), remat_dtype_name(dt), (long long)S);
    }
    if (!(opt->dt > 0) || opt->steps < 1)
        return rmi_error(REMAT_ERR_VALUE,
                         "ode: fixed steps at times as a value take dt > 0 and steps >= 1, the total step count "
                         "(dt = %g, steps = %lld)",
                         opt->dt, (long long)opt->steps);
    remat_shape ps = params != REMAT_NONE ? remat_val_shape(f, params) : (remat_shape){0};
    remat_fn *body = NULL;
    remat_status st = make_body(m, opt, dt, S, K, params != REMAT_NONE ? &ps : NULL, &body);
    if (st != REMAT_OK)
        return st;
    ode_rhs r = ode_rhs_of(m);
    remat_val t0 = remat_scalar(f, dt, opt->t0), fy0;
    st = ode_rhs_eval(f, &r, r.timed ? t0 : REMAT_NONE, y0, params, &fy0);
    if (st == REMAT_OK) {
        int64_t SK[2] = {S, K}, S_one[2] = {S, 1};
        remat_val init[4] = {y0, fy0, remat_scalar(f, dt, 0.0),
                             remat_broadcast_to(f, remat_reshape(f, y0, 2, S_one), 2, SK)};
        remat_val consts[4] = {t0, remat_scalar(f, dt, opt->dt), remat_stop_gradient(f, ts), params};
        remat_val carry[4];
        /* the zero spec (store-all elsewhere) is binomial with the adaptive
         * loops' default slots here: a step's tape holds O(K) (the row mask
         * and theta), so storing every step would cost O(steps x K) */
        remat_scan_options so = opt->scan;
        const remat_schedule_spec *sp = &so.schedule;
        if (sp->kind == REMAT_SCHED_STORE_ALL && sp->period == 0 && sp->snapshots == 0)
            so.schedule = (remat_schedule_spec){.kind = REMAT_SCHED_BINOMIAL,
                                                .snapshots = REMAT_WHILE_DEFAULT_SNAPSHOTS};
        st = remat_scan(f, body, opt->steps, 4, init, 0, NULL, params != REMAT_NONE ? 4 : 3, consts, &so, carry,
                        NULL);
        if (st == REMAT_OK)
            *y_at_outputs = remat_transpose(f, carry[3], (int[]){1, 0});
    }
    if (st == REMAT_OK && remat_fn_status(f) != REMAT_OK)
        st = rmi_error(remat_fn_status(f), "ode: %s", remat_fn_error(f));
    remat_fn_free(body);
    return st;
}

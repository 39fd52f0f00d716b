/*
 * fixed_dense.c — fixed steps with the output times as data of the loop
 * (remat_ode_integrate_times with adaptive false; issue 21): one scan of
 * opt->steps steps of opt->dt from t0 on a uniform grid t_j = t0 + j dt,
 * whatever the number of output times K, carrying y, fy = f(t, y), a step
 * counter and the rows (S, K). After the step from t to t + dt the rows
 * with t < t_k <= t + dt take the cubic Hermite interpolant of y, y',
 * dt f(t, y), dt f(t + dt, y') at theta = (t_k - t)/dt (dense.c, as rodas5's
 * rows), so a step costs the method's stages plus one right-hand side (the
 * f(t + dt, y') carried to the next step) and O(K S) for the rows. A row
 * on a step end (theta = 1) is y' up to the Horner form's rounding; the grid
 * is uniform, not cut at every output time as remat_ode_integrate's
 * intervals are (h_k = len_k / n_k), so rows on the grid equal that path's
 * within rounding, not bitwise. Reverse mode runs through the interpolant
 * (theta and the row mask are control values); memory O(K S) per snapshot
 * of opt->scan's schedule plus its step tapes, the zero spec meaning binomial
 * with REMAT_WHILE_DEFAULT_SNAPSHOTS (16) slots, as the adaptive loops'
 * zero spec means online.
 */
#include <stdio.h>

#include "core/alloc.h"
#include "core/error.h"
#include "models/ode/ode_impl.h"
#include "remat/loop.h"

/* body(y, fy, j, out, t0, h, ts[, params]) -> (y', f(t + h, y'), j + 1, out') */
static remat_status make_body(const remat_mechanism *m, const remat_ode_options *opt, remat_dtype dt, int64_t S,
                              int64_t K, const remat_shape *ps, remat_fn **out)
{
    *out = NULL;
    ode_rhs r = ode_rhs_of(m);
    remat_fn *b = remat_fn_new("fixed_dense_step");
    if (!b)
        return rmi_error(REMAT_ERR_NOMEM, "ode: out of memory");
    int64_t SK[2] = {S, K};
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
    remat_val y1, fy1;
    remat_status st = remat_ode_step(b, m, opt->method, r.timed ? t : REMAT_NONE, h, y, p, &y1);
    if (st == REMAT_OK)
        st = ode_rhs_eval(b, &r, r.timed ? tn : REMAT_NONE, y1, p, &fy1);
    if (st != REMAT_OK) {
        remat_fn_free(b);
        return st;
    }
    static const ode_tableau hermite = {.name = "hermite"}; /* dense NULL: the cubic Hermite rows */
    remat_val k[2] = {remat_mul(b, fy, h), remat_mul(b, fy1, h)};
    remat_val rows1 = ode_dense_update(b, &hermite, dt, S, K, rows, ts, t, tn, y, y1, h, k);
    if (rows1 == REMAT_NONE) {
        remat_fn_free(b);
        return rmi_error(REMAT_ERR_NOMEM, "ode: out of memory");
    }
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

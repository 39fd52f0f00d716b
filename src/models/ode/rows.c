/*
 * rows.c — fixed steps that end on every output time, the times and the
 * step counts data of the loops (remat_ode_integrate_rows; issue 21): one
 * scan over the K output times whose body runs the interval's steps as a
 * while loop, so the graph depends on the species and the method, not on K,
 * and time and memory are O(steps + K).
 *
 * Interval k, [t_{k-1}, t_k] with t_{-1} = t0, takes n_k steps of
 * h_k = (t_k - t_{k-1}) / n_k, step j at t = t_{k-1} + j h_k: the steps
 * remat_ode_integrate takes with the counts remat_ode_count_steps gives
 * (integrate.c), through the same step kernel (remat_ode_step), so a row is
 * that path's row. The scan's xs are t_{k-1}, t_k and n_k; its carry y; its
 * ys the row. The while loop carries y (differentiated) and the step
 * counter j (control), its consts t_{k-1}, h_k, n_k and the parameters.
 *
 * Reverse mode: the scan under opt->scan's schedule (its zero spec binomial
 * with REMAT_WHILE_DEFAULT_SNAPSHOTS slots, as fixed_dense.c), each of its
 * step tapes holding the while loop's store (online with
 * REMAT_WHILE_DEFAULT_SNAPSHOTS slots, whatever n_k).
 *
 * tsit5, dopri5 and rodas5 with opt->dt > 0 have their own continuous
 * extension, more accurate than a forced step end (bench_pfr's fit check,
 * tsit5 dt 0.6: 1.56e-6 against 3.67e-6), so they keep the uniform grid
 * t_j = t0 + j dt of fixed_dense.c instead (one discretisation whatever
 * the rows' times): the scan carries the grid state at t_j, y and the step
 * from t_j taken ahead (its end, f there, its extension's coefficients:
 * ode_dense_coeffs), row k's while loop moves the state one grid point on
 * (one step each) while t_{j+1} is at most t_k within its band
 * REMAT_ODE_GRID_TOL (j + 1) dt, and the row is y if t_k is within t_j's
 * band, else the extension of the carried step (ode_dense_eval_masked).
 * Each grid step is taken once whatever the rows (test_models_rows counts
 * them), so a row costs the extension's evaluation, and the rows equal
 * fixed_dense.c's (the same step and extension ops); the counts input is
 * unread.
 */
#include <stdio.h>

#include "core/assert.h"
#include "core/error.h"
#include "models/ode/ode_impl.h"
#include "remat/loop.h"

/* the while loop's cond(y, j, t_prev, h, n[, params]) -> j < n */
static remat_fn *make_cond(remat_dtype dt, int64_t S, const remat_shape *ps)
{
    remat_fn *c = remat_fn_new("ode_rows_more");
    if (!c)
        return NULL;
    remat_arg(c, "y", dt, 1, &S);
    remat_val j = remat_arg(c, "step", dt, 0, NULL);
    remat_arg(c, "t_prev", dt, 0, NULL);
    remat_arg(c, "h", dt, 0, NULL);
    remat_val n = remat_arg(c, "n", dt, 0, NULL);
    if (ps)
        remat_arg(c, "params", dt, ps->rank, ps->dims);
    remat_fn_output(c, remat_lt(c, j, n));
    return c;
}

/* the while loop's body(y, j, t_prev, h, n[, params]) -> (y', j + 1, 1) */
static remat_status make_step(const remat_mechanism *m, remat_ode_method method, remat_dtype dt, int64_t S,
                              const remat_shape *ps, remat_fn **out)
{
    remat_fn *b = remat_fn_new("ode_rows_step");
    if (!b)
        return rmi_error(REMAT_ERR_NOMEM, "ode: out of memory");
    remat_val y = remat_arg(b, "y", dt, 1, &S);
    remat_val j = remat_arg(b, "step", dt, 0, NULL);
    remat_val t0 = remat_arg(b, "t_prev", dt, 0, NULL);
    remat_val h = remat_arg(b, "h", dt, 0, NULL);
    remat_arg(b, "n", dt, 0, NULL);
    remat_val p = ps ? remat_arg(b, "params", dt, ps->rank, ps->dims) : REMAT_NONE;
    /* as integrate.c's interval body: t = t_start + j h */
    remat_val t = remat_kinetics_uses_indep(m) ? remat_add(b, t0, remat_mul(b, j, h)) : REMAT_NONE;
    remat_val y1;
    remat_status st = remat_ode_step(b, m, method, t, h, y, p, &y1);
    if (st != REMAT_OK) {
        remat_fn_free(b);
        return st;
    }
    remat_fn_output(b, y1);
    remat_fn_output(b, remat_add_scalar(b, j, 1.0));
    remat_fn_output(b, remat_scalar(b, dt, 1.0));
    *out = b;
    return REMAT_OK;
}

/* a row body's last part: b into *out when it was built (its own status
 * too), else freed; the while loop's cond and step, which it copied, freed */
static remat_status body_done(remat_status st, remat_fn *b, remat_fn *cond, remat_fn *step, const char *what,
                              remat_fn **out)
{
    if (st == REMAT_OK && remat_fn_status(b) != REMAT_OK)
        st = rmi_error(remat_fn_status(b), "ode: building %s: %s", what, remat_fn_error(b));
    if (st == REMAT_OK)
        *out = b;
    else
        remat_fn_free(b);
    remat_fn_free(step);
    remat_fn_free(cond);
    return st;
}

/* the scan's body(y, t_prev, t, n[, params]) -> (y', y') */
static remat_status make_row(const remat_mechanism *m, const remat_ode_options *opt, remat_dtype dt, int64_t S,
                             const remat_shape *ps, remat_fn **out)
{
    *out = NULL;
    remat_fn *cond = make_cond(dt, S, ps), *step = NULL;
    if (!cond)
        return rmi_error(REMAT_ERR_NOMEM, "ode: out of memory");
    remat_status st = make_step(m, opt->method, dt, S, ps, &step);
    remat_fn *b = st == REMAT_OK ? remat_fn_new("ode_rows_interval") : NULL;
    if (st == REMAT_OK && !b)
        st = rmi_error(REMAT_ERR_NOMEM, "ode: out of memory");
    if (st == REMAT_OK) {
        remat_val y = remat_arg(b, "y", dt, 1, &S);
        remat_val tp = remat_arg(b, "t_prev", dt, 0, NULL);
        remat_val tk = remat_arg(b, "t", dt, 0, NULL);
        remat_val n = remat_arg(b, "n", dt, 0, NULL);
        remat_val p = ps ? remat_arg(b, "params", dt, ps->rank, ps->dims) : REMAT_NONE;
        /* n >= 1 gives integrate.c's h bit for bit; an empty interval
         * (a row at t0) runs no step */
        remat_val h = remat_div(b, remat_sub(b, tk, tp), remat_max(b, n, remat_scalar(b, dt, 1.0)));
        remat_val init[2] = {y, remat_scalar(b, dt, 0.0)}, consts[4] = {tp, h, n, p}, carry[2];
        remat_while_options wo = {.max_steps = opt->max_steps};
        st = remat_while(b, cond, step, 2, 1, init, ps ? 4 : 3, consts, &wo, carry, NULL);
        if (st == REMAT_OK) {
            remat_fn_output(b, carry[0]);
            remat_fn_output(b, carry[0]);
        }
    }
    return body_done(st, b, cond, step, "the row scan", out);
}

/* ---- tsit5, dopri5 and rodas5 with dt > 0: the uniform grid and the method's own
 * continuous extension (fixed_dense.c's rows in O(steps + K)) ---- */

/* t0 + j h and the grid tolerance band REMAT_ODE_GRID_TOL j h, as
 * fixed_dense.c forms them */
static remat_val grid_t(remat_fn *b, remat_val t0, remat_val j, remat_val h)
{
    return remat_add(b, t0, remat_mul(b, j, h));
}
static remat_val grid_band(remat_fn *b, remat_val j, remat_val h)
{
    return remat_mul_scalar(b, remat_mul(b, j, h), REMAT_ODE_GRID_TOL);
}

/* The grid state at t_j, carried by the scan and the while loop: y = y(t_j)
 * and the grid step from it, taken one ahead (its end y1, fy1 = f(t_{j+1},
 * y1), its continuous extension's coefficients P from ode_dense_coeffs),
 * then j. A row reads the step it falls in from the state: no step is taken
 * twice, and a row costs the extension's evaluation only. */
static int grid_terms(const ode_tableau *tb)
{
    return tb->ros ? tb->ros->n_dense : ODE_DENSE_TERMS;
}
#define G_Y 0
#define G_Y1 1
#define G_FY1 2
#define G_P 3
/* carries, then j */
static int grid_carries(const ode_tableau *tb)
{
    return G_P + grid_terms(tb) + 1;
}

/* the grid loop's arguments: (y, y1, fy1, P..., j, t_k, t0, h[, params]);
 * a[n] with n = grid_carries(tb) is t_k */
static void grid_args(remat_fn *b, const ode_tableau *tb, remat_dtype dt, int64_t S, const remat_shape *ps,
                      remat_val *a)
{
    int n = grid_carries(tb);
    a[G_Y] = remat_arg(b, "y", dt, 1, &S);
    a[G_Y1] = remat_arg(b, "y1", dt, 1, &S);
    a[G_FY1] = remat_arg(b, "fy1", dt, 1, &S);
    for (int i = G_P; i < n - 1; i++)
        a[i] = remat_arg(b, "P", dt, 1, &S);
    a[n - 1] = remat_arg(b, "step", dt, 0, NULL);
    a[n] = remat_arg(b, "t_row", dt, 0, NULL);
    a[n + 1] = remat_arg(b, "t0", dt, 0, NULL);
    a[n + 2] = remat_arg(b, "h", dt, 0, NULL);
    a[n + 3] = ps ? remat_arg(b, "params", dt, ps->rank, ps->dims) : REMAT_NONE;
}

#define GRID_MAX_ARGS (G_P + ODE_DENSE_TERMS + 1 + 4)

/* cond: the next grid point t0 + (j + 1) h is at most the row's time, or
 * within its band of it (a row on the grid is a step's end) */
static remat_fn *make_grid_cond(const ode_tableau *tb, remat_dtype dt, int64_t S, const remat_shape *ps)
{
    remat_fn *c = remat_fn_new("ode_rows_grid_more");
    if (!c)
        return NULL;
    remat_val a[GRID_MAX_ARGS];
    grid_args(c, tb, dt, S, ps, a);
    int n = grid_carries(tb);
    remat_val j1 = remat_add_scalar(c, a[n - 1], 1.0);
    remat_val d = remat_sub(c, a[n], grid_t(c, a[n + 1], j1, a[n + 2]));
    remat_fn_output(c, remat_ge(c, d, remat_neg(c, grid_band(c, j1, a[n + 2]))));
    return c;
}

/* the step from t_j = t0 + j h with y there and fy = f(t_j, y): its end,
 * f there, its extension's coefficients (out[G_Y1..], as the carries) */
static remat_status grid_step_from(remat_fn *b, const remat_mechanism *m, const ode_tableau *tb, remat_val j,
                                   remat_val t0, remat_val h, remat_val y, remat_val fy, remat_val p, remat_val *out)
{
    ode_rhs r = ode_rhs_of(m);
    remat_val j1 = remat_add_scalar(b, j, 1.0), k[ODE_MAX_STAGES + 1];
    remat_status st = ode_step_kept(b, &r, tb, grid_t(b, t0, j, h), grid_t(b, t0, j1, h), h, y, fy, p, k,
                                    out + G_Y1, out + G_FY1);
    if (st == REMAT_OK) {
        int n = ode_dense_coeffs(b, tb, y, out[G_Y1], k, out + G_P);
        REMAT_ASSERT(n == grid_terms(tb));
        for (int i = 0; i < n; i++)
            REMAT_ASSERT(out[G_P + i] != REMAT_NONE); /* a term of the extension with all weights 0 */
    }
    return st;
}

/* body: one grid point on, (y, y1, fy1, P, j) -> (y1, the step from t_{j+1}
 * (y2, f(t_{j+2}, y2), its coefficients), j + 1, 1) */
static remat_status make_grid_step(const remat_mechanism *m, const ode_tableau *tb, remat_dtype dt, int64_t S,
                                   const remat_shape *ps, remat_fn **out)
{
    remat_fn *b = remat_fn_new("ode_rows_grid_step");
    if (!b)
        return rmi_error(REMAT_ERR_NOMEM, "ode: out of memory");
    remat_val a[GRID_MAX_ARGS], next[GRID_MAX_ARGS];
    grid_args(b, tb, dt, S, ps, a);
    int n = grid_carries(tb);
    remat_val j1 = remat_add_scalar(b, a[n - 1], 1.0);
    remat_status st = grid_step_from(b, m, tb, j1, a[n + 1], a[n + 2], a[G_Y1], a[G_FY1], a[n + 3], next);
    if (st != REMAT_OK) {
        remat_fn_free(b);
        return st;
    }
    next[G_Y] = a[G_Y1];
    next[n - 1] = j1;
    for (int i = 0; i < n; i++)
        remat_fn_output(b, next[i]);
    remat_fn_output(b, remat_scalar(b, dt, 1.0)); /* accepted */
    *out = b;
    return REMAT_OK;
}

/* the scan's body(y, y1, fy1, P, j, t_k, t0, h[, params]) -> (the grid
 * state at the last grid point at or before t_k, the row): the while loop
 * takes the grid steps up to t_k; a row on that point is its y, else the
 * continuous extension of the grid step from it, which the state holds */
static remat_status make_grid_row(const remat_mechanism *m, const remat_ode_options *opt, const ode_tableau *tb,
                                  remat_dtype dt, int64_t S, const remat_shape *ps, remat_fn **out)
{
    *out = NULL;
    remat_fn *cond = make_grid_cond(tb, dt, S, ps), *step = NULL;
    if (!cond)
        return rmi_error(REMAT_ERR_NOMEM, "ode: out of memory");
    remat_status st = make_grid_step(m, tb, dt, S, ps, &step);
    remat_fn *b = st == REMAT_OK ? remat_fn_new("ode_rows_grid_row") : NULL;
    if (st == REMAT_OK && !b)
        st = rmi_error(REMAT_ERR_NOMEM, "ode: out of memory");
    if (st == REMAT_OK) {
        int n = grid_carries(tb);
        remat_val a[GRID_MAX_ARGS], init[GRID_MAX_ARGS], c[GRID_MAX_ARGS];
        grid_args(b, tb, dt, S, ps, a);
        for (int i = 0; i < n; i++)
            init[i] = i == n - 1 ? remat_stop_gradient(b, a[i]) : a[i];
        /* an interval holds at most its step count of grid points, one more
         * with the tolerance bands */
        remat_while_options wo = {.max_steps = opt->max_steps + 1};
        st = remat_while(b, cond, step, n, n - 1, init, ps ? 4 : 3, a + n, &wo, c, NULL);
        if (st == REMAT_OK) {
            remat_val j = c[n - 1], h = a[n + 2], t = grid_t(b, a[n + 1], j, h);
            int64_t one = 1, S1[2] = {S, 1};
            remat_val tk = remat_reshape(b, a[n], 1, &one);
            remat_val off = remat_gt(b, tk, remat_add(b, t, grid_band(b, j, h)));
            remat_val row = ode_dense_eval_masked(b, tb, dt, S, 1, remat_reshape(b, c[G_Y], 2, S1), tk, t, off,
                                                  c[G_Y], c[G_Y1], h, c + G_P);
            if (row == REMAT_NONE)
                st = rmi_error(REMAT_ERR_NOMEM, "ode: out of memory");
            else {
                for (int i = 0; i < n; i++)
                    remat_fn_output(b, c[i]);
                remat_fn_output(b, remat_reshape(b, row, 1, &S));
            }
        }
    }
    return body_done(st, b, cond, step, "the row scan on the grid", out);
}

/* the zero spec of opt->scan: binomial with REMAT_WHILE_DEFAULT_SNAPSHOTS slots */
static remat_scan_options row_scan_options(const remat_ode_options *opt)
{
    remat_scan_options so = opt->scan;
    const remat_schedule_spec *sp = &so.schedule;
    if (sp->kind == REMAT_SCHED_STORE_ALL && sp->period == 0 && sp->snapshots == 0)
        so.schedule = (remat_schedule_spec){.kind = REMAT_SCHED_BINOMIAL, .snapshots = REMAT_WHILE_DEFAULT_SNAPSHOTS};
    return so;
}

static remat_status integrate_grid(remat_fn *f, const remat_mechanism *m, const remat_ode_options *opt,
                                   const ode_tableau *tb, remat_val y0, remat_val params, const remat_shape *ps,
                                   remat_val times, int64_t K, remat_val *rows)
{
    int64_t S = remat_mechanism_species_count(m);
    remat_dtype dt = remat_val_dtype(f, y0);
    remat_fn *body = NULL;
    remat_status st = make_grid_row(m, opt, tb, dt, S, ps, &body);
    if (st != REMAT_OK)
        return st;
    ode_rhs r = ode_rhs_of(m);
    int n = grid_carries(tb);
    remat_val t0 = remat_scalar(f, dt, opt->t0), h = remat_scalar(f, dt, opt->dt), fy0;
    remat_val init[GRID_MAX_ARGS], carry[GRID_MAX_ARGS];
    st = ode_rhs_eval(f, &r, r.timed ? t0 : REMAT_NONE, y0, params, &fy0);
    if (st == REMAT_OK) /* the state at t0: its grid step taken ahead */
        st = grid_step_from(f, m, tb, remat_scalar(f, dt, 0.0), t0, h, y0, fy0, params, init);
    if (st == REMAT_OK) {
        init[G_Y] = y0;
        init[n - 1] = remat_scalar(f, dt, 0.0);
        remat_val xs = remat_stop_gradient(f, times), consts[3] = {t0, h, params};
        remat_scan_options so = row_scan_options(opt);
        st = remat_scan(f, body, K, n, init, 1, &xs, ps ? 3 : 2, consts, &so, carry, rows);
    }
    remat_fn_free(body);
    return st;
}

/* every interval's own steps, ending on its row */
static remat_status integrate_steps(remat_fn *f, const remat_mechanism *m, const remat_ode_options *opt,
                                    remat_val y0, remat_val params, const remat_shape *ps, remat_val times,
                                    remat_val steps, int64_t K, remat_val *rows)
{
    remat_dtype dt = remat_val_dtype(f, y0);
    remat_fn *body = NULL;
    remat_status st = make_row(m, opt, dt, remat_mechanism_species_count(m), ps, &body);
    if (st != REMAT_OK)
        return st;
    /* t_{k-1}: t0, then the times but the last */
    remat_val tk = remat_stop_gradient(f, times), one = remat_reshape(f, remat_scalar(f, dt, opt->t0), 1,
                                                                       (int64_t[]){1});
    remat_val tp = K == 1 ? one
                          : remat_concatenate(f, 2,
                                              (remat_val[]){one, remat_slice(f, tk, (int64_t[]){0},
                                                                             (int64_t[]){K - 1}, NULL)},
                                              0);
    remat_val xs[3] = {tp, tk, remat_stop_gradient(f, steps)}, carry;
    remat_scan_options so = row_scan_options(opt);
    st = remat_scan(f, body, K, 1, &y0, 3, xs, ps ? 1 : 0, &params, &so, &carry, rows);
    remat_fn_free(body);
    return st;
}

remat_status remat_ode_integrate_rows(remat_fn *f, const remat_mechanism *m, const remat_ode_options *opt,
                                      remat_val y0, remat_val params, remat_val times, remat_val steps,
                                      remat_val *y_at_outputs)
{
    if (!y_at_outputs)
        return rmi_error(REMAT_ERR_NULL, "ode: y_at_outputs is NULL");
    *y_at_outputs = REMAT_NONE;
    if (!f || !m || !opt)
        return rmi_error(REMAT_ERR_NULL, "ode: %s is NULL", !f ? "the function" : !m ? "the mechanism" : "the options");
    if (remat_fn_status(f) != REMAT_OK)
        return rmi_error(remat_fn_status(f), "ode: %s", remat_fn_error(f));
    if (opt->adaptive)
        return rmi_error(REMAT_ERR_ARG, "ode: rows with their step counts as values take fixed steps (adaptive "
                                        "false)");
    if (opt->adjoint != REMAT_ODE_ADJOINT_DISCRETE) /* backsolve, interpolating: rows_adjoint.c */
        return rmi_ode_rows_continuous(f, m, opt, y0, params, times, steps, y_at_outputs);
    if (!rmi_ode_tableau(opt->method))
        return rmi_error(REMAT_ERR_ARG, "ode: unknown method %d", (int)opt->method);
    if (opt->max_steps < 1)
        return rmi_error(REMAT_ERR_VALUE, "ode: rows with their step counts as values take max_steps >= 1, the most "
                                          "steps of one interval (max_steps = %lld)",
                         (long long)opt->max_steps);
    int nv = remat_fn_num_nodes(f);
    int64_t S = remat_mechanism_species_count(m);
    remat_dtype dt = y0 >= 0 && y0 < nv ? remat_val_dtype(f, y0) : REMAT_F64;
    remat_shape ys = y0 >= 0 && y0 < nv ? remat_val_shape(f, y0) : (remat_shape){.rank = -1};
    remat_shape ts = times >= 0 && times < nv ? remat_val_shape(f, times) : (remat_shape){.rank = -1};
    remat_shape ns = steps >= 0 && steps < nv ? remat_val_shape(f, steps) : (remat_shape){.rank = -1};
    char a[96];
    if (ys.rank != 1 || ys.dims[0] != S)
        return rmi_error(REMAT_ERR_SHAPE, "ode: y0 is %s, expected %s[%lld] (rows with their step counts as values)",
                         ys.rank < 0 ? "not a value of the function" : remat_shape_format(dt, &ys, a, sizeof a),
                         remat_dtype_name(dt), (long long)S);
    if (ts.rank != 1 || ts.dims[0] < 1 || remat_val_dtype(f, times) != dt)
        return rmi_error(REMAT_ERR_SHAPE, "ode: times is %s, expected %s[K] with K >= 1 (y0's dtype)",
                         ts.rank < 0 ? "not a value of the function"
                                     : remat_shape_format(remat_val_dtype(f, times), &ts, a, sizeof a),
                         remat_dtype_name(dt));
    int64_t K = ts.dims[0];
    if (ns.rank != 1 || ns.dims[0] != K || remat_val_dtype(f, steps) != dt)
        return rmi_error(REMAT_ERR_SHAPE, "ode: steps is %s, expected %s[%lld] (one count per time, y0's dtype)",
                         ns.rank < 0 ? "not a value of the function"
                                     : remat_shape_format(remat_val_dtype(f, steps), &ns, a, sizeof a),
                         remat_dtype_name(dt), (long long)K);
    remat_shape ps = {0};
    if (params != REMAT_NONE) {
        int64_t P = remat_mechanism_input_count(m);
        ps = params >= 0 && params < nv ? remat_val_shape(f, params) : (remat_shape){.rank = -1};
        if (ps.rank != 1 || ps.dims[0] != P || remat_val_dtype(f, params) != dt)
            return rmi_error(REMAT_ERR_SHAPE, "ode: params is %s, expected %s[%lld] (y0's dtype)",
                             ps.rank < 0 ? "not a value of the function"
                                         : remat_shape_format(remat_val_dtype(f, params), &ps, a, sizeof a),
                             remat_dtype_name(dt), (long long)P);
    }
    const ode_tableau *tb = rmi_ode_tableau(opt->method);
    const remat_shape *pp = params != REMAT_NONE ? &ps : NULL;
    remat_val rows = REMAT_NONE;
    remat_status st = ode_has_extension(tb) && opt->dt > 0 /* the method's own continuous extension on the grid */
                          ? integrate_grid(f, m, opt, tb, y0, params, pp, times, K, &rows)
                          : integrate_steps(f, m, opt, y0, params, pp, times, steps, K, &rows);
    if (st == REMAT_OK && remat_fn_status(f) != REMAT_OK)
        st = rmi_error(remat_fn_status(f), "ode: %s", remat_fn_error(f));
    *y_at_outputs = st == REMAT_OK ? rows : REMAT_NONE;
    return st;
}

/*
 * integrate.c — a trajectory through given output times as scans of steps.
 *
 * The grid: interval k, [t_{k-1}, t_k] with t_{-1} = t0, gets n_k equal steps
 * of h_k = len_k / n_k, so the last step of each interval ends on t_k (the
 * sum of the h_k is not t_k in floating point, but no state is attributed to
 * an accumulated time: the interval's final carry *is* the output). Each
 * interval is one scan with the caller's schedule, its final carry the next
 * interval's initial one, so nothing per step outlives a scan except what the
 * schedule keeps; the output rows are those carries, stacked.
 *
 * Memory of the reverse pass: a scan's store (its snapshots and tapes) lives
 * from its forward to its reverse, and the intervals are reversed last to
 * first, so K plain scans would hold K stores at the turn. Each interval
 * before the last is therefore a checkpoint region keeping only its input
 * state: its forward is re-run, store and all, just before it is reversed,
 * and one interval's store is live at a time — the schedule's memory, plus
 * the K output states that are returned anyway — for one more forward sweep
 * of those intervals. opt->keep_interval_stores trades back.
 *
 * When the rates read t, step j of interval k sees t = t_{k-1} + j*h_k,
 * recomputed from a step counter carried beside y (exact in floating point
 * up to 2^53 steps), so splitting the grid at an extra output time does not
 * change the times a step sees. When they do not, the carry is y alone.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "models/ode/ode_impl.h"

/* dt divides len "exactly" when len/dt is within this relative slack of an
 * integer from above: 10/0.01 and 0.3/0.1 give 1000 and 3 steps, not 1001, 4 */
#define GRID_SLACK 1e-9

/* Most steps in all intervals together: the step counter carried for t is a
 * float, exact up to 2^53, and a count past it is no integration anyone can
 * run; it also keeps every step sum and index far from int64 overflow. */
#define MAX_TOTAL_STEPS ((int64_t)1 << 53)

/* Checks the options and counts the fixed steps; adaptive options get their
 * output times checked and no steps (the controller decides at run time). */
static remat_status check_grid(const remat_ode_options *opt, int64_t *steps, int64_t *total)
{
    if (!opt)
        return rmi_error(REMAT_ERR_NULL, "ode: options are NULL");
    if (!rmi_ode_tableau(opt->method))
        return rmi_error(REMAT_ERR_ARG, "ode: unknown method %d", (int)opt->method);
    if (opt->n_times < 1 || !opt->times)
        return rmi_error(REMAT_ERR_ARG, "ode: needs at least one output time (n_times = %d, times %s)",
                         opt->n_times, opt->times ? "given" : "NULL");
    if (!isfinite(opt->t0))
        return rmi_error(REMAT_ERR_VALUE, "ode: t0 = %g is not finite", opt->t0);
    bool fixed = !opt->adaptive;
    if (fixed && rmi_ode_tableau(opt->method)->multistep)
        return rmi_error(REMAT_ERR_ARG, "ode: %s chooses its own steps: it is adaptive only (give rtol and atol, "
                                        "not steps or dt)", remat_ode_method_name(opt->method));
    if (fixed && opt->dt != 0 && !(opt->dt > 0 && isfinite(opt->dt)))
        return rmi_error(REMAT_ERR_VALUE, "ode: dt = %g must be a positive finite step (or 0 with steps)",
                         opt->dt);
    if (fixed && opt->dt == 0 && opt->steps < 1)
        return rmi_error(REMAT_ERR_VALUE, "ode: give dt > 0 or steps >= 1 per interval (steps = %lld)",
                         (long long)opt->steps);
    int64_t sum = 0;
    double prev = opt->t0;
    for (int k = 0; k < opt->n_times; k++) {
        double tk = opt->times[k];
        if (!isfinite(tk))
            return rmi_error(REMAT_ERR_VALUE, "ode: output time %d is %g", k, tk);
        if (k == 0 ? tk < prev : tk <= prev)
            return rmi_error(REMAT_ERR_VALUE,
                             "ode: output time %d (%.17g) must be %s %s (%.17g)", k, tk,
                             k == 0 ? "at or after" : "after", k == 0 ? "t0" : "the previous output time", prev);
        double len = tk - prev;
        int64_t n = 0;
        if (fixed && len > 0) {
            if (opt->dt > 0) {
                double x = len / opt->dt;
                if (!(x < 4e18))
                    return rmi_error(REMAT_ERR_VALUE, "ode: interval %d of length %g needs too many steps of %g",
                                     k, len, opt->dt);
                n = (int64_t)ceil(x - GRID_SLACK * x);
                if (n < 1)
                    n = 1;
            } else {
                n = opt->steps;
            }
        }
        if (n > MAX_TOTAL_STEPS - sum)
            return rmi_error(REMAT_ERR_VALUE,
                             "ode: interval %d brings the step count past 2^53 (%lld steps after %lld): out of range",
                             k, (long long)n, (long long)sum);
        if (steps)
            steps[k] = n;
        sum += n;
        prev = tk;
    }
    if (total)
        *total = sum;
    return REMAT_OK;
}

remat_status remat_ode_count_steps(const remat_ode_options *opt, int64_t *steps, int64_t *total)
{
    if (opt && opt->adaptive)
        return rmi_error(REMAT_ERR_ARG, "ode: adaptive stepping takes as many steps as the controller decides at "
                                          "run time (the stats of remat_ode_integrate_stats count them)");
    return check_grid(opt, steps, total);
}

typedef struct {
    remat_fn *body;
    int timed; /* carries a step counter for t */
    int has_params;
    remat_shape ps; /* params' shape: (P,) or y0's batch axes then P */
} interval_body;

/* timed: body(y, j, t_start, h, params) -> (y', j + 1); else body(y, h, params) -> y' */
static remat_status make_body(const remat_mechanism *m, remat_ode_method method, remat_dtype dt,
                              const remat_shape *ys, const remat_shape *ps, interval_body *out)
{
    int has_params = ps != NULL;
    if (ps)
        out->ps = *ps;
    out->timed = remat_kinetics_uses_indep(m);
    out->has_params = has_params;
    char name[64];
    snprintf(name, sizeof name, "%s_interval_step", remat_ode_method_name(method));
    remat_fn *b = remat_fn_new(name);
    if (!b)
        return rmi_error(REMAT_ERR_NOMEM, "ode: out of memory");
    remat_val y = remat_arg(b, "y", dt, ys->rank, ys->dims);
    remat_val j = out->timed ? remat_arg(b, "step", dt, 0, NULL) : REMAT_NONE;
    remat_val t0 = out->timed ? remat_arg(b, "t_start", dt, 0, NULL) : REMAT_NONE;
    remat_val h = remat_arg(b, "h", dt, 0, NULL);
    remat_val p = has_params ? remat_arg(b, "params", dt, ps->rank, ps->dims) : REMAT_NONE;
    remat_val t = out->timed ? remat_add(b, t0, remat_mul(b, j, h)) : REMAT_NONE;
    remat_val y1;
    remat_status st = remat_ode_step(b, m, method, t, h, y, p, &y1);
    if (st != REMAT_OK) {
        remat_fn_free(b);
        return st;
    }
    remat_fn_output(b, y1);
    if (out->timed)
        remat_fn_output(b, remat_add_scalar(b, j, 1.0));
    if (remat_fn_status(b) != REMAT_OK) {
        st = rmi_error(remat_fn_status(b), "ode: building the step: %s", remat_fn_error(b));
        remat_fn_free(b);
        return st;
    }
    out->body = b;
    return REMAT_OK;
}

/* One interval's scan emitted into g: y -> y after n steps of h from tk. */
static remat_status scan_interval(remat_fn *g, const interval_body *ib, remat_dtype dt, remat_val y, remat_val params,
                                 double tk, double h, int64_t n, const remat_scan_options *so, remat_val *y_end)
{
    remat_val init[2] = {y, remat_scalar(g, dt, 0.0)}, consts[3], carry[2];
    int nc = 0;
    if (ib->timed)
        consts[nc++] = remat_scalar(g, dt, tk);
    consts[nc++] = remat_scalar(g, dt, h);
    if (ib->has_params)
        consts[nc++] = params;
    remat_status st = remat_scan(g, ib->body, n, ib->timed ? 2 : 1, init, 0, NULL, nc, consts, so, carry, NULL);
    *y_end = st == REMAT_OK ? carry[0] : REMAT_NONE;
    return st;
}

/* The same scan inside a checkpoint region (nothing saveable) called from f:
 * the reverse pass keeps only the region's inputs, y and params, and re-runs
 * the interval's forward just before reversing it, so the interval's store
 * does not wait in memory while the later intervals are reversed. */
static remat_status region_interval(remat_fn *f, const interval_body *ib, remat_dtype dt, const remat_shape *ys,
                                   remat_val y, remat_val params, double tk, double h, int64_t n,
                                   const remat_scan_options *so, remat_val *y_end)
{
    if (remat_fn_status(f) != REMAT_OK) /* an earlier interval ran out of memory: y is not a value */
        return rmi_error(remat_fn_status(f), "ode: %s", remat_fn_error(f));
    remat_fn *g = remat_fn_new("ode_interval");
    if (!g)
        return rmi_error(REMAT_ERR_NOMEM, "ode: out of memory");
    remat_val a[2] = {remat_arg(g, "y", dt, ys->rank, ys->dims), REMAT_NONE};
    if (ib->has_params)
        a[1] = remat_arg(g, "params", dt, ib->ps.rank, ib->ps.dims);
    remat_val out;
    remat_status st = scan_interval(g, ib, dt, a[0], a[1], tk, h, n, so, &out);
    remat_fn *region = NULL;
    if (st == REMAT_OK) {
        remat_fn_output(g, out);
        region = remat_checkpoint(g, NULL);
        if (!region)
            st = rmi_error(REMAT_ERR_NOMEM, "ode: out of memory");
    }
    if (st == REMAT_OK) {
        remat_val args[2] = {y, params};
        *y_end = remat_call1(f, region, ib->has_params ? 2 : 1, args);
        if (*y_end == REMAT_NONE)
            st = rmi_error(remat_fn_status(f), "%s", remat_fn_error(f));
    }
    remat_fn_free(region);
    remat_fn_free(g);
    return st;
}

remat_status remat_ode_integrate(remat_fn *f, const remat_mechanism *m, const remat_ode_options *opt, remat_val y0,
                                 remat_val params, remat_val *y_at_outputs)
{
    return remat_ode_integrate_stats(f, m, opt, y0, params, y_at_outputs, NULL);
}

/* ts REMAT_NONE: opt->times; else dense output at the times ts holds (ts_len) */
static remat_status integrate(remat_fn *f, const remat_mechanism *m, const remat_ode_options *opt, remat_val y0,
                              remat_val params, remat_val ts, int64_t ts_len, remat_val *y_at_outputs,
                              remat_val *stats)
{
    if (!y_at_outputs)
        return rmi_error(REMAT_ERR_NULL, "ode: y_at_outputs is NULL");
    *y_at_outputs = REMAT_NONE;
    if (stats)
        *stats = REMAT_NONE;
    if (!f || !m)
        return rmi_error(REMAT_ERR_NULL, "ode: %s is NULL", !f ? "the function" : "the mechanism");
    /* a builder that already failed (out of memory making y0, say) is
     * that failure, not a bad argument */
    if (remat_fn_status(f) != REMAT_OK)
        return rmi_error(remat_fn_status(f), "ode: %s", remat_fn_error(f));
    if (y0 < 0 || y0 >= remat_fn_num_nodes(f))
        return rmi_error(REMAT_ERR_ARG, "ode: y0 is not a value of function '%s'", remat_fn_name(f));
    int64_t total;
    remat_status st = check_grid(opt, NULL, &total);
    if (st != REMAT_OK)
        return st;
    int K = ts == REMAT_NONE ? opt->n_times : 1;
    int64_t *steps = rmi_malloc(sizeof *steps * (size_t)K);
    remat_val *rows = rmi_malloc(sizeof *rows * (size_t)K);
    interval_body ib = {0};
    if (!steps || !rows) {
        st = rmi_error(REMAT_ERR_NOMEM, "ode: out of memory for %d output times", K);
        goto done;
    }
    if (ts == REMAT_NONE)
        check_grid(opt, steps, NULL);

    remat_dtype dt = remat_val_dtype(f, y0);
    remat_shape ys = remat_val_shape(f, y0), ps = {0};
    if (params != REMAT_NONE) {
        char a[96];
        int64_t P = remat_mechanism_input_count(m);
        ps = params >= 0 && params < remat_fn_num_nodes(f) ? remat_val_shape(f, params) : (remat_shape){.rank = -1};
        /* (P,), or one parameter set per batch entry of y0 (fixed steps: an
         * adaptive integration takes y0 (S,)) */
        int batched = !opt->adaptive && ps.rank > 1 && ps.rank == ys.rank &&
                      !memcmp(ps.dims, ys.dims, sizeof ps.dims[0] * (size_t)(ys.rank - 1));
        if ((ps.rank != 1 && !batched) || ps.dims[ps.rank - 1] != P || remat_val_dtype(f, params) != dt) {
            st = rmi_error(REMAT_ERR_SHAPE, "ode: params is %s, expected %s[%lld] (y0's dtype, %s's parameters and conditions)%s",
                           ps.rank < 0 ? "not a value of the function"
                                         : remat_shape_format(remat_val_dtype(f, params), &ps, a, sizeof a),
                           remat_dtype_name(dt), (long long)P, remat_mechanism_source(m),
                           opt->adaptive ? "" : " or y0's batch axes then that");
            goto done;
        }
    }
    if (opt->method == REMAT_ODE_BDF) { /* forward only, one custom op (bdf_mech.c) */
        st = rmi_ode_bdf_integrate(f, m, opt, y0, params, ts, ts == REMAT_NONE ? opt->n_times : ts_len,
                                   y_at_outputs, stats);
        goto done;
    }
    if ((st = rmi_ode_backsolve_check(opt, f, y0, params)) != REMAT_OK)
        goto done;
    /* continuous adjoints: the steps are not differentiated (the wrapping op is) */
    remat_val y0_in = y0, params_in = params;
    if (opt->adjoint != REMAT_ODE_ADJOINT_DISCRETE) {
        y0 = remat_stop_gradient(f, y0);
        if (params != REMAT_NONE)
            params = remat_stop_gradient(f, params);
    }
    if (opt->adaptive) {
        st = ode_integrate_adaptive(f, m, opt, y0, params, ts, ts == REMAT_NONE ? opt->n_times : ts_len, y_at_outputs,
                                    stats);
        if (st == REMAT_OK && opt->adjoint == REMAT_ODE_ADJOINT_BACKSOLVE &&
            (st = rmi_ode_backsolve_wrap(f, m, opt, steps, y0_in, params_in, ts, REMAT_NONE, *y_at_outputs,
                                         y_at_outputs)) !=
                REMAT_OK)
            *y_at_outputs = REMAT_NONE;
        if (st == REMAT_OK && opt->adjoint == REMAT_ODE_ADJOINT_INTERPOLATING &&
            (st = rmi_ode_interp_wrap(f, m, opt, steps, y0_in, params_in, ts, REMAT_NONE, *y_at_outputs,
                                      y_at_outputs)) !=
                REMAT_OK)
            *y_at_outputs = REMAT_NONE;
        goto done;
    }
    /* the step checks y0 and params against the mechanism; build it first so
     * a bad input is reported before any scan is added */
    st = make_body(m, opt->method, dt, &ys, params != REMAT_NONE ? &ps : NULL, &ib);
    if (st != REMAT_OK)
        goto done;

    int last = -1; /* the last interval with steps: reversed first, never worth re-running */
    for (int k = 0; k < K; k++)
        if (steps[k] > 0)
            last = k;
    remat_val y = y0;
    double prev = opt->t0;
    remat_shape row = {.rank = ys.rank + 1};
    row.dims[0] = 1;
    memcpy(row.dims + 1, ys.dims, sizeof ys.dims[0] * (size_t)ys.rank);
    for (int k = 0; k < K; k++) {
        if (steps[k] > 0) {
            double h = (opt->times[k] - prev) / (double)steps[k];
            st = k == last || opt->keep_interval_stores
                     ? scan_interval(f, &ib, dt, y, params, prev, h, steps[k], &opt->scan, &y)
                     : region_interval(f, &ib, dt, &ys, y, params, prev, h, steps[k], &opt->scan, &y);
            if (st != REMAT_OK) {
                char why[512]; /* rmi_error writes the buffer remat_last_error reads */
                snprintf(why, sizeof why, "%s", remat_last_error());
                st = rmi_error(st, "ode: interval %d (%.17g to %.17g, %lld steps): %s", k, prev, opt->times[k],
                               (long long)steps[k], why);
                goto done;
            }
        }
        rows[k] = remat_reshape(f, y, row.rank, row.dims);
        prev = opt->times[k];
    }
    remat_val out = K == 1 ? rows[0] : remat_concatenate(f, K, rows, 0);
    if (remat_fn_status(f) != REMAT_OK) {
        st = rmi_error(remat_fn_status(f), "ode: %s", remat_fn_error(f));
        goto done;
    }
    if (opt->adjoint == REMAT_ODE_ADJOINT_BACKSOLVE &&
        (st = rmi_ode_backsolve_wrap(f, m, opt, steps, y0_in, params_in, REMAT_NONE, REMAT_NONE, out, &out)) !=
            REMAT_OK)
        goto done;
    if (opt->adjoint == REMAT_ODE_ADJOINT_INTERPOLATING &&
        (st = rmi_ode_interp_wrap(f, m, opt, steps, y0_in, params_in, REMAT_NONE, REMAT_NONE, out, &out)) != REMAT_OK)
        goto done;
    *y_at_outputs = out;
    if (stats) {
        double sv[REMAT_ODE_STATS] = {[REMAT_ODE_STAT_ACCEPTED] = (double)total,
                                      [REMAT_ODE_STAT_T] = opt->times[K - 1]};
        remat_val c = remat_const_data(f, REMAT_F64, 1, ((int64_t[]){REMAT_ODE_STATS}), sv);
        *stats = dt == REMAT_F64 ? c : remat_convert(f, c, dt);
    }
done:
    remat_fn_free(ib.body);
    rmi_free(steps);
    rmi_free(rows);
    return st;
}

remat_status remat_ode_integrate_stats(remat_fn *f, const remat_mechanism *m, const remat_ode_options *opt,
                                       remat_val y0, remat_val params, remat_val *y_at_outputs, remat_val *stats)
{
    return integrate(f, m, opt, y0, params, REMAT_NONE, 0, y_at_outputs, stats);
}

remat_status remat_ode_integrate_times(remat_fn *f, const remat_mechanism *m, const remat_ode_options *opt,
                                       remat_val y0, remat_val params, remat_val times, remat_val *y_at_outputs,
                                       remat_val *stats)
{
    if (!y_at_outputs)
        return rmi_error(REMAT_ERR_NULL, "ode: y_at_outputs is NULL");
    *y_at_outputs = REMAT_NONE;
    if (!f || !m || !opt)
        return rmi_error(REMAT_ERR_NULL, "ode: %s is NULL", !f ? "the function" : !m ? "the mechanism" : "the options");
    if (!opt->adaptive && opt->adjoint != REMAT_ODE_ADJOINT_DISCRETE)
        return rmi_error(REMAT_ERR_ARG, "ode: output times as a value with fixed steps take the discrete adjoint");
    /* a builder that already failed (out of memory making times, say) is
     * that failure, not a bad argument */
    if (remat_fn_status(f) != REMAT_OK)
        return rmi_error(remat_fn_status(f), "ode: %s", remat_fn_error(f));
    remat_shape ts = times >= 0 && times < remat_fn_num_nodes(f) ? remat_val_shape(f, times) : (remat_shape){.rank = -1};
    remat_dtype dt = y0 >= 0 && y0 < remat_fn_num_nodes(f) ? remat_val_dtype(f, y0) : REMAT_F64;
    if (ts.rank != 1 || ts.dims[0] < 1 || remat_val_dtype(f, times) != dt) {
        char a[96];
        return rmi_error(REMAT_ERR_SHAPE, "ode: times is %s, expected %s[K] with K >= 1 (y0's dtype)",
                         ts.rank < 0 ? "not a value of the function"
                                     : remat_shape_format(remat_val_dtype(f, times), &ts, a, sizeof a),
                         remat_dtype_name(dt));
    }
    if (!opt->adaptive && opt->method == REMAT_ODE_BDF)
        return rmi_error(REMAT_ERR_ARG, "ode: bdf chooses its own steps: it is adaptive only (give rtol and atol, "
                                        "not steps or dt)");
    if (!opt->adaptive && stats)
        *stats = REMAT_NONE;
    if (!opt->adaptive) /* one scan of opt->steps steps of opt->dt, Hermite rows (fixed_dense.c) */
        return ode_integrate_fixed_dense(f, m, opt, y0, params, times, ts.dims[0], y_at_outputs);
    /* check_grid sees one output time, t0: the times are data */
    remat_ode_options o = *opt;
    o.n_times = 1, o.times = &o.t0, o.dense = true;
    return integrate(f, m, &o, y0, params, times, ts.dims[0], y_at_outputs, stats);
}

/*
 * adaptive.c — an adaptive trajectory through given output times: one loop
 * of attempts per interval [t_{k-1}, t_k], ending exactly on t_k.
 *
 * The loop's carries (ode_impl.h) pass from one interval to the next, the
 * proposed step included, so the step size carries over as in diffrax with
 * step_ts = the output times; the output rows are the y carries at the ends
 * of the intervals, stacked. Every interval but the last is a checkpoint
 * region keeping only its input carries, as the fixed-step intervals are
 * (integrate.c): one interval's loop store is live at a time in the reverse
 * pass. The attempt counts run over all intervals, so max_steps bounds the
 * whole integration, as diffrax's does.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "models/ode/ode_impl.h"

static remat_status check_ctl(const remat_ode_options *opt, const ode_tableau *tb, ode_ctl *c)
{
    if (!remat_ode_method_adaptive(opt->method))
        return rmi_error(REMAT_ERR_ARG, "ode: method %s has no error estimate: adaptive stepping needs tsit5, dopri5, rodas5 or bdf",
                         tb->name);
    if (!(opt->rtol > 0 && isfinite(opt->rtol)))
        return rmi_error(REMAT_ERR_VALUE, "ode: rtol = %g must be a positive finite tolerance", opt->rtol);
    if (!(opt->atol >= 0 && isfinite(opt->atol)))
        return rmi_error(REMAT_ERR_VALUE, "ode: atol = %g must be a finite tolerance >= 0", opt->atol);
    if (opt->max_steps < 0 || opt->max_steps > ((int64_t)1 << 40))
        return rmi_error(REMAT_ERR_VALUE, "ode: max_steps = %lld must be in 1..2^40 (0: 4096)",
                         (long long)opt->max_steps);
    if (!(opt->dt0 >= 0 && isfinite(opt->dt0)))
        return rmi_error(REMAT_ERR_VALUE, "ode: dt0 = %g must be a positive finite first step (or 0: chosen)",
                         opt->dt0);
    remat_ode_controller k = opt->controller ? *opt->controller : (remat_ode_controller){0};
    double icoeff = k.icoeff != 0 ? k.icoeff : 1.0;
    double safety = k.safety != 0 ? k.safety : 0.9;
    double fmin = k.factormin != 0 ? k.factormin : 0.2, fmax = k.factormax != 0 ? k.factormax : 10.0;
    if (!(isfinite(k.pcoeff) && isfinite(icoeff) && isfinite(k.dcoeff)))
        return rmi_error(REMAT_ERR_VALUE, "ode: controller coefficients must be finite (pcoeff %g, icoeff %g, dcoeff %g)",
                         k.pcoeff, icoeff, k.dcoeff);
    if (!(safety > 0 && safety <= 1))
        return rmi_error(REMAT_ERR_VALUE, "ode: controller safety = %g must be in (0, 1]", safety);
    if (!(fmin > 0 && fmin <= 1 && fmax >= 1 && isfinite(fmax)))
        return rmi_error(REMAT_ERR_VALUE, "ode: controller factormin = %g, factormax = %g: need 0 < factormin <= 1 <= factormax",
                         fmin, fmax);
    if (opt->n_jumps < 0 || (opt->n_jumps > 0 && !opt->jump_ts))
        return rmi_error(REMAT_ERR_VALUE, "ode: n_jumps = %d needs jump_ts with that many times", opt->n_jumps);
    for (int i = 0; i < opt->n_jumps; i++)
        if (!isfinite(opt->jump_ts[i]))
            return rmi_error(REMAT_ERR_VALUE, "ode: jump_ts[%d] = %g is not finite", i, opt->jump_ts[i]);
    double order = tb->order;
    *c = (ode_ctl){
        .n_jumps = opt->n_jumps, .jump_ts = opt->jump_ts,
        .tb = tb, .rtol = opt->rtol, .atol = opt->atol, .error_order = order,
        .c1 = (icoeff + k.pcoeff + k.dcoeff) / order, .c2 = -(k.pcoeff + 2 * k.dcoeff) / order,
        .c3 = k.dcoeff / order, .safety = safety, .factormin = fmin, .factormax = fmax,
        .max_steps = opt->max_steps ? opt->max_steps : ODE_DEFAULT_MAX_STEPS,
    };
    return REMAT_OK;
}

remat_status ode_ctl_of(const remat_ode_options *opt, ode_ctl *c)
{
    return check_ctl(opt, rmi_ode_tableau(opt->method), c);
}

/* tk less 100 ulps in dtype dt: a proposal past it lands on tk */
double ode_floor_of(double tk, remat_dtype dt)
{
    for (int i = 0; i < 100; i++)
        tk = dt == REMAT_F32 ? (double)nextafterf((float)tk, -INFINITY) : nextafter(tk, -INFINITY);
    return tk;
}

typedef struct {
    const remat_fn *cond, *body;
    const ode_ctl *c;
    int has_params;
    const remat_scan_options *so;
} loop_ctx;

static remat_status run_interval(remat_fn *f, const loop_ctx *lc, remat_dtype dt, const remat_val *in,
                                 remat_val params, double tk, remat_val *out)
{
    remat_val consts[3] = {remat_scalar(f, dt, tk), remat_scalar(f, dt, ode_floor_of(tk, dt)), params};
    return ode_loop(f, lc->cond, lc->body, ODE_N_CARRY, ODE_N_DIFF, in, lc->has_params ? 3 : 2, consts,
                    lc->c->max_steps, lc->so, out);
}

/* The interval as a checkpoint region of its carries and params */
static remat_status region_interval(remat_fn *f, const loop_ctx *lc, remat_dtype dt, const remat_val *in,
                                    remat_val params, double tk, remat_val *out)
{
    if (remat_fn_status(f) != REMAT_OK) /* an earlier interval ran out of memory: its carries are not values */
        return rmi_error(remat_fn_status(f), "ode: %s", remat_fn_error(f));
    remat_fn *g = remat_fn_new("ode_adaptive_interval");
    if (!g)
        return rmi_error(REMAT_ERR_NOMEM, "ode: out of memory");
    remat_val a[ODE_N_CARRY + 1], o[ODE_N_CARRY];
    for (int i = 0; i < ODE_N_CARRY; i++) {
        remat_shape s = remat_val_shape(f, in[i]);
        a[i] = remat_arg(g, "carry", dt, s.rank, s.dims);
    }
    int n = ODE_N_CARRY;
    if (lc->has_params) {
        remat_shape s = remat_val_shape(f, params);
        a[n++] = remat_arg(g, "params", dt, s.rank, s.dims);
    }
    remat_status st = run_interval(g, lc, dt, a, lc->has_params ? a[ODE_N_CARRY] : REMAT_NONE, tk, o);
    remat_fn *region = NULL;
    if (st == REMAT_OK) {
        for (int i = 0; i < ODE_N_CARRY; i++)
            remat_fn_output(g, o[i]);
        region = remat_checkpoint(g, NULL);
        if (!region)
            st = rmi_error(REMAT_ERR_NOMEM, "ode: out of memory");
    }
    if (st == REMAT_OK) {
        remat_val args[ODE_N_CARRY + 1];
        memcpy(args, in, sizeof args[0] * ODE_N_CARRY);
        args[ODE_N_CARRY] = params;
        st = remat_call(f, region, n, args, out);
        if (st == REMAT_OK && remat_fn_status(f) != REMAT_OK)
            st = rmi_error(remat_fn_status(f), "%s", remat_fn_error(f));
    }
    remat_fn_free(region);
    remat_fn_free(g);
    return st;
}

/* code 2 stiff, 1 stopped short of t_K (max_steps), 0 done; rows NaN unless 0 */
static remat_val finish(remat_fn *f, remat_dtype dt, const remat_val *carry, remat_val t_last, remat_val *ys,
                        remat_val *stats)
{
    remat_val zero = remat_scalar(f, dt, 0.0);
    remat_val stiff = remat_ge(f, carry[ODE_STIFF], remat_scalar(f, dt, (double)ODE_STIFF_STEPS));
    remat_val short_ = remat_lt(f, carry[ODE_T], t_last);
    remat_val code = remat_select(f, stiff, remat_scalar(f, dt, 2.0), remat_select(f, short_, remat_scalar(f, dt, 1.0), zero));
    *ys = remat_select(f, remat_eq(f, code, zero), *ys, remat_scalar(f, dt, NAN));
    int64_t one = 1;
    remat_val parts[REMAT_ODE_STATS] = {
        [REMAT_ODE_STAT_ACCEPTED] = remat_reshape(f, carry[ODE_NACC], 1, &one),
        [REMAT_ODE_STAT_REJECTED] = remat_reshape(f, carry[ODE_NREJ], 1, &one),
        [REMAT_ODE_STAT_T] = remat_reshape(f, carry[ODE_T], 1, &one),
        [REMAT_ODE_STAT_CODE] = remat_reshape(f, code, 1, &one),
    };
    *stats = remat_stop_gradient(f, remat_concatenate(f, REMAT_ODE_STATS, parts, 0));
    return *ys;
}

/* Dense output: one loop over [t0, t_K] whose carries are y, fy, the rows
 * ((S, K), species-major, y0 where t_k = t0; transposed at the end), then
 * the control state; the times are a const of the loop, opt->times or the
 * value ts (K,), and t_K = ts[K-1] is read from them in the graph, so one
 * graph serves any times of that length. The step lands on t_K only (a proposal within 100 ulps of it
 * lands on it); the rows come from each step's continuous extension
 * (dense.c). carry: in the initial carries, out the final ones. */
static remat_status run_dense(remat_fn *f, const remat_fn *body, const remat_fn *cond, const ode_ctl *c,
                              remat_dtype dt, int64_t S, int64_t K, const remat_ode_options *opt, remat_val ts,
                              remat_val *carry, remat_val params, remat_val *rows, remat_val *t_last)
{
    int64_t SK[2] = {S, K}, S_one[2] = {S, 1};
    if (ts == REMAT_NONE) {
        ts = remat_const_data(f, REMAT_F64, 1, &K, opt->times);
        if (dt != REMAT_F64)
            ts = remat_convert(f, ts, dt);
    }
    remat_val y0rows = remat_broadcast_to(f, remat_reshape(f, carry[ODE_Y], 2, S_one), 2, SK); /* (S, K) */
    remat_val t_end = remat_stop_gradient(f, remat_index(f, ts, K - 1));
    double ulps = 100.0 * (dt == REMAT_F32 ? 0x1p-23 : 0x1p-52);
    remat_val mag = remat_max(f, t_end, remat_neg(f, t_end));
    remat_val t_floor = remat_sub(f, t_end, remat_mul_scalar(f, mag, ulps));
    remat_val in[ODE_N_CARRY + 1], outc[ODE_N_CARRY + 1];
    in[0] = carry[ODE_Y], in[1] = carry[ODE_FY], in[2] = y0rows;
    memcpy(in + 3, carry + ODE_T, sizeof in[0] * (ODE_N_CARRY - ODE_T));
    remat_val consts[4] = {t_end, t_floor, remat_stop_gradient(f, ts), params};
    remat_status st = ode_loop(f, cond, body, ODE_N_CARRY + 1, ODE_N_DIFF + 1, in, params != REMAT_NONE ? 4 : 3,
                               consts, c->max_steps, &opt->scan, outc);
    if (st != REMAT_OK)
        return st;
    carry[ODE_Y] = outc[0], carry[ODE_FY] = outc[1], *rows = remat_transpose(f, outc[2], (int[]){1, 0});
    memcpy(carry + ODE_T, outc + 3, sizeof outc[0] * (ODE_N_CARRY - ODE_T));
    *t_last = t_end;
    return REMAT_OK;
}

static remat_status integrate_adaptive(remat_fn *f, const ode_rhs *r, const remat_ode_options *opt, remat_val y0,
                                       remat_val params, remat_val ts, int64_t K, remat_val *y_at_outputs,
                                       remat_val *stats);

remat_status ode_integrate_adaptive(remat_fn *f, const remat_mechanism *m, const remat_ode_options *opt,
                                    remat_val y0, remat_val params, remat_val ts, int64_t K, remat_val *y_at_outputs,
                                    remat_val *stats)
{
    remat_dtype dt = remat_val_dtype(f, y0);
    remat_shape ys = remat_val_shape(f, y0);
    int64_t S = remat_mechanism_species_count(m);
    if (ys.rank < 1 || ys.dims[ys.rank - 1] != S) {
        char a[96];
        return rmi_error(REMAT_ERR_SHAPE, "ode: y0 is %s, expected %s[%lld] or a batch %s[..., %lld]",
                         remat_shape_format(dt, &ys, a, sizeof a), remat_dtype_name(dt), (long long)S,
                         remat_dtype_name(dt), (long long)S);
    }
    if (ys.rank > 1) /* every member its own loops (adaptive_batch.c) */
        return ode_integrate_adaptive_batch(f, m, opt, y0, params, ts, K, y_at_outputs, stats);
    ode_rhs r = ode_rhs_of(m);
    return integrate_adaptive(f, &r, opt, y0, params, ts, K, y_at_outputs, stats);
}

remat_status ode_integrate_adaptive_rhs(remat_fn *f, const ode_rhs *r, const remat_ode_options *opt, remat_val y0,
                                        remat_val params, remat_val *y_at_outputs, remat_val *stats)
{
    return integrate_adaptive(f, r, opt, y0, params, REMAT_NONE, opt->n_times, y_at_outputs, stats);
}

remat_status ode_integrate_adaptive_span(remat_fn *f, const ode_rhs *r, const remat_ode_options *opt, remat_val y0,
                                         remat_val params, remat_val t0, remat_val t1, remat_val *y1)
{
    const ode_tableau *tb = rmi_ode_tableau(opt->method);
    ode_ctl c;
    remat_status st = check_ctl(opt, tb, &c);
    if (st != REMAT_OK)
        return st;
    remat_dtype dt = remat_val_dtype(f, y0);
    remat_fn *body = NULL, *cond = NULL;
    int has_params = params != REMAT_NONE;
    if ((st = ode_attempt_body(r, &c, dt, r->S, has_params, 0, &body)) != REMAT_OK ||
        (st = ode_attempt_cond(&c, dt, r->S, r->P, has_params, 0, &cond)) != REMAT_OK)
        goto done;
    remat_val carry[ODE_N_CARRY], out[ODE_N_CARRY], dt0;
    carry[ODE_Y] = y0;
    if ((st = ode_rhs_eval(f, r, r->timed ? t0 : REMAT_NONE, y0, params, &carry[ODE_FY])) != REMAT_OK)
        goto done;
    if (opt->dt0 > 0)
        dt0 = remat_scalar(f, dt, opt->dt0);
    else if ((st = ode_initial_step(f, r, &c, r->timed ? t0 : REMAT_NONE, y0, carry[ODE_FY], params, &dt0)) !=
             REMAT_OK)
        goto done;
    carry[ODE_T] = t0;
    carry[ODE_TPROP] = remat_add(f, t0, dt0);
    carry[ODE_R1] = carry[ODE_R2] = remat_scalar(f, dt, 1.0);
    for (int i = ODE_NACC; i < ODE_N_CARRY; i++)
        carry[i] = remat_scalar(f, dt, 0.0);
    /* t1 less 100 ulps of |t1|, as the dense loop's floor (run_dense) */
    double ulps = 100.0 * (dt == REMAT_F32 ? 0x1p-23 : 0x1p-52);
    remat_val t_floor = remat_sub(f, t1, remat_mul_scalar(f, remat_max(f, t1, remat_neg(f, t1)), ulps));
    remat_val consts[3] = {t1, t_floor, params};
    st = ode_loop(f, cond, body, ODE_N_CARRY, ODE_N_DIFF, carry, has_params ? 3 : 2, consts, c.max_steps, &opt->scan,
                  out);
    if (st == REMAT_OK) { /* short of t1 (max_steps, stiff): NaN */
        remat_val ok = remat_mul(f, remat_ge(f, out[ODE_T], t1),
                                 remat_lt(f, out[ODE_STIFF], remat_scalar(f, dt, (double)ODE_STIFF_STEPS)));
        *y1 = remat_select(f, ok, out[ODE_Y], remat_scalar(f, dt, NAN));
        if (remat_fn_status(f) != REMAT_OK)
            st = rmi_error(remat_fn_status(f), "ode: %s", remat_fn_error(f));
    }
done:
    remat_fn_free(body);
    remat_fn_free(cond);
    return st;
}

static remat_status integrate_adaptive(remat_fn *f, const ode_rhs *r, const remat_ode_options *opt, remat_val y0,
                                       remat_val params, remat_val ts, int64_t K, remat_val *y_at_outputs,
                                       remat_val *stats)
{
    const ode_tableau *tb = rmi_ode_tableau(opt->method);
    ode_ctl c;
    remat_status st = check_ctl(opt, tb, &c);
    if (st != REMAT_OK)
        return st;
    remat_dtype dt = remat_val_dtype(f, y0);
    int64_t S = r->S, P = r->P;
    int has_params = params != REMAT_NONE;
    remat_fn *body = NULL, *cond = NULL;
    int64_t KD = opt->dense || ts != REMAT_NONE ? K : 0; /* dense output: the rows are a carry */
    remat_val *rows = rmi_malloc(sizeof *rows * (size_t)(KD ? 1 : K)), t_last = REMAT_NONE;
    if (!rows) {
        st = rmi_error(REMAT_ERR_NOMEM, "ode: out of memory for %lld output times", (long long)K);
        goto done;
    }
    if ((st = ode_attempt_body(r, &c, dt, S, has_params, KD, &body)) != REMAT_OK ||
        (st = ode_attempt_cond(&c, dt, S, P, has_params, KD, &cond)) != REMAT_OK)
        goto done;

    remat_val t0 = remat_scalar(f, dt, opt->t0), carry[ODE_N_CARRY], dt0, out_rows = REMAT_NONE;
    int timed = r->timed;
    carry[ODE_Y] = y0;
    if ((st = ode_rhs_eval(f, r, timed ? t0 : REMAT_NONE, y0, params, &carry[ODE_FY])) != REMAT_OK)
        goto done;
    if (opt->dt0 > 0)
        dt0 = remat_scalar(f, dt, opt->dt0);
    else if ((st = ode_initial_step(f, r, &c, timed ? t0 : REMAT_NONE, y0, carry[ODE_FY], params, &dt0)) != REMAT_OK)
        goto done;
    carry[ODE_T] = t0;
    carry[ODE_TPROP] = remat_add(f, t0, dt0);
    carry[ODE_R1] = carry[ODE_R2] = remat_scalar(f, dt, 1.0);
    for (int i = ODE_NACC; i < ODE_N_CARRY; i++)
        carry[i] = remat_scalar(f, dt, 0.0);

    if (KD) {
        st = run_dense(f, body, cond, &c, dt, S, K, opt, ts, carry, params, &out_rows, &t_last);
        if (st != REMAT_OK) {
            char why[512];
            snprintf(why, sizeof why, "%s", remat_last_error());
            st = rmi_error(st, "ode: from %.17g (adaptive %s, dense output at %lld times): %s", opt->t0, tb->name,
                           (long long)K, why);
            goto done;
        }
        goto finished;
    }
    int last = -1;
    for (int k = 0; k < K; k++)
        if (opt->times[k] > (k ? opt->times[k - 1] : opt->t0))
            last = k;
    loop_ctx lc = {.cond = cond, .body = body, .c = &c, .has_params = has_params, .so = &opt->scan};
    int64_t row[2] = {1, S};
    double prev = opt->t0;
    for (int k = 0; k < K; k++) {
        double tk = opt->times[k];
        if (tk > prev) {
            remat_val next[ODE_N_CARRY];
            st = k == last || opt->keep_interval_stores ? run_interval(f, &lc, dt, carry, params, tk, next)
                                                         : region_interval(f, &lc, dt, carry, params, tk, next);
            if (st != REMAT_OK) {
                char why[512];
                snprintf(why, sizeof why, "%s", remat_last_error());
                st = rmi_error(st, "ode: interval %d (%.17g to %.17g, adaptive %s): %s", k, prev, tk, tb->name, why);
                goto done;
            }
            memcpy(carry, next, sizeof carry);
        }
        rows[k] = remat_reshape(f, carry[ODE_Y], 2, row);
        prev = tk;
    }
    out_rows = K == 1 ? rows[0] : remat_concatenate(f, (int)K, rows, 0);
    t_last = remat_scalar(f, dt, opt->times[K - 1]);
finished:;
    remat_val out = out_rows, st_val;
    finish(f, dt, carry, t_last, &out, &st_val);
    if (remat_fn_status(f) != REMAT_OK) {
        st = rmi_error(remat_fn_status(f), "ode: %s", remat_fn_error(f));
        goto done;
    }
    *y_at_outputs = out;
    if (stats)
        *stats = st_val;
done:
    remat_fn_free(body);
    remat_fn_free(cond);
    rmi_free(rows);
    return st;
}

remat_status remat_ode_stats_check(const remat_ode_options *opt, const double *stats)
{
    if (!opt || !stats)
        return rmi_error(REMAT_ERR_NULL, "ode stats: %s is NULL", !opt ? "the options" : "stats");
    double code = stats[REMAT_ODE_STAT_CODE], t = stats[REMAT_ODE_STAT_T];
    long long acc = (long long)stats[REMAT_ODE_STAT_ACCEPTED], rej = (long long)stats[REMAT_ODE_STAT_REJECTED];
    const char *name = remat_ode_method_name(opt->method);
    if (code == 0)
        return REMAT_OK;
    if (code == 2)
        return rmi_error(REMAT_ERR_VALUE,
                         "ode: the explicit method %s's step size collapsed at t = %.6g (%d accepted steps in a row "
                         "on its stability bound, %lld accepted, %lld rejected): the problem is stiff; use the stiff "
                         "method rodas5",
                         name, t, ODE_STIFF_STEPS, acc, rej);
    if (code == REMAT_ODE_BDF_COLLAPSED)
        return rmi_error(REMAT_ERR_VALUE,
                         "ode: %s's step size collapsed at t = %.6g (below 10 ulps of t after error-test or Newton "
                         "failures; %lld accepted, %lld rejected): the solution blows up or the right-hand side is "
                         "not finite there",
                         name, t, acc, rej);
    if (code == 1) {
        char end[64] = "";
        if (opt->times && opt->n_times > 0)
            snprintf(end, sizeof end, " (the last output time is %.6g)", opt->times[opt->n_times - 1]);
        return rmi_error(REMAT_ERR_VALUE,
                         "ode: %s used max_steps = %lld attempts (%lld accepted, %lld rejected) and stopped at "
                         "t = %.6g%s: raise max_steps or loosen rtol/atol",
                         name, (long long)(opt->max_steps ? opt->max_steps : ODE_DEFAULT_MAX_STEPS), acc, rej, t, end);
    }
    return rmi_error(REMAT_ERR_VALUE, "ode: the integration failed (stats code %g at t = %g)", code, t);
}

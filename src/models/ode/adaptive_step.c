/*
 * adaptive_step.c — one attempt of an embedded Runge–Kutta pair with
 * diffrax's PID step-size controller, and Hairer's first step, as graph ops.
 *
 * The attempt is the body of a while loop (remat_while's contract):
 *   body(y, fy, t, tprop, r1, r2, nacc, nrej, stiff, calm, t_end, t_floor[, params])
 *     -> (y', fy', t', tprop', r1', r2', nacc', nrej', stiff', calm', accepted)
 * y and fy = f(t, y) (FSAL) are differentiated; the rest is control state
 * computed from stop_gradient'ed values, so step sizes and accept decisions
 * are constants in the reverse pass. On a rejected attempt the loop keeps y
 * and fy, and the body's control outputs shrink the step.
 *
 * Formulas (diffrax PIDController, _integrate.py; Hairer–Nørsett–Wanner I,
 * II.4 and II.10): see remat/ode.h. The step from t ends at t_end when the
 * proposal tprop is past t_floor (t_end less 100 ulps), else at tprop.
 */
#include <math.h>
#include <stdio.h>

#include "core/assert.h"
#include "core/error.h"
#include "models/ode/ode_impl.h"

/* sqrt(mean(v^2)) over all elements: optimistix's rms_norm */
static remat_val rms(remat_fn *f, remat_val v, int64_t n)
{
    return remat_sqrt(f, remat_mul_scalar(f, remat_sum_all(f, remat_square(f, v)), 1.0 / (double)n));
}

static remat_val vabs(remat_fn *f, remat_val v)
{
    return remat_max(f, v, remat_neg(f, v));
}

static remat_val cst(remat_fn *f, remat_dtype dt, double v)
{
    return remat_scalar(f, dt, v);
}

ode_rhs ode_rhs_of(const remat_mechanism *m)
{
    return (ode_rhs){.m = m, .S = remat_mechanism_species_count(m), .P = remat_mechanism_input_count(m),
                     .timed = remat_kinetics_uses_indep(m)};
}

remat_status ode_rhs_eval(remat_fn *f, const ode_rhs *r, remat_val t, remat_val y, remat_val p, remat_val *dydt)
{
    return r->eval ? r->eval(f, r, t, y, p, dydt) : remat_kinetics_rhs(f, r->m, t, y, p, dydt);
}

remat_status ode_initial_step(remat_fn *f, const ode_rhs *r, const ode_ctl *c, remat_val t0, remat_val y0,
                              remat_val f0, remat_val params, remat_val *dt0)
{
    remat_dtype dt = remat_val_dtype(f, y0);
    int64_t S = remat_val_shape(f, y0).dims[0];
    remat_val y = remat_stop_gradient(f, y0), fy = remat_stop_gradient(f, f0);
    remat_val p = params == REMAT_NONE ? REMAT_NONE : remat_stop_gradient(f, params);
    remat_val scale = remat_add_scalar(f, remat_mul_scalar(f, vabs(f, y), c->rtol), c->atol);
    remat_val d0 = rms(f, remat_div(f, y, scale), S), d1 = rms(f, remat_div(f, fy, scale), S);
    remat_val tiny = remat_max(f, remat_lt(f, d0, cst(f, dt, 1e-5)), remat_lt(f, d1, cst(f, dt, 1e-5)));
    remat_val d1s = remat_select(f, tiny, cst(f, dt, 1.0), d1);
    remat_val h0 = remat_select(f, tiny, cst(f, dt, 1e-6), remat_mul_scalar(f, remat_div(f, d0, d1s), 0.01));
    remat_val y1 = remat_add(f, y, remat_mul(f, h0, fy));
    remat_val t1 = t0 == REMAT_NONE ? REMAT_NONE : remat_add(f, t0, h0);
    remat_val f1;
    remat_status st = ode_rhs_eval(f, r, t1, y1, p, &f1);
    if (st != REMAT_OK)
        return st;
    remat_val d2 = remat_div(f, rms(f, remat_div(f, remat_sub(f, f1, fy), scale), S), h0);
    remat_val maxd = remat_max(f, d1, d2);
    remat_val flat = remat_le(f, maxd, cst(f, dt, 1e-15));
    /* (0.01/maxd)^(1/order) only where maxd is not ~0 (the other branch is
     * taken there, and the select keeps an inf out of the min below) */
    remat_val safe = remat_select(f, flat, cst(f, dt, 1.0), maxd);
    remat_val h1 = remat_select(f, flat, remat_max(f, cst(f, dt, 1e-6), remat_mul_scalar(f, h0, 1e-3)),
                                remat_pow(f, remat_div(f, cst(f, dt, 0.01), safe), 1.0 / c->error_order));
    *dt0 = remat_min(f, remat_mul_scalar(f, h0, 100.0), h1);
    return REMAT_OK;
}

/* The controller (diffrax PIDController.adapt_step_size) from the attempt's
 * stop_gradient'ed y, y' and error estimate: writes accepted, the next step
 * size, and the new controller memory r1', r2'. */
static void controller(remat_fn *f, const ode_ctl *c, remat_dtype dt, int64_t S, remat_val y, remat_val y1,
                       remat_val err, remat_val h, remat_val r1, remat_val r2, remat_val *accepted, remat_val *h_next,
                       remat_val *r1_next, remat_val *r2_next)
{
    remat_val inf = cst(f, dt, INFINITY), one = cst(f, dt, 1.0);
    err = remat_select(f, remat_ne(f, err, err), inf, err); /* NaN error: reject */
    remat_val y1_nan = remat_max_all(f, remat_ne(f, y1, y1));
    remat_val y1c = remat_select(f, y1_nan, y, y1);
    remat_val scale =
        remat_add_scalar(f, remat_mul_scalar(f, remat_max(f, vabs(f, y), vabs(f, y1c)), c->rtol), c->atol);
    remat_val q = rms(f, remat_div(f, err, scale), S);
    remat_val acc = remat_lt(f, q, one);
    remat_val inv = remat_div(f, one, q);
    remat_val factor = remat_mul_scalar(f, c->c1 != 0 ? remat_pow(f, inv, c->c1) : one, c->safety);
    if (c->c2 != 0)
        factor = remat_mul(f, factor, remat_pow(f, r1, c->c2));
    if (c->c3 != 0)
        factor = remat_mul(f, factor, remat_pow(f, r2, c->c3));
    remat_val lo = remat_select(f, acc, one, cst(f, dt, c->factormin));
    remat_val hi = remat_select(f, acc, cst(f, dt, c->factormax), cst(f, dt, c->safety));
    factor = remat_min(f, remat_max(f, factor, lo), hi);
    remat_val degenerate = remat_max(f, remat_eq(f, inv, cst(f, dt, 0.0)), remat_eq(f, inv, inf));
    remat_val inv_mem = remat_select(f, degenerate, one, inv);
    *accepted = acc;
    *h_next = remat_mul(f, h, factor);
    *r1_next = remat_select(f, acc, inv_mem, r1);
    *r2_next = remat_select(f, acc, r1, r2);
}

/* Hairer's stiffness test on an accepted step: h|lambda| ~ |k7 - k6| / |y' - y6|
 * (the last two stages both sit at t + h). Past the method's stability bound
 * the step counts as stiff; six calm steps in a row clear the count. */
static void stiffness(remat_fn *f, const ode_ctl *c, remat_dtype dt, remat_val k7, remat_val k6, remat_val y1,
                      remat_val y6, remat_val acc, remat_val stiff, remat_val calm, remat_val *stiff_next,
                      remat_val *calm_next)
{
    remat_val num = remat_sum_all(f, remat_square(f, remat_sub(f, k7, k6)));
    remat_val den = remat_sum_all(f, remat_square(f, remat_sub(f, y1, y6)));
    remat_val zero = cst(f, dt, 0.0), one = cst(f, dt, 1.0);
    remat_val pos = remat_gt(f, den, zero);
    remat_val hl2 = remat_div(f, num, remat_select(f, pos, den, one));
    remat_val is_stiff = remat_mul(f, acc, remat_mul(f, pos, remat_gt(f, hl2, cst(f, dt, c->tb->stab * c->tb->stab))));
    remat_val is_calm = remat_mul(f, acc, remat_sub(f, one, is_stiff));
    remat_val calm1 = remat_add(f, calm, is_calm);
    remat_val cleared = remat_mul(f, is_calm, remat_ge(f, calm1, cst(f, dt, 6.0)));
    *stiff_next = remat_select(f, is_stiff, remat_add(f, stiff, one), remat_select(f, cleared, zero, stiff));
    *calm_next = remat_select(f, is_stiff, zero, remat_select(f, cleared, zero, calm1));
}

/* An explicit pair's attempt: stages, y', the FSAL stage f7 = f(t + h, y'),
 * the error, the controller and Hairer's stiffness test. */
static remat_status explicit_attempt(remat_fn *f, const ode_rhs *r, const ode_ctl *c, remat_dtype dt,
                                     int64_t S, int timed, remat_val t, remat_val h, const remat_val *a, remat_val p,
                                     remat_val *y1, remat_val *f7, remat_val *acc, remat_val *h_next, remat_val *r1,
                                     remat_val *r2, remat_val *stiff, remat_val *calm, remat_val *k)
{
    const ode_tableau *tb = c->tb;
    remat_val y = a[ODE_Y];
    remat_val y6 = y;
    k[0] = remat_mul(f, h, a[ODE_FY]);
    remat_status st = REMAT_OK;
    for (int i = 1; i < tb->stages && st == REMAT_OK; i++) {
        y6 = remat_add(f, y, ode_combine(f, i, tb->a + i * (i - 1) / 2, k));
        remat_val ti = timed ? remat_add(f, t, remat_mul_scalar(f, h, tb->c[i])) : REMAT_NONE;
        remat_val fi;
        st = ode_rhs_eval(f, r, ti, y6, p, &fi);
        k[i] = st == REMAT_OK ? remat_mul(f, h, fi) : REMAT_NONE;
    }
    if (st == REMAT_OK) {
        *y1 = remat_add(f, y, ode_combine(f, tb->stages, tb->b, k));
        st = ode_rhs_eval(f, r, timed ? remat_add(f, t, h) : REMAT_NONE, *y1, p, f7);
    }
    if (st != REMAT_OK)
        return st;
    k[tb->stages] = remat_mul(f, h, *f7);
    remat_val err = ode_combine(f, tb->stages + 1, tb->e, k);

    /* the control part sees values, never derivatives */
    remat_val sg[ODE_MAX_STAGES + 2];
    for (int i = 0; i <= tb->stages; i++)
        sg[i] = remat_stop_gradient(f, k[i]);
    remat_val sy = remat_stop_gradient(f, y), sy1 = remat_stop_gradient(f, *y1);
    controller(f, c, dt, S, sy, sy1, remat_stop_gradient(f, err), h, a[ODE_R1], a[ODE_R2], acc, h_next, r1, r2);
    stiffness(f, c, dt, sg[tb->stages], sg[tb->stages - 1], sy1, remat_stop_gradient(f, y6), *acc, a[ODE_STIFF],
              a[ODE_CALM], stiff, calm);
    return REMAT_OK;
}

/* A Rosenbrock attempt (rosenbrock.c): y' and its embedded error estimate.
 * f(t, y) comes with J inside the step, so the FSAL carry fy is passed on
 * unread. Dense output (k non-NULL) gets the step's stages, of which the
 * method's own continuous extension is made (dense.c): no right-hand side
 * beyond the step's. No stiffness test (the method is L-stable: stiff
 * problems are what it is for). */
static remat_status rosenbrock_attempt(remat_fn *f, const ode_rhs *r, const ode_ctl *c, remat_dtype dt,
                                       int64_t S, remat_val t, remat_val h, const remat_val *a, remat_val p,
                                       remat_val *y1, remat_val *f7, remat_val *acc, remat_val *h_next, remat_val *r1,
                                       remat_val *r2, remat_val *stiff, remat_val *calm, remat_val *k)
{
    remat_val err;
    REMAT_ASSERT(!k || ode_has_extension(c->tb));
    remat_status st = rmi_ode_rosenbrock_step(f, r, c->tb, t, h, a[ODE_Y], p, y1, &err, k);
    if (st != REMAT_OK)
        return st;
    *f7 = a[ODE_FY];
    controller(f, c, dt, S, remat_stop_gradient(f, a[ODE_Y]), remat_stop_gradient(f, *y1), remat_stop_gradient(f, err),
               h, a[ODE_R1], a[ODE_R2], acc, h_next, r1, r2);
    *stiff = a[ODE_STIFF], *calm = a[ODE_CALM];
    return REMAT_OK;
}

/* A step that ends on a jump sees the right-hand side's left limit there:
 * its stage times are clamped below t_lim (just under the jump; +inf for
 * other steps), so a stage at c = 1 reads the interval it integrates.
 * t_lim rides as the last params entry (Rosenbrock's Jacobian evaluates the
 * right-hand side in a function of its own, which sees only the arguments). */
static remat_status clamp_eval(remat_fn *f, const ode_rhs *r, remat_val t, remat_val y, remat_val p, remat_val *dydt)
{
    const ode_rhs *inner = r->ctx;
    int64_t P = inner->P;
    remat_val t_lim = remat_index(f, p, P);
    remat_val pp = P ? remat_slice(f, p, (int64_t[]){0}, (int64_t[]){P}, NULL) : REMAT_NONE;
    return ode_rhs_eval(f, inner, t == REMAT_NONE ? REMAT_NONE : remat_min(f, t, t_lim), y, pp, dydt);
}

remat_status ode_attempt_body(const ode_rhs *r, const ode_ctl *c, remat_dtype dt, int64_t S, int has_params,
                              int64_t K, remat_fn **out)
{
    const ode_tableau *tb = c->tb;
    int64_t P = r->P, KS[2] = {S, K};
    char name[64];
    snprintf(name, sizeof name, "%s_attempt%s", tb->name, K ? "_dense" : "");
    remat_fn *f = remat_fn_new(name);
    if (!f)
        return rmi_error(REMAT_ERR_NOMEM, "ode: out of memory");
    remat_val a[ODE_N_CARRY + 3], buf = REMAT_NONE, ts = REMAT_NONE;
    static const char *const names[ODE_N_CARRY] = {"y", "fy", "t", "tprop", "r1", "r2", "nacc", "nrej", "stiff", "calm"};
    a[ODE_Y] = remat_arg(f, names[0], dt, 1, &S);
    a[ODE_FY] = remat_arg(f, names[1], dt, 1, &S);
    if (K)
        buf = remat_arg(f, "out", dt, 2, KS);
    for (int i = ODE_T; i < ODE_N_CARRY; i++)
        a[i] = remat_arg(f, names[i], dt, 0, NULL);
    remat_val t_end = remat_arg(f, "t_end", dt, 0, NULL), t_floor = remat_arg(f, "t_floor", dt, 0, NULL);
    if (K)
        ts = remat_arg(f, "ts", dt, 1, &K);
    remat_val p = has_params ? remat_arg(f, "params", dt, 1, &P) : REMAT_NONE;
    remat_val t = a[ODE_T];
    int timed = r->timed;

    remat_val t_next = remat_select(f, remat_gt(f, a[ODE_TPROP], t_floor), t_end, a[ODE_TPROP]);
    const ode_rhs *r_in = r;
    remat_val p_in = p;
    ode_rhs rc;
    remat_val ends_on_jump = REMAT_NONE;
    if (c->n_jumps > 0) { /* the next jump after t, if before t_end, ends the step as t_end would */
        int64_t J = c->n_jumps;
        remat_val js = remat_const_data(f, REMAT_F64, 1, &J, c->jump_ts);
        if (dt != REMAT_F64)
            js = remat_convert(f, js, dt);
        remat_val ninf = remat_broadcast_to(f, cst(f, dt, -INFINITY), 1, &J);
        remat_val later = remat_gt(f, js, remat_broadcast_to(f, t, 1, &J));
        remat_val nj = remat_neg(f, remat_max_all(f, remat_select(f, later, remat_neg(f, js), ninf))); /* inf: none */
        remat_val hit = remat_lt(f, nj, t_end);
        remat_val safe = remat_select(f, hit, nj, t_end); /* no inf below */
        double ulps = 100.0 * (dt == REMAT_F32 ? 0x1p-23 : 0x1p-52);
        remat_val j_floor = remat_sub(f, safe, remat_mul_scalar(f, remat_max(f, safe, remat_neg(f, safe)), ulps));
        remat_val lands = remat_gt(f, a[ODE_TPROP], j_floor);
        remat_val t_jump = remat_select(f, lands, safe, a[ODE_TPROP]);
        t_next = remat_select(f, hit, t_jump, t_next);
        if (timed) {
            ends_on_jump = remat_mul(f, hit, lands);
            remat_val below = remat_sub(f, safe, remat_mul_scalar(f, remat_max(f, remat_max(f, safe, remat_neg(f, safe)),
                                                                               cst(f, dt, 1.0)),
                                                              4.0 * (dt == REMAT_F32 ? 0x1p-23 : 0x1p-52)));
            int64_t one = 1;
            remat_val t_lim = remat_reshape(f, remat_select(f, ends_on_jump, below, cst(f, dt, INFINITY)), 1, &one);
            rc = (ode_rhs){.m = r->m, .eval = clamp_eval, .ctx = r, .S = r->S, .P = r->P + 1, .timed = 1};
            r = &rc;
            p = p == REMAT_NONE ? t_lim : remat_concatenate(f, 2, (remat_val[]){p, t_lim}, 0);
        }
    }
    remat_val h = remat_sub(f, t_next, t);
    remat_val y1, f7, acc, h_next, r1, r2, stiff, calm, k[ODE_MAX_STAGES + 2];
    remat_status st = tb->ros ? rosenbrock_attempt(f, r, c, dt, S, timed ? t : REMAT_NONE, h, a, p, &y1, &f7, &acc,
                                                   &h_next, &r1, &r2, &stiff, &calm, K ? k : NULL)
                              : explicit_attempt(f, r, c, dt, S, timed, t, h, a, p, &y1, &f7, &acc, &h_next, &r1,
                                                 &r2, &stiff, &calm, k);
    if (st != REMAT_OK) {
        remat_fn_free(f);
        return st;
    }
    remat_val t_new = remat_select(f, acc, t_next, t);
    /* a step that ended on a jump evaluated f there from the left (its error
     * estimate, its interpolant); the next step starts from the right (a
     * Rosenbrock step reads no carried f) */
    if (ends_on_jump != REMAT_NONE && !tb->ros) {
        remat_val f_right;
        if ((st = ode_rhs_eval(f, r_in, t_next, y1, p_in, &f_right)) != REMAT_OK) {
            remat_fn_free(f);
            return st;
        }
        f7 = remat_select(f, ends_on_jump, f_right, f7);
    }

    remat_fn_output(f, y1);
    remat_fn_output(f, f7);
    if (K) {
        remat_val rows = ode_dense_update(f, tb, dt, S, K, buf, ts, t, t_next, a[ODE_Y], y1, h, k);
        if (rows == REMAT_NONE && remat_fn_status(f) == REMAT_OK) { /* its scratch list: out of memory */
            remat_fn_free(f);
            return rmi_error(REMAT_ERR_NOMEM, "ode: building the %s attempt: out of memory", tb->name);
        }
        remat_fn_output(f, rows);
    }
    remat_fn_output(f, t_new);
    remat_fn_output(f, remat_add(f, t_new, h_next));
    remat_fn_output(f, r1);
    remat_fn_output(f, r2);
    remat_fn_output(f, remat_add(f, a[ODE_NACC], acc));
    remat_fn_output(f, remat_add(f, a[ODE_NREJ], remat_sub(f, cst(f, dt, 1.0), acc)));
    remat_fn_output(f, stiff);
    remat_fn_output(f, calm);
    remat_fn_output(f, acc);
    if (remat_fn_status(f) != REMAT_OK) {
        st = rmi_error(remat_fn_status(f), "ode: building the %s attempt: %s", tb->name, remat_fn_error(f));
        remat_fn_free(f);
        return st;
    }
    *out = f;
    return REMAT_OK;
}

remat_status ode_attempt_cond(const ode_ctl *c, remat_dtype dt, int64_t S, int64_t P, int has_params, int64_t K,
                              remat_fn **out)
{
    int64_t KS[2] = {S, K};
    remat_fn *f = remat_fn_new("ode_attempt_cond");
    if (!f)
        return rmi_error(REMAT_ERR_NOMEM, "ode: out of memory");
    remat_val a[ODE_N_CARRY];
    a[ODE_Y] = remat_arg(f, "y", dt, 1, &S);
    a[ODE_FY] = remat_arg(f, "fy", dt, 1, &S);
    if (K)
        remat_arg(f, "out", dt, 2, KS);
    for (int i = ODE_T; i < ODE_N_CARRY; i++)
        a[i] = remat_arg(f, "control", dt, 0, NULL);
    remat_val t_end = remat_arg(f, "t_end", dt, 0, NULL);
    remat_arg(f, "t_floor", dt, 0, NULL);
    if (K)
        remat_arg(f, "ts", dt, 1, &K);
    if (has_params)
        remat_arg(f, "params", dt, 1, &P);
    remat_val going = remat_lt(f, a[ODE_T], t_end);
    remat_val budget = remat_lt(f, remat_add(f, a[ODE_NACC], a[ODE_NREJ]), cst(f, dt, (double)c->max_steps));
    remat_val calm = remat_lt(f, a[ODE_STIFF], cst(f, dt, (double)ODE_STIFF_STEPS));
    remat_fn_output(f, remat_mul(f, going, remat_mul(f, budget, calm)));
    if (remat_fn_status(f) != REMAT_OK) {
        remat_status st = rmi_error(remat_fn_status(f), "ode: building the loop condition: %s", remat_fn_error(f));
        remat_fn_free(f);
        return st;
    }
    *out = f;
    return REMAT_OK;
}

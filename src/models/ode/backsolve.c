/*
 * backsolve.c — the continuous (backsolve) adjoint of a fixed-step explicit
 * integration (remat/ode.h, REMAT_ODE_ADJOINT_BACKSOLVE), as diffrax's
 * BacksolveAdjoint.
 *
 * The forward integration is built as usual from stop_gradient'ed y0 and
 * params (so reverse mode keeps no store for it) and its output states ys
 * (K, S) pass through one custom op, identity on values, whose VJP is the
 * backward solve: a compiled program
 *   backward(ys (K,S), ct (K,S), params (P,)) -> [a(t0) (S), m(t0) (P)]
 * that walks the output times from last to first: y restarts at ys[k], a
 * gains ct[k], and one scan (not differentiated: carries only, O(1) in the
 * steps) integrates the augmented system z = (y, a, m),
 *   y' = f(t, y, p),  a' = -a^T df/dy,  m' = -a^T df/dp,
 * over the interval's grid in reverse with the method's tableau and step
 * -h, the VJP (a^T df/dy, a^T df/dp) being remat_vjp of the right-hand side
 * inlined into the step. The custom op's VJP is asked once per input (y0,
 * then params); the program runs once per evaluation (the op's forward
 * clears the memo) and distinct (ys, ct, params), both answers coming from
 * that run.
 *
 * The op struct and its program must outlive every program that uses the
 * op, which may outlive the function it was built in: they are kept in a
 * registry freed at exit (a few hundred bytes and one small program per
 * integration built with backsolve).
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "models/ode/ode_impl.h"
#include "models/ode/ode_registry.h"
#include "remat/loop.h"

static const char *const adjoint_names[REMAT_ODE_ADJOINT_COUNT] = {"discrete", "backsolve", "interpolating"};

const char *remat_ode_adjoint_name(remat_ode_adjoint adjoint)
{
    return (unsigned)adjoint < REMAT_ODE_ADJOINT_COUNT ? adjoint_names[adjoint] : "?";
}

remat_status remat_ode_adjoint_parse(const char *text, remat_ode_adjoint *out)
{
    if (!text || !out)
        return rmi_error(REMAT_ERR_NULL, "ode adjoint: %s is NULL", !text ? "the text" : "the output");
    for (int i = 0; i < REMAT_ODE_ADJOINT_COUNT; i++)
        if (!strcmp(text, adjoint_names[i])) {
            *out = (remat_ode_adjoint)i;
            return REMAT_OK;
        }
    return rmi_error(REMAT_ERR_PARSE, "unknown adjoint '%s' (expected discrete, backsolve or interpolating)", text);
}

/* ---- the backward program ---- */

remat_status ode_aug_rhs_new(const remat_mechanism *m, remat_dtype dt, int64_t S, int64_t P, ode_aug_rhs *out)
{
    out->timed = remat_kinetics_uses_indep(m);
    out->has_p = P > 0;
    remat_fn *r = remat_fn_new("backsolve_rhs");
    if (!r)
        return rmi_error(REMAT_ERR_NOMEM, "ode backsolve: out of memory");
    remat_val y = remat_arg(r, "y", dt, 1, &S);
    remat_val t = out->timed ? remat_arg(r, "t", dt, 0, NULL) : REMAT_NONE;
    remat_val p = out->has_p ? remat_arg(r, "params", dt, 1, &P) : REMAT_NONE;
    remat_val dydt;
    remat_status st = remat_kinetics_rhs(r, m, t, y, p, &dydt);
    if (st == REMAT_OK) {
        remat_fn_output(r, dydt);
        if (remat_fn_status(r) != REMAT_OK)
            st = rmi_error(remat_fn_status(r), "ode backsolve: %s", remat_fn_error(r));
    }
    if (st == REMAT_OK) {
        int argnums[2] = {0, out->timed ? 2 : 1};
        st = remat_vjp(r, out->has_p ? 2 : 1, argnums, &out->vjp);
    }
    remat_fn_free(r);
    return st;
}

/* z_i parts: y, a, m; fills fz with (f, -a^T J, -a^T f_p) at (t, y, a) */
void ode_aug_eval(remat_fn *g, const ode_aug_rhs *ar, remat_val t, remat_val y, remat_val a, remat_val p,
                     remat_val fz[3])
{
    remat_val args[4], outs[3] = {REMAT_NONE, REMAT_NONE, REMAT_NONE};
    int n = 0;
    args[n++] = y;
    if (ar->timed)
        args[n++] = t;
    if (ar->has_p)
        args[n++] = p;
    args[n++] = a;
    remat_call(g, ar->vjp, n, args, outs);
    fz[0] = outs[0];
    fz[1] = remat_neg(g, outs[1]);
    fz[2] = ar->has_p ? remat_neg(g, outs[2]) : REMAT_NONE;
}

/* body(y, a, [m,] j, t_end, h, [n,] [p]) -> (y', a', [m',] j + 1[, 1]): step
 * j of the reverse walk, from t = t_end - j h to t - h, the tableau's stages
 * with step -h on the augmented state; `in_while`: the while loop's body of
 * the row scan (build_backward_rows), with its step count n (unread) and
 * its `accepted` */
static remat_status make_body(const ode_tableau *tb, const ode_aug_rhs *ar, remat_dtype dt, int64_t S, int64_t P,
                              bool in_while, remat_fn **out)
{
    remat_fn *b = remat_fn_new("backsolve_step");
    if (!b)
        return rmi_error(REMAT_ERR_NOMEM, "ode backsolve: out of memory");
    const int nz = ar->has_p ? 3 : 2;
    remat_val z[3] = {remat_arg(b, "y", dt, 1, &S), remat_arg(b, "a", dt, 1, &S), REMAT_NONE};
    if (ar->has_p)
        z[2] = remat_arg(b, "m", dt, 1, &P);
    remat_val j = remat_arg(b, "step", dt, 0, NULL);
    remat_val tend = remat_arg(b, "t_end", dt, 0, NULL);
    remat_val h = remat_arg(b, "h", dt, 0, NULL);
    if (in_while)
        remat_arg(b, "n", dt, 0, NULL);
    remat_val p = ar->has_p ? remat_arg(b, "params", dt, 1, &P) : REMAT_NONE;
    remat_val hn = remat_neg(b, h);
    remat_val t = remat_sub(b, tend, remat_mul(b, j, h));
    remat_val k[ODE_MAX_STAGES][3];
    for (int i = 0; i < tb->stages; i++) {
        const double *ai = tb->a ? tb->a + i * (i - 1) / 2 : NULL;
        remat_val zi[3];
        for (int c = 0; c < 2; c++) {
            remat_val kc[ODE_MAX_STAGES];
            for (int q = 0; q < i; q++)
                kc[q] = k[q][c];
            remat_val incr = i ? ode_combine(b, i, ai, kc) : REMAT_NONE;
            zi[c] = incr == REMAT_NONE ? z[c] : remat_add(b, z[c], incr);
        }
        remat_val ti = tb->c[i] == 0.0 ? t : remat_add(b, t, remat_mul_scalar(b, hn, tb->c[i]));
        remat_val fz[3];
        ode_aug_eval(b, ar, ti, zi[0], zi[1], p, fz);
        for (int c = 0; c < nz; c++)
            k[i][c] = remat_mul(b, hn, fz[c]);
    }
    for (int c = 0; c < nz; c++) {
        remat_val kc[ODE_MAX_STAGES];
        for (int q = 0; q < tb->stages; q++)
            kc[q] = k[q][c];
        remat_fn_output(b, remat_add(b, z[c], ode_combine(b, tb->stages, tb->b, kc)));
    }
    remat_fn_output(b, remat_add_scalar(b, j, 1.0));
    if (in_while)
        remat_fn_output(b, remat_scalar(b, dt, 1.0));
    if (remat_fn_status(b) != REMAT_OK) {
        remat_status st = rmi_error(remat_fn_status(b), "ode backsolve: building the step: %s", remat_fn_error(b));
        remat_fn_free(b);
        return st;
    }
    *out = b;
    return REMAT_OK;
}

/* The augmented system in negated time s = -t, for the adaptive loops, which
 * step forward: z = [y, a, m] (2S + P), dz/ds = -F(-s, z) = [-f, a^T J, a^T f_p] */
static remat_status aug_eval_neg(remat_fn *g, const ode_rhs *r, remat_val s, remat_val z, remat_val p,
                                 remat_val *dzds)
{
    const ode_aug_rhs *ar = r->ctx;
    int64_t S = (r->S - r->P) / 2;
    remat_val y = remat_slice(g, z, (int64_t[]){0}, (int64_t[]){S}, NULL);
    remat_val a = remat_slice(g, z, (int64_t[]){S}, (int64_t[]){2 * S}, NULL);
    remat_val fz[3];
    ode_aug_eval(g, ar, s == REMAT_NONE ? REMAT_NONE : remat_neg(g, s), y, a, p, fz);
    remat_val parts[3] = {remat_neg(g, fz[0]), remat_neg(g, fz[1]), ar->has_p ? remat_neg(g, fz[2]) : REMAT_NONE};
    *dzds = remat_concatenate(g, ar->has_p ? 3 : 2, parts, 0);
    if (remat_fn_status(g) != REMAT_OK)
        return rmi_error(remat_fn_status(g), "ode backsolve: %s", remat_fn_error(g));
    return REMAT_OK;
}

/* One interval of the adaptive backward solve, t_k down to t_prev: the
 * forward's method, tolerances, controller and dt0 (diffrax's
 * BacksolveAdjoint: the same solver and step size controller, dt0 -> -dt0,
 * each interval a solve of its own) on z in negated time */
static remat_status adaptive_interval(remat_fn *g, const ode_rhs *r, const remat_ode_options *opt, double tk,
                                      double tprev, remat_val z, remat_val p, remat_val *z_end)
{
    double s_end = -tprev;
    remat_ode_options o = {.method = opt->method, .t0 = -tk, .n_times = 1, .times = &s_end, .adaptive = true,
                           .rtol = opt->rtol, .atol = opt->atol, .max_steps = opt->max_steps, .dt0 = opt->dt0,
                           .controller = opt->controller};
    remat_val out;
    remat_status st = ode_integrate_adaptive_rhs(g, r, &o, z, p, &out, NULL);
    *z_end = st == REMAT_OK ? remat_index(g, out, 0) : REMAT_NONE;
    return st;
}

/* Rosenbrock (rodas5) fixed steps: body(z, j, s_start, h, [n,] [p]) -> (z',
 * j + 1[, 1]), one step of the augmented system in negated time from
 * s = s_start + j h (its Jacobian, (2S + P)^2, by forward mode through the
 * VJP); `in_while` as make_body's */
static remat_status make_body_ros(const ode_tableau *tb, const ode_rhs *r, remat_dtype dt, bool in_while,
                                  remat_fn **out)
{
    remat_fn *b = remat_fn_new("backsolve_rosenbrock_step");
    if (!b)
        return rmi_error(REMAT_ERR_NOMEM, "ode backsolve: out of memory");
    int64_t N = r->S, P = r->P;
    remat_val z = remat_arg(b, "z", dt, 1, &N), j = remat_arg(b, "step", dt, 0, NULL);
    remat_val s0 = remat_arg(b, "s_start", dt, 0, NULL), h = remat_arg(b, "h", dt, 0, NULL);
    if (in_while)
        remat_arg(b, "n", dt, 0, NULL);
    remat_val p = P ? remat_arg(b, "params", dt, 1, &P) : REMAT_NONE, z1;
    remat_val s = remat_add(b, s0, remat_mul(b, j, h));
    remat_status st = rmi_ode_rosenbrock_step(b, r, tb, r->timed ? s : REMAT_NONE, h, z, p, &z1, NULL, NULL);
    if (st == REMAT_OK) {
        remat_fn_output(b, z1);
        remat_fn_output(b, remat_add_scalar(b, j, 1.0));
        if (in_while)
            remat_fn_output(b, remat_scalar(b, dt, 1.0));
        if (remat_fn_status(b) != REMAT_OK)
            st = rmi_error(remat_fn_status(b), "ode backsolve: building the step: %s", remat_fn_error(b));
    }
    if (st != REMAT_OK)
        remat_fn_free(b);
    else
        *out = b;
    return st;
}

static remat_status build_backward(const remat_mechanism *m, const remat_ode_options *opt, const int64_t *steps,
                                   remat_dtype dt, int64_t S, int64_t P, int64_t KT, remat_fn **out)
{
    *out = NULL;
    const ode_tableau *tb = rmi_ode_tableau(opt->method);
    ode_aug_rhs ar = {0};
    remat_fn *body = NULL, *g = NULL;
    remat_status st = ode_aug_rhs_new(m, dt, S, P, &ar);
    ode_rhs r = {.m = m, .eval = aug_eval_neg, .ctx = &ar, .S = 2 * S + P, .P = P, .timed = ar.timed};
    if (st == REMAT_OK && !opt->adaptive)
        st = tb->ros ? make_body_ros(tb, &r, dt, false, &body) : make_body(tb, &ar, dt, S, P, false, &body);
    if (st == REMAT_OK && !(g = remat_fn_new("ode_backsolve")))
        st = rmi_error(REMAT_ERR_NOMEM, "ode backsolve: out of memory");
    if (st != REMAT_OK)
        goto done;
    const int K = KT ? (int)KT : opt->n_times;
    int64_t KS[2] = {K, S};
    remat_val ys = remat_arg(g, "ys", dt, 2, KS);
    remat_val ct = remat_arg(g, "ct", dt, 2, KS);
    remat_val p = ar.has_p ? remat_arg(g, "params", dt, 1, &P) : REMAT_NONE;
    /* KT > 0: the output times are the program's input (K,), each interval
     * one adaptive solve between values (ode_integrate_adaptive_span) */
    remat_val tsv = KT ? remat_arg(g, "times", dt, 1, &KT) : REMAT_NONE;
    remat_val a = remat_const_fill(g, dt, 1, &S, 0.0);
    remat_val mu = ar.has_p ? remat_const_fill(g, dt, 1, &P, 0.0) : REMAT_NONE;
    remat_scan_options so = {0}; /* not differentiated: the schedule is never used */
    for (int k = K - 1; k >= 0 && st == REMAT_OK; k--) {
        remat_val y = remat_index(g, ys, k);
        a = remat_add(g, a, remat_index(g, ct, k));
        if (KT) {
            remat_val parts[3] = {y, a, mu}, z;
            remat_val s0 = remat_neg(g, remat_index(g, tsv, k));
            remat_val s1 = remat_neg(g, k ? remat_index(g, tsv, k - 1) : remat_scalar(g, dt, opt->t0));
            st = ode_integrate_adaptive_span(g, &r, opt, remat_concatenate(g, ar.has_p ? 3 : 2, parts, 0), p, s0, s1,
                                             &z);
            if (st == REMAT_OK) {
                a = remat_slice(g, z, (int64_t[]){S}, (int64_t[]){2 * S}, NULL);
                if (ar.has_p)
                    mu = remat_slice(g, z, (int64_t[]){2 * S}, (int64_t[]){2 * S + P}, NULL);
            }
            continue;
        }
        double tprev = k ? opt->times[k - 1] : opt->t0;
        if (opt->adaptive && opt->times[k] > tprev) {
            remat_val parts[3] = {y, a, mu}, z;
            st = adaptive_interval(g, &r, opt, opt->times[k], tprev,
                                   remat_concatenate(g, ar.has_p ? 3 : 2, parts, 0), p, &z);
            if (st == REMAT_OK) {
                a = remat_slice(g, z, (int64_t[]){S}, (int64_t[]){2 * S}, NULL);
                if (ar.has_p)
                    mu = remat_slice(g, z, (int64_t[]){2 * S}, (int64_t[]){2 * S + P}, NULL);
            }
            continue;
        }
        if (opt->adaptive || steps[k] == 0)
            continue;
        if (tb->ros) {
            double hk = (opt->times[k] - tprev) / (double)steps[k];
            remat_val parts[3] = {y, a, mu}, init[2], carry[2];
            init[0] = remat_concatenate(g, ar.has_p ? 3 : 2, parts, 0);
            init[1] = remat_scalar(g, dt, 0.0);
            remat_val consts[3] = {remat_scalar(g, dt, -opt->times[k]), remat_scalar(g, dt, hk), p};
            st = remat_scan(g, body, steps[k], 2, init, 0, NULL, ar.has_p ? 3 : 2, consts, &so, carry, NULL);
            if (st == REMAT_OK) {
                a = remat_slice(g, carry[0], (int64_t[]){S}, (int64_t[]){2 * S}, NULL);
                if (ar.has_p)
                    mu = remat_slice(g, carry[0], (int64_t[]){2 * S}, (int64_t[]){2 * S + P}, NULL);
            }
            continue;
        }
        double h = (opt->times[k] - tprev) / (double)steps[k];
        remat_val init[4] = {y, a, mu, REMAT_NONE}, carry[4];
        int nc = ar.has_p ? 4 : 3;
        init[nc - 1] = remat_scalar(g, dt, 0.0);
        remat_val consts[3] = {remat_scalar(g, dt, opt->times[k]), remat_scalar(g, dt, h), p};
        st = remat_scan(g, body, steps[k], nc, init, 0, NULL, ar.has_p ? 3 : 2, consts, &so, carry, NULL);
        if (st == REMAT_OK) {
            a = carry[1];
            if (ar.has_p)
                mu = carry[2];
        }
    }
    if (st == REMAT_OK) {
        remat_fn_output(g, ar.has_p ? remat_concatenate(g, 2, (remat_val[]){a, mu}, 0) : a);
        if (remat_fn_status(g) != REMAT_OK)
            st = rmi_error(remat_fn_status(g), "ode backsolve: %s", remat_fn_error(g));
    }
done:
    remat_fn_free(ar.vjp);
    remat_fn_free(body);
    if (st == REMAT_OK)
        *out = g;
    else
        remat_fn_free(g);
    return st;
}

/* ---- the backward program of the row scan (remat_ode_integrate_rows:
 * the times and step counts values, one program whatever they are) ---- */

/* the while loop's cond(y, a, [m,] j, t_end, h, n, [p]) (explicit) or
 * cond(z, j, s_start, h, n, [p]) (Rosenbrock) -> j < n */
static remat_fn *make_cond(const ode_tableau *tb, remat_dtype dt, int64_t S, int64_t P, bool has_p)
{
    remat_fn *c = remat_fn_new("backsolve_rows_more");
    if (!c)
        return NULL;
    if (tb->ros) {
        int64_t N = 2 * S + P;
        remat_arg(c, "z", dt, 1, &N);
    } else {
        remat_arg(c, "y", dt, 1, &S);
        remat_arg(c, "a", dt, 1, &S);
        if (has_p)
            remat_arg(c, "m", dt, 1, &P);
    }
    remat_val j = remat_arg(c, "step", dt, 0, NULL);
    remat_arg(c, tb->ros ? "s_start" : "t_end", dt, 0, NULL);
    remat_arg(c, "h", dt, 0, NULL);
    remat_val n = remat_arg(c, "n", dt, 0, NULL);
    if (has_p)
        remat_arg(c, "params", dt, 1, &P);
    remat_fn_output(c, remat_lt(c, j, n));
    return c;
}

/* the reverse row scan's body(a, [m,] y, ct, t_prev, t, n, [p]) -> (a', [m']):
 * a gains row k's cotangent, then the interval's n steps run back from t to
 * t_prev from y = ys[k] as a while loop: build_backward's per-interval scan
 * with its step count a value */
static remat_status make_row(const ode_tableau *tb, const ode_aug_rhs *ar, const ode_rhs *r,
                             const remat_ode_options *opt, remat_dtype dt, int64_t S, int64_t P, remat_fn **out)
{
    *out = NULL;
    remat_fn *step = NULL, *cond = make_cond(tb, dt, S, P, ar->has_p), *b = NULL;
    remat_status st = !cond    ? rmi_error(REMAT_ERR_NOMEM, "ode backsolve: out of memory")
                      : tb->ros ? make_body_ros(tb, r, dt, true, &step)
                                : make_body(tb, ar, dt, S, P, true, &step);
    if (st == REMAT_OK && !(b = remat_fn_new("backsolve_row")))
        st = rmi_error(REMAT_ERR_NOMEM, "ode backsolve: out of memory");
    if (st == REMAT_OK) {
        remat_val a = remat_arg(b, "a", dt, 1, &S);
        remat_val mu = ar->has_p ? remat_arg(b, "m", dt, 1, &P) : REMAT_NONE;
        remat_val y = remat_arg(b, "y", dt, 1, &S);
        remat_val c = remat_arg(b, "ct", dt, 1, &S);
        remat_val tp = remat_arg(b, "t_prev", dt, 0, NULL);
        remat_val tk = remat_arg(b, "t", dt, 0, NULL);
        remat_val n = remat_arg(b, "n", dt, 0, NULL);
        remat_val p = ar->has_p ? remat_arg(b, "params", dt, 1, &P) : REMAT_NONE;
        a = remat_add(b, a, c);
        /* n >= 1: build_backward's h bit for bit (f64); n = 0, a row at t0: no step */
        remat_val h = remat_div(b, remat_sub(b, tk, tp), remat_max(b, n, remat_scalar(b, dt, 1.0)));
        remat_while_options wo = {.max_steps = opt->max_steps};
        remat_val zero = remat_scalar(b, dt, 0.0), consts[4] = {tb->ros ? remat_neg(b, tk) : tk, h, n, p};
        if (tb->ros) {
            remat_val parts[3] = {y, a, mu}, carry[2];
            remat_val init[2] = {remat_concatenate(b, ar->has_p ? 3 : 2, parts, 0), zero};
            st = remat_while(b, cond, step, 2, 1, init, ar->has_p ? 4 : 3, consts, &wo, carry, NULL);
            if (st == REMAT_OK) {
                a = remat_slice(b, carry[0], (int64_t[]){S}, (int64_t[]){2 * S}, NULL);
                if (ar->has_p)
                    mu = remat_slice(b, carry[0], (int64_t[]){2 * S}, (int64_t[]){2 * S + P}, NULL);
            }
        } else {
            const int nc = ar->has_p ? 4 : 3;
            remat_val init[4] = {y, a, mu, REMAT_NONE}, carry[4];
            init[nc - 1] = zero;
            st = remat_while(b, cond, step, nc, nc - 1, init, ar->has_p ? 4 : 3, consts, &wo, carry, NULL);
            if (st == REMAT_OK) {
                a = carry[1];
                if (ar->has_p)
                    mu = carry[2];
            }
        }
        if (st == REMAT_OK) {
            remat_fn_output(b, a);
            if (ar->has_p)
                remat_fn_output(b, mu);
            if (remat_fn_status(b) != REMAT_OK)
                st = rmi_error(remat_fn_status(b), "ode backsolve: building the row scan: %s", remat_fn_error(b));
        }
    }
    remat_fn_free(step);
    remat_fn_free(cond);
    if (st == REMAT_OK)
        *out = b;
    else
        remat_fn_free(b);
    return st;
}

/* backward(ys (K,S), ct (K,S), [params (P,),] times (K,), steps (K,)) ->
 * [a(t0), m(t0)]: one scan over the rows, last first (make_row) */
static remat_status build_backward_rows(const remat_mechanism *m, const remat_ode_options *opt, remat_dtype dt,
                                        int64_t S, int64_t P, int64_t K, remat_fn **out)
{
    *out = NULL;
    const ode_tableau *tb = rmi_ode_tableau(opt->method);
    ode_aug_rhs ar = {0};
    remat_fn *row = NULL, *g = NULL;
    remat_status st = ode_aug_rhs_new(m, dt, S, P, &ar);
    ode_rhs r = {.m = m, .eval = aug_eval_neg, .ctx = &ar, .S = 2 * S + P, .P = P, .timed = ar.timed};
    if (st == REMAT_OK)
        st = make_row(tb, &ar, &r, opt, dt, S, P, &row);
    if (st == REMAT_OK && !(g = remat_fn_new("ode_backsolve_rows")))
        st = rmi_error(REMAT_ERR_NOMEM, "ode backsolve: out of memory");
    if (st == REMAT_OK) {
        int64_t KS[2] = {K, S};
        remat_val ys = remat_arg(g, "ys", dt, 2, KS);
        remat_val ct = remat_arg(g, "ct", dt, 2, KS);
        remat_val p = ar.has_p ? remat_arg(g, "params", dt, 1, &P) : REMAT_NONE;
        remat_val ts = remat_arg(g, "times", dt, 1, &K);
        remat_val ns = remat_arg(g, "steps", dt, 1, &K);
        /* t_{k-1}: t0, then the times but the last */
        remat_val one = remat_reshape(g, remat_scalar(g, dt, opt->t0), 1, (int64_t[]){1});
        remat_val tp = K == 1 ? one
                              : remat_concatenate(g, 2,
                                                  (remat_val[]){one, remat_slice(g, ts, (int64_t[]){0},
                                                                                 (int64_t[]){K - 1}, NULL)},
                                                  0);
        remat_val init[2] = {remat_const_fill(g, dt, 1, &S, 0.0),
                             ar.has_p ? remat_const_fill(g, dt, 1, &P, 0.0) : REMAT_NONE};
        remat_val xs[5] = {ys, ct, tp, ts, ns}, carry[2];
        remat_scan_options so = {.reverse = true}; /* not differentiated: the schedule is never used */
        st = remat_scan(g, row, K, ar.has_p ? 2 : 1, init, 5, xs, ar.has_p ? 1 : 0, &p, &so, carry, NULL);
        if (st == REMAT_OK) {
            remat_fn_output(g, ar.has_p ? remat_concatenate(g, 2, carry, 0) : carry[0]);
            if (remat_fn_status(g) != REMAT_OK)
                st = rmi_error(remat_fn_status(g), "ode backsolve: %s", remat_fn_error(g));
        }
    }
    remat_fn_free(ar.vjp);
    remat_fn_free(row);
    if (st == REMAT_OK)
        *out = g;
    else
        remat_fn_free(g);
    return st;
}

/* ---- the custom op ---- */

typedef struct backsolve_ctx {
    remat_custom_op op;
    remat_program *prog;
    remat_dtype dt;
    int64_t K, S, P;
    bool has_ts;    /* the output times are an input of the op (after params) */
    bool has_steps; /* and the step counts (the row scan), after the times */
    pthread_mutex_t lock;
    /* the last run: its inputs (ys, ct, params) and its answer [a, m] */
    bool have;
    unsigned char *key;
    size_t key_bytes;
    unsigned char *ans;
    ode_registry_entry reg; /* freed at exit (ode_registry.h) */
} backsolve_ctx;

static void ctx_release(void *p)
{
    backsolve_ctx *c = p;
    remat_program_free(c->prog);
    pthread_mutex_destroy(&c->lock);
    rmi_free(c->key);
    rmi_free(c->ans);
    rmi_free(c);
}

static void bs_forward(int n_in, const remat_tensor *ins, remat_tensor *out, void *ctx)
{
    (void)n_in;
    backsolve_ctx *c = ctx;
    memcpy(out->data, ins[0].data, (size_t)(c->K * c->S) * remat_dtype_size(c->dt));
    /* a new evaluation: its VJPs solve again (the memo serves the second
     * input's VJP of one evaluation, never a later run's, so every run of a
     * gradient costs its backward solve) */
    pthread_mutex_lock(&c->lock);
    c->have = false;
    pthread_mutex_unlock(&c->lock);
}

static void fill_nan(remat_tensor *t, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        if (t->dtype == REMAT_F64)
            ((double *)t->data)[i] = NAN;
        else
            ((float *)t->data)[i] = NAN;
    }
}

/* ins: ys, y0, [params], [times, [steps]]; which 1: y0's cotangent a(t0), 2: params' m(t0) */
static void bs_vjp(int which, int n_in, const remat_tensor *ins, const remat_tensor *out, const remat_tensor *dout,
                   remat_tensor *din, void *ctx)
{
    (void)out;
    backsolve_ctx *c = ctx;
    size_t es = remat_dtype_size(c->dt);
    const int n_data = (c->has_ts ? 1 : 0) + (c->has_steps ? 1 : 0);
    int ip = n_in - n_data > 2 ? 2 : -1, it = c->has_ts ? n_in - n_data : -1, in_ = c->has_steps ? n_in - 1 : -1;
    int64_t n = which == 0 ? c->K * c->S : which == 1 ? c->S : which == ip ? c->P : c->K;
    if (which != 1 && which != ip) { /* ys, times and steps are stop_gradient'ed: never asked, but defined */
        memset(din->data, 0, (size_t)n * es);
        return;
    }
    size_t ks = (size_t)(c->K * c->S) * es, ps = (size_t)c->P * es, tsz = (size_t)c->K * es;
    pthread_mutex_lock(&c->lock);
    bool hit = c->have && !memcmp(c->key, ins[0].data, ks) && !memcmp(c->key + ks, dout->data, ks) &&
               (ip < 0 || !memcmp(c->key + 2 * ks, ins[ip].data, ps)) &&
               (it < 0 || !memcmp(c->key + 2 * ks + ps, ins[it].data, tsz)) &&
               (in_ < 0 || !memcmp(c->key + 2 * ks + ps + tsz, ins[in_].data, tsz));
    if (!hit) {
        remat_tensor in[5] = {ins[0], *dout};
        int ni = 2;
        if (ip >= 0)
            in[ni++] = ins[ip];
        if (it >= 0)
            in[ni++] = ins[it];
        if (in_ >= 0)
            in[ni++] = ins[in_];
        remat_tensor o = {.dtype = c->dt, .shape = {.rank = 1, .dims = {c->S + c->P}}, .data = c->ans};
        c->have = remat_run(c->prog, ni, in, 1, &o, NULL) == REMAT_OK;
        if (c->have) {
            memcpy(c->key, ins[0].data, ks);
            memcpy(c->key + ks, dout->data, ks);
            if (ip >= 0)
                memcpy(c->key + 2 * ks, ins[ip].data, ps);
            if (it >= 0)
                memcpy(c->key + 2 * ks + ps, ins[it].data, tsz);
            if (in_ >= 0)
                memcpy(c->key + 2 * ks + ps + tsz, ins[in_].data, tsz);
        }
    }
    if (c->have)
        memcpy(din->data, c->ans + (which == 1 ? 0 : (size_t)c->S * es), (size_t)n * es);
    else
        fill_nan(din, n);
    pthread_mutex_unlock(&c->lock);
}

remat_status rmi_ode_backsolve_check(const remat_ode_options *opt, remat_fn *f, remat_val y0, remat_val params)
{
    if (opt->adjoint == REMAT_ODE_ADJOINT_DISCRETE)
        return REMAT_OK;
    if ((unsigned)opt->adjoint >= REMAT_ODE_ADJOINT_COUNT)
        return rmi_error(REMAT_ERR_ARG, "ode: unknown adjoint %d (expected discrete, backsolve or interpolating)", (int)opt->adjoint);
    if (remat_val_shape(f, y0).rank != 1 || (params != REMAT_NONE && remat_val_shape(f, params).rank != 1))
        return rmi_error(REMAT_ERR_UNSUPPORTED, "ode: the %s adjoint takes y0 (S,) and params (P,), "
                                                "not a batch: use adjoint discrete", remat_ode_adjoint_name(opt->adjoint));
    return REMAT_OK;
}

remat_status rmi_ode_backsolve_wrap(remat_fn *f, const remat_mechanism *m, const remat_ode_options *opt,
                                    const int64_t *steps, remat_val y0, remat_val params, remat_val ts,
                                    remat_val nsteps, remat_val ys, remat_val *out)
{
    *out = REMAT_NONE;
    remat_dtype dt = remat_val_dtype(f, y0);
    int64_t S = remat_val_shape(f, y0).dims[0], P = params != REMAT_NONE ? remat_val_shape(f, params).dims[0] : 0;
    int64_t KT = ts != REMAT_NONE ? remat_val_shape(f, ts).dims[0] : 0, K = KT ? KT : opt->n_times;
    remat_fn *g;
    remat_status st = nsteps != REMAT_NONE ? build_backward_rows(m, opt, dt, S, P, KT, &g)
                                           : build_backward(m, opt, steps, dt, S, P, KT, &g);
    if (st != REMAT_OK)
        return st;
    backsolve_ctx *c = rmi_calloc(1, sizeof *c);
    size_t es = remat_dtype_size(dt), ks = (size_t)(K * S) * es;
    if (c) {
        c->key = rmi_malloc(2 * ks + (size_t)(P + 2 * K) * es + 1);
        c->ans = rmi_malloc((size_t)(S + P) * es);
    }
    if (!c || !c->key || !c->ans) {
        if (c) {
            rmi_free(c->key);
            rmi_free(c->ans);
        }
        rmi_free(c);
        remat_fn_free(g);
        return rmi_error(REMAT_ERR_NOMEM, "ode backsolve: out of memory");
    }
    st = remat_compile(g, remat_backend_cpu(), &c->prog);
    remat_fn_free(g);
    if (st != REMAT_OK) {
        rmi_free(c->key);
        rmi_free(c->ans);
        rmi_free(c);
        return st;
    }
    c->dt = dt, c->K = K, c->S = S, c->P = P, c->has_ts = KT > 0, c->has_steps = nsteps != REMAT_NONE;
    pthread_mutex_init(&c->lock, NULL);
    c->op = (remat_custom_op){.name = "ode_backsolve", .forward = bs_forward, .vjp = bs_vjp, .ctx = c};
    ode_registry_add(&c->reg, c, ctx_release);
    remat_shape sh = remat_val_shape(f, ys);
    remat_val ins[5] = {remat_stop_gradient(f, ys), y0};
    int n = 2;
    if (params != REMAT_NONE)
        ins[n++] = params;
    if (KT)
        ins[n++] = remat_stop_gradient(f, ts);
    if (c->has_steps)
        ins[n++] = remat_stop_gradient(f, nsteps);
    *out = remat_custom(f, &c->op, n, ins, dt, sh.rank, sh.dims);
    if (*out == REMAT_NONE || remat_fn_status(f) != REMAT_OK) {
        *out = REMAT_NONE;
        return rmi_error(remat_fn_status(f), "ode backsolve: %s", remat_fn_error(f));
    }
    return REMAT_OK;
}

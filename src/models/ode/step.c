/*
 * step.c — one explicit Runge–Kutta step as graph ops, from a tableau, and
 * the method table (a Rosenbrock tableau's step is rosenbrock.c's).
 *
 * Stages are increments, as diffrax forms them:
 *   k_i = h f(t + c_i h, y + sum_{j<i} a_ij k_j),   y' = y + sum_i b_i k_i.
 * Zero coefficients are skipped and unit ones not multiplied, so the Euler
 * step is exactly y + h f(t, y), the ops JAX runs for `C + dt * dC`.
 */
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "models/ode/ode_impl.h"

static const ode_tableau *const tableaus[] = {
    [REMAT_ODE_EULER] = &rmi_ode_euler_tableau,
    [REMAT_ODE_RK4] = &rmi_ode_rk4_tableau,
    [REMAT_ODE_TSIT5] = &rmi_ode_tsit5_tableau,
    [REMAT_ODE_RODAS5] = &rmi_ode_rodas5_tableau,
    [REMAT_ODE_DOPRI5] = &rmi_ode_dopri5_tableau,
    [REMAT_ODE_BDF] = &rmi_ode_bdf_tableau,
};
_Static_assert(sizeof tableaus / sizeof tableaus[0] == REMAT_ODE_METHOD_COUNT,
               "tableaus out of step with remat_ode_method");

const ode_tableau *rmi_ode_tableau(remat_ode_method method)
{
    return (unsigned)method < REMAT_ODE_METHOD_COUNT ? tableaus[method] : NULL;
}

const char *remat_ode_method_name(remat_ode_method method)
{
    const ode_tableau *tb = rmi_ode_tableau(method);
    return tb ? tb->name : "?";
}

int remat_ode_method_order(remat_ode_method method)
{
    const ode_tableau *tb = rmi_ode_tableau(method);
    return tb ? tb->order : 0;
}

int remat_ode_method_stages(remat_ode_method method)
{
    const ode_tableau *tb = rmi_ode_tableau(method);
    return tb ? tb->stages : 0;
}

bool remat_ode_method_adaptive(remat_ode_method method)
{
    const ode_tableau *tb = rmi_ode_tableau(method);
    return tb && (tb->e || tb->ros || tb->multistep);
}

remat_status remat_ode_method_parse(const char *text, remat_ode_method *out)
{
    if (!text || !out)
        return rmi_error(REMAT_ERR_NULL, "ode method: %s is NULL", !text ? "the text" : "the output");
    for (int i = 0; i < REMAT_ODE_METHOD_COUNT; i++)
        if (!strcmp(text, tableaus[i]->name)) {
            *out = (remat_ode_method)i;
            return REMAT_OK;
        }
    return rmi_error(REMAT_ERR_PARSE, "unknown ODE method '%s' (expected euler, rk4, tsit5, rodas5, dopri5 or bdf)", text);
}

/* ode_impl.h */
remat_val ode_combine(remat_fn *f, int n, const double *w, const remat_val *k)
{
    remat_val acc = REMAT_NONE;
    for (int j = 0; j < n; j++) {
        if (w[j] == 0.0)
            continue;
        remat_val term = w[j] == 1.0 ? k[j] : remat_mul_scalar(f, k[j], w[j]);
        acc = acc == REMAT_NONE ? term : remat_add(f, acc, term);
    }
    return acc;
}

remat_status remat_ode_step(remat_fn *f, const remat_mechanism *m, remat_ode_method method, remat_val t,
                            remat_val h, remat_val y, remat_val params, remat_val *y_next)
{
    if (!y_next)
        return rmi_error(REMAT_ERR_NULL, "ode step: y_next is NULL");
    *y_next = REMAT_NONE;
    const ode_tableau *tb = rmi_ode_tableau(method);
    if (!tb)
        return rmi_error(REMAT_ERR_ARG, "ode step: unknown method %d", (int)method);
    if (!f || !m)
        return rmi_error(REMAT_ERR_NULL, "ode step: %s is NULL", !f ? "the function" : "the mechanism");
    if (tb->multistep)
        return rmi_error(REMAT_ERR_ARG, "ode step: %s is a multistep method with no one-step form (integrate with "
                                        "remat_ode_integrate, adaptive)", tb->name);
    if (h < 0 || h >= remat_fn_num_nodes(f) || remat_val_shape(f, h).rank != 0)
        return rmi_error(REMAT_ERR_SHAPE, "ode step: h must be a scalar value of function '%s'", remat_fn_name(f));
    if (tb->ros) {
        ode_rhs r = ode_rhs_of(m);
        return rmi_ode_rosenbrock_step(f, &r, tb, t, h, y, params, y_next, NULL, NULL);
    }
    remat_val k[ODE_MAX_STAGES];
    for (int i = 0; i < tb->stages; i++) {
        const double *ai = tb->a ? tb->a + i * (i - 1) / 2 : NULL;
        remat_val incr = i ? ode_combine(f, i, ai, k) : REMAT_NONE;
        remat_val yi = incr == REMAT_NONE ? y : remat_add(f, y, incr);
        remat_val ti = t;
        if (t != REMAT_NONE && tb->c[i] != 0.0)
            ti = remat_add(f, t, tb->c[i] == 1.0 ? h : remat_mul_scalar(f, h, tb->c[i]));
        remat_val dydt;
        remat_status st = remat_kinetics_rhs(f, m, ti, yi, params, &dydt);
        if (st != REMAT_OK)
            return st;
        k[i] = remat_mul(f, h, dydt);
    }
    remat_val out = remat_add(f, y, ode_combine(f, tb->stages, tb->b, k));
    if (remat_fn_status(f) != REMAT_OK)
        return rmi_error(remat_fn_status(f), "ode step (%s): %s", tb->name, remat_fn_error(f));
    *y_next = out;
    return REMAT_OK;
}

remat_fn *remat_ode_step_body(const remat_mechanism *m, remat_ode_method method, remat_dtype dt)
{
    if (!m) {
        rmi_error(REMAT_ERR_NULL, "ode step body: the mechanism is NULL");
        return NULL;
    }
    if (!rmi_ode_tableau(method)) {
        rmi_error(REMAT_ERR_ARG, "ode step body: unknown method %d", (int)method);
        return NULL;
    }
    if (rmi_ode_tableau(method)->multistep) {
        rmi_error(REMAT_ERR_ARG, "ode step body: %s is a multistep method with no one-step form",
                  remat_ode_method_name(method));
        return NULL;
    }
    int64_t S = remat_mechanism_species_count(m), P = remat_mechanism_input_count(m);
    char name[64];
    snprintf(name, sizeof name, "%s_step", remat_ode_method_name(method));
    remat_fn *f = remat_fn_new(name);
    if (!f) {
        rmi_error(REMAT_ERR_NOMEM, "ode step body: out of memory");
        return NULL;
    }
    remat_val y = remat_arg(f, "y", dt, 1, &S);
    remat_val t = remat_arg(f, "t", dt, 0, NULL);
    remat_val h = remat_arg(f, "h", dt, 0, NULL);
    remat_val p = remat_arg(f, "params", dt, 1, &P);
    remat_val y1;
    if (remat_fn_status(f) != REMAT_OK) {
        rmi_error(remat_fn_status(f), "ode step body: %s", remat_fn_error(f));
        goto fail;
    }
    if (remat_ode_step(f, m, method, remat_kinetics_uses_indep(m) ? t : REMAT_NONE, h, y, p, &y1) != REMAT_OK)
        goto fail;
    remat_fn_output(f, y1);
    return f;
fail:
    remat_fn_free(f);
    return NULL;
}

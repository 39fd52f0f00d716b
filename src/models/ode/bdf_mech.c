/*
 * bdf_mech.c — a mechanism integrated by bdf.c: the right-hand side and its
 * Jacobian as two small compiled CPU programs run from C (as interp.c runs
 * its programs), reached three ways:
 *   - remat_ode_bdf_run: build, run once with the full statistics, free;
 *   - in a graph (remat_ode_integrate* with REMAT_ODE_BDF): one custom op,
 *     inputs y0, [params], [times], output the K x S rows then the
 *     REMAT_ODE_STATS numbers, whose context (the two programs) lives in a
 *     registry freed at exit, as interp.c's; it has no VJP, so reverse mode
 *     through it is an error naming the op, "ode_bdf (forward only: ...)";
 *   - the programs: rhs(y, [t], [params]) -> f and jac(y, [t], [params]) ->
 *     J (S, S), J[i][j] = df_i/dy_j: remat_gas_jacobian's closed form for a
 *     gas mechanism with one parameter vector, else remat_jacfwd of the
 *     right-hand side (forward mode, S JVPs).
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "models/ode/bdf.h"
#include "models/ode/ode_impl.h"
#include "models/ode/ode_registry.h"
#include "remat/ad.h"
#include "remat/gas.h"

typedef struct bdf_ctx {
    remat_custom_op op;
    int64_t S, P, K;
    int timed, has_ts;
    double t0;
    rmi_bdf_options bo;
    double *times; /* opt->times (K), or NULL: the op's input */
    remat_program *rhs, *jac;
    pthread_mutex_t lock; /* one run of the programs at a time */
    ode_registry_entry reg; /* in a graph's op: freed at exit (ode_registry.h) */
} bdf_ctx;

static void ctx_free(bdf_ctx *c)
{
    if (!c)
        return;
    remat_program_free(c->rhs);
    remat_program_free(c->jac);
    rmi_free(c->times);
    rmi_free(c);
}

static void ctx_release(void *p)
{
    bdf_ctx *c = p;
    pthread_mutex_destroy(&c->lock);
    ctx_free(c);
}

const ode_tableau rmi_ode_bdf_tableau = {.name = "bdf", .order = 5, .stages = 1, .multistep = 1};

/* ---- the programs ---- */

static remat_status finish(remat_fn *g, remat_status st, remat_program **out)
{
    if (st == REMAT_OK && remat_fn_status(g) != REMAT_OK)
        st = rmi_error(remat_fn_status(g), "ode bdf: %s", remat_fn_error(g));
    if (st == REMAT_OK)
        st = remat_compile(g, remat_backend_cpu(), out);
    remat_fn_free(g);
    return st;
}

/* rhs(y, [t], [params]) -> f, or with jac the Jacobian J (S, S) */
static remat_status build(const remat_mechanism *m, const bdf_ctx *c, bool jac, remat_program **out)
{
    remat_fn *g = remat_fn_new(jac ? "bdf_jacobian" : "bdf_rhs");
    if (!g)
        return rmi_error(REMAT_ERR_NOMEM, "ode bdf: out of memory");
    int64_t S = c->S, P = c->P;
    remat_val y = remat_arg(g, "y", REMAT_F64, 1, &S);
    remat_val t = c->timed ? remat_arg(g, "t", REMAT_F64, 0, NULL) : REMAT_NONE;
    remat_val p = P ? remat_arg(g, "params", REMAT_F64, 1, &P) : REMAT_NONE, o = REMAT_NONE, f0;
    remat_status st = REMAT_ERR_UNSUPPORTED;
    if (jac && !c->timed && P && remat_gas_species_count(m) > 0) {
        st = remat_gas_jacobian(g, m, y, p, &o, &f0);
        if (st == REMAT_ERR_UNSUPPORTED)
            remat_clear_error(); /* no closed form (PLOG, orders): forward mode below */
    }
    if (st == REMAT_ERR_UNSUPPORTED) {
        st = remat_kinetics_rhs(g, m, t, y, p, &o);
        if (st == REMAT_OK && jac) {
            remat_fn_output(g, o);
            remat_fn *jf = NULL;
            st = remat_jacfwd(g, 1, (int[]){0}, &jf);
            remat_fn_free(g);
            g = jf;
            return g ? finish(g, st, out) : st;
        }
    }
    if (st == REMAT_OK)
        remat_fn_output(g, o);
    return finish(g, st, out);
}

/* ---- the callbacks ---- */

typedef struct {
    bdf_ctx *c;
    const double *params;
} bdf_call;

static int run_prog(bdf_call *k, remat_program *prog, double t, const double *y, double *out, int64_t n_out)
{
    const bdf_ctx *c = k->c;
    int64_t S = c->S, P = c->P;
    remat_tensor in[3];
    int n = 0;
    in[n++] = remat_tensor_f64((double *)y, 1, &S);
    if (c->timed)
        in[n++] = remat_tensor_f64(&t, 0, NULL);
    if (P)
        in[n++] = remat_tensor_f64((double *)k->params, 1, &P);
    int64_t dims[2] = {S, S};
    remat_tensor o = remat_tensor_f64(out, n_out == 1 ? 1 : 2, n_out == 1 ? &S : dims);
    return remat_run(prog, n, in, 1, &o, NULL) != REMAT_OK;
}

static int cb_rhs(void *ctx, double t, const double *y, double *f)
{
    bdf_call *k = ctx;
    return run_prog(k, k->c->rhs, t, y, f, 1);
}

static int cb_jac(void *ctx, double t, const double *y, double *J)
{
    bdf_call *k = ctx;
    return run_prog(k, k->c->jac, t, y, J, 2);
}

static remat_status ctx_solve(bdf_ctx *c, const double *y0, const double *params, int K, const double *times,
                              double *ys, remat_ode_bdf_stats *st)
{
    bdf_call k = {.c = c, .params = params};
    rmi_bdf_problem pr = {.n = (int)c->S, .rhs = cb_rhs, .jac = cb_jac, .ctx = &k};
    return rmi_bdf_solve(&pr, &c->bo, c->t0, y0, K, times, ys, st);
}

/* ---- the context ---- */

static remat_status check(const remat_ode_options *opt)
{
    if (!opt->adaptive)
        return rmi_error(REMAT_ERR_ARG, "ode: bdf chooses its own steps: it is adaptive only (give rtol and atol, "
                                        "not steps or dt)");
    if (opt->adjoint != REMAT_ODE_ADJOINT_DISCRETE)
        return rmi_error(REMAT_ERR_ARG, "ode: bdf integrates forward only: the %s adjoint needs rodas5 (or "
                                        "another method)", remat_ode_adjoint_name(opt->adjoint));
    if (opt->n_jumps > 0)
        return rmi_error(REMAT_ERR_ARG, "ode: bdf does not stop at jump times (a control profile's knots): use "
                                        "rodas5");
    ode_ctl ctl; /* rtol, atol, max_steps, dt0 checked as for every adaptive method */
    return ode_ctl_of(opt, &ctl);
}

static remat_status ctx_new(const remat_mechanism *m, const remat_ode_options *opt, bool has_ts, int64_t K,
                            bdf_ctx **out)
{
    *out = NULL;
    bdf_ctx *c = rmi_calloc(1, sizeof *c);
    if (!c)
        return rmi_error(REMAT_ERR_NOMEM, "ode bdf: out of memory");
    c->S = remat_mechanism_species_count(m);
    c->P = remat_mechanism_input_count(m);
    c->timed = remat_kinetics_uses_indep(m);
    c->K = K;
    c->has_ts = has_ts;
    c->t0 = opt->t0;
    c->bo = (rmi_bdf_options){.rtol = opt->rtol, .atol = opt->atol, .max_steps = opt->max_steps, .h0 = opt->dt0};
    remat_status st = REMAT_OK;
    if (!has_ts && !(c->times = rmi_malloc(sizeof *c->times * (size_t)K)))
        st = rmi_error(REMAT_ERR_NOMEM, "ode bdf: out of memory");
    else if (!has_ts)
        memcpy(c->times, opt->times, sizeof *c->times * (size_t)K);
    if (st == REMAT_OK)
        st = build(m, c, false, &c->rhs);
    if (st == REMAT_OK)
        st = build(m, c, true, &c->jac);
    if (st != REMAT_OK) {
        char why[512];
        snprintf(why, sizeof why, "%s", remat_last_error());
        ctx_free(c);
        return rmi_error(st, "ode bdf: building the right-hand side and Jacobian programs: %s", why);
    }
    pthread_mutex_init(&c->lock, NULL);
    *out = c;
    return REMAT_OK;
}

/* ---- the public run ---- */

remat_status remat_ode_bdf_run(const remat_mechanism *m, const remat_ode_options *opt, const double *y0,
                               const double *params, double *ys, remat_ode_bdf_stats *stats)
{
    if (!m || !opt || !y0)
        return rmi_error(REMAT_ERR_NULL, "ode bdf run: %s is NULL", !m ? "the mechanism" : !opt ? "opt" : "y0");
    if (opt->method != REMAT_ODE_BDF)
        return rmi_error(REMAT_ERR_ARG, "ode bdf run: the method is %s, not bdf", remat_ode_method_name(opt->method));
    int64_t S = remat_mechanism_species_count(m), P = remat_mechanism_input_count(m);
    if (P > 0 && !params)
        return rmi_error(REMAT_ERR_NULL, "ode bdf run: params is NULL (the mechanism has %lld rate inputs)",
                         (long long)P);
    remat_status st = check(opt);
    if (st == REMAT_OK && (opt->n_times < 1 || !opt->times))
        st = rmi_error(REMAT_ERR_ARG, "ode bdf run: needs at least one output time (n_times = %d)", opt->n_times);
    if (st != REMAT_OK)
        return st;
    bdf_ctx *c;
    if ((st = ctx_new(m, opt, false, opt->n_times, &c)) != REMAT_OK)
        return st;
    remat_ode_bdf_stats s;
    double *rows = ys ? ys : rmi_malloc(sizeof *rows * (size_t)(opt->n_times * S));
    st = rows ? ctx_solve(c, y0, params, opt->n_times, c->times, rows, &s)
              : rmi_error(REMAT_ERR_NOMEM, "ode bdf run: out of memory");
    pthread_mutex_destroy(&c->lock);
    ctx_free(c);
    if (rows != ys)
        rmi_free(rows);
    if (st != REMAT_OK)
        return st;
    if (stats)
        *stats = s;
    double sv[REMAT_ODE_STATS] = {[REMAT_ODE_STAT_ACCEPTED] = (double)s.steps,
                                  [REMAT_ODE_STAT_REJECTED] = (double)(s.rejected + s.newton_failures),
                                  [REMAT_ODE_STAT_T] = s.t, [REMAT_ODE_STAT_CODE] = s.code};
    return remat_ode_stats_check(opt, sv);
}

/* ---- the custom op ---- */

static void op_forward(int n_in, const remat_tensor *ins, remat_tensor *out, void *ctx)
{
    bdf_ctx *c = ctx;
    const double *y0 = ins[0].data, *params = c->P ? ins[1].data : NULL;
    const double *times = c->has_ts ? ins[n_in - 1].data : c->times;
    double *o = out->data, *sv = o + c->K * c->S;
    remat_ode_bdf_stats s = {.code = REMAT_ODE_BDF_COLLAPSED, .t = c->t0};
    pthread_mutex_lock(&c->lock);
    remat_status st = ctx_solve(c, y0, params, (int)c->K, times, o, &s);
    pthread_mutex_unlock(&c->lock);
    if (st != REMAT_OK) /* times out of order (a value): no integration */
        remat_clear_error();
    if (st != REMAT_OK || s.code != REMAT_ODE_BDF_DONE) /* the outputs of a failed integration are NaN */
        for (int64_t i = 0; i < c->K * c->S; i++)
            o[i] = NAN;
    sv[REMAT_ODE_STAT_ACCEPTED] = (double)s.steps;
    sv[REMAT_ODE_STAT_REJECTED] = (double)(s.rejected + s.newton_failures);
    sv[REMAT_ODE_STAT_T] = s.t;
    sv[REMAT_ODE_STAT_CODE] = st != REMAT_OK ? REMAT_ODE_BDF_COLLAPSED : s.code;
}

remat_status rmi_ode_bdf_integrate(remat_fn *f, const remat_mechanism *m, const remat_ode_options *opt,
                                   remat_val y0, remat_val params, remat_val ts, int64_t K, remat_val *y_at_outputs,
                                   remat_val *stats)
{
    remat_status st = check(opt);
    if (st != REMAT_OK)
        return st;
    remat_shape ys = remat_val_shape(f, y0);
    if (ys.rank != 1 || remat_val_dtype(f, y0) != REMAT_F64)
        return rmi_error(REMAT_ERR_SHAPE, "ode: bdf integrates one state y0 f64[S] (a batch or f32: use rodas5)");
    int64_t S = ys.dims[0];
    bdf_ctx *c;
    if ((st = ctx_new(m, opt, ts != REMAT_NONE, K, &c)) != REMAT_OK)
        return st;
    c->op = (remat_custom_op){
        .name = "ode_bdf (forward only: gradients of an integration need rodas5 or another method)",
        .forward = op_forward, .vjp = NULL, .ctx = c};
    ode_registry_add(&c->reg, c, ctx_release);
    remat_val ins[3];
    int n = 0;
    ins[n++] = y0;
    if (params != REMAT_NONE)
        ins[n++] = params;
    if (ts != REMAT_NONE)
        ins[n++] = remat_stop_gradient(f, ts);
    int64_t len = K * S + REMAT_ODE_STATS;
    remat_val all = remat_custom(f, &c->op, n, ins, REMAT_F64, 1, &len);
    remat_val rows = remat_slice(f, all, (int64_t[]){0}, (int64_t[]){K * S}, NULL);
    *y_at_outputs = remat_reshape(f, rows, 2, (int64_t[]){K, S});
    if (stats)
        *stats = remat_slice(f, all, (int64_t[]){K * S}, (int64_t[]){len}, NULL);
    if (remat_fn_status(f) != REMAT_OK) {
        *y_at_outputs = REMAT_NONE;
        if (stats)
            *stats = REMAT_NONE;
        return rmi_error(remat_fn_status(f), "ode bdf: %s", remat_fn_error(f));
    }
    return REMAT_OK;
}

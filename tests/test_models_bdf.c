/*
 * test_models_bdf.c — the variable-order BDF integrator (src/models/ode/bdf.c
 * over callbacks, bdf_mech.c over a mechanism, REMAT_ODE_BDF in a graph).
 *
 * References from outside the code under test: a linear stiff system's
 * closed form (with a t-dependent Prothero-Robinson component), and
 * Robertson's kinetics (examples/robertson) by adaptive Rodas5 at rtol
 * 1e-11. Reuse is counted (Jacobians far fewer than steps), rows between
 * steps are held to runs that end on them, and failures give their codes.
 */
#include "test_models_util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "models/ode/bdf.h"
#include "remat/remat.h"

/* ---- the linear stiff system in C ----
 *   y1' = -y1,  y2' = -1000 y2 + 999 y1,  y3' = -1e4 (y3 - cos t) - sin t
 * y1 = e^-t, y2 = e^-t + (y2(0) - 1) e^-1000t, y3 = cos t + (y3(0) - 1) e^-1e4t */
static int lin_rhs(void *ctx, double t, const double *y, double *f)
{
    int *calls = ctx;
    ++*calls;
    f[0] = -y[0];
    f[1] = -1000 * y[1] + 999 * y[0];
    f[2] = -1e4 * (y[2] - cos(t)) - sin(t);
    return 0;
}

static int lin_jac(void *ctx, double t, const double *y, double *J)
{
    (void)ctx, (void)t, (void)y;
    memset(J, 0, 9 * sizeof *J);
    J[0] = -1;
    J[3] = 999, J[4] = -1000;
    J[8] = -1e4;
    return 0;
}

static void lin_exact(double t, double *y)
{
    y[0] = exp(-t);
    y[1] = exp(-t) + (3.0 - 1) * exp(-1000 * t);
    y[2] = cos(t) + (0.0 - 1) * exp(-1e4 * t);
}

enum { LIN_K = 12 };

/* the worst error over the rows in units of the tolerance rtol |y| + atol */
static double lin_error(double rtol, remat_ode_bdf_stats *st)
{
    double y0[3] = {1, 3, 0}, t[LIN_K], ys[LIN_K * 3], worst = 0;
    for (int k = 0; k < LIN_K; k++)
        t[k] = 1e-4 * pow(10.0, 5.0 * k / (LIN_K - 1)); /* 1e-4 .. 10 */
    int calls = 0;
    rmi_bdf_problem p = {.n = 3, .rhs = lin_rhs, .jac = lin_jac, .ctx = &calls};
    rmi_bdf_options o = {.rtol = rtol, .atol = rtol * 1e-3};
    assert_ok(rmi_bdf_solve(&p, &o, 0.0, y0, LIN_K, t, ys, st));
    assert_int_equal(st->code, REMAT_ODE_BDF_DONE);
    assert_true(st->t == t[LIN_K - 1]);
    assert_int_equal(st->rhs_evals, calls);
    for (int k = 0; k < LIN_K; k++) {
        double e[3];
        lin_exact(t[k], e);
        for (int i = 0; i < 3; i++)
            worst = fmax(worst, fabs(ys[k * 3 + i] - e[i]) / (rtol * fabs(e[i]) + o.atol));
    }
    return worst;
}

/* against the closed form within a few tolerances, and converging as rtol shrinks */
static void test_models_bdf_linear_closed_form(void **state)
{
    (void)state;
    double rtols[3] = {1e-5, 1e-7, 1e-9}, err[3];
    remat_ode_bdf_stats st[3];
    for (int i = 0; i < 3; i++) {
        err[i] = lin_error(rtols[i], &st[i]);
        print_message("bdf linear rtol %g: error %.3g tolerances, %lld steps, %lld rejected, %lld newton fails, "
                      "%lld rhs, %lld jac, %lld lu\n",
                      rtols[i], err[i], (long long)st[i].steps, (long long)st[i].rejected,
                      (long long)st[i].newton_failures, (long long)st[i].rhs_evals, (long long)st[i].jacobians,
                      (long long)st[i].lu);
        assert_true(err[i] < 50.0); /* global error: the local test, accumulated over 250-700 steps */
        /* a constant Jacobian: renewed only by age (every 50 steps) */
        assert_true(st[i].jacobians <= 1 + st[i].steps / 50);
        assert_true(st[i].lu < st[i].steps);
    }
    /* the absolute error falls with rtol (by at least 10x over two decades) */
    assert_true(err[1] * rtols[1] < 0.1 * err[0] * rtols[0]);
    assert_true(err[2] * rtols[2] < 0.1 * err[1] * rtols[1]);
    assert_true(st[2].steps > st[0].steps);
}

/* y' = y^2, y(0) = 1 blows up at t = 1: the step collapses there, rows NaN */
static int blow_rhs(void *ctx, double t, const double *y, double *f)
{
    (void)ctx, (void)t;
    f[0] = y[0] * y[0];
    return 0;
}

static int blow_jac(void *ctx, double t, const double *y, double *J)
{
    (void)ctx, (void)t;
    J[0] = 2 * y[0];
    return 0;
}

static void test_models_bdf_failures(void **state)
{
    (void)state;
    rmi_bdf_problem p = {.n = 1, .rhs = blow_rhs, .jac = blow_jac};
    double y0 = 1, t[2] = {0.5, 2.0}, ys[2];
    remat_ode_bdf_stats st;
    rmi_bdf_options o = {.rtol = 1e-6, .atol = 1e-12, .max_steps = 100000};
    assert_ok(rmi_bdf_solve(&p, &o, 0.0, &y0, 2, t, ys, &st));
    assert_int_equal(st.code, REMAT_ODE_BDF_COLLAPSED);
    assert_true(st.t > 0.99 && st.t < 1.0);
    assert_close(ys[0], 2.0, 1e-4, 0); /* y(0.5) = 1/(1 - 0.5), reached before the blow-up */
    assert_true(isnan(ys[1]));
    /* max_steps: stops with its code and the time reached */
    o.max_steps = 20;
    assert_ok(rmi_bdf_solve(&p, &o, 0.0, &y0, 2, t, ys, &st));
    assert_int_equal(st.code, REMAT_ODE_BDF_MAX_STEPS);
    assert_int_equal(st.steps + st.rejected + st.newton_failures, 20);
    assert_true(st.t < 0.5 && isnan(ys[0]) && isnan(ys[1]));
    /* bad arguments are errors, not runs */
    double back[2] = {0.5, 0.4};
    assert_int_equal(rmi_bdf_solve(&p, &o, 0.0, &y0, 2, back, ys, &st), REMAT_ERR_VALUE);
    o.rtol = 0;
    assert_int_equal(rmi_bdf_solve(&p, &o, 0.0, &y0, 2, t, ys, &st), REMAT_ERR_VALUE);
}

/* ---- Robertson's kinetics through the mechanism ---- */

enum { ROB_K = 41 };
static const double ROB_Y0[3] = {1, 0, 0};

static remat_mechanism *robertson(void)
{
    remat_mechanism *m = NULL;
    assert_ok(remat_mechanism_parse_file(ROBERTSON_MECH, &m));
    return m;
}

static void rob_times(double *t)
{
    for (int i = 0; i < ROB_K; i++)
        t[i] = pow(10.0, -5.0 + (double)i / 4); /* 1e-5 .. 1e5 */
}

static remat_ode_options rob_opt(remat_ode_method method, double rtol, int K, const double *t)
{
    return (remat_ode_options){.method = method, .n_times = K, .times = t, .adaptive = true, .rtol = rtol,
                               .atol = rtol * 1e-6, .max_steps = 100000};
}

/* states within a few rtol of Rodas5 at 1e-11, error falling with rtol,
 * Jacobians reused (far fewer than the steps) */
static void test_models_bdf_robertson(void **state)
{
    (void)state;
    remat_mechanism *m = robertson();
    double t[ROB_K], ref[ROB_K * 3], ys[ROB_K * 3], k[3], stats[REMAT_ODE_STATS];
    remat_mechanism_param_values(m, k);
    rob_times(t);
    remat_ode_options ro = rob_opt(REMAT_ODE_RODAS5, 1e-11, ROB_K, t);
    assert_ok(remat_ode_run_once(m, &ro, ROB_Y0, k, NULL, NULL, ref, stats));
    assert_ok(remat_ode_stats_check(&ro, stats));
    double rtols[3] = {1e-6, 1e-8, 1e-10}, err[3];
    for (int r = 0; r < 3; r++) {
        remat_ode_options o = rob_opt(REMAT_ODE_BDF, rtols[r], ROB_K, t);
        remat_ode_bdf_stats st;
        assert_ok(remat_ode_bdf_run(m, &o, ROB_Y0, k, ys, &st));
        err[r] = 0;
        for (int i = 0; i < ROB_K * 3; i++)
            err[r] = fmax(err[r], fabs(ys[i] - ref[i]) / (fabs(ref[i]) + 1e-3 * (i % 3 == 1 ? 1e-4 : 1)));
        print_message("bdf robertson rtol %g: relative error %.3g, %lld steps, %lld rejected, %lld newton fails, "
                      "%lld rhs, %lld jacobians, %lld lu\n",
                      rtols[r], err[r], (long long)st.steps, (long long)st.rejected, (long long)st.newton_failures,
                      (long long)st.rhs_evals, (long long)st.jacobians, (long long)st.lu);
        assert_true(err[r] < 50 * rtols[r]);
        assert_true(st.jacobians * 5 < st.steps);
        assert_true(st.lu * 2 < st.steps);
        assert_true(st.rhs_evals < 3 * st.steps);
    }
    assert_true(err[1] < 0.1 * err[0] && err[2] < 0.1 * err[1]);
    remat_mechanism_free(m);
}

/* rows between steps (the interpolating polynomial) against runs that end on
 * their time, and the graph form (remat_ode_run_once) against the direct run */
static void test_models_bdf_rows_interpolated(void **state)
{
    (void)state;
    remat_mechanism *m = robertson();
    double t[ROB_K], ys[ROB_K * 3], k[3], stats[REMAT_ODE_STATS], g[ROB_K * 3];
    remat_mechanism_param_values(m, k);
    rob_times(t);
    remat_ode_options o = rob_opt(REMAT_ODE_BDF, 1e-9, ROB_K, t);
    remat_ode_bdf_stats all;
    assert_ok(remat_ode_bdf_run(m, &o, ROB_Y0, k, ys, &all));
    /* many rows, fewer steps than rows in the early decades: most rows are interpolated */
    int checked = 0;
    for (int i = 3; i < ROB_K - 1; i += 6) {
        remat_ode_options one = rob_opt(REMAT_ODE_BDF, 1e-9, 1, t + i);
        double y1[3];
        remat_ode_bdf_stats st;
        assert_ok(remat_ode_bdf_run(m, &one, ROB_Y0, k, y1, &st));
        assert_true(st.t == t[i]);
        for (int s = 0; s < 3; s++)
            assert_close(ys[i * 3 + s], y1[s], 2e-7, 1e-9 * (s == 1 ? 1e-4 : 1));
        checked++;
    }
    assert_true(checked >= 6);
    /* the same integration as a graph (one custom op): the same numbers */
    assert_ok(remat_ode_run_once(m, &o, ROB_Y0, k, NULL, NULL, g, stats));
    assert_ok(remat_ode_stats_check(&o, stats));
    assert_true(stats[REMAT_ODE_STAT_ACCEPTED] == (double)all.steps);
    assert_true(stats[REMAT_ODE_STAT_T] == t[ROB_K - 1]);
    for (int i = 0; i < ROB_K * 3; i++)
        assert_close(g[i], ys[i], 1e-12, 1e-300);
    /* the times as a value of the graph (remat_ode_integrate_times): one program, any times of that length */
    remat_fn *f = remat_fn_new("bdf_times");
    int64_t S = 3, P = 3, K = ROB_K;
    remat_val y0 = remat_arg(f, "y0", REMAT_F64, 1, &S), p = remat_arg(f, "k", REMAT_F64, 1, &P);
    remat_val tv = remat_arg(f, "t", REMAT_F64, 1, &K), out, sv;
    assert_ok(remat_ode_integrate_times(f, m, &o, y0, p, tv, &out, &sv));
    remat_fn_output(f, out);
    remat_fn_output(f, sv);
    remat_program *prog = compile_ok(f);
    double y0v[3] = {1, 0, 0}, half[ROB_K], hy[ROB_K * 3];
    run(prog, (double *[]){y0v, k, t}, (double *[]){g, stats}, NULL);
    for (int i = 0; i < ROB_K * 3; i++)
        assert_close(g[i], ys[i], 1e-12, 1e-300);
    for (int i = 0; i < ROB_K; i++)
        half[i] = t[i] / 2;
    run(prog, (double *[]){y0v, k, half}, (double *[]){g, stats}, NULL);
    remat_ode_options oh = rob_opt(REMAT_ODE_BDF, 1e-9, ROB_K, half);
    assert_ok(remat_ode_bdf_run(m, &oh, ROB_Y0, k, hy, NULL));
    for (int i = 0; i < ROB_K * 3; i++)
        assert_close(g[i], hy[i], 1e-12, 1e-300);
    assert_true(fabs(g[(ROB_K - 1) * 3] - ys[(ROB_K - 1) * 3]) > 1e-3); /* other times, other states */
    remat_program_free(prog);
    remat_fn_free(f);
    remat_mechanism_free(m);
}

/* what bdf refuses, each with a message naming it */
static void test_models_bdf_refusals(void **state)
{
    (void)state;
    remat_mechanism *m = robertson();
    double t = 1.0, k[3], y[3], stats[REMAT_ODE_STATS];
    remat_mechanism_param_values(m, k);
    remat_ode_method meth;
    assert_ok(remat_ode_method_parse("bdf", &meth));
    assert_int_equal(meth, REMAT_ODE_BDF);
    assert_string_equal(remat_ode_method_name(REMAT_ODE_BDF), "bdf");
    assert_true(remat_ode_method_adaptive(REMAT_ODE_BDF));
    assert_int_equal(remat_ode_method_order(REMAT_ODE_BDF), 5);
    /* fixed steps */
    remat_ode_options o = {.method = REMAT_ODE_BDF, .n_times = 1, .times = &t, .steps = 10};
    assert_int_equal(remat_ode_run_once(m, &o, ROB_Y0, k, NULL, NULL, y, NULL), REMAT_ERR_ARG);
    assert_non_null(strstr(remat_last_error(), "bdf"));
    assert_non_null(strstr(remat_last_error(), "adaptive only"));
    assert_null(remat_ode_step_body(m, REMAT_ODE_BDF, REMAT_F64));
    /* a continuous adjoint */
    o = rob_opt(REMAT_ODE_BDF, 1e-6, 1, &t);
    o.adjoint = REMAT_ODE_ADJOINT_INTERPOLATING;
    assert_int_equal(remat_ode_run_once(m, &o, ROB_Y0, k, NULL, NULL, y, NULL), REMAT_ERR_ARG);
    assert_non_null(strstr(remat_last_error(), "rodas5"));
    /* reverse mode through the integration */
    o.adjoint = REMAT_ODE_ADJOINT_DISCRETE;
    remat_fn *f = weighted_loss_fn(m, &o, (double[]){1, 1, 1}), *g = NULL;
    assert_non_null(f);
    assert_int_not_equal(remat_grad(f, 1, (int[]){1}, &g), REMAT_OK);
    assert_non_null(strstr(remat_last_error(), "bdf"));
    assert_non_null(strstr(remat_last_error(), "rodas5"));
    remat_fn_free(f);
    /* max_steps: the run's status names it, the rows are NaN */
    o.max_steps = 5;
    assert_int_equal(remat_ode_bdf_run(m, &o, ROB_Y0, k, y, NULL), REMAT_ERR_VALUE);
    assert_non_null(strstr(remat_last_error(), "max_steps"));
    assert_ok(remat_ode_run_once(m, &o, ROB_Y0, k, NULL, NULL, y, stats));
    assert_true(stats[REMAT_ODE_STAT_CODE] == 1 && isnan(y[0]));
    assert_int_equal(remat_ode_stats_check(&o, stats), REMAT_ERR_VALUE);
    remat_mechanism_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_models_bdf_linear_closed_form),
        cmocka_unit_test(test_models_bdf_failures),
        cmocka_unit_test(test_models_bdf_robertson),
        cmocka_unit_test(test_models_bdf_rows_interpolated),
        cmocka_unit_test(test_models_bdf_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

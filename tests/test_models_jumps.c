/*
 * test_models_jumps.c — adaptive steps ending on the right-hand side's jumps
 * (remat_ode_options.jump_ts, diffrax's PIDController(jump_ts=...)), the
 * control profiles' knots that adaptive fits pass (remat/fit.h).
 *
 * x' = -T(t) x with T piecewise constant on [0, 1), [1, 2]: x(t) =
 * exp(-T0 t) before the knot, exp(-T0 - T1 (t - 1)) after, so the rows and
 * their gradients with respect to (T0, T1) are known in closed form. A step
 * across the knot evaluates some stages on either side; its error estimate
 * may still pass it, and the gradient then splits between T0 and T1 as the
 * stages fell, not as the time spent on each side.
 */
#include "test_models_util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "remat/remat.h"

static const char *const JUMP = "indep t\nspecies x\nx' = -T * x\ncontrol T(t) piecewise 2 over [0, 2] in [0, 5] start 1\n";
static const double TS[3] = {0.5, 1.5, 2.0}, W[3] = {1.0, -2.0, 3.0}, TV[2] = {1.3, 0.4};

static void exact(double *v, double g[2])
{
    *v = 0, g[0] = g[1] = 0;
    for (int i = 0; i < 3; i++) {
        double t = TS[i];
        double x = t <= 1 ? exp(-TV[0] * t) : exp(-TV[0] - TV[1] * (t - 1));
        *v += W[i] * x;
        g[0] += W[i] * x * -(t <= 1 ? t : 1.0);
        g[1] += W[i] * x * -(t <= 1 ? 0.0 : t - 1);
    }
}

/* sum_i W_i x(TS_i) and its gradient in (T0, T1), times as a value (the
 * fits' dense-output programs) */
static void run_case(const remat_mechanism *m, remat_ode_method method, double rtol, const double *jumps, int nj,
                     remat_ode_adjoint adj, double *v, double g[2], double stats[REMAT_ODE_STATS])
{
    remat_ode_options o = {.method = method, .adaptive = true, .rtol = rtol, .atol = rtol * 1e-3, .n_jumps = nj,
                           .jump_ts = jumps, .adjoint = adj};
    double x0[1] = {1};
    for (int pass = 0; pass < 2; pass++) { /* the value and gradient, then the stats */
        remat_fn *f = remat_fn_new("jumps"), *gf = NULL;
        remat_val y0 = remat_arg(f, "y0", REMAT_F64, 1, (int64_t[]){1});
        remat_val p = remat_arg(f, "T", REMAT_F64, 1, (int64_t[]){2});
        remat_val ts = remat_arg(f, "times", REMAT_F64, 1, (int64_t[]){3}), ys, st;
        assert_ok(remat_ode_integrate_times(f, m, &o, y0, p, ts, &ys, &st));
        remat_val w = remat_const_data(f, REMAT_F64, 2, (int64_t[]){3, 1}, W);
        remat_fn_output(f, pass ? st : remat_sum_all(f, remat_mul(f, ys, w)));
        if (!pass)
            assert_ok(remat_value_and_grad(f, 1, (int[]){1}, &gf));
        remat_program *prog = compile_ok(pass ? f : gf);
        if (pass)
            run(prog, (double *[]){x0, (double *)TV, (double *)TS}, (double *[]){stats}, NULL);
        else
            run(prog, (double *[]){x0, (double *)TV, (double *)TS}, (double *[]){v, g}, NULL);
        remat_program_free(prog);
        remat_fn_free(gf);
        remat_fn_free(f);
    }
}

static void test_jumps_end_steps_on_knots(void **state)
{
    (void)state;
    remat_mechanism *m = parse(JUMP);
    double kn[4];
    assert_int_equal(remat_mechanism_control_knots(m, kn, 4), 1);
    assert_true(kn[0] == 1.0);
    double ve, ge[2];
    exact(&ve, ge);
    const remat_ode_method methods[2] = {REMAT_ODE_TSIT5, REMAT_ODE_RODAS5};
    for (int q = 0; q < 2; q++) {
        double worst[2] = {0, 0}, verr[2] = {0, 0};
        for (int j = 0; j < 2; j++) {
            double v, g[2], st[REMAT_ODE_STATS];
            run_case(m, methods[q], 1e-6, j ? kn : NULL, j, REMAT_ODE_ADJOINT_DISCRETE, &v, g, st);
            assert_true(st[REMAT_ODE_STAT_CODE] == 0);
            worst[j] = fmax(fabs(g[0] - ge[0]) / fabs(ge[0]), fabs(g[1] - ge[1]) / fabs(ge[1]));
            printf("  %s rtol 1e-6 %s jump_ts: value %.10g (exact %.10g), dT0 %.8g dT1 %.8g (exact %.8g %.8g), "
                   "%.0f accepted %.0f rejected: gradient off by %.2g\n",
                   remat_ode_method_name(methods[q]), j ? "with" : "without", v, ve, g[0], g[1], ge[0], ge[1],
                   st[REMAT_ODE_STAT_ACCEPTED], st[REMAT_ODE_STAT_REJECTED], worst[j]);
            verr[j] = fabs(v - ve) / ve;
        }
        /* ending on the knot: the value to the tolerance (tsit5 1e-10,
         * rodas5 1.4e-6, against 1.1e-5 and 5.4e-5 across it) and the
         * gradient to the dense interpolant's error (order 4 / 3) */
        assert_true(verr[1] < 2e-6);
        assert_true(verr[0] > 10 * verr[1]);
        assert_true(worst[1] < (q ? 3e-4 : 2e-5));
        assert_true(worst[0] > 2 * worst[1]);
    }
    remat_mechanism_free(m);
}

/* The interpolating adjoint recomputes the forward with the same jumps */
static void test_jumps_interpolating_adjoint(void **state)
{
    (void)state;
    remat_mechanism *m = parse(JUMP);
    double kn[1] = {1.0}, ve, ge[2], v, g[2], st[REMAT_ODE_STATS];
    exact(&ve, ge);
    run_case(m, REMAT_ODE_TSIT5, 1e-8, kn, 1, REMAT_ODE_ADJOINT_INTERPOLATING, &v, g, st);
    printf("  interpolating, jump_ts: dT0 %.10g dT1 %.10g (exact %.10g %.10g)\n", g[0], g[1], ge[0], ge[1]);
    assert_close(g[0], ge[0], 1e-6, 0);
    assert_close(g[1], ge[1], 1e-6, 0);
    remat_mechanism_free(m);
}

static void test_jumps_bad_options(void **state)
{
    (void)state;
    remat_mechanism *m = parse(JUMP);
    double bad[1] = {NAN};
    remat_ode_options o = {.method = REMAT_ODE_TSIT5, .adaptive = true, .rtol = 1e-6, .n_times = 1,
                           .times = (double[]){2.0}, .n_jumps = 1, .jump_ts = bad};
    remat_fn *f = remat_fn_new("bad");
    remat_val y0 = remat_arg(f, "y0", REMAT_F64, 1, (int64_t[]){1});
    remat_val p = remat_arg(f, "T", REMAT_F64, 1, (int64_t[]){2}), ys;
    assert_int_equal(remat_ode_integrate(f, m, &o, y0, p, &ys), REMAT_ERR_VALUE);
    assert_non_null(strstr(remat_last_error(), "jump_ts[0] = nan is not finite"));
    o.jump_ts = NULL;
    assert_int_equal(remat_ode_integrate(f, m, &o, y0, p, &ys), REMAT_ERR_VALUE);
    assert_non_null(strstr(remat_last_error(), "n_jumps = 1 needs jump_ts"));
    remat_fn_free(f);
    remat_mechanism_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_jumps_end_steps_on_knots),
        cmocka_unit_test(test_jumps_interpolating_adjoint),
        cmocka_unit_test(test_jumps_bad_options),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_models_robertson.c — Rodas5 on Robertson's stiff kinetics (the shipped
 * examples/robertson/robertson.mech) to t = 1e5 against SUNDIALS CVODES
 * (bench/robertson_cvodes.c): states against BDF at rtol 1e-12, and the
 * gradient of L = A(T) + 1e4 B(T) with respect to (k1, k2, k3) against the
 * CVODES adjoint (CVodeB with the parameter quadrature) at rtol 1e-12.
 *
 * The issue asks for remat at rtol 1e-8: adaptive Rodas5 at rtol 1e-8 is
 * the last case. The other cases hold fixed steps to the same bar: output
 * times log-spaced 4 per decade from 1e-5 to 1e5 and 10 equal Rodas5 steps
 * in each interval (410 steps, growing geometrically with t as an adaptive
 * controller's would), fine enough to meet the same 1e-6 (states) and 1e-5
 * (gradient) relative accuracy; with 2 steps per interval it does not (a
 * case shows the comparison has teeth).
 */
#include "test_models_util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "remat/remat.h"
#include "robertson_cvodes.h"

enum { PER_DECADE = 4, N_OUT = 10 * PER_DECADE + 1 };
static const double K[3] = {0.04, 3e7, 1e4}, W[3] = {1.0, 1e4, 0.0};

static void out_times(double *t)
{
    for (int i = 0; i < N_OUT; i++)
        t[i] = pow(10.0, -5.0 + (double)i / PER_DECADE);
}

static remat_mechanism *robertson(void)
{
    remat_mechanism *m = NULL;
    assert_ok(remat_mechanism_parse_file(ROBERTSON_MECH, &m));
    double p[3];
    remat_mechanism_param_values(m, p);
    assert_memory_equal(p, K, sizeof p);
    return m;
}

/* states (N_OUT, 3) of y(0) = (1, 0, 0), steps equal steps per interval */
static void remat_states(int64_t steps, double *ys)
{
    remat_mechanism *m = robertson();
    double t[N_OUT], y0[3] = {1, 0, 0}, k[3];
    memcpy(k, K, sizeof k);
    out_times(t);
    remat_ode_options opt = {.method = REMAT_ODE_RODAS5, .n_times = N_OUT, .times = t, .steps = steps};
    remat_fn *f = remat_fn_new("robertson");
    remat_val a = remat_arg(f, "y0", REMAT_F64, 1, (int64_t[]){3});
    remat_val p = remat_arg(f, "k", REMAT_F64, 1, (int64_t[]){3}), out;
    assert_ok(remat_ode_integrate(f, m, &opt, a, p, &out));
    remat_fn_output(f, out);
    remat_program *prog = compile_ok(f);
    run(prog, (double *[]){y0, k}, (double *[]){ys}, NULL);
    remat_program_free(prog);
    remat_fn_free(f);
    remat_mechanism_free(m);
}

static double worst_state_error(const double *got, const double *want)
{
    double worst = 0;
    for (int i = 0; i < 3 * N_OUT; i++)
        if (want[i] != 0.0)
            worst = fmax(worst, fabs(got[i] - want[i]) / fabs(want[i]));
    return worst;
}

static void cvodes_reference(double *ys, double *grad)
{
    double t[N_OUT];
    out_times(t);
    rob_cv *cv = rob_cv_new(1e-12);
    assert_non_null(cv);
    assert_int_equal(rob_cv_run(cv, K, N_OUT, t, ys, W, grad), 0);
    rob_cv_free(cv);
}

static void test_models_robertson_states_match_cvodes_bdf(void **state)
{
    (void)state;
    double want[3 * N_OUT], got[3 * N_OUT], g[3];
    cvodes_reference(want, g);
    remat_states(10, got);
    double worst = worst_state_error(got, want);
    printf("  rodas5, 10 steps per interval: worst relative state error %.3g over %d outputs\n", worst, N_OUT);
    assert_true(worst <= 1e-6);
    /* B peaks near 3.6e-5 around t = 0.02-0.04 and the mass is conserved */
    for (int i = 0; i < N_OUT; i++)
        assert_close(got[3 * i] + got[3 * i + 1] + got[3 * i + 2], 1.0, 1e-12, 0);
}

/* dL/dk through the whole integration: checkpointed (binomial:8 on every
 * interval's scan, intervals re-run from their input state), equal bit for
 * bit to store-all, and within 1e-5 of the CVODES adjoint. */
static void test_models_robertson_gradient_matches_cvodes_adjoint(void **state)
{
    (void)state;
    double want_y[3 * N_OUT], want[3];
    cvodes_reference(want_y, want);
    remat_mechanism *m = robertson();
    double t[N_OUT], y0[3] = {1, 0, 0}, k[3], got[2][3];
    memcpy(k, K, sizeof k);
    out_times(t);
    for (int s = 0; s < 2; s++) {
        remat_ode_options opt = {.method = REMAT_ODE_RODAS5, .n_times = N_OUT, .times = t, .steps = 10};
        if (s)
            opt.scan.schedule = (remat_schedule_spec){.kind = REMAT_SCHED_BINOMIAL, .snapshots = 8};
        else
            opt.keep_interval_stores = true;
        remat_fn *f = remat_fn_new("robertson_loss"), *g;
        remat_val a = remat_arg(f, "y0", REMAT_F64, 1, (int64_t[]){3});
        remat_val p = remat_arg(f, "k", REMAT_F64, 1, (int64_t[]){3}), ys;
        assert_ok(remat_ode_integrate(f, m, &opt, a, p, &ys));
        remat_val w = remat_const_data(f, REMAT_F64, 1, (int64_t[]){3}, W);
        remat_fn_output(f, remat_sum(f, remat_mul(f, remat_index(f, ys, N_OUT - 1), w), 1, (int[]){0}));
        assert_ok(remat_grad(f, 1, (int[]){1}, &g));
        remat_program *prog = compile_ok(g);
        run(prog, (double *[]){y0, k}, (double *[]){got[s]}, NULL);
        remat_program_free(prog);
        remat_fn_free(g);
        remat_fn_free(f);
    }
    assert_memory_equal(got[0], got[1], sizeof got[0]); /* contract 3 */
    for (int c = 0; c < 3; c++) {
        printf("  dL/dk%d: remat %.12g, CVODES %.12g (rel %.2g)\n", c + 1, got[1][c], want[c],
               fabs(got[1][c] - want[c]) / fabs(want[c]));
        assert_close(got[1][c], want[c], 1e-5, 0);
    }
    remat_mechanism_free(m);
}

/* The same comparison on a grid 5x coarser misses 1e-6: the tolerance is
 * one the fixed grid has to earn. */
static void test_models_robertson_coarse_grid_misses_the_tolerance(void **state)
{
    (void)state;
    double want[3 * N_OUT], got[3 * N_OUT], g[3];
    cvodes_reference(want, g);
    remat_states(2, got);
    double worst = worst_state_error(got, want);
    printf("  rodas5, 2 steps per interval: worst relative state error %.3g\n", worst);
    assert_true(worst > 1e-6);
}

/* Adaptive Rodas5 (opt.adaptive, the PID controller of adaptive_step.c)
 * at rtol 1e-8, the setting, through the same 41 output times:
 * states within 1e-6 of CVODES at 1e-12 and dL/dk within 1e-5 of its
 * adjoint, the gradient the same bits under binomial:8 as under store-all. */
static void test_models_robertson_adaptive_rodas5_matches_cvodes(void **state)
{
    (void)state;
    double want_y[3 * N_OUT], want_g[3];
    cvodes_reference(want_y, want_g);
    remat_mechanism *m = robertson();
    double t[N_OUT], y0[3] = {1, 0, 0}, k[3], ys_got[3 * N_OUT], stats[REMAT_ODE_STATS], g[2][3];
    memcpy(k, K, sizeof k);
    out_times(t);
    for (int s = 0; s < 2; s++) {
        remat_ode_options opt = {.method = REMAT_ODE_RODAS5, .n_times = N_OUT, .times = t, .adaptive = true,
                                 .rtol = 1e-8, .atol = 1e-14};
        if (s)
            opt.scan.schedule = (remat_schedule_spec){.kind = REMAT_SCHED_BINOMIAL, .snapshots = 8};
        remat_fn *f = remat_fn_new("robertson_adaptive"), *gf;
        remat_val a = remat_arg(f, "y0", REMAT_F64, 1, (int64_t[]){3});
        remat_val p = remat_arg(f, "k", REMAT_F64, 1, (int64_t[]){3}), ys, st;
        assert_ok(remat_ode_integrate_stats(f, m, &opt, a, p, &ys, &st));
        remat_val w = remat_const_data(f, REMAT_F64, 1, (int64_t[]){3}, W);
        remat_fn_output(f, remat_sum(f, remat_mul(f, remat_index(f, ys, N_OUT - 1), w), 1, (int[]){0}));
        if (s == 0) {
            remat_fn *states = remat_fn_new("robertson_adaptive_states");
            remat_val a2 = remat_arg(states, "y0", REMAT_F64, 1, (int64_t[]){3});
            remat_val p2 = remat_arg(states, "k", REMAT_F64, 1, (int64_t[]){3}), ys2, st2;
            assert_ok(remat_ode_integrate_stats(states, m, &opt, a2, p2, &ys2, &st2));
            remat_fn_output(states, ys2);
            remat_fn_output(states, st2);
            remat_program *ps = compile_ok(states);
            run(ps, (double *[]){y0, k}, (double *[]){ys_got, stats}, NULL);
            assert_ok(remat_ode_stats_check(&opt, stats));
            double worst = worst_state_error(ys_got, want_y);
            printf("  adaptive rodas5 rtol 1e-8: %.0f accepted, %.0f rejected steps, worst relative state error "
                   "%.3g\n", stats[REMAT_ODE_STAT_ACCEPTED], stats[REMAT_ODE_STAT_REJECTED], worst);
            assert_true(worst <= 1e-6);
            remat_program_free(ps);
            remat_fn_free(states);
        }
        assert_ok(remat_grad(f, 1, (int[]){1}, &gf));
        remat_program *prog = compile_ok(gf);
        run(prog, (double *[]){y0, k}, (double *[]){g[s]}, NULL);
        remat_program_free(prog);
        remat_fn_free(gf);
        remat_fn_free(f);
    }
    assert_memory_equal(g[0], g[1], sizeof g[0]); /* contract 3 */
    for (int c = 0; c < 3; c++) {
        printf("  adaptive dL/dk%d: remat %.12g, CVODES %.12g (rel %.2g)\n", c + 1, g[0][c], want_g[c],
               fabs(g[0][c] - want_g[c]) / fabs(want_g[c]));
        assert_close(g[0][c], want_g[c], 1e-5, 0);
    }
    remat_mechanism_free(m);
}

/* The continuous adjoint against CVODES's (CVodeB interpolates the
 * forward from checkpoints; so does REMAT_ODE_ADJOINT_INTERPOLATING):
 * adaptive Rodas5 forward and backward at rtol 1e-8, dL/dk within 1e-5 of
 * CVODES's (measured 6e-7). The backsolve adjoint, which integrates y
 * backwards, gives NaN on this problem (remat/ode.h): the case shows what
 * the interpolation buys. */
static void test_models_robertson_interpolating_adjoint_matches_cvodes(void **state)
{
    (void)state;
    double want_y[3 * N_OUT], want[3];
    cvodes_reference(want_y, want);
    remat_mechanism *m = robertson();
    double t[N_OUT], y0[3] = {1, 0, 0}, k[3];
    memcpy(k, K, sizeof k);
    out_times(t);
    for (int c = 0; c < 2; c++) {
        remat_ode_options opt = {.method = REMAT_ODE_RODAS5, .n_times = N_OUT, .times = t, .adaptive = true,
                                 .rtol = 1e-8, .atol = 1e-14,
                                 .adjoint = c ? REMAT_ODE_ADJOINT_BACKSOLVE : REMAT_ODE_ADJOINT_INTERPOLATING};
        remat_fn *f = remat_fn_new("robertson_interpolating"), *gf;
        remat_val a = remat_arg(f, "y0", REMAT_F64, 1, (int64_t[]){3});
        remat_val p = remat_arg(f, "k", REMAT_F64, 1, (int64_t[]){3}), ys;
        assert_ok(remat_ode_integrate(f, m, &opt, a, p, &ys));
        remat_val w = remat_const_data(f, REMAT_F64, 1, (int64_t[]){3}, W);
        remat_fn_output(f, remat_sum(f, remat_mul(f, remat_index(f, ys, N_OUT - 1), w), 1, (int[]){0}));
        assert_ok(remat_grad(f, 1, (int[]){1}, &gf));
        remat_program *prog = compile_ok(gf);
        double g[3];
        run(prog, (double *[]){y0, k}, (double *[]){g}, NULL);
        for (int i = 0; i < 3; i++) {
            printf("  adaptive %s dL/dk%d: remat %.12g, CVODES %.12g (rel %.2g)\n",
                   remat_ode_adjoint_name(opt.adjoint), i + 1, g[i], want[i], fabs(g[i] - want[i]) / fabs(want[i]));
            if (c == 0)
                assert_close(g[i], want[i], 1e-5, 0);
            else
                assert_true(isnan(g[i]));
        }
        remat_program_free(prog);
        remat_fn_free(gf);
        remat_fn_free(f);
    }
    remat_mechanism_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_models_robertson_states_match_cvodes_bdf),
        cmocka_unit_test(test_models_robertson_gradient_matches_cvodes_adjoint),
        cmocka_unit_test(test_models_robertson_coarse_grid_misses_the_tolerance),
        cmocka_unit_test(test_models_robertson_adaptive_rodas5_matches_cvodes),
        cmocka_unit_test(test_models_robertson_interpolating_adjoint_matches_cvodes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

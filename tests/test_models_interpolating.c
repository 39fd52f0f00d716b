/*
 * test_models_interpolating.c — the interpolating (checkpointed) continuous
 * adjoint (remat/ode.h, REMAT_ODE_ADJOINT_INTERPOLATING), CVODES's CVodeB
 * scheme: the forward is recomputed from checkpoints and y interpolated,
 * never integrated backwards. (Robertson against CVODES's adjoint is in
 * test_models_robertson.c.)
 *
 * Expectations from outside the code under test: seed 004 §8's printed
 * digits and the closed form of A->B->C, the backsolve adjoint on a
 * non-stiff problem (the same continuous adjoint, solved another way),
 * central finite differences of the forward integration in f64.
 */
#include "test_models_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remat/remat.h"

static const double C0[3] = {1, 0, 0}, K12[2] = {1.0, 0.5}, T_END[1] = {10.0};

/* d(-C_B(T))/d(C0, k) under opt: g[0..3) for C0, g[3..5) for k */
static void grad_at(const remat_mechanism *m, const remat_ode_options *opt, const double *k, double g[5])
{
    remat_fn *f = neg_cb_fn(m, opt), *gf;
    assert_ok(remat_grad(f, 2, (int[]){0, 1}, &gf));
    remat_program *p = compile_ok(gf);
    run(p, (double *[]){(double *)C0, (double *)k}, (double *[]){g, g + 3}, NULL);
    remat_program_free(p);
    remat_fn_free(gf);
    remat_fn_free(f);
}

static double value_at(const remat_mechanism *m, const remat_ode_options *opt, const double *k)
{
    remat_fn *f = neg_cb_fn(m, opt);
    remat_program *p = compile_ok(f);
    double v;
    run(p, (double *[]){(double *)C0, (double *)k}, (double *[]){&v}, NULL);
    remat_program_free(p);
    remat_fn_free(f);
    return v;
}

static remat_ode_options opts(remat_ode_method method, double dt, remat_ode_adjoint adj)
{
    return (remat_ode_options){.method = method, .n_times = 1, .times = T_END, .dt = dt, .adjoint = adj};
}

static remat_ode_options adaptive(remat_ode_method method, double rtol, remat_ode_adjoint adj)
{
    return (remat_ode_options){.method = method, .n_times = 1, .times = T_END, .adaptive = true, .rtol = rtol,
                               .atol = rtol * 1e-3, .adjoint = adj};
}

/* seed 004 §8: Tsit5, dt 0.01 on [0, 10]: C_B 0.013385, dC_B/dk1 -0.012477,
 * dC_B/dk2 -0.107989, and the closed form to 1e-7 (the Hermite interpolant
 * of y is order 3: h^4 = 1e-8) */
static void test_interpolating_tsit5_seed(void **state)
{
    (void)state;
    remat_mechanism *m = parse(ABC);
    remat_ode_options o = opts(REMAT_ODE_TSIT5, 0.01, REMAT_ODE_ADJOINT_INTERPOLATING);
    double g[5], B, dk1, dk2;
    grad_at(m, &o, K12, g);
    double v = value_at(m, &o, K12);
    printf("  tsit5 interpolating: C_B %.17g dk1 %.17g dk2 %.17g\n", -v, -g[3], -g[4]);
    assert_printed("%.6f", -v, "0.013385");
    assert_printed("%.6f", -g[3], "-0.012477");
    assert_printed("%.6f", -g[4], "-0.107989");
    abc_exact(10.0, 1.0, 0.5, &B, &dk1, &dk2);
    assert_close(-g[3], dk1, 1e-7, 0);
    assert_close(-g[4], dk2, 1e-7, 0);
    assert_close(-g[0], B, 1e-7, 0);
    assert_close(-g[1], exp(-5.0), 1e-7, 0);
    assert_close(g[2], 0.0, 0, 1e-12);
    remat_mechanism_free(m);
}

/* On a non-stiff problem both continuous adjoints solve the same adjoint
 * ODE: fixed RK4 and Tsit5 (dt 0.01) and adaptive Tsit5, Dopri5 and Rodas5
 * (rtol 1e-8) agree with backsolve within 1e-6 relative */
static void test_interpolating_agrees_with_backsolve(void **state)
{
    (void)state;
    remat_mechanism *m = parse(ABC);
    remat_ode_options cases[][2] = {
        {opts(REMAT_ODE_RK4, 0.01, REMAT_ODE_ADJOINT_INTERPOLATING), opts(REMAT_ODE_RK4, 0.01, REMAT_ODE_ADJOINT_BACKSOLVE)},
        {opts(REMAT_ODE_RODAS5, 0.01, REMAT_ODE_ADJOINT_INTERPOLATING),
         opts(REMAT_ODE_RODAS5, 0.01, REMAT_ODE_ADJOINT_BACKSOLVE)},
        {adaptive(REMAT_ODE_TSIT5, 1e-8, REMAT_ODE_ADJOINT_INTERPOLATING),
         adaptive(REMAT_ODE_TSIT5, 1e-8, REMAT_ODE_ADJOINT_BACKSOLVE)},
        {adaptive(REMAT_ODE_DOPRI5, 1e-8, REMAT_ODE_ADJOINT_INTERPOLATING),
         adaptive(REMAT_ODE_DOPRI5, 1e-8, REMAT_ODE_ADJOINT_BACKSOLVE)},
        {adaptive(REMAT_ODE_RODAS5, 1e-8, REMAT_ODE_ADJOINT_INTERPOLATING),
         adaptive(REMAT_ODE_RODAS5, 1e-8, REMAT_ODE_ADJOINT_BACKSOLVE)},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        double gi[5], gb[5];
        grad_at(m, &cases[c][0], K12, gi);
        grad_at(m, &cases[c][1], K12, gb);
        printf("  %s%s: interpolating dk1 %.12g dk2 %.12g, backsolve %.12g %.12g\n",
               cases[c][0].adaptive ? "adaptive " : "", remat_ode_method_name(cases[c][0].method), -gi[3], -gi[4],
               -gb[3], -gb[4]);
        for (int i = 0; i < 5; i++)
            assert_close(gi[i], gb[i], 1e-6, 1e-10);
    }
    remat_mechanism_free(m);
}

/* The adaptive gradient's error follows rtol: against the closed form at
 * rtol 1e-4, 1e-6, 1e-8 it shrinks, and is below 1e-6 at 1e-8 */
static void test_interpolating_adaptive_converges(void **state)
{
    (void)state;
    remat_mechanism *m = parse(ABC);
    double B, dk1, dk2, prev = INFINITY;
    abc_exact(10.0, 1.0, 0.5, &B, &dk1, &dk2);
    for (int i = 0; i < 3; i++) {
        double rtol = pow(10.0, -4 - 2 * i), g[5];
        remat_ode_options o = adaptive(REMAT_ODE_TSIT5, rtol, REMAT_ODE_ADJOINT_INTERPOLATING);
        grad_at(m, &o, K12, g);
        double err = fabs(-g[3] - dk1) + fabs(-g[4] - dk2);
        printf("  adaptive tsit5 rtol %g: |interpolating - exact| = %.3g\n", rtol, err);
        assert_true(err < prev);
        prev = err;
    }
    assert_true(prev < 1e-6);
    remat_mechanism_free(m);
}

/* Central differences of the forward integration, several output times
 * (the cotangent of every row enters lambda when the backward solve reaches
 * it; times[0] == t0 is y0 itself) and a loss reading all of them */
static void test_interpolating_finite_differences(void **state)
{
    (void)state;
    remat_mechanism *m = parse(ABC);
    static const double times[4] = {0.0, 1.0, 2.5, 7.0};
    const remat_ode_method methods[2] = {REMAT_ODE_RK4, REMAT_ODE_RODAS5};
    for (int a = 0; a < 4; a++) {
        remat_ode_options o = {.method = methods[a & 1], .n_times = 4, .times = times, .dt = 0.005,
                               .adjoint = REMAT_ODE_ADJOINT_INTERPOLATING};
        if (a >= 2)
            o = (remat_ode_options){.method = a == 2 ? REMAT_ODE_TSIT5 : REMAT_ODE_RODAS5, .n_times = 4,
                                    .times = times, .adaptive = true, .rtol = 1e-10, .atol = 1e-12,
                                    .adjoint = REMAT_ODE_ADJOINT_INTERPOLATING};
        remat_fn *f = remat_fn_new("rows"), *gf;
        remat_val y0 = remat_arg(f, "y0", REMAT_F64, 1, (int64_t[]){3});
        remat_val k = remat_arg(f, "k", REMAT_F64, 1, (int64_t[]){2}), ys;
        assert_ok(remat_ode_integrate(f, m, &o, y0, k, &ys));
        static const double w[12] = {0.3, -1, 2, 1, 0.5, -0.25, 0, 3, 1, -2, 1, 0.7};
        remat_val wv = remat_const_data(f, REMAT_F64, 2, (int64_t[]){4, 3}, w);
        remat_fn_output(f, remat_sum_all(f, remat_mul(f, ys, wv)));
        assert_ok(remat_grad(f, 2, (int[]){0, 1}, &gf));
        remat_program *pv = compile_ok(f), *pg = compile_ok(gf);
        double y[3] = {1, 0.2, 0.1}, kk[2] = {1.0, 0.5}, g[5];
        run(pg, (double *[]){y, kk}, (double *[]){g, g + 3}, NULL);
        for (int i = 0; i < 5; i++) {
            double *x = i < 3 ? &y[i] : &kk[i - 3], x0 = *x, e = 1e-6, vp, vm;
            *x = x0 + e;
            run(pv, (double *[]){y, kk}, (double *[]){&vp}, NULL);
            *x = x0 - e;
            run(pv, (double *[]){y, kk}, (double *[]){&vm}, NULL);
            *x = x0;
            double fd = (vp - vm) / (2 * e);
            printf("  %s%s d/dx%d: interpolating %.10g, central difference %.10g\n", o.adaptive ? "adaptive " : "",
                   remat_ode_method_name(o.method), i, g[i], fd);
            assert_close(g[i], fd, 1e-6, 1e-8);
        }
        remat_program_free(pv);
        remat_program_free(pg);
        remat_fn_free(gf);
        remat_fn_free(f);
    }
    remat_mechanism_free(m);
}

/* Bounded memory: 64 checkpoints whatever the step count; 20000 Euler
 * steps (a segment of at most 2 * 20000 / 64 + 1 steps is live) give the
 * closed form's gradient to Euler's O(h) (measured 1.0e-3 relative) */
static void test_interpolating_many_steps(void **state)
{
    (void)state;
    remat_mechanism *m = parse(ABC);
    remat_ode_options o = opts(REMAT_ODE_EULER, 0.0005, REMAT_ODE_ADJOINT_INTERPOLATING);
    double g[5], B, dk1, dk2;
    grad_at(m, &o, K12, g);
    abc_exact(10.0, 1.0, 0.5, &B, &dk1, &dk2);
    printf("  euler dt 5e-4 interpolating: dk1 %.10g exact %.10g\n", -g[3], dk1);
    assert_close(-g[3], dk1, 2e-3, 0);
    assert_close(-g[4], dk2, 2e-3, 0);
    remat_mechanism_free(m);
}

/* Output times as a value (remat_ode_integrate_times, dense output: the
 * adaptive fits' programs): the op reads the times when it runs, so one
 * program differentiates any times of that length; the gradient is the
 * discrete adjoint's to the tolerance (rtol 1e-8: 1e-6 relative) at two
 * sets of times, and a times' cotangent is 0 (they are data) */
static void test_interpolating_times_as_value(void **state)
{
    (void)state;
    remat_mechanism *m = parse(ABC);
    double g[2][6];
    for (int a = 0; a < 2; a++) {
        remat_ode_options o = {.method = REMAT_ODE_TSIT5, .adaptive = true, .rtol = 1e-8, .atol = 1e-11,
                               .adjoint = a ? REMAT_ODE_ADJOINT_INTERPOLATING : REMAT_ODE_ADJOINT_DISCRETE};
        remat_fn *f = remat_fn_new("times_value"), *gf;
        remat_val y0 = remat_arg(f, "y0", REMAT_F64, 1, (int64_t[]){3});
        remat_val k = remat_arg(f, "k", REMAT_F64, 1, (int64_t[]){2});
        remat_val ts = remat_arg(f, "times", REMAT_F64, 1, (int64_t[]){3}), ys;
        assert_ok(remat_ode_integrate_times(f, m, &o, y0, k, ts, &ys, NULL));
        static const double w[9] = {0.5, 1, -1, 2, 0.25, 1, -0.5, 3, 0.1};
        remat_val wv = remat_const_data(f, REMAT_F64, 2, (int64_t[]){3, 3}, w);
        remat_fn_output(f, remat_sum_all(f, remat_mul(f, ys, wv)));
        assert_ok(remat_grad(f, 3, (int[]){0, 1, 2}, &gf));
        remat_program *pg = compile_ok(gf);
        double y[3] = {1, 0.2, 0.1}, kk[2] = {1.0, 0.5}, t1[3] = {0.5, 2.0, 6.0}, t2[3] = {1.0, 3.0, 9.5}, gt[3];
        run(pg, (double *[]){y, kk, t1}, (double *[]){g[a], g[a] + 3, gt}, NULL);
        double h[5];
        run(pg, (double *[]){y, kk, t2}, (double *[]){h, h + 3, gt}, NULL);
        g[a][5] = h[3]; /* d/dk1 at the second times */
        if (a) { /* the times are stop_gradient'ed data, as the fits use them */
            for (int i = 0; i < 3; i++)
                assert_true(gt[i] == 0.0);
        }
        remat_program_free(pg);
        remat_fn_free(gf);
        remat_fn_free(f);
    }
    for (int i = 0; i < 6; i++) {
        printf("  times as a value, d/dx%d: interpolating %.12g, discrete %.12g\n", i, g[1][i], g[0][i]);
        assert_close(g[1][i], g[0][i], 1e-6, 1e-9);
    }
    assert_true(fabs(g[1][5] - g[1][3]) > 1e-3); /* the second times gave another gradient */
    remat_mechanism_free(m);
}

/* f32: the op and its programs in y0's dtype; fixed RK4 and adaptive
 * Tsit5 (rtol 1e-5) give the f64 gradient to f32's precision (1e-4) */
static void test_interpolating_f32(void **state)
{
    (void)state;
    remat_mechanism *m = parse(ABC);
    for (int c = 0; c < 2; c++) {
        remat_ode_options o = c ? adaptive(REMAT_ODE_TSIT5, 1e-5, REMAT_ODE_ADJOINT_INTERPOLATING)
                                : opts(REMAT_ODE_RK4, 0.01, REMAT_ODE_ADJOINT_INTERPOLATING);
        remat_fn *f = remat_fn_new("f32"), *gf;
        remat_val y0 = remat_arg(f, "y0", REMAT_F32, 1, (int64_t[]){3});
        remat_val k = remat_arg(f, "k", REMAT_F32, 1, (int64_t[]){2}), ys;
        assert_ok(remat_ode_integrate(f, m, &o, y0, k, &ys));
        remat_fn_output(f, remat_neg(f, remat_index(f, remat_index(f, ys, 0), 1)));
        assert_ok(remat_grad(f, 2, (int[]){0, 1}, &gf));
        remat_program *p = compile_ok(gf);
        float y[3] = {1, 0, 0}, kk[2] = {1.0f, 0.5f}, g[5];
        remat_tensor in[2] = {{REMAT_F32, {1, {3}}, y}, {REMAT_F32, {1, {2}}, kk}};
        remat_tensor out[2] = {{REMAT_F32, {1, {3}}, g}, {REMAT_F32, {1, {2}}, g + 3}};
        assert_ok(remat_run(p, 2, in, 2, out, NULL));
        double B, dk1, dk2;
        abc_exact(10.0, 1.0, 0.5, &B, &dk1, &dk2);
        printf("  f32 %s: dk1 %.8g dk2 %.8g (exact %.8g %.8g)\n", c ? "adaptive tsit5" : "rk4", -g[3], -g[4], dk1, dk2);
        assert_close(-g[3], dk1, 1e-4, 0);
        assert_close(-g[4], dk2, 1e-4, 0);
        remat_program_free(p);
        remat_fn_free(gf);
        remat_fn_free(f);
    }
    remat_mechanism_free(m);
}

/* The name parses; batches are refused with a message naming the adjoint */
static void test_interpolating_names_and_refusals(void **state)
{
    (void)state;
    remat_ode_adjoint a;
    assert_ok(remat_ode_adjoint_parse("interpolating", &a));
    assert_int_equal(a, REMAT_ODE_ADJOINT_INTERPOLATING);
    assert_string_equal(remat_ode_adjoint_name(REMAT_ODE_ADJOINT_INTERPOLATING), "interpolating");
    assert_int_equal(remat_ode_adjoint_parse("interp", &a), REMAT_ERR_PARSE);
    assert_non_null(strstr(remat_last_error(), "interpolating"));
    remat_mechanism *m = parse(ABC);
    remat_ode_options o = opts(REMAT_ODE_RK4, 0.1, REMAT_ODE_ADJOINT_INTERPOLATING);
    remat_fn *f = remat_fn_new("batch");
    remat_val y0 = remat_arg(f, "y0", REMAT_F64, 2, (int64_t[]){2, 3});
    remat_val k = remat_arg(f, "k", REMAT_F64, 1, (int64_t[]){2}), ys;
    assert_int_equal(remat_ode_integrate(f, m, &o, y0, k, &ys), REMAT_ERR_UNSUPPORTED);
    assert_non_null(strstr(remat_last_error(), "interpolating adjoint"));
    remat_fn_free(f);
    remat_mechanism_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_interpolating_tsit5_seed),
        cmocka_unit_test(test_interpolating_agrees_with_backsolve),
        cmocka_unit_test(test_interpolating_adaptive_converges),
        cmocka_unit_test(test_interpolating_finite_differences),
        cmocka_unit_test(test_interpolating_many_steps),
        cmocka_unit_test(test_interpolating_times_as_value),
        cmocka_unit_test(test_interpolating_f32),
        cmocka_unit_test(test_interpolating_names_and_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

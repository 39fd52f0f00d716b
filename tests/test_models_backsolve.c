/*
 * test_models_backsolve.c — the continuous (backsolve) adjoint of a fixed-step
 * integration (remat/ode.h, REMAT_ODE_ADJOINT_BACKSOLVE).
 *
 * Expectations from outside the code under test: seed 004 §8's printed
 * digits (Tsit5, dt 0.01), the closed form of A->B->C, the discrete adjoint
 * the backsolve must converge to as the step shrinks, and central finite
 * differences of the forward integration.
 */
#include "test_models_util.h"
#include "test_golden.h"

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
    return (remat_ode_options){.method = method, .n_times = 1, .times = T_END, .dt = dt,
                               .scan = {.schedule = {.kind = REMAT_SCHED_BINOMIAL, .snapshots = 10}},
                               .adjoint = adj};
}

/* seed 004 §8: Tsit5, dt0 = 0.01 on [0, 10]: all three adjoints print
 * C_B 0.013385, dC_B/dk1 -0.012477, dC_B/dk2 -0.107989 */
static void test_backsolve_tsit5_seed(void **state)
{
    (void)state;
    remat_mechanism *m = parse(ABC);
    remat_ode_options b = opts(REMAT_ODE_TSIT5, 0.01, REMAT_ODE_ADJOINT_BACKSOLVE);
    remat_ode_options d = opts(REMAT_ODE_TSIT5, 0.01, REMAT_ODE_ADJOINT_DISCRETE);
    double gb[5], gd[5], B, dk1, dk2;
    grad_at(m, &b, K12, gb);
    grad_at(m, &d, K12, gd);
    double v = value_at(m, &b, K12);
    printf("  tsit5 backsolve: C_B %.17g dk1 %.17g dk2 %.17g\n", -v, -gb[3], -gb[4]);
    printf("  tsit5 discrete : dk1 %.17g dk2 %.17g\n", -gd[3], -gd[4]);
    assert_printed("%.6f", -v, "0.013385");
    assert_printed("%.6f", -gb[3], "-0.012477");
    assert_printed("%.6f", -gb[4], "-0.107989");
    abc_exact(10.0, 1.0, 0.5, &B, &dk1, &dk2);
    for (int i = 0; i < 5; i++)
        assert_close(gb[i], gd[i], 1e-8, 1e-12); /* order 5 on both solves */
    assert_close(-gb[3], dk1, 1e-8, 0);
    assert_close(-gb[4], dk2, 1e-8, 0);
    /* d(-C_B)/dC0: the value is linear in C0, C_B = C_A0 B(T) + C_B0 e^{-k2 T} */
    assert_close(-gb[0], B, 1e-8, 0);
    assert_close(-gb[1], exp(-5.0), 1e-8, 0);
    assert_close(gb[2], 0.0, 0, 1e-14);
    remat_mechanism_free(m);
}

/* Euler, dt 0.01: a method of its own, not a schedule. The discrete adjoint
 * is -0.0123494 (test_models_seeds.c), diffrax's BacksolveAdjoint -0.0112542
 * (issue 22; goldens in test_models_backsolve_goldens) */
static void test_backsolve_euler_differs_from_discrete(void **state)
{
    (void)state;
    remat_mechanism *m = parse(ABC);
    remat_ode_options b = opts(REMAT_ODE_EULER, 0.01, REMAT_ODE_ADJOINT_BACKSOLVE);
    double g[5];
    grad_at(m, &b, K12, g);
    printf("  euler backsolve: dk1 %.17g dk2 %.17g\n", -g[3], -g[4]);
    assert_printed("%.7f", -g[3], "-0.0112542");
    assert_true(fabs(-g[3] - -0.0123494) > 1e-3);
    remat_mechanism_free(m);
}

/* The backsolve error against the discrete adjoint shrinks with the step,
 * at least at the method's order (Euler 1: halving the step halves it; RK4:
 * divides it by 16 to 32, measured 31) */
static void test_backsolve_converges_to_discrete(void **state)
{
    (void)state;
    remat_mechanism *m = parse(ABC);
    const remat_ode_method methods[2] = {REMAT_ODE_EULER, REMAT_ODE_RK4};
    const double lo[2] = {1.7, 12.0}, hi[2] = {2.3, 40.0};
    for (int q = 0; q < 2; q++) {
        double prev = 0;
        for (int i = 0; i < 3; i++) {
            double dt = 0.1 / (1 << i), gb[5], gd[5];
            remat_ode_options b = opts(methods[q], dt, REMAT_ODE_ADJOINT_BACKSOLVE);
            remat_ode_options d = opts(methods[q], dt, REMAT_ODE_ADJOINT_DISCRETE);
            grad_at(m, &b, K12, gb);
            grad_at(m, &d, K12, gd);
            double err = fabs(gb[3] - gd[3]) + fabs(gb[4] - gd[4]);
            printf("  %s dt %-6g |backsolve - discrete| = %.3g\n", remat_ode_method_name(methods[q]), dt, err);
            assert_true(err > 0);
            if (i) {
                assert_true(prev / err > lo[q]);
                assert_true(prev / err < hi[q]);
            }
            prev = err;
        }
    }
    remat_mechanism_free(m);
}

/* Rodas5, fixed and adaptive: the backward Rosenbrock steps on the
 * augmented system converge to the discrete adjoint as the step (the
 * tolerance) shrinks */
static void test_backsolve_rodas5_converges_to_discrete(void **state)
{
    (void)state;
    remat_mechanism *m = parse(ABC);
    for (int ad = 0; ad < 2; ad++) {
        double prev = 0;
        for (int i = 0; i < 3; i++) {
            double gb[5], gd[5];
            remat_ode_options b = opts(REMAT_ODE_RODAS5, ad ? 0 : 0.2 / (1 << i), REMAT_ODE_ADJOINT_BACKSOLVE);
            if (ad)
                b.adaptive = true, b.rtol = pow(10.0, -4 - 2 * i), b.atol = 1e-3 * b.rtol, b.max_steps = 100000;
            remat_ode_options d = b;
            d.adjoint = REMAT_ODE_ADJOINT_DISCRETE;
            grad_at(m, &b, K12, gb);
            grad_at(m, &d, K12, gd);
            double err = 0;
            for (int j = 0; j < 5; j++)
                err = fmax(err, fabs(gb[j] - gd[j]));
            printf("  rodas5 %s %-6g |backsolve - discrete| = %.3g\n", ad ? "rtol" : "dt", ad ? b.rtol : b.dt, err);
            assert_true(err > 0 && err < 1e-3);
            if (i)
                assert_true(err < prev / 4); /* halving the step or 100x tighter */
            prev = err;
        }
    }
    remat_mechanism_free(m);
}

/* Adaptive: the backward solve has its own error control, so its error
 * against the discrete adjoint shrinks as the tolerances tighten */
static void test_backsolve_adaptive_converges_to_discrete(void **state)
{
    (void)state;
    remat_mechanism *m = parse(ABC);
    double prev = 0;
    for (int i = 0; i < 4; i++) {
        double rtol = pow(10.0, -4 - 2 * i), gb[5], gd[5];
        remat_ode_options b = opts(REMAT_ODE_TSIT5, 0, REMAT_ODE_ADJOINT_BACKSOLVE);
        b.adaptive = true, b.rtol = rtol, b.atol = 1e-3 * rtol, b.max_steps = 100000;
        remat_ode_options d = b;
        d.adjoint = REMAT_ODE_ADJOINT_DISCRETE;
        grad_at(m, &b, K12, gb);
        grad_at(m, &d, K12, gd);
        double err = 0;
        for (int j = 0; j < 5; j++)
            err = fmax(err, fabs(gb[j] - gd[j]));
        printf("  tsit5 adaptive rtol %-6g |backsolve - discrete| = %.3g\n", rtol, err);
        assert_true(err < 10 * rtol);
        if (i)
            assert_true(err < prev / 10); /* 100x tighter: at least 10x closer */
        prev = err;
    }
    remat_mechanism_free(m);
}

/* Several output times, a t-dependent rate and every output in the loss:
 * the reverse walk restarts y at each output and adds its cotangent */
static void test_backsolve_several_outputs(void **state)
{
    (void)state;
    remat_mechanism *m = parse(NET5);
    int64_t P = remat_mechanism_input_count(m), S = 5;
    double times[3] = {0.3, 0.7, 1.0}, w[15];
    for (int i = 0; i < 15; i++)
        w[i] = 0.1 * (i + 1) * (i % 2 ? -1 : 1);
    double *k = calloc((size_t)P, sizeof *k), *gb = calloc((size_t)(S + P), sizeof *gb),
           *gd = calloc((size_t)(S + P), sizeof *gd);
    for (int64_t i = 0; i < P; i++)
        k[i] = 0.3 + 0.1 * (double)i;
    for (int a = 0; a < 2; a++) {
        remat_ode_options o = {.method = REMAT_ODE_RK4, .n_times = 3, .times = times, .dt = 0.002,
                               .adjoint = a ? REMAT_ODE_ADJOINT_BACKSOLVE : REMAT_ODE_ADJOINT_DISCRETE};
        remat_fn *f = weighted_loss_fn(m, &o, w), *g;
        assert_ok(remat_grad(f, 2, (int[]){0, 1}, &g));
        remat_program *p = compile_ok(g);
        double *out = a ? gb : gd;
        run(p, (double *[]){(double *)NET5_Y0, k}, (double *[]){out, out + S}, NULL);
        remat_program_free(p);
        remat_fn_free(g);
        remat_fn_free(f);
    }
    for (int64_t i = 0; i < S + P; i++)
        assert_close(gb[i], gd[i], 1e-7, 1e-10);
    free(k);
    free(gb);
    free(gd);
    remat_mechanism_free(m);
}

/* f64 central differences of the forward integration (Tsit5: the discrete
 * and continuous gradients agree far below the differences' error) */
static void test_backsolve_finite_differences(void **state)
{
    (void)state;
    remat_mechanism *m = parse(ABC);
    remat_ode_options b = opts(REMAT_ODE_TSIT5, 0.01, REMAT_ODE_ADJOINT_BACKSOLVE);
    double g[5];
    grad_at(m, &b, K12, g);
    for (int i = 0; i < 2; i++) {
        double kp[2] = {K12[0], K12[1]}, km[2] = {K12[0], K12[1]}, eps = 1e-5;
        kp[i] += eps;
        km[i] -= eps;
        double fd = (value_at(m, &b, kp) - value_at(m, &b, km)) / (2 * eps);
        printf("  d/dk%d: backsolve %.12g, central difference %.12g\n", i + 1, g[3 + i], fd);
        assert_close(g[3 + i], fd, 1e-7, 1e-11);
    }
    remat_mechanism_free(m);
}

/* Memory O(1) in the steps: the gradient program's plan is the same for
 * 1000 and 100000 steps, where store-all's store grows with them */
static void test_backsolve_memory_constant(void **state)
{
    (void)state;
    remat_mechanism *m = parse(ABC);
    size_t bytes[2][2];
    for (int a = 0; a < 2; a++)
        for (int i = 0; i < 2; i++) {
            remat_ode_options o = opts(REMAT_ODE_TSIT5, i ? 1e-4 : 1e-2,
                                       a ? REMAT_ODE_ADJOINT_BACKSOLVE : REMAT_ODE_ADJOINT_DISCRETE);
            o.scan.schedule = (remat_schedule_spec){.kind = REMAT_SCHED_STORE_ALL};
            remat_fn *f = neg_cb_fn(m, &o), *g;
            assert_ok(remat_grad(f, 1, (int[]){1}, &g));
            remat_program *p = compile_ok(g);
            remat_memory_plan plan;
            remat_program_plan(p, &plan);
            bytes[a][i] = plan.arena_bytes + plan.peak_snapshot_bytes;
            printf("  %s, %d steps: %zu bytes\n", a ? "backsolve" : "store-all", i ? 100000 : 1000, bytes[a][i]);
            remat_program_free(p);
            remat_fn_free(g);
            remat_fn_free(f);
        }
    assert_int_equal(bytes[1][0], bytes[1][1]);
    assert_true(bytes[0][1] > 50 * bytes[0][0]);
    assert_true(bytes[1][1] * 100 < bytes[0][1]);
    remat_mechanism_free(m);
}

static void test_backsolve_refuses_what_it_does_not_do(void **state)
{
    (void)state;
    remat_mechanism *m = parse(ABC);
    remat_ode_options o = opts(REMAT_ODE_TSIT5, 0.01, REMAT_ODE_ADJOINT_BACKSOLVE);
    remat_fn *f = remat_fn_new("x");
    remat_val y0 = remat_arg(f, "C0", REMAT_F64, 1, DIMS(3)), k = remat_arg(f, "k", REMAT_F64, 1, DIMS(2)), ys;
    remat_val yb = remat_arg(f, "C0s", REMAT_F64, 2, DIMS(4, 3)), kb = remat_arg(f, "ks", REMAT_F64, 2, DIMS(4, 2));
    assert_int_equal(remat_ode_integrate(f, m, &o, yb, kb, &ys), REMAT_ERR_UNSUPPORTED);
    assert_non_null(strstr(remat_last_error(), "not a batch"));
    o = opts(REMAT_ODE_TSIT5, 0.01, (remat_ode_adjoint)7);
    assert_int_equal(remat_ode_integrate(f, m, &o, y0, k, &ys), REMAT_ERR_ARG);
    remat_ode_adjoint adj;
    assert_ok(remat_ode_adjoint_parse("backsolve", &adj));
    assert_int_equal(adj, REMAT_ODE_ADJOINT_BACKSOLVE);
    assert_ok(remat_ode_adjoint_parse("discrete", &adj));
    assert_int_equal(adj, REMAT_ODE_ADJOINT_DISCRETE);
    assert_int_equal(remat_ode_adjoint_parse("continuous", &adj), REMAT_ERR_PARSE);
    assert_non_null(strstr(remat_last_error(), "'continuous'"));
    assert_string_equal(remat_ode_adjoint_name(REMAT_ODE_ADJOINT_BACKSOLVE), "backsolve");
    assert_string_equal(remat_ode_adjoint_name((remat_ode_adjoint)9), "?");
    remat_fn_free(f);
    remat_mechanism_free(m);
}

/* Output times as a value (remat_ode_integrate_times, dense output: the
 * adaptive fits' programs): the backward program takes the times as an
 * input and solves each interval between values, so one program serves
 * any times of that length; the gradient is the discrete adjoint's to the
 * tolerance (rtol 1e-8: 1e-6 relative) at two sets of times */
static void test_backsolve_times_as_value(void **state)
{
    (void)state;
    remat_mechanism *m = parse(ABC);
    double g[2][2][5];
    for (int a = 0; a < 2; a++) {
        remat_ode_options o = {.method = REMAT_ODE_TSIT5, .adaptive = true, .rtol = 1e-8, .atol = 1e-11,
                               .adjoint = a ? REMAT_ODE_ADJOINT_BACKSOLVE : REMAT_ODE_ADJOINT_DISCRETE};
        remat_fn *f = remat_fn_new("times_value"), *gf;
        remat_val y0 = remat_arg(f, "y0", REMAT_F64, 1, DIMS(3)), k = remat_arg(f, "k", REMAT_F64, 1, DIMS(2));
        remat_val ts = remat_arg(f, "times", REMAT_F64, 1, DIMS(3)), ys;
        assert_ok(remat_ode_integrate_times(f, m, &o, y0, k, ts, &ys, NULL));
        static const double w[9] = {0.5, 1, -1, 2, 0.25, 1, -0.5, 3, 0.1};
        remat_val wv = remat_const_data(f, REMAT_F64, 2, DIMS(3, 3), w);
        remat_fn_output(f, remat_sum_all(f, remat_mul(f, ys, wv)));
        assert_ok(remat_grad(f, 2, (int[]){0, 1}, &gf));
        remat_program *pg = compile_ok(gf);
        double y[3] = {1, 0.2, 0.1}, kk[2] = {1.0, 0.5}, t1[3] = {0.0, 2.0, 6.0}, t2[3] = {1.0, 3.0, 9.5};
        run(pg, (double *[]){y, kk, t1}, (double *[]){g[a][0], g[a][0] + 3}, NULL);
        run(pg, (double *[]){y, kk, t2}, (double *[]){g[a][1], g[a][1] + 3}, NULL);
        remat_program_free(pg);
        remat_fn_free(gf);
        remat_fn_free(f);
    }
    for (int t = 0; t < 2; t++)
        for (int i = 0; i < 5; i++) {
            printf("  times %d as a value, d/dx%d: backsolve %.12g, discrete %.12g\n", t, i, g[1][t][i], g[0][t][i]);
            assert_close(g[1][t][i], g[0][t][i], 1e-6, 1e-9);
        }
    assert_true(fabs(g[1][1][3] - g[1][0][3]) > 1e-3); /* the second times gave another gradient */
    remat_mechanism_free(m);
}

/* a JSON array of numbers, or of arrays of numbers, flattened into out */
static int jflat(const cJSON *a, double *out, int max)
{
    int n = 0;
    for (const cJSON *e = a->child; e; e = e->next) {
        if (cJSON_IsArray(e)) {
            n += jflat(e, out + n, max - n);
        } else {
            assert_true(n < max);
            out[n++] = e->valuedouble;
        }
    }
    return n;
}

/* diffrax's BacksolveAdjoint on the fixed-step goldens (gen_backsolve_goldens.py):
 * the same continuous adjoint on the same grid, so the same gradient to
 * rounding (1e-12 of its largest entry; measured 3e-15); and RecursiveCheckpointAdjoint's, the
 * discrete adjoint, from remat's discrete adjoint. Adaptive cases: the
 * backward solve's own error control takes diffrax's steps, so the same
 * gradient within a thousandth of rtol (measured 2e-16). */
static void test_backsolve_matches_diffrax(void **state)
{
    (void)state;
    const cJSON *cases = jget(golden("backsolve.json"), "cases");
    int n_fixed = 0, n_adaptive = 0;
    for (const cJSON *c = cases->child; c; c = c->next) {
        const char *name = jget(c, "name")->valuestring;
        remat_mechanism *m = parse(jget(c, "mechanism")->valuestring);
        double y0[MAXV], p[MAXV], times[8], w[8 * MAXV];
        int S = jflat(jget(c, "y0"), y0, MAXV), P = jflat(jget(c, "k"), p, MAXV);
        int K = jflat(jget(c, "ts"), times, 8);
        jflat(jget(c, "w"), w, 8 * MAXV);
        remat_ode_options opt = {.n_times = K, .times = times};
        assert_ok(remat_ode_method_parse(jget(c, "method")->valuestring, &opt.method));
        double tol = 1e-12;
        if (cJSON_GetObjectItem(c, "rtol")) {
            opt.adaptive = true, opt.rtol = jget(c, "rtol")->valuedouble, opt.atol = jget(c, "atol")->valuedouble;
            opt.dt0 = jget(c, "dt0")->valuedouble;
            tol = 1e-3 * opt.rtol; /* the same controller on the same steps, rounding apart */
            n_adaptive++;
        } else {
            opt.dt = jget(c, "dt0")->valuedouble;
            n_fixed++;
        }
        for (int a = 0; a < 2; a++) {
            const cJSON *want = jget(c, a ? "backsolve" : "recursive");
            double gp[MAXV], gy[MAXV], got[2 * MAXV];
            jflat(jget(want, "grad_params"), gp, MAXV);
            jflat(jget(want, "grad_y0"), gy, MAXV);
            opt.adjoint = a ? REMAT_ODE_ADJOINT_BACKSOLVE : REMAT_ODE_ADJOINT_DISCRETE;
            remat_fn *f = weighted_loss_fn(m, &opt, w), *g;
            assert_ok(remat_grad(f, 2, (int[]){0, 1}, &g));
            remat_program *prog = compile_ok(g);
            run(prog, (double *[]){y0, p}, (double *[]){got, got + S}, NULL);
            double scale = 0, worst = 0;
            for (int i = 0; i < P; i++)
                scale = fmax(scale, fabs(gp[i]));
            for (int i = 0; i < S; i++)
                scale = fmax(scale, fabs(gy[i]));
            for (int i = 0; i < P; i++)
                worst = fmax(worst, fabs(got[S + i] - gp[i]) / scale);
            for (int i = 0; i < S; i++)
                worst = fmax(worst, fabs(got[i] - gy[i]) / scale);
            printf("  %-24s %-9s dL/dk0 %.12g (diffrax %.12g), max difference %.2g of the largest\n", name,
                   a ? "backsolve" : "discrete", got[S], gp[0], worst);
            assert_true(worst < tol);
            remat_program_free(prog);
            remat_fn_free(g);
            remat_fn_free(f);
        }
        remat_mechanism_free(m);
    }
    assert_true(n_fixed >= 5 && n_adaptive >= 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_backsolve_tsit5_seed),
        cmocka_unit_test(test_backsolve_euler_differs_from_discrete),
        cmocka_unit_test(test_backsolve_converges_to_discrete),
        cmocka_unit_test(test_backsolve_adaptive_converges_to_discrete),
        cmocka_unit_test(test_backsolve_rodas5_converges_to_discrete),
        cmocka_unit_test(test_backsolve_several_outputs),
        cmocka_unit_test(test_backsolve_finite_differences),
        cmocka_unit_test(test_backsolve_memory_constant),
        cmocka_unit_test(test_backsolve_refuses_what_it_does_not_do),
        cmocka_unit_test(test_backsolve_times_as_value),
        cmocka_unit_test(test_backsolve_matches_diffrax),
    };
    return cmocka_run_group_tests(tests, NULL, golden_free_all);
}

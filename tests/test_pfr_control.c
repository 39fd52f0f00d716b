/*
 * test_pfr_control.c — control profiles in mechanisms (remat/mechanism.h,
 * "Control profiles"): the values become bounded parameters T[0].., the
 * profile reads them piecewise constant or linear along z, the reactor's
 * gradient with respect to them equals central differences (fixed steps and
 * adaptive), the adaptive outlet equals the closed form of A -> B -> C with a
 * piecewise-constant temperature (the error control finds the jumps), and
 * bad declarations are refused at their file:line:column.
 */
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remat/remat.h"

#define R_GAS 8.314462618

/* x' = T reads the profile directly */
static void test_control_params_and_values(void **state)
{
    (void)state;
    remat_mechanism *m = parse("indep z\nparam k = 1\n"
                               "x' = T\n"
                               "control T(z) piecewise 4 over [0, 2] in [300, 400] start 350\n");
    assert_int_equal(remat_mechanism_param_count(m), 5);
    assert_string_equal(remat_mechanism_param_name(m, 0), "k");
    assert_string_equal(remat_mechanism_param_name(m, 1), "T[0]");
    assert_string_equal(remat_mechanism_param_name(m, 4), "T[3]");
    assert_int_equal(remat_mechanism_param_find(m, "T[2]"), 3);
    for (int i = 1; i < 5; i++) {
        assert_true(remat_mechanism_param_value(m, i) == 350);
        assert_true(remat_mechanism_param_lo(m, i) == 300);
        assert_true(remat_mechanism_param_hi(m, i) == 400);
    }
    double kn[4] = {0};
    assert_int_equal(remat_mechanism_control_knots(m, kn, 4), 3); /* the jumps: inner knots */
    assert_true(kn[0] == 0.5 && kn[1] == 1.0 && kn[2] == 1.5);
    double p[5] = {1, 310, 320, 330, 340}, y = 0, d;
    /* interval i is [z_i, z_{i+1}); before z0 the first value, after z1 the last */
    const double z[] = {-1, 0, 0.25, 0.49, 0.5, 1.2, 1.5, 1.99, 2, 5};
    const double want[] = {310, 310, 310, 310, 320, 330, 340, 340, 340, 340};
    for (size_t i = 0; i < sizeof z / sizeof z[0]; i++) {
        assert_ok(remat_mechanism_eval_rhs(m, z[i], &y, p, &d));
        if (d != want[i])
            fail_msg("T(%g) = %.17g, expected %g", z[i], d, want[i]);
    }
    remat_mechanism_free(m);

    /* linear: 2 intervals, 3 knots 0, 1, 2; start defaults to the middle of the bounds */
    m = parse("indep z\nx' = T\ncontrol T(z) piecewise linear 2 over [0, 2] in [0, 10]\n");
    assert_int_equal(remat_mechanism_param_count(m), 3);
    assert_true(remat_mechanism_param_value(m, 2) == 5);
    assert_int_equal(remat_mechanism_control_knots(m, kn, 4), 3); /* the kinks: every knot */
    assert_true(kn[0] == 0 && kn[1] == 1 && kn[2] == 2);
    double q[3] = {1, 3, 9};
    const double zl[] = {-1, 0, 0.5, 1, 1.5, 2, 3};
    const double wl[] = {1, 1, 2, 3, 6, 9, 9};
    for (size_t i = 0; i < sizeof zl / sizeof zl[0]; i++) {
        assert_ok(remat_mechanism_eval_rhs(m, zl[i], &y, q, &d));
        if (fabs(d - wl[i]) > 1e-15)
            fail_msg("linear T(%g) = %.17g, expected %g", zl[i], d, wl[i]);
    }
    remat_mechanism_free(m);

    /* the profile may be read before its line, and one interval is a constant */
    m = parse("indep z\nx' = 2 * T\ncontrol T(z) piecewise 1 over [0, 1] in [1, 3]\n");
    assert_int_equal(remat_mechanism_param_count(m), 1);
    double one = 2.5;
    assert_ok(remat_mechanism_eval_rhs(m, 0.3, &y, &one, &d));
    assert_true(d == 5.0);
    remat_mechanism_free(m);
}

static const char *const abc_const =
    "indep z\n"
    "control T(z) piecewise 4 over [0, 3] in [280, 420] start 350\n"
    "A -> B : arrhenius_ref(1.0, 50e3, 350)\n"
    "B -> C : arrhenius_ref(0.5, 80e3, 350)\n";
static const char *const abc_linear =
    "indep z\n"
    "control T(z) piecewise linear 4 over [0, 3] in [280, 420] start 350\n"
    "A -> B : arrhenius_ref(1.0, 50e3, 350)\n"
    "B -> C : arrhenius_ref(0.5, 80e3, 350)\n";

/* d objective / d T[i] against central differences of the same reactor */
static void check_gradient(remat_pfr *r, int P, const double *p0, double h, double rel, const char *what)
{
    double p[8], loss, g[8];
    memcpy(p, p0, sizeof *p * (size_t)P);
    assert_ok(remat_pfr_objective(r, p, &loss, g));
    for (int i = 0; i < P; i++) {
        double x = p[i], lp, lm;
        p[i] = x + h;
        assert_ok(remat_pfr_objective(r, p, &lp, NULL));
        p[i] = x - h;
        assert_ok(remat_pfr_objective(r, p, &lm, NULL));
        p[i] = x;
        double fd = (lp - lm) / (2 * h);
        if (!(fabs(g[i] - fd) <= rel * fabs(fd) + 1e-12))
            fail_msg("%s: d/dT[%d] = %.17g, central difference %.17g", what, i, g[i], fd);
        if (fabs(fd) < 1e-6)
            fail_msg("%s: d/dT[%d] = %g: a test that cannot fail", what, i, fd);
    }
}

static void test_control_gradient_fixed_steps(void **state)
{
    (void)state;
    const char *texts[] = {abc_const, abc_linear};
    const double p0[2][5] = {{340, 360, 320, 300}, {345, 370, 330, 310, 290}};
    const char *schedules[] = {"store-all", "binomial:4"};
    for (int k = 0; k < 2; k++)
        for (int s = 0; s < 2; s++) {
            remat_mechanism *m = parse(texts[k]);
            int P = remat_mechanism_param_count(m);
            assert_int_equal(P, 4 + k);
            /* 120 steps: the knots (every 0.75) lie on step boundaries */
            remat_pfr_options o = {.method = REMAT_ODE_RK4, .length = 3.0, .steps = 120,
                                   .inlet = (double[]){1, 0, 0}, .goal = REMAT_PFR_MAXIMIZE, .species = 1,
                                   .schedule = spec_of(schedules[s])};
            remat_pfr *r;
            assert_ok(remat_pfr_new(m, &o, &r));
            check_gradient(r, P, p0[k], 1e-4, 1e-7, k ? "linear, rk4" : "constant, rk4");
            remat_pfr_free(r);
            remat_mechanism_free(m);
        }
}

/* A -> B -> C, first order, constant k1, k2 over dz from (a, b) */
static void abc_step(double k1, double k2, double dz, double *a, double *b)
{
    double e1 = exp(-k1 * dz), e2 = exp(-k2 * dz);
    *b = *b * e2 + *a * k1 / (k2 - k1) * (e1 - e2);
    *a *= e1;
}

static double karr(double kref, double ea, double t) { return kref * exp(-ea / R_GAS * (1 / t - 1 / 350.0)); }

/* Adaptive steps across the jumps of a piecewise-constant profile: the error
 * control rejects and shrinks steps at each jump, so the outlet keeps the
 * tolerance (against the closed form, interval by interval), and the
 * gradient (steps held fixed in the reverse pass) is central differences' to
 * the tolerance's order. The continuous linear profile too. */
static void test_control_adaptive_across_jumps(void **state)
{
    (void)state;
    remat_mechanism *m = parse(abc_const);
    const double p0[4] = {340, 360, 320, 300};
    double exact_a = 1, exact_b = 0;
    for (int i = 0; i < 4; i++)
        abc_step(karr(1.0, 50e3, p0[i]), karr(0.5, 80e3, p0[i]), 0.75, &exact_a, &exact_b);
    const double rtols[] = {1e-6, 1e-9};
    for (int t = 0; t < 2; t++) {
        remat_pfr_options o = {.method = REMAT_ODE_TSIT5, .length = 3.0, .adaptive = true, .rtol = rtols[t],
                               .atol = rtols[t] * 1e-2, .inlet = (double[]){1, 0, 0},
                               .goal = REMAT_PFR_MAXIMIZE, .species = 1};
        remat_pfr *r;
        assert_ok(remat_pfr_new(m, &o, &r));
        double out[3];
        assert_ok(remat_pfr_outlet(r, p0, out));
        if (!(fabs(out[1] - exact_b) <= 10 * rtols[t]))
            fail_msg("rtol %g: C_B(L) = %.17g, closed form %.17g (error %.3g)", rtols[t], out[1], exact_b,
                     fabs(out[1] - exact_b));
        if (t == 1)
            check_gradient(r, 4, p0, 1e-3, 1e-4, "constant, tsit5 rtol 1e-9");
        remat_pfr_free(r);
    }
    remat_mechanism_free(m);

    m = parse(abc_linear);
    remat_pfr_options o = {.method = REMAT_ODE_TSIT5, .length = 3.0, .adaptive = true, .rtol = 1e-9, .atol = 1e-11,
                           .inlet = (double[]){1, 0, 0}, .goal = REMAT_PFR_MAXIMIZE, .species = 1};
    remat_pfr *r;
    assert_ok(remat_pfr_new(m, &o, &r));
    check_gradient(r, 5, (const double[]){345, 370, 330, 310, 290}, 1e-3, 1e-4, "linear, tsit5 rtol 1e-9");
    remat_pfr_free(r);
    remat_mechanism_free(m);
}

/* Fixed steps with the knots on step boundaries: a step ending at a knot
 * evaluates its last stage with the next interval's value, so RK4 is first
 * order there (remat/mechanism.h says so): ten times the steps, about a
 * tenth of the error, not 1e-4 of it. */
static void test_control_fixed_steps_first_order_at_jumps(void **state)
{
    (void)state;
    remat_mechanism *m = parse(abc_const);
    const double p0[4] = {340, 360, 320, 300};
    double a = 1, b = 0, err[2];
    for (int i = 0; i < 4; i++)
        abc_step(karr(1.0, 50e3, p0[i]), karr(0.5, 80e3, p0[i]), 0.75, &a, &b);
    const int64_t steps[2] = {120, 1200};
    for (int k = 0; k < 2; k++) {
        remat_pfr_options o = {.method = REMAT_ODE_RK4, .length = 3.0, .steps = steps[k], .inlet = (double[]){1, 0, 0}};
        remat_pfr *r;
        assert_ok(remat_pfr_new(m, &o, &r));
        double out[3];
        assert_ok(remat_pfr_outlet(r, p0, out));
        err[k] = fabs(out[1] - b);
        remat_pfr_free(r);
    }
    if (!(err[0] > 1e-7 && err[1] > 1e-8 && err[0] / err[1] > 5 && err[0] / err[1] < 20))
        fail_msg("RK4 errors at 120 and 1200 steps %.3g, %.3g: not first order", err[0], err[1]);
    remat_mechanism_free(m);
}

static void test_control_bad_declarations(void **state)
{
    (void)state;
    static const struct {
        const char *text, *want;
    } cases[] = {
        {"indep z\nx' = T\ncontrol T(z) piecewise 0 over [0, 1] in [1, 2]\n",
         "c.mech:3:24: control profile 'T' has '0' intervals: it needs at least one"},
        {"indep z\nx' = T\ncontrol T(z) piecewise 1001 over [0, 1] in [1, 2]\n",
         "c.mech:3:24: control profile 'T' has '1001' intervals: at most 1000"},
        {"indep z\nx' = T\ncontrol T(z) piecewise 2.5 over [0, 1] in [1, 2]\n", "c.mech:3:24: the number of intervals"},
        {"indep z\nx' = T\ncontrol T(z) piecewise 2 over [0, 1] in [2, 2]\n",
         "c.mech:3:41: bounds of control profile 'T' are empty: lo 2 >= hi 2"},
        {"indep z\nx' = T\ncontrol T(z) piecewise 2 over [0, 1] in [3, 2]\n", "c.mech:3:41: bounds of control"},
        {"indep z\nx' = T\ncontrol T(z) piecewise 2 over [0, 1] in [-inf, 2]\n", "c.mech:3:41: bounds [-inf, 2]"},
        {"indep z\nx' = T\ncontrol T(z) piecewise 2 over [1, 1] in [1, 2]\n", "c.mech:3:31: control profile 'T' spans"},
        {"indep z\nx' = T\ncontrol T(x) piecewise 2 over [0, 1] in [1, 2]\n",
         "c.mech:3:11: control profile 'T' runs along 'x', which is not the independent variable 'z'"},
        {"x' = T\ncontrol T(z) piecewise 2 over [0, 1] in [1, 2]\n",
         "c.mech:2:11: control profile 'T' runs along 'z', which is not the independent variable 't' (name another"},
        {"indep z\nT -> B : 1\ncontrol T(z) piecewise 2 over [0, 1] in [1, 2]\n",
         "c.mech:3:9: 'T' is a species (line 2) and cannot also be a control profile"},
        {"indep z\nparam T = 1\nx' = T\ncontrol T(z) piecewise 2 over [0, 1] in [1, 2]\n",
         "c.mech:4:9: 'T' is a parameter (line 2) and cannot also be a control profile"},
        {"indep z\ncontrol T(z) piecewise 2 over [0, 1] in [1, 2]\nT -> B : 1\n",
         "c.mech:3:1: 'T' is a control profile (line 2) and cannot be used as a species"},
        {"indep z\nx' = T\ncontrol T(z) piecewise 2 over [0, 1] in [1, 2]\n"
         "control T(z) piecewise 2 over [0, 1] in [1, 2]\n",
         "c.mech:4:9: control profile 'T' declared twice (first at line 3)"},
        {"indep z\nx' = T\ncontrol T(z) piecewise 2 over [0, 1] in [1, 2] start 5\n",
         "c.mech:3:54: start 5 of control profile 'T' is outside its bounds [1, 2]"},
        {"indep z\nx' = T\ncontrol T(z) piecewise 2 in [1, 2]\n", "c.mech:3:26: expected 'over [a, b]'"},
        {"indep z\nx' = T\ncontrol T(z) steps 2 over [0, 1] in [1, 2]\n", "c.mech:3:14: expected 'piecewise'"},
        {"indep z\nx' = T\ncontrol T(z) piecewise 2 over [0, 1] in [1, 2] extra\n", "c.mech:3:48: unexpected 'extra'"},
        {"indep z\nx' = T\nparam k = T\ncontrol T(z) piecewise 2 over [0, 1] in [1, 2]\n",
         "c.mech:3:11: 'T' is a control profile"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        remat_mechanism *m = NULL;
        remat_status st = remat_mechanism_parse_string(cases[i].text, "c.mech", &m);
        if (st != REMAT_ERR_PARSE || !strstr(remat_last_error(), cases[i].want))
            fail_msg("case %zu: status %d, message '%s', expected '%s'", i, (int)st, remat_last_error(),
                     cases[i].want);
        assert_null(m);
    }
    /* 'control' is no reserved word: a species may be called so */
    remat_mechanism *m = parse("control -> B : 1\n");
    assert_int_equal(remat_mechanism_species_count(m), 2);
    remat_mechanism_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_control_params_and_values),
        cmocka_unit_test(test_control_gradient_fixed_steps),
        cmocka_unit_test(test_control_adaptive_across_jumps),
        cmocka_unit_test(test_control_fixed_steps_first_order_at_jumps),
        cmocka_unit_test(test_control_bad_declarations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

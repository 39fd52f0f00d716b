/*
 * test_models_rhs.c — a mechanism's right-hand side lowered to graph ops
 * (remat/kinetics.h) and one step of each fixed-step integrator (remat/ode.h).
 *
 * Every expectation comes from outside the code under test: the mechanism's
 * double evaluator (remat_mechanism_eval_rhs), steps of the tableaus written
 * out in plain C (test_models_util.c), the order conditions, and central finite
 * differences in f64.
 */
#include "test_models_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remat/remat.h"

/* ---- the right-hand side ---- */

static void check_rhs_against_reference(const char *text, int trials)
{
    remat_mechanism *m = parse(text);
    int S = remat_mechanism_species_count(m), P = remat_mechanism_input_count(m); /* params, then conds */
    remat_fn *f = remat_kinetics_rhs_fn(m, REMAT_F64);
    assert_non_null(f);
    remat_program *prog = compile_ok(f);
    double t, y[MAXV], p[MAXV], got[MAXV], want[MAXV];
    for (int trial = 0; trial < trials; trial++) {
        t = urand(0, 3);
        for (int i = 0; i < S; i++)
            y[i] = urand(0.05, 2);
        for (int i = 0; i < P; i++)
            p[i] = urand(0.1, 2);
        run(prog, (double *[]){&t, y, p}, (double *[]){got}, NULL);
        ref_rhs(m, t, y, p, want);
        for (int i = 0; i < S; i++)
            assert_close(got[i], want[i], 1e-14, 1e-15);
    }
    remat_program_free(prog);
    remat_fn_free(f);
    remat_mechanism_free(m);
}

static void test_models_rhs_matches_reference_evaluator(void **state)
{
    (void)state;
    check_rhs_against_reference(ABC, 5);
    check_rhs_against_reference(NET5, 20);
    /* ODE lines, a named independent variable, a source term of params only */
    check_rhs_against_reference("indep z\nparam a = 0.5\nparam s = 0.1\n"
                                "y1' = -a * y1 + z\ny2' = y1 - y2^2 / (1 + z^2)\n-> y3 : s\n",
                                10);
    /* a param as exponent base, a let chain, max, log, negative integer power */
    check_rhs_against_reference("param k = 0.7\nparam n = 1.3\nlet a = k * 2\nlet b = a + log(k + 1)\n"
                                "X -> Y : b * X^n\nY -> X : max(k, 0.2) * Y^-2 * X\n",
                                10);
    /* conditions, read after the parameters, in a let, a rate and as a rate constant */
    check_rhs_against_reference("cond T = 350\nparam k = 0.5\ncond c = 2\nparam k2 = 0.1\n"
                                "let kT = k * exp(-6 * (1 / T - 1 / 1.5))\nA -> B : kT\nB -> C : c\n"
                                "C -> A : k2 * T * C\nA -> D : arrhenius(k, 0.5, k2)\n"
                                "D -> A : arrhenius_ref(k, k2, 0.9)\n",
                                10);
}

static void test_models_rhs_batched_rows_match_unbatched(void **state)
{
    (void)state;
    remat_mechanism *m = parse(NET5);
    enum { B1 = 3, B2 = 2, S = 5, P = 5 };
    remat_fn *f = remat_fn_new("rhs_batched");
    remat_val t = remat_arg(f, "t", REMAT_F64, 0, NULL);
    remat_val y = remat_arg(f, "y", REMAT_F64, 3, DIMS(B1, B2, S));
    remat_val p = remat_arg(f, "p", REMAT_F64, 1, DIMS(P));
    remat_val dydt;
    assert_ok(remat_kinetics_rhs(f, m, t, y, p, &dydt));
    remat_shape s = remat_val_shape(f, dydt);
    assert_int_equal(s.rank, 3);
    assert_int_equal(s.dims[2], S);
    remat_fn_output(f, dydt);
    remat_program *prog = compile_ok(f);
    double tv = 0.7, yv[B1 * B2 * S], pv[P], got[B1 * B2 * S], want[S];
    for (int i = 0; i < B1 * B2 * S; i++)
        yv[i] = urand(0.05, 2);
    for (int i = 0; i < P; i++)
        pv[i] = urand(0.1, 2);
    run(prog, (double *[]){&tv, yv, pv}, (double *[]){got}, NULL);
    for (int r = 0; r < B1 * B2; r++) {
        ref_rhs(m, tv, yv + r * S, pv, want);
        for (int i = 0; i < S; i++)
            assert_close(got[r * S + i], want[i], 1e-14, 1e-15);
    }
    remat_program_free(prog);
    remat_fn_free(f);
    remat_mechanism_free(m);
}

static int count_op(const remat_fn *f, remat_op op)
{
    int n = 0;
    for (int v = 0; v < remat_fn_num_nodes(f); v++)
        n += remat_val_op(f, v) == op;
    return n;
}

static void test_models_rhs_walks_shared_nodes_once(void **state)
{
    (void)state;
    /* each net rate appears in two or three species' sums, each let is read
     * by two reactions: one mul per mass-action rate, one exp for the let */
    remat_mechanism *m = parse("param k1 = 1\nparam k2 = 2\nlet k = exp(k1)\n"
                               "A -> B + C : k\nB -> C : k\nC -> A : k2\n");
    remat_fn *f = remat_kinetics_rhs_fn(m, REMAT_F64);
    assert_non_null(f);
    assert_int_equal(count_op(f, REMAT_OP_EXP), 1);
    assert_int_equal(count_op(f, REMAT_OP_MUL), 3);
    assert_int_equal(count_op(f, REMAT_OP_CONCATENATE), 1);
    assert_int_equal(count_op(f, REMAT_OP_SLICE), 3 + 2); /* species A, B, C; params k1, k2 (index) */
    assert_false(remat_kinetics_uses_indep(m));
    remat_fn_free(f);
    remat_mechanism_free(m);
    m = parse(NET5);
    assert_true(remat_kinetics_uses_indep(m));
    remat_mechanism_free(m);
}

static void test_models_rhs_gradient_matches_finite_differences(void **state)
{
    (void)state;
    remat_mechanism *m = parse(NET5);
    enum { S = 5, P = 5 };
    remat_fn *f = remat_fn_new("w_rhs");
    remat_val t = remat_arg(f, "t", REMAT_F64, 0, NULL);
    remat_val y = remat_arg(f, "y", REMAT_F64, 1, DIMS(S));
    remat_val p = remat_arg(f, "p", REMAT_F64, 1, DIMS(P));
    double w[S] = {0.3, -1.1, 0.7, 2.0, -0.4};
    remat_val dydt;
    assert_ok(remat_kinetics_rhs(f, m, t, y, p, &dydt));
    remat_fn_output(f, remat_sum_all(f, remat_mul(f, dydt, remat_const_data(f, REMAT_F64, 1, DIMS(S), w))));
    remat_fn *g;
    assert_ok(remat_grad(f, 0, NULL, &g));
    remat_program *pf = compile_ok(f), *pg = compile_ok(g);
    double tv = 0.8, yv[S] = {0.9, 0.5, 0.3, 0.2, 0.4}, pv[P] = {1.2, 0.4, 0.7, 0.9, 0.3};
    double dt_, dy[S], dp[P];
    run(pg, (double *[]){&tv, yv, pv}, (double *[]){&dt_, dy, dp}, NULL);
    double *vars[3] = {&tv, yv, pv}, *grads[3] = {&dt_, dy, dp};
    int n[3] = {1, S, P};
    for (int a = 0; a < 3; a++)
        for (int i = 0; i < n[a]; i++) {
            double x = vars[a][i], h = 1e-6, lp, lm;
            vars[a][i] = x + h;
            run(pf, vars, (double *[]){&lp}, NULL);
            vars[a][i] = x - h;
            run(pf, vars, (double *[]){&lm}, NULL);
            vars[a][i] = x;
            assert_close(grads[a][i], (lp - lm) / (2 * h), 1e-7, 1e-8);
        }
    remat_program_free(pf);
    remat_program_free(pg);
    remat_fn_free(f);
    remat_fn_free(g);
    remat_mechanism_free(m);
}

/* Gradients through arrhenius, arrhenius (modified) and arrhenius_ref
 * (remat/mechanism.h) with respect to every parameter and the condition T,
 * against central differences */
static void test_models_rhs_arrhenius_gradient(void **state)
{
    (void)state;
    remat_mechanism *m = parse("cond T = 350\nparam A0 = 2e3\nparam Ea = 2e4\nparam b = 0.5\nparam kr = 0.3\n"
                               "param Er = 3e4\nconst Tr = 340\n"
                               "A -> B : arrhenius(A0, Ea)\nB -> C : arrhenius(A0 / 100, b, Ea)\n"
                               "C -> A : arrhenius_ref(kr, Er, Tr)\n");
    enum { S = 3, P = 6 }; /* 5 parameters, then T */
    assert_int_equal(remat_mechanism_input_count(m), P);
    remat_fn *f = remat_fn_new("w_rhs");
    remat_val y = remat_arg(f, "y", REMAT_F64, 1, DIMS(S));
    remat_val p = remat_arg(f, "p", REMAT_F64, 1, DIMS(P));
    double w[S] = {0.3, -1.1, 0.7};
    remat_val dydt;
    assert_ok(remat_kinetics_rhs(f, m, REMAT_NONE, y, p, &dydt));
    remat_fn_output(f, remat_sum_all(f, remat_mul(f, dydt, remat_const_data(f, REMAT_F64, 1, DIMS(S), w))));
    remat_fn *g;
    assert_ok(remat_grad(f, 1, (int[]){1}, &g));
    remat_program *pf = compile_ok(f), *pg = compile_ok(g);
    double yv[S] = {0.9, 0.5, 0.3}, pv[P] = {2e3, 2e4, 0.5, 0.3, 3e4, 361}, dp[P];
    run(pg, (double *[]){yv, pv}, (double *[]){dp}, NULL);
    for (int i = 0; i < P; i++) {
        double x = pv[i], h = 1e-5 * fabs(x), lp, lm;
        pv[i] = x + h;
        run(pf, (double *[]){yv, pv}, (double *[]){&lp}, NULL);
        pv[i] = x - h;
        run(pf, (double *[]){yv, pv}, (double *[]){&lm}, NULL);
        pv[i] = x;
        assert_close(dp[i], (lp - lm) / (2 * h), 1e-6, 1e-12);
    }
    remat_program_free(pf);
    remat_program_free(pg);
    remat_fn_free(f);
    remat_fn_free(g);
    remat_mechanism_free(m);
}

/* Every function of the mechanism language past exp/log/sqrt/min/max
 * (remat/mechanism.h, FUNC) in one mechanism */
static const char *const FUNCS = "param k1 = 0.7\nparam k2 = 1.3\nparam k3 = 0.4\n"
                                 "A -> B : rate = k1 * tanh(A) + k2 * logistic(B - A) * A\n"
                                 "B -> C : rate = pow(B, k3) * erf(k2 * B) + abs(A - B) * k3\n"
                                 "C -> A : rate = log1p(C) * expm1(k3 * C) + (1 + sin(k1 * C)^2) * cos(k2)^2 * C\n"
                                 "A -> C : rate = log10(1 + A) * sigmoid(k1) * A\n";

/* The lowered graph (SLEEF's kernels) against the double evaluator (libm),
 * within a few ulp: the two are different code, no bitwise contract */
static void test_models_rhs_functions_match_reference(void **state)
{
    (void)state;
    remat_mechanism *m = parse(FUNCS);
    enum { S = 3, P = 3 };
    remat_fn *f = remat_kinetics_rhs_fn(m, REMAT_F64);
    assert_non_null(f);
    remat_program *prog = compile_ok(f);
    for (int trial = 0; trial < 50; trial++) {
        double t = 0, y[S], p[P], got[S], want[S];
        for (int i = 0; i < S; i++)
            y[i] = urand(0.05, 2);
        for (int i = 0; i < P; i++)
            p[i] = urand(0.1, 2);
        run(prog, (double *[]){&t, y, p}, (double *[]){got}, NULL);
        ref_rhs(m, t, y, p, want);
        for (int i = 0; i < S; i++)
            assert_close(got[i], want[i], 1e-13, 1e-14);
    }
    remat_program_free(prog);
    remat_fn_free(f);
    remat_mechanism_free(m);
}

/* Their derivatives (the graph's VJPs) with respect to every species and
 * parameter, against central differences */
static void test_models_rhs_functions_gradient(void **state)
{
    (void)state;
    remat_mechanism *m = parse(FUNCS);
    enum { S = 3, P = 3 };
    remat_fn *f = remat_fn_new("w_rhs");
    remat_val y = remat_arg(f, "y", REMAT_F64, 1, DIMS(S));
    remat_val p = remat_arg(f, "p", REMAT_F64, 1, DIMS(P));
    double w[S] = {0.3, -1.1, 0.7};
    remat_val dydt;
    assert_ok(remat_kinetics_rhs(f, m, REMAT_NONE, y, p, &dydt));
    remat_fn_output(f, remat_sum_all(f, remat_mul(f, dydt, remat_const_data(f, REMAT_F64, 1, DIMS(S), w))));
    remat_fn *g;
    assert_ok(remat_grad(f, 0, NULL, &g));
    remat_program *pf = compile_ok(f), *pg = compile_ok(g);
    /* A - B away from 0 (abs's kink) */
    double yv[S] = {0.9, 0.35, 0.6}, pv[P] = {0.7, 1.3, 0.4}, dy[S], dp[P];
    run(pg, (double *[]){yv, pv}, (double *[]){dy, dp}, NULL);
    double *vars[2] = {yv, pv}, *grads[2] = {dy, dp};
    for (int a = 0; a < 2; a++)
        for (int i = 0; i < 3; i++) {
            double x = vars[a][i], h = 1e-6, lp, lm;
            vars[a][i] = x + h;
            run(pf, vars, (double *[]){&lp}, NULL);
            vars[a][i] = x - h;
            run(pf, vars, (double *[]){&lm}, NULL);
            vars[a][i] = x;
            assert_true(fabs(grads[a][i]) > 1e-3); /* every input matters */
            assert_close(grads[a][i], (lp - lm) / (2 * h), 1e-7, 1e-8);
        }
    remat_program_free(pf);
    remat_program_free(pg);
    remat_fn_free(f);
    remat_fn_free(g);
    remat_mechanism_free(m);
}

static void test_models_rhs_bad_input_names_the_input(void **state)
{
    (void)state;
    remat_mechanism *m = parse(NET5);
    remat_fn *f = remat_fn_new("bad");
    remat_val t = remat_arg(f, "t", REMAT_F64, 0, NULL);
    remat_val y4 = remat_arg(f, "y", REMAT_F64, 1, DIMS(4));
    remat_val y5 = remat_arg(f, "y5", REMAT_F64, 1, DIMS(5));
    remat_val y32 = remat_arg(f, "y32", REMAT_F32, 1, DIMS(5));
    remat_val p3 = remat_arg(f, "p3", REMAT_F64, 1, DIMS(3));
    remat_val p5 = remat_arg(f, "p5", REMAT_F64, 1, DIMS(5));
    remat_val tv = remat_arg(f, "tv", REMAT_F64, 1, DIMS(2));
    remat_val d = 7;
    assert_int_equal(remat_kinetics_rhs(f, m, t, y4, p5, &d), REMAT_ERR_SHAPE);
    assert_int_equal(d, REMAT_NONE);
    assert_contains(remat_last_error(), "has 5 species");
    assert_int_equal(remat_kinetics_rhs(f, m, t, y5, p3, &d), REMAT_ERR_SHAPE);
    assert_contains(remat_last_error(), "5 parameters");
    assert_int_equal(remat_kinetics_rhs(f, m, t, y32, p5, &d), REMAT_ERR_DTYPE);
    assert_int_equal(remat_kinetics_rhs(f, m, tv, y5, p5, &d), REMAT_ERR_SHAPE);
    assert_contains(remat_last_error(), "t is f64[2]");
    assert_int_equal(remat_kinetics_rhs(f, m, t, y5, REMAT_NONE, &d), REMAT_ERR_NULL);
    assert_contains(remat_last_error(), "params is REMAT_NONE");
    assert_int_equal(remat_kinetics_rhs(f, m, REMAT_NONE, y5, p5, &d), REMAT_ERR_NULL);
    assert_contains(remat_last_error(), "independent variable 't'");
    assert_int_equal(remat_kinetics_rhs(NULL, m, t, y5, p5, &d), REMAT_ERR_NULL);
    assert_int_equal(remat_kinetics_rhs(f, NULL, t, y5, p5, &d), REMAT_ERR_NULL);
    assert_int_equal(remat_kinetics_rhs(f, m, t, 9999, p5, &d), REMAT_ERR_ARG);
    /* the good call still works: errors above left f clean */
    assert_ok(remat_kinetics_rhs(f, m, t, y5, p5, &d));
    remat_fn_free(f);
    remat_mechanism_free(m);
}

/* ---- steps ---- */

static void test_models_step_body_matches_tableau_written_out(void **state)
{
    (void)state;
    remat_mechanism *m = parse(NET5);
    enum { S = 5, P = 5 };
    double p[P] = {1.2, 0.4, 0.7, 0.9, 0.3};
    for (int meth = 0; meth < REMAT_ODE_METHOD_COUNT; meth++) {
        if (meth == REMAT_ODE_BDF)
            continue; /* multistep, adaptive only: no fixed step (test_models_bdf.c) */
        remat_fn *body = remat_ode_step_body(m, (remat_ode_method)meth, REMAT_F64);
        assert_non_null(body);
        assert_int_equal(remat_fn_num_args(body), 4);
        remat_program *prog = compile_ok(body);
        double y[S], t = 0.4, h = 0.05, got[S], want[S];
        memcpy(y, NET5_Y0, sizeof y);
        for (int step = 0; step < 5; step++) {
            run(prog, (double *[]){y, &t, &h, p}, (double *[]){got}, NULL);
            ref_step(m, (remat_ode_method)meth, t, h, y, p, want);
            /* a Rosenbrock reference takes J from differences (test_models_util.c) */
            double rel = rmi_ode_tableau((remat_ode_method)meth)->ros ? 1e-11 : 1e-13;
            for (int i = 0; i < S; i++)
                assert_close(got[i], want[i], rel, 1e-15);
            memcpy(y, got, sizeof y);
            t += h;
        }
        remat_program_free(prog);
        remat_fn_free(body);
    }
    remat_mechanism_free(m);
}

/* Order conditions up to order 5 for the Tsit5 weights (Butcher's trees),
 * and row sums a_i = c_i for every tableau: a table typo breaks them. */
static void test_models_tableaus_satisfy_order_conditions(void **state)
{
    (void)state;
    for (int meth = 0; meth < REMAT_ODE_METHOD_COUNT; meth++) {
        if (meth == REMAT_ODE_BDF)
            continue; /* multistep, adaptive only: no fixed step (test_models_bdf.c) */
        const ode_tableau *tb = rmi_ode_tableau((remat_ode_method)meth);
        if (tb->ros)
            continue; /* Rosenbrock conditions differ: test_models_rodas.c */
        int s = tb->stages;
        double A[ODE_MAX_STAGES][ODE_MAX_STAGES] = {{0}};
        for (int i = 1; i < s; i++)
            for (int j = 0; j < i; j++)
                A[i][j] = tb->a[i * (i - 1) / 2 + j];
        for (int i = 0; i < s; i++) {
            double r = 0;
            for (int j = 0; j < i; j++)
                r += A[i][j];
            assert_close(r, tb->c[i], 1e-14, 1e-15);
        }
        const double *b = tb->b, *c = tb->c;
        double Ac[ODE_MAX_STAGES] = {0}, Ac2[ODE_MAX_STAGES] = {0}, AAc[ODE_MAX_STAGES] = {0};
        for (int i = 0; i < s; i++)
            for (int j = 0; j < s; j++) {
                Ac[i] += A[i][j] * c[j];
                Ac2[i] += A[i][j] * c[j] * c[j];
            }
        for (int i = 0; i < s; i++)
            for (int j = 0; j < s; j++)
                AAc[i] += A[i][j] * Ac[j];
        double cond[9] = {0};
        for (int i = 0; i < s; i++) {
            cond[0] += b[i];
            cond[1] += b[i] * c[i];
            cond[2] += b[i] * c[i] * c[i];
            cond[3] += b[i] * Ac[i];
            cond[4] += b[i] * c[i] * c[i] * c[i];
            cond[5] += b[i] * c[i] * Ac[i];
            cond[6] += b[i] * Ac2[i];
            cond[7] += b[i] * AAc[i];
            cond[8] += b[i] * c[i] * c[i] * c[i] * c[i];
        }
        const double want[9] = {1, 1. / 2, 1. / 3, 1. / 6, 1. / 4, 1. / 8, 1. / 12, 1. / 24, 1. / 5};
        int nconds = tb->order >= 5 ? 9 : tb->order >= 4 ? 8 : tb->order >= 1 ? 1 : 0;
        for (int k = 0; k < nconds; k++)
            if (fabs(cond[k] - want[k]) > 1e-13)
                fail_msg("%s: order condition %d: %.17g, expected %.17g", tb->name, k, cond[k], want[k]);
    }
    assert_string_equal(remat_ode_method_name(REMAT_ODE_TSIT5), "tsit5");
    assert_int_equal(remat_ode_method_order(REMAT_ODE_RK4), 4);
    assert_int_equal(remat_ode_method_stages(REMAT_ODE_TSIT5), 6);
    remat_ode_method mm;
    assert_ok(remat_ode_method_parse("rk4", &mm));
    assert_int_equal(mm, REMAT_ODE_RK4);
    assert_int_equal(remat_ode_method_parse("rk45", &mm), REMAT_ERR_PARSE);
    assert_contains(remat_last_error(), "'rk45'");
}

/* The real stability intervals (Hairer-Wanner II, IV.2, Fig. 2.1): Euler's
 * is exactly 2, RK4's the root of 1 - x + x^2/2 - x^3/6 + x^4/24 = 1, 2.7853;
 * the fifth-order pairs' lie past RK4's; Rodas5 is A-stable. */
static void test_models_stability_bounds(void **state)
{
    (void)state;
    assert_true(fabs(remat_ode_stability_bound(REMAT_ODE_EULER) - 2) < 1e-9);
    assert_true(fabs(remat_ode_stability_bound(REMAT_ODE_RK4) - 2.785293563) < 1e-6);
    for (int m = REMAT_ODE_TSIT5; m <= REMAT_ODE_DOPRI5; m++)
        if (m != REMAT_ODE_RODAS5) {
            double x = remat_ode_stability_bound((remat_ode_method)m);
            if (!(x > 3 && x < 4))
                fail_msg("%s: stability bound %g", remat_ode_method_name((remat_ode_method)m), x);
        }
    assert_true(isinf(remat_ode_stability_bound(REMAT_ODE_RODAS5)));
    assert_true(isinf(remat_ode_stability_bound(REMAT_ODE_BDF)));
    assert_true(remat_ode_stability_bound(REMAT_ODE_METHOD_COUNT) == 0);
}

/* ---- main ---- */

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_models_rhs_matches_reference_evaluator),
        cmocka_unit_test(test_models_rhs_batched_rows_match_unbatched),
        cmocka_unit_test(test_models_rhs_walks_shared_nodes_once),
        cmocka_unit_test(test_models_rhs_gradient_matches_finite_differences),
        cmocka_unit_test(test_models_rhs_arrhenius_gradient),
        cmocka_unit_test(test_models_rhs_functions_match_reference),
        cmocka_unit_test(test_models_rhs_functions_gradient),
        cmocka_unit_test(test_models_rhs_bad_input_names_the_input),
        cmocka_unit_test(test_models_step_body_matches_tableau_written_out),
        cmocka_unit_test(test_models_tableaus_satisfy_order_conditions),
        cmocka_unit_test(test_models_stability_bounds),
    };
    rng_seed(0x2545f4914f6cdd1dull);
    return cmocka_run_group_tests(tests, NULL, NULL);
}

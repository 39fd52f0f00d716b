/*
 * test_models.c — models on top of the core: a mechanism's right-hand side
 * lowered to graph ops (remat/kinetics.h), the fixed-step integrators as
 * scans (remat/ode.h) and Adam (remat/optim.h).
 *
 * Every expectation comes from outside the code under test: the mechanism's
 * double evaluator (remat_mechanism_eval_rhs), steps of the tableaus written
 * out here in plain C, closed forms (the exact discrete Euler solution of
 * A->B->C and the ODE's analytic solution), central finite differences in
 * f64, optax's Adam formulas written out here, and the seed values
 * (/work/shared/reference/seed_values.json: pfr_euler, pfr_tsit5_fixed,
 * pfr_adam_fit; the full-precision Euler numbers were re-derived in f64).
 * Schedules are held to the store-all result bit for bit.
 */
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/ode/ode_impl.h"
#include "remat/remat.h"

#define MAXV 64

/* ---- helpers (the shared ones are in test_util.h) ---- */

/* |got - want| <= rel * |want| + abs */
#define assert_close(got, want, rel, abs_)                                                                  \
    do {                                                                                                    \
        double g_ = (got), w_ = (want);                                                                     \
        if (!(fabs(g_ - w_) <= (rel) * fabs(w_) + (abs_)))                                                  \
            fail_msg("%s = %.17g, expected %.17g (diff %.3g)", #got, g_, w_, g_ - w_);                       \
    } while (0)

/* Runs p on f64 buffers; shapes come from the program. */
static void run(remat_program *p, double *const *in, double *const *out, remat_stats *st)
{
    int ni = remat_program_num_inputs(p), no = remat_program_num_outputs(p);
    remat_tensor ti[16], to[16];
    assert_true(ni <= 16 && no <= 16);
    for (int i = 0; i < ni; i++) {
        ti[i] = remat_program_input_desc(p, i);
        ti[i].data = in[i];
    }
    for (int i = 0; i < no; i++) {
        to[i] = remat_program_output_desc(p, i);
        to[i].data = out[i];
    }
    if (remat_run(p, ni, ti, no, to, st) != REMAT_OK)
        fail_msg("run: %s", remat_last_error());
}

static const char *ABC = "A -> B : k1\nB -> C : k2\nparam k1 = 1.0\nparam k2 = 0.5";

/* Five species: a reversible step, two second-order steps, a rate constant
 * from a t-dependent let with consts and exp, an explicit rate with a
 * non-integer power, sqrt and min, and a power with a parameter exponent. */
static const char *NET5 = "species A, B, C, D, E\n"
                          "param k1 = 1.2\n"
                          "param kr = 0.4\n"
                          "param k2 = 0.7\n"
                          "param k3 = 0.9\n"
                          "param Ea = 0.3\n"
                          "const R = 1.5\n"
                          "let T = 1 + 0.2 * t\n"
                          "let k4 = k3 * exp(-Ea / (R * T))\n"
                          "let kv = 0.2 * k2 ^ (1 + 0.5 * Ea)\n"
                          "A + B -> C : k2          # second order\n"
                          "C <=> D : k1, kr         # reversible\n"
                          "2 D -> E : k4            # second order in D\n"
                          "E -> A : sqrt(k1) * E^1.5 / (1 + min(E, 5))\n"
                          "B -> : kv\n";
static const double NET5_Y0[5] = {1.0, 0.8, 0.1, 0.0, 0.05};

/* ---- reference steps in plain C (the tableaus written out) ---- */

static void ref_rhs(const remat_mechanism *m, double t, const double *y, const double *p, double *dydt)
{
    assert_ok(remat_mechanism_eval_rhs(m, t, y, p, dydt));
}

static void ref_step(const remat_mechanism *m, remat_ode_method method, double t, double h, const double *y,
                     const double *p, double *out)
{
    int S = remat_mechanism_species_count(m);
    double k[7][MAXV], yi[MAXV];
    static const double tsit_c[6] = {0.0, 0.161, 0.327, 0.9, 0.9800255409045097, 1.0};
    static const double tsit_a[6][5] = {
        {0},
        {0.161},
        {-0.008480655492356989, 0.335480655492357},
        {2.8971530571054935, -6.359448489975075, 4.3622954328695815},
        {5.325864828439257, -11.748883564062828, 7.4955393428898365, -0.09249506636175525},
        {5.86145544294642, -12.92096931784711, 8.159367898576159, -0.071584973281401, -0.028269050394068383},
    };
    static const double tsit_b[6] = {0.09646076681806523, 0.01, 0.4798896504144996,
                                     1.379008574103742, -3.290069515436081, 2.324710524099774};
    switch (method) {
    case REMAT_ODE_EULER:
        ref_rhs(m, t, y, p, k[0]);
        for (int i = 0; i < S; i++)
            out[i] = y[i] + h * k[0][i];
        return;
    case REMAT_ODE_RK4:
        ref_rhs(m, t, y, p, k[0]);
        for (int i = 0; i < S; i++)
            yi[i] = y[i] + 0.5 * h * k[0][i];
        ref_rhs(m, t + 0.5 * h, yi, p, k[1]);
        for (int i = 0; i < S; i++)
            yi[i] = y[i] + 0.5 * h * k[1][i];
        ref_rhs(m, t + 0.5 * h, yi, p, k[2]);
        for (int i = 0; i < S; i++)
            yi[i] = y[i] + h * k[2][i];
        ref_rhs(m, t + h, yi, p, k[3]);
        for (int i = 0; i < S; i++)
            out[i] = y[i] + h / 6 * (k[0][i] + 2 * k[1][i] + 2 * k[2][i] + k[3][i]);
        return;
    case REMAT_ODE_TSIT5:
        for (int s = 0; s < 6; s++) {
            for (int i = 0; i < S; i++) {
                yi[i] = y[i];
                for (int j = 0; j < s; j++)
                    yi[i] += h * tsit_a[s][j] * k[j][i];
            }
            ref_rhs(m, t + tsit_c[s] * h, yi, p, k[s]);
        }
        for (int i = 0; i < S; i++) {
            out[i] = y[i];
            for (int s = 0; s < 6; s++)
                out[i] += h * tsit_b[s] * k[s][i];
        }
        return;
    default: fail_msg("bad method");
    }
}

/* ---- graph builders ---- */

/* f(y0: (S,), params: (P,)) -> states at the output times (n_times, S) */
static remat_fn *states_fn(const remat_mechanism *m, const remat_ode_options *opt)
{
    int64_t S = remat_mechanism_species_count(m), P = remat_mechanism_param_count(m);
    remat_fn *f = remat_fn_new("states");
    remat_val y0 = remat_arg(f, "y0", REMAT_F64, 1, &S);
    remat_val p = remat_arg(f, "params", REMAT_F64, 1, &P);
    remat_val ys;
    assert_ok(remat_ode_integrate(f, m, opt, y0, p, &ys));
    remat_fn_output(f, ys);
    assert_int_equal(remat_fn_status(f), REMAT_OK);
    return f;
}

/* f(y0, params) -> sum(W * states): a scalar touching every output */
static remat_fn *weighted_loss_fn(const remat_mechanism *m, const remat_ode_options *opt, const double *w)
{
    int64_t S = remat_mechanism_species_count(m), P = remat_mechanism_param_count(m);
    remat_fn *f = remat_fn_new("loss");
    remat_val y0 = remat_arg(f, "y0", REMAT_F64, 1, &S);
    remat_val p = remat_arg(f, "params", REMAT_F64, 1, &P);
    remat_val ys;
    assert_ok(remat_ode_integrate(f, m, opt, y0, p, &ys));
    remat_val W = remat_const_data(f, REMAT_F64, 2, DIMS(opt->n_times, S), w);
    remat_fn_output(f, remat_sum_all(f, remat_mul(f, W, ys)));
    assert_int_equal(remat_fn_status(f), REMAT_OK);
    return f;
}

/* The seed's objective: -C_B at the outlet, f(y0, k) */
static remat_fn *neg_cb_fn(const remat_mechanism *m, const remat_ode_options *opt)
{
    remat_fn *f = remat_fn_new("neg_cb");
    remat_val y0 = remat_arg(f, "C0", REMAT_F64, 1, DIMS(3));
    remat_val k = remat_arg(f, "k", REMAT_F64, 1, DIMS(2));
    remat_val ys;
    assert_ok(remat_ode_integrate(f, m, opt, y0, k, &ys));
    remat_fn_output(f, remat_neg(f, remat_index(f, remat_index(f, ys, opt->n_times - 1), 1)));
    assert_int_equal(remat_fn_status(f), REMAT_OK);
    return f;
}

/* ---- the right-hand side ---- */

static void check_rhs_against_reference(const char *text, int trials)
{
    remat_mechanism *m = parse(text);
    int S = remat_mechanism_species_count(m), P = remat_mechanism_param_count(m);
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
        remat_fn *body = remat_ode_step_body(m, (remat_ode_method)meth, REMAT_F64);
        assert_non_null(body);
        assert_int_equal(remat_fn_num_args(body), 4);
        remat_program *prog = compile_ok(body);
        double y[S], t = 0.4, h = 0.05, got[S], want[S];
        memcpy(y, NET5_Y0, sizeof y);
        for (int step = 0; step < 5; step++) {
            run(prog, (double *[]){y, &t, &h, p}, (double *[]){got}, NULL);
            ref_step(m, (remat_ode_method)meth, t, h, y, p, want);
            for (int i = 0; i < S; i++)
                assert_close(got[i], want[i], 1e-13, 1e-15);
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
        const ode_tableau *tb = remat_ode_tableau((remat_ode_method)meth);
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

/* ---- the seeds ---- */

/* seed 004 section 7, seed_values.json pfr_euler; the full-precision values
 * are the same computation re-derived in f64 (jax_enable_x64). */
static void test_models_euler_seed_pfr(void **state)
{
    (void)state;
    remat_mechanism *m = parse(ABC);
    const char *schedules[] = {"store-all", "binomial:10", "online:10"};
    double C0[3] = {1, 0, 0}, k[2] = {1.0, 0.5}, g_ref[2] = {0};
    for (int s = 0; s < 3; s++) {
        remat_ode_options opt = {.method = REMAT_ODE_EULER, .t0 = 0, .n_times = 1, .times = (double[]){10.0},
                                 .dt = 0.01, .scan = {.schedule = spec_of(schedules[s])}};
        int64_t total;
        assert_ok(remat_ode_count_steps(&opt, NULL, &total));
        assert_int_equal(total, 1000);
        if (s == 0) {
            remat_fn *f = states_fn(m, &opt);
            remat_program *p = compile_ok(f);
            double y[3];
            run(p, (double *[]){C0, k}, (double *[]){y}, NULL);
            printf("  euler seed: A=%.17g B=%.17g C=%.17g sum=%.17g\n", y[0], y[1], y[2], y[0] + y[1] + y[2]);
            assert_close(y[0], 4.317124741065819e-05, 1e-12, 0);
            assert_close(y[1], 0.013221594662842685, 1e-12, 0);
            assert_close(y[2], 0.9867352340897478, 1e-12, 0);
            assert_close(y[0] + y[1] + y[2], 1.0, 0, 1e-12);
            assert_printed("%.6f", y[0], "0.000043");
            assert_printed("%.6f", y[1], "0.013222");
            assert_printed("%.6f", y[2], "0.986735");
            remat_program_free(p);
            remat_fn_free(f);
        }
        remat_fn *f = neg_cb_fn(m, &opt), *g;
        assert_ok(remat_grad(f, 1, (int[]){1}, &g));
        remat_program *p = compile_ok(g);
        double dk[2];
        remat_stats st;
        run(p, (double *[]){C0, k}, (double *[]){dk}, &st);
        printf("  euler seed %-11s: d(-C_B)/dk1=%.17g d(-C_B)/dk2=%.17g (forward evals %lld)\n", schedules[s],
               dk[0], dk[1], (long long)st.forward_evals);
        assert_close(dk[0], 0.012349448250506132, 1e-10, 0);
        assert_close(dk[1], 0.10730492281164114, 1e-10, 0);
        assert_printed("%.6f", dk[0], "0.012349");
        assert_printed("%.6f", dk[1], "0.107305");
        if (s == 0)
            memcpy(g_ref, dk, sizeof dk);
        else
            assert_memory_equal(dk, g_ref, sizeof dk); /* schedules change memory, never bits */
        remat_schedule_cost cost;
        assert_ok(remat_schedule_predict(&opt.scan.schedule, 1000, &cost));
        assert_int_equal(st.forward_evals, cost.forward_evals);
        remat_program_free(p);
        remat_fn_free(f);
        remat_fn_free(g);
    }
    remat_mechanism_free(m);
}

/* y_{n+1} = (I + hK) y_n has the closed form A_n = (1-hk1)^n,
 * B_n = k1/(k2-k1) ((1-hk1)^n - (1-hk2)^n), C_n = 1 - A_n - B_n. */
static void test_models_euler_matches_exact_discrete_solution(void **state)
{
    (void)state;
    remat_mechanism *m = parse(ABC);
    const double times[4] = {0.0, 1.0, 2.5, 10.0};
    const int64_t at_step[4] = {0, 100, 250, 1000};
    double C0[3] = {1, 0, 0}, k[2] = {1.0, 0.5}, h = 0.01, y[12];
    remat_ode_options opt = {.method = REMAT_ODE_EULER, .n_times = 4, .times = times, .dt = h};
    int64_t steps[4], total;
    assert_ok(remat_ode_count_steps(&opt, steps, &total));
    assert_int_equal(steps[0], 0);
    assert_int_equal(steps[1], 100);
    assert_int_equal(steps[2], 150);
    assert_int_equal(steps[3], 750);
    remat_fn *f = states_fn(m, &opt);
    remat_program *p = compile_ok(f);
    run(p, (double *[]){C0, k}, (double *[]){y}, NULL);
    double worst = 0;
    for (int r = 0; r < 4; r++) {
        double n = (double)at_step[r], a = pow(1 - h * k[0], n), b2 = pow(1 - h * k[1], n);
        double A = a, B = k[0] / (k[1] - k[0]) * (a - b2), C = 1 - A - B;
        assert_close(y[3 * r + 0], A, 0, 1e-13);
        assert_close(y[3 * r + 1], B, 0, 1e-13);
        assert_close(y[3 * r + 2], C, 0, 1e-13);
        worst = fmax(worst, fmax(fabs(y[3 * r] - A), fmax(fabs(y[3 * r + 1] - B), fabs(y[3 * r + 2] - C))));
    }
    printf("  euler vs exact discrete solution: max |diff| = %.3g\n", worst);
    remat_program_free(p);
    remat_fn_free(f);
    remat_mechanism_free(m);
}

/* B(t) = k1/(k2-k1) (e^{-k1 t} - e^{-k2 t}) and its k-derivatives */
static void abc_exact(double t, double k1, double k2, double *B, double *dk1, double *dk2)
{
    double e1 = exp(-k1 * t), e2 = exp(-k2 * t), d = k2 - k1;
    *B = k1 / d * (e1 - e2);
    *dk1 = k2 / (d * d) * (e1 - e2) - k1 * t * e1 / d;
    *dk2 = -k1 / (d * d) * (e1 - e2) + k1 * t * e2 / d;
}

/* seed 004 section 8 (diffrax Tsit5, ConstantStepSize dt0=0.01),
 * seed_values.json pfr_tsit5_fixed */
static void test_models_tsit5_seed_pfr(void **state)
{
    (void)state;
    remat_mechanism *m = parse(ABC);
    remat_ode_options opt = {.method = REMAT_ODE_TSIT5, .t0 = 0, .n_times = 1, .times = (double[]){10.0},
                             .dt = 0.01, .scan = {.schedule = spec_of("binomial:10")}};
    remat_fn *f = neg_cb_fn(m, &opt), *g;
    assert_ok(remat_value_and_grad(f, 1, (int[]){1}, &g));
    remat_program *pg = compile_ok(g), *pf = compile_ok(f);
    double C0[3] = {1, 0, 0}, k[2] = {1.0, 0.5}, loss, dk[2];
    run(pg, (double *[]){C0, k}, (double *[]){&loss, dk}, NULL);
    double CB = -loss, dCB[2] = {-dk[0], -dk[1]};
    printf("  tsit5 seed: C_B=%.17g dC_B/dk1=%.17g dC_B/dk2=%.17g\n", CB, dCB[0], dCB[1]);
    assert_printed("%.6f", CB, "0.013385");
    assert_printed("%.6f", dCB[0], "-0.012477");
    assert_printed("%.6f", dCB[1], "-0.107989");
    /* a tight reference: the ODE's solution (Tsit5 at h = 0.01 is ~1e-12 off) */
    double B, d1, d2;
    abc_exact(10.0, 1.0, 0.5, &B, &d1, &d2);
    printf("  analytic:   C_B=%.17g dC_B/dk1=%.17g dC_B/dk2=%.17g\n", B, d1, d2);
    assert_close(CB, B, 1e-9, 0);
    assert_close(dCB[0], d1, 1e-9, 0);
    assert_close(dCB[1], d2, 1e-9, 0);
    /* and the discrete derivative itself by central differences */
    for (int i = 0; i < 2; i++) {
        double x = k[i], h = 1e-6, lp, lm;
        k[i] = x + h;
        run(pf, (double *[]){C0, k}, (double *[]){&lp}, NULL);
        k[i] = x - h;
        run(pf, (double *[]){C0, k}, (double *[]){&lm}, NULL);
        k[i] = x;
        assert_close(dk[i], (lp - lm) / (2 * h), 1e-7, 1e-11);
    }
    remat_program_free(pf);
    remat_program_free(pg);
    remat_fn_free(f);
    remat_fn_free(g);
    remat_mechanism_free(m);
}

/* seed 004 section 7, seed_values.json pfr_adam_fit: optax.adam(0.1) on
 * -C_B, 50 iterations from (0.5, 0.3), params = max(params, 0.01) */
static void test_models_adam_seed_fit(void **state)
{
    (void)state;
    remat_mechanism *m = parse(ABC);
    remat_ode_options opt = {.method = REMAT_ODE_EULER, .t0 = 0, .n_times = 1, .times = (double[]){10.0},
                             .dt = 0.01, .scan = {.schedule = spec_of("binomial:10")}};
    remat_fn *f = neg_cb_fn(m, &opt), *g;
    assert_ok(remat_value_and_grad(f, 1, (int[]){1}, &g));
    remat_program *pg = compile_ok(g), *pf = compile_ok(f);
    remat_adam_options o = remat_adam_optax(0.1);
    o.lo = (double[]){0.01, 0.01};
    remat_adam *adam;
    assert_ok(remat_adam_new(2, &o, &adam));
    double C0[3] = {1, 0, 0}, params[2] = {0.5, 0.3}, loss, grads[2];
    int row = 0;
    for (int i = 0; i < 50; i++) {
        run(pg, (double *[]){C0, params}, (double *[]){&loss, grads}, NULL);
        assert_ok(remat_adam_update(adam, params, grads));
        if (row < SEED_ADAM_ROWS && seed_adam_table[row].it == i) {
            printf("  adam %-3d k1=%.17g k2=%.17g C_B=%.17g\n", i, params[0], params[1], -loss);
            assert_seed_adam(&seed_adam_table[row], params[0], params[1], -loss);
            row++;
        }
    }
    assert_int_equal(row, SEED_ADAM_ROWS);
    assert_int_equal(remat_adam_count(adam), 50);
    run(pf, (double *[]){C0, params}, (double *[]){&loss}, NULL);
    printf("  adam optimum: k1=%.17g k2=%.17g C_B=%.17g\n", params[0], params[1], -loss);
    assert_seed_adam(&seed_adam_final, params[0], params[1], -loss);
    remat_adam_free(adam);
    remat_program_free(pf);
    remat_program_free(pg);
    remat_fn_free(f);
    remat_fn_free(g);
    remat_mechanism_free(m);
}

/* ---- integration ---- */

/* The integrator against the tableau steps written out here, on a
 * non-uniform output grid whose intervals are not multiples of dt. */
static void test_models_integrate_matches_reference_steps(void **state)
{
    (void)state;
    remat_mechanism *m = parse(NET5);
    enum { S = 5, P = 5, K = 3 };
    const double times[K] = {0.3, 1.0, 2.45};
    double p[P] = {1.2, 0.4, 0.7, 0.9, 0.3}, y0[S];
    memcpy(y0, NET5_Y0, sizeof y0);
    for (int meth = 0; meth < REMAT_ODE_METHOD_COUNT; meth++) {
        remat_ode_options opt = {.method = (remat_ode_method)meth, .t0 = 0.1, .n_times = K, .times = times,
                                 .dt = 0.07};
        int64_t steps[K];
        assert_ok(remat_ode_count_steps(&opt, steps, NULL));
        assert_int_equal(steps[0], 3);  /* 0.2 / 0.07 = 2.86 */
        assert_int_equal(steps[1], 10); /* 0.7 / 0.07 = 10 (to rounding) */
        assert_int_equal(steps[2], 21); /* 1.45 / 0.07 = 20.7 */
        remat_fn *f = states_fn(m, &opt);
        remat_program *prog = compile_ok(f);
        double got[K * S], y[S], next[S], prev = opt.t0;
        run(prog, (double *[]){y0, p}, (double *[]){got}, NULL);
        memcpy(y, y0, sizeof y);
        for (int k = 0; k < K; k++) {
            double h = (times[k] - prev) / (double)steps[k];
            for (int64_t j = 0; j < steps[k]; j++) {
                ref_step(m, (remat_ode_method)meth, prev + (double)j * h, h, y, p, next);
                memcpy(y, next, sizeof y);
            }
            for (int i = 0; i < S; i++)
                assert_close(got[k * S + i], y[i], 1e-12, 1e-14);
            prev = times[k];
        }
        remat_program_free(prog);
        remat_fn_free(f);
    }
    remat_mechanism_free(m);
}

/* Splitting the grid at an extra output time changes nothing: the states at
 * the common times are bit for bit those of the unsplit run, and a chain of
 * single-interval runs reproduces the multi-output run exactly. */
static void test_models_outputs_land_exactly_on_data_times(void **state)
{
    (void)state;
    remat_mechanism *m = parse(NET5);
    enum { S = 5, P = 5 };
    double p[P] = {1.2, 0.4, 0.7, 0.9, 0.3}, y0[S];
    memcpy(y0, NET5_Y0, sizeof y0);
    const double times[3] = {0.5, 1.5, 4.0};
    remat_ode_options opt = {.method = REMAT_ODE_TSIT5, .t0 = 0.0, .n_times = 3, .times = times, .dt = 0.1};
    remat_fn *f = states_fn(m, &opt);
    remat_program *prog = compile_ok(f);
    double all[3 * S];
    run(prog, (double *[]){y0, p}, (double *[]){all}, NULL);
    remat_program_free(prog);
    remat_fn_free(f);
    /* the same three intervals as three separate integrations, chained */
    double y[S], prev = 0.0;
    memcpy(y, y0, sizeof y);
    for (int k = 0; k < 3; k++) {
        remat_ode_options one = opt;
        one.t0 = prev;
        one.n_times = 1;
        one.times = &times[k];
        f = states_fn(m, &one);
        prog = compile_ok(f);
        double out[S];
        run(prog, (double *[]){y, p}, (double *[]){out}, NULL);
        assert_memory_equal(out, all + k * S, sizeof out);
        memcpy(y, out, sizeof y);
        prev = times[k];
        remat_program_free(prog);
        remat_fn_free(f);
    }
    /* an output at t0 is y0 itself */
    remat_ode_options at0 = opt;
    at0.times = (double[]){0.0, 0.5};
    at0.n_times = 2;
    f = states_fn(m, &at0);
    prog = compile_ok(f);
    double two[2 * S];
    run(prog, (double *[]){y0, p}, (double *[]){two}, NULL);
    assert_memory_equal(two, y0, sizeof y0);
    assert_memory_equal(two + S, all, sizeof y0);
    remat_program_free(prog);
    remat_fn_free(f);
    remat_mechanism_free(m);
}

static void test_models_batched_integration_matches_rows(void **state)
{
    (void)state;
    remat_mechanism *m = parse(NET5);
    enum { B = 3, S = 5, P = 5, K = 2 };
    double p[P] = {1.2, 0.4, 0.7, 0.9, 0.3}, y0[B * S];
    for (int i = 0; i < B * S; i++)
        y0[i] = urand(0.05, 1.0);
    remat_ode_options opt = {.method = REMAT_ODE_RK4, .n_times = K, .times = (double[]){0.5, 1.0}, .dt = 0.05};
    remat_fn *f = remat_fn_new("batched");
    remat_val yv = remat_arg(f, "y0", REMAT_F64, 2, DIMS(B, S));
    remat_val pv = remat_arg(f, "p", REMAT_F64, 1, DIMS(P));
    remat_val ys;
    assert_ok(remat_ode_integrate(f, m, &opt, yv, pv, &ys));
    remat_shape sh = remat_val_shape(f, ys);
    assert_int_equal(sh.rank, 3);
    assert_int_equal(sh.dims[0], K);
    assert_int_equal(sh.dims[1], B);
    assert_int_equal(sh.dims[2], S);
    remat_fn_output(f, ys);
    remat_program *prog = compile_ok(f);
    double got[K * B * S];
    run(prog, (double *[]){y0, p}, (double *[]){got}, NULL);
    remat_fn *f1 = states_fn(m, &opt);
    remat_program *p1 = compile_ok(f1);
    for (int b = 0; b < B; b++) {
        double row[K * S];
        run(p1, (double *[]){y0 + b * S, p}, (double *[]){row}, NULL);
        for (int k = 0; k < K; k++)
            for (int i = 0; i < S; i++)
                assert_close(got[(k * B + b) * S + i], row[k * S + i], 1e-14, 1e-16);
    }
    remat_program_free(p1);
    remat_fn_free(f1);
    remat_program_free(prog);
    remat_fn_free(f);
    remat_mechanism_free(m);
}

/* Reverse mode through every integrator and several schedules against
 * central differences of the same discrete map, on NET5 (reversible and
 * second-order steps, a t-dependent rate), outputs at three data times. */
static void test_models_gradients_match_finite_differences(void **state)
{
    (void)state;
    remat_mechanism *m = parse(NET5);
    enum { S = 5, P = 5, K = 3 };
    const char *schedules[] = {"store-all", "per-step", "periodic:4", "two-level", "binomial:3", "online:2"};
    const int NS = (int)(sizeof schedules / sizeof schedules[0]);
    double w[K * S];
    for (int i = 0; i < K * S; i++)
        w[i] = urand(-1, 1);
    double p[P] = {1.2, 0.4, 0.7, 0.9, 0.3}, y0[S];
    memcpy(y0, NET5_Y0, sizeof y0);
    for (int meth = 0; meth < REMAT_ODE_METHOD_COUNT; meth++) {
        double ref[S + P];
        for (int s = 0; s < NS; s++) {
            remat_ode_options opt = {.method = (remat_ode_method)meth, .t0 = 0.0, .n_times = K,
                                     .times = (double[]){0.4, 1.1, 2.0}, .dt = 0.1,
                                     .scan = {.schedule = spec_of(schedules[s])}};
            remat_fn *f = weighted_loss_fn(m, &opt, w), *g;
            assert_ok(remat_grad(f, 0, NULL, &g));
            remat_program *pg = compile_ok(g);
            double dy0[S], dp[P];
            run(pg, (double *[]){y0, p}, (double *[]){dy0, dp}, NULL);
            if (s == 0) {
                memcpy(ref, dy0, sizeof dy0);
                memcpy(ref + S, dp, sizeof dp);
                remat_program *pf = compile_ok(f);
                double *vars[2] = {y0, p}, *grads[2] = {dy0, dp};
                int n[2] = {S, P};
                for (int a = 0; a < 2; a++)
                    for (int i = 0; i < n[a]; i++) {
                        double x = vars[a][i], h = 1e-6, lp, lm;
                        vars[a][i] = x + h;
                        run(pf, vars, (double *[]){&lp}, NULL);
                        vars[a][i] = x - h;
                        run(pf, vars, (double *[]){&lm}, NULL);
                        vars[a][i] = x;
                        assert_close(grads[a][i], (lp - lm) / (2 * h), 1e-7, 1e-9);
                    }
                remat_program_free(pf);
            } else {
                assert_memory_equal(dy0, ref, sizeof dy0);
                assert_memory_equal(dp, ref + S, sizeof dp);
            }
            remat_program_free(pg);
            remat_fn_free(f);
            remat_fn_free(g);
        }
    }
    remat_mechanism_free(m);
}

/* With several output times the reverse pass holds one interval's store at
 * a time (each interval before the last is re-run just before it is
 * reversed): residuals are one schedule's store plus the inputs, the body
 * evaluations are each interval's schedule cost plus one forward sweep of the
 * re-run intervals, and the gradient is bit for bit the one of the
 * keep-every-store layout. */
static void test_models_reverse_holds_one_interval_store(void **state)
{
    (void)state;
    remat_mechanism *m = parse(ABC);
    const double times[4] = {2.5, 5.0, 7.5, 10.0};
    const char *schedules[] = {"binomial:10", "store-all", "periodic:25"};
    double C0[3] = {1, 0, 0}, k[2] = {1.0, 0.5};
    for (int s = 0; s < 3; s++) {
        double dk[2][2];
        size_t resid[2];
        int64_t evals[2];
        for (int keep = 0; keep < 2; keep++) {
            remat_ode_options opt = {.method = REMAT_ODE_EULER, .n_times = 4, .times = times, .dt = 0.01,
                                     .scan = {.schedule = spec_of(schedules[s])}, .keep_interval_stores = keep};
            remat_fn *f = weighted_loss_fn(m, &opt, (double[]){0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0}), *g;
            assert_ok(remat_grad(f, 1, (int[]){1}, &g));
            remat_residual_list *r;
            assert_ok(remat_fn_residuals(g, &r));
            resid[keep] = remat_residual_list_bytes(r);
            remat_residual_list_free(r);
            remat_program *p = compile_ok(g);
            remat_stats st;
            run(p, (double *[]){C0, k}, (double *[]){dk[keep]}, &st);
            evals[keep] = st.forward_evals;
            remat_program_free(p);
            remat_fn_free(f);
            remat_fn_free(g);
        }
        remat_schedule_cost cost;
        remat_schedule_spec spec = spec_of(schedules[s]);
        assert_ok(remat_schedule_predict(&spec, 250, &cost));
        printf("  4 intervals, %-11s: residual bytes %zu (every store kept: %zu), body evals %lld (%lld)\n",
               schedules[s], resid[0], resid[1], (long long)evals[0], (long long)evals[1]);
        assert_int_equal(evals[1], 4 * cost.forward_evals);
        assert_int_equal(evals[0], 4 * cost.forward_evals + 3 * 250);
        assert_true(2 * resid[0] < resid[1]); /* one store of four, plus the states */
        assert_memory_equal(dk[0], dk[1], sizeof dk[0]);
    }
    remat_mechanism_free(m);
}

/* Error of y(T) of A->B->C against the ODE's solution. */
static double abc_error(remat_ode_method meth, double T, double dt)
{
    remat_mechanism *m = parse(ABC);
    remat_ode_options opt = {.method = meth, .n_times = 1, .times = &T, .dt = dt};
    remat_fn *f = states_fn(m, &opt);
    remat_program *p = compile_ok(f);
    double C0[3] = {1, 0, 0}, k[2] = {1.0, 0.5}, y[3], B, d1, d2;
    run(p, (double *[]){C0, k}, (double *[]){y}, NULL);
    abc_exact(T, 1.0, 0.5, &B, &d1, &d2);
    double A = exp(-T), err = fmax(fabs(y[0] - A), fmax(fabs(y[1] - B), fabs(y[2] - (1 - A - B))));
    remat_program_free(p);
    remat_fn_free(f);
    remat_mechanism_free(m);
    return err;
}

/* log2 of the error ratio when dt halves, over a range where the error is
 * far above rounding and the steps small enough to be asymptotic */
static void check_order(remat_ode_method meth, double T, const double *dts, int n, double lo, double hi)
{
    double prev = abc_error(meth, T, dts[0]);
    for (int i = 1; i < n; i++) {
        double e = abc_error(meth, T, dts[i]), order = log2(prev / e);
        printf("  %s dt=%-7g error %.3e  observed order %.3f\n", remat_ode_method_name(meth), dts[i], e, order);
        if (!(order >= lo && order <= hi))
            fail_msg("%s: observed order %.3f at dt %g outside [%g, %g]", remat_ode_method_name(meth), order, dts[i],
                     lo, hi);
        prev = e;
    }
}

static void test_models_rk4_converges_with_order_4(void **state)
{
    (void)state;
    check_order(REMAT_ODE_RK4, 10.0, (double[]){0.2, 0.1, 0.05, 0.025}, 4, 3.9, 4.1);
    check_order(REMAT_ODE_EULER, 10.0, (double[]){0.02, 0.01, 0.005}, 3, 0.95, 1.05);
}

/* Tsitouras tuned the pair for a small 6th-order principal error, so its
 * observed order approaches 5 from above (5.5, 5.3, 5.2 as dt halves here,
 * the h^6 term shrinking by half each time), until rounding takes over near
 * 1e-14. Held to ~5: within [4.8, 5.6] and falling. */
static void test_models_tsit5_converges_with_order_5(void **state)
{
    (void)state;
    check_order(REMAT_ODE_TSIT5, 2.0, (double[]){0.2, 0.1, 0.05, 0.025}, 4, 4.8, 5.6);
    double e[4];
    const double dts[4] = {0.2, 0.1, 0.05, 0.025};
    for (int i = 0; i < 4; i++)
        e[i] = abc_error(REMAT_ODE_TSIT5, 2.0, dts[i]);
    for (int i = 2; i < 4; i++)
        assert_true(log2(e[i - 1] / e[i]) < log2(e[i - 2] / e[i - 1]));
}

/* The same graph in f32: constants, t and h in the state's dtype; the Tsit5
 * seed to the accuracy 1000 steps of f32 rounding allow. */
static void test_models_f32_integration_tracks_f64(void **state)
{
    (void)state;
    remat_mechanism *m = parse(ABC);
    remat_ode_options opt = {.method = REMAT_ODE_TSIT5, .n_times = 2, .times = (double[]){1.0, 10.0}, .dt = 0.01,
                             .scan = {.schedule = spec_of("binomial:5")}};
    remat_fn *f = remat_fn_new("f32");
    remat_val y0 = remat_arg(f, "y0", REMAT_F32, 1, DIMS(3)), k = remat_arg(f, "k", REMAT_F32, 1, DIMS(2)), ys;
    assert_ok(remat_ode_integrate(f, m, &opt, y0, k, &ys));
    assert_int_equal(remat_val_dtype(f, ys), REMAT_F32);
    remat_fn_output(f, remat_index(f, remat_index(f, ys, 1), 1));
    remat_fn *g;
    assert_ok(remat_value_and_grad(f, 1, (int[]){1}, &g));
    remat_program *p = compile_ok(g);
    float C0[3] = {1, 0, 0}, kv[2] = {1.0f, 0.5f}, cb, dk[2];
    remat_tensor in[2] = {remat_tensor_f32(C0, 1, DIMS(3)), remat_tensor_f32(kv, 1, DIMS(2))};
    remat_tensor out[2] = {remat_tensor_f32(&cb, 0, NULL), remat_tensor_f32(dk, 1, DIMS(2))};
    assert_ok(remat_run(p, 2, in, 2, out, NULL));
    double B, d1, d2;
    abc_exact(10.0, 1.0, 0.5, &B, &d1, &d2);
    assert_close(cb, B, 1e-4, 0);
    assert_close(dk[0], d1, 1e-4, 0);
    assert_close(dk[1], d2, 1e-4, 0);
    remat_program_free(p);
    remat_fn_free(f);
    remat_fn_free(g);
    remat_mechanism_free(m);
}

static void test_models_mechanism_without_params_or_t(void **state)
{
    (void)state;
    remat_mechanism *m = parse("A -> B : 2.0\n");
    assert_int_equal(remat_mechanism_param_count(m), 0);
    remat_fn *f = remat_fn_new("noparams");
    remat_val y0 = remat_arg(f, "y0", REMAT_F64, 1, DIMS(2));
    remat_val ys;
    remat_ode_options opt = {.method = REMAT_ODE_EULER, .n_times = 1, .times = (double[]){1.0}, .steps = 4};
    assert_ok(remat_ode_integrate(f, m, &opt, y0, REMAT_NONE, &ys));
    remat_fn_output(f, ys);
    remat_program *p = compile_ok(f);
    double y[2] = {1, 0}, out[2];
    run(p, (double *[]){y}, (double *[]){out}, NULL);
    assert_close(out[0], pow(0.5, 4), 1e-15, 0); /* (1 - h*2)^4, h = 0.25 */
    assert_close(out[1], 1 - pow(0.5, 4), 1e-15, 0);
    remat_program_free(p);
    remat_fn_free(f);
    remat_mechanism_free(m);
}

static void test_models_ode_bad_options_name_the_option(void **state)
{
    (void)state;
    remat_mechanism *m = parse(ABC);
    remat_fn *f = remat_fn_new("bad");
    remat_val y0 = remat_arg(f, "y0", REMAT_F64, 1, DIMS(3));
    remat_val k = remat_arg(f, "k", REMAT_F64, 1, DIMS(2));
    remat_val k3 = remat_arg(f, "k3", REMAT_F64, 1, DIMS(3));
    remat_val y4 = remat_arg(f, "y4", REMAT_F64, 1, DIMS(4));
    remat_val ys = 3;
    remat_ode_options opt = {.method = REMAT_ODE_RK4, .n_times = 2, .times = (double[]){1.0, 1.0}, .dt = 0.1};
    assert_int_equal(remat_ode_integrate(f, m, &opt, y0, k, &ys), REMAT_ERR_VALUE);
    assert_int_equal(ys, REMAT_NONE);
    assert_contains(remat_last_error(), "output time 1");
    opt.times = (double[]){-1.0};
    opt.n_times = 1;
    assert_int_equal(remat_ode_integrate(f, m, &opt, y0, k, &ys), REMAT_ERR_VALUE);
    assert_contains(remat_last_error(), "at or after t0");
    opt.times = (double[]){1.0};
    opt.dt = -0.1;
    assert_int_equal(remat_ode_integrate(f, m, &opt, y0, k, &ys), REMAT_ERR_VALUE);
    assert_contains(remat_last_error(), "dt = -0.1");
    opt.dt = 0;
    assert_int_equal(remat_ode_integrate(f, m, &opt, y0, k, &ys), REMAT_ERR_VALUE);
    assert_contains(remat_last_error(), "steps");
    opt.dt = 0.1;
    opt.n_times = 0;
    assert_int_equal(remat_ode_integrate(f, m, &opt, y0, k, &ys), REMAT_ERR_ARG);
    opt.n_times = 1;
    opt.method = (remat_ode_method)7;
    assert_int_equal(remat_ode_integrate(f, m, &opt, y0, k, &ys), REMAT_ERR_ARG);
    assert_contains(remat_last_error(), "unknown method");
    opt.method = REMAT_ODE_EULER;
    assert_int_equal(remat_ode_integrate(f, m, &opt, y0, k3, &ys), REMAT_ERR_SHAPE);
    assert_contains(remat_last_error(), "params is f64[3]");
    assert_int_equal(remat_ode_integrate(f, m, &opt, y4, k, &ys), REMAT_ERR_SHAPE);
    assert_contains(remat_last_error(), "has 3 species");
    opt.scan.schedule = (remat_schedule_spec){.kind = REMAT_SCHED_BINOMIAL, .snapshots = 0};
    assert_int_equal(remat_ode_integrate(f, m, &opt, y0, k, &ys), REMAT_ERR_ARG);
    assert_contains(remat_last_error(), "interval 0");
    assert_null(remat_ode_step_body(NULL, REMAT_ODE_RK4, REMAT_F64));
    assert_null(remat_ode_step_body(m, (remat_ode_method)-1, REMAT_F64));
    remat_fn_free(f);
    remat_mechanism_free(m);
}

/* ---- Adam ---- */

/* Two steps of optax.adam written out, then the projection on both bounds. */
static void test_models_adam_matches_optax_formulas(void **state)
{
    (void)state;
    remat_adam_options o = remat_adam_optax(0.05);
    o.lo = (double[]){-INFINITY, 0.0, -1.0};
    o.hi = (double[]){INFINITY, INFINITY, 1.0};
    remat_adam *a;
    assert_ok(remat_adam_new(3, &o, &a));
    double p[3] = {1.0, 0.02, 0.999}, q[3] = {1.0, 0.02, 0.999}, mu[3] = {0}, nu[3] = {0};
    const double g[2][3] = {{0.3, 2.0, -4.0}, {-0.1, 0.5, -3.0}};
    for (int t = 1; t <= 2; t++) {
        assert_ok(remat_adam_update(a, p, g[t - 1]));
        for (int i = 0; i < 3; i++) {
            mu[i] = (1 - 0.9) * g[t - 1][i] + 0.9 * mu[i];
            nu[i] = (1 - 0.999) * (g[t - 1][i] * g[t - 1][i]) + 0.999 * nu[i];
            double mh = mu[i] / (1 - pow(0.9, t)), nh = nu[i] / (1 - pow(0.999, t));
            q[i] = q[i] + -0.05 * (mh / (sqrt(nh) + 1e-8));
            q[i] = fmin(fmax(q[i], o.lo[i]), o.hi[i]);
        }
        assert_memory_equal(p, q, sizeof p);
        assert_memory_equal(remat_adam_mu(a), mu, sizeof mu);
        assert_memory_equal(remat_adam_nu(a), nu, sizeof nu);
    }
    assert_true(p[1] == 0.0); /* clipped at lo */
    assert_true(p[2] == 1.0); /* clipped at hi */
    /* a NaN gradient is refused and changes nothing */
    double keep[3];
    memcpy(keep, p, sizeof p);
    assert_int_equal(remat_adam_update(a, p, (double[]){0.1, NAN, 0.0}), REMAT_ERR_NUMERIC);
    assert_contains(remat_last_error(), "gradient 1");
    assert_memory_equal(p, keep, sizeof p);
    assert_int_equal(remat_adam_count(a), 2);
    remat_adam_reset(a);
    assert_int_equal(remat_adam_count(a), 0);
    assert_true(remat_adam_mu(a)[0] == 0.0);
    remat_adam_free(a);
    remat_adam_free(NULL);

    /* bad options */
    remat_adam *b = (remat_adam *)1;
    remat_adam_options bad = remat_adam_optax(0.0);
    assert_int_equal(remat_adam_new(2, &bad, &b), REMAT_ERR_VALUE);
    assert_null(b);
    assert_contains(remat_last_error(), "learning rate");
    bad = remat_adam_optax(0.1);
    bad.b2 = 1.0;
    assert_int_equal(remat_adam_new(2, &bad, &b), REMAT_ERR_VALUE);
    bad = remat_adam_optax(0.1);
    bad.lo = (double[]){0.0, 2.0};
    bad.hi = (double[]){1.0, 1.0};
    assert_int_equal(remat_adam_new(2, &bad, &b), REMAT_ERR_VALUE);
    assert_contains(remat_last_error(), "parameter 1");
    assert_int_equal(remat_adam_new(2, NULL, &b), REMAT_ERR_NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_models_rhs_matches_reference_evaluator),
        cmocka_unit_test(test_models_rhs_batched_rows_match_unbatched),
        cmocka_unit_test(test_models_rhs_walks_shared_nodes_once),
        cmocka_unit_test(test_models_rhs_gradient_matches_finite_differences),
        cmocka_unit_test(test_models_rhs_bad_input_names_the_input),
        cmocka_unit_test(test_models_step_body_matches_tableau_written_out),
        cmocka_unit_test(test_models_tableaus_satisfy_order_conditions),
        cmocka_unit_test(test_models_euler_seed_pfr),
        cmocka_unit_test(test_models_euler_matches_exact_discrete_solution),
        cmocka_unit_test(test_models_tsit5_seed_pfr),
        cmocka_unit_test(test_models_adam_seed_fit),
        cmocka_unit_test(test_models_integrate_matches_reference_steps),
        cmocka_unit_test(test_models_outputs_land_exactly_on_data_times),
        cmocka_unit_test(test_models_batched_integration_matches_rows),
        cmocka_unit_test(test_models_gradients_match_finite_differences),
        cmocka_unit_test(test_models_reverse_holds_one_interval_store),
        cmocka_unit_test(test_models_rk4_converges_with_order_4),
        cmocka_unit_test(test_models_tsit5_converges_with_order_5),
        cmocka_unit_test(test_models_f32_integration_tracks_f64),
        cmocka_unit_test(test_models_mechanism_without_params_or_t),
        cmocka_unit_test(test_models_ode_bad_options_name_the_option),
        cmocka_unit_test(test_models_adam_matches_optax_formulas),
    };
    rng_seed(0x2545f4914f6cdd1dull);
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_pfr.c — the plug-flow reactor of remat/pfr.h: the seed's outlet,
 * gradient and Adam table (seed 004 section 7, seed_values.json pfr_euler
 * and pfr_adam_fit), the profile against the outlet bit for bit, the
 * objective's gradient against central differences, and the errors a user
 * can cause.
 * Bitwise assertions rest on contracts 3 (schedules; the profile keeps the
 * states the outlet drops) and 5 (ensemble lanes) of docs/design-notes.md,
 * "Bitwise contracts".
 */
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remat/remat.h"

static remat_pfr_options seed_options(const remat_mechanism *m, const char *schedule)
{
    const remat_pfr_seed_problem *sd = remat_pfr_seed();
    remat_pfr_options o = {.method = sd->method, .length = sd->length, .steps = sd->steps, .inlet = sd->inlet,
                           .goal = sd->goal, .species = remat_mechanism_species_find(m, sd->species),
                           .schedule = spec_of(schedule)};
    return o;
}

static void test_pfr_seed_outlet_and_gradient(void **state)
{
    (void)state;
    remat_mechanism *m = parse(remat_pfr_seed()->mechanism);
    assert_int_equal(remat_mechanism_species_count(m), 3);
    assert_int_equal(remat_mechanism_param_count(m), 2);
    assert_string_equal(remat_mechanism_indep_name(m), "z");
    double k[2], g_ref[2];
    remat_mechanism_param_values(m, k);
    assert_true(k[0] == 1.0 && k[1] == 0.5);
    const char *schedules[] = {"store-all", "binomial:10", "per-step", "online:4"};
    for (int s = 0; s < 4; s++) {
        remat_pfr_options o = seed_options(m, schedules[s]);
        remat_pfr *r;
        assert_ok(remat_pfr_new(m, &o, &r));
        assert_int_equal(remat_pfr_steps(r), 1000);
        assert_true(remat_pfr_step_size(r) == 0.01);
        double y[3], loss, g[2];
        assert_ok(remat_pfr_outlet(r, k, y));
        assert_printed("%.6f", y[0], "0.000043");
        assert_printed("%.6f", y[1], "0.013222");
        assert_printed("%.6f", y[2], "0.986735");
        assert_printed("%.6f", y[0] + y[1] + y[2], "1.000000");
        assert_ok(remat_pfr_objective(r, k, &loss, g));
        assert_true(loss == -y[1]);
        assert_printed("%.6f", g[0], "0.012349");
        assert_printed("%.6f", g[1], "0.107305");
        if (s == 0)
            memcpy(g_ref, g, sizeof g);
        else
            assert_memory_equal(g, g_ref, sizeof g); /* schedules change memory, never bits */
        remat_pfr_free(r);
    }
    remat_mechanism_free(m);
}

/* opt.compile reaches the reactor's and an ensemble's compiles:
 * interpreted loops without fusion give the default's outlet and gradient
 * (to rounding); an option out of range is the compile's error at the
 * first program asked for. */
static void test_pfr_compile_options(void **state)
{
    (void)state;
    remat_mechanism *m = parse(remat_pfr_seed()->mechanism);
    double k[2], y_ref[3], g_ref[2], y[3], g[2], loss_ref, loss, stats[REMAT_ODE_STATS];
    remat_mechanism_param_values(m, k);
    remat_pfr_options o = seed_options(m, "binomial:10");
    remat_pfr *r;
    assert_ok(remat_pfr_new(m, &o, &r));
    assert_ok(remat_pfr_outlet(r, k, y_ref));
    assert_ok(remat_pfr_objective(r, k, &loss_ref, g_ref));
    remat_pfr_free(r);
    remat_compile_options plain = {.jit = REMAT_JIT_NEVER, .no_fusion = true, .no_cache = true};
    o.compile = &plain;
    assert_ok(remat_pfr_new(m, &o, &r));
    assert_ok(remat_pfr_outlet(r, k, y));
    assert_ok(remat_pfr_objective(r, k, &loss, g));
    assert_ok(remat_pfr_integration_stats(r, k, stats));
    for (int i = 0; i < 3; i++)
        assert_true(fabs(y[i] - y_ref[i]) <= 1e-12 * fabs(y_ref[i]) + 1e-15);
    assert_true(fabs(loss - loss_ref) <= 1e-12 * fabs(loss_ref));
    for (int i = 0; i < 2; i++)
        assert_true(fabs(g[i] - g_ref[i]) <= 1e-10 * fabs(g_ref[i]));
    assert_true(stats[REMAT_ODE_STAT_ACCEPTED] == 1000);
    remat_pfr_free(r);
    remat_compile_options bad = {.num_threads = 999};
    o.compile = &bad;
    assert_ok(remat_pfr_new(m, &o, &r)); /* compiles nothing yet */
    assert_int_equal(remat_pfr_outlet(r, k, y), REMAT_ERR_VALUE);
    assert_contains(remat_last_error(), "num_threads");
    remat_pfr_free(r);
    remat_pfr_ensemble *e = NULL;
    assert_int_equal(remat_pfr_ensemble_new(m, &o, 4, 1, (int[]){0}, k, &e), REMAT_ERR_VALUE);
    assert_null(e);
    assert_contains(remat_last_error(), "num_threads");
    o.compile = &plain;
    assert_ok(remat_pfr_ensemble_new(m, &o, 4, 1, (int[]){0}, k, &e));
    remat_pfr_ensemble_free(e);
    remat_mechanism_free(m);
}

/* seed 004 section 7: the printed rows, then the optimum */
static void test_pfr_adam_reproduces_seed_table(void **state)
{
    (void)state;
    const remat_pfr_seed_problem *sd = remat_pfr_seed();
    remat_mechanism *m = parse(sd->mechanism);
    remat_pfr_options o = seed_options(m, "binomial:10");
    remat_pfr *r;
    assert_ok(remat_pfr_new(m, &o, &r));
    remat_adam_options a = remat_adam_optax(sd->lr);
    a.lo = (double[]){sd->min_param, sd->min_param};
    double p[2] = {sd->start[0], sd->start[1]}, cb[50], pa[100], final;
    assert_int_equal(sd->iters, 50);
    assert_ok(remat_pfr_adam(r, &a, sd->iters, p, cb, pa, &final));
    for (int i = 0; i < SEED_ADAM_ROWS; i++) {
        int it = seed_adam_table[i].it;
        assert_seed_adam(&seed_adam_table[i], pa[2 * it], pa[2 * it + 1], cb[it]);
    }
    assert_true(p[0] == pa[98] && p[1] == pa[99]);
    assert_seed_adam(&seed_adam_final, p[0], p[1], final);
    remat_pfr_free(r);
    remat_mechanism_free(m);
}

/* The profile's last row is the outlet bit for bit, for every method, also
 * when the rates read z (the step counter path) and with dt instead of steps. */
static void test_pfr_profile_ends_at_outlet(void **state)
{
    (void)state;
    const char *mechs[] = {remat_pfr_seed()->mechanism,
                           "indep z\nparam k = 0.8\nparam a = 0.3\nlet kz = k * exp(-a * z)\n"
                           "A -> B : kz\n2 B -> C : 0.5\n"};
    for (int mi = 0; mi < 2; mi++) {
        remat_mechanism *m = parse(mechs[mi]);
        for (int meth = 0; meth < REMAT_ODE_METHOD_COUNT; meth++) {
            if (meth == REMAT_ODE_BDF)
                continue; /* multistep, adaptive only: no fixed step (test_models_bdf.c) */
            remat_pfr_options o = {.method = (remat_ode_method)meth, .length = 2.5, .dt = 0.1,
                                   .inlet = (double[]){1.0, 0.2, 0.0}};
            remat_pfr *r;
            assert_ok(remat_pfr_new(m, &o, &r));
            assert_int_equal(remat_pfr_steps(r), 25);
            double k[2], z[26], y[26 * 3], out[3];
            remat_mechanism_param_values(m, k);
            assert_ok(remat_pfr_profile(r, k, z, y));
            assert_ok(remat_pfr_outlet(r, k, out));
            assert_true(z[0] == 0.0 && fabs(z[25] - 2.5) < 1e-15);
            assert_true(y[0] == 1.0 && y[1] == 0.2 && y[2] == 0.0);
            assert_memory_equal(y + 25 * 3, out, sizeof out);
            /* A only decays */
            for (int i = 1; i < 26; i++)
                assert_true(y[3 * i] < y[3 * (i - 1)]);
            remat_pfr_free(r);
        }
        remat_mechanism_free(m);
    }
}

/* Minimising C_C of a t-dependent network: the gradient against central
 * differences of the outlet. */
static void test_pfr_objective_gradient_matches_differences(void **state)
{
    (void)state;
    remat_mechanism *m = parse("indep z\nparam k = 0.8\nparam a = 0.3\nparam k2 = 0.4\n"
                               "let kz = k * exp(-a * z)\nA -> B : kz\n2 B -> C : k2\n");
    remat_pfr_options o = {.method = REMAT_ODE_RK4, .length = 3.0, .steps = 60, .inlet = (double[]){1.0, 0.0, 0.0},
                           .goal = REMAT_PFR_MINIMIZE, .species = 2,
                           .schedule = {.kind = REMAT_SCHED_BINOMIAL, .snapshots = 3}};
    remat_pfr *r;
    assert_ok(remat_pfr_new(m, &o, &r));
    double p[3] = {0.8, 0.3, 0.4}, loss, g[3], out[3];
    assert_ok(remat_pfr_objective(r, p, &loss, g));
    assert_ok(remat_pfr_outlet(r, p, out));
    assert_true(loss == out[2]);
    for (int i = 0; i < 3; i++) {
        double x = p[i], h = 1e-6, lp, lm;
        p[i] = x + h;
        assert_ok(remat_pfr_objective(r, p, &lp, NULL));
        p[i] = x - h;
        assert_ok(remat_pfr_objective(r, p, &lm, NULL));
        p[i] = x;
        double fd = (lp - lm) / (2 * h);
        if (!(fabs(g[i] - fd) <= 1e-7 * fabs(fd) + 1e-10))
            fail_msg("d/dp%d = %.17g, central difference %.17g", i, g[i], fd);
    }
    remat_pfr_free(r);
    remat_mechanism_free(m);
}

static void test_pfr_bad_options_name_the_option(void **state)
{
    (void)state;
    remat_mechanism *m = parse(remat_pfr_seed()->mechanism);
    double in[3] = {1, 0, 0};
    remat_pfr *r = (remat_pfr *)1;
    remat_pfr_options o = {.length = 10, .steps = 100, .inlet = in};
    o.length = -1;
    assert_int_equal(remat_pfr_new(m, &o, &r), REMAT_ERR_VALUE);
    assert_contains(remat_last_error(), "length");
    assert_null(r);
    o.length = 10, o.dt = 0.1;
    assert_int_equal(remat_pfr_new(m, &o, &r), REMAT_ERR_ARG);
    assert_contains(remat_last_error(), "not both");
    o.steps = 0, o.dt = 0;
    assert_int_equal(remat_pfr_new(m, &o, &r), REMAT_ERR_VALUE);
    assert_contains(remat_last_error(), "steps");
    o.steps = 100;
    in[1] = NAN;
    assert_int_equal(remat_pfr_new(m, &o, &r), REMAT_ERR_VALUE);
    assert_contains(remat_last_error(), "'B'");
    in[1] = 0;
    o.goal = REMAT_PFR_MAXIMIZE, o.species = 3;
    assert_int_equal(remat_pfr_new(m, &o, &r), REMAT_ERR_ARG);
    o.goal = REMAT_PFR_NO_GOAL;
    o.schedule = (remat_schedule_spec){.kind = REMAT_SCHED_BINOMIAL, .snapshots = 0};
    assert_int_not_equal(remat_pfr_new(m, &o, &r), REMAT_OK);
    o.schedule = (remat_schedule_spec){0};
    assert_ok(remat_pfr_new(m, &o, &r));
    double k[2] = {1, NAN}, loss;
    assert_int_equal(remat_pfr_objective(r, (double[]){1, 0.5}, &loss, NULL), REMAT_ERR_ARG);
    assert_contains(remat_last_error(), "no goal");
    double y[3];
    assert_int_equal(remat_pfr_outlet(r, k, y), REMAT_ERR_VALUE);
    assert_contains(remat_last_error(), "'k2'");
    remat_pfr_free(r);
    remat_pfr_free(NULL);
    remat_mechanism_free(m);
}

/* Euler with h*k1 = 30 grows like 29^n: reported, not returned */
static void test_pfr_unstable_integration_is_reported(void **state)
{
    (void)state;
    remat_mechanism *m = parse(remat_pfr_seed()->mechanism);
    remat_pfr_options o = {.method = REMAT_ODE_EULER, .length = 10, .steps = 1000, .inlet = (double[]){1, 0, 0},
                           .goal = REMAT_PFR_MAXIMIZE, .species = 1};
    remat_pfr *r;
    assert_ok(remat_pfr_new(m, &o, &r));
    double k[2] = {3000, 0.5}, y[3], loss, g[2], p[2] = {3000, 0.5};
    assert_int_equal(remat_pfr_outlet(r, k, y), REMAT_ERR_NUMERIC);
    assert_contains(remat_last_error(), "unstable");
    assert_int_equal(remat_pfr_objective(r, k, &loss, g), REMAT_ERR_NUMERIC);
    remat_adam_options a = remat_adam_optax(0.1);
    assert_int_equal(remat_pfr_adam(r, &a, 3, p, NULL, NULL, NULL), REMAT_ERR_NUMERIC);
    remat_pfr_free(r);
    remat_mechanism_free(m);
}

/* Euler with h = 1 and k1 = 3 gives A = 1024, B = -1228.8 at the outlet, all
 * finite: refused before the run, naming the step and the steps it suggests
 * (h k1 <= 1, half the bound, where Euler does not overshoot below zero: 30);
 * 30 steps run and stay non-negative */
static void test_pfr_step_beyond_stability_bound_is_refused(void **state)
{
    (void)state;
    remat_mechanism *m = parse(remat_pfr_seed()->mechanism);
    remat_pfr_options o = {.method = REMAT_ODE_EULER, .length = 10, .steps = 10, .inlet = (double[]){1, 0, 0},
                           .goal = REMAT_PFR_MAXIMIZE, .species = 1};
    remat_pfr *r;
    assert_ok(remat_pfr_new(m, &o, &r));
    double k[2] = {3, 0.5}, y[3], loss, g[2], z[11], prof[33];
    assert_int_equal(remat_pfr_outlet(r, k, y), REMAT_ERR_NUMERIC);
    assert_contains(remat_last_error(), "unstable");
    assert_contains(remat_last_error(), "step size 1 (euler, 10 steps");
    assert_contains(remat_last_error(), "--steps 30");
    assert_int_equal(remat_pfr_profile(r, k, z, prof), REMAT_ERR_NUMERIC);
    assert_int_equal(remat_pfr_objective(r, k, &loss, g), REMAT_ERR_NUMERIC);
    remat_pfr_free(r);
    o.steps = 30;
    assert_ok(remat_pfr_new(m, &o, &r));
    assert_ok(remat_pfr_outlet(r, k, y));
    assert_int_equal(remat_pfr_negative(r, 1, y, NULL, NULL), 0);
    remat_pfr_free(r);
    /* one step the length of the reactor (what dt = 1e300 asks for) at k1 = 1 */
    o.steps = 1;
    k[0] = 1;
    assert_ok(remat_pfr_new(m, &o, &r));
    assert_int_equal(remat_pfr_outlet(r, k, y), REMAT_ERR_NUMERIC);
    assert_contains(remat_last_error(), "step size 10 (euler, 1 steps");
    remat_pfr_free(r);
    remat_mechanism_free(m);
}

/* A rate k/A that no step size tames (A reaches 0 at z = 1/2): RK4 runs on to
 * A = -7.05; remat_pfr_negative finds the first row below zero. The seed at
 * its own steps has none. */
static void test_pfr_negative_concentrations_are_found(void **state)
{
    (void)state;
    remat_mechanism *m = parse("param k = 1\nA -> B : A^(-1)*k\n");
    remat_pfr_options o = {.method = REMAT_ODE_RK4, .length = 10, .steps = 1000, .inlet = (double[]){1, 0}};
    remat_pfr *r;
    assert_ok(remat_pfr_new(m, &o, &r));
    double k = 1, y[2];
    assert_ok(remat_pfr_outlet(r, &k, y));
    assert_true(y[0] < -7);
    int s = -1;
    int64_t row = -1;
    assert_int_equal(remat_pfr_negative(r, 1, y, &row, &s), 1);
    assert_int_equal(s, 0);
    assert_int_equal(row, 0);
    double *prof = malloc(sizeof *prof * 1001 * 2), *z = malloc(sizeof *z * 1001);
    assert_non_null(prof);
    assert_non_null(z);
    assert_ok(remat_pfr_profile(r, &k, z, prof));
    assert_int_equal(remat_pfr_negative(r, 1001, prof, &row, &s), 1);
    assert_int_equal(s, 0);
    assert_true(z[row] > 0.5 && z[row] < 0.6);
    assert_true(prof[(row - 1) * 2] >= 0);
    free(prof);
    free(z);
    remat_pfr_free(r);
    remat_mechanism_free(m);

    m = parse(remat_pfr_seed()->mechanism);
    o = seed_options(m, "store-all");
    assert_ok(remat_pfr_new(m, &o, &r));
    double seed_k[2] = {1, 0.5}, out[3];
    assert_ok(remat_pfr_outlet(r, seed_k, out));
    assert_int_equal(remat_pfr_negative(r, 1, out, NULL, NULL), 0);
    remat_pfr_free(r);
    remat_mechanism_free(m);
}

/* A rate with a pole inside the reactor: named with the z where it fails,
 * by fixed steps that land on it and by adaptive ones that creep up to it
 * (not "take more steps" or "raise max_steps") */
static void test_pfr_pole_inside_the_reactor_is_named(void **state)
{
    (void)state;
    remat_mechanism *m = parse("indep z\nparam k = 1\nA -> B : k / (z - 5)\n");
    remat_pfr_options fixed = {.method = REMAT_ODE_EULER, .length = 10, .steps = 1000, .inlet = (double[]){1, 0}};
    remat_pfr_options adaptive = {.method = REMAT_ODE_TSIT5, .length = 10, .adaptive = true, .rtol = 1e-6,
                                  .atol = 1e-9, .inlet = (double[]){1, 0}};
    const remat_pfr_options *opts[] = {&fixed, &adaptive};
    for (int i = 0; i < 2; i++) {
        remat_pfr *r;
        assert_ok(remat_pfr_new(m, opts[i], &r));
        double k = 1, y[2];
        assert_int_equal(remat_pfr_outlet(r, &k, y), REMAT_ERR_NUMERIC);
        assert_contains(remat_last_error(),
                        "test.mech:3:12: the rate expression 'k / (z - 5)' is inf at z = 5: division by zero");
        remat_pfr_free(r);
    }
    remat_mechanism_free(m);
}

static void test_pfr_species_role(void **state)
{
    (void)state;
    remat_mechanism *m = parse("species A, B, C, D\nA -> B : 1\nB -> C : 2\nD' = -D\n");
    assert_string_equal(remat_pfr_species_role(m, 0), "reactant");
    assert_string_equal(remat_pfr_species_role(m, 1), "intermediate");
    assert_string_equal(remat_pfr_species_role(m, 2), "product");
    assert_string_equal(remat_pfr_species_role(m, 3), "");
    remat_mechanism_free(m);
}

/* The reactor as a schedule-comparison problem: value_and_grad of the
 * objective, same bits under every schedule, the seed's gradient. */
static void test_pfr_problem_from_mechanism(void **state)
{
    (void)state;
    remat_mechanism *m = parse(remat_pfr_seed()->mechanism);
    remat_pfr_options o = seed_options(m, "store-all");
    remat_problem *pb;
    assert_ok(remat_problem_from_mechanism(m, &o, NULL, &pb));
    assert_int_equal(remat_problem_steps(pb), 1000);
    assert_string_equal(remat_problem_name(pb), "test.mech");
    assert_contains(remat_problem_description(pb), "loss -C_B(L), grad (k1, k2)");
    assert_int_equal(remat_problem_num_inputs(pb), 2);
    const char *schedules[] = {"store-all", "binomial:10", "periodic:32"};
    double ref[3];
    for (int s = 0; s < 3; s++) {
        remat_scan_options so = {0};
        assert_ok(remat_schedule_parse(schedules[s], &so.schedule));
        remat_fn *vg;
        assert_ok(remat_problem_build(pb, &so, &vg));
        remat_program *p;
        assert_ok(remat_compile(vg, remat_test_backend(), &p));
        double v[3];
        remat_tensor out[2] = {remat_program_output_desc(p, 0), remat_program_output_desc(p, 1)};
        out[0].data = v, out[1].data = v + 1;
        remat_stats st;
        assert_ok(remat_run(p, remat_problem_num_inputs(pb), remat_problem_inputs(pb), 2, out, &st));
        assert_printed("%.6f", -v[0], "0.013222");
        assert_printed("%.6f", v[1], "0.012349");
        assert_printed("%.6f", v[2], "0.107305");
        if (s == 0)
            memcpy(ref, v, sizeof v);
        else
            assert_memory_equal(v, ref, sizeof v);
        remat_schedule_cost cost;
        assert_ok(remat_schedule_predict(&so.schedule, 1000, &cost));
        assert_int_equal(st.forward_evals, cost.forward_evals);
        remat_program_free(p);
        remat_fn_free(vg);
    }
    remat_problem_free(pb);
    /* a goal is required, and the reactor's own checks apply */
    o.goal = REMAT_PFR_NO_GOAL;
    assert_int_equal(remat_problem_from_mechanism(m, &o, NULL, &pb), REMAT_ERR_ARG);
    assert_contains(remat_last_error(), "goal");
    o = seed_options(m, "store-all");
    o.length = 0;
    assert_int_equal(remat_problem_from_mechanism(m, &o, NULL, &pb), REMAT_ERR_VALUE);
    assert_null(pb);
    remat_mechanism_free(m);
}

/* Adaptive Tsit5 and Dopri5 on the seed reactor: C_B(L) and its gradient
 * against the closed form within 10 rtol, the profile through 100 points
 * ending within the tolerance of the outlet, the step counts, and adaptive
 * options refused with steps or a method without an error estimate. */
static void test_pfr_adaptive_matches_closed_form(void **state)
{
    (void)state;
    remat_mechanism *m = parse(remat_pfr_seed()->mechanism);
    double k[2] = {1.0, 0.5}, B, dk1, dk2, rtol = 1e-7;
    double e1 = exp(-10.0), e2 = exp(-5.0);
    B = 1.0 / (0.5 - 1.0) * (e1 - e2);
    dk1 = 0.5 / 0.25 * (e1 - e2) - 10.0 * e1 / (0.5 - 1.0);
    dk2 = -1.0 / 0.25 * (e1 - e2) + 10.0 * e2 / (0.5 - 1.0);
    static const remat_ode_method pairs[] = {REMAT_ODE_TSIT5, REMAT_ODE_DOPRI5};
    for (int pi = 0; pi < 2; pi++) {
        remat_pfr_options o = seed_options(m, "store-all");
        o.method = pairs[pi];
        o.steps = 0;
        o.adaptive = true;
        o.rtol = rtol;
        o.atol = 1e-12;
        remat_pfr *r;
        assert_ok(remat_pfr_new(m, &o, &r));
        assert_int_equal(remat_pfr_steps(r), 100);
        double out[3], obj, grad[2], stats[REMAT_ODE_STATS], z[101], y[101 * 3];
        assert_ok(remat_pfr_outlet(r, k, out));
        assert_true(fabs(out[1] - B) <= 10 * rtol * B);
        assert_ok(remat_pfr_objective(r, k, &obj, grad));
        assert_true(obj == -out[1]);
        assert_true(fabs(-grad[0] - dk1) <= 10 * rtol * fabs(dk1));
        assert_true(fabs(-grad[1] - dk2) <= 10 * rtol * fabs(dk2));
        assert_ok(remat_pfr_integration_stats(r, k, stats));
        assert_true(stats[REMAT_ODE_STAT_CODE] == 0 && stats[REMAT_ODE_STAT_ACCEPTED] > 20);
        assert_ok(remat_pfr_profile(r, k, z, y));
        assert_true(z[100] == 10.0 && y[0] == 1.0);
        for (int s = 0; s < 3; s++)
            assert_true(fabs(y[100 * 3 + s] - out[s]) <= 10 * rtol);
        remat_pfr_free(r);
        o.steps = 10; /* adaptive with steps */
        assert_int_equal(remat_pfr_new(m, &o, &r), REMAT_ERR_ARG);
        assert_non_null(strstr(remat_last_error(), "adaptive"));
        o.steps = 0;
        o.rtol = 0;
        assert_int_not_equal(remat_pfr_new(m, &o, &r), REMAT_OK);
        assert_non_null(strstr(remat_last_error(), "rtol"));
    }
    remat_pfr_options o = seed_options(m, "store-all");
    o.steps = 0;
    o.adaptive = true;
    o.rtol = 1e-6;
    remat_pfr *r;
    assert_int_not_equal(remat_pfr_new(m, &o, &r), REMAT_OK); /* euler has no error estimate */
    assert_non_null(strstr(remat_last_error(), "euler"));
    remat_mechanism_free(m);
}

#define assert_status(expr, code, fragment)                                                                    \
    do {                                                                                                       \
        assert_int_equal((expr), (code));                                                                      \
        assert_contains(remat_last_error(), (fragment));                                                       \
    } while (0)

/* C_B(L) of A -> B -> C in closed form (k1 != k2), L = 10, A(0) = 1 */
static double closed_b(double k1, double k2)
{
    return k1 / (k2 - k1) * (exp(-k1 * 10.0) - exp(-k2 * 10.0));
}

/* remat_pfr_fixed_steps: the equal Tsit5 steps it picks for adaptive
 * Tsit5's options give the closed form's outlet within the tolerance, as
 * the adaptive run does; options that are not adaptive are refused. */
static void test_pfr_fixed_steps_match_adaptive(void **state)
{
    (void)state;
    remat_mechanism *m = parse(remat_pfr_seed()->mechanism);
    double k[2] = {1.0, 0.5}, B = closed_b(1.0, 0.5), A = exp(-10.0);
    remat_pfr_options o = seed_options(m, "store-all");
    o.method = REMAT_ODE_TSIT5;
    o.steps = 0;
    o.adaptive = true;
    o.rtol = 1e-6;
    o.atol = 1e-9;
    int64_t n = 0, na = 0;
    assert_ok(remat_pfr_fixed_steps(m, &o, k, &n, &na));
    assert_true(na > 0 && n >= na);
    remat_pfr_options f = o;
    f.adaptive = false;
    f.rtol = f.atol = 0;
    f.steps = n;
    remat_pfr *r;
    assert_ok(remat_pfr_new(m, &f, &r));
    double out[3];
    assert_ok(remat_pfr_outlet(r, k, out));
    assert_true(fabs(out[1] - B) <= 1e-6 * B + 1e-9);
    assert_true(fabs(out[0] - A) <= 1e-6 * A + 1e-9);
    remat_pfr_free(r);
    assert_status(remat_pfr_fixed_steps(m, &f, k, &n, NULL), REMAT_ERR_ARG, "not adaptive");
    remat_mechanism_free(m);
}

/* remat_pfr_minimize: with k2 fixed, both methods find the k1 that
 * maximizes the closed form's C_B (found here by golden section, with no
 * remat), converged by the projected-gradient test; with k2 free its
 * optimum sits on the lower bound (the projected gradient is 0 there); the
 * errors a caller can make are named. */
static void test_pfr_minimize_finds_closed_form_optimum(void **state)
{
    (void)state;
    remat_mechanism *m = parse(remat_pfr_seed()->mechanism);
    double a = 0.01, b = 5.0, g = (sqrt(5.0) - 1.0) / 2.0; /* golden section on closed_b(., 0.5) */
    while (b - a > 1e-12) {
        double c = b - g * (b - a), d = a + g * (b - a);
        if (closed_b(c, 0.5) > closed_b(d, 0.5))
            b = d;
        else
            a = c;
    }
    double k1_opt = (a + b) / 2;
    remat_pfr_options o = seed_options(m, "binomial:10");
    o.method = REMAT_ODE_TSIT5;
    o.steps = 0;
    o.adaptive = true;
    o.rtol = 1e-11;
    o.atol = 1e-14;
    remat_pfr *r;
    assert_ok(remat_pfr_new(m, &o, &r));
    double lo[2] = {0.01, 0.01}, hi[2] = {100, 100};
    bool fixed[2] = {false, true};
    static const remat_pfr_minimizer methods[] = {REMAT_PFR_LBFGSB, REMAT_PFR_SLSQP};
    for (int mi = 0; mi < 2; mi++) {
        double k[2] = {0.2, 0.5};
        remat_pfr_minimize_options mo = {.method = methods[mi], .lo = lo, .hi = hi, .fixed = fixed, .gtol = 1e-8};
        remat_pfr_minimize_result res;
        assert_ok(remat_pfr_minimize(r, &mo, k, &res));
        assert_true(res.converged);
        assert_true(k[1] == 0.5);
        assert_true(fabs(k[0] - k1_opt) <= 1e-6 * k1_opt);
        assert_true(fabs(-res.objective - closed_b(k1_opt, 0.5)) <= 1e-9);
        assert_int_equal(res.at_bound, 0);
        if (mi == 0) /* slsqp may stop on its step test first */
            assert_contains(res.message, "projected gradient below gtol");
    }
    double k[2] = {0.5, 0.3};
    remat_pfr_minimize_options mo = {.lo = lo, .hi = hi};
    remat_pfr_minimize_result res;
    assert_ok(remat_pfr_minimize(r, &mo, k, &res));
    assert_true(res.converged && res.at_bound == 1);
    assert_true(k[1] == 0.01);
    double k0[2] = {0.001, 0.3};
    assert_status(remat_pfr_minimize(r, &mo, k0, &res), REMAT_ERR_VALUE, "outside its bounds");
    bool all[2] = {true, true};
    mo.fixed = all;
    assert_status(remat_pfr_minimize(r, &mo, k, &res), REMAT_ERR_ARG, "nothing to optimise");
    remat_pfr_free(r);
    o.goal = REMAT_PFR_NO_GOAL;
    assert_ok(remat_pfr_new(m, &o, &r));
    mo.fixed = NULL;
    assert_status(remat_pfr_minimize(r, &mo, k, &res), REMAT_ERR_ARG, "no objective");
    remat_pfr_free(r);
    remat_mechanism_free(m);
}

/* remat_pfr_ensemble: each lane's outlet is remat_pfr_outlet's for its set,
 * bit for bit, and its Jacobian column the reverse-mode gradient of the
 * objective to rounding, whatever the lanes and wherever the set sits in a
 * chunk; a lane left idle in a short chunk changes nothing; bad sets and
 * options are named. */
static void test_pfr_ensemble_matches_single_runs(void **state)
{
    (void)state;
    remat_mechanism *m = parse(remat_pfr_seed()->mechanism);
    remat_pfr_options o = seed_options(m, "store-all");
    o.steps = 200;
    o.method = REMAT_ODE_RK4;
    const double sets[5][2] = {{1, 0.5}, {2, 0.25}, {0.5, 1}, {0.1, 3}, {4, 0.2}};
    for (int lanes = 1; lanes <= 4; lanes += 3) {
        remat_pfr_ensemble *e;
        assert_ok(remat_pfr_ensemble_new(m, &o, lanes, 2, (const int[]){0, 1}, (const double[]){1, 0.5}, &e));
        assert_int_equal(remat_pfr_ensemble_lanes(e), lanes);
        for (int lo = 0; lo < 5; lo += lanes) {
            int n = 5 - lo < lanes ? 5 - lo : lanes;
            double out[4 * 3], jac[4 * 3 * 2];
            assert_ok(remat_pfr_ensemble_run(e, n, &sets[lo][0], out, jac));
            for (int i = 0; i < n; i++) {
                double y[3], loss, g[2];
                for (int sp = 0; sp < 3; sp++) {
                    remat_pfr_options os = o;
                    os.species = sp;
                    remat_pfr *r;
                    assert_ok(remat_pfr_new(m, &os, &r));
                    assert_ok(remat_pfr_outlet(r, sets[lo + i], y));
                    assert_memory_equal(y, out + 3 * i, sizeof y);
                    assert_ok(remat_pfr_objective(r, sets[lo + i], &loss, g)); /* -C_sp */
                    for (int j = 0; j < 2; j++)
                        assert_true(fabs(jac[(3 * i + sp) * 2 + j] + g[j]) <= 1e-12 * fmax(fabs(g[j]), 1));
                    remat_pfr_free(r);
                }
            }
        }
        remat_pfr_ensemble_free(e);
    }
    /* one varied parameter: the other keeps base */
    remat_pfr_ensemble *e;
    assert_ok(remat_pfr_ensemble_new(m, &o, 2, 1, (const int[]){1}, (const double[]){3, 0.5}, &e));
    double out[3], jac[3], y[3];
    assert_ok(remat_pfr_ensemble_run(e, 1, (const double[]){0.25}, out, jac));
    remat_pfr *r;
    assert_ok(remat_pfr_new(m, &o, &r));
    assert_ok(remat_pfr_outlet(r, (const double[]){3, 0.25}, y));
    assert_memory_equal(y, out, sizeof y);
    assert_true(jac[0] == 0); /* A does not see k2 */
    remat_pfr_free(r);
    assert_status(remat_pfr_ensemble_run(e, 1, (const double[]){NAN}, out, jac), REMAT_ERR_VALUE, "'k2'");
    assert_status(remat_pfr_ensemble_run(e, 3, (const double[]){1, 2, 3}, out, jac), REMAT_ERR_VALUE, "3 sets");
    remat_pfr_ensemble_free(e);
    assert_status(remat_pfr_ensemble_new(m, &o, 2, 2, (const int[]){1, 1}, (const double[]){1, 0.5}, &e),
                  REMAT_ERR_ARG, "'k2' is varied twice");
    assert_status(remat_pfr_ensemble_new(m, &o, 0, 1, (const int[]){0}, (const double[]){1, 0.5}, &e),
                  REMAT_ERR_VALUE, "lanes");
    o.adaptive = true, o.method = REMAT_ODE_TSIT5, o.steps = 0, o.rtol = 1e-6;
    assert_status(remat_pfr_ensemble_new(m, &o, 2, 1, (const int[]){0}, (const double[]){1, 0.5}, &e),
                  REMAT_ERR_ARG, "fixed steps");
    remat_mechanism_free(m);
}

/* params batched with y: the kinetics refuse a batch that is not y's */
static void test_pfr_kinetics_batched_params_shape(void **state)
{
    (void)state;
    remat_mechanism *m = parse(remat_pfr_seed()->mechanism);
    remat_fn *f = remat_fn_new("batched");
    remat_val y = remat_arg(f, "y", REMAT_F64, 2, ((int64_t[]){4, 3}));
    remat_val p = remat_arg(f, "p", REMAT_F64, 2, ((int64_t[]){5, 2}));
    remat_val ok = remat_arg(f, "q", REMAT_F64, 2, ((int64_t[]){4, 2}));
    remat_val d;
    assert_status(remat_kinetics_rhs(f, m, REMAT_NONE, y, p, &d), REMAT_ERR_SHAPE, "y's batch axes");
    assert_ok(remat_kinetics_rhs(f, m, REMAT_NONE, y, ok, &d));
    remat_fn_free(f);
    remat_mechanism_free(m);
}

int main(void)
{
    remat_test_backend(); /* REMAT_BACKEND: skip (77) when it is not there */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pfr_seed_outlet_and_gradient),
        cmocka_unit_test(test_pfr_compile_options),
        cmocka_unit_test(test_pfr_adam_reproduces_seed_table),
        cmocka_unit_test(test_pfr_profile_ends_at_outlet),
        cmocka_unit_test(test_pfr_objective_gradient_matches_differences),
        cmocka_unit_test(test_pfr_bad_options_name_the_option),
        cmocka_unit_test(test_pfr_unstable_integration_is_reported),
        cmocka_unit_test(test_pfr_step_beyond_stability_bound_is_refused),
        cmocka_unit_test(test_pfr_negative_concentrations_are_found),
        cmocka_unit_test(test_pfr_pole_inside_the_reactor_is_named),
        cmocka_unit_test(test_pfr_species_role),
        cmocka_unit_test(test_pfr_problem_from_mechanism),
        cmocka_unit_test(test_pfr_adaptive_matches_closed_form),
        cmocka_unit_test(test_pfr_ensemble_matches_single_runs),
        cmocka_unit_test(test_pfr_minimize_finds_closed_form_optimum),
        cmocka_unit_test(test_pfr_fixed_steps_match_adaptive),
        cmocka_unit_test(test_pfr_kinetics_batched_params_shape),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_models_integration.c — the fixed-step integrators as scans
 * (remat/ode.h): whole integrations, output times, batching, gradients,
 * memory, convergence order, f32 and bad options.
 *
 * Every expectation comes from outside the code under test: steps of the
 * tableaus written out in plain C (test_models_util.c), the ODE's analytic
 * solution, and central finite differences in f64. Schedules are held to the
 * store-all result bit for bit.
 */
#include "test_models_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remat/remat.h"

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
        if (meth == REMAT_ODE_BDF)
            continue; /* multistep, adaptive only: no fixed step (test_models_bdf.c) */
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
    assert_memory_equal(two, y0, sizeof y0); /* a copy: exact */
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
        if (meth == REMAT_ODE_BDF)
            continue; /* multistep, adaptive only: no fixed step (test_models_bdf.c) */
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
                assert_memory_equal(dy0, ref, sizeof dy0); /* contract 3 */
                assert_memory_equal(dp, ref + S, sizeof dp); /* contract 3 */
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
        assert_memory_equal(dk[0], dk[1], sizeof dk[0]); /* contract 3 */
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

/* Rodas5 (a Rosenbrock method: J and linear solves in every step) reaches
 * its order 5 on the non-stiff A -> B -> C as well. */
static void test_models_rodas5_converges_with_order_5(void **state)
{
    (void)state;
    check_order(REMAT_ODE_RODAS5, 2.0, (double[]){0.4, 0.2, 0.1, 0.05}, 4, 4.7, 5.6);
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

/* remat_ode_run_once (the models' one "compile an ODE graph and run it
 * once"): the states of the compiled program the test builds itself, the
 * statistics of an adaptive run, the caller's backend and compile options
 * used (an invalid option is the compile's error), and its NULL rules. */
static void test_models_run_once_matches_a_compiled_program(void **state)
{
    (void)state;
    remat_mechanism *m = parse(NET5);
    enum { S = 5, P = 5, K = 3 };
    const double times[K] = {0.3, 1.0, 2.45};
    double p[P] = {1.2, 0.4, 0.7, 0.9, 0.3}, y0[S];
    memcpy(y0, NET5_Y0, sizeof y0);
    remat_ode_options opt = {.method = REMAT_ODE_RK4, .t0 = 0.1, .n_times = K, .times = times, .dt = 0.07};
    remat_fn *f = states_fn(m, &opt);
    remat_program *prog = compile_ok(f);
    double want[K * S], got[K * S], stats[REMAT_ODE_STATS];
    run(prog, (double *[]){y0, p}, (double *[]){want}, NULL);
    remat_program_free(prog);
    remat_fn_free(f);
    remat_compile_options never = {.jit = REMAT_JIT_NEVER};
    assert_ok(remat_ode_run_once(m, &opt, y0, p, NULL, NULL, got, NULL));
    for (int i = 0; i < K * S; i++)
        assert_close(got[i], want[i], 1e-14, 1e-16);
    memset(got, 0, sizeof got);
    assert_ok(remat_ode_run_once(m, &opt, y0, p, remat_backend_cpu(), &never, got, stats));
    for (int i = 0; i < K * S; i++)
        assert_close(got[i], want[i], 1e-14, 1e-16);
    assert_true(stats[REMAT_ODE_STAT_ACCEPTED] == 3 + 10 + 21); /* the fixed grid's steps */
    assert_true(stats[REMAT_ODE_STAT_CODE] == 0);
    /* adaptive: statistics alone */
    remat_ode_options ad = {.method = REMAT_ODE_TSIT5, .t0 = 0.1, .n_times = K, .times = times, .adaptive = true,
                            .rtol = 1e-8, .atol = 1e-10};
    memset(stats, 0, sizeof stats);
    assert_ok(remat_ode_run_once(m, &ad, y0, p, NULL, &never, NULL, stats));
    assert_true(stats[REMAT_ODE_STAT_ACCEPTED] > K);
    assert_true(stats[REMAT_ODE_STAT_CODE] == 0);
    assert_true(stats[REMAT_ODE_STAT_T] == times[K - 1]);
    /* the caller's options reach the compile */
    remat_compile_options bad = {.num_threads = 999};
    assert_int_equal(remat_ode_run_once(m, &opt, y0, p, NULL, &bad, got, NULL), REMAT_ERR_VALUE);
    assert_contains(remat_last_error(), "num_threads");
    assert_int_equal(remat_ode_run_once(m, &opt, y0, p, NULL, NULL, NULL, NULL), REMAT_ERR_NULL);
    assert_contains(remat_last_error(), "nothing to compute");
    assert_int_equal(remat_ode_run_once(m, &opt, y0, NULL, NULL, NULL, got, NULL), REMAT_ERR_NULL);
    assert_contains(remat_last_error(), "params is NULL");
    remat_mechanism_free(m);
}

/* ---- main ---- */

int main(void)
{
    remat_test_backend(); /* REMAT_BACKEND: skip (77) when it is not there */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_models_integrate_matches_reference_steps),
        cmocka_unit_test(test_models_outputs_land_exactly_on_data_times),
        cmocka_unit_test(test_models_batched_integration_matches_rows),
        cmocka_unit_test(test_models_gradients_match_finite_differences),
        cmocka_unit_test(test_models_reverse_holds_one_interval_store),
        cmocka_unit_test(test_models_rk4_converges_with_order_4),
        cmocka_unit_test(test_models_tsit5_converges_with_order_5),
        cmocka_unit_test(test_models_rodas5_converges_with_order_5),
        cmocka_unit_test(test_models_f32_integration_tracks_f64),
        cmocka_unit_test(test_models_mechanism_without_params_or_t),
        cmocka_unit_test(test_models_ode_bad_options_name_the_option),
        cmocka_unit_test(test_models_run_once_matches_a_compiled_program),
    };
    rng_seed(0x2545f4914f6cdd1dull);
    return cmocka_run_group_tests(tests, NULL, NULL);
}

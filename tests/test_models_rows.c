/*
 * test_models_rows.c — fixed steps ending on every output time with the
 * times and step counts as data of one scan over the rows
 * (remat_ode_integrate_rows, src/models/ode/rows.c; issue 21): its rows
 * against the per-interval integration (remat_ode_integrate, a scan per
 * output time) for rows on and off the step grid and every fixed method,
 * the gradient against central differences, a graph whose size does not
 * depend on the row count, and the options it refuses.
 */
#include "test_models_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remat/remat.h"

/* ABC, or a system that reads t (the steps' times t_{k-1} + j h_k) */
static const char *const TIMED = "indep t\nparam k1 = 1\nparam k2 = 0.5\n"
                                 "y1' = -k1 * y1 + sin(3 * t)\ny2' = y1 - k2 * t * y2\ny3' = y2\n";
static const char *mech;
/* > 0: opt.dt, tsit5's, dopri5's and rodas5's uniform grid and own continuous extension */
static double grid_dt;

static const remat_ode_method methods[] = {REMAT_ODE_EULER, REMAT_ODE_RK4, REMAT_ODE_RODAS5, REMAT_ODE_TSIT5};
#define N_METHODS ((int)(sizeof methods / sizeof methods[0]))

/* (y0, p, ts, nsteps) -> rows (K, 3) of ABC; or the loss sum W . rows and
 * its gradient w.r.t. y0 and p. *nodes: the graph's nodes. */
static remat_program *rows_prog(remat_ode_method method, int64_t max_steps, int64_t K, const double *w, int grad,
                                int *nodes)
{
    remat_mechanism *m = parse(mech ? mech : ABC);
    int64_t S = 3, P = 2;
    remat_fn *f = remat_fn_new("rows");
    remat_val y0 = remat_arg(f, "y0", REMAT_F64, 1, &S), pv = remat_arg(f, "p", REMAT_F64, 1, &P);
    remat_val ts = remat_arg(f, "ts", REMAT_F64, 1, &K), ns = remat_arg(f, "nsteps", REMAT_F64, 1, &K), out;
    remat_ode_options opt = {.method = method, .dt = grid_dt, .max_steps = max_steps};
    assert_ok(remat_ode_integrate_rows(f, m, &opt, y0, pv, ts, ns, &out));
    if (w)
        out = remat_sum_all(f, remat_mul(f, remat_const_data(f, REMAT_F64, 2, DIMS(K, S), w), out));
    remat_fn_output(f, out);
    if (nodes)
        *nodes = remat_fn_num_nodes(f);
    remat_fn *g = NULL;
    if (grad)
        assert_ok(remat_grad(f, 2, (int[]){0, 1}, &g));
    remat_program *prog = compile_ok(grad ? g : f);
    remat_fn_free(g);
    remat_fn_free(f);
    remat_mechanism_free(m);
    return prog;
}

/* the per-interval grid (remat_ode_integrate) and its step counts */
static void interval_rows(remat_ode_method method, double dt, int K, const double *t, const double *p,
                          double *ys, double *nsteps, int64_t *most)
{
    remat_mechanism *m = parse(mech ? mech : ABC);
    assert_int_equal(remat_kinetics_uses_indep(m), mech == TIMED);
    int64_t S = 3, P = 2, *n = malloc(sizeof *n * (size_t)K);
    remat_fn *f = remat_fn_new("interval_rows");
    remat_val y0 = remat_arg(f, "y0", REMAT_F64, 1, &S), pv = remat_arg(f, "p", REMAT_F64, 1, &P), out;
    remat_ode_options opt = {.method = method, .dt = dt, .n_times = K, .times = t};
    assert_ok(remat_ode_count_steps(&opt, n, NULL));
    *most = 1;
    for (int k = 0; k < K; k++) {
        nsteps[k] = (double)n[k];
        *most = n[k] > *most ? n[k] : *most;
    }
    assert_ok(remat_ode_integrate(f, m, &opt, y0, pv, &out));
    remat_fn_output(f, out);
    remat_program *prog = compile_ok(f);
    double y0v[3] = {1, 0, 0};
    run(prog, (double *[]){y0v, (double *)p}, (double *[]){ys}, NULL);
    remat_program_free(prog);
    remat_fn_free(f);
    remat_mechanism_free(m);
    free(n);
}

/* The row scan takes the per-interval grid's steps through the same step
 * kernel: rows off the grid (uneven times, 1 to 9 steps of dt 0.05 per
 * interval, one interval of 40 steps), on it (every 0.2) and at t0 agree
 * with remat_ode_integrate's to 1e-13 for euler, rk4, rodas5 and tsit5, for
 * ABC and for a system that reads t (the same ops in the same order; not
 * claimed bitwise, as the two paths are different programs: DESIGN.md
 * "contracts"). A row stepped differently
 * (one step too few or too many, h = dt instead of len / n) is off by
 * O(dt^order) >> 1e-13. */
static void test_models_rows_match_per_interval(void **state)
{
    (void)state;
    enum { K = 40 };
    double t[2][K], p[2] = {1.3, 0.4}, y0[3] = {1, 0, 0}, a[K * 3], b[K * 3], ns[K];
    for (int k = 0; k < K; k++) {
        t[0][k] = k == 0 ? 0.0 : k == 20 ? t[0][19] + 2.0 : t[0][k - 1] + 0.013 + 0.41 * fabs(sin(1.3 * k));
        t[1][k] = 0.2 * k;
    }
    for (int mi = 0; mi < 2 * N_METHODS; mi++)
        for (int set = 0; set < 2; set++) {
            mech = mi < N_METHODS ? ABC : TIMED;
            int64_t most;
            interval_rows(methods[mi % N_METHODS], 0.05, K, t[set], p, b, ns, &most);
            remat_program *prog = rows_prog(methods[mi % N_METHODS], most, K, NULL, 0, NULL);
            run(prog, (double *[]){y0, p, t[set], ns}, (double *[]){a}, NULL);
            double worst = 0;
            for (int i = 0; i < K * 3; i++) {
                if (!(fabs(a[i] - b[i]) <= 1e-13 * fabs(b[i]) + 1e-15))
                    fail_msg("%s%s, %s rows: row %d species %d: %.17g, per-interval %.17g",
                             remat_ode_method_name(methods[mi % N_METHODS]), mech == TIMED ? " (timed)" : "",
                             set ? "grid" : "off-grid", i / 3, i % 3, a[i], b[i]);
                worst = fmax(worst, fabs(a[i] - b[i]));
            }
            print_message("%s%s %s rows: worst difference %.3g\n", remat_ode_method_name(methods[mi % N_METHODS]),
                          mech == TIMED ? " (timed)" : "", set ? "grid" : "off-grid", worst);
            assert_true(a[0] == 1.0 && a[1] == 0.0 && a[2] == 0.0); /* t = t0: no step, y0 itself */
            remat_program_free(prog);
        }
    mech = NULL;
}

/* Reverse mode through the scan and the while loops in its body: the
 * gradient of a loss over rows on and off the grid matches central
 * differences w.r.t. the rate constants and y0 for every method. */
static void check_gradient(const remat_ode_method *ms, int n_methods)
{
    enum { K = 23 };
    double t[K], w[K * 3], ns[K], b[K * 3], p[2] = {0.9, 0.35};
    for (int k = 0; k < K; k++)
        t[k] = 0.27 * k + (k % 2 ? 0.013 : 0.0);
    for (int i = 0; i < K * 3; i++)
        w[i] = 0.3 * sin(1.7 * i) + 0.1;
    for (int mi = 0; mi < n_methods; mi++) {
        int64_t most;
        interval_rows(ms[mi], 0.02, K, t, p, b, ns, &most);
        remat_program *g = rows_prog(ms[mi], most, K, w, 1, NULL), *fwd = rows_prog(ms[mi], most, K, w, 0, NULL);
        double y0[3] = {1.0, 0.2, 0.0}, gy0[3], gp[2];
        run(g, (double *[]){y0, p, t, ns}, (double *[]){gy0, gp}, NULL);
        double x[5] = {p[0], p[1], y0[0], y0[1], y0[2]}, an[5] = {gp[0], gp[1], gy0[0], gy0[1], gy0[2]};
        for (int i = 0; i < 5; i++) {
            double e = 1e-5 * fmax(1.0, fabs(x[i])), lp, lm, xp[5], xm[5];
            memcpy(xp, x, sizeof x), memcpy(xm, x, sizeof x);
            xp[i] += e, xm[i] -= e;
            run(fwd, (double *[]){xp + 2, xp, t, ns}, (double *[]){&lp}, NULL);
            run(fwd, (double *[]){xm + 2, xm, t, ns}, (double *[]){&lm}, NULL);
            double cd = (lp - lm) / (2 * e);
            if (!(fabs(an[i] - cd) <= 1e-7 * fabs(cd) + 1e-9))
                fail_msg("%s: d loss / d x%d = %.12g, central differences %.12g", remat_ode_method_name(ms[mi]),
                         i, an[i], cd);
        }
        remat_program_free(g);
        remat_program_free(fwd);
    }
}

static void test_models_rows_gradient_matches_central_differences(void **state)
{
    (void)state;
    check_gradient(methods, N_METHODS);
}

/* fixed_dense.c's rows (remat_ode_integrate_times with fixed steps: the
 * uniform grid, every row updated every step) */
static void fixed_dense_rows(remat_ode_method method, double dt, int64_t N, int K, const double *t, const double *p,
                             double *ys)
{
    remat_mechanism *m = parse(mech ? mech : ABC);
    int64_t S = 3, P = 2, KK = K;
    remat_fn *f = remat_fn_new("fixed_dense_rows");
    remat_val y0 = remat_arg(f, "y0", REMAT_F64, 1, &S), pv = remat_arg(f, "p", REMAT_F64, 1, &P);
    remat_val ts = remat_arg(f, "ts", REMAT_F64, 1, &KK), out;
    remat_ode_options opt = {.method = method, .dt = dt, .steps = N};
    assert_ok(remat_ode_integrate_times(f, m, &opt, y0, pv, ts, &out, NULL));
    remat_fn_output(f, out);
    remat_program *prog = compile_ok(f);
    double y0v[3] = {1, 0, 0};
    run(prog, (double *[]){y0v, (double *)p, (double *)t}, (double *[]){ys}, NULL);
    remat_program_free(prog);
    remat_fn_free(f);
    remat_mechanism_free(m);
}

/* tsit5, dopri5 and rodas5 with dt > 0 keep the uniform grid t0 + j dt and read a
 * row off it from the grid step's own continuous extension: the rows equal
 * fixed_dense.c's (the same step and extension kernels; two programs, so
 * 1e-13 rather than bitwise: DESIGN.md "contracts") for ABC and a system
 * that reads t, with rows off the grid (several per step, a gap of 40
 * steps), on it (also 4e-10 relative off a grid point: a step's end), and
 * at t0 (measured: bitwise equal). Forcing a step end at every row (what
 * the row scan did before) moves the rows by 2e-10 to 3e-9, far past
 * 1e-13. */
static void test_models_rows_own_extension_is_fixed_dense(void **state)
{
    (void)state;
    enum { K = 40, N_OWN = 3 };
    static const remat_ode_method own[N_OWN] = {REMAT_ODE_TSIT5, REMAT_ODE_DOPRI5, REMAT_ODE_RODAS5};
    double t[2][K], p[2] = {1.3, 0.4}, y0[3] = {1, 0, 0}, a[K * 3], b[K * 3], c[K * 3], ns[K];
    for (int k = 0; k < K; k++) {
        t[0][k] = k == 0 ? 0.0 : k == 20 ? t[0][19] + 2.0 : t[0][k - 1] + 0.013 + 0.11 * fabs(sin(1.3 * k));
        t[1][k] = 0.2 * k * (1.0 + (k % 3 == 1 ? 4e-10 : k % 3 == 2 ? -4e-10 : 0.0));
    }
    grid_dt = 0.05;
    for (int mi = 0; mi < 2 * N_OWN; mi++)
        for (int set = 0; set < 2; set++) {
            mech = mi < N_OWN ? ABC : TIMED;
            remat_ode_method method = own[mi % N_OWN];
            int64_t most;
            interval_rows(method, grid_dt, K, t[set], p, c, ns, &most);
            fixed_dense_rows(method, grid_dt, (int64_t)ceil(t[set][K - 1] / grid_dt) + 1, K, t[set], p, b);
            remat_program *prog = rows_prog(method, most, K, NULL, 0, NULL);
            run(prog, (double *[]){y0, p, t[set], ns}, (double *[]){a}, NULL);
            double worst = 0, forced = 0;
            for (int i = 0; i < K * 3; i++) {
                if (!(fabs(a[i] - b[i]) <= 1e-13 * fabs(b[i]) + 1e-15))
                    fail_msg("%s%s, %s rows: row %d species %d: %.17g, fixed_dense %.17g", remat_ode_method_name(method),
                             mech == TIMED ? " (timed)" : "", set ? "grid" : "off-grid", i / 3, i % 3, a[i], b[i]);
                worst = fmax(worst, fabs(a[i] - b[i]));
                forced = fmax(forced, fabs(c[i] - b[i]));
            }
            print_message("%s%s %s rows: worst difference %.3g from fixed_dense (forced steps: %.3g)\n",
                          remat_ode_method_name(method), mech == TIMED ? " (timed)" : "", set ? "grid" : "off-grid",
                          worst, forced);
            if (!set)
                assert_true(forced > 1e-11); /* the test tells the two apart */
            assert_true(a[0] == 1.0 && a[1] == 0.0 && a[2] == 0.0);
            remat_program_free(prog);
        }
    mech = NULL;
    grid_dt = 0;
}

/* Reverse mode through the grid loop and the continuous extension of the
 * uncommitted step: tsit5's, dopri5's and rodas5's gradients match central
 * differences; the graph stays one scan whatever the rows */
static void test_models_rows_own_extension_gradient(void **state)
{
    (void)state;
    static const remat_ode_method own[] = {REMAT_ODE_TSIT5, REMAT_ODE_DOPRI5, REMAT_ODE_RODAS5};
    grid_dt = 0.02;
    check_gradient(own, 3);
    for (int mi = 0; mi < 3; mi++) {
        int small, big;
        remat_program_free(rows_prog(own[mi], 4, 10, NULL, 0, &small));
        remat_program_free(rows_prog(own[mi], 4, 10000, NULL, 0, &big));
        assert_int_equal(small, big);
    }
    grid_dt = 0;
}

/* On the grid, each grid step is taken once whatever the rows: the scan
 * carries the step from the last grid point ahead of the rows (its
 * extension's coefficients), so a row costs the extension's evaluation
 * only. Counted on rodas5, whose step factors W once (one lu op): 40 rows
 * in [0.01, 9.74] on a grid of 0.5 run 20 factorisations, the grid's steps
 * from 0 to 9.5, each once; taking the step from a row's grid point again
 * for the row (the scan before) ran 59. Interpreted (REMAT_JIT=never), so
 * every op of the loop bodies is counted. */
static void test_models_rows_grid_steps_once(void **state)
{
    (void)state;
    enum { K = 40 };
    double t[K], ns[K], p[2] = {1.3, 0.4}, y0[3] = {1, 0, 0}, out[K * 3];
    for (int k = 0; k < K; k++)
        t[k] = 0.01 + 0.2495 * k, ns[k] = 1; /* up to 9.74: grid points 0 .. 9.5 */
    grid_dt = 0.5;
    setenv("REMAT_JIT", "never", 1);
    remat_program *prog = rows_prog(REMAT_ODE_RODAS5, 2, K, NULL, 0, NULL);
    unsetenv("REMAT_JIT");
    remat_stats st;
    run(prog, (double *[]){y0, p, t, ns}, (double *[]){out}, &st);
    print_message("rodas5, %d rows on a grid of 20 steps: %lld factorisations\n", K,
                  (long long)st.op_counts[REMAT_OP_LU]);
    assert_int_equal(st.op_counts[REMAT_OP_LU], 20);
    remat_program_free(prog);
    grid_dt = 0;
}

/* The graph is one scan whatever the rows: as many nodes for 10 rows as for
 * 10,000 (remat_ode_integrate: a scan per row) */
static void test_models_rows_graph_does_not_grow(void **state)
{
    (void)state;
    int small, big;
    remat_program_free(rows_prog(REMAT_ODE_RK4, 4, 10, NULL, 0, &small));
    remat_program_free(rows_prog(REMAT_ODE_RK4, 4, 10000, NULL, 0, &big));
    assert_int_equal(small, big);
}

/* An interval of more steps than max_steps is a run-time error naming the
 * loop, not a wrong row */
static void test_models_rows_max_steps(void **state)
{
    (void)state;
    remat_program *prog = rows_prog(REMAT_ODE_EULER, 2, 2, NULL, 0, NULL);
    double y0[3] = {1, 0, 0}, p[2] = {1, 1}, t[2] = {0.1, 0.2}, ns[2] = {2, 3}, out[6];
    remat_tensor in[4] = {remat_tensor_f64(y0, 1, DIMS(3)), remat_tensor_f64(p, 1, DIMS(2)),
                          remat_tensor_f64(t, 1, DIMS(2)), remat_tensor_f64(ns, 1, DIMS(2))};
    remat_tensor o = remat_tensor_f64(out, 2, DIMS(2, 3));
    assert_int_equal(remat_run(prog, 4, in, 1, &o, NULL), REMAT_ERR_VALUE);
    assert_non_null(strstr(remat_last_error(), "max_steps"));
    remat_program_free(prog);
}

static void test_models_rows_bad_options(void **state)
{
    (void)state;
    remat_mechanism *m = parse(ABC);
    int64_t S = 3, P = 2, K = 4, K1 = 5;
    remat_fn *f = remat_fn_new("bad");
    remat_val y0 = remat_arg(f, "y0", REMAT_F64, 1, &S), pv = remat_arg(f, "p", REMAT_F64, 1, &P);
    remat_val ts = remat_arg(f, "ts", REMAT_F64, 1, &K), ns = remat_arg(f, "ns", REMAT_F64, 1, &K);
    remat_val ns5 = remat_arg(f, "ns5", REMAT_F64, 1, &K1), out;
    remat_ode_options o = {.method = REMAT_ODE_RK4, .max_steps = 0};
    assert_int_equal(remat_ode_integrate_rows(f, m, &o, y0, pv, ts, ns, &out), REMAT_ERR_VALUE);
    assert_non_null(strstr(remat_last_error(), "max_steps"));
    o.max_steps = 4;
    assert_int_equal(remat_ode_integrate_rows(f, m, &o, y0, pv, ts, ns5, &out), REMAT_ERR_SHAPE);
    assert_non_null(strstr(remat_last_error(), "steps is f64[5], expected f64[4]"));
    assert_int_equal(remat_ode_integrate_rows(f, m, &o, ts, pv, ts, ns, &out), REMAT_ERR_SHAPE);
    assert_non_null(strstr(remat_last_error(), "y0"));
    o.adaptive = true;
    assert_int_equal(remat_ode_integrate_rows(f, m, &o, y0, pv, ts, ns, &out), REMAT_ERR_ARG);
    o.adaptive = false, o.adjoint = REMAT_ODE_ADJOINT_COUNT; /* the continuous ones: test_models_rows_adjoint.c */
    assert_int_equal(remat_ode_integrate_rows(f, m, &o, y0, pv, ts, ns, &out), REMAT_ERR_ARG);
    assert_non_null(strstr(remat_last_error(), "unknown adjoint"));
    assert_int_equal(out, REMAT_NONE);
    remat_fn_free(f);
    remat_mechanism_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_models_rows_match_per_interval),
        cmocka_unit_test(test_models_rows_gradient_matches_central_differences),
        cmocka_unit_test(test_models_rows_own_extension_is_fixed_dense),
        cmocka_unit_test(test_models_rows_own_extension_gradient),
        cmocka_unit_test(test_models_rows_grid_steps_once),
        cmocka_unit_test(test_models_rows_graph_does_not_grow),
        cmocka_unit_test(test_models_rows_max_steps),
        cmocka_unit_test(test_models_rows_bad_options),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

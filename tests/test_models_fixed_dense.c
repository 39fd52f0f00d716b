/*
 * test_models_fixed_dense.c — fixed steps with the output times as data of
 * one scan (remat_ode_integrate_times with adaptive false,
 * src/models/ode/fixed_dense.c; issue 21): rows on the step grid (step ends,
 * no interpolation) against the per-interval integration
 * (remat_ode_integrate), rows between steps against the exact solution
 * (tsit5's and dopri5's own continuous extension as accurate as their step
 * ends), the gradient through the rows against central differences; and
 * fits with fixed steps, which take the row scan (remat_ode_integrate_rows,
 * test_models_rows.c): the per-interval grid's steps (tsit5 and dopri5:
 * the uniform grid and their own extension), programs shared by
 * experiments that grow with the rows only as O(rows x species).
 */
#include "test_models_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "models/fit/fit_impl.h"
#include "remat/remat.h"

static const remat_ode_method methods[] = {REMAT_ODE_EULER, REMAT_ODE_RK4, REMAT_ODE_TSIT5, REMAT_ODE_DOPRI5};
#define N_METHODS ((int)(sizeof methods / sizeof methods[0]))

/* (y0, p, ts) -> rows (K, 3) of ABC, fixed steps of dt, N of them; or its
 * loss sum W . rows and that loss's gradient w.r.t. y0 and p */
static remat_program *rows_prog(remat_ode_method method, double dt, int64_t N, int64_t K, const double *w, int grad)
{
    remat_mechanism *m = parse(ABC);
    int64_t S = 3, P = 2;
    remat_fn *f = remat_fn_new("fixed_rows");
    remat_val y0 = remat_arg(f, "y0", REMAT_F64, 1, &S), pv = remat_arg(f, "p", REMAT_F64, 1, &P);
    remat_val ts = remat_arg(f, "ts", REMAT_F64, 1, &K), out;
    remat_ode_options opt = {.method = method, .dt = dt, .steps = N};
    assert_ok(remat_ode_integrate_times(f, m, &opt, y0, pv, ts, &out, NULL));
    if (w)
        out = remat_sum_all(f, remat_mul(f, remat_const_data(f, REMAT_F64, 2, DIMS(K, S), w), out));
    remat_fn_output(f, out);
    remat_fn *g = NULL;
    if (grad)
        assert_ok(remat_grad(f, 2, (int[]){0, 1}, &g));
    remat_program *prog = compile_ok(grad ? g : f);
    remat_fn_free(g);
    remat_fn_free(f);
    remat_mechanism_free(m);
    return prog;
}

/* the per-interval grid (remat_ode_integrate, a scan per output time) */
static void interval_rows(remat_ode_method method, double dt, int K, const double *t, const double *p, double *ys)
{
    remat_mechanism *m = parse(ABC);
    int64_t S = 3, P = 2;
    remat_fn *f = remat_fn_new("interval_rows");
    remat_val y0 = remat_arg(f, "y0", REMAT_F64, 1, &S), pv = remat_arg(f, "p", REMAT_F64, 1, &P), out;
    remat_ode_options opt = {.method = method, .dt = dt, .n_times = K, .times = t};
    assert_ok(remat_ode_integrate(f, m, &opt, y0, pv, &out));
    remat_fn_output(f, out);
    remat_program *prog = compile_ok(f);
    double y0v[3] = {1, 0, 0};
    run(prog, (double *[]){y0v, (double *)p}, (double *[]){ys}, NULL);
    remat_program_free(prog);
    remat_fn_free(f);
    remat_mechanism_free(m);
}

/* Rows on the step grid (every 4th step of 0.05, and t0 itself) equal the
 * per-interval integration's rows to rounding for every explicit method
 * (the grids agree up to h_k = len_k / n_k against dt); not bitwise, stated
 * in fixed_dense.c. A row taken from the wrong step is off by O(dt). */
static void test_models_fixed_dense_on_grid_rows_match_intervals(void **state)
{
    (void)state;
    enum { K = 51 };
    double t[K], p[2] = {1.3, 0.4}, y0[3] = {1, 0, 0}, a[K * 3], b[K * 3];
    for (int k = 0; k < K; k++)
        t[k] = 0.2 * k;
    for (int mi = 0; mi < N_METHODS; mi++) {
        remat_program *prog = rows_prog(methods[mi], 0.05, 200, K, NULL, 0);
        run(prog, (double *[]){y0, p, t}, (double *[]){a}, NULL);
        interval_rows(methods[mi], 0.05, K, t, p, b);
        for (int i = 0; i < K * 3; i++)
            if (!(fabs(a[i] - b[i]) <= 1e-12))
                fail_msg("%s: row %d species %d: %.17g, per-interval %.17g", remat_ode_method_name(methods[mi]),
                         i / 3, i % 3, a[i], b[i]);
        assert_true(a[0] == 1.0 && a[1] == 0.0 && a[2] == 0.0); /* t = t0: y0 itself */
        remat_program_free(prog);
    }
}

/* Rows between steps come from the step's cubic Hermite interpolant: with
 * rk4 at dt 0.01 every row of 997 uneven times is within 1e-9 of the exact
 * solution (linear interpolation would be off by ~1e-5), and the program
 * compiled once serves a second set of times. */
static void test_models_fixed_dense_off_grid_rows_match_exact(void **state)
{
    (void)state;
    enum { K = 997 };
    double *t = malloc(sizeof *t * K), *ys = malloc(sizeof *ys * K * 3), p[2] = {1.0, 0.5}, y0[3] = {1, 0, 0};
    remat_program *prog = rows_prog(REMAT_ODE_RK4, 0.01, 1000, K, NULL, 0);
    for (int set = 0; set < 2; set++) {
        for (int k = 0; k < K; k++)
            t[k] = set ? 10.0 * (k + 1) / K : 10.0 * pow((k + 1.0) / K, 1.5);
        run(prog, (double *[]){y0, p, t}, (double *[]){ys}, NULL);
        double worst = 0;
        for (int k = 0; k < K; k++) {
            double B, d1, d2;
            abc_exact(t[k], 1.0, 0.5, &B, &d1, &d2);
            worst = fmax(worst, fmax(fabs(ys[k * 3] - exp(-t[k])), fabs(ys[k * 3 + 1] - B)));
        }
        if (!(worst < 1e-9))
            fail_msg("time set %d: worst row error %.3g", set, worst);
    }
    remat_program_free(prog);
    free(ys);
    free(t);
}

/* Reverse mode through the rows: the gradient of a loss over rows between
 * steps (odd k: the Hermite rows, tsit5's and dopri5's own extension) and on
 * the grid (even k: 0.27 k = 27 (k/2) steps of 0.02, the step ends) matches
 * central differences w.r.t. the rate constants and y0 (fixed steps:
 * nothing else moves with p). */
static void test_models_fixed_dense_gradient_matches_central_differences(void **state)
{
    (void)state;
    enum { K = 37 };
    double t[K], w[K * 3];
    for (int k = 0; k < K; k++)
        t[k] = 0.27 * k + (k % 2 ? 0.013 : 0.0);
    for (int i = 0; i < K * 3; i++)
        w[i] = 0.3 * sin(1.7 * i) + 0.1;
    for (int mi = 0; mi < N_METHODS; mi++) {
        remat_program *g = rows_prog(methods[mi], 0.02, 500, K, w, 1), *fwd = rows_prog(methods[mi], 0.02, 500, K, w, 0);
        double y0[3] = {1.0, 0.2, 0.0}, p[2] = {0.9, 0.35}, gy0[3], gp[2];
        run(g, (double *[]){y0, p, t}, (double *[]){gy0, gp}, NULL);
        double x[5] = {p[0], p[1], y0[0], y0[1], y0[2]}, an[5] = {gp[0], gp[1], gy0[0], gy0[1], gy0[2]};
        for (int i = 0; i < 5; i++) {
            double e = 1e-5 * fmax(1.0, fabs(x[i])), lp, lm, xp[5], xm[5];
            memcpy(xp, x, sizeof x), memcpy(xm, x, sizeof x);
            xp[i] += e, xm[i] -= e;
            run(fwd, (double *[]){xp + 2, xp, t}, (double *[]){&lp}, NULL);
            run(fwd, (double *[]){xm + 2, xm, t}, (double *[]){&lm}, NULL);
            double cd = (lp - lm) / (2 * e);
            if (!(fabs(an[i] - cd) <= 1e-7 * fabs(cd) + 1e-9))
                fail_msg("%s: d loss / d x%d = %.12g, central differences %.12g", remat_ode_method_name(methods[mi]),
                         i, an[i], cd);
        }
        remat_program_free(g);
        remat_program_free(fwd);
    }
}

/* A row within REMAT_ODE_GRID_TOL j dt of the grid point t0 + j dt is that
 * step's end y' itself, not an interpolant read next to it: times a few
 * 1e-10 relative off the grid give the grid times' rows bitwise (the same
 * program; an interpolated row moves by ~1e-10 |y'|), for every method. */
static void test_models_fixed_dense_grid_rows_are_step_ends(void **state)
{
    (void)state;
    enum { K = 8 };
    double t[K], tj[K], p[2] = {1.3, 0.4}, y0[3] = {1, 0, 0}, a[K * 3], b[K * 3];
    for (int k = 0; k < K; k++) {
        t[k] = 0.25 * (k + 1); /* 5 (k + 1) steps of 0.05 */
        tj[k] = t[k] * (1.0 + (k % 2 ? 4e-10 : -4e-10));
    }
    for (int mi = 0; mi < N_METHODS; mi++) {
        remat_program *prog = rows_prog(methods[mi], 0.05, 41, K, NULL, 0);
        run(prog, (double *[]){y0, p, t}, (double *[]){a}, NULL);
        run(prog, (double *[]){y0, p, tj}, (double *[]){b}, NULL);
        for (int i = 0; i < K * 3; i++)
            if (a[i] != b[i])
                fail_msg("%s: row %d species %d: %.17g at the grid time, %.17g at 4e-10 relative off it",
                         remat_ode_method_name(methods[mi]), i / 3, i % 3, a[i], b[i]);
        remat_program_free(prog);
    }
}

/* tsit5 and dopri5 read rows between steps from their own continuous
 * extension, whose error converges at the method's order 5: the worst
 * error against the exact solution of rows at every third of a step falls
 * by >= 24x from dt 0.25 to 0.125 (measured 39x tsit5, 36x dopri5; a cubic
 * Hermite interpolant's by 15x, order 4) and stays within 10x the step
 * ends' (measured <= 6x; Hermite's 160x and 45x at dt 0.25). */
static void test_models_fixed_dense_own_extension_as_accurate_as_steps(void **state)
{
    (void)state;
    enum { K = 3 * 40 };
    double t[K], ys[K * 3], p[2] = {1.0, 0.5}, y0[3] = {1, 0, 0};
    for (int mi = 2; mi < N_METHODS; mi++) {
        double off_prev = 0;
        for (double dt = 0.25; dt > 0.1; dt /= 2) {
            for (int k = 0; k < K; k++)
                t[k] = dt * (k + 1) / 3.0;
            remat_program *prog = rows_prog(methods[mi], dt, 40, K, NULL, 0);
            run(prog, (double *[]){y0, p, t}, (double *[]){ys}, NULL);
            remat_program_free(prog);
            double on = 0, off = 0;
            for (int k = 0; k < K; k++) {
                double B, d1, d2;
                abc_exact(t[k], 1.0, 0.5, &B, &d1, &d2);
                double e = fmax(fabs(ys[k * 3] - exp(-t[k])), fabs(ys[k * 3 + 1] - B));
                if (k % 3 == 2)
                    on = fmax(on, e);
                else
                    off = fmax(off, e);
            }
            print_message("%s dt %g: worst row error %.3g on the grid, %.3g off it\n",
                          remat_ode_method_name(methods[mi]), dt, on, off);
            if (!(off <= 10 * on))
                fail_msg("%s dt %g: rows off the grid are off by %.3g, the step ends by %.3g",
                         remat_ode_method_name(methods[mi]), dt, off, on);
            if (off_prev > 0 && !(off_prev >= 24 * off))
                fail_msg("%s: rows off the grid: error %.3g at dt %g, %.3g at dt %g (order < 5)",
                         remat_ode_method_name(methods[mi]), off_prev, 2 * dt, off, dt);
            off_prev = off;
        }
    }
}

/* Fixed steps at times as a value need dt > 0, a total step count and the
 * discrete adjoint: each missing one is an error naming it, not rows left
 * at y0 or a scan of no steps. */
static void test_models_fixed_dense_bad_options(void **state)
{
    (void)state;
    remat_mechanism *m = parse(ABC);
    int64_t S = 3, P = 2, K = 4;
    remat_fn *f = remat_fn_new("fixed_bad");
    remat_val y0 = remat_arg(f, "y0", REMAT_F64, 1, &S), pv = remat_arg(f, "p", REMAT_F64, 1, &P);
    remat_val ts = remat_arg(f, "ts", REMAT_F64, 1, &K), out;
    remat_ode_options o = {.method = REMAT_ODE_RK4, .dt = 0.1, .steps = 0};
    assert_int_equal(remat_ode_integrate_times(f, m, &o, y0, pv, ts, &out, NULL), REMAT_ERR_VALUE);
    assert_non_null(strstr(remat_last_error(), "steps >= 1, the total step count"));
    o.steps = 10, o.dt = 0;
    assert_int_equal(remat_ode_integrate_times(f, m, &o, y0, pv, ts, &out, NULL), REMAT_ERR_VALUE);
    assert_non_null(strstr(remat_last_error(), "dt > 0"));
    o.dt = 0.1, o.adjoint = REMAT_ODE_ADJOINT_BACKSOLVE;
    assert_int_equal(remat_ode_integrate_times(f, m, &o, y0, pv, ts, &out, NULL), REMAT_ERR_ARG);
    assert_non_null(strstr(remat_last_error(), "discrete adjoint"));
    remat_fn_free(f);
    remat_mechanism_free(m);
}

static const char *const abc_fit = "species A, B, C\nparam k1 = 0.5\nparam k2 = 0.5\nA -> B : k1\nB -> C : k2\n";

/* K rows of the exact A -> B -> C solution (k = 0.7, 0.3) from A = a0 over [0, 10] */
static remat_dataset *abc_rows(const remat_mechanism *m, int K, double a0)
{
    char path[] = "/tmp/remat_fixed_dense_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *fp = fdopen(fd, "w");
    fprintf(fp, "t,A,B,C\n");
    for (int i = 0; i < K; i++) {
        double t = 10.0 * i / (K - 1), A = a0 * exp(-0.7 * t);
        double B = a0 * 0.7 / (0.3 - 0.7) * (exp(-0.7 * t) - exp(-0.3 * t));
        fprintf(fp, "%.17g,%.17g,%.17g,%.17g\n", t, A, B, a0 - A - B);
    }
    fclose(fp);
    remat_dataset *d;
    assert_ok(remat_dataset_read(path, m, &d));
    unlink(path);
    return d;
}

static double planned(const remat_program *p)
{
    if (!p)
        return 0;
    remat_memory_plan plan;
    remat_program_plan(p, &plan);
    return (double)(plan.arena_bytes + plan.constant_bytes);
}

/* A fixed-step fit (method, dt 0.05 or steps per interval, lm; adjoint)
 * of E experiments of K rows each: the constants, the classes, the
 * residuals at k = (0.7, 0.3), and the bytes of the first class's programs */
static int64_t res_nodes;  /* the last fit_fixed's residual graph: its nodes */
static bool exp_rows;      /* ... and whether its first experiment took the row scan */
static int64_t n_res;      /* ... and its residual count */
static double fit_dt = 0.05; /* the dt of fit_fixed's fits */

static double fit_fixed(remat_ode_method method, int E, int K, int64_t steps, remat_ode_adjoint adjoint,
                        double *k_out, int *n_cls, double *pred, double *res)
{
    remat_mechanism *m = parse(abc_fit);
    remat_dataset *d[4];
    for (int e = 0; e < E; e++)
        d[e] = abc_rows(m, K, 0.6 + 0.3 * e);
    remat_fit_options o = remat_fit_defaults();
    o.method = method, o.adaptive = false, o.adjoint = adjoint;
    if (steps)
        o.steps = steps;
    else
        o.dt = fit_dt;
    remat_fit *fit;
    assert_ok(remat_fit_new(m, E, d, &o, &fit));
    n_res = remat_fit_residual_count(fit);
    if (res)
        assert_ok(remat_fit_residuals(fit, (double[]){0.7, 0.3}, res));
    if (pred) /* the states at three times (two off the data rows), at k = (0.7, 0.3) */
        assert_ok(remat_fit_predict(fit, E - 1, (double[]){0.7, 0.3}, 3, (double[]){0.1, 3.3, 10.0}, pred));
    if (k_out) {
        remat_fit_result r;
        assert_ok(remat_fit_run(fit, &r));
        k_out[0] = r.params[0], k_out[1] = r.params[1];
        remat_fit_result_clear(&r);
    }
    *n_cls = fit->n_cls;
    exp_rows = fit_exp_rows(&fit->exp[0]);
    const fit_class *k = &fit->cls[0];
    double bytes = planned(k->res) + planned(k->vg) + planned(k->vjp) + planned(k->jvp);
    res_nodes = k->res_fn ? remat_fn_num_nodes(k->res_fn) : 0;
    remat_fit_free(fit);
    for (int e = 0; e < E; e++)
        remat_dataset_free(d[e]);
    remat_mechanism_free(m);
    return bytes;
}

/* Every fit of fixed steps takes the row scan (remat_ode_integrate_rows),
 * whatever its adjoint: the per-interval grid's steps, so the discrete
 * adjoint's residuals and predictions equal the backsolve adjoint's (its
 * forward: the same steps, every interval's own) to 1e-12, for rows on
 * the grid (101 rows, every 0.1 = 2 steps of 0.05) and off it (300 rows)
 * with rk4 and euler, and with --steps; three experiments of one
 * length share one class of programs with either adjoint (the continuous
 * adjoint had one each, its grid built from the times: issue 21); the fit
 * finds the constants. */
static void test_models_fixed_dense_fit_matches_per_interval(void **state)
{
    (void)state;
    static const struct {
        remat_ode_method method;
        int K;
        int64_t steps;
    } cases[] = {{REMAT_ODE_RK4, 101, 0}, {REMAT_ODE_RK4, 300, 0}, {REMAT_ODE_EULER, 300, 0},
                 {REMAT_ODE_RK4, 300, 3}};
    enum { E = 3, CELLS = E * 300 * 3 };
    double *ra = malloc(sizeof *ra * CELLS), *rb = malloc(sizeof *rb * CELLS), pa[9], pb[9];
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int na, nb;
        fit_fixed(cases[c].method, E, cases[c].K, cases[c].steps, REMAT_ODE_ADJOINT_DISCRETE, NULL, &na, pa, ra);
        int64_t cells = n_res; /* the measured cells: row 0, the initial state, is not */
        assert_true(cells > 0 && cells <= E * cases[c].K * 3);
        assert_true(exp_rows);
        assert_int_equal(na, 1);
        if (c == 0) { /* the interpolating adjoint: the same row scan, one class */
            fit_fixed(cases[c].method, E, cases[c].K, cases[c].steps, REMAT_ODE_ADJOINT_INTERPOLATING, NULL, &nb, pb,
                      rb);
            assert_true(exp_rows);
            assert_int_equal(nb, 1);
            for (int64_t i = 0; i < cells; i++)
                assert_close(rb[i], ra[i], 0, 1e-12);
        }
        fit_fixed(cases[c].method, E, cases[c].K, cases[c].steps, REMAT_ODE_ADJOINT_BACKSOLVE, NULL, &nb, pb, rb);
        assert_true(exp_rows);
        assert_int_equal(nb, 1);
        assert_int_equal(n_res, cells);
        double worst = 0;
        for (int64_t i = 0; i < cells; i++) {
            if (!(fabs(ra[i] - rb[i]) <= 1e-12))
                fail_msg("%s, %d rows, steps %lld: residual %lld: %.17g, per-interval %.17g",
                         remat_ode_method_name(cases[c].method), cases[c].K, (long long)cases[c].steps, (long long)i, ra[i],
                         rb[i]);
            worst = fmax(worst, fabs(ra[i] - rb[i]));
        }
        for (int i = 0; i < 9; i++) /* remat_fit_predict: the same steps */
            assert_close(pa[i], pb[i], 1e-12, 1e-15);
        print_message("%s, %d rows, steps %lld: worst residual difference %.3g\n",
                      remat_ode_method_name(cases[c].method), cases[c].K, (long long)cases[c].steps, worst);
    }
    free(ra);
    free(rb);
    double k[2];
    int n;
    fit_fixed(REMAT_ODE_RK4, 2, 1000, 0, REMAT_ODE_ADJOINT_DISCRETE, k, &n, NULL, NULL);
    assert_close(k[0], 0.7, 1e-4, 0);
    assert_close(k[1], 0.3, 1e-4, 0);
}

/* tsit5, dopri5 and rodas5 fits take the row scan on the uniform grid of dt, their
 * off-grid rows (11 rows every 1.0, dt 0.6, as bench_pfr's check) the grid step's own
 * continuous extension (remat_ode_integrate_rows; the rows equal
 * fixed_dense.c's: test_models_rows.c): the residuals at the true
 * constants, the rows' errors against the exact data, differ from the
 * per-interval grid's (forced step ends, which the backsolve adjoint's row
 * scan takes)
 * by > 1e-12, and are at most 4x theirs (the forced steps here are 0.5,
 * finer than dt: (0.6 / 0.5)^5 = 2.5x from the step alone; measured 2.2x
 * tsit5, 2.0x dopri5, 2.3x rodas5) */
static void test_models_fixed_dense_fit_own_extension(void **state)
{
    (void)state;
    static const remat_ode_method own[] = {REMAT_ODE_TSIT5, REMAT_ODE_DOPRI5, REMAT_ODE_RODAS5};
    enum { E = 1, K = 11, CELLS = E * K * 3 };
    double ra[CELLS], rb[CELLS];
    fit_dt = 0.6;
    for (int mi = 0; mi < 3; mi++) {
        int na, nb;
        fit_fixed(own[mi], E, K, 0, REMAT_ODE_ADJOINT_DISCRETE, NULL, &na, NULL, ra);
        assert_true(exp_rows);
        int64_t cells = n_res;
        fit_fixed(own[mi], E, K, 0, REMAT_ODE_ADJOINT_BACKSOLVE, NULL, &nb, NULL, rb);
        assert_true(exp_rows); /* the row scan of every interval's own steps (rows_adjoint.c) */
        assert_int_equal(n_res, cells);
        double ea = 0, eb = 0, diff = 0;
        for (int64_t i = 0; i < cells; i++) {
            ea = fmax(ea, fabs(ra[i]));
            eb = fmax(eb, fabs(rb[i]));
            diff = fmax(diff, fabs(ra[i] - rb[i]));
        }
        print_message("%s: worst row error %.3g (own extension), %.3g (forced steps); difference %.3g\n",
                      remat_ode_method_name(own[mi]), ea, eb, diff);
        if (!(diff > 1e-12))
            fail_msg("%s: the fit's rows are the forced steps' (difference %.3g)", remat_ode_method_name(own[mi]),
                     diff);
        if (!(ea <= 4 * eb))
            fail_msg("%s: the own extension's rows are off by %.3g, the forced steps' by %.3g",
                     remat_ode_method_name(own[mi]), ea, eb);
    }
    fit_dt = 0.05;
}

/* A 20,000-row experiment with rk4's rows off the grid fits in a graph of
 * as many nodes as 1,000 rows take (the old path: a scan per row, 1.7 GB of
 * RSS for `remat pfr fit --method rk4 --dt 0.05` at 20,000 rows), and its
 * programs' planned bytes grow by O(rows x S). */
static void test_models_fixed_dense_fit_of_20000_rows(void **state)
{
    (void)state;
    double k[2];
    int n;
    double small = fit_fixed(REMAT_ODE_RK4, 1, 1000, 0, REMAT_ODE_ADJOINT_DISCRETE, k, &n, NULL, NULL);
    int64_t nodes_small = res_nodes;
    assert_true(exp_rows);
    double big = fit_fixed(REMAT_ODE_RK4, 1, 20000, 0, REMAT_ODE_ADJOINT_DISCRETE, k, &n, NULL, NULL);
    assert_close(k[0], 0.7, 1e-4, 0);
    if (res_nodes != nodes_small) /* the old path: a scan (and its nodes) per row */
        fail_msg("the residual graph has %lld nodes at 20000 rows, %lld at 1000", (long long)res_nodes,
                 (long long)nodes_small);
    double per_row = (big - small) / 19000.0;
    if (!(per_row <= 4 * 200.0 * 3 * 8))
        fail_msg("the fit's programs grow by %.0f bytes per row (%.0f at 1000 rows, %.0f at 20000)", per_row, small,
                 big);
}

/* Many steps per data interval (dt 0.02: 5 per row of 101) take the row
 * scan too (its while loop per row), and the fit finds the constants */
static void test_models_fixed_dense_fit_many_steps_per_interval(void **state)
{
    (void)state;
    double k[2];
    int n;
    fit_dt = 0.02;
    fit_fixed(REMAT_ODE_RK4, 1, 101, 0, REMAT_ODE_ADJOINT_DISCRETE, k, &n, NULL, NULL);
    assert_true(exp_rows);
    assert_close(k[0], 0.7, 1e-6, 0);
    fit_dt = 0.05;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_models_fixed_dense_on_grid_rows_match_intervals),
        cmocka_unit_test(test_models_fixed_dense_off_grid_rows_match_exact),
        cmocka_unit_test(test_models_fixed_dense_gradient_matches_central_differences),
        cmocka_unit_test(test_models_fixed_dense_grid_rows_are_step_ends),
        cmocka_unit_test(test_models_fixed_dense_own_extension_as_accurate_as_steps),
        cmocka_unit_test(test_models_fixed_dense_fit_own_extension),
        cmocka_unit_test(test_models_fixed_dense_bad_options),
        cmocka_unit_test(test_models_fixed_dense_fit_matches_per_interval),
        cmocka_unit_test(test_models_fixed_dense_fit_of_20000_rows),
        cmocka_unit_test(test_models_fixed_dense_fit_many_steps_per_interval),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

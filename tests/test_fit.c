/*
 * test_fit.c — least-squares fitting of rate constants (remat/fit.h).
 *
 * Synthetic data come from the model itself (remat_fit_predict on the same
 * step grid the fit uses), so noise-free data have an exact minimum at the
 * true constants and a fit must find them to the optimizer's tolerance; noisy
 * data add Gaussian noise from a fixed seed. The recovery problem has five
 * species and constants 1e-3 .. 10, three experiments (one with missing
 * cells), and starts a factor 10 away from every constant.
 */
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "remat/remat.h"

/* |got - want| <= rel * |want| */
#define assert_rel(got, want, rel)                                                                          \
    do {                                                                                                    \
        double g_ = (got), w_ = (want);                                                                     \
        if (!(fabs(g_ - w_) <= (rel) * fabs(w_)))                                                           \
            fail_msg("%s = %.17g, expected %.17g (relative error %.3g > %g)", #got, g_, w_,                  \
                     fabs(g_ - w_) / fabs(w_), (double)(rel));                                              \
    } while (0)

/* ---- helpers ---- */

/* uniform in (0, 1): never 0, so log(u) below is finite */
static double urand_open(void) { return ((double)(rng_next() >> 11) + 0.5) * 0x1.0p-53; }

static double gauss(void) /* Box–Muller */
{
    double u = urand_open(), v = urand_open();
    return sqrt(-2.0 * log(u)) * cos(2.0 * M_PI * v);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static char tmpdir[256];

static int setup_dir(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/remat_test_fit_XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int remove_dir(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

/* Writes a CSV: header "t,<species...>", rows[i] = time then S values (NaN: empty). */
static const char *write_csv(const char *name, const remat_mechanism *m, int rows, const double *times,
                             const double *values)
{
    static char path[8][320];
    static int next;
    char *p = path[next++ % 8];
    snprintf(p, 320, "%s/%s", tmpdir, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    int S = remat_mechanism_species_count(m);
    fprintf(f, "t");
    for (int s = 0; s < S; s++)
        fprintf(f, ",%s", remat_mechanism_species_name(m, s));
    fprintf(f, "\n");
    for (int r = 0; r < rows; r++) {
        fprintf(f, "%.17g", times[r]);
        for (int s = 0; s < S; s++) {
            double v = values[r * S + s];
            if (isnan(v))
                fprintf(f, ",");
            else
                fprintf(f, ",%.17g", v);
        }
        fprintf(f, "\n");
    }
    fclose(f);
    return p;
}

static remat_dataset *read_csv(const char *path, const remat_mechanism *m)
{
    remat_dataset *d = NULL;
    if (remat_dataset_read(path, m, &d) != REMAT_OK)
        fail_msg("read %s: %s", path, remat_last_error());
    return d;
}

/* An experiment: its initial state, times, and which cells are blanked. */
typedef struct {
    const char *name;
    double y0[8];
    int rows;
    const double *times;
    int blank_every; /* 0: none; else blank cell (r, s) when (r*S + s) % blank_every == 1 (never row 0) */
} experiment;

/* Model values at the experiment's times for params (the grid the fit will
 * use with opt), with optional noise and blanks, written as CSV; returns the
 * dataset read back. */
static remat_dataset *synthesize(const remat_mechanism *m, const experiment *x, const double *params,
                                 const remat_fit_options *opt, double noise)
{
    int S = remat_mechanism_species_count(m), R = x->rows;
    double *vals = calloc((size_t)(R * S), sizeof *vals);
    /* a template with the initial row and one measured cell gives the fit
     * handle whose grid we need */
    for (int i = 0; i < R * S; i++)
        vals[i] = NAN;
    for (int s = 0; s < S; s++)
        vals[s] = x->y0[s];
    vals[(R - 1) * S] = 0;
    char tname[64];
    snprintf(tname, sizeof tname, "template_%s", x->name);
    remat_dataset *tmpl = read_csv(write_csv(tname, m, R, x->times, vals), m);
    remat_fit_options o = *opt;
    o.y0 = NULL;
    o.progress = NULL;
    remat_fit *fit;
    assert_ok(remat_fit_new(m, 1, &tmpl, &o, &fit));
    assert_ok(remat_fit_predict(fit, 0, params, R, x->times, vals));
    remat_fit_free(fit);
    remat_dataset_free(tmpl);
    for (int r = 1; r < R; r++)
        for (int s = 0; s < S; s++) {
            vals[r * S + s] += noise * gauss();
            if (x->blank_every && (r * S + s) % x->blank_every == 1)
                vals[r * S + s] = NAN;
        }
    remat_dataset *d = read_csv(write_csv(x->name, m, R, x->times, vals), m);
    free(vals);
    return d;
}

/* ---- the recovery problem ---- */

/* Five species, constants 1e-3 .. 10; the declared values are the start, a
 * factor 10 from the truth (below for the fast k1, so that the start is
 * stable for the explicit integrator; above or below for the others). */
static const char *recovery_mech = "species A, B, C, D, E\n"
                                   "param k1 = 1       # true 10\n"
                                   "param k2 = 10      # true 1\n"
                                   "param k3 = 1       # true 0.1\n"
                                   "param k4 = 0.001   # true 0.01\n"
                                   "param k5 = 0.01    # true 0.001\n"
                                   "A -> B : k1\n"
                                   "B -> C : k2\n"
                                   "2 C -> D : k3\n"
                                   "C -> E : k4\n"
                                   "D -> E : k5\n";
static const double recovery_true[5] = {10, 1, 0.1, 0.01, 0.001};

static const double times_a[] = {0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 3, 4, 6, 8, 10, 12, 15, 20};
static const double times_b[] = {0, 0.5, 1, 2, 4, 6, 8, 10, 14, 20};
static const double times_c[] = {0, 1, 2, 3, 5, 8, 12, 16, 20};

static const experiment recovery_exps[3] = {
    {"exp_a.csv", {1, 0, 0, 0, 0}, 18, times_a, 0},
    {"exp_b.csv", {0, 0, 1, 0.5, 0}, 10, times_b, 7},
    {"exp_c.csv", {0.5, 0, 0, 1, 0}, 9, times_c, 3},
};

static void recovery_data(const remat_mechanism *m, const remat_fit_options *o, double noise, remat_dataset **d)
{
    for (int e = 0; e < 3; e++)
        d[e] = synthesize(m, &recovery_exps[e], recovery_true, o, noise);
}

static void print_result(const char *what, const remat_fit_result *r, double seconds)
{
    printf("# %s: %s, %d iterations, %lld program runs, %.3f s, F = %.3g, %s\n", what, r->optimizer, r->iterations,
           (long long)r->evaluations, seconds, r->objective, r->message);
    for (int i = 0; i < r->n_params; i++)
        printf("#   %s = %.12g\n", r->param_names[i], r->params[i]);
}

static void test_fit_recovers_constants_noise_free(void **state)
{
    (void)state;
    remat_mechanism *m = parse(recovery_mech);
    remat_fit_options o = remat_fit_defaults();
    remat_dataset *d[3];
    recovery_data(m, &o, 0.0, d);
    remat_fit_result r;
    double t = now();
    assert_ok(remat_fit_run_once(m, 3, d, &o, &r));
    print_result("noise-free recovery, defaults", &r, now() - t);
    assert_true(r.converged);
    assert_string_equal(r.optimizer, "lm");
    for (int i = 0; i < 5; i++)
        assert_rel(r.params[i], recovery_true[i], 1e-6);
    assert_int_equal(r.n_history, r.iterations + 1);
    remat_fit_result_clear(&r);
    for (int e = 0; e < 3; e++)
        remat_dataset_free(d[e]);
    remat_mechanism_free(m);
}

/* With noise sigma the fit must explain the data to the noise level
 * (F/N near sigma^2, and no worse than the true constants do) and land
 * within a few standard errors of the truth; the standard errors come from
 * the Gauss-Newton covariance sigma^2 (J^T J)^-1 in log k, J by central
 * differences of the residuals. */
static void test_fit_recovers_constants_within_noise(void **state)
{
    (void)state;
    const double sigma = 0.002;
    remat_mechanism *m = parse(recovery_mech);
    remat_fit_options o = remat_fit_defaults();
    remat_dataset *d[3];
    recovery_data(m, &o, sigma, d);
    remat_fit *fit;
    assert_ok(remat_fit_new(m, 3, d, &o, &fit));
    remat_fit_result r;
    double t = now();
    assert_ok(remat_fit_run(fit, &r));
    print_result("noisy recovery (sigma 0.002), defaults", &r, now() - t);
    assert_true(r.converged);
    int64_t N = remat_fit_residual_count(fit);
    double F_true;
    assert_ok(remat_fit_objective(fit, recovery_true, &F_true));
    assert_true(r.objective <= F_true);
    assert_true(r.objective / (double)N > 0.5 * sigma * sigma && r.objective / (double)N < 1.5 * sigma * sigma);

    /* J^T J in theta = log k at the fit */
    double *J = calloc((size_t)N * 5, sizeof *J), *rp = calloc((size_t)N, sizeof *rp),
           *rm = calloc((size_t)N, sizeof *rm), A[5][5] = {{0}};
    for (int j = 0; j < 5; j++) {
        double k[5], h = 1e-6;
        memcpy(k, r.params, sizeof k);
        k[j] = r.params[j] * exp(h);
        assert_ok(remat_fit_residuals(fit, k, rp));
        k[j] = r.params[j] * exp(-h);
        assert_ok(remat_fit_residuals(fit, k, rm));
        for (int64_t i = 0; i < N; i++)
            J[i * 5 + j] = (rp[i] - rm[i]) / (2 * h);
    }
    for (int a = 0; a < 5; a++)
        for (int b = 0; b < 5; b++)
            for (int64_t i = 0; i < N; i++)
                A[a][b] += J[i * 5 + a] * J[i * 5 + b];
    /* invert by Gauss-Jordan (5 x 5, symmetric positive definite) */
    double inv[5][10];
    for (int a = 0; a < 5; a++)
        for (int b = 0; b < 10; b++)
            inv[a][b] = b < 5 ? A[a][b] : (b - 5 == a);
    for (int c = 0; c < 5; c++) {
        double piv = inv[c][c];
        for (int b = 0; b < 10; b++)
            inv[c][b] /= piv;
        for (int a = 0; a < 5; a++)
            if (a != c) {
                double f = inv[a][c];
                for (int b = 0; b < 10; b++)
                    inv[a][b] -= f * inv[c][b];
            }
    }
    for (int j = 0; j < 5; j++) {
        double se = sigma * sqrt(inv[j][j + 5]), err = log(r.params[j] / recovery_true[j]);
        printf("#   %s: log error %+.3g, standard error %.3g (%.1f se)\n", r.param_names[j], err, se, err / se);
        if (!(fabs(err) <= 4 * se))
            fail_msg("%s = %g is %.1f standard errors from %g", r.param_names[j], r.params[j], err / se,
                     recovery_true[j]);
    }
    free(J);
    free(rp);
    free(rm);
    remat_fit_result_clear(&r);
    remat_fit_free(fit);
    for (int e = 0; e < 3; e++)
        remat_dataset_free(d[e]);
    remat_mechanism_free(m);
}

/* Residuals are model - data for every measured cell, experiment by
 * experiment, row by row: checked against remat_fit_predict and the data. */
static void test_fit_residuals_cover_every_measured_cell(void **state)
{
    (void)state;
    remat_mechanism *m = parse(recovery_mech);
    remat_fit_options o = remat_fit_defaults();
    remat_dataset *d[3];
    recovery_data(m, &o, 0.01, d);
    remat_fit *fit;
    assert_ok(remat_fit_new(m, 3, d, &o, &fit));
    double k[5];
    remat_mechanism_param_values(m, k);
    int64_t N = remat_fit_residual_count(fit), n = 0, blank = 0;
    double *r = calloc((size_t)N, sizeof *r);
    assert_ok(remat_fit_residuals(fit, k, r));
    double sum = 0;
    for (int e = 0; e < 3; e++) {
        size_t R = remat_dataset_rows(d[e]);
        double *model = calloc(R * 5, sizeof *model);
        assert_ok(remat_fit_predict(fit, e, k, (int)R, remat_dataset_times(d[e]), model));
        for (size_t row = 1; row < R; row++) /* row 0 is the initial state: no residual */
            for (int s = 0; s < 5; s++) {
                if (!remat_dataset_is_measured(d[e], row, s)) {
                    blank++;
                    continue;
                }
                double want = model[row * 5 + s] - remat_dataset_value(d[e], row, s);
                if (!(fabs(r[n] - want) <= 1e-12 * (1 + fabs(want))))
                    fail_msg("experiment %d row %zu species %d: residual %.17g, want %.17g", e, row, s, r[n], want);
                sum += r[n] * r[n];
                n++;
            }
        free(model);
    }
    assert_int_equal(n, N);
    assert_true(blank > 0); /* the blanked cells are skipped, not counted */
    double F;
    assert_ok(remat_fit_objective(fit, k, &F));
    assert_true(fabs(F - sum) <= 1e-12 * sum);
    /* the initial states came from the first rows */
    assert_true(remat_fit_initial_state(fit, 1)[2] == 1.0 && remat_fit_initial_state(fit, 1)[3] == 0.5);
    free(r);
    remat_fit_free(fit);
    for (int e = 0; e < 3; e++)
        remat_dataset_free(d[e]);
    remat_mechanism_free(m);
}

/* Initial states from the options: a file whose first row is not at t0 and
 * misses species is then fine, and its first row counts as data. */
static void test_fit_initial_state_from_options(void **state)
{
    (void)state;
    remat_mechanism *m = parse("param k1 = 1\nparam k2 = 0.5\nA -> B : k1\nB -> C : k2\n");
    const double t[] = {0.5, 1, 2, 4};
    double v[4 * 3];
    for (int i = 0; i < 12; i++)
        v[i] = NAN;
    for (int r = 0; r < 4; r++) /* only B measured: B = k1/(k2-k1) (e^-k1 t - e^-k2 t) with k1 = 2, k2 = 0.5 */
        v[r * 3 + 1] = 2.0 / (0.5 - 2.0) * (exp(-2.0 * t[r]) - exp(-0.5 * t[r]));
    remat_dataset *d = read_csv(write_csv("only_b.csv", m, 4, t, v), m);
    remat_fit_options o = remat_fit_defaults();
    o.method = REMAT_ODE_TSIT5;
    o.adaptive = false;
    o.dt = 0.01;
    remat_fit_result r;
    remat_status st = remat_fit_run_once(m, 1, &d, &o, &r);
    assert_int_equal(st, REMAT_ERR_VALUE);
    assert_contains(remat_last_error(), "only_b.csv");
    assert_contains(remat_last_error(), "not at the start");
    remat_fit_result_clear(&r);

    const double y0[3] = {1, 0, 0};
    const double *y0s[1] = {y0};
    o.y0 = y0s;
    assert_ok(remat_fit_run_once(m, 1, &d, &o, &r));
    assert_int_equal(r.n_residuals, 4);
    assert_true(r.converged);
    assert_rel(r.params[0], 2.0, 1e-5);
    assert_rel(r.params[1], 0.5, 1e-5);
    remat_fit_result_clear(&r);
    remat_dataset_free(d);
    remat_mechanism_free(m);
}

/* ---- each optimizer on an easy problem ---- */

static const char *easy_mech = "param k1 = 0.3\nparam k2 = 2\nA -> B : k1\nB -> C : k2\n";
static const double easy_true[2] = {1.0, 0.5};
static const double easy_times[] = {0, 0.5, 1, 1.5, 2, 3, 4, 6, 8, 10};

static remat_dataset *easy_data(const remat_mechanism *m, const remat_fit_options *o)
{
    experiment x = {"easy.csv", {1, 0, 0}, 10, easy_times, 0};
    return synthesize(m, &x, easy_true, o, 0.0);
}

static void run_easy(remat_fit_optimizer which, double tol)
{
    remat_mechanism *m = parse(easy_mech);
    remat_fit_options o = remat_fit_defaults();
    o.optimizer = which;
    if (which == REMAT_FIT_ADAM) {
        o.lr = 0.05;
        o.max_iters = 600;
    }
    remat_dataset *d = easy_data(m, &o);
    remat_fit_result r;
    double t = now();
    assert_ok(remat_fit_run_once(m, 1, &d, &o, &r));
    print_result(remat_fit_optimizer_name(which), &r, now() - t);
    if (which != REMAT_FIT_ADAM)
        assert_true(r.converged);
    assert_rel(r.params[0], easy_true[0], tol);
    assert_rel(r.params[1], easy_true[1], tol);
    assert_true(r.history_objective[r.n_history - 1] < 1e-6 * r.history_objective[0]);
    remat_fit_result_clear(&r);
    remat_dataset_free(d);
    remat_mechanism_free(m);
}

static void test_fit_lm_converges(void **state)
{
    (void)state;
    run_easy(REMAT_FIT_LM, 1e-8);
}

static void test_fit_bfgs_converges(void **state)
{
    (void)state;
    run_easy(REMAT_FIT_BFGS, 1e-6);
}

static void test_fit_adam_converges(void **state)
{
    (void)state;
    run_easy(REMAT_FIT_ADAM, 1e-3);
}

/* remat_fit_predict with adaptive steps compiles one program per number of
 * times and keeps it: a second call (other parameters, other times of the
 * same length) builds nothing and gives the same values as a fresh
 * integration (remat_ode_run_once) and the closed form A = exp(-k1 t). */
static void test_fit_predict_keeps_its_program(void **state)
{
    (void)state;
    remat_mechanism *m = parse(easy_mech);
    remat_fit_options o = remat_fit_defaults();
    o.method = REMAT_ODE_TSIT5;
    o.adaptive = true;
    o.rtol = 1e-10;
    o.atol = 1e-12;
    remat_dataset *d = easy_data(m, &o);
    remat_fit *fit;
    assert_ok(remat_fit_new(m, 1, &d, &o, &fit));
    assert_int_equal(remat_fit_predict_builds(fit), 0);
    const double t1[4] = {0.25, 1, 2.5, 7}, t2[4] = {0.5, 3, 4, 9};
    const double k1[2] = {0.7, 0.4}, k2[2] = {1.3, 0.9};
    double y1[4 * 3], y2[4 * 3], again[4 * 3], ref[4 * 3];
    assert_ok(remat_fit_predict(fit, 0, k1, 4, t1, y1));
    assert_int_equal(remat_fit_predict_builds(fit), 1);
    assert_ok(remat_fit_predict(fit, 0, k2, 4, t2, y2));
    assert_ok(remat_fit_predict(fit, 0, k1, 4, t1, again));
    assert_int_equal(remat_fit_predict_builds(fit), 1); /* kept: built once */
    remat_ode_options ro = {.method = REMAT_ODE_TSIT5, .adaptive = true, .rtol = o.rtol, .atol = o.atol,
                            .dense = true, .n_times = 4};
    for (int c = 0; c < 2; c++) {
        const double *k = c ? k2 : k1, *t = c ? t2 : t1, *y = c ? y2 : y1;
        ro.times = t;
        assert_ok(remat_ode_run_once(m, &ro, (const double[]){1, 0, 0}, k, NULL, NULL, ref, NULL));
        for (int i = 0; i < 4; i++) {
            assert_rel(y[i * 3], exp(-k[0] * t[i]), 1e-8);
            for (int s = 0; s < 3; s++)
                assert_true(fabs(y[i * 3 + s] - ref[i * 3 + s]) <= 1e-9);
        }
    }
    for (int i = 0; i < 12; i++)
        assert_rel(again[i] + 1, y1[i] + 1, 1e-15);
    double y3[2 * 3];
    assert_ok(remat_fit_predict(fit, 0, k1, 2, t1, y3)); /* another length: its own program */
    assert_int_equal(remat_fit_predict_builds(fit), 2);
    assert_int_equal(remat_fit_predict(fit, 0, k1, 2, (const double[]){2, 1}, y3), REMAT_ERR_ARG);
    remat_fit_free(fit);
    remat_dataset_free(d);
    remat_mechanism_free(m);
}

/* opt.compile reaches every compile of the fit: interpreted loops without
 * fusion give the default's fit (to rounding), and an option out of range
 * is the compile's error, from remat_fit_new on. */
static void test_fit_compile_options(void **state)
{
    (void)state;
    remat_mechanism *m = parse(easy_mech);
    remat_fit_options o = remat_fit_defaults();
    remat_dataset *d = easy_data(m, &o);
    remat_fit_result ref, r;
    assert_ok(remat_fit_run_once(m, 1, &d, &o, &ref));
    remat_compile_options plain = {.jit = REMAT_JIT_NEVER, .no_fusion = true, .no_cache = true};
    o.compile = &plain;
    remat_fit *fit;
    assert_ok(remat_fit_new(m, 1, &d, &o, &fit));
    assert_ok(remat_fit_run(fit, &r));
    assert_rel(r.objective + 1, ref.objective + 1, 1e-9);
    assert_rel(r.params[0], ref.params[0], 1e-7);
    assert_rel(r.params[1], ref.params[1], 1e-7);
    double pred[2 * 3], stats[REMAT_ODE_STATS];
    assert_ok(remat_fit_predict(fit, 0, r.params, 2, (const double[]){1, 2}, pred));
    assert_ok(remat_fit_integration_stats(fit, r.params, stats));
    remat_fit_result_clear(&r);
    remat_fit_free(fit);
    remat_compile_options bad = {.num_threads = 999};
    o.compile = &bad;
    assert_int_equal(remat_fit_new(m, 1, &d, &o, &fit), REMAT_ERR_VALUE);
    assert_null(fit);
    assert_contains(remat_last_error(), "num_threads");
    remat_fit_result_clear(&ref);
    remat_dataset_free(d);
    remat_mechanism_free(m);
}

/* ---- bounds ---- */

/* k2's bounds exclude its true value: the fit must end on the bound and no
 * point it tries may leave the box (NLopt's L-BFGS, in log k), and LM and
 * BFGS (GSL's, unbounded: both on the MINUIT transform) must honour them too. */
static void test_fit_bounds_honoured(void **state)
{
    (void)state;
    remat_mechanism *m = parse("param k1 = 0.3 in [0.01, 100]\nparam k2 = 0.2 in [0.01, 0.3]\n"
                               "A -> B : k1\nB -> C : k2\n");
    remat_fit_options o = remat_fit_defaults();
    remat_dataset *d = easy_data(m, &o);
    remat_fit_optimizer which[3] = {REMAT_FIT_LBFGSB, REMAT_FIT_AUTO, REMAT_FIT_BFGS};
    const char *names[3] = {"lbfgs-b", "lm", "bfgs"};
    for (int w = 0; w < 3; w++) {
        o.optimizer = which[w];
        remat_fit_result r;
        double t = now();
        assert_ok(remat_fit_run_once(m, 1, &d, &o, &r));
        print_result(names[w], &r, now() - t);
        assert_string_equal(r.optimizer, names[w]);
        for (int h = 0; h < r.n_history; h++) {
            const double *p = r.history_params + (size_t)h * 2;
            if (!(p[0] >= 0.01 && p[0] <= 100 && p[1] >= 0.01 && p[1] <= 0.3))
                fail_msg("%s: iterate %d (k1 = %.17g, k2 = %.17g) leaves the bounds", names[w], h, p[0], p[1]);
        }
        assert_rel(r.params[1], 0.3, 1e-4); /* on the bound its true value (0.5) lies beyond */
        remat_fit_result_clear(&r);
    }
    /* a lower bound <= 0 puts the parameter on the linear scale and the
     * bound stays active; auto is lm (MINUIT transform), bounds or not */
    remat_mechanism *m0 = parse("param k1 = 0.3 in [0, 100]\nparam k2 = 2\nA -> B : k1\nB -> C : k2\n");
    o.optimizer = REMAT_FIT_AUTO;
    remat_fit_result r;
    assert_ok(remat_fit_run_once(m0, 1, &d, &o, &r));
    assert_string_equal(r.optimizer, "lm");
    assert_true(r.converged);
    assert_rel(r.params[0], 1.0, 1e-5);
    assert_rel(r.params[1], 0.5, 1e-5);
    remat_fit_result_clear(&r);
    /* GSL's BFGS has no bounds of its own: it once refused an active bound
     * (and before that ran NLopt under the name bfgs); on the MINUIT
     * variable it reaches the optimum inside the box */
    o.optimizer = REMAT_FIT_BFGS;
    assert_ok(remat_fit_run_once(m0, 1, &d, &o, &r));
    assert_string_equal(r.optimizer, "bfgs");
    assert_true(r.converged);
    assert_rel(r.params[0], 1.0, 1e-5);
    assert_rel(r.params[1], 0.5, 1e-5);
    remat_fit_result_clear(&r);
    o.optimizer = REMAT_FIT_LBFGSB;
    assert_ok(remat_fit_run_once(m0, 1, &d, &o, &r));
    assert_string_equal(r.optimizer, "lbfgs-b");
    remat_fit_result_clear(&r);
    remat_mechanism_free(m0);
    remat_dataset_free(d);
    remat_mechanism_free(m);
}

/* ---- non-finite values ---- */

static void test_fit_nan_stops_with_message(void **state)
{
    (void)state;
    /* log(k2 - 1) is NaN at the start k2 = 0.5 */
    remat_mechanism *m = parse("param k1 = 0.3\nparam k2 = 0.5\nA -> B : k1\nB -> C : log(k2 - 1) * B\n");
    remat_mechanism *good = parse(easy_mech);
    remat_fit_options o = remat_fit_defaults();
    remat_dataset *d = easy_data(good, &o);
    remat_fit_optimizer which[3] = {REMAT_FIT_LM, REMAT_FIT_BFGS, REMAT_FIT_ADAM};
    for (int w = 0; w < 3; w++) {
        o.optimizer = which[w];
        remat_fit_result r;
        assert_int_equal(remat_fit_run_once(m, 1, &d, &o, &r), REMAT_ERR_NUMERIC);
        assert_contains(remat_last_error(), "iteration 0");
        assert_contains(remat_last_error(), "nan");
        assert_contains(remat_last_error(), "k1=0.3");
        assert_contains(remat_last_error(), "k2=0.5");
        /* the rate that cannot be computed is named, not the step size */
        assert_contains(remat_last_error(), "the rate expression 'log(k2 - 1)' is nan at t = 0: log of a negative "
                                            "number (-0.5)");
        assert_string_equal(r.message, remat_last_error());
        assert_false(r.converged);
        remat_fit_result_clear(&r);
    }
    /* Adam walking towards NaN: sqrt(k1 - 0.8) is real at the start (k1 = 2)
     * but the data want a rate below the 2 this rate never goes under, so k1
     * is pulled down on the linear scale, past 0.8. A step there is a trial
     * point that failed (it once stopped the fit with the NaN): Adam goes
     * back to its best point with a smaller rate, and ends on the edge of
     * the finite region with every iterate finite */
    remat_mechanism *m2 = parse("param k1 = 2 in [-10, 10]\nparam k2 = 0.5\n"
                                "A -> B : (sqrt(k1 - 0.8) + 2) * A\nB -> C : k2\n");
    o.optimizer = REMAT_FIT_ADAM;
    o.lr = 0.5;
    o.max_iters = 200;
    remat_fit_result r;
    assert_ok(remat_fit_run_once(m2, 1, &d, &o, &r));
    printf("# %s (k1 = %.17g)\n", r.message, r.params[0]);
    assert_contains(r.message, "rejected steps");
    assert_null(strstr(r.message, " 0 rejected steps"));
    for (int h = 0; h < r.n_history; h++)
        assert_true(isfinite(r.history_objective[h]) && r.history_params[2 * h] >= 0.8);
    assert_true(r.params[0] >= 0.8 && r.params[0] < 1.0);
    assert_true(r.objective < r.history_objective[0]);
    remat_fit_result_clear(&r);
    remat_mechanism_free(m2);
    remat_dataset_free(d);
    remat_mechanism_free(good);
    remat_mechanism_free(m);
}

/* LM keeps its trust-region safeguard: a trial step whose residuals are not
 * finite is rejected like any step that does not lower F. From k1 = 0.2 the
 * Gauss-Newton step on log k1 overshoots to k1 ~ 50, where sqrt(2.01 - k1)
 * is NaN; LM must damp and still find k1 = 1.01 (rate 1, as in the data). */
static void test_fit_lm_rejects_non_finite_trial_steps(void **state)
{
    (void)state;
    remat_mechanism *good = parse(easy_mech);
    remat_fit_options o = remat_fit_defaults();
    remat_dataset *d = easy_data(good, &o);
    remat_mechanism *m = parse("param k1 = 0.2\nparam k2 = 0.5\nA -> B : sqrt(2.01 - k1) * A\nB -> C : k2\n");
    {
        remat_fit_result r;
        o.optimizer = REMAT_FIT_LM;
        assert_ok(remat_fit_run_once(m, 1, &d, &o, &r));
        assert_true(r.converged);
        assert_rel(r.params[0], 1.01, 1e-8);
        assert_rel(r.params[1], 0.5, 1e-8);
        remat_fit_result_clear(&r);
    }
    /* the objective at the overshoot is indeed not finite */
    remat_fit *fit;
    assert_ok(remat_fit_new(m, 1, &d, &o, &fit));
    double F;
    assert_ok(remat_fit_objective(fit, (const double[]){20, 0.5}, &F));
    assert_true(isnan(F));
    remat_fit_free(fit);
    remat_mechanism_free(m);
    remat_dataset_free(d);
    remat_mechanism_free(good);
}

/* ---- options ---- */

static void test_fit_bad_options(void **state)
{
    (void)state;
    remat_mechanism *m = parse(easy_mech);
    remat_fit_options o = remat_fit_defaults();
    remat_dataset *d = easy_data(m, &o);
    remat_fit *fit = NULL;

    o.steps = -5;
    assert_int_equal(remat_fit_new(m, 1, &d, &o, &fit), REMAT_ERR_VALUE);
    assert_contains(remat_last_error(), "steps = -5");
    assert_null(fit);

    o = remat_fit_defaults();
    o.dt = -0.1;
    assert_int_equal(remat_fit_new(m, 1, &d, &o, &fit), REMAT_ERR_VALUE);
    assert_contains(remat_last_error(), "dt = -0.1");

    remat_fit_optimizer opt;
    assert_int_equal(remat_fit_optimizer_parse("newton", &opt), REMAT_ERR_ARG);
    assert_contains(remat_last_error(), "'newton'");
    assert_contains(remat_last_error(), "lm");
    assert_ok(remat_fit_optimizer_parse("bfgs", &opt));
    assert_int_equal(opt, REMAT_FIT_BFGS);
    assert_ok(remat_fit_optimizer_parse("lbfgs-b", &opt));
    assert_int_equal(opt, REMAT_FIT_LBFGSB);
    assert_string_equal(remat_fit_optimizer_name(REMAT_FIT_LBFGSB), "lbfgs-b");
    assert_contains((remat_fit_optimizer_parse("lbfgs", &opt), remat_last_error()), "lbfgs-b");
    assert_int_equal(remat_fit_optimizer_parse(NULL, &opt), REMAT_ERR_NULL);
    assert_contains(remat_last_error(), "remat_fit_optimizer_parse: text is NULL");
    assert_int_equal(remat_fit_optimizer_parse("lm", NULL), REMAT_ERR_NULL);
    o = remat_fit_defaults();
    o.optimizer = (remat_fit_optimizer)42;
    assert_int_equal(remat_fit_new(m, 1, &d, &o, &fit), REMAT_ERR_ARG);
    assert_contains(remat_last_error(), "optimizer 42");

    o = remat_fit_defaults();
    o.memory_budget = 100;
    assert_int_equal(remat_fit_new(m, 1, &d, &o, &fit), REMAT_ERR_BUDGET);
    assert_contains(remat_last_error(), "memory budget of 100 bytes");
    assert_null(fit);

    o = remat_fit_defaults();
    o.start = (const double[]){-1, 0.5};
    o.scale = (const remat_fit_scale[]){REMAT_FIT_SCALE_LOG, REMAT_FIT_SCALE_AUTO};
    assert_int_equal(remat_fit_new(m, 1, &d, &o, &fit), REMAT_ERR_VALUE);
    assert_contains(remat_last_error(), "'k1' is on the log scale but starts at -1");

    o = remat_fit_defaults();
    o.fixed = (const bool[]){true, true};
    assert_int_equal(remat_fit_new(m, 1, &d, &o, &fit), REMAT_ERR_ARG);
    assert_contains(remat_last_error(), "every parameter is fixed");

    o = remat_fit_defaults();
    o.t0 = 0.25; /* data start at 0 */
    assert_int_equal(remat_fit_new(m, 1, &d, &o, &fit), REMAT_ERR_VALUE);
    assert_contains(remat_last_error(), "easy.csv");
    assert_contains(remat_last_error(), "before the start t0 = 0.25");

    /* a first row that does not give every species cannot be the initial state */
    const double t[] = {0, 1};
    const double v[] = {1, NAN, 0, 0.3, 0.4, 0.3};
    remat_dataset *d2 = read_csv(write_csv("partial.csv", m, 2, t, v), m);
    o = remat_fit_defaults();
    assert_int_equal(remat_fit_new(m, 1, &d2, &o, &fit), REMAT_ERR_VALUE);
    assert_contains(remat_last_error(), "partial.csv");
    assert_contains(remat_last_error(), "does not give species 'B'");
    remat_dataset_free(d2);

    remat_dataset_free(d);
    remat_mechanism_free(m);
}

/* A datum or a sigma that makes the objective overflow whatever the
 * parameters is named before the fit runs (file:line, column, where the
 * sigma came from), not reported as an inf objective at iteration 0. */
static void test_fit_overflowing_weights_name_the_cell(void **state)
{
    (void)state;
    remat_mechanism *m = parse(easy_mech);
    remat_fit *fit = NULL;
    const double t[] = {0, 1, 2};
    const double v[] = {1, 0, 0, 0.37, 1e308, 0.4, 0.14, 0.24, 0.62};
    remat_dataset *d = read_csv(write_csv("huge.csv", m, 3, t, v), m);
    remat_fit_options o = remat_fit_defaults();
    assert_int_equal(remat_fit_new(m, 1, &d, &o, &fit), REMAT_ERR_VALUE);
    assert_contains(remat_last_error(), "huge.csv:3: column 3 ('B'): the value 1e+308");
    assert_null(fit);
    remat_dataset_free(d);

    const double ok[] = {1, 0, 0, 0.37, 0.23, 0.4, 0.14, 0.24, 0.62};
    d = read_csv(write_csv("fine.csv", m, 3, t, ok), m);
    o.sigma = (const double[]){1e-300, 1, 1};
    assert_int_equal(remat_fit_new(m, 1, &d, &o, &fit), REMAT_ERR_VALUE);
    assert_contains(remat_last_error(), "fine.csv:3: column 2 ('A')");
    assert_contains(remat_last_error(), "--sigma A=1e-300");
    o.sigma = (const double[]){0.01, 0.01, 0.01};
    assert_ok(remat_fit_new(m, 1, &d, &o, &fit));
    remat_fit_free(fit);
    remat_dataset_free(d);
    remat_mechanism_free(m);
}

/* The memory budget picks a checkpointing schedule; schedules change memory,
 * never results, so the fit is the same bit for bit. Fixed steps take one
 * scan over the rows (remat_ode_integrate_rows), whose schedule the budget
 * picks: 200 rows of 4 steps each, whose store-all store (a step tape and
 * the while loop's store per row) is past 20,000 bytes. */
static void test_fit_memory_budget_picks_schedule(void **state)
{
    (void)state;
    remat_mechanism *m = parse(easy_mech);
    remat_fit_options o = remat_fit_defaults();
    o.adaptive = false; /* fixed steps: the schedules' own store sizes */
    o.method = REMAT_ODE_RK4;
    o.steps = 4;
    double times[200];
    for (int k = 0; k < 200; k++)
        times[k] = 0.05 * k;
    experiment x = {"budget.csv", {1, 0, 0}, 200, times, 0};
    remat_dataset *d = synthesize(m, &x, easy_true, &o, 0.0);
    remat_fit_result a, b;
    remat_fit *fit;
    assert_ok(remat_fit_new(m, 1, &d, &o, &fit));
    assert_ok(remat_fit_run(fit, &a));
    remat_fit_free(fit);
    o.memory_budget = 20000;
    assert_ok(remat_fit_new(m, 1, &d, &o, &fit));
    remat_schedule_spec spec;
    remat_fit_schedule(fit, &spec);
    char buf[48];
    remat_schedule_format(&spec, buf, sizeof buf);
    printf("# budget 20000 bytes, 200 rows of 4 steps: %s\n", buf);
    assert_int_not_equal(spec.kind, REMAT_SCHED_STORE_ALL);
    assert_ok(remat_fit_run(fit, &b));
    remat_fit_free(fit);
    assert_int_equal(a.iterations, b.iterations); /* contract 3 */
    assert_memory_equal(a.params, b.params, sizeof(double) * 2); /* contract 3 */
    remat_fit_result_clear(&a);
    remat_fit_result_clear(&b);
    remat_dataset_free(d);
    remat_mechanism_free(m);
}

static int count_and_stop(const remat_fit_progress *p, void *ctx)
{
    int *calls = ctx;
    if (p->iteration != *calls)
        fail_msg("progress: iteration %d on call %d", p->iteration, *calls);
    assert_int_equal(p->n_params, 2);
    assert_string_equal(p->param_names[1], "k2");
    (*calls)++;
    return p->iteration == 3;
}

static void test_fit_progress_callback(void **state)
{
    (void)state;
    remat_mechanism *m = parse(easy_mech);
    remat_fit_options o = remat_fit_defaults();
    remat_dataset *d = easy_data(m, &o);
    int calls = 0;
    o.progress = count_and_stop;
    o.progress_ctx = &calls;
    remat_fit_result r;
    assert_ok(remat_fit_run_once(m, 1, &d, &o, &r));
    assert_int_equal(calls, 4);
    assert_int_equal(r.iterations, 3);
    assert_false(r.converged);
    assert_contains(r.message, "stopped by the progress callback");
    remat_fit_result_clear(&r);
    remat_dataset_free(d);
    remat_mechanism_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fit_recovers_constants_noise_free),
        cmocka_unit_test(test_fit_recovers_constants_within_noise),
        cmocka_unit_test(test_fit_residuals_cover_every_measured_cell),
        cmocka_unit_test(test_fit_initial_state_from_options),
        cmocka_unit_test(test_fit_lm_converges),
        cmocka_unit_test(test_fit_bfgs_converges),
        cmocka_unit_test(test_fit_adam_converges),
        cmocka_unit_test(test_fit_bounds_honoured),
        cmocka_unit_test(test_fit_nan_stops_with_message),
        cmocka_unit_test(test_fit_lm_rejects_non_finite_trial_steps),
        cmocka_unit_test(test_fit_bad_options),
        cmocka_unit_test(test_fit_overflowing_weights_name_the_cell),
        cmocka_unit_test(test_fit_memory_budget_picks_schedule),
        cmocka_unit_test(test_fit_progress_callback),
        cmocka_unit_test(test_fit_compile_options),
        cmocka_unit_test(test_fit_predict_keeps_its_program),
    };
    rng_seed(0x9e3779b97f4a7c15ull);
    return cmocka_run_group_tests(tests, setup_dir, remove_dir);
}

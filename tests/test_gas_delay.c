/*
 * test_gas_delay.c — fitting ignition delays (remat/fit.h "Ignition
 * delays"): h2o2.yaml (H2/O2/N2 2:1:3.76, one atmosphere) at 1000, 1100 and
 * 1300 K, one file per experiment whose first column is tau.
 *   - the fit's delays at the mechanism's own multipliers against Cantera's
 *     (tests/goldens/cantera_h2o2.json: T0 + 400 K), within 1e-4 relative
 *     as the Cantera comparison asks;
 *   - the Jacobian of the delay residuals with respect to m3 and Ea11
 *     (the implicit function theorem's, through the reverse and the forward
 *     mode) against central differences of the residuals;
 *   - m3 = 1.3 and m11 = 0.8 recovered by lm from 1, 1 out of the three
 *     noise-free delays they give.
 */
#include "test_golden.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "remat/remat.h"

#define E 3
static const double TEMPS[E] = {1000, 1100, 1300};

typedef struct {
    remat_mechanism *m;
    int P;
    char path[E][512];
    remat_dataset *d[E];
    bool fixed[256];
    double p[256];
} problem;

static remat_fit_options problem_options(problem *x, bool ea, remat_fit_jacobian mode);

/* the files for delays tau[e] (the 1000 K one with '# P = 101325' as a
 * file may give it) and a fit over them; m3 and m11, or with ea m3 and
 * Ea11, free */
static remat_fit *problem_new(problem *x, const double *tau, bool ea, remat_fit_jacobian mode)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/mechanisms/h2o2.yaml", getenv("REMAT_DATA"));
    x->m = NULL;
    assert_ok(remat_gas_read(path, NULL, &x->m));
    x->P = remat_mechanism_param_count(x->m);
    assert_true(x->P <= 256);
    for (int e = 0; e < E; e++) {
        char text[256];
        int n = snprintf(text, sizeof text, "# T = %g\n%s# H2 = 2\n# O2 = 1\n# N2 = 3.76\ntau\n%.17g\n", TEMPS[e],
                         e == 0 ? "# P = 101325\n" : "", tau[e]);
        write_temp(x->path[e], sizeof x->path[e], "gas_delay", text, (size_t)n);
        assert_ok(remat_dataset_read(x->path[e], x->m, &x->d[e]));
    }
    remat_fit_options o = problem_options(x, ea, mode);
    remat_fit *fit = NULL;
    assert_ok(remat_fit_new(x->m, E, x->d, &o, &fit));
    assert_int_equal(remat_fit_residual_count(fit), E);
    return fit;
}

/* the fit's options (m3 and m11, or m3 and Ea11, free) */
static remat_fit_options problem_options(problem *x, bool ea, remat_fit_jacobian mode)
{
    remat_mechanism_param_values(x->m, x->p);
    for (int i = 0; i < x->P; i++)
        x->fixed[i] = true;
    x->fixed[remat_mechanism_param_find(x->m, "m3")] = false;
    x->fixed[remat_mechanism_param_find(x->m, ea ? "Ea11" : "m11")] = false;
    remat_fit_options o = remat_fit_defaults();
    o.method = REMAT_ODE_RODAS5;
    o.rtol = 1e-9; /* the tool's gas default is 1e-8, 1e-14 */
    o.atol = 1e-15;
    o.max_steps = 100000;
    o.fixed = x->fixed;
    o.start = x->p;
    o.jacobian = mode;
    o.weighting = REMAT_FIT_WEIGHT_RELATIVE;
    return o;
}

static void problem_free(problem *x, remat_fit *fit)
{
    remat_fit_free(fit);
    for (int e = 0; e < E; e++) {
        remat_dataset_free(x->d[e]);
        unlink(x->path[e]);
    }
    remat_mechanism_free(x->m);
}

/* Cantera's delays from the goldens, in TEMPS' order */
static void cantera_delays(double *tau)
{
    const cJSON *cases = cJSON_GetObjectItem(golden("cantera_h2o2.json"), "cases");
    assert_int_equal(cJSON_GetArraySize(cases), E);
    for (int e = 0; e < E; e++) {
        const cJSON *c = cJSON_GetArrayItem(cases, e);
        assert_true(cJSON_GetObjectItem(c, "T0")->valuedouble == TEMPS[e]);
        tau[e] = cJSON_GetObjectItem(c, "delay")->valuedouble;
    }
}

static void delays_match_cantera(void **state)
{
    (void)state;
    double tau[E], r[E];
    cantera_delays(tau);
    problem x;
    remat_fit *fit = problem_new(&x, tau, false, REMAT_FIT_JACOBIAN_AUTO);
    assert_ok(remat_fit_residuals(fit, x.p, r)); /* relative: (model - Cantera) / Cantera */
    for (int e = 0; e < E; e++) {
        printf("%g K: delay %.10g s against Cantera's %.10g (relative %.3g)\n", TEMPS[e], tau[e] * (1 + r[e]), tau[e],
               r[e]);
        assert_true(fabs(r[e]) <= 1e-4);
    }
    problem_free(&x, fit);
}

static void jacobian_against_differences(remat_fit_jacobian mode)
{
    double tau[E], J[E * 256], rp[E], rm[E];
    cantera_delays(tau);
    problem x;
    remat_fit *fit = problem_new(&x, tau, true, mode);
    x.p[remat_mechanism_param_find(x.m, "m3")] = 1.2;
    x.p[remat_mechanism_param_find(x.m, "m11")] = 0.9;
    assert_ok(remat_fit_jacobian_at(fit, x.p, J));
    double worst = 0;
    for (int i = 0; i < x.P; i++) {
        if (x.fixed[i])
            continue;
        double v = x.p[i], h = 1e-5 * fabs(v);
        x.p[i] = v + h;
        assert_ok(remat_fit_residuals(fit, x.p, rp));
        x.p[i] = v - h;
        assert_ok(remat_fit_residuals(fit, x.p, rm));
        x.p[i] = v;
        for (int e = 0; e < E; e++) {
            double fd = (rp[e] - rm[e]) / (2 * h), jj = J[e * x.P + i];
            assert_true(fabs(jj) > 0);
            worst = fmax(worst, fabs(jj - fd) / fabs(fd));
        }
    }
    printf("%s Jacobian of the delays against central differences: largest relative difference %.3g\n",
           mode == REMAT_FIT_JACOBIAN_FORWARD ? "forward" : "reverse", worst);
    assert_true(worst <= 1e-4);
    problem_free(&x, fit);
}

static void reverse_jacobian(void **state)
{
    (void)state;
    jacobian_against_differences(REMAT_FIT_JACOBIAN_REVERSE);
}

static void forward_jacobian(void **state)
{
    (void)state;
    jacobian_against_differences(REMAT_FIT_JACOBIAN_FORWARD);
}

/* noise-free delays of m3 = 1.3, m11 = 0.8 (the fit's own at those values:
 * residuals against any delays plus those delays), then lm from 1, 1 */
static void recovers_multipliers(void **state)
{
    (void)state;
    double tau[E], r[E];
    cantera_delays(tau);
    problem x;
    remat_fit *fit = problem_new(&x, tau, false, REMAT_FIT_JACOBIAN_AUTO);
    int i3 = remat_mechanism_param_find(x.m, "m3"), i11 = remat_mechanism_param_find(x.m, "m11");
    x.p[i3] = 1.3;
    x.p[i11] = 0.8;
    assert_ok(remat_fit_residuals(fit, x.p, r));
    for (int e = 0; e < E; e++)
        tau[e] *= 1 + r[e]; /* relative weighting */
    problem_free(&x, fit);
    fit = problem_new(&x, tau, false, REMAT_FIT_JACOBIAN_AUTO);
    remat_fit_result res = {0};
    assert_ok(remat_fit_run(fit, &res));
    printf("recovered m3 %.10g, m11 %.10g from 1, 1 (%d iterations, objective %.3g)\n", res.params[i3],
           res.params[i11], res.iterations, res.objective);
    assert_true(res.converged);
    assert_true(fabs(res.params[i3] - 1.3) <= 1e-6 * 1.3);
    assert_true(fabs(res.params[i11] - 0.8) <= 1e-6 * 0.8);
    remat_fit_result_clear(&res);
    problem_free(&x, fit);
}

/* A delay table (remat/dataset.h "Ignition-delay tables"): the three
 * experiments as rows of one file, T a column, P and the composition
 * comments for every row, give the residuals of the three one-row files;
 * sigma_tau and opt.delay_sigma divide them, opt.sigma (per species, T's
 * included) does not; remat_fit_delays gives each experiment's delay. */
static void table_is_three_files(void **state)
{
    (void)state;
    double tau[E], r_files[E], r[E], d1[E], dall[E];
    cantera_delays(tau);
    problem x;
    remat_fit *fit = problem_new(&x, tau, false, REMAT_FIT_JACOBIAN_AUTO);
    x.p[remat_mechanism_param_find(x.m, "m3")] = 1.2;
    assert_ok(remat_fit_residuals(fit, x.p, r_files));
    assert_ok(remat_fit_delays(fit, x.p, dall));
    for (int e = 0; e < E; e++) {
        assert_ok(remat_fit_delay(fit, e, x.p, &d1[e]));
        assert_true(fabs(dall[e] - d1[e]) <= 1e-12 * d1[e]);
        assert_true(fabs(dall[e] - tau[e] * (1 + r_files[e])) <= 1e-9 * tau[e]);
    }
    double p[256];
    memcpy(p, x.p, sizeof p);
    for (int with_sigma = 0; with_sigma < 2; with_sigma++) {
        char text[512], path[512];
        int n = snprintf(text, sizeof text, "# P = 101325\n# H2 = 2\n# O2 = 1\n# N2 = 3.76\ntau,T%s\n",
                         with_sigma ? ",sigma_tau" : "");
        for (int e = 0; e < E; e++)
            n += snprintf(text + n, sizeof text - (size_t)n, "%.17g,%g%s\n", tau[e], TEMPS[e], with_sigma ? ",2" : "");
        write_temp(path, sizeof path, "gas_delay_table", text, (size_t)n);
        remat_dataset *one = NULL, **rows = NULL;
        assert_int_equal(remat_dataset_read(path, x.m, &one), REMAT_ERR_PARSE);
        assert_contains(remat_last_error(), ":7: an ignition-delay table of 3 experiments");
        int nrows = 0;
        assert_ok(remat_dataset_read_all(path, x.m, &rows, &nrows));
        assert_int_equal(nrows, E);
        int K = remat_gas_species_count(x.m);
        for (int e = 0; e < E; e++) {
            assert_int_equal(remat_dataset_rows(rows[e]), 1);
            assert_int_equal(remat_dataset_line(rows[e], 0), 6 + e);
            assert_true(remat_dataset_initial(rows[e], K) == TEMPS[e]);
            assert_int_equal(remat_dataset_setting_line(rows[e], K, 1), 6 + e);
            assert_true(remat_dataset_pressure(rows[e]) == 101325);
            assert_int_equal(remat_dataset_setting_line(rows[e], remat_mechanism_cond_count(x.m), 0), 1);
            assert_true(with_sigma ? remat_dataset_delay_sigma(rows[e]) == 2 : isnan(remat_dataset_delay_sigma(rows[e])));
        }
        remat_fit_options o = problem_options(&x, false, REMAT_FIT_JACOBIAN_AUTO);
        double sigma[256];
        for (int s = 0; s < remat_mechanism_species_count(x.m); s++)
            sigma[s] = 7; /* T's too: not a delay's */
        o.sigma = sigma;
        remat_fit *tf = NULL;
        assert_ok(remat_fit_new(x.m, nrows, rows, &o, &tf));
        assert_ok(remat_fit_residuals(tf, p, r));
        for (int e = 0; e < E; e++)
            assert_true(fabs(r[e] * (with_sigma ? 2 : 1) - r_files[e]) <= 1e-12 * fabs(r_files[e]));
        remat_fit_free(tf);
        if (!with_sigma) { /* opt.delay_sigma where a row gives none */
            o.delay_sigma = 4;
            assert_ok(remat_fit_new(x.m, nrows, rows, &o, &tf));
            assert_ok(remat_fit_residuals(tf, p, r));
            for (int e = 0; e < E; e++)
                assert_true(fabs(r[e] * 4 - r_files[e]) <= 1e-12 * fabs(r_files[e]));
            remat_fit_free(tf);
        }
        remat_dataset_free_all(rows, nrows);
        unlink(path);
    }
    problem_free(&x, fit);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(delays_match_cantera),
        cmocka_unit_test(reverse_jacobian),
        cmocka_unit_test(forward_jacobian),
        cmocka_unit_test(recovers_multipliers),
        cmocka_unit_test(table_is_three_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_fit_starts.c — multi-start (opt.starts, opt.seed) and weighted least
 * squares (opt.sigma, opt.weighting) of remat/fit.h.
 *
 * Bitwise assertions rest on contract 1 (docs/design-notes.md, "Bitwise
 * contracts"): start 0 and a seed's starts are the same fits run again.
 */
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "battery_util.h"
#include "remat/remat.h"

static void load(const char *name, battery_problem *b)
{
    char path[1024], err[1024];
    snprintf(path, sizeof path, "%s/%s.mech", BATTERY_DIR, name);
    if (battery_load(path, b, err, sizeof err))
        fail_msg("%s", err);
}

/* The declared start is start 0 (its result is the single-start fit's,
 * bitwise), the best is the lowest of all, the spread counts the starts
 * within 1e-4 of it, and a seed gives the same starts every time. */
static void test_fit_starts_best_of_seeded_starts(void **state)
{
    (void)state;
    battery_problem b;
    load("misra1a", &b);
    remat_fit_options o = remat_fit_defaults();
    remat_fit_result one, many, again, other;
    assert_ok(remat_fit_run_once(b.mech, 1, &b.data, &o, &one));
    assert_int_equal(one.n_starts, 1);
    assert_int_equal(one.starts_at_best, 1);
    assert_true(one.start_objectives[0] == one.objective);
    o.starts = 6;
    o.seed = 7;
    assert_ok(remat_fit_run_once(b.mech, 1, &b.data, &o, &many));
    assert_ok(remat_fit_run_once(b.mech, 1, &b.data, &o, &again));
    o.seed = 8;
    assert_ok(remat_fit_run_once(b.mech, 1, &b.data, &o, &other));
    assert_int_equal(many.n_starts, 6);
    assert_true(many.start_objectives[0] == one.objective);
    assert_true(many.evaluations > one.evaluations);
    int within = 0;
    for (int k = 0; k < 6; k++) {
        double f = many.start_objectives[k];
        printf("start %d: SSE %.10g\n", k, f);
        assert_true(isnan(f) || f >= many.objective);
        within += f <= many.objective * (1 + 1e-4);
        assert_true(again.start_objectives[k] == f || (isnan(f) && isnan(again.start_objectives[k])));
    }
    /* where each start began: start 0 the declared values, every start within
     * the bounds; a message for a failed start only */
    int P = remat_mechanism_param_count(b.mech);
    double *decl = malloc(sizeof *decl * (size_t)P);
    assert_non_null(decl);
    remat_mechanism_param_values(b.mech, decl);
    assert_non_null(many.start_params);
    assert_non_null(many.start_messages);
    for (int k = 0; k < 6; k++) {
        for (int i = 0; i < P; i++) {
            double v = many.start_params[k * P + i];
            assert_true(k > 0 || v == decl[i]);
            assert_true(v >= remat_mechanism_param_lo(b.mech, i) && v <= remat_mechanism_param_hi(b.mech, i));
        }
        assert_true((many.start_messages[k] != NULL) == (isnan(many.start_objectives[k]) != 0));
    }
    free(decl);
    assert_int_equal(many.starts_at_best, within);
    assert_true(within >= 1 && within + many.starts_failed <= 6);
    int differs = 0;
    for (int k = 1; k < 6; k++)
        differs |= other.start_objectives[k] != many.start_objectives[k];
    assert_true(differs);
    /* the history is the best start's: it ends at the best point */
    assert_true(many.history_objective[many.n_history - 1] == many.objective);
    remat_fit_result_clear(&one);
    remat_fit_result_clear(&many);
    remat_fit_result_clear(&again);
    remat_fit_result_clear(&other);
    o.starts = -1;
    remat_fit *fit = (remat_fit *)&fit;
    assert_int_equal(remat_fit_new(b.mech, 1, &b.data, &o, &fit), REMAT_ERR_VALUE);
    assert_contains(remat_last_error(), "starts = -1");
    assert_null(fit);
    battery_free(&b);
}

static const char *decay_mech = "species A, B\nparam k = 0.5\nA -> B : k\n";

static remat_dataset *write_data(const remat_mechanism *m, const char *text, char *path, size_t len)
{
    snprintf(path, len, "/tmp/remat_test_fit_starts_%d.csv", (int)getpid());
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    remat_dataset *d;
    assert_ok(remat_dataset_read(path, m, &d));
    return d;
}

/* Residuals (model - data) / sigma_s, and / |data| with relative weighting:
 * checked cell by cell against the unweighted residuals. */
static void test_fit_starts_weights_scale_residuals(void **state)
{
    (void)state;
    remat_mechanism *m;
    assert_ok(remat_mechanism_parse_string(decay_mech, "decay.mech", &m));
    char path[128];
    remat_dataset *d = write_data(m, "t,A,B\n0,1,0\n1,0.62,0.41\n2,0.35,0.66\n4,0.12,0.9\n", path, sizeof path);
    const double data[6] = {0.62, 0.41, 0.35, 0.66, 0.12, 0.9}, k[1] = {0.5};
    double r0[6], r[6], F;
    remat_fit_options o = remat_fit_defaults();
    remat_fit *fit;
    assert_ok(remat_fit_new(m, 1, &d, &o, &fit));
    assert_int_equal(remat_fit_residual_count(fit), 6);
    assert_ok(remat_fit_residuals(fit, k, r0));
    remat_fit_free(fit);

    o.sigma = (const double[]){0.01, 0.04};
    assert_ok(remat_fit_new(m, 1, &d, &o, &fit));
    assert_ok(remat_fit_residuals(fit, k, r));
    assert_ok(remat_fit_objective(fit, k, &F));
    double sum = 0;
    for (int i = 0; i < 6; i++) {
        double want = r0[i] / o.sigma[i % 2];
        if (!(fabs(r[i] - want) <= 1e-12 * fabs(want)))
            fail_msg("sigma: residual %d is %.17g, want %.17g", i, r[i], want);
        sum += want * want;
    }
    assert_true(fabs(F - sum) <= 1e-12 * sum);
    remat_fit_free(fit);

    o.weighting = REMAT_FIT_WEIGHT_RELATIVE;
    assert_ok(remat_fit_new(m, 1, &d, &o, &fit));
    assert_ok(remat_fit_residuals(fit, k, r));
    for (int i = 0; i < 6; i++) {
        double want = r0[i] / (o.sigma[i % 2] * data[i]);
        if (!(fabs(r[i] - want) <= 1e-12 * fabs(want)))
            fail_msg("relative: residual %d is %.17g, want %.17g", i, r[i], want);
    }
    /* the weighted fit still finds a minimum */
    remat_fit_result res;
    assert_ok(remat_fit_run(fit, &res));
    assert_true(res.converged);
    assert_true(res.objective < res.history_objective[0]);
    remat_fit_result_clear(&res);
    remat_fit_free(fit);
    remat_dataset_free(d);
    unlink(path);
    remat_mechanism_free(m);
}

/* A sigma_<species> column gives a cell's sigma; where it is empty (and for
 * species without one) opt.sigma applies. */
static void test_fit_starts_sigma_columns_weight_cells(void **state)
{
    (void)state;
    remat_mechanism *m;
    assert_ok(remat_mechanism_parse_string(decay_mech, "decay.mech", &m));
    char path[128];
    remat_dataset *d0 = write_data(m, "t,A,B\n0,1,0\n1,0.62,0.41\n2,0.35,0.66\n", path, sizeof path);
    const double k[1] = {0.5};
    double r0[4], r[4];
    remat_fit_options o = remat_fit_defaults();
    remat_fit *fit;
    assert_ok(remat_fit_new(m, 1, &d0, &o, &fit));
    assert_ok(remat_fit_residuals(fit, k, r0));
    remat_fit_free(fit);
    remat_dataset *d =
        write_data(m, "t,A,B,sigma_B\n0,1,0,\n1,0.62,0.41,0.05\n2,0.35,0.66,\n", path, sizeof path);
    assert_true(isnan(remat_dataset_sigma(d, 0, 1)) && isnan(remat_dataset_sigma(d, 1, 0)));
    assert_true(remat_dataset_sigma(d, 1, 1) == 0.05);
    o.sigma = (const double[]){0.5, 0.25};
    assert_ok(remat_fit_new(m, 1, &d, &o, &fit));
    assert_ok(remat_fit_residuals(fit, k, r));
    const double want[4] = {r0[0] / 0.5, r0[1] / 0.05, r0[2] / 0.5, r0[3] / 0.25};
    for (int i = 0; i < 4; i++)
        if (!(fabs(r[i] - want[i]) <= 1e-12 * fabs(want[i])))
            fail_msg("residual %d is %.17g, want %.17g", i, r[i], want[i]);
    remat_fit_free(fit);
    remat_dataset_free(d);
    remat_dataset_free(d0);
    /* a sigma must be positive, and needs the species' own column */
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("t,A,B,sigma_B\n0,1,0,\n1,0.62,0.41,0\n", f);
    fclose(f);
    assert_int_equal(remat_dataset_read(path, m, &d), REMAT_ERR_PARSE);
    assert_contains(remat_last_error(), ":3: column 'sigma_B': '0' is not a positive standard deviation");
    f = fopen(path, "w");
    assert_non_null(f);
    fputs("t,A,sigma_B\n0,1,\n1,0.62,0.1\n", f);
    fclose(f);
    assert_int_equal(remat_dataset_read(path, m, &d), REMAT_ERR_PARSE);
    assert_contains(remat_last_error(), ":1: sigma column 'sigma_B' but no column B for its measurements");
    unlink(path);
    remat_mechanism_free(m);
}

static void test_fit_starts_weight_errors_name_the_input(void **state)
{
    (void)state;
    remat_mechanism *m;
    assert_ok(remat_mechanism_parse_string(decay_mech, "decay.mech", &m));
    char path[128];
    remat_dataset *d = write_data(m, "t,A,B\n0,1,0\n1,0.62,0.41\n2,0.35,0\n", path, sizeof path);
    remat_fit_options o = remat_fit_defaults();
    remat_fit *fit = (remat_fit *)&fit;
    o.sigma = (const double[]){0.01, 0};
    assert_int_equal(remat_fit_new(m, 1, &d, &o, &fit), REMAT_ERR_VALUE);
    assert_contains(remat_last_error(), "sigma of species 'B' is 0: it must be positive");
    assert_null(fit);
    o.sigma = (const double[]){-1, 1};
    assert_int_equal(remat_fit_new(m, 1, &d, &o, &fit), REMAT_ERR_VALUE);
    assert_contains(remat_last_error(), "sigma of species 'A' is -1");
    o.sigma = NULL;
    o.weighting = REMAT_FIT_WEIGHT_RELATIVE;
    assert_int_equal(remat_fit_new(m, 1, &d, &o, &fit), REMAT_ERR_VALUE);
    assert_contains(remat_last_error(), "species 'B' is 0 at t = 2 (row 3)");
    assert_contains(remat_last_error(), path);
    assert_null(fit);
    remat_dataset_free(d);
    unlink(path);
    remat_mechanism_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fit_starts_best_of_seeded_starts),
        cmocka_unit_test(test_fit_starts_weights_scale_residuals),
        cmocka_unit_test(test_fit_starts_sigma_columns_weight_cells),
        cmocka_unit_test(test_fit_starts_weight_errors_name_the_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

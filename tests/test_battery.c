/*
 * test_battery.c — the fitting battery (bench/battery/: published kinetics
 * estimation problems, sources in its README.md) under the default fit
 * options (remat_fit_defaults(), what `remat pfr fit` runs).
 *
 * - every problem's transcription reproduces its reported objective: the
 *   SSE at the reported parameters is within 1e-4 relative of the reported
 *   SSE (problems that report both);
 * - the default optimizer, from the declared start values, reaches the
 *   reported optimum: final SSE <= target * (1 + 1e-4), target as in
 *   bench/battery_util.h (the reported SSE, or the SSE at the reported
 *   parameters when lower or when no SSE was reported);
 * - adam and bfgs, asked for by name, reach it from the declared start on
 *   the problems of optimizer_cases (ones each of them used to miss).
 *
 * Problems the current default does not solve are listed in known_gaps below
 * with the gap measured when the list was written; the test requires them
 * to still fail that way (so the list stays true): when the default changes
 * and one of them passes, take it off the list. bench_battery compares all
 * optimizers from many starts.
 */
#include "test_util.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "battery_util.h"
#include "remat/remat.h"

#define REL_TOL 1e-4

/* Every problem of bench/battery/ (the directory must hold exactly these). */
static const char *const problems[] = {
    "bellman",        "bod",     "boxbod", "gasoil_cops",         "gasoil_floudas",    "lotka_volterra",
    "methanol_floudas", "misra1a", "pinene", "series_irreversible", "series_reversible",
};
#define N_PROBLEMS ((int)(sizeof problems / sizeof problems[0]))

/* Problems the default fails from the declared start (NULL-terminated; none
 * now). Until the default became lm with rate constants bounded below by 0
 * searched on the log scale, pinene was one: NLopt's bounded L-BFGS on the
 * linear scale stopped after 2003 evaluations at SSE 19.920 (+0.24%). */
static const char *const known_gaps[] = {NULL};

static int is_known_gap(const char *name)
{
    for (size_t i = 0; known_gaps[i]; i++)
        if (strcmp(known_gaps[i], name) == 0)
            return 1;
    return 0;
}

static void load(const char *name, battery_problem *b)
{
    char path[1024], err[1024];
    snprintf(path, sizeof path, "%s/%s.mech", BATTERY_DIR, name);
    if (battery_load(path, b, err, sizeof err))
        fail_msg("%s", err);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void test_battery_directory_holds_the_listed_problems(void **state)
{
    (void)state;
    DIR *d = opendir(BATTERY_DIR);
    assert_non_null(d);
    char *found[128];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len > 5 && strcmp(e->d_name + len - 5, ".mech") == 0) {
            assert_true(n < 128);
            found[n++] = strndup(e->d_name, len - 5);
        }
    }
    closedir(d);
    qsort(found, (size_t)n, sizeof *found, cmp_str);
    assert_true(N_PROBLEMS >= 8);
    for (int i = 0; i < n; i++) {
        int listed = 0;
        for (int j = 0; j < N_PROBLEMS; j++)
            listed |= strcmp(found[i], problems[j]) == 0;
        if (!listed)
            fail_msg("%s/%s.mech is not in test_battery.c's list", BATTERY_DIR, found[i]);
    }
    assert_int_equal(n, N_PROBLEMS);
    for (int i = 0; i < n; i++)
        free(found[i]);
}

static void test_battery_transcriptions_reproduce_reported_sse(void **state)
{
    (void)state;
    remat_fit_options o = remat_fit_defaults();
    int checked = 0;
    for (int i = 0; i < N_PROBLEMS; i++) {
        battery_problem b;
        load(problems[i], &b);
        if (b.optimum && !isnan(b.reported_sse)) {
            double sse = NAN;
            if (battery_sse(&b, &o, b.optimum, &sse))
                fail_msg("%s: %s", problems[i], remat_last_error());
            double rel = fabs(sse - b.reported_sse) / b.reported_sse;
            if (!(rel <= REL_TOL))
                fail_msg("%s: SSE at the reported optimum is %.10g, the source reports %.10g (relative %.3g > %g): "
                         "a transcription error in the data or the optimum",
                         problems[i], sse, b.reported_sse, rel, REL_TOL);
            checked++;
        }
        battery_free(&b);
    }
    assert_true(checked >= 8);
}

static void test_battery_default_fit_reaches_reported_optimum(void **state)
{
    const char *name = *state;
    battery_problem b;
    load(name, &b);
    remat_fit_options o = remat_fit_defaults();
    double target = battery_target(&b, &o);
    assert_true(isfinite(target) && target > 0);
    remat_fit_result r = {0};
    remat_dataset *d[1] = {b.data};
    remat_status st = remat_fit_run_once(b.mech, 1, d, &o, &r);
    double sse = r.objective, gap = (sse - target) / target;
    int ok = st == REMAT_OK && sse <= target * (1 + REL_TOL);
    printf("battery %-20s %-14s %s: SSE %.8g, target %.8g, gap %+.3g, %lld runs (%s)\n", name,
           r.optimizer ? r.optimizer : "?", ok ? "reached" : "MISSED", sse, target, gap, (long long)r.evaluations,
           st == REMAT_OK ? r.message : remat_last_error());
    remat_fit_result_clear(&r);
    battery_free(&b);
    if (is_known_gap(name)) {
        if (ok)
            fail_msg("%s: the default fit now reaches the reported optimum; take it off known_gaps", name);
    } else if (!ok) {
        fail_msg("%s: the default fit ends at SSE %.10g, %+.3g relative to the target %.10g", name, sse, gap,
                 target);
    }
}

/* The other optimizers from the declared start, on problems each once
 * missed. Adam (opt_adam.c), one problem for each thing it lacked:
 * bellman's constants (1e-6 .. 1e-4 in [0, 0.1]) need the log scale's unit,
 * not lr 0.05 on the linear one (the first step left them at 0.05, where
 * Tsit5 stops as stiff); boxbod's path crosses a point Tsit5 cannot
 * integrate (a step to reject, not the end of the fit); gasoil_floudas
 * circled its optimum at lr 0.05 for 1000 steps (SSE +2.7%) until the rate
 * came down on the plateaus. BFGS (GSL, unbounded) refused every bounded
 * problem; on the MINUIT variable it reaches pinene's optimum and
 * methanol_floudas's, three of whose constants sit on their bound 0. */
typedef struct {
    const char *test_name, *problem;
    remat_fit_optimizer optimizer;
} optimizer_case;

static const optimizer_case optimizer_cases[] = {
    {"adam_bellman", "bellman", REMAT_FIT_ADAM},
    {"adam_boxbod", "boxbod", REMAT_FIT_ADAM},
    {"adam_gasoil_floudas", "gasoil_floudas", REMAT_FIT_ADAM},
    {"bfgs_pinene", "pinene", REMAT_FIT_BFGS},
    {"bfgs_methanol_floudas", "methanol_floudas", REMAT_FIT_BFGS},
};
#define N_CASES ((int)(sizeof optimizer_cases / sizeof optimizer_cases[0]))

static void test_battery_optimizer_reaches_reported_optimum(void **state)
{
    const optimizer_case *c = *state;
    const char *name = c->problem, *opt = remat_fit_optimizer_name(c->optimizer);
    battery_problem b;
    load(name, &b);
    remat_fit_options o = remat_fit_defaults();
    o.optimizer = c->optimizer;
    double target = battery_target(&b, &o);
    remat_fit_result r = {0};
    remat_dataset *d[1] = {b.data};
    remat_status st = remat_fit_run_once(b.mech, 1, d, &o, &r);
    double sse = r.objective;
    printf("battery %s %-16s SSE %.8g, target %.8g, gap %+.3g, %d iterations (%s)\n", opt, name, sse, target,
           (sse - target) / target, r.iterations, st == REMAT_OK ? r.message : remat_last_error());
    if (st != REMAT_OK)
        fail_msg("%s: %s: %s", name, opt, remat_last_error());
    assert_string_equal(r.optimizer, opt);
    if (!(sse <= target * (1 + REL_TOL)))
        fail_msg("%s: %s ends at SSE %.10g, %+.3g relative to the target %.10g", name, opt, sse,
                 (sse - target) / target, target);
    assert_true(r.converged);
    /* the result is the best point of the history, inside the bounds */
    int P = r.n_params;
    for (int h = 0; h < r.n_history; h++) {
        assert_true(r.history_objective[h] >= sse);
        for (int i = 0; i < P; i++) {
            double p = r.history_params[(size_t)h * (size_t)P + (size_t)i];
            assert_true(p >= remat_mechanism_param_lo(b.mech, i) && p <= remat_mechanism_param_hi(b.mech, i));
        }
    }
    remat_fit_result_clear(&r);
    battery_free(&b);
}

int main(void)
{
    struct CMUnitTest tests[2 + N_PROBLEMS + N_CASES];
    tests[0] = (struct CMUnitTest)cmocka_unit_test(test_battery_directory_holds_the_listed_problems);
    tests[1] = (struct CMUnitTest)cmocka_unit_test(test_battery_transcriptions_reproduce_reported_sse);
    for (int i = 0; i < N_PROBLEMS; i++) {
        tests[2 + i] = (struct CMUnitTest)cmocka_unit_test_prestate(test_battery_default_fit_reaches_reported_optimum,
                                                                    (void *)problems[i]);
        tests[2 + i].name = problems[i];
    }
    for (int i = 0; i < N_CASES; i++) {
        struct CMUnitTest *t = &tests[2 + N_PROBLEMS + i];
        *t = (struct CMUnitTest)cmocka_unit_test_prestate(test_battery_optimizer_reaches_reported_optimum,
                                                          (void *)&optimizer_cases[i]);
        t->name = optimizer_cases[i].test_name;
    }
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_nomem_fit.c — running out of memory in a fit (src/models/fit, which
 * allocates through core/alloc.h): a status, never a crash or a leak.
 *
 * A fit of the battery's Misra1a (one experiment, NIST's start) is run with
 * the allocator hook counting: remat_fit_new, remat_fit_run and
 * remat_fit_statistics (LM, forward Jacobian), and a two-start BFGS fit
 * (multistart) and an Adam fit. Then every allocation k of the whole
 * workload fails in turn, with every later one (a machine out of memory)
 * and alone (memory freed elsewhere in the meantime). Each time the
 * workload must return REMAT_ERR_NOMEM with "out of memory" in
 * remat_last_error() and the result cleared, or — for a failure a fallback
 * absorbs (a compiled loop interpreted instead, a kept plan streamed) —
 * REMAT_OK with the reference's objective and parameters to 1e-12 (the
 * same fit on another path of the same arithmetic). Interpreted loops
 * (REMAT_NO_JIT=1) keep the sweep short. Every allocation of the setup is
 * failed (the first FIRST), then SPREAD more spread evenly over the rest;
 * NOMEM_FIT_FIRST and NOMEM_FIT_SPREAD change the two, NOMEM_FIT_ALL=1
 * tries every k (hours). Run under the ASan build (.ci/run) or valgrind
 * every failure is also checked for leaks.
 */
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "battery_util.h"
#include "core/alloc.h"
#include "remat/remat.h"

#define FIRST 1500
#define SPREAD 400

typedef struct {
    double objective, params[8], sse, se[8];
    int n_params;
} outcome;

/* One workload: the fit from opt, and with stats the statistics at its
 * optimum. Returns the first error (the result cleared). */
static remat_status workload(const battery_problem *b, const remat_fit_options *opt, int stats, outcome *out)
{
    remat_fit *fit = NULL;
    remat_fit_result r = {0};
    remat_fit_stats s = {0};
    memset(out, 0, sizeof *out);
    remat_status st = remat_fit_new(b->mech, 1, (remat_dataset *const *)&b->data, opt, &fit);
    if (st == REMAT_OK)
        st = remat_fit_run(fit, &r);
    if (st == REMAT_OK) {
        out->objective = r.objective;
        out->n_params = r.n_params;
        memcpy(out->params, r.params, sizeof *r.params * (size_t)r.n_params);
    }
    if (st == REMAT_OK && stats)
        st = remat_fit_statistics(fit, r.params, &s);
    if (st == REMAT_OK && stats) {
        out->sse = s.sse;
        memcpy(out->se, s.se, sizeof *s.se * (size_t)s.n_params);
    }
    remat_fit_stats_clear(&s);
    remat_fit_result_clear(&r);
    remat_fit_free(fit);
    return st;
}

static void assert_same(const outcome *got, const outcome *want)
{
    assert_int_equal(got->n_params, want->n_params);
    assert_true(fabs(got->objective - want->objective) <= 1e-12 * fabs(want->objective));
    assert_true(fabs(got->sse - want->sse) <= 1e-12 * fabs(want->sse));
    for (int i = 0; i < want->n_params; i++) {
        assert_true(fabs(got->params[i] - want->params[i]) <= 1e-12 * fabs(want->params[i]));
        assert_true(fabs(got->se[i] - want->se[i]) <= 1e-9 * fabs(want->se[i]));
    }
}

static void sweep(const char *what, const remat_fit_options *opt, int stats)
{
    battery_problem b;
    char path[1024], err[1024];
    snprintf(path, sizeof path, "%s/misra1a.mech", BATTERY_DIR);
    if (battery_load(path, &b, err, sizeof err))
        fail_msg("%s", err);
    outcome ref, got;
    assert_ok(workload(&b, opt, stats, &ref));
    rmi_alloc_fail_after(INT64_MAX);
    assert_ok(workload(&b, opt, stats, &got));
    int64_t n = rmi_alloc_count();
    rmi_alloc_fail_after(-1);
    assert_same(&got, &ref);
    assert_true(n > 20);
    /* every allocation of the setup (the problem, its graphs, the first
     * compile: the first FIRST), then SPREAD more spread evenly over the rest
     * (compiles, runs, each optimizer's memory, the statistics): a full
     * sweep takes tens of thousands of fits */
    int64_t want_first = getenv("NOMEM_FIT_FIRST") ? atoll(getenv("NOMEM_FIT_FIRST")) : FIRST;
    int64_t spread = getenv("NOMEM_FIT_SPREAD") ? atoll(getenv("NOMEM_FIT_SPREAD")) : SPREAD;
    int64_t first = n < want_first ? n : want_first;
    if (getenv("NOMEM_FIT_ALL")) /* every k: hours */
        first = n;
    int64_t step = n > first && spread > 0 ? (n - first + spread - 1) / spread : n + 1;
    int64_t failed = 0, absorbed = 0, tried = 0;
    for (int sticky = 1; sticky >= 0; sticky--)
        for (int64_t k = 0; k < n; k += k < first ? 1 : step) {
            tried++;
            remat_clear_error();
            if (sticky)
                rmi_alloc_fail_after(k);
            else
                rmi_alloc_fail_once(k);
            remat_status st = workload(&b, opt, stats, &got);
            rmi_alloc_fail_after(-1);
            if (st == REMAT_OK) { /* a fallback did without it */
                assert_same(&got, &ref);
                absorbed++;
            } else if (st != REMAT_ERR_NOMEM) {
                fail_msg("%s: allocation %lld of %lld failed%s, got %s (%s)", what, (long long)k, (long long)n,
                         sticky ? " with all after it" : "", remat_status_name(st), remat_last_error());
            } else {
                assert_contains(remat_last_error(), "out of memory");
                failed++;
            }
        }
    printf("  %s: %lld allocations, %lld of them failed with all after it and alone: %lld REMAT_ERR_NOMEM, %lld "
           "absorbed by a fallback\n",
           what, (long long)n, (long long)tried / 2, (long long)failed, (long long)absorbed);
    assert_true(failed >= tried / 2); /* every sticky failure at least */
    /* the hook off again: the same fit */
    assert_ok(workload(&b, opt, stats, &got));
    assert_same(&got, &ref);
    battery_free(&b);
}

static void test_nomem_fit_lm_and_statistics(void **state)
{
    (void)state;
    remat_fit_options o = remat_fit_defaults();
    o.optimizer = REMAT_FIT_LM;
    o.jacobian = REMAT_FIT_JACOBIAN_FORWARD;
    sweep("lm + statistics", &o, 1);
}

static void test_nomem_fit_bfgs_two_starts(void **state)
{
    (void)state;
    remat_fit_options o = remat_fit_defaults();
    o.optimizer = REMAT_FIT_BFGS;
    o.starts = 2;
    o.seed = 3;
    o.max_iters = 20;
    sweep("bfgs, 2 starts", &o, 0);
}

static void test_nomem_fit_adam_reverse(void **state)
{
    (void)state;
    remat_fit_options o = remat_fit_defaults();
    o.optimizer = REMAT_FIT_ADAM;
    o.max_iters = 10;
    o.jacobian = REMAT_FIT_JACOBIAN_REVERSE;
    sweep("adam, reverse Jacobian for the statistics", &o, 1);
}

int main(void)
{
    setenv("REMAT_NO_JIT", "1", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nomem_fit_lm_and_statistics),
        cmocka_unit_test(test_nomem_fit_bfgs_two_starts),
        cmocka_unit_test(test_nomem_fit_adam_reverse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_nomem.c — running out of memory in src/ad: a status, never a crash.
 *
 * Each workload builds a seed-like program (the checkpoint-policy MLP of
 * examples/seeds, nested checkpoint regions as hierarchical_tanh, the PFR
 * Euler step under scan with a binomial schedule), differentiates it and
 * asks for its saved residuals. With the core's allocator hook
 * (core/alloc.h) armed to fail allocation k and every later one — and
 * again to fail allocation k alone — for every k up to the workload's
 * allocation count:
 *   - the workload returns REMAT_ERR_NOMEM and remat_last_error() says "out
 *     of memory" (no abort, no assertion; under ASan: no leak);
 *   - a function that was built before memory ran out is still usable:
 *     with the hook off its gradient is built again, equal (printed graph
 *     and residual report) to the one built without failures.
 * Compiling and running the same workloads: test_nomem_run.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "remat/remat.h"
#include "nomem_workloads.h"
#include "test_util.h"

/* ---- workloads: nomem_workloads.h ---- */

/* ---- differentiating: the gradient and the residual report, printed ---- */

static char *print_fn(const remat_fn *g)
{
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    assert_non_null(m);
    remat_fn_print(g, m);
    fclose(m);
    return text;
}

static char *print_residuals(const remat_residual_list *r)
{
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    assert_non_null(m);
    remat_residual_list_print(r, m);
    fclose(m);
    return text;
}

/* grad of f w.r.t. every argument and the saved residuals; on success the
 * printed forms in *g_text, *r_text (caller frees) */
static remat_status differentiate(const remat_fn *f, char **g_text, char **r_text)
{
    remat_fn *g = NULL;
    remat_residual_list *r = NULL;
    remat_status st = remat_grad(f, 0, NULL, &g);
    if (st == REMAT_OK)
        st = remat_saved_residuals(f, 0, NULL, &r);
    if (st == REMAT_OK) {
        *g_text = print_fn(g);
        *r_text = print_residuals(r);
    } else {
        assert_null(r);
    }
    remat_fn_free(g);
    remat_residual_list_free(r);
    return st;
}

/* sticky: allocation k and every later one fail; else only allocation k */
static void run_injected(builder build, const char *what, int sticky)
{
    /* the reference, and the number of allocations it takes */
    rmi_alloc_fail_after(INT64_MAX);
    remat_fn *f = NULL;
    char *g_ref = NULL, *r_ref = NULL;
    assert_ok(build(&f));
    assert_ok(differentiate(f, &g_ref, &r_ref));
    int64_t n = rmi_alloc_count();
    rmi_alloc_fail_after(-1);
    remat_fn_free(f);
    assert_true(n > 100); /* the hook sees the workload's allocations */

    int64_t failed_in_build = 0, failed_in_grad = 0;
    for (int64_t k = 0; k <= n; k++) {
        char *g_text = NULL, *r_text = NULL;
        remat_clear_error();
        if (sticky)
            rmi_alloc_fail_after(k);
        else
            rmi_alloc_fail_once(k);
        f = NULL;
        remat_status st = build(&f);
        int built = st == REMAT_OK;
        if (built)
            st = differentiate(f, &g_text, &r_text);
        rmi_alloc_fail_after(-1);
        if (k == n) { /* every allocation granted */
            if (st != REMAT_OK)
                fail_msg("%s: failed with every allocation granted: %s", what, remat_last_error());
        } else {
            if (st != REMAT_ERR_NOMEM)
                fail_msg("%s: allocation %lld of %lld failed, got status %s (%s)", what, (long long)k,
                         (long long)n, remat_status_name(st), remat_last_error());
            assert_contains(remat_last_error(), "out of memory");
            if (built) { /* f survived: its gradient can still be built, the same */
                failed_in_grad++;
                assert_ok(differentiate(f, &g_text, &r_text));
            } else {
                failed_in_build++;
            }
        }
        if (built) {
            assert_string_equal(g_text, g_ref);
            assert_string_equal(r_text, r_ref);
        }
        free(g_text);
        free(r_text);
        remat_fn_free(f);
    }
    printf("  %s: %lld allocations, each failed in turn%s (%lld while building, %lld while differentiating)\n",
           what, (long long)n, sticky ? " with all after it" : " alone", (long long)failed_in_build,
           (long long)failed_in_grad);
    assert_true(failed_in_build > 0 && failed_in_grad > 0);
    free(g_ref);
    free(r_ref);
}

static void test_nomem_mlp_policies(void **state)
{
    (void)state;
    run_injected(build_mlp, "mlp with dot and name policies", 1);
    run_injected(build_mlp, "mlp with dot and name policies", 0);
}

static void test_nomem_offload_policy(void **state)
{
    (void)state;
    run_injected(build_offload, "mlp offloading a named value", 1);
    run_injected(build_offload, "mlp offloading a named value", 0);
}

static void test_nomem_nested_regions(void **state)
{
    (void)state;
    run_injected(build_nested, "nested checkpoint regions", 1);
    run_injected(build_nested, "nested checkpoint regions", 0);
}

static void test_nomem_scan_binomial(void **state)
{
    (void)state;
    run_injected(build_scan, "pfr euler scan, binomial:4", 1);
    run_injected(build_scan, "pfr euler scan, binomial:4", 0);
}

static void test_nomem_while_online(void **state)
{
    (void)state;
    run_injected(build_while, "euler while-loop, online:3", 1);
    run_injected(build_while, "euler while-loop, online:3", 0);
}

/* ---- checkpoint schedules (src/adjoint): all state is allocated in new ---- */

/* Makes the schedule (length revealed at once for ONLINE) and prints its
 * actions into *text (caller frees); the hook must count nothing while the
 * actions are generated (next() never allocates). */
static remat_status schedule_actions(const remat_schedule_spec *spec, int64_t n, char **text)
{
    remat_schedule *s = (remat_schedule *)1; /* new must set it either way */
    remat_status st = remat_schedule_new(spec, spec->kind == REMAT_SCHED_ONLINE ? -1 : n, &s);
    if (st != REMAT_OK) {
        assert_null(s);
        return st;
    }
    remat_schedule_set_length(s, n);
    int64_t before = rmi_alloc_count();
    size_t len = 0;
    FILE *m = open_memstream(text, &len);
    assert_non_null(m);
    remat_action a;
    do {
        remat_schedule_next(s, &a);
        fprintf(m, "%d:%lld:%d ", (int)a.kind, (long long)a.step, a.slot);
    } while (a.kind != REMAT_ACT_DONE);
    fclose(m);
    assert_int_equal(rmi_alloc_count(), before);
    remat_schedule_free(s);
    return REMAT_OK;
}

/* Every allocation of every kind's constructor failed in turn, with all after
 * it and alone: REMAT_ERR_NOMEM, "out of memory", nothing made (no leak under
 * ASan); with the hook off the same spec gives the same actions. The scan
 * workload above reaches the binomial constructor through the scan's VJP
 * (its store is sized from a schedule made there). */
static void test_nomem_schedules(void **state)
{
    (void)state;
    const char *specs[] = {"store-all", "per-step", "periodic:7", "two-level", "binomial:4", "online:3"};
    for (size_t i = 0; i < sizeof specs / sizeof *specs; i++) {
        remat_schedule_spec spec;
        assert_ok(remat_schedule_parse(specs[i], &spec));
        char *ref = NULL;
        rmi_alloc_fail_after(INT64_MAX);
        assert_ok(schedule_actions(&spec, 40, &ref));
        int64_t n = rmi_alloc_count();
        rmi_alloc_fail_after(-1);
        assert_true(n >= 1); /* the hook sees the schedule's state */
        for (int sticky = 0; sticky <= 1; sticky++)
            for (int64_t k = 0; k < n; k++) {
                char *text = NULL;
                remat_clear_error();
                if (sticky)
                    rmi_alloc_fail_after(k);
                else
                    rmi_alloc_fail_once(k);
                remat_status st = schedule_actions(&spec, 40, &text);
                rmi_alloc_fail_after(-1);
                if (st != REMAT_ERR_NOMEM)
                    fail_msg("%s: allocation %lld of %lld failed, got %s (%s)", specs[i], (long long)k,
                             (long long)n, remat_status_name(st), remat_last_error());
                assert_contains(remat_last_error(), "out of memory");
                assert_null(text);
                assert_ok(schedule_actions(&spec, 40, &text));
                assert_string_equal(text, ref);
                free(text);
            }
        printf("  %s: %lld allocations, each failed in turn\n", specs[i], (long long)n);
        free(ref);
    }
}

/* The hook itself: counts while armed, fails from k on, off after -1. */
static void test_nomem_hook(void **state)
{
    (void)state;
    rmi_alloc_fail_after(2);
    void *a = rmi_malloc(8), *b = rmi_calloc(1, 8), *c = rmi_malloc(8);
    char *d = rmi_strdup("x");
    assert_non_null(a);
    assert_non_null(b);
    assert_null(c);
    assert_null(d);
    void *e = rmi_realloc(a, 64); /* fails: a stays valid */
    assert_null(e);
    assert_int_equal(rmi_alloc_count(), 5);
    rmi_alloc_fail_after(-1);
    assert_int_equal(rmi_alloc_count(), 0);
    a = rmi_realloc(a, 64);
    assert_non_null(a);
    assert_int_equal(rmi_alloc_count(), 0); /* off: nothing counted */
    rmi_free(a);
    rmi_free(b);
    rmi_alloc_fail_after(1); /* the backends' aligned memory counts too */
    void *x = rmi_aligned_alloc(64, 100), *y = rmi_aligned_alloc(64, 0);
    assert_non_null(x);
    assert_true((uintptr_t)x % 64 == 0);
    assert_null(y);
    assert_int_equal(rmi_alloc_count(), 2);
    rmi_free(x);
    rmi_alloc_fail_after(0);
    remat_fn *f = remat_fn_new("f");
    rmi_alloc_fail_after(-1);
    assert_null(f);
    assert_contains(remat_last_error(), "out of memory");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nomem_hook),
        cmocka_unit_test(test_nomem_mlp_policies),
        cmocka_unit_test(test_nomem_offload_policy),
        cmocka_unit_test(test_nomem_nested_regions),
        cmocka_unit_test(test_nomem_scan_binomial),
        cmocka_unit_test(test_nomem_while_online),
        cmocka_unit_test(test_nomem_schedules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_nomem_run.c — running out of memory while compiling and running: a
 * status, never a crash.
 *
 * The gradients of the seed-like workloads (nomem_workloads.h: a policy MLP,
 * nested checkpoint regions, a PFR Euler scan under binomial) are built with
 * memory granted; then remat_compile + remat_run of each gradient is counted
 * with the core's allocator hook (core/alloc.h) and run again once for every
 * allocation k, failing allocation k and every later one, and again failing
 * allocation k alone, with compiled loops (REMAT_NO_CACHE=1, so that the disk
 * cache of compiled lane programs does not stand in for allocations) and
 * interpreted ones (REMAT_NO_JIT=1). Each time:
 *   - compile or run returns REMAT_ERR_NOMEM and remat_last_error() says "out
 *     of memory" (no abort; under ASan: no leak). The exception, for a
 *     failure of that allocation alone, is memory a fallback with the same
 *     bits does without: the compiled loops' translation (the loops are
 *     interpreted) or a scan's kept plan (the schedule is streamed at each
 *     run); compile and run then succeed and the outputs must equal the
 *     reference bit for bit;
 *   - with the hook off, a program whose run failed runs again, or the
 *     gradient compiles again, and the outputs are bitwise equal to those of
 *     the reference run.
 * Every k is tried (no sampling): the workloads take up to ~2,200
 * allocations (the arena gives every request its own chunk while the hook is
 * armed, so the lowerings' and the scan's program memory is failed request
 * by request). libgccjit itself is not injected, and compiled lane programs
 * stay in the process's cache after the reference compile, so later
 * compiles find them there.
 *
 * Bitwise assertions rest on contracts 1 and 2 (docs/design-notes.md,
 * "Bitwise contracts"): the same program run again, and interpreted loops
 * where the compiled ones could not be had.
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
#include "nomem_workloads.h"
#include "remat/remat.h"
#include "test_util.h"

/* the gradient's inputs and outputs, owned by the test */
typedef struct {
    int n_in, n_out;
    remat_tensor in[16], out[16];
} io;

static size_t bytes_of(const remat_tensor *t)
{
    return (size_t)remat_shape_numel(&t->shape) * (t->dtype == REMAT_F64 ? sizeof(double) : sizeof(float));
}

static void io_make(io *t, const remat_program *p)
{
    t->n_in = remat_program_num_inputs(p);
    t->n_out = remat_program_num_outputs(p);
    assert_true(t->n_in <= 16 && t->n_out <= 16);
    for (int i = 0; i < t->n_in; i++) {
        t->in[i] = remat_program_input_desc(p, i);
        int64_t n = remat_shape_numel(&t->in[i].shape);
        const int f64 = t->in[i].dtype == REMAT_F64;
        char *x = malloc(bytes_of(&t->in[i]) + 1);
        assert_non_null(x);
        for (int64_t j = 0; j < n; j++) { /* small, varied, positive (rates, concentrations) */
            const double v = 0.1 + 0.05 * (double)((j * 7 + i * 3) % 11);
            if (f64)
                ((double *)(void *)x)[j] = v;
            else
                ((float *)(void *)x)[j] = (float)v;
        }
        t->in[i].data = x;
    }
    for (int i = 0; i < t->n_out; i++) {
        t->out[i] = remat_program_output_desc(p, i);
        t->out[i].data = malloc(bytes_of(&t->out[i]) + 1);
        assert_non_null(t->out[i].data);
    }
}

static void io_free(io *t)
{
    for (int i = 0; i < t->n_in; i++)
        free(t->in[i].data);
    for (int i = 0; i < t->n_out; i++)
        free(t->out[i].data);
}

static void clear_outputs(io *t)
{
    for (int i = 0; i < t->n_out; i++)
        memset(t->out[i].data, 0xa5, bytes_of(&t->out[i]));
}

static void assert_outputs_equal(const io *a, const io *b)
{
    for (int i = 0; i < a->n_out; i++)
        assert_memory_equal(a->out[i].data, b->out[i].data, bytes_of(&a->out[i]));
}

/* compile g and run it on t; *p is the program (NULL when compile failed) */
static remat_status compile_run(const remat_fn *g, remat_program **p, io *t)
{
    remat_status st = remat_compile(g, remat_backend_cpu(), p);
    if (st != REMAT_OK) {
        assert_null(*p);
        return st;
    }
    clear_outputs(t);
    return remat_run(*p, t->n_in, t->in, t->n_out, t->out, NULL);
}

/* run_failures: the run itself allocates (a streamed scan), so some
 * failures must come from remat_run; then only the run's allocations are
 * failed (k from the compile's count on): compiling with the plan streamed
 * makes the same allocations as with it kept, less the plan's copy, and
 * those are failed by the kept-plan case — this halves the test's time.
 * 2: the run allocates and nothing else fails its compile's allocations (a
 * while-loop): every allocation is failed, and both kinds must occur. */
static void run_injected(builder build, const char *what, int jit, int run_failures)
{
    remat_fn *f = NULL, *g = NULL;
    assert_ok(build(&f));
    assert_ok(remat_grad(f, 0, NULL, &g));
    remat_fn_free(f);

    remat_program *p = NULL;
    io ref, t;
    assert_ok(remat_compile(g, remat_backend_cpu(), &p));
    io_make(&ref, p);
    io_make(&t, p);
    assert_ok(remat_run(p, ref.n_in, ref.in, ref.n_out, ref.out, NULL));
    remat_program_free(p);
    p = NULL;

    rmi_alloc_fail_after(INT64_MAX);
    assert_ok(remat_compile(g, remat_backend_cpu(), &p));
    const int64_t n_compile = rmi_alloc_count();
    clear_outputs(&t);
    assert_ok(remat_run(p, t.n_in, t.in, t.n_out, t.out, NULL));
    int64_t n = rmi_alloc_count();
    rmi_alloc_fail_after(-1);
    assert_outputs_equal(&t, &ref);
    remat_program_free(p);
    assert_true(n > 5); /* the hook sees compile's allocations */

    int64_t in_compile = 0, in_run = 0, absorbed = 0;
    for (int sticky = 1; sticky >= 0; sticky--)
        for (int64_t k = run_failures == 1 ? n_compile : 0; k < n; k++) {
            remat_clear_error();
            p = NULL;
            if (sticky)
                rmi_alloc_fail_after(k);
            else
                rmi_alloc_fail_once(k);
            remat_status st = compile_run(g, &p, &t);
            rmi_alloc_fail_after(-1);
            if (st == REMAT_OK && !sticky) { /* a fallback did without it */
                assert_outputs_equal(&t, &ref);
                absorbed++;
            } else if (st != REMAT_ERR_NOMEM) {
                fail_msg("%s: allocation %lld of %lld failed%s, got %s (%s)", what, (long long)k, (long long)n,
                         sticky ? " with all after it" : "", remat_status_name(st), remat_last_error());
            } else {
                assert_contains(remat_last_error(), "out of memory");
                if (p) { /* compiled, the run failed: the program is still usable */
                    in_run++;
                    clear_outputs(&t);
                    assert_ok(remat_run(p, t.n_in, t.in, t.n_out, t.out, NULL));
                } else {
                    in_compile++;
                    assert_ok(compile_run(g, &p, &t));
                }
                assert_outputs_equal(&t, &ref);
            }
            remat_program_free(p);
        }
    printf("  %s, %s loops: %lld allocations (%lld compiling), those of %s failed in turn, with all after it "
           "and alone (%lld failures in compile, %lld in run, %lld absorbed by a fallback)\n",
           what, jit ? "compiled" : "interpreted", (long long)n, (long long)n_compile,
           run_failures == 1 ? "the run" : "compile + run", (long long)in_compile, (long long)in_run, (long long)absorbed);
    assert_true(run_failures == 2   ? in_compile > 0 && in_run > 0
                : run_failures ? in_run > 0
                               : in_compile > 0 && in_run == 0);
    io_free(&ref);
    io_free(&t);
    remat_fn_free(g);
}

static void both_ways(builder build, const char *what, int run_failures)
{
    setenv("REMAT_NO_JIT", "1", 1);
    run_injected(build, what, 0, run_failures);
    unsetenv("REMAT_NO_JIT");
    run_injected(build, what, 1, run_failures);
}

static void test_nomem_run_mlp_policies(void **state)
{
    (void)state;
    both_ways(build_mlp, "mlp with dot and name policies", 0);
}

static void test_nomem_run_offload_policy(void **state)
{
    (void)state;
    both_ways(build_offload, "mlp offloading a named value", 0);
}

static void test_nomem_run_nested_regions(void **state)
{
    (void)state;
    both_ways(build_nested, "nested checkpoint regions", 0);
}

static void test_nomem_run_scan_binomial(void **state)
{
    (void)state;
    both_ways(build_scan, "pfr euler scan, binomial:4", 0);
}

/* The scan's plan not kept (REMAT_SCAN_PLAN_MAX_OPS=0): its schedule is
 * replayed at every run, which allocates, so running can run out of memory
 * too; remat_run says so and the program runs again afterwards. */
static void test_nomem_run_scan_streamed(void **state)
{
    (void)state;
    setenv("REMAT_SCAN_PLAN_MAX_OPS", "0", 1);
    both_ways(build_scan, "pfr euler scan, binomial:4, streamed", 1);
    unsetenv("REMAT_SCAN_PLAN_MAX_OPS");
}

/* A while-loop replays its schedule at every run (its length is learnt as
 * it runs), so running can run out of memory too, like a streamed scan;
 * its compile's allocations are failed here too. */
static void test_nomem_run_while_online(void **state)
{
    (void)state;
    both_ways(build_while, "euler while-loop, online:3", 2);
}

int main(void)
{
    setenv("REMAT_JIT", "always", 1); /* the compiled loops, on scans too short for the default policy */
    setenv("REMAT_NO_CACHE", "1", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nomem_run_mlp_policies),
        cmocka_unit_test(test_nomem_run_offload_policy),
        cmocka_unit_test(test_nomem_run_nested_regions),
        cmocka_unit_test(test_nomem_run_scan_binomial),
        cmocka_unit_test(test_nomem_run_scan_streamed),
        cmocka_unit_test(test_nomem_run_while_online),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_scan_tier.c — compiled loops only where they pay (remat/scan.h,
 * "Compiled loops"; src/scan/scan_tier.h): under REMAT_JIT=auto a short
 * scan starts interpreted (plan.deferred_loops) and compiles at the start
 * of a later run, once its runs have done the work compiling costs; a long
 * one compiles at remat_compile; loops this process compiled before are
 * taken at once; REMAT_JIT=always and never (and REMAT_NO_JIT=1) force
 * either way. Every run's outputs are bitwise those of the interpreter,
 * before, at and after the switch. The disk cache is off (REMAT_NO_CACHE)
 * but where a case says so, so that earlier test runs cannot answer.
 */
#include "test_util.h"

#include <stdlib.h>
#include <string.h>

#include "remat/remat.h"

typedef struct {
    remat_problem *pb;
    remat_fn *vg;
    remat_program *p;
    double out[3];
    remat_tensor o[3];
} pfr_prog;

/* value_and_grad of the PFR problem over `steps` Euler steps, binomial:10,
 * compiled under REMAT_JIT=mode */
static void pfr_open(pfr_prog *q, int64_t steps, const char *mode)
{
    memset(q, 0, sizeof *q);
    remat_scan_options so = {0};
    setenv("REMAT_JIT", mode, 1);
    assert_int_equal(remat_problem_new("pfr-euler", steps, &q->pb), REMAT_OK);
    assert_int_equal(remat_schedule_parse("binomial:10", &so.schedule), REMAT_OK);
    assert_int_equal(remat_problem_build(q->pb, &so, &q->vg), REMAT_OK);
    assert_int_equal(remat_compile(q->vg, remat_backend_cpu(), &q->p), REMAT_OK);
    for (int i = 0; i < 3; i++)
        q->o[i] = remat_program_output_desc(q->p, i), q->o[i].data = q->out + i;
}

static void pfr_run(pfr_prog *q)
{
    memset(q->out, 0, sizeof q->out);
    assert_int_equal(remat_run(q->p, remat_problem_num_inputs(q->pb), remat_problem_inputs(q->pb), 3, q->o, NULL),
                     REMAT_OK);
}

static remat_memory_plan plan_of(const pfr_prog *q)
{
    remat_memory_plan plan;
    remat_program_plan(q->p, &plan);
    return plan;
}

static void pfr_close(pfr_prog *q)
{
    remat_program_free(q->p);
    remat_fn_free(q->vg);
    remat_problem_free(q->pb);
}

/* the interpreter's outputs for `steps` */
static void reference(int64_t steps, double want[3])
{
    pfr_prog q;
    pfr_open(&q, steps, "never");
    pfr_run(&q);
    memcpy(want, q.out, sizeof q.out);
    assert_int_equal(plan_of(&q).compiled_loops + plan_of(&q).deferred_loops, 0);
    pfr_close(&q);
}

static int setup(void **state)
{
    (void)state;
    setenv("REMAT_NO_CACHE", "1", 1);
    unsetenv("REMAT_NO_JIT");
    return 0;
}

/* A short scan: interpreted at first, compiled after some runs, the same
 * bits throughout. 210 steps: a body no other case compiles (the step size
 * is in the program). */
static void test_scan_tier_short_scan_compiles_after_runs(void **state)
{
    (void)state;
    double want[3];
    reference(210, want);
    pfr_prog q;
    pfr_open(&q, 210, "auto");
    remat_memory_plan plan = plan_of(&q);
    assert_int_equal(plan.compiled_loops, 0);
    assert_int_equal(plan.deferred_loops, 2); /* the forward and the backward node */
    int runs = 0;
    while (plan_of(&q).compiled_loops == 0 && runs < 100000) {
        pfr_run(&q);
        runs++;
        assert_memory_equal(q.out, want, sizeof want);
    }
    plan = plan_of(&q);
    assert_int_equal(plan.compiled_loops, 2);
    assert_int_equal(plan.deferred_loops, 0);
    assert_true(runs > 1);
    for (int i = 0; i < 3; i++) { /* compiled from here on */
        pfr_run(&q);
        assert_memory_equal(q.out, want, sizeof want);
    }
    printf("  210 steps: compiled at run %d\n", runs);
    pfr_close(&q);
}

/* A long scan compiles at remat_compile: one run pays for it. */
static void test_scan_tier_long_scan_compiles_at_once(void **state)
{
    (void)state;
    double want[3];
    reference(500000, want);
    pfr_prog q;
    pfr_open(&q, 500000, "auto");
    assert_int_equal(plan_of(&q).compiled_loops, 2);
    assert_int_equal(plan_of(&q).deferred_loops, 0);
    pfr_run(&q);
    assert_memory_equal(q.out, want, sizeof want);
    pfr_close(&q);
}

/* Loops compiled before cost little to take: a scan too short to compile
 * for takes the code this process compiled for the same body under always
 * (and would take the disk cache's, test jit_cache); one too short even to
 * load code for does not look. */
static void test_scan_tier_compiled_before_taken(void **state)
{
    (void)state;
    double want[3];
    reference(5000, want);
    pfr_prog a, b;
    pfr_open(&a, 5000, "always");
    assert_int_equal(plan_of(&a).compiled_loops, 2);
    pfr_open(&b, 5000, "auto");
    assert_int_equal(plan_of(&b).compiled_loops, 2);
    pfr_run(&b);
    assert_memory_equal(b.out, want, sizeof want);
    pfr_close(&a);
    pfr_close(&b);
    pfr_open(&a, 20, "always");
    pfr_open(&b, 20, "auto");
    assert_int_equal(plan_of(&b).compiled_loops, 0);
    assert_int_equal(plan_of(&b).deferred_loops, 2);
    pfr_close(&a);
    pfr_close(&b);
}

/* always compiles the shortest scan at once; never and REMAT_NO_JIT=1
 * interpret the longest for good. */
static void test_scan_tier_forced(void **state)
{
    (void)state;
    double want[3];
    reference(30, want);
    pfr_prog q;
    pfr_open(&q, 30, "always");
    assert_int_equal(plan_of(&q).compiled_loops, 2);
    pfr_run(&q);
    assert_memory_equal(q.out, want, sizeof want);
    pfr_close(&q);
    for (int no_jit = 0; no_jit < 2; no_jit++) {
        if (no_jit)
            setenv("REMAT_NO_JIT", "1", 1);
        pfr_open(&q, 500000, no_jit ? "always" : "never"); /* REMAT_NO_JIT wins */
        for (int r = 0; r < 2; r++) {
            assert_int_equal(plan_of(&q).compiled_loops + plan_of(&q).deferred_loops, 0);
            pfr_run(&q);
        }
        pfr_close(&q);
    }
    unsetenv("REMAT_NO_JIT");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_scan_tier_short_scan_compiles_after_runs, setup),
        cmocka_unit_test_setup(test_scan_tier_long_scan_compiles_at_once, setup),
        cmocka_unit_test_setup(test_scan_tier_compiled_before_taken, setup),
        cmocka_unit_test_setup(test_scan_tier_forced, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

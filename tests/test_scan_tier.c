/*
 * test_scan_tier.c — compiled loops only where they pay (remat/scan.h,
 * "Compiled loops"; src/scan/scan_tier.h): under REMAT_JIT=auto a short
 * scan starts interpreted (plan.deferred_loops) and compiles at the start
 * of a later run, once its runs have done the work compiling costs; a long
 * one compiles at remat_compile; loops this process compiled before are
 * taken at once; REMAT_JIT=always and never (and REMAT_NO_JIT=1) force
 * either way; a batch with interleaved lanes (packed by the kernels)
 * switches like a scalar loop. Every run's outputs are bitwise those of the interpreter,
 * before, at and after the switch. The disk cache is off (REMAT_NO_CACHE)
 * but where a case says so, so that earlier test runs cannot answer.
 *
 * Bitwise assertions rest on contract 2 (docs/design-notes.md, "Bitwise
 * contracts"): compiled = interpreted, whenever a loop switches.
 */
#include "test_util.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec/program_impl.h"
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
    /* the node whose run brings the body's account past the cost compiles;
     * the other takes the code at its next kernel entry, this run or the next */
    int runs = 0, first = 0;
    while (plan_of(&q).compiled_loops < 2 && runs < 100000) {
        pfr_run(&q);
        runs++;
        assert_memory_equal(q.out, want, sizeof want);
        if (!first && plan_of(&q).compiled_loops > 0)
            first = runs;
    }
    assert_true(runs - first <= 1);
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

/* value_and_grad of -sum_j B_j(L) over m independent (k1, k2) pairs, the
 * carry (m,3): lanes interleaved, which the compiled kernels pack */
static remat_fn *batch_grad(int64_t steps, int64_t m)
{
    const double h = 10.0 / (double)steps;
    remat_fn *b = remat_fn_new("pfr_euler_step_Bx3");
    remat_val y = remat_arg(b, "y", REMAT_F64, 2, (int64_t[]){m, 3});
    remat_val k1 = remat_arg(b, "k1", REMAT_F64, 1, (int64_t[]){m});
    remat_val k2 = remat_arg(b, "k2", REMAT_F64, 1, (int64_t[]){m});
    const int64_t col[2] = {m, 1};
    remat_val ya = remat_slice(b, y, (int64_t[]){0, 0}, (int64_t[]){m, 1}, NULL);
    remat_val yb = remat_slice(b, y, (int64_t[]){0, 1}, (int64_t[]){m, 2}, NULL);
    remat_val r1 = remat_mul(b, remat_reshape(b, k1, 2, col), ya);
    remat_val r2 = remat_mul(b, remat_reshape(b, k2, 2, col), yb);
    remat_val parts[3] = {remat_neg(b, r1), remat_sub(b, r1, r2), r2};
    remat_fn_output(b, remat_add(b, y, remat_mul_scalar(b, remat_concatenate(b, 3, parts, 1), h)));
    remat_fn *f = remat_fn_new("pfr_euler_batch");
    remat_val y0 = remat_arg(f, "y0", REMAT_F64, 2, (int64_t[]){m, 3});
    remat_val k[2] = {remat_arg(f, "k1", REMAT_F64, 1, (int64_t[]){m}),
                      remat_arg(f, "k2", REMAT_F64, 1, (int64_t[]){m})};
    remat_scan_options opt = {0};
    assert_int_equal(remat_schedule_parse("binomial:4", &opt.schedule), REMAT_OK);
    remat_val carry;
    remat_fn *g = NULL;
    assert_int_equal(remat_scan(f, b, steps, 1, &y0, 0, NULL, 2, k, &opt, &carry, NULL), REMAT_OK);
    remat_fn_output(f, remat_neg(f, remat_sum_all(f, remat_slice(f, carry, (int64_t[]){0, 1}, (int64_t[]){m, 2},
                                                                  NULL))));
    assert_int_equal(remat_value_and_grad(f, 2, (const int[]){1, 2}, &g), REMAT_OK);
    remat_fn_free(b);
    remat_fn_free(f);
    return g;
}

/* A short batch with interleaved lanes: the forward and backward nodes
 * switch to compiled (packed) kernels between runs with the interpreter's
 * bits, and a scan that waits is never lane-blocked. */
static void test_scan_tier_batch_switches_bitwise(void **state)
{
    (void)state;
    enum { M = 16, STEPS = 40 };
    double y0[M * 3], k1[M], k2[M], want[1 + 2 * M], got[1 + 2 * M];
    for (int j = 0; j < M; j++)
        y0[3 * j] = 1, y0[3 * j + 1] = 0.01 * j, y0[3 * j + 2] = 0, k1[j] = 1 + 0.1 * j, k2[j] = 0.5 + 0.01 * j;
    const remat_tensor in[3] = {remat_tensor_f64(y0, 2, (int64_t[]){M, 3}), remat_tensor_f64(k1, 1, (int64_t[]){M}),
                                remat_tensor_f64(k2, 1, (int64_t[]){M})};
    remat_fn *g = batch_grad(STEPS, M);
    remat_program *p[2];
    for (int t = 0; t < 2; t++) {
        setenv("REMAT_JIT", t ? "auto" : "never", 1);
        assert_int_equal(remat_compile(g, remat_backend_cpu(), &p[t]), REMAT_OK);
    }
    remat_memory_plan plan;
    remat_program_plan(p[1], &plan);
    assert_int_equal(plan.compiled_loops, 0);
    assert_int_equal(plan.deferred_loops, 2);
    assert_int_equal(plan.scan_block_lanes, 0);
    remat_tensor o[2][3];
    for (int t = 0; t < 2; t++) {
        double *buf = t ? got : want;
        o[t][0] = remat_tensor_f64(buf, 0, NULL);
        o[t][1] = remat_tensor_f64(buf + 1, 1, (int64_t[]){M});
        o[t][2] = remat_tensor_f64(buf + 1 + M, 1, (int64_t[]){M});
    }
    assert_int_equal(remat_run(p[0], 3, in, 3, o[0], NULL), REMAT_OK);
    int runs = 0, after = 0;
    while (after < 3 && runs < 200000) {
        memset(got, 0, sizeof got);
        assert_int_equal(remat_run(p[1], 3, in, 3, o[1], NULL), REMAT_OK);
        assert_memory_equal(got, want, sizeof want);
        remat_program_plan(p[1], &plan);
        after += plan.compiled_loops == 2;
        runs++;
    }
    assert_int_equal(plan.compiled_loops, 2);
    assert_int_equal(plan.deferred_loops, 0);
    printf("  batch of %d, %d steps: compiled at run %d\n", M, STEPS, runs - 2);
    remat_program_free(p[0]);
    remat_program_free(p[1]);
    remat_fn_free(g);
}

/* value_and_grad over (k1, k2) of `scans` Euler scans of `steps` each, one
 * after the other, all with the same body (h in it: a body of its own per h) */
static remat_fn *chain_grad(int scans, int64_t steps, double h)
{
    remat_fn *b = remat_fn_new("pfr_euler_step");
    remat_val y = remat_arg(b, "y", REMAT_F64, 1, (int64_t[]){3});
    remat_val k1 = remat_arg(b, "k1", REMAT_F64, 0, NULL), k2 = remat_arg(b, "k2", REMAT_F64, 0, NULL);
    remat_val ya = remat_index(b, y, 0), yb = remat_index(b, y, 1);
    remat_val r1 = remat_mul(b, k1, ya), r2 = remat_mul(b, k2, yb);
    remat_val parts[3] = {remat_reshape(b, remat_neg(b, r1), 1, (int64_t[]){1}),
                          remat_reshape(b, remat_sub(b, r1, r2), 1, (int64_t[]){1}),
                          remat_reshape(b, r2, 1, (int64_t[]){1})};
    remat_fn_output(b, remat_add(b, y, remat_mul_scalar(b, remat_concatenate(b, 3, parts, 0), h)));
    remat_fn *f = remat_fn_new("pfr_euler_chain");
    remat_val c = remat_arg(f, "y0", REMAT_F64, 1, (int64_t[]){3});
    remat_val k[2] = {remat_arg(f, "k1", REMAT_F64, 0, NULL), remat_arg(f, "k2", REMAT_F64, 0, NULL)};
    remat_scan_options opt = {0};
    assert_int_equal(remat_schedule_parse("binomial:4", &opt.schedule), REMAT_OK);
    for (int i = 0; i < scans; i++)
        assert_int_equal(remat_scan(f, b, steps, 1, &c, 0, NULL, 2, k, &opt, &c, NULL), REMAT_OK);
    remat_fn_output(f, remat_index(f, c, 1));
    remat_fn *g = NULL;
    assert_int_equal(remat_value_and_grad(f, 2, (const int[]){1, 2}, &g), REMAT_OK);
    remat_fn_free(b);
    remat_fn_free(f);
    return g;
}

/* runs of g under auto until all `loops` scan nodes are compiled, each run
 * bitwise the interpreter's; returns the run at which the first switched */
static int runs_to_compile(const remat_fn *g, int64_t loops)
{
    double y0[3] = {1, 0, 0}, k1 = 2, k2 = 0.5, want[3], got[3];
    const remat_tensor in[3] = {remat_tensor_f64(y0, 1, (int64_t[]){3}), remat_tensor_f64(&k1, 0, NULL),
                                remat_tensor_f64(&k2, 0, NULL)};
    remat_tensor o[2][3];
    remat_program *p[2];
    for (int t = 0; t < 2; t++) {
        double *buf = t ? got : want;
        for (int i = 0; i < 3; i++)
            o[t][i] = remat_tensor_f64(buf + i, 0, NULL);
        setenv("REMAT_JIT", t ? "auto" : "never", 1);
        assert_int_equal(remat_compile(g, remat_backend_cpu(), &p[t]), REMAT_OK);
    }
    assert_int_equal(remat_run(p[0], 3, in, 3, o[0], NULL), REMAT_OK);
    remat_memory_plan plan;
    remat_program_plan(p[1], &plan);
    assert_int_equal(plan.compiled_loops, 0);
    assert_int_equal(plan.deferred_loops, loops);
    int runs = 0, first = 0;
    while (plan.compiled_loops < loops && runs < 1000000) {
        assert_int_equal(remat_run(p[1], 3, in, 3, o[1], NULL), REMAT_OK);
        assert_memory_equal(got, want, sizeof want);
        remat_program_plan(p[1], &plan);
        runs++;
        if (!first && plan.compiled_loops > 0)
            first = runs;
    }
    assert_int_equal(plan.compiled_loops, loops);
    assert_true(runs - first <= 1); /* the rest take the code at their next entry */
    remat_program_free(p[0]);
    remat_program_free(p[1]);
    return first;
}

/* Scans with the same body share one account: eight of them, each doing
 * what one scan alone does a run, reach the compile's cost in about an
 * eighth of the runs (per-node accounts would take as many as the one). */
static void test_scan_tier_same_body_shares_account(void **state)
{
    (void)state;
    remat_fn *one = chain_grad(1, 100, 0.0123), *eight = chain_grad(8, 100, 0.0125);
    const int r1 = runs_to_compile(one, 2), r8 = runs_to_compile(eight, 16);
    printf("  one scan compiled at run %d, eight of the same body at run %d\n", r1, r8);
    assert_true(r8 > 1);
    assert_true(4 * r8 <= r1);
    remat_fn_free(one);
    remat_fn_free(eight);
}

/* Scans of one body in a program share its interpreted sub-programs, as
 * while loops do (src/scan/loop_lower.c, rmi_compile_sub_shared): the
 * gradient of 8 scans (16 nodes) interpreted holds one program per body
 * function (the body, the VJP's two halves), not one per node and function
 * (up to 40 before); its bits are the compiled loops' (own programs). */
static void test_scan_tier_scans_share_sub_programs(void **state)
{
    (void)state;
    remat_fn *g = chain_grad(8, 100, 0.0125);
    double y0[3] = {1, 0, 0}, k1 = 2, k2 = 0.5, got[2][3];
    const remat_tensor in[3] = {remat_tensor_f64(y0, 1, (int64_t[]){3}), remat_tensor_f64(&k1, 0, NULL),
                                remat_tensor_f64(&k2, 0, NULL)};
    for (int t = 0; t < 2; t++) {
        remat_tensor o[3];
        for (int i = 0; i < 3; i++)
            o[i] = remat_tensor_f64(&got[t][i], 0, NULL);
        setenv("REMAT_JIT", t ? "always" : "never", 1);
        remat_program *p = NULL;
        assert_int_equal(remat_compile(g, remat_backend_cpu(), &p), REMAT_OK);
        if (t == 0)
            assert_int_equal(p->own_counters.n_subs, 3);
        assert_int_equal(remat_run(p, 3, in, 3, o, NULL), REMAT_OK);
        remat_program_free(p);
    }
    for (int i = 0; i < 3; i++)
        assert_memory_equal(&got[0][i], &got[1][i], sizeof(double));
    remat_fn_free(g);
}

/* the entries of the disk cache in dir; `remove`: and deletes them */
static int cache_entries(const char *dir, bool remove)
{
    DIR *d = opendir(dir);
    char path[4400];
    int n = 0;
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d));) {
        n += strncmp(e->d_name, "lanes-", 6) == 0;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (remove && strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            unlink(path);
    }
    closedir(d);
    return n;
}

/* A body compiled after some runs goes to the disk cache like one compiled
 * at lowering, so that the next process takes it at its first run. */
static void test_scan_tier_deferred_compile_writes_cache(void **state)
{
    (void)state;
    const char *t = getenv("TMPDIR"), *was = getenv("REMAT_CACHE_DIR");
    char dir[4096], keep[4096];
    snprintf(keep, sizeof keep, "%s", was ? was : "");
    snprintf(dir, sizeof dir, "%s/remat-tier-XXXXXX", t && *t ? t : "/tmp");
    assert_non_null(mkdtemp(dir));
    setenv("REMAT_CACHE_DIR", dir, 1);
    unsetenv("REMAT_NO_CACHE");
    remat_fn *g = chain_grad(1, 100, 0.0127);
    assert_int_equal(cache_entries(dir, false), 0);
    assert_true(runs_to_compile(g, 2) > 1);
    assert_int_equal(cache_entries(dir, true), 1);
    rmdir(dir);
    remat_fn_free(g);
    if (was)
        setenv("REMAT_CACHE_DIR", keep, 1);
    else
        unsetenv("REMAT_CACHE_DIR");
    setenv("REMAT_NO_CACHE", "1", 1);
}

/* Robertson's gradient over 21 intervals of Rodas5 steps: unrolled lane
 * programs of ~6000 instructions in all (past any fixed cap that keeps gcc
 * short), which the policy weighs like any other: deferred at lowering,
 * its 42 scan nodes compiled together once their runs have done the work,
 * with the interpreter's bits before and after. */
static void test_scan_tier_big_unrolled_body_deferred(void **state)
{
    (void)state;
    remat_mechanism *m;
    assert_int_equal(remat_mechanism_parse_string("species A, B, C\nparam k1 = 0.04\nparam k2 = 3e7\n"
                                                  "param k3 = 1e4\nA -> B : k1\n2 B -> B + C : k2\n"
                                                  "B + C -> A + C : k3\n", NULL, &m), REMAT_OK);
    double t[21];
    for (int i = 0; i < 21; i++)
        t[i] = pow(10.0, -5.0 + i / 2.0);
    remat_ode_options opt = {.method = REMAT_ODE_RODAS5, .n_times = 21, .times = t, .steps = 2};
    remat_fn *f = remat_fn_new("robertson"), *g = NULL;
    remat_val a = remat_arg(f, "y0", REMAT_F64, 1, (int64_t[]){3});
    remat_val p = remat_arg(f, "k", REMAT_F64, 1, (int64_t[]){3}), ys;
    assert_int_equal(remat_ode_integrate(f, m, &opt, a, p, &ys), REMAT_OK);
    remat_fn_output(f, remat_sum_all(f, remat_index(f, ys, 20)));
    assert_int_equal(remat_grad(f, 1, (int[]){1}, &g), REMAT_OK);
    double y0[3] = {1, 0, 0}, k[3] = {0.04, 3e7, 1e4}, want[3], got[3];
    const remat_tensor in[2] = {remat_tensor_f64(y0, 1, (int64_t[]){3}), remat_tensor_f64(k, 1, (int64_t[]){3})};
    remat_tensor ow = remat_tensor_f64(want, 1, (int64_t[]){3}), og = remat_tensor_f64(got, 1, (int64_t[]){3});
    remat_program *pn, *pa;
    setenv("REMAT_JIT", "never", 1);
    assert_int_equal(remat_compile(g, remat_backend_cpu(), &pn), REMAT_OK);
    assert_int_equal(remat_run(pn, 2, in, 1, &ow, NULL), REMAT_OK);
    setenv("REMAT_JIT", "auto", 1);
    assert_int_equal(remat_compile(g, remat_backend_cpu(), &pa), REMAT_OK);
    remat_memory_plan plan;
    remat_program_plan(pa, &plan);
    assert_int_equal(plan.compiled_loops, 0);
    const int64_t loops = plan.deferred_loops;
    assert_true(loops >= 42); /* every interval's forward and backward, and the regions' re-runs */
    int runs = 0;
    while (plan.compiled_loops < loops && runs < 100000) {
        memset(got, 0, sizeof got);
        assert_int_equal(remat_run(pa, 2, in, 1, &og, NULL), REMAT_OK);
        assert_memory_equal(got, want, sizeof want);
        remat_program_plan(pa, &plan);
        runs++;
    }
    assert_int_equal(plan.compiled_loops, loops);
    assert_int_equal(plan.deferred_loops, 0);
    assert_int_equal(remat_run(pa, 2, in, 1, &og, NULL), REMAT_OK);
    assert_memory_equal(got, want, sizeof want);
    printf("  Robertson, %lld loops: compiled at run %d\n", (long long)loops, runs);
    remat_program_free(pn);
    remat_program_free(pa);
    remat_fn_free(g);
    remat_fn_free(f);
    remat_mechanism_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_scan_tier_short_scan_compiles_after_runs, setup),
        cmocka_unit_test_setup(test_scan_tier_long_scan_compiles_at_once, setup),
        cmocka_unit_test_setup(test_scan_tier_compiled_before_taken, setup),
        cmocka_unit_test_setup(test_scan_tier_forced, setup),
        cmocka_unit_test_setup(test_scan_tier_batch_switches_bitwise, setup),
        cmocka_unit_test_setup(test_scan_tier_same_body_shares_account, setup),
        cmocka_unit_test_setup(test_scan_tier_scans_share_sub_programs, setup),
        cmocka_unit_test_setup(test_scan_tier_deferred_compile_writes_cache, setup),
        cmocka_unit_test_setup(test_scan_tier_big_unrolled_body_deferred, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_compile_options.c — remat_compile_options (remat/exec.h): every
 * compile-time knob from the caller, overriding the environment, which
 * remat_compile (and NULL options) read in one place (src/core/config.c).
 * Options change how a function runs, never its bits (contract 2,
 * docs/design-notes.md "Bitwise contracts"): every case compares them.
 */
#include "test_util.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "exec/program_impl.h"
#include "remat/remat.h"
#include "scan/scan_rt.h"
#include "test_scan_jit_util.h"
#include "test_scan_util.h"

static void clear_env(void)
{
    static const char *const vars[] = {"REMAT_JIT", "REMAT_NO_JIT", "REMAT_CACHE_DIR", "REMAT_NO_CACHE",
                                       "REMAT_SCAN_BLOCK", "REMAT_SCAN_PLAN_MAX_OPS", "REMAT_NO_FUSION",
                                       "REMAT_NO_INPLACE", "REMAT_BACKEND"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        unsetenv(vars[i]);
}

/* compiled with o (NULL: the environment's), run once: outputs, plan */
static void run_opts(const remat_fn *g, int n_in, const remat_tensor *in, const remat_compile_options *o,
                     result *r)
{
    remat_program *p = NULL;
    assert_ok(remat_compile_opts(g, remat_backend_cpu(), o, &p));
    remat_program_plan(p, &r->plan);
    run_prog(p, n_in, in, &r->o, &r->st);
    remat_program_free(p);
}

/* the value and gradient of a loss over a 40-step Euler scan of m lanes (rows (3, m)) */
typedef struct {
    euler_case c;
    remat_fn *f, *g;
} lanes_case;

static lanes_case lanes_new(const char *sched, int64_t m)
{
    lanes_case L = {.c = euler_case_new(REMAT_F64, m, 1)};
    remat_scan_options so = opts(sched, 0, NULL);
    L.f = euler_loss(&L.c, &so, 40);
    L.g = ad_ok(AD_VALUE_AND_GRAD, L.f, 0, NULL);
    return L;
}

static void lanes_free(lanes_case *L)
{
    remat_fn_free(L->g);
    remat_fn_free(L->f);
    euler_case_free(&L->c);
}

static bool can_jit(void)
{
#if REMAT_HAVE_GCCJIT
    return true;
#else
    print_message("SKIP part: remat built without libgccjit, no loop compiles\n");
    return false;
#endif
}

/* REMAT_NO_JIT=1 in the environment, jit = always in the options: the loops
 * compile; and the reverse, REMAT_JIT=always against jit = never. */
static void test_compile_options_jit_overrides_env(void **state)
{
    (void)state;
    clear_env();
    setenv("REMAT_NO_CACHE", "1", 1); /* earlier runs' disk entries change nothing, but stay out */
    lanes_case L = lanes_new("binomial:4", 8);
    result env_never, opt_always, env_always, opt_never;
    setenv("REMAT_NO_JIT", "1", 1);
    run_opts(L.g, 3, L.c.in, NULL, &env_never);
    run_opts(L.g, 3, L.c.in, &(remat_compile_options){.jit = REMAT_JIT_ALWAYS, .no_cache = true}, &opt_always);
    unsetenv("REMAT_NO_JIT");
    setenv("REMAT_JIT", "always", 1);
    run_opts(L.g, 3, L.c.in, NULL, &env_always);
    run_opts(L.g, 3, L.c.in, &(remat_compile_options){.jit = REMAT_JIT_NEVER}, &opt_never);
    clear_env();
    assert_int_equal(env_never.plan.compiled_loops + env_never.plan.deferred_loops, 0);
    assert_int_equal(opt_never.plan.compiled_loops + opt_never.plan.deferred_loops, 0);
    if (can_jit()) {
        assert_true(opt_always.plan.compiled_loops > 0);
        assert_int_equal(opt_always.plan.compiled_loops, env_always.plan.compiled_loops);
    }
    check_outs_bitwise("jit always (options) against never (environment)", &opt_always.o, &env_never.o);
    check_outs_bitwise("jit always (environment) against never (options)", &env_always.o, &opt_never.o);
    check_outs_bitwise("compiled against interpreted", &opt_always.o, &opt_never.o);
    result *all[4] = {&env_never, &opt_always, &env_always, &opt_never};
    for (int i = 0; i < 4; i++)
        outs_free(&all[i]->o);
    lanes_free(&L);
}

/* how many files in dir start with "lanes-" (the cache's entries); -1: no dir */
static int entries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += strncmp(e->d_name, "lanes-", 6) == 0;
    closedir(d);
    return n;
}

static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    char path[4096];
    for (struct dirent *e; (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
    closedir(d);
    rmdir(dir);
}

/* The options' cache directory is where compiled loops are stored, not the
 * environment's (REMAT_CACHE_DIR), whatever REMAT_NO_CACHE says. In a child
 * process: this one's in-memory cache of compiled loops would answer. */
static void test_compile_options_cache_dir_is_the_options(void **state)
{
    (void)state;
    if (!can_jit())
        return;
    char opt_dir[] = "/tmp/remat_opts_cacheXXXXXX", env_dir[] = "/tmp/remat_env_cacheXXXXXX";
    assert_non_null(mkdtemp(opt_dir));
    assert_non_null(mkdtemp(env_dir));
    const pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        clear_env();
        setenv("REMAT_CACHE_DIR", env_dir, 1);
        lanes_case L = lanes_new("store-all", 13); /* lanes no other case compiles */
        remat_program *p = NULL;
        const remat_compile_options o = {.jit = REMAT_JIT_ALWAYS, .cache_dir = opt_dir};
        int code = remat_compile_opts(L.g, NULL, &o, &p) == REMAT_OK ? 0 : 1;
        remat_memory_plan plan;
        if (!code) {
            remat_program_plan(p, &plan);
            code = plan.compiled_loops > 0 ? 0 : 2;
        }
        remat_program_free(p);
        _exit(code);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    const int in_opt = entries(opt_dir), in_env = entries(env_dir);
    remove_dir(opt_dir);
    remove_dir(env_dir);
    assert_true(in_opt >= 1);
    assert_int_equal(in_env, 0);
}

/* no_fusion in the options: no op runs inside another's instruction, even
 * with the environment silent; fusion on in the options wins over
 * REMAT_NO_FUSION=1. The same bits. */
static void test_compile_options_fusion_off(void **state)
{
    (void)state;
    clear_env();
    remat_fn *f = remat_fn_new("fuse");
    remat_val x = remat_arg(f, "x", REMAT_F64, 1, DIMS(4096));
    remat_val t = remat_add(f, remat_mul(f, x, x), remat_exp(f, x));
    remat_fn_output(f, remat_tanh(f, remat_sin(f, t)));
    remat_tensor in = t_rand(REMAT_F64, 1, DIMS(4096), -1, 1);
    remat_program *off = NULL, *on = NULL;
    assert_ok(remat_compile_opts(f, remat_backend_cpu(), &(remat_compile_options){.no_fusion = true}, &off));
    setenv("REMAT_NO_FUSION", "1", 1);
    assert_ok(remat_compile_opts(f, remat_backend_cpu(), &(remat_compile_options){0}, &on));
    clear_env();
    assert_int_equal(off->n_fused, 0);
    assert_true(on->n_fused > 0);
    outs_t a, b;
    run_prog(off, 1, &in, &a, NULL);
    run_prog(on, 1, &in, &b, NULL);
    check_outs_bitwise("fused against unfused", &b, &a);
    outs_free(&a), outs_free(&b);
    remat_program_free(off), remat_program_free(on);
    t_free_all(1, &in);
    remat_fn_free(f);
}

/* A fused group of 36 external inputs, a third of them splat constants read
 * as one element (storage.c): 12 select(p_k, x_k, c_k) summed, 23 micro-ops
 * in one group. The inputs' scalar mask was one 32-bit word, set with
 * 1u << e (undefined from e = 32; on x86 it set bit e % 32, so p_1, input 3,
 * was read as one element). Fused against unfused: contract 2, the same bits. */
static void test_compile_options_fusion_many_inputs(void **state)
{
    (void)state;
    clear_env();
    enum { K = 12, N = 256 };
    remat_fn *f = remat_fn_new("wide");
    remat_val acc = REMAT_NONE;
    remat_tensor in[2 * K];
    for (int k = 0; k < K; k++) {
        char name[16];
        snprintf(name, sizeof name, "p%d", k);
        remat_val p = remat_arg(f, name, REMAT_F64, 1, DIMS(N));
        snprintf(name, sizeof name, "x%d", k);
        remat_val x = remat_arg(f, name, REMAT_F64, 1, DIMS(N));
        remat_val c = remat_const_fill(f, REMAT_F64, 1, DIMS(N), 0.5 + k);
        remat_val leaf = remat_select(f, p, x, c);
        acc = k == 0 ? leaf : remat_add(f, acc, leaf);
        in[2 * k] = t_new(REMAT_F64, 1, DIMS(N));
        for (int64_t i = 0; i < N; i++) /* zeros and ones: the select takes both branches */
            t_set(&in[2 * k], i, (double)((i * 7 + k) % 3 == 0));
        in[2 * k + 1] = t_rand(REMAT_F64, 1, DIMS(N), -1, 1);
    }
    remat_fn_output(f, acc);
    remat_program *off = NULL, *on = NULL;
    assert_ok(remat_compile_opts(f, remat_backend_cpu(), &(remat_compile_options){.no_fusion = true}, &off));
    assert_ok(remat_compile_opts(f, remat_backend_cpu(), &(remat_compile_options){0}, &on));
    assert_int_equal(off->n_fused, 0);
    assert_int_equal(on->n_fused, 2 * K - 2); /* one group of 2K - 1 micro-ops */
    outs_t a, b;
    run_prog(off, 2 * K, in, &a, NULL);
    run_prog(on, 2 * K, in, &b, NULL);
    check_outs_bitwise("a fused group of 36 inputs against unfused", &b, &a);
    outs_free(&a), outs_free(&b);
    remat_program_free(off), remat_program_free(on);
    t_free_all(2 * K, in);
    remat_fn_free(f);
}

/* no_inplace in the options: the concatenate of two computed rows is an
 * instruction of its own (in place it is none), even with the environment
 * silent; in place wins over REMAT_NO_INPLACE=1. The same bits. */
static void test_compile_options_inplace_off(void **state)
{
    (void)state;
    clear_env();
    remat_fn *f = remat_fn_new("rows");
    remat_val x = remat_arg(f, "x", REMAT_F64, 1, DIMS(256));
    const remat_val rows[2] = {remat_exp(f, x), remat_sin(f, x)};
    remat_fn_output(f, remat_tanh(f, remat_concatenate(f, 2, rows, 0)));
    remat_tensor in = t_rand(REMAT_F64, 1, DIMS(256), -1, 1);
    remat_program *off = NULL, *on = NULL;
    assert_ok(remat_compile_opts(f, remat_backend_cpu(),
                                 &(remat_compile_options){.no_fusion = true, .no_inplace = true}, &off));
    setenv("REMAT_NO_INPLACE", "1", 1);
    assert_ok(remat_compile_opts(f, remat_backend_cpu(), &(remat_compile_options){.no_fusion = true}, &on));
    clear_env();
    assert_true(on->n_instrs < off->n_instrs);
    outs_t a, b;
    run_prog(off, 1, &in, &a, NULL);
    run_prog(on, 1, &in, &b, NULL);
    check_outs_bitwise("in place against copied", &b, &a);
    outs_free(&a), outs_free(&b);
    remat_program_free(off), remat_program_free(on);
    t_free_all(1, &in);
    remat_fn_free(f);
}

/* scan_block_lanes = 2 blocks the lanes in twos whatever REMAT_SCAN_BLOCK
 * says; REMAT_SCAN_BLOCK_NONE keeps them whole; the same bits. */
static void test_compile_options_scan_block(void **state)
{
    (void)state;
    if (!can_jit())
        return;
    clear_env();
    setenv("REMAT_NO_CACHE", "1", 1);
    lanes_case L = lanes_new("store-all", 8);
    result blocked, whole;
    setenv("REMAT_SCAN_BLOCK", "0", 1);
    run_opts(L.g, 3, L.c.in, &(remat_compile_options){.jit = REMAT_JIT_ALWAYS, .scan_block_lanes = 2}, &blocked);
    setenv("REMAT_SCAN_BLOCK", "2", 1);
    run_opts(L.g, 3, L.c.in,
             &(remat_compile_options){.jit = REMAT_JIT_ALWAYS, .scan_block_lanes = REMAT_SCAN_BLOCK_NONE}, &whole);
    clear_env();
    assert_int_equal(blocked.plan.scan_block_lanes, 2);
    assert_int_equal(whole.plan.scan_block_lanes, 0);
    check_outs_bitwise("blocked against whole", &blocked.o, &whole.o);
    outs_free(&blocked.o), outs_free(&whole.o);
    lanes_free(&L);
}

/* whether every scan node of p keeps its plan (scan_replay.h), the scans
 * being p's only HOP instructions */
static int plans_kept(const remat_program *p)
{
    const remat_exec_counters *c = &p->own_counters;
    assert_true(c->n_hooks > 0);
    int kept = 1;
    for (int i = 0; i < c->n_hooks; i++)
        kept &= ((const scan_rt *)c->hooks[i].self)->plan.kept;
    return kept;
}

/* scan_plan_max_ops = REMAT_SCAN_PLAN_NONE streams the plan with the
 * environment silent; 0 (the default limit) keeps it with
 * REMAT_SCAN_PLAN_MAX_OPS=0 set. The same bits. */
static void test_compile_options_scan_plan_max_ops(void **state)
{
    (void)state;
    clear_env();
    lanes_case L = lanes_new("binomial:4", 8);
    remat_program *streamed = NULL, *kept = NULL;
    assert_ok(remat_compile_opts(L.g, remat_backend_cpu(),
                                 &(remat_compile_options){.scan_plan_max_ops = REMAT_SCAN_PLAN_NONE}, &streamed));
    setenv("REMAT_SCAN_PLAN_MAX_OPS", "0", 1);
    assert_ok(remat_compile_opts(L.g, remat_backend_cpu(), &(remat_compile_options){0}, &kept));
    clear_env();
    assert_false(plans_kept(streamed));
    assert_true(plans_kept(kept));
    outs_t a, b;
    run_prog(streamed, 3, L.c.in, &a, NULL);
    run_prog(kept, 3, L.c.in, &b, NULL);
    check_outs_bitwise("streamed plan against kept", &a, &b);
    outs_free(&a), outs_free(&b);
    remat_program_free(streamed), remat_program_free(kept);
    lanes_free(&L);
}

/* num_threads sets the pool's count (process-wide, remat_set_num_threads);
 * 0 leaves it as it was */
static void test_compile_options_num_threads(void **state)
{
    (void)state;
    remat_fn *f = remat_fn_new("id");
    remat_fn_output(f, remat_neg(f, remat_arg(f, "x", REMAT_F64, 1, DIMS(3))));
    const int before = remat_num_threads();
    remat_program *p = NULL;
    assert_ok(remat_compile_opts(f, remat_backend_cpu(), &(remat_compile_options){.num_threads = 3}, &p));
    remat_program_free(p);
    assert_int_equal(remat_num_threads(), 3);
    assert_ok(remat_compile_opts(f, remat_backend_cpu(), &(remat_compile_options){0}, &p));
    remat_program_free(p);
    assert_int_equal(remat_num_threads(), 3);
    assert_ok(remat_set_num_threads(before));
    remat_fn_free(f);
}

/* a field out of its range: REMAT_ERR_VALUE naming it, nothing compiled */
static void test_compile_options_bad_fields(void **state)
{
    (void)state;
    remat_fn *f = remat_fn_new("id");
    remat_val x = remat_arg(f, "x", REMAT_F64, 1, DIMS(3));
    remat_fn_output(f, remat_neg(f, x));
    static const struct {
        remat_compile_options o;
        const char *field;
    } bad[] = {
        {{.jit = (remat_jit_mode)7}, "jit = 7"},
        {{.jit = (remat_jit_mode)-1}, "jit = -1"},
        {{.num_threads = -2}, "num_threads = -2"},
        {{.num_threads = 100000}, "num_threads = 100000"},
        {{.scan_block_lanes = -5}, "scan_block_lanes = -5"},
        {{.scan_plan_max_ops = -3}, "scan_plan_max_ops = -3"},
        {{.cache_dir = ""}, "cache_dir"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        remat_program *p = (remat_program *)&p;
        assert_int_equal(remat_compile_opts(f, remat_backend_cpu(), &bad[i].o, &p), REMAT_ERR_VALUE);
        assert_null(p);
        assert_contains(remat_last_error(), bad[i].field);
    }
    remat_program *p = NULL;
    assert_int_equal(remat_compile_opts(f, NULL, &(remat_compile_options){.backend = "tpu"}, &p), REMAT_ERR_ARG);
    assert_null(p);
    assert_contains(remat_last_error(), "backend 'tpu'");
    /* the backend by name when the argument is NULL */
    assert_ok(remat_compile_opts(f, NULL, &(remat_compile_options){.backend = "cpu"}, &p));
    remat_program_free(p);
    remat_fn_free(f);
}

/* NULL options are the environment's: the table in remat/exec.h */
static void test_compile_options_null_is_env(void **state)
{
    (void)state;
    clear_env();
    remat_compile_options o;
    assert_ok(remat_compile_options_from_env(&o));
    const remat_compile_options z = remat_compile_options_default();
    assert_int_equal(o.jit, z.jit);
    assert_null(o.cache_dir);
    assert_false(o.no_cache || o.no_fusion || o.no_inplace);
    assert_int_equal(o.scan_block_lanes, 0);
    assert_int_equal(o.scan_plan_max_ops, 0);
    assert_null(o.backend);
    setenv("REMAT_JIT", "always", 1);
    setenv("REMAT_CACHE_DIR", "/nowhere/cache", 1);
    setenv("REMAT_NO_CACHE", "1", 1);
    setenv("REMAT_SCAN_BLOCK", "16", 1);
    setenv("REMAT_SCAN_PLAN_MAX_OPS", "0", 1);
    setenv("REMAT_NO_FUSION", "1", 1);
    setenv("REMAT_NO_INPLACE", "0", 1);
    setenv("REMAT_BACKEND", "cpu", 1);
    assert_ok(remat_compile_options_from_env(&o));
    assert_int_equal(o.jit, REMAT_JIT_ALWAYS);
    assert_string_equal(o.cache_dir, "/nowhere/cache");
    assert_true(o.no_cache && o.no_fusion && !o.no_inplace);
    assert_int_equal(o.scan_block_lanes, 16);
    assert_int_equal(o.scan_plan_max_ops, REMAT_SCAN_PLAN_NONE);
    assert_string_equal(o.backend, "cpu");
    setenv("REMAT_NO_JIT", "1", 1); /* wins over REMAT_JIT */
    setenv("REMAT_SCAN_BLOCK", "1", 1);
    setenv("REMAT_SCAN_PLAN_MAX_OPS", "12", 1);
    assert_ok(remat_compile_options_from_env(&o));
    assert_int_equal(o.jit, REMAT_JIT_NEVER);
    assert_int_equal(o.scan_block_lanes, REMAT_SCAN_BLOCK_NONE);
    assert_int_equal(o.scan_plan_max_ops, 12);
    /* NULL options compile as the environment says: here fusion off */
    clear_env();
    setenv("REMAT_NO_FUSION", "1", 1);
    remat_fn *f = remat_fn_new("fuse");
    remat_val x = remat_arg(f, "x", REMAT_F64, 1, DIMS(64));
    remat_fn_output(f, remat_exp(f, remat_mul(f, x, x)));
    remat_program *p = NULL;
    assert_ok(remat_compile_opts(f, remat_backend_cpu(), NULL, &p));
    assert_int_equal(p->n_fused, 0);
    remat_program_free(p);
    clear_env();
    assert_ok(remat_compile_opts(f, remat_backend_cpu(), NULL, &p));
    assert_true(p->n_fused > 0);
    remat_program_free(p);
    remat_fn_free(f);
    assert_int_equal(remat_compile_options_from_env(NULL), REMAT_ERR_NULL);
}

int main(void)
{
    rng_seed(0x2545f4914f6cdd1dull);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_compile_options_jit_overrides_env),
        cmocka_unit_test(test_compile_options_cache_dir_is_the_options),
        cmocka_unit_test(test_compile_options_fusion_off),
        cmocka_unit_test(test_compile_options_fusion_many_inputs),
        cmocka_unit_test(test_compile_options_inplace_off),
        cmocka_unit_test(test_compile_options_scan_block),
        cmocka_unit_test(test_compile_options_scan_plan_max_ops),
        cmocka_unit_test(test_compile_options_num_threads),
        cmocka_unit_test(test_compile_options_bad_fields),
        cmocka_unit_test(test_compile_options_null_is_env),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

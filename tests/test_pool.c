/*
 * test_pool.c — the CPU thread pool (src/core/pool.h) and the thread count
 * of remat/exec.h: every index runs exactly once in grain-aligned ranges,
 * ranges really run on several threads, a loop started from inside a loop
 * (or while another thread's loop holds the workers) runs on its caller,
 * a forked child's loops do not wait for workers it does not have,
 * and large elementwise work (a fused group; single ops, with and without
 * scalar operands) gives the same bits on 1 and 4 threads, really split;
 * a site (rmi_parallel_for_site) stops splitting while its workers stall
 * and its caller waits, tries again at doubling intervals and splits again
 * once they keep up. Registered twice: as is, and with REMAT_NUM_THREADS=3 in the
 * environment, which the first case then checks.
 *
 * Bitwise assertions rest on contract 4 (docs/design-notes.md, "Bitwise
 * contracts"): the pool splits elementwise work into disjoint ranges.
 */
#include "test_util.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/pool.h"
#include "remat/remat.h"

static void test_pool_env_sets_default(void **state)
{
    (void)state;
    const char *e = getenv("REMAT_NUM_THREADS");
    if (e)
        assert_int_equal(remat_num_threads(), atoi(e));
    else
        assert_true(remat_num_threads() >= 1);
}

static void test_pool_num_threads_api(void **state)
{
    (void)state;
    assert_ok(remat_set_num_threads(3));
    assert_int_equal(remat_num_threads(), 3);
    assert_int_equal(remat_set_num_threads(-1), REMAT_ERR_ARG);
    assert_contains(remat_last_error(), "n = -1");
    assert_int_equal(remat_set_num_threads(257), REMAT_ERR_ARG);
    assert_int_equal(remat_num_threads(), 3);
    assert_ok(remat_set_num_threads(0));
    assert_true(remat_num_threads() >= 1);
}

typedef struct {
    int *hits;
    int64_t grain;
    atomic_int misaligned;
} cover_ctx;

static void cover(void *ctx, int64_t b, int64_t e)
{
    cover_ctx *c = ctx;
    if (b % c->grain)
        atomic_store(&c->misaligned, 1);
    for (int64_t i = b; i < e; i++)
        c->hits[i]++;
}

static void test_pool_covers_every_index_once(void **state)
{
    (void)state;
    const int64_t ns[] = {1, 7, 1000, 65537};
    const int64_t grains[] = {1, 64, 1000};
    const int threads[] = {1, 2, 4};
    for (size_t a = 0; a < 4; a++)
        for (size_t g = 0; g < 3; g++)
            for (size_t t = 0; t < 3; t++) {
                assert_ok(remat_set_num_threads(threads[t]));
                cover_ctx c = {.hits = xcalloc((size_t)ns[a], sizeof(int)), .grain = grains[g]};
                rmi_parallel_for(ns[a], grains[g], cover, &c);
                for (int64_t i = 0; i < ns[a]; i++)
                    if (c.hits[i] != 1)
                        fail_msg("n %lld grain %lld threads %d: index %lld ran %d times", (long long)ns[a],
                                 (long long)grains[g], threads[t], (long long)i, c.hits[i]);
                assert_false(atomic_load(&c.misaligned));
                free(c.hits);
            }
    assert_ok(remat_set_num_threads(0));
}

typedef struct {
    pthread_t who[8];
    int64_t nested_before;
} who_ctx;

static void record(void *ctx, int64_t b, int64_t e)
{
    who_ctx *c = ctx;
    struct timespec ts = {0, 5 * 1000 * 1000}; /* long enough for every worker to wake */
    nanosleep(&ts, NULL);
    for (int64_t i = b; i < e; i++)
        c->who[i] = pthread_self();
}

static void test_pool_runs_on_several_threads(void **state)
{
    (void)state;
    assert_ok(remat_set_num_threads(4));
    const int64_t before = rmi_pool_split_loops();
    who_ctx c;
    rmi_parallel_for(8, 1, record, &c);
    int distinct = 0;
    for (int i = 0; i < 8; i++) {
        int seen = 0;
        for (int j = 0; j < i; j++)
            seen |= pthread_equal(c.who[i], c.who[j]);
        distinct += !seen;
    }
    assert_true(distinct >= 2);
    assert_int_equal(rmi_pool_split_loops(), before + 1);
    /* one thread: everything on the caller, no loop split */
    assert_ok(remat_set_num_threads(1));
    rmi_parallel_for(8, 1, record, &c);
    for (int i = 0; i < 8; i++)
        assert_true(pthread_equal(c.who[i], pthread_self()));
    assert_int_equal(rmi_pool_split_loops(), before + 1);
    assert_ok(remat_set_num_threads(0));
}

static void nested(void *ctx, int64_t b, int64_t e)
{
    cover_ctx *c = ctx;
    for (int64_t i = b; i < e; i++) { /* a loop inside a loop runs on this thread, whole */
        cover_ctx inner = {.hits = c->hits + i * 100, .grain = 1};
        rmi_parallel_for(100, 1, cover, &inner);
    }
}

static void test_pool_nested_loop_runs_on_caller(void **state)
{
    (void)state;
    assert_ok(remat_set_num_threads(4));
    cover_ctx c = {.hits = xcalloc(8 * 100, sizeof(int)), .grain = 1};
    rmi_parallel_for(8, 1, nested, &c);
    for (int i = 0; i < 800; i++)
        assert_int_equal(c.hits[i], 1);
    free(c.hits);
    assert_ok(remat_set_num_threads(0));
}

/* A child of fork() has none of the parent's workers; its loops must not
 * wait for them (pthread_atfork in pool.c). The child gets 10 s. */
static void test_pool_usable_after_fork(void **state)
{
    (void)state;
    assert_ok(remat_set_num_threads(4));
    who_ctx c;
    rmi_parallel_for(8, 1, record, &c); /* the parent's workers are running */
    const pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        cover_ctx k = {.hits = calloc(64, sizeof(int)), .grain = 1};
        rmi_parallel_for(8, 1, record, &c);
        rmi_parallel_for(64, 4, cover, &k);
        int ok = k.hits != NULL;
        for (int i = 0; ok && i < 64; i++)
            ok = k.hits[i] == 1;
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    pid_t done = 0;
    for (int t = 0; t < 1000 && (done = waitpid(pid, &status, WNOHANG)) == 0; t++) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    if (done == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        fail_msg("a parallel loop in a forked child did not finish in 10 s");
    }
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_ok(remat_set_num_threads(0));
}

/* y = exp(sin(x) * x + 0.5) + x * (-1/3): one fused group of 200000 elements */
static void run_group(int threads, double *y, const double *x, int64_t n)
{
    remat_fn *f = remat_fn_new("group");
    remat_val xv = remat_arg(f, "x", REMAT_F64, 1, DIMS(n));
    remat_val t = remat_add_scalar(f, remat_mul(f, remat_sin(f, xv), xv), 0.5);
    remat_fn_output(f, remat_add(f, remat_exp(f, t), remat_mul_scalar(f, xv, -1.0 / 3)));
    assert_fn_ok(f);
    remat_program *p = compile_ok(f);
    remat_tensor in = remat_tensor_f64((double *)x, 1, DIMS(n)), out = remat_tensor_f64(y, 1, DIMS(n));
    assert_ok(remat_set_num_threads(threads));
    assert_ok(remat_run(p, 1, &in, 1, &out, NULL));
    remat_program_free(p);
    remat_fn_free(f);
}

static void test_pool_fused_group_bitwise(void **state)
{
    (void)state;
    enum { N = 200000 };
    double *x = xmalloc(sizeof *x * N), *y1 = xmalloc(sizeof *y1 * N), *y4 = xmalloc(sizeof *y4 * N);
    for (int i = 0; i < N; i++)
        x[i] = urand(-3, 3);
    run_group(1, y1, x, N);
    const int64_t before = rmi_pool_split_loops();
    run_group(4, y4, x, N);
    assert_true(rmi_pool_split_loops() > before); /* really split */
    assert_memory_equal(y1, y4, sizeof *y1 * N);
    free(x), free(y1), free(y4);
    assert_ok(remat_set_num_threads(0));
}

/* single elementwise ops (no fusion partner): a unary op, a binary op with
 * a scalar operand, a binary op of two arrays, a select with a scalar branch */
static remat_fn *single_op(int which, int64_t n)
{
    remat_fn *f = remat_fn_new("single");
    remat_val x = remat_arg(f, "x", REMAT_F64, 1, DIMS(n)), y = remat_arg(f, "y", REMAT_F64, 1, DIMS(n));
    remat_val r;
    switch (which) {
    case 0: r = remat_sin(f, x); break;
    case 1: r = remat_mul_scalar(f, x, 3.0); break;
    case 2: r = remat_add(f, x, y); break;
    default: r = remat_select(f, remat_gt(f, x, y), x, remat_mul_scalar(f, y, 0.0)); break;
    }
    remat_fn_output(f, r);
    remat_fn_output(f, remat_neg(f, y)); /* keeps y an argument of every case */
    assert_fn_ok(f);
    return f;
}

static void test_pool_single_ops_bitwise(void **state)
{
    (void)state;
    enum { N = 100000 };
    double *x = xmalloc(sizeof *x * N), *y = xmalloc(sizeof *y * N);
    double *o1 = xmalloc(sizeof *o1 * 2 * N), *o4 = xmalloc(sizeof *o4 * 2 * N);
    for (int i = 0; i < N; i++)
        x[i] = urand(-3, 3), y[i] = urand(-3, 3);
    remat_tensor in[2] = {remat_tensor_f64(x, 1, DIMS(N)), remat_tensor_f64(y, 1, DIMS(N))};
    for (int which = 0; which < 4; which++) {
        remat_fn *f = single_op(which, N);
        remat_program *p = compile_ok(f);
        remat_tensor out1[2] = {remat_tensor_f64(o1, 1, DIMS(N)), remat_tensor_f64(o1 + N, 1, DIMS(N))};
        remat_tensor out4[2] = {remat_tensor_f64(o4, 1, DIMS(N)), remat_tensor_f64(o4 + N, 1, DIMS(N))};
        assert_ok(remat_set_num_threads(1));
        assert_ok(remat_run(p, 2, in, 2, out1, NULL));
        const int64_t before = rmi_pool_split_loops();
        assert_ok(remat_set_num_threads(4));
        assert_ok(remat_run(p, 2, in, 2, out4, NULL));
        if (rmi_pool_split_loops() < before + 2) /* the op and the negation, each split */
            fail_msg("case %d: %lld loops split, expected 2", which, (long long)(rmi_pool_split_loops() - before));
        assert_memory_equal(o1, o4, sizeof *o1 * 2 * N);
        remat_program_free(p);
        remat_fn_free(f);
    }
    free(x), free(y), free(o1), free(o4);
    assert_ok(remat_set_num_threads(0));
}

/* ---- sites: splitting stops while workers keep the caller waiting ---- */

typedef struct {
    pthread_t caller;
    int64_t n;
    atomic_int worker_in; /* a worker has a range of the current loop */
    atomic_int on_caller; /* ranges the caller ran */
    bool slow;            /* the workers' ranges sleep 100 ms, as a worker that lost its core */
} site_ctx;

static int64_t mono_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void busy(int64_t ns)
{
    for (const int64_t end = mono_ns() + ns; mono_ns() < end;)
        ;
}

/* A split loop's caller first waits (10 s at most) for a worker to take a
 * range, so that the loop really runs on two threads however busy the
 * machine; a loop on one thread is one range [0, n). */
static void site_range(void *ctx, int64_t b, int64_t e)
{
    site_ctx *c = ctx;
    if (!pthread_equal(pthread_self(), c->caller)) {
        atomic_store(&c->worker_in, 1);
        if (c->slow)
            nanosleep(&(struct timespec){.tv_nsec = 100000000}, NULL);
        else
            busy(50000);
        return;
    }
    atomic_fetch_add(&c->on_caller, 1);
    if (e - b < c->n)
        for (const int64_t end = mono_ns() + 10000000000; !atomic_load(&c->worker_in) && mono_ns() < end;)
            ;
    busy(50000);
}

/* one loop of the site; true when it ran on one thread */
static bool site_loop(remat_pool_site *site, site_ctx *c)
{
    atomic_store(&c->worker_in, 0);
    atomic_store(&c->on_caller, 0);
    const int64_t serial = rmi_pool_site_serial_loops();
    rmi_parallel_for_site(site, c->n, 1, site_range, c);
    const bool one = rmi_pool_site_serial_loops() == serial + 1;
    if (one)
        assert_int_equal(atomic_load(&c->on_caller), 1); /* one range, [0, n), on the caller */
    return one;
}

static void test_pool_site_stops_splitting_while_workers_stall(void **state)
{
    (void)state;
    assert_ok(remat_set_num_threads(2));
    remat_pool_site site = {0};
    site_ctx c = {.caller = pthread_self(), .n = 8, .slow = true};
    /* a new site splits; the third loop in a row that mostly waited is the last */
    for (int i = 0; i < 3; i++)
        assert_false(site_loop(&site, &c));
    int ones = 0;
    while (site_loop(&site, &c)) /* one thread, then a split loop to try (slow again) */
        ones++;
    assert_int_equal(ones, 15);
    ones = 0;
    while (site_loop(&site, &c)) /* it waited: the next try is twice as far */
        ones++;
    assert_int_equal(ones, 31);
    /* the workers keep up again: the next try that does not wait brings the
     * splitting back (tries until one finds the machine free; a few at most) */
    c.slow = false;
    int tries = 0;
    for (int k = 0; k < 4000 && tries < 10; k++) {
        if (site_loop(&site, &c))
            continue;
        tries++;
        if (!site_loop(&site, &c))
            break; /* splitting again */
    }
    assert_true(tries >= 1 && tries < 10);
    assert_ok(remat_set_num_threads(0));
}

/* no site, or one thread: nothing learnt, every loop as before */
static void test_pool_site_null_and_one_thread(void **state)
{
    (void)state;
    site_ctx c = {.caller = pthread_self(), .n = 8, .slow = false};
    assert_ok(remat_set_num_threads(1));
    remat_pool_site site = {0};
    const int64_t split = rmi_pool_split_loops(), serial = rmi_pool_site_serial_loops();
    for (int i = 0; i < 5; i++)
        rmi_parallel_for_site(&site, c.n, 1, site_range, &c);
    assert_int_equal(rmi_pool_split_loops(), split);
    assert_int_equal(rmi_pool_site_serial_loops(), serial);
    assert_int_equal(atomic_load(&site.every), 0);
    assert_ok(remat_set_num_threads(2));
    c.slow = true;
    for (int i = 0; i < 5; i++) { /* a NULL site splits, however long it waits */
        atomic_store(&c.worker_in, 0);
        rmi_parallel_for_site(NULL, c.n, 1, site_range, &c);
    }
    assert_int_equal(rmi_pool_split_loops(), split + 5);
    assert_int_equal(rmi_pool_site_serial_loops(), serial);
    assert_ok(remat_set_num_threads(0));
}

int main(void)
{
    rng_seed(0x9e3779b97f4a7c15ull);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pool_env_sets_default),
        cmocka_unit_test(test_pool_num_threads_api),
        cmocka_unit_test(test_pool_covers_every_index_once),
        cmocka_unit_test(test_pool_runs_on_several_threads),
        cmocka_unit_test(test_pool_nested_loop_runs_on_caller),
        cmocka_unit_test(test_pool_usable_after_fork),
        cmocka_unit_test(test_pool_fused_group_bitwise),
        cmocka_unit_test(test_pool_single_ops_bitwise),
        cmocka_unit_test(test_pool_site_stops_splitting_while_workers_stall),
        cmocka_unit_test(test_pool_site_null_and_one_thread),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* pool.c — the worker threads of core/pool.h and the thread count of remat/exec.h. */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/config.h"
#include "core/error.h"
#include "core/pool.h"
#include "remat/exec.h"

enum { MAX_THREADS = 256 };

#define SPIN_IDLE_NS 200000 /* a worker, between loops */
#define SPIN_DONE_NS 100000 /* the caller, for workers in their last range */

/* One loop at a time (job_lock, taken with trylock: a second caller runs its
 * loop itself). The caller publishes the loop under `lock`, bumps `gen` and
 * wakes the workers that sleep; a worker w < want that sees `gen` move while
 * the loop is still open joins it (active++), claims ranges until none are
 * left and checks out (active--). The caller claims ranges too; when none
 * are left it closes the loop and waits only for the workers that joined, so
 * none still reads the loop when the caller returns, and a worker the OS has
 * not scheduled yet (a busy machine) costs the caller nothing: it wakes to a
 * closed loop.
 *
 * Waking a thread parked on a condition variable takes 50-100 us on this
 * VM, as long as a lane block, so both sides spin briefly before they park:
 * a worker watches `gen` for SPIN_IDLE_NS after its last loop (a scan's
 * runs come back to back: a batched gradient's forward pass, then its
 * blocks), and the caller watches `active` for SPIN_DONE_NS when a worker
 * is still in its last range. Only sleepers are signalled. A spinner
 * yields its CPU at every clock check (a microsecond or two): on a busy
 * machine the scheduler may put a woken worker on its caller's CPU (the
 * other runs someone else's work), and a thread spinning there for the
 * other took half of that CPU away from the work. Beside a parallel build
 * at nice 19, the 2-thread batch gradient (bench_scan "threads") ran at
 * 0.3-0.6x of its one-thread speed with pure spinning, 0.9-1.5x yielding. */
static struct {
    pthread_mutex_t job_lock, lock;
    pthread_cond_t wake, done;
    pthread_once_t once;
    atomic_int threads; /* the count a loop may use, caller included */
    int started;        /* worker threads running */
    int sleepers;       /* workers parked on `wake` */
    int caller_sleeps;  /* the caller parked on `done` */
    _Atomic uint64_t gen; /* written under `lock`; spinning workers read it without */
    atomic_int active;  /* workers in the current loop, not yet checked out (written under `lock`) */
    int want;           /* workers the current loop may use */
    int closed;         /* the current loop takes no more workers */
    remat_pool_fn fn;
    void *ctx;
    int64_t n, chunk, n_chunks;
    atomic_llong next;  /* the next range to claim */
    atomic_llong split_loops;
} pool = {
    .job_lock = PTHREAD_MUTEX_INITIALIZER,
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .wake = PTHREAD_COND_INITIALIZER,
    .done = PTHREAD_COND_INITIALIZER,
    .once = PTHREAD_ONCE_INIT,
};

/* A child of fork() has none of the workers: start afresh (its first loop
 * starts new ones). The parent holds `lock` across fork so no worker or
 * caller is in the middle of publishing a loop. */
static void fork_prepare(void) { pthread_mutex_lock(&pool.lock); }
static void fork_parent(void) { pthread_mutex_unlock(&pool.lock); }
static void fork_child(void)
{
    pthread_mutex_init(&pool.lock, NULL);
    pthread_mutex_init(&pool.job_lock, NULL);
    pthread_cond_init(&pool.wake, NULL);
    pthread_cond_init(&pool.done, NULL);
    pool.started = 0, pool.sleepers = 0, pool.caller_sleeps = 0, pool.want = 0, pool.closed = 1;
    atomic_store(&pool.active, 0);
}

static int cpus_available(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
    return 1;
}

/* REMAT_NUM_THREADS when it is a count in [1, MAX_THREADS] (core/config.h);
 * otherwise the CPUs */
static void init_threads(void)
{
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    int n = cpus_available();
    const int e = rmi_env_num_threads(MAX_THREADS);
    if (e > 0)
        n = e;
    atomic_store(&pool.threads, n < MAX_THREADS ? n : MAX_THREADS);
}

int remat_num_threads(void)
{
    pthread_once(&pool.once, init_threads);
    return atomic_load(&pool.threads);
}

remat_status remat_set_num_threads(int n)
{
    if (n < 0 || n > MAX_THREADS)
        return rmi_error(REMAT_ERR_ARG, "remat_set_num_threads: n = %d is not in 0..%d", n, MAX_THREADS);
    pthread_once(&pool.once, init_threads);
    atomic_store(&pool.threads, n == 0 ? cpus_available() : n);
    return REMAT_OK;
}

int64_t rmi_pool_split_loops(void) { return atomic_load(&pool.split_loops); }

static void run_ranges(remat_pool_fn fn, void *ctx, int64_t n, int64_t chunk, int64_t n_chunks)
{
    for (int64_t k; (k = atomic_fetch_add(&pool.next, 1)) < n_chunks;) {
        const int64_t b = k * chunk, e = b + chunk < n ? b + chunk : n;
        fn(ctx, b, e);
    }
}

static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
}

static bool loop_posted(uint64_t seen) { return atomic_load_explicit(&pool.gen, memory_order_acquire) != seen; }
static bool workers_out(uint64_t unused) { return (void)unused, atomic_load_explicit(&pool.active, memory_order_acquire) == 0; }

/* Spins up to ns until ready(arg); true when it came. Nothing is held while
 * spinning, and only atomics are read. */
static bool spin(bool (*ready)(uint64_t), uint64_t arg, int64_t ns)
{
    const int64_t end = now_ns() + ns;
    for (int i = 0;; i++) {
        if (ready(arg))
            return true;
        if ((i & 63) == 63) {
            if (now_ns() >= end)
                return false;
            sched_yield();
        }
        cpu_relax();
    }
}

static void *worker(void *arg)
{
    const int id = (int)(intptr_t)arg;
    uint64_t seen = 0;
    for (;;) {
        spin(loop_posted, seen, SPIN_IDLE_NS);
        pthread_mutex_lock(&pool.lock);
        while (atomic_load_explicit(&pool.gen, memory_order_relaxed) == seen) {
            pool.sleepers++;
            pthread_cond_wait(&pool.wake, &pool.lock);
            pool.sleepers--;
        }
        seen = atomic_load_explicit(&pool.gen, memory_order_relaxed);
        if (id >= pool.want || pool.closed) { /* not needed, or too late for this loop */
            pthread_mutex_unlock(&pool.lock);
            continue;
        }
        atomic_fetch_add_explicit(&pool.active, 1, memory_order_relaxed);
        remat_pool_fn fn = pool.fn;
        void *ctx = pool.ctx;
        const int64_t n = pool.n, chunk = pool.chunk, n_chunks = pool.n_chunks;
        pthread_mutex_unlock(&pool.lock);
        run_ranges(fn, ctx, n, chunk, n_chunks);
        pthread_mutex_lock(&pool.lock);
        if (atomic_fetch_sub_explicit(&pool.active, 1, memory_order_release) == 1 && pool.caller_sleeps)
            pthread_cond_signal(&pool.done);
        pthread_mutex_unlock(&pool.lock);
    }
    return NULL;
}

/* under pool.lock: workers 0..want-1 running (fewer when a thread cannot be made) */
static int start_workers(int want)
{
    /* A worker takes no SIGINT, SIGTERM or SIGHUP sent to the process: the
     * program's threads do, and one compiling a loop holds them until its
     * temporary files are gone (backend/cpu/jit_tmp.h). A thread starts with
     * its creator's mask. */
    sigset_t quiet, mask;
    sigemptyset(&quiet);
    sigaddset(&quiet, SIGINT), sigaddset(&quiet, SIGTERM), sigaddset(&quiet, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &quiet, &mask);
    while (pool.started < want) {
        pthread_t t;
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        const int rc = pthread_create(&t, &a, worker, (void *)(intptr_t)pool.started);
        pthread_attr_destroy(&a);
        if (rc != 0)
            break;
        pool.started++;
    }
    pthread_sigmask(SIG_SETMASK, &mask, NULL);
    return pool.started < want ? pool.started : want;
}

/* The loop on the workers and the caller; false: not split (one thread
 * wanted, one range, or another loop holds the workers), fn ran on [0, n)
 * here. */
static bool split_loop(int64_t n, int64_t grain, remat_pool_fn fn, void *ctx, double *wait_share)
{
    const int threads = remat_num_threads();
    int64_t n_chunks = (n + grain - 1) / grain;
    if (threads <= 1 || n_chunks <= 1 || pthread_mutex_trylock(&pool.job_lock) != 0) {
        fn(ctx, 0, n);
        return false;
    }
    /* up to 4 ranges per thread, each a whole number of grains: a thread
     * the OS preempts mid-range then holds up at most a quarter of its share,
     * which the others take over */
    if (n_chunks > 4 * (int64_t)threads)
        n_chunks = 4 * (int64_t)threads;
    const int64_t grains = (n + grain - 1) / grain, chunk = (grains + n_chunks - 1) / n_chunks * grain;
    n_chunks = (n + chunk - 1) / chunk;

    const int64_t t0 = wait_share ? now_ns() : 0; /* the loop from its start (a woken worker may take the caller's CPU) */
    pthread_mutex_lock(&pool.lock);
    const int want = start_workers((int)(n_chunks - 1 < threads - 1 ? n_chunks - 1 : threads - 1));
    pool.fn = fn, pool.ctx = ctx, pool.n = n, pool.chunk = chunk, pool.n_chunks = n_chunks;
    atomic_store(&pool.next, 0);
    pool.want = want, pool.closed = 0;
    atomic_fetch_add_explicit(&pool.gen, 1, memory_order_release);
    if (pool.sleepers > 0)
        pthread_cond_broadcast(&pool.wake);
    pthread_mutex_unlock(&pool.lock);

    run_ranges(fn, ctx, n, chunk, n_chunks);
    const int64_t t1 = wait_share ? now_ns() : 0;

    pthread_mutex_lock(&pool.lock);
    pool.closed = 1;
    pthread_mutex_unlock(&pool.lock);
    if (!spin(workers_out, 0, SPIN_DONE_NS)) {
        pthread_mutex_lock(&pool.lock);
        pool.caller_sleeps = 1;
        while (atomic_load_explicit(&pool.active, memory_order_acquire) > 0)
            pthread_cond_wait(&pool.done, &pool.lock);
        pool.caller_sleeps = 0;
        pthread_mutex_unlock(&pool.lock);
    }
    if (wait_share) {
        const int64_t t2 = now_ns();
        *wait_share = t2 > t0 ? (double)(t2 - t1) / (double)(t2 - t0) : 0.0;
    }
    if (want > 0)
        atomic_fetch_add(&pool.split_loops, 1);
    pthread_mutex_unlock(&pool.job_lock);
    return true;
}

void rmi_parallel_for(int64_t n, int64_t grain, remat_pool_fn fn, void *ctx)
{
    if (n > 0)
        split_loop(n, grain < 1 ? 1 : grain, fn, ctx, NULL);
}

/* ---- sites: split only where it pays (pool.h) ----
 *
 * A split loop's caller times its own ranges and then its wait for the
 * workers still in theirs. On a machine with a core for every thread the
 * wait is a range's tail, a small share of the loop; when a worker lost its
 * core in the middle of a range (another process's time slice), the caller
 * waits for that slice and the wait is most of the loop: more than the
 * caller's own work means one thread would have been about as fast. A site
 * whose recent split loops (a moving average, weight 1/4: two or three in
 * a row) waited that long runs its loops on one thread, and splits one of
 * them every `every` loops to see whether the machine is free again: back
 * to splitting when that loop did not wait, else every is doubled (16 up to
 * 256, so a busy machine pays for a slow split loop rarely). One thread
 * costs the quiet machine nothing: it never waits that long. */
#define SITE_WAIT 0.5
#define SITE_WEIGHT 0.25f
#define SITE_PROBE_FIRST 16u
#define SITE_PROBE_MAX 256u
static atomic_llong serial_loops;

int64_t rmi_pool_site_serial_loops(void) { return atomic_load(&serial_loops); }

static bool site_splits(remat_pool_site *s)
{
    const unsigned every = atomic_load_explicit(&s->every, memory_order_relaxed);
    if (every == 0)
        return true;
    return atomic_fetch_add_explicit(&s->since, 1, memory_order_relaxed) + 1 >= every;
}

static void site_learn(remat_pool_site *s, double wait_share)
{
    const float waited = wait_share > SITE_WAIT ? 1.0f : 0.0f;
    const unsigned every = atomic_load_explicit(&s->every, memory_order_relaxed);
    if (every == 0) { /* splitting: one thread once the waits pile up */
        float avg = atomic_load_explicit(&s->waited, memory_order_relaxed);
        avg += (waited - avg) * SITE_WEIGHT;
        atomic_store_explicit(&s->waited, avg, memory_order_relaxed);
        if (avg > (float)SITE_WAIT) {
            atomic_store_explicit(&s->since, 0, memory_order_relaxed);
            atomic_store_explicit(&s->every, SITE_PROBE_FIRST, memory_order_relaxed);
        }
        return;
    }
    atomic_store_explicit(&s->since, 0, memory_order_relaxed); /* a probe */
    if (waited == 0.0f) {
        atomic_store_explicit(&s->waited, 0.0f, memory_order_relaxed);
        atomic_store_explicit(&s->every, 0u, memory_order_relaxed);
    } else {
        atomic_store_explicit(&s->every, every < SITE_PROBE_MAX ? 2 * every : SITE_PROBE_MAX, memory_order_relaxed);
    }
}

void rmi_parallel_for_site(remat_pool_site *site, int64_t n, int64_t grain, remat_pool_fn fn, void *ctx)
{
    if (n <= 0)
        return;
    grain = grain < 1 ? 1 : grain;
    if (!site || remat_num_threads() <= 1 || n <= grain) { /* nothing to learn */
        split_loop(n, grain, fn, ctx, NULL);
        return;
    }
    if (!site_splits(site)) {
        fn(ctx, 0, n);
        atomic_fetch_add_explicit(&serial_loops, 1, memory_order_relaxed);
        return;
    }
    double wait_share;
    if (split_loop(n, grain, fn, ctx, &wait_share))
        site_learn(site, wait_share);
}

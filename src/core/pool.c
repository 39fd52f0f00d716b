/* pool.c — the worker threads of core/pool.h and the thread count of remat/exec.h. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
 * is still in its last range. Only sleepers are signalled. */
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

/* REMAT_NUM_THREADS when it is a count in [1, MAX_THREADS]; otherwise the
 * CPUs (a bad value is named once on stderr: it comes from the environment,
 * not from a call that could return a status) */
static void init_threads(void)
{
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    int n = cpus_available();
    const char *e = getenv("REMAT_NUM_THREADS");
    if (e && *e) {
        char *end;
        long v = strtol(e, &end, 10);
        if (*end == '\0' && v >= 1 && v <= MAX_THREADS)
            n = (int)v;
        else
            fprintf(stderr, "remat: REMAT_NUM_THREADS=%s is not a thread count in 1..%d; using %d\n", e, MAX_THREADS,
                    n);
    }
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
        return remat_error(REMAT_ERR_ARG, "remat_set_num_threads: n = %d is not in 0..%d", n, MAX_THREADS);
    pthread_once(&pool.once, init_threads);
    atomic_store(&pool.threads, n == 0 ? cpus_available() : n);
    return REMAT_OK;
}

int64_t remat_pool_split_loops(void) { return atomic_load(&pool.split_loops); }

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
        if ((i & 63) == 63 && now_ns() >= end)
            return false;
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
    return pool.started < want ? pool.started : want;
}

void remat_parallel_for(int64_t n, int64_t grain, remat_pool_fn fn, void *ctx)
{
    if (n <= 0)
        return;
    if (grain < 1)
        grain = 1;
    const int threads = remat_num_threads();
    int64_t n_chunks = (n + grain - 1) / grain;
    if (threads <= 1 || n_chunks <= 1 || pthread_mutex_trylock(&pool.job_lock) != 0) {
        fn(ctx, 0, n);
        return;
    }
    /* up to 4 ranges per thread, each a whole number of grains: a thread
     * the OS preempts mid-range then holds up at most a quarter of its share,
     * which the others take over */
    if (n_chunks > 4 * (int64_t)threads)
        n_chunks = 4 * (int64_t)threads;
    const int64_t grains = (n + grain - 1) / grain, chunk = (grains + n_chunks - 1) / n_chunks * grain;
    n_chunks = (n + chunk - 1) / chunk;

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
    if (want > 0)
        atomic_fetch_add(&pool.split_loops, 1);
    pthread_mutex_unlock(&pool.job_lock);
}

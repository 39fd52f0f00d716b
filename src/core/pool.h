/*
 * pool.h (internal) — one process-wide pool of worker threads for splitting
 * a loop over [0, n) into disjoint ranges.
 *
 *   static void add_range(void *ctx, int64_t begin, int64_t end) { ... }
 *   rmi_parallel_for(n, 16384, add_range, &args);   // returns when all ran
 *
 * The ranges are [k*chunk, min((k+1)*chunk, n)) with chunk a multiple of
 * grain (the last may be shorter), so a caller that aligns grain to its own
 * blocks sees whole blocks. Each range runs once, on the caller or a worker;
 * which one is not fixed, so fn must give the same result wherever it runs
 * (elementwise work; never a reduction split across ranges, which would
 * change the summation order).
 *
 * Threads: remat_num_threads() of them at most, the caller included
 * (REMAT_NUM_THREADS, else the CPUs this process may run on;
 * remat_set_num_threads in remat/exec.h). One loop uses the workers at a
 * time: a call made while another thread's loop holds them, or from inside
 * fn, runs all of its ranges on the calling thread. Workers start on the
 * first loop that needs them and live until the process exits; the caller
 * claims ranges too and never waits for a worker that has not joined its
 * loop, so a loop takes at most about its one-thread time on a machine too
 * busy to run the workers. A worker that joined and then lost its core in
 * the middle of a range does hold its caller up, for the other process's
 * time slice: a site (below) stops splitting where that keeps happening.
 * Workers block SIGINT, SIGTERM and SIGHUP: a signal sent to the process
 * goes to the program's threads (backend/cpu/jit_tmp.h holds them while
 * libgccjit compiles).
 */
#ifndef REMAT_CORE_POOL_H
#define REMAT_CORE_POOL_H

#include <stdatomic.h>
#include <stdint.h>

typedef void (*remat_pool_fn)(void *ctx, int64_t begin, int64_t end);

void rmi_parallel_for(int64_t n, int64_t grain, remat_pool_fn fn, void *ctx);

/* Whether splitting pays at one call site, learnt from its split loops
 * (zero-initialise; one per site whose loops are alike, such as a scan
 * node's lane runs; several threads may share one). A site whose split
 * loops keep waiting for a worker that lost its core (the caller waited
 * longer than it worked, two or three loops in a row) runs its loops on one
 * thread, and splits one now and then to see whether the machine is free
 * again (pool.c). Which way a loop runs changes no result (fn's ranges are
 * independent). */
typedef struct {
    _Atomic float waited;  /* moving average: split loops whose caller mostly waited */
    atomic_uint every;     /* 0: splitting; else one thread, splitting every `every`-th loop */
    atomic_uint since;     /* loops on one thread since the last split one */
} remat_pool_site;

/* rmi_parallel_for, split or on one thread as site has learnt (a NULL
 * site always splits) */
void rmi_parallel_for_site(remat_pool_site *site, int64_t n, int64_t grain, remat_pool_fn fn, void *ctx);

/* Loops run on one thread by a site's choice since the process started (tests). */
int64_t rmi_pool_site_serial_loops(void);

/* Loops split into ranges and offered to the workers since the process
 * started (tests check that a large kernel really was split; whether a
 * worker took a range depends on the OS scheduling it in time). */
int64_t rmi_pool_split_loops(void);

#endif

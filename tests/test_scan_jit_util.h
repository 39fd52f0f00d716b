/*
 * test_scan_jit_util.h — what the compiled-loop suites share:
 * test_scan_jit.c (the bodies the loops translate, value by value) and
 * test_scan_jit_lanes.c (how the lane loops run: counting, streamed plans,
 * lane blocks and ranges on the pool). One run of a program with its loop
 * bodies compiled or interpreted, the schedules the loops are checked
 * under, and the PFR Euler step with a loss over a scan of it.
 *
 *   remat_fn *body = euler_body(REMAT_F64, 4, 1);                 // y (3,4), k1 (4), k2 (4)
 *   remat_scan_options o = opts(jit_schedules[0], 0, NULL);
 *   remat_fn *f = scan_loss(body, 13, 3, adt, sh, 1, 0, &o, 0);
 *   result r;
 *   run_mode(f, 3, in, 1, &r);                                     // compiled; 0: interpreted
 *   outs_free(&r.o);
 */
#ifndef REMAT_TEST_SCAN_JIT_UTIL_H
#define REMAT_TEST_SCAN_JIT_UTIL_H

#include "test_scan_util.h"

typedef struct {
    outs_t o;
    remat_stats st;
    remat_memory_plan plan;
} result;

/* g compiled with its loop bodies compiled (jit) or interpreted
 * (REMAT_NO_JIT=1), run on in; the arena measured must be the planned one */
void run_mode(const remat_fn *g, int n_in, const remat_tensor *in, int jit, result *r);

/* the schedules every compiled-loop grid runs through */
extern const char *const jit_schedules[];
extern const int n_jit_schedules;
#define N_JIT_SCHED n_jit_schedules

/* scan options of a parsed schedule (failing the test when it does not parse) */
remat_scan_options opts(const char *sched, int reverse, const remat_policy *pol);

/* y' = y + h [-k1 A, k1 A - k2 B, k2 B]; y (3) with scalar k, (3,m) or (m,3) with k (m) */
remat_fn *euler_body(remat_dtype dt, int64_t m, int rows);

/* loss = sum(sin(carry_final)) (+ the other carries', + sum(cos(ys)) of n_ys
 * stacked outputs) of the scan of body over the n_args arguments: n_carry
 * carries, n_xs scanned, the rest constants */
remat_fn *scan_loss(const remat_fn *body, int64_t len, int n_args, const remat_dtype *dt,
                    const remat_shape *shapes, int n_carry, int n_xs, const remat_scan_options *o, int n_ys);

#endif

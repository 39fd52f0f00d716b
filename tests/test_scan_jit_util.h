/*
 * test_scan_jit_util.h — what the compiled-loop suites share:
 * test_scan_jit.c (the bodies the loops translate, value by value) and
 * test_scan_jit_lanes.c (how the lane loops run: counting, streamed plans,
 * lane blocks and ranges on the pool). One run of a program with its loop
 * bodies compiled or interpreted, the schedules the loops are checked
 * under, and the PFR Euler step with a loss over a scan of it.
 *
 *   euler_case c = euler_case_new(REMAT_F64, 4, 1);       // y (3,4), k1 (4), k2 (4)
 *   remat_scan_options o = opts(jit_schedules[0], 0, NULL);
 *   remat_fn *f = euler_loss(&c, &o, 13);
 *   result r;
 *   run_mode(f, 3, c.in, 1, &r);                           // compiled; 0: interpreted
 *   outs_free(&r.o);
 *   remat_fn_free(f);
 *   euler_case_free(&c);
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

/* The Euler step over m lanes, y (3,m) when rows else (m,3) (m = 0: y (3)
 * and scalar k), with its arguments drawn in order: y in [0, 1), k1 in
 * [0.5, 1.5), k2 in [0.2, 0.8), all of dtype dt */
typedef struct {
    remat_fn *body;
    remat_tensor in[3];
} euler_case;
euler_case euler_case_new(remat_dtype dt, int64_t m, int rows);
/* scan_loss of the case's body over its arguments (one carry), len steps */
remat_fn *euler_loss(const euler_case *c, const remat_scan_options *o, int64_t len);
void euler_case_free(euler_case *c);

#endif

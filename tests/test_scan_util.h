/*
 * test_scan_util.h — what the test_scan_*.c files share: caller-owned
 * tensors of either float dtype, differentiating and running in one call,
 * comparing two runs' outputs (to a tolerance or bit for bit), jnp.stack, and
 * the list of schedules every scan grid runs through.
 *
 *   remat_tensor in[2] = {t_rand(REMAT_F64, 1, DIMS(4), -1, 1), t_new(REMAT_F64, 0, NULL)};
 *   outs_t g;
 *   run_ad(AD_GRAD, f, 2, in, &g, NULL, NULL);
 *   for (int si = 0; si < N_SCHEDULES; si++) ... schedules[si] ...
 *   outs_free(&g);
 *   t_free_all(2, in);
 */
#ifndef REMAT_TEST_SCAN_UTIL_H
#define REMAT_TEST_SCAN_UTIL_H

#include "test_util.h"

/* b rounded up to the 16-byte alignment of the arena */
size_t align16(size_t b);

/* ---- caller-owned tensors (F64 or F32), zeroed; t_free_all frees them ---- */
remat_tensor t_new(remat_dtype dt, int rank, const int64_t *dims);
int64_t t_numel(const remat_tensor *t);
double t_get(const remat_tensor *t, int64_t i);
void t_set(remat_tensor *t, int64_t i, double v);
/* uniform in [lo, hi) from the test stream */
remat_tensor t_rand(remat_dtype dt, int rank, const int64_t *dims, double lo, double hi);
void t_free_all(int n, remat_tensor *t);

/* ---- compile and run ---- */

/* differentiate f (all arguments), run, free */
void run_ad(ad_kind k, const remat_fn *f, int n_in, const remat_tensor *in, outs_t *o, remat_stats *st,
            remat_memory_plan *plan);

#define scan_ok(...)                                                                                        \
    do {                                                                                                    \
        if (remat_scan(__VA_ARGS__) != REMAT_OK)                                                            \
            fail_msg("scan failed: %s", remat_last_error());                                                \
    } while (0)

/* outputs first .. first + count - 1: |got - want| <= rtol * max|want| of
 * that output */
void check_outs_close(const char *what, int first, int count, const outs_t *got, const outs_t *want,
                      double rtol);
void check_outs_bitwise(const char *what, const outs_t *got, const outs_t *want);

/* (n, dims...) from n values of one shape: jnp.stack */
remat_val stack(remat_fn *f, int64_t n, const remat_val *v);

/* The schedules of the brief, every one of them in every grid. */
extern const char *const schedules[];
extern const int n_schedules;
#define N_SCHEDULES n_schedules

/* One step's tape: the body's residuals (of its checkpoint under pol, when
 * given), each 16-aligned, except the x_t and const arguments (past the first
 * n_carry), which the runtime reads from xs / the consts. */
size_t tape_bytes_of(const remat_fn *body, const remat_policy *pol, int n_carry);

#endif

/*
 * test_ad_util.h — what the test_ad_*.c files share: a custom op (a fused
 * x * sin(y) that counts its calls), residual sets as sortable strings
 * "kind dtype[shape] detail", and seed 003's block network.
 *
 *   remat_val z = remat_custom(f, &xsin_op, 2, xy, REMAT_F64, s.rank, s.dims);
 *   sigset got;
 *   sigset_from_remat(&got, net, &bytes);
 *   sigset_free(&got);
 */
#ifndef REMAT_TEST_AD_UTIL_H
#define REMAT_TEST_AD_UTIL_H

#include "test_util.h"

/* ---- custom op: a fused x * sin(y) ---- */

typedef struct {
    int forward_calls, vjp_calls;
} xsin_ctx;

/* out = x * sin(y), elementwise, f32 or f64; counts into ctx (an xsin_ctx) */
void xsin_forward(int n_in, const remat_tensor *ins, remat_tensor *out, void *ctx);
/* the op with its VJP; its calls are counted in xsin_counts */
extern xsin_ctx xsin_counts;
extern const remat_custom_op xsin_op;

/* ---- residual sets ---- */

typedef struct {
    int n;
    char *s[64];
} sigset;

void sigset_add(sigset *set, const char *kind, const char *type, const char *detail);
void sigset_free(sigset *set);
/* remat's residuals of the VJP w.r.t. all arguments (as JAX's report);
 * bytes (if not NULL) gets their total */
void sigset_from_remat(sigset *set, const remat_fn *f, size_t *bytes);

/* ---- seed 003: block(x, w) = sin(sin(x @ w)); net = sum(block^3(x)) ---- */
remat_fn *block_fn(remat_dtype dt);
remat_fn *block_net(const remat_fn *blk, remat_dtype dt);

/* ---- forward mode (test_ad_jvp*.c) ---- */

/* x[i] uniform in [lo, hi], pushed out to |x[i]| >= avoid */
void fill_uniform(double *x, int64_t n, double lo, double hi, double avoid);
/* remat_jvp of f w.r.t. argnums, or the test fails with its message */
remat_fn *jvp_ok(const remat_fn *f, int n, const int *argnums);
double dot_n(const double *a, const double *b, int64_t n);
/* nodes of f with primitive op */
int count_op(const remat_fn *f, remat_op op);
/* (c0 f64[3], xs f64[20,3], k f64[3]) -> (c, ys): a scan of
 * step(c, x_t, k) = (c + 0.1 (sin(x_t) - k c), c * c), reversed or not */
remat_fn *jvp_scan_net(int reverse);

#endif

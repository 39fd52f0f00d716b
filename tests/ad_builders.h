/*
 * ad_builders.h — one-op (or short) graphs over a case's inputs x[0..],
 * shared by the op tests of both modes (test_ad_ops.c: reverse mode against
 * finite differences and JAX; test_ad_jvp.c: forward mode).
 */
#ifndef REMAT_TEST_AD_BUILDERS_H
#define REMAT_TEST_AD_BUILDERS_H

#include "remat/remat.h"

static inline remat_val ab_add(remat_fn *f, const remat_val *x) { return remat_add(f, x[0], x[1]); }
static inline remat_val ab_cos(remat_fn *f, const remat_val *x) { return remat_cos(f, x[0]); }
static inline remat_val ab_div(remat_fn *f, const remat_val *x) { return remat_div(f, x[0], x[1]); }
static inline remat_val ab_erf(remat_fn *f, const remat_val *x) { return remat_erf(f, x[0]); }
static inline remat_val ab_log1p(remat_fn *f, const remat_val *x) { return remat_log1p(f, x[0]); }
static inline remat_val ab_expm1(remat_fn *f, const remat_val *x) { return remat_expm1(f, x[0]); }
static inline remat_val ab_logistic(remat_fn *f, const remat_val *x) { return remat_logistic(f, x[0]); }
static inline remat_val ab_erf_inv(remat_fn *f, const remat_val *x) { return remat_erf_inv(f, x[0]); }
static inline remat_val ab_exp(remat_fn *f, const remat_val *x) { return remat_exp(f, x[0]); }
static inline remat_val ab_ipow0(remat_fn *f, const remat_val *x) { return remat_integer_pow(f, x[0], 0); }
static inline remat_val ab_ipow1(remat_fn *f, const remat_val *x) { return remat_integer_pow(f, x[0], 1); }
static inline remat_val ab_ipow2(remat_fn *f, const remat_val *x) { return remat_integer_pow(f, x[0], 2); }
static inline remat_val ab_ipow3(remat_fn *f, const remat_val *x) { return remat_integer_pow(f, x[0], 3); }
static inline remat_val ab_ipowm2(remat_fn *f, const remat_val *x) { return remat_integer_pow(f, x[0], -2); }
static inline remat_val ab_log(remat_fn *f, const remat_val *x) { return remat_log(f, x[0]); }
static inline remat_val ab_max(remat_fn *f, const remat_val *x) { return remat_max(f, x[0], x[1]); }
static inline remat_val ab_min(remat_fn *f, const remat_val *x) { return remat_min(f, x[0], x[1]); }
static inline remat_val ab_mul(remat_fn *f, const remat_val *x) { return remat_mul(f, x[0], x[1]); }
static inline remat_val ab_name(remat_fn *f, const remat_val *x) { return remat_name(f, remat_sin(f, x[0]), "tagged"); }
static inline remat_val ab_neg(remat_fn *f, const remat_val *x) { return remat_neg(f, x[0]); }
static inline remat_val ab_pow25(remat_fn *f, const remat_val *x) { return remat_pow(f, x[0], 2.5); }
static inline remat_val ab_powm05(remat_fn *f, const remat_val *x) { return remat_pow(f, x[0], -0.5); }
static inline remat_val ab_relu(remat_fn *f, const remat_val *x) { return remat_relu(f, x[0]); }
static inline remat_val ab_reshape(remat_fn *f, const remat_val *x)
{
    return remat_reshape(f, x[0], 2, ((int64_t[]){6, 4}));
}
static inline remat_val ab_rmax1(remat_fn *f, const remat_val *x) { return remat_reduce_max(f, x[0], 1, ((int[]){1})); }
static inline remat_val ab_rmax_all(remat_fn *f, const remat_val *x) { return remat_max_all(f, x[0]); }
static inline remat_val ab_sin(remat_fn *f, const remat_val *x) { return remat_sin(f, x[0]); }
static inline remat_val ab_sqrt(remat_fn *f, const remat_val *x) { return remat_sqrt(f, x[0]); }
static inline remat_val ab_square(remat_fn *f, const remat_val *x) { return remat_square(f, x[0]); }
static inline remat_val ab_sub(remat_fn *f, const remat_val *x) { return remat_sub(f, x[0], x[1]); }
static inline remat_val ab_sum02(remat_fn *f, const remat_val *x) { return remat_sum(f, x[0], 2, ((int[]){0, 2})); }
static inline remat_val ab_sum_all(remat_fn *f, const remat_val *x) { return remat_sum_all(f, x[0]); }
static inline remat_val ab_tanh(remat_fn *f, const remat_val *x) { return remat_tanh(f, x[0]); }
static inline remat_val ab_transpose(remat_fn *f, const remat_val *x)
{
    return remat_transpose(f, x[0], ((int[]){2, 0, 1}));
}

#endif

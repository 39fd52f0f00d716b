/*
 * init.c — Flax linen's default initialisers (jax/_src/nn/initializers.py),
 * f32, keyed as Flax calls them: init(key, shape, dtype).
 */
#include <math.h>
#include <stdint.h>

#include "core/error.h"
#include "random_impl.h"
#include "remat/random.h"

/* variance_scaling(1.0, "fan_in", "truncated_normal"), in_axis -2, out_axis
 * -1: _compute_fans in Python floats, variance rounded to f32, then
 * sqrt(variance) / 0.87962566 (the stddev of a standard normal truncated to
 * (-2, 2)) and truncated_normal(-2, 2) * stddev, all in f32. */
remat_status remat_flax_lecun_normal_f32(remat_prng_key key, int rank, const int64_t *dims, float *out)
{
    int64_t n;
    remat_status st = prng_check_dims("flax_lecun_normal_f32", rank, dims, out, &n);
    if (st != REMAT_OK)
        return st;
    if (rank < 2)
        return rmi_error(REMAT_ERR_SHAPE, "flax_lecun_normal_f32: a %d-d kernel has no fan-in (needs rank >= 2)",
                         rank);
    double in_size = (double)dims[rank - 2], out_size = (double)dims[rank - 1];
    double receptive = (double)n / in_size / out_size;
    double fan_in = in_size * receptive;
    if (!(fan_in > 0)) /* Python raises ZeroDivisionError */
        return rmi_error(REMAT_ERR_SHAPE, "flax_lecun_normal_f32: kernel with %lld elements has fan-in 0",
                         (long long)n);
    float variance = (float)(1.0 / fan_in);
    float stddev = sqrtf(variance) / 0.87962566103423978f;
    st = remat_prng_truncated_normal_f32(key, -2.0f, 2.0f, rank, dims, out);
    if (st != REMAT_OK)
        return st;
    for (int64_t i = 0; i < n; i++)
        out[i] = out[i] * stddev;
    return REMAT_OK;
}

static remat_status fill(const char *fn, int rank, const int64_t *dims, float *out, float v)
{
    int64_t n;
    remat_status st = prng_check_dims(fn, rank, dims, out, &n);
    if (st != REMAT_OK)
        return st;
    for (int64_t i = 0; i < n; i++)
        out[i] = v;
    return REMAT_OK;
}

remat_status remat_flax_zeros_f32(remat_prng_key key, int rank, const int64_t *dims, float *out)
{
    (void)key;
    return fill("flax_zeros_f32", rank, dims, out, 0.0f);
}

remat_status remat_flax_ones_f32(remat_prng_key key, int rank, const int64_t *dims, float *out)
{
    (void)key;
    return fill("flax_ones_f32", rank, dims, out, 1.0f);
}

/* initializers.normal(stddev): random.normal(key, shape, dtype) *
 * jnp.array(stddev, dtype). */
remat_status remat_flax_normal_f32(remat_prng_key key, float stddev, int rank, const int64_t *dims,
                                   float *out)
{
    remat_status st = remat_prng_normal_f32(key, rank, dims, out);
    if (st != REMAT_OK)
        return st;
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= dims[i];
    for (int64_t i = 0; i < n; i++)
        out[i] = out[i] * stddev;
    return REMAT_OK;
}

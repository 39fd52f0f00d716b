/*
 * random.c — JAX's threefry2x32 PRNG (jax/_src/prng.py) and its f32
 * samplers (jax/_src/random), with the f32 erf, log1p and erf_inv that XLA's
 * CPU backend emits, so that samples match JAX bit for bit.
 *
 * The float helpers are written one f32 operation per XLA/LLVM operation,
 * in the same order. XLA compiles for the host CPU with LLVM's
 * AllowFPOpFusion=Fast, so on an FMA host (any x86-64 since Haswell, every
 * aarch64) the backend fuses each a*b+c whose product has no other use into
 * one FMA; random.c writes those as fmaf and everything else as single
 * roundings (the build is ISO C, c_std=c11, where GCC contracts nothing by
 * itself). JAX on a host without FMA rounds twice there and differs by an
 * ulp or so; the goldens come from an FMA host.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/error.h"
#include "random_impl.h"
#include "remat/random.h"
#include "remat/tensor.h"

remat_status prng_check_dims(const char *fn, int rank, const int64_t *dims, const void *out,
                             int64_t *numel)
{
    if (!out)
        return rmi_error(REMAT_ERR_NULL, "%s: output pointer is NULL", fn);
    if (rank < 0 || rank > REMAT_MAX_RANK)
        return rmi_error(REMAT_ERR_SHAPE, "%s: rank %d outside [0, %d]", fn, rank, REMAT_MAX_RANK);
    if (rank > 0 && !dims)
        return rmi_error(REMAT_ERR_NULL, "%s: dims is NULL for rank %d", fn, rank);
    int64_t n = 1;
    for (int i = 0; i < rank; i++) {
        if (dims[i] < 0)
            return rmi_error(REMAT_ERR_SHAPE, "%s: dims[%d] = %lld is negative", fn, i,
                             (long long)dims[i]);
        if (dims[i] > 0 && n > (INT64_C(1) << 62) / dims[i])
            return rmi_error(REMAT_ERR_SHAPE, "%s: %d-d shape has more than 2^62 elements", fn, rank);
        n *= dims[i];
    }
    *numel = n;
    return REMAT_OK;
}

/* ---- threefry2x32 ------------------------------------------------------ */

static uint32_t rotl32(uint32_t v, int r) { return (v << r) | (v >> (32 - r)); }

void remat_threefry2x32(remat_prng_key key, const uint32_t in[2], uint32_t out[2])
{
    /* Random123's rotation constants and key schedule, 5 x 4 rounds, as
     * jax/_src/prng.py _threefry2x32_lowering. */
    static const int rot[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
    REMAT_NULL_RETURN(in, );
    REMAT_NULL_RETURN(out, );
    const uint32_t ks[3] = {key.k[0], key.k[1], key.k[0] ^ key.k[1] ^ 0x1BD11BDAu};
    uint32_t x0 = in[0] + ks[0], x1 = in[1] + ks[1];
    for (int g = 0; g < 5; g++) {
        for (int r = 0; r < 4; r++) {
            x0 += x1;
            x1 = rotl32(x1, rot[g % 2][r]);
            x1 ^= x0;
        }
        x0 += ks[(g + 1) % 3];
        x1 += ks[(g + 2) % 3] + (uint32_t)(g + 1);
    }
    out[0] = x0;
    out[1] = x1;
}

static void threefry(remat_prng_key key, uint32_t c0, uint32_t c1, uint32_t y[2])
{
    const uint32_t in[2] = {c0, c1};
    remat_threefry2x32(key, in, y);
}

remat_prng_key remat_prng_key_from_seed(uint64_t seed)
{
    /* threefry_seed(seed) = [seed >> 32, seed & 0xffffffff] on an int32 seed
     * (x64 off): the high word is always 0. */
    return (remat_prng_key){{0u, (uint32_t)seed}};
}

remat_prng_key remat_prng_fold_in(remat_prng_key key, uint32_t data)
{
    /* threefry_2x32(key, threefry_seed(uint32 data)) */
    uint32_t y[2];
    threefry(key, 0u, data, y);
    return (remat_prng_key){{y[0], y[1]}};
}

remat_status remat_prng_split_mode(remat_prng_key key, int n, remat_threefry_mode mode,
                                   remat_prng_key *out)
{
    if (n < 0)
        return rmi_error(REMAT_ERR_VALUE, "prng_split: n = %d is negative", n);
    if (!out)
        return rmi_error(REMAT_ERR_NULL, "prng_split: output pointer is NULL");
    if (mode != REMAT_THREEFRY_PARTITIONABLE && mode != REMAT_THREEFRY_ORIGINAL)
        return rmi_error(REMAT_ERR_ARG, "prng_split: unknown threefry mode %d", (int)mode);
    uint32_t y[2];
    if (mode == REMAT_THREEFRY_PARTITIONABLE) {
        /* _threefry_split_foldlike: key i hashes the 64-bit count i */
        for (int i = 0; i < n; i++) {
            threefry(key, 0u, (uint32_t)i, y);
            out[i] = (remat_prng_key){{y[0], y[1]}};
        }
        return REMAT_OK;
    }
    /* _threefry_split_original: threefry(key, iota(2n)) is (y0 of the pairs
     * (i, n+i), then their y1), reshaped (n, 2). */
    uint32_t *w = (uint32_t *)out;
    for (int i = 0; i < n; i++) {
        threefry(key, (uint32_t)i, (uint32_t)(n + i), y);
        w[i] = y[0];
        w[n + i] = y[1];
    }
    return REMAT_OK;
}

remat_status remat_prng_split(remat_prng_key key, int n, remat_prng_key *out)
{
    return remat_prng_split_mode(key, n, REMAT_THREEFRY_PARTITIONABLE, out);
}

/* Word i of jax.random.bits(key, shape, uint32) in partitionable mode
 * (_threefry_random_bits_partitionable): iota_2x32_shape gives the flat
 * index i as (hi, lo) words; the bits are y0 ^ y1. */
static uint32_t bits_at(remat_prng_key key, int64_t i)
{
    uint32_t y[2];
    threefry(key, (uint32_t)((uint64_t)i >> 32), (uint32_t)i, y);
    return y[0] ^ y[1];
}

/* n words of jax.random.bits(key, shape, uint32), row-major. */
static void bits_fill(remat_prng_key key, remat_threefry_mode mode, int64_t n, uint32_t *out)
{
    if (mode == REMAT_THREEFRY_PARTITIONABLE) {
        for (int64_t i = 0; i < n; i++)
            out[i] = bits_at(key, i);
        return;
    }
    uint32_t y[2];
    /* _threefry_random_bits_original: threefry_2x32(key, iota(n)) pads an
     * odd n with one 0, pairs count i with count h + i (h = ceil(n/2)) and
     * returns the h first words then the h second ones, cut to n. */
    int64_t h = (n + 1) / 2;
    for (int64_t i = 0; i < h; i++) {
        threefry(key, (uint32_t)i, h + i < n ? (uint32_t)(h + i) : 0u, y);
        out[i] = y[0];
        if (h + i < n)
            out[h + i] = y[1];
    }
}

remat_status remat_prng_bits32_mode(remat_prng_key key, remat_threefry_mode mode, int rank,
                                    const int64_t *dims, uint32_t *out)
{
    int64_t n;
    remat_status st = prng_check_dims("prng_bits32", rank, dims, out, &n);
    if (st != REMAT_OK)
        return st;
    if (mode != REMAT_THREEFRY_PARTITIONABLE && mode != REMAT_THREEFRY_ORIGINAL)
        return rmi_error(REMAT_ERR_ARG, "prng_bits32: unknown threefry mode %d", (int)mode);
    if (mode == REMAT_THREEFRY_ORIGINAL && n >= (int64_t)UINT32_MAX)
        return rmi_error(REMAT_ERR_UNSUPPORTED,
                         "prng_bits32: %lld words in original mode (JAX splits the key per 2^32-1 words)",
                         (long long)n);
    bits_fill(key, mode, n, out);
    return REMAT_OK;
}

remat_status remat_prng_bits32(remat_prng_key key, int rank, const int64_t *dims, uint32_t *out)
{
    return remat_prng_bits32_mode(key, REMAT_THREEFRY_PARTITIONABLE, rank, dims, out);
}

/* ---- XLA CPU f32 math -------------------------------------------------- */

static float f32_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint32_t bits_f32(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* XLA's scalar f32 erf (elemental IR emitter; Eigen's generic_fast_erf): x
 * clamped to +-3.7439, x P(x^2) / Q(x^2) by FMA Horner; +-1 beyond. */
static float xla_erff(float x)
{
    const float lim = f32_bits(0x406F9C68u);
    const float a[5] = {f32_bits(0x39702D51u), f32_bits(0x3B5F5DA2u), f32_bits(0x3D50B6EBu),
                        f32_bits(0x3E3DA740u), f32_bits(0x3F906EBAu)};
    const float b[7] = {f32_bits(0xB3FD3906u), f32_bits(0x37C588DFu), f32_bits(0x3A856D28u),
                        f32_bits(0x3C6687D4u), f32_bits(0x3DE34C21u), f32_bits(0x3EFEB44Au), 1.0f};
    if (fabsf(x) >= lim)
        return copysignf(1.0f, x);
    float xc = fminf(fmaxf(x, -lim), lim);
    float x2 = xc * xc;
    float p = fmaf(x2, a[0], a[1]);
    for (int i = 2; i < 5; i++)
        p = fmaf(p, x2, a[i]);
    float q = fmaf(x2, b[0], b[1]);
    for (int i = 2; i < 7; i++)
        q = fmaf(q, x2, b[i]);
    return (xc * p) / q;
}

/* XLA's f32 log (Cephes logf as in Eigen's plog_float): u = m 2^e with m in
 * [sqrt(1/2), sqrt 2), log u = (m-1) - (m-1)^2/2 + (m-1)^3 P(m-1) + e ln 2,
 * ln 2 split in two. */
static float xla_logf(float u)
{
    float v = u > f32_bits(0x00800000u) ? u : f32_bits(0x00800000u);
    uint32_t vb = bits_f32(v);
    float e = (float)((int32_t)(vb >> 23) - 127) + 1.0f;
    float m = f32_bits((vb & 0x807FFFFFu) | 0x3F000000u); /* in [0.5, 1) */
    int lt = m < f32_bits(0x3F3504F3u);
    float t = (m + -1.0f) + (lt ? m : 0.0f);
    e = e - (lt ? 1.0f : 0.0f);
    float t2 = t * t, t3 = t2 * t; /* several uses each: not fused */
    float y1 = fmaf(fmaf(t, f32_bits(0x3D9021BBu), f32_bits(0xBDEBD1B8u)), t, f32_bits(0x3DEF251Au));
    float y2 = fmaf(fmaf(t, f32_bits(0xBDFE5D4Fu), f32_bits(0x3E11E9BFu)), t, f32_bits(0xBE2AAE50u));
    float y3 = fmaf(fmaf(t, f32_bits(0x3E4CCEACu), f32_bits(0xBE7FFFFCu)), t, f32_bits(0x3EAAAAAAu));
    float y = fmaf(fmaf(y1, t3, y2), t3, y3);
    y = fmaf(y, t3, e * f32_bits(0xB95E8083u)); /* of two products LLVM fuses the first operand */
    float r = fmaf(e, f32_bits(0x3F318000u), fmaf(-t2, 0.5f, t) + y);
    if (isnan(u) || u < 0.0f)
        return NAN;
    if (u == 0.0f)
        return -INFINITY;
    if (isinf(u))
        return INFINITY;
    return r;
}

/* XLA's f32 log1p: a rational approximation for |x| < 0.4142 (x - x^2/2 +
 * x^3 P(x)/Q(x)), log(1 + x) beyond. */
static float xla_log1pf(float x)
{
    if (!(fabsf(x) < f32_bits(0x3ED413CDu)))
        return xla_logf(x + 1.0f);
    const float q[6] = {f32_bits(0x417101ADu), f32_bits(0x42A6185Bu), f32_bits(0x435DC32Du),
                        f32_bits(0x439A8CA3u), f32_bits(0x43586D8Au), f32_bits(0x42707982u)};
    const float p[6] = {f32_bits(0x3EFF40C5u), f32_bits(0x40D284FAu), f32_bits(0x41EF4B9Cu),
                        f32_bits(0x4273CC76u), f32_bits(0x426473ADu), f32_bits(0x41A05101u)};
    float x2 = x * x, x0 = x * 0.0f; /* several uses each: not fused */
    float den = x0 + 1.0f, num = x0 + 4.527e-05f;
    for (int i = 0; i < 6; i++) {
        den = fmaf(den, x, q[i]);
        num = fmaf(num, x, p[i]);
    }
    return x + fmaf(x2, -0.5f, (x * x2) * (num / den));
}

/* XLA's f32 erf_inv (Giles 2010, single precision), from the HLO that
 * chlo.erf_inv becomes: w = -log1p(-x^2), a degree-8 polynomial in w - 2.5
 * (w < 5) or sqrt(w) - 3, times x; +-inf at +-1. */
static float xla_erfinvf(float x)
{
    static const float lo[9] = {2.81022636e-08f,  3.43273939e-07f, -3.5233877e-06f,
                                -4.39150654e-06f, 0.00021858087f,  -0.00125372503f,
                                -0.00417768164f,  0.246640727f,    1.50140941f};
    static const float hi[9] = {-0.000200214257f, 0.000100950558f, 0.00134934322f,
                                -0.00367342844f,  0.00573950773f,  -0.0076224613f,
                                0.00943887047f,   1.00167406f,     2.83297682f};
    float w = -xla_log1pf(x * -x);
    int small = w < 5.0f;
    const float *c = small ? lo : hi;
    float t = small ? w + -2.5f : sqrtf(w) + -3.0f;
    float p = c[0];
    for (int i = 1; i < 9; i++)
        p = fmaf(p, t, c[i]);
    return fabsf(x) == 1.0f ? x * INFINITY : p * x;
}

/* ---- f32 samplers ------------------------------------------------------ */

/* _uniform: 23 random mantissa bits under exponent 0 give [1, 2); minus 1,
 * scaled and shifted (one FMA), and kept >= lo. */
static float uniform_from_bits(uint32_t bits, float lo, float hi)
{
    float f = f32_bits((bits >> 9) | 0x3F800000u) - 1.0f;
    return fmaxf(lo, fmaf(hi - lo, f, lo));
}

remat_status remat_prng_uniform_f32(remat_prng_key key, int rank, const int64_t *dims, float lo,
                                    float hi, float *out)
{
    int64_t n;
    remat_status st = prng_check_dims("prng_uniform_f32", rank, dims, out, &n);
    if (st != REMAT_OK)
        return st;
    if (!(lo <= hi) || !isfinite(lo) || !isfinite(hi))
        return rmi_error(REMAT_ERR_VALUE, "prng_uniform_f32: bounds [%g, %g) are not finite and ordered",
                         (double)lo, (double)hi);
    for (int64_t i = 0; i < n; i++)
        out[i] = uniform_from_bits(bits_at(key, i), lo, hi);
    return REMAT_OK;
}

remat_status remat_prng_normal_f32(remat_prng_key key, int rank, const int64_t *dims, float *out)
{
    int64_t n;
    remat_status st = prng_check_dims("prng_normal_f32", rank, dims, out, &n);
    if (st != REMAT_OK)
        return st;
    /* _normal_real: sqrt 2 * erf_inv(uniform(nextafter(-1, 0), 1)) */
    const float lo = nextafterf(-1.0f, 0.0f), sqrt2 = 1.41421354f;
    for (int64_t i = 0; i < n; i++)
        out[i] = sqrt2 * xla_erfinvf(uniform_from_bits(bits_at(key, i), lo, 1.0f));
    return REMAT_OK;
}

remat_status remat_prng_truncated_normal_f32(remat_prng_key key, float lower, float upper, int rank,
                                             const int64_t *dims, float *out)
{
    int64_t n;
    remat_status st = prng_check_dims("prng_truncated_normal_f32", rank, dims, out, &n);
    if (st != REMAT_OK)
        return st;
    if (!(lower < upper))
        return rmi_error(REMAT_ERR_VALUE, "prng_truncated_normal_f32: lower %g is not below upper %g",
                         (double)lower, (double)upper);
    /* _truncated_normal: XLA turns lower / sqrt 2 into lower * (1 / sqrt 2) */
    const float sqrt2 = 1.41421354f, rsqrt2 = f32_bits(0x3F3504F3u);
    const float a = xla_erff(lower * rsqrt2), b = xla_erff(upper * rsqrt2);
    const float lo = nextafterf(lower, INFINITY), hi = nextafterf(upper, -INFINITY);
    for (int64_t i = 0; i < n; i++) {
        float v = sqrt2 * xla_erfinvf(uniform_from_bits(bits_at(key, i), a, b));
        out[i] = fminf(hi, fmaxf(lo, v));
    }
    return REMAT_OK;
}

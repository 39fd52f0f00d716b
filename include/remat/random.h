/*
 * remat/random.h — JAX's default PRNG and Flax linen's parameter
 * initialisation, bit for bit.
 *
 * Keys are JAX's threefry2x32 keys (Salmon et al., "Parallel random numbers:
 * as easy as 1, 2, 3", SC 2011; 20 rounds), the two uint32 words that
 * jax.random.key_data(jax.random.PRNGKey(seed)) shows. Derived keys and bits
 * follow JAX 0.10 with its default jax_threefry_partitionable=True (the
 * default since JAX 0.5); the _mode variants also give the older layout.
 *
 * Floats follow XLA's CPU code: uniform takes the 23 top bits as a mantissa
 * in [1, 2); truncated_normal is sqrt(2) * erf_inv(uniform(erf(lo/sqrt 2),
 * erf(hi/sqrt 2))) with XLA's f32 erf (rational, FMA), log1p (Cephes-style
 * log) and erf_inv (Giles 2010, "Approximating the erfinv function"), each
 * written out here operation by operation in f32.
 *
 * Flax: remat_flax_make_rng gives the key that self.make_rng('params')
 * returns inside a module of `model.init(jax.random.PRNGKey(seed), x)`; each
 * self.param call draws one (zeros and ones too). The initialisers take that
 * key as Flax's init functions do.
 *
 *   // the kernel of Dense_1 of a Flax MLP, init from PRNGKey(0), in 8, out 8
 *   remat_prng_key root = remat_prng_key_from_seed(0), k;
 *   remat_flax_make_rng(root, 1, (const char *[]){"Dense_1"}, 1, &k);
 *   float kernel[8 * 8];
 *   remat_flax_lecun_normal_f32(k, 2, (int64_t[]){8, 8}, kernel);
 *
 * Every function that takes a pointer returns a remat_status; a NULL
 * pointer, a negative dimension or a rank outside [0, REMAT_MAX_RANK] is
 * reported with a message (remat_last_error()) and nothing is written.
 * Arrays are row-major, as JAX lays them out.
 */
#ifndef REMAT_RANDOM_H
#define REMAT_RANDOM_H

#include "export.h"

#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A threefry2x32 key: k[0], k[1] are JAX's key_data words in order. */
typedef struct {
    uint32_t k[2];
} remat_prng_key;

/* How split and bits lay out their counters (jax_threefry_partitionable). */
typedef enum {
    REMAT_THREEFRY_PARTITIONABLE, /* JAX >= 0.5 default: element i hashes the 64-bit count i */
    REMAT_THREEFRY_ORIGINAL,      /* JAX < 0.5: one iota split in two halves */
} remat_threefry_mode;

/* The 20-round threefry2x32 block function: out = threefry(key, in). NULL in
 * or out: nothing written, remat_last_error() set. */
REMAT_API void remat_threefry2x32(remat_prng_key key, const uint32_t in[2], uint32_t out[2]);

/* jax.random.PRNGKey(seed) with jax_enable_x64 off (JAX's default): the
 * seed is cut to its low 32 bits, so the key is {0, (uint32_t)seed};
 * PRNGKey(2**32 + 5) == PRNGKey(5) and PRNGKey(-1) == {0, 0xffffffff}. */
REMAT_API remat_prng_key remat_prng_key_from_seed(uint64_t seed);

/* jax.random.split(key, n): n >= 0 keys into out[0..n). */
REMAT_API remat_status remat_prng_split(remat_prng_key key, int n, remat_prng_key *out);
REMAT_API remat_status remat_prng_split_mode(remat_prng_key key, int n, remat_threefry_mode mode,
                                             remat_prng_key *out);

/* jax.random.fold_in(key, data) (the same in both modes). */
REMAT_API remat_prng_key remat_prng_fold_in(remat_prng_key key, uint32_t data);

/* jax.random.bits(key, dims, jnp.uint32). */
REMAT_API remat_status remat_prng_bits32(remat_prng_key key, int rank, const int64_t *dims, uint32_t *out);
REMAT_API remat_status remat_prng_bits32_mode(remat_prng_key key, remat_threefry_mode mode, int rank,
                                              const int64_t *dims, uint32_t *out);

/* jax.random.uniform(key, dims, jnp.float32, lo, hi): in [lo, hi). */
REMAT_API remat_status remat_prng_uniform_f32(remat_prng_key key, int rank, const int64_t *dims, float lo,
                                              float hi, float *out);

/* jax.random.normal(key, dims, jnp.float32). */
REMAT_API remat_status remat_prng_normal_f32(remat_prng_key key, int rank, const int64_t *dims, float *out);

/* jax.random.truncated_normal(key, lower, upper, dims, jnp.float32): in the
 * open interval (lower, upper); lower < upper. */
REMAT_API remat_status remat_prng_truncated_normal_f32(remat_prng_key key, float lower, float upper, int rank,
                                                       const int64_t *dims, float *out);

/* Flax linen's key for the counter-th (1-based) self.make_rng('params') in
 * the module at path[0..n_path) (names from the root, {"FFN_1",
 * "Dense_0"}; the root is n_path = 0) during model.init(root, ...):
 * fold_in(root, first 4 bytes, big-endian, of SHA-1(path[0] ... path[n-1]
 * counter)), the counter as minimal big-endian bytes. nn.remat adds no name
 * at the root; as a child it is named "Checkpoint" + class ("CheckpointFFN_0"). */
REMAT_API remat_status remat_flax_make_rng(remat_prng_key root, int n_path, const char *const *path, int counter,
                                           remat_prng_key *out);

/* An initialiser as Flax calls it: init(key, shape, float32). */
typedef remat_status (*remat_flax_init_f32)(remat_prng_key key, int rank, const int64_t *dims,
                                            float *out);

/* nn.initializers.lecun_normal(): variance_scaling(1, "fan_in",
 * "truncated_normal"); fan_in = dims[rank-2] * (product of dims[0..rank-2));
 * rank >= 2. */
REMAT_API remat_status remat_flax_lecun_normal_f32(remat_prng_key key, int rank, const int64_t *dims, float *out);

/* nn.initializers.zeros / ones (the key is unused, as in Flax). */
REMAT_API remat_status remat_flax_zeros_f32(remat_prng_key key, int rank, const int64_t *dims, float *out);
REMAT_API remat_status remat_flax_ones_f32(remat_prng_key key, int rank, const int64_t *dims, float *out);

/* nn.initializers.normal(stddev): jax.random.normal * stddev. */
REMAT_API remat_status remat_flax_normal_f32(remat_prng_key key, float stddev, int rank, const int64_t *dims,
                                             float *out);

#ifdef __cplusplus
}
#endif
#endif

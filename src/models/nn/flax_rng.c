/*
 * flax_rng.c — Flax linen's per-module PRNG (flax/core/scope.py).
 *
 * A scope's rng for 'params' is a LazyRng: the root key plus a suffix of
 * static data. Scope.push(name) appends the child's name; make_rng appends
 * the scope's counter for that sequence (1 on the first call) and folds the
 * whole suffix in at once (_fold_in_static): fold_in(key, the first 4
 * bytes, big-endian, of SHA-1 over the items), strings as UTF-8, ints as
 * their minimal big-endian bytes, no separators (flax_fix_rng_separator is
 * off by default). Lifted transforms (nn.remat, lift.pack) hand the LazyRng
 * through unchanged and share the counters, so they add nothing of their
 * own; their class name shows only where a child is named after its class.
 */
#include <nettle/sha1.h>
#include <stdint.h>
#include <string.h>

#include "core/error.h"
#include "remat/random.h"

remat_status remat_flax_make_rng(remat_prng_key root, int n_path, const char *const *path, int counter,
                                 remat_prng_key *out)
{
    if (!out)
        return rmi_error(REMAT_ERR_NULL, "flax_make_rng: output pointer is NULL");
    if (n_path < 0)
        return rmi_error(REMAT_ERR_VALUE, "flax_make_rng: path length %d is negative", n_path);
    if (n_path > 0 && !path)
        return rmi_error(REMAT_ERR_NULL, "flax_make_rng: path is NULL for %d names", n_path);
    if (counter < 1)
        return rmi_error(REMAT_ERR_VALUE, "flax_make_rng: counter %d is not >= 1 (Flax counts from 1)",
                         counter);
    for (int i = 0; i < n_path; i++)
        if (!path[i])
            return rmi_error(REMAT_ERR_NULL, "flax_make_rng: path[%d] is NULL", i);

    struct sha1_ctx ctx;
    sha1_init(&ctx);
    for (int i = 0; i < n_path; i++)
        sha1_update(&ctx, strlen(path[i]), (const uint8_t *)path[i]);
    /* int.to_bytes((bit_length + 7) // 8, 'big') */
    uint8_t cb[4];
    int nb = 0;
    for (int shift = 24; shift >= 0; shift -= 8)
        if (nb > 0 || (counter >> shift) != 0)
            cb[nb++] = (uint8_t)(counter >> shift);
    sha1_update(&ctx, (size_t)nb, cb);
    uint8_t d[SHA1_DIGEST_SIZE];
    sha1_digest(&ctx, sizeof d, d);
    uint32_t h = (uint32_t)d[0] << 24 | (uint32_t)d[1] << 16 | (uint32_t)d[2] << 8 | (uint32_t)d[3];
    *out = remat_prng_fold_in(root, h);
    return REMAT_OK;
}

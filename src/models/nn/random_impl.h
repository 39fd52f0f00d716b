/*
 * random_impl.h (internal) — the argument check shared by random.c and
 * init.c.
 */
#ifndef REMAT_MODELS_NN_RANDOM_IMPL_H
#define REMAT_MODELS_NN_RANDOM_IMPL_H

#include <stdint.h>

#include "remat/status.h"

/* Checks out != NULL, 0 <= rank <= REMAT_MAX_RANK, dims != NULL when
 * rank > 0, every dim >= 0 and the product below 2^62; *numel = product.
 * Messages start with fn. */
remat_status prng_check_dims(const char *fn, int rank, const int64_t *dims, const void *out,
                             int64_t *numel);

#endif

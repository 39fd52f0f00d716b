/* shape.h (internal) — the overflow check every shape a caller hands in passes. */
#ifndef REMAT_CORE_SHAPE_H
#define REMAT_CORE_SHAPE_H

#include <stddef.h>
#include <stdint.h>

/* 1 if rank is in [0, REMAT_MAX_RANK], every dim is >= 0 and the product of
 * the dims times elem (bytes) fits in both int64_t and size_t; 0 otherwise.
 * Kernels index with int64_t and allocate with size_t, so a shape past either
 * would wrap and read outside its buffer. */
int rmi_dims_fit(int rank, const int64_t *dims, size_t elem);

#endif

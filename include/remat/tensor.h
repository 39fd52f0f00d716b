/*
 * remat/tensor.h — dtypes, shapes and tensor views of caller memory.
 *
 * A remat_tensor is a plain description (dtype, shape, data pointer) of a
 * dense row-major array the caller owns; remat never frees it.
 *
 *   double x[4] = {1, 2, 3, 4};
 *   remat_tensor tx = remat_tensor_f64(x, 2, (int64_t[]){2, 2});
 */
#ifndef REMAT_TENSOR_H
#define REMAT_TENSOR_H

#include "export.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define REMAT_MAX_RANK 8

typedef enum {
    REMAT_F32 = 0,
    REMAT_F64 = 1,
    REMAT_DTYPE_COUNT
} remat_dtype;

typedef struct {
    int rank;
    int64_t dims[REMAT_MAX_RANK];
} remat_shape;

typedef struct {
    remat_dtype dtype;
    remat_shape shape;
    void *data; /* row-major, caller-owned */
} remat_tensor;

/* "f32", "f64". */
REMAT_API const char *remat_dtype_name(remat_dtype dt);
/* Bytes of one element; 0 for an unknown dtype. */
REMAT_API size_t remat_dtype_size(remat_dtype dt);

/* Build a shape from a dims array (rank 0 = scalar, dims may be NULL). A rank
 * outside [0, REMAT_MAX_RANK] (or dims NULL) gives that rank with no dims:
 * an invalid shape every op and remat_run refuse. */
REMAT_API remat_shape remat_shape_make(int rank, const int64_t *dims);
/* Element count; -1 for NULL, an invalid rank or a count past int64. */
REMAT_API int64_t remat_shape_numel(const remat_shape *s);
/* 0 when either is NULL or of invalid rank. */
REMAT_API int remat_shape_equal(const remat_shape *a, const remat_shape *b);
/* Writes "f32[256,512]" into buf (always NUL-terminated); returns buf. An
 * invalid rank is written as "f32[invalid rank 99, not in 0..8]". */
REMAT_API char *remat_shape_format(remat_dtype dt, const remat_shape *s, char *buf, size_t len);

REMAT_API remat_tensor remat_tensor_f32(float *data, int rank, const int64_t *dims);
REMAT_API remat_tensor remat_tensor_f64(double *data, int rank, const int64_t *dims);
/* 0 for NULL, an unknown dtype, an invalid rank or a size past size_t. */
REMAT_API size_t remat_tensor_bytes(const remat_tensor *t);

#ifdef __cplusplus
}
#endif
#endif

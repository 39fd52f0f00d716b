/* tensor.c — dtype and shape helpers. */
#include <stdio.h>
#include <string.h>

#include "core/assert.h"
#include "core/shape.h"
#include "remat/tensor.h"

static const char *const dtype_names[REMAT_DTYPE_COUNT] = {"f32", "f64"};
static const size_t dtype_sizes[REMAT_DTYPE_COUNT] = {4, 8};

const char *remat_dtype_name(remat_dtype dt)
{
    return (unsigned)dt < REMAT_DTYPE_COUNT ? dtype_names[dt] : "?";
}

size_t remat_dtype_size(remat_dtype dt)
{
    return (unsigned)dt < REMAT_DTYPE_COUNT ? dtype_sizes[dt] : 0;
}

/* A rank outside [0, REMAT_MAX_RANK] is kept (with no dims copied) rather
 * than aborting: the caller can reach it, and remat_run refuses the tensor
 * with a message saying the rank is invalid. */
remat_shape remat_shape_make(int rank, const int64_t *dims)
{
    remat_shape s = {.rank = rank};
    if (rank < 0 || rank > REMAT_MAX_RANK || !dims)
        return s;
    for (int i = 0; i < rank; i++)
        s.dims[i] = dims[i];
    return s;
}

int rmi_dims_fit(int rank, const int64_t *dims, size_t elem)
{
    if (rank < 0 || rank > REMAT_MAX_RANK || (rank > 0 && !dims))
        return 0;
    int64_t limit = INT64_MAX;
    if ((uint64_t)SIZE_MAX < (uint64_t)INT64_MAX)
        limit = (int64_t)SIZE_MAX;
    int64_t n = (int64_t)elem;
    for (int i = 0; i < rank; i++) {
        if (dims[i] < 0)
            return 0;
        if (dims[i] == 0)
            return 1; /* empty: zero bytes whatever the other dims are */
    }
    for (int i = 0; i < rank; i++)
        if (__builtin_mul_overflow(n, dims[i], &n) || n > limit)
            return 0;
    return 1;
}

int64_t remat_shape_numel(const remat_shape *s)
{
    if (!s || s->rank < 0 || s->rank > REMAT_MAX_RANK)
        return -1;
    int64_t n = 1;
    for (int i = 0; i < s->rank; i++)
        if (__builtin_mul_overflow(n, s->dims[i], &n))
            return -1;
    return n;
}

int remat_shape_equal(const remat_shape *a, const remat_shape *b)
{
    if (!a || !b || a->rank != b->rank || a->rank < 0 || a->rank > REMAT_MAX_RANK)
        return 0;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i])
            return 0;
    return 1;
}

char *remat_shape_format(remat_dtype dt, const remat_shape *s, char *buf, size_t len)
{
    size_t pos = 0;
    if (len == 0)
        return buf;
    buf[0] = '\0';
    if (!s) {
        snprintf(buf, len, "%s[?]", remat_dtype_name(dt));
        return buf;
    }
    if (s->rank < 0 || s->rank > REMAT_MAX_RANK) { /* the dims array holds REMAT_MAX_RANK */
        snprintf(buf, len, "%s[invalid rank %d, not in 0..%d]", remat_dtype_name(dt), s->rank, REMAT_MAX_RANK);
        return buf;
    }
    pos += (size_t)snprintf(buf, len, "%s[", remat_dtype_name(dt));
    for (int i = 0; i < s->rank && pos < len; i++)
        pos += (size_t)snprintf(buf + pos, len - pos, i ? ",%lld" : "%lld", (long long)s->dims[i]);
    if (pos < len)
        snprintf(buf + pos, len - pos, "]");
    return buf;
}

remat_tensor remat_tensor_f32(float *data, int rank, const int64_t *dims)
{
    return (remat_tensor){.dtype = REMAT_F32, .shape = remat_shape_make(rank, dims), .data = data};
}

remat_tensor remat_tensor_f64(double *data, int rank, const int64_t *dims)
{
    return (remat_tensor){.dtype = REMAT_F64, .shape = remat_shape_make(rank, dims), .data = data};
}

size_t remat_tensor_bytes(const remat_tensor *t)
{
    if (!t || (unsigned)t->dtype >= REMAT_DTYPE_COUNT ||
        !rmi_dims_fit(t->shape.rank, t->shape.dims, remat_dtype_size(t->dtype)))
        return 0;
    return (size_t)remat_shape_numel(&t->shape) * remat_dtype_size(t->dtype);
}

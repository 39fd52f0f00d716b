/* tensor.c — dtype and shape helpers. */
#include <stdio.h>
#include <string.h>

#include "core/assert.h"
#include "remat/tensor.h"

static const char *const dtype_names[REMAT_DTYPE_COUNT] = {"f32", "f64"};
static const size_t dtype_sizes[REMAT_DTYPE_COUNT] = {4, 8};

const char *remat_dtype_name(remat_dtype dt)
{
    return (unsigned)dt < REMAT_DTYPE_COUNT ? dtype_names[dt] : "?";
}

size_t remat_dtype_size(remat_dtype dt)
{
    REMAT_ASSERT((unsigned)dt < REMAT_DTYPE_COUNT);
    return dtype_sizes[dt];
}

remat_shape remat_shape_make(int rank, const int64_t *dims)
{
    remat_shape s = {.rank = rank};
    REMAT_ASSERT(rank >= 0 && rank <= REMAT_MAX_RANK);
    for (int i = 0; i < rank; i++)
        s.dims[i] = dims[i];
    return s;
}

int64_t remat_shape_numel(const remat_shape *s)
{
    int64_t n = 1;
    for (int i = 0; i < s->rank; i++)
        n *= s->dims[i];
    return n;
}

int remat_shape_equal(const remat_shape *a, const remat_shape *b)
{
    if (a->rank != b->rank)
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
    return (size_t)remat_shape_numel(&t->shape) * remat_dtype_size(t->dtype);
}

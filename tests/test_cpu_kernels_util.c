/*
 * test_cpu_kernels_util.c — the helpers of test_cpu_kernels_util.h.
 */
#include "test_cpu_kernels_util.h"

#include <stdlib.h>

double rnd(void) { return (double)((int)((rng_next() >> 33) % 201) - 100) / 8.0; }

void fill(double *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        x[i] = rnd();
}

remat_shape shp(int rank, const int64_t *dims)
{
    return remat_shape_make(rank, dims);
}

void unravel(const remat_shape *s, int64_t flat, int64_t *idx)
{
    for (int i = s->rank - 1; i >= 0; i--) {
        idx[i] = flat % s->dims[i];
        flat /= s->dims[i];
    }
}

int64_t ravel(const remat_shape *s, const int64_t *idx)
{
    int64_t f = 0;
    for (int i = 0; i < s->rank; i++)
        f = f * s->dims[i] + idx[i];
    return f;
}

float *to_f32(const double *x, int64_t n)
{
    float *y = xmalloc((size_t)n * sizeof *y);
    for (int64_t i = 0; i < n; i++)
        y[i] = (float)x[i];
    return y;
}

void check_close_f32(const char *what, int64_t n, const float *got, const double *want, double rtol,
                     double atol)
{
    double *g = xmalloc((size_t)n * sizeof *g);
    for (int64_t i = 0; i < n; i++)
        g[i] = got[i];
    check_close(what, n, g, want, rtol, atol);
    free(g);
}


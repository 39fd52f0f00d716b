/*
 * test_cpu_kernels_util.h — what the test_cpu_kernels_*.c files share:
 * values exact in f32, row-major index arithmetic for the references, and f32
 * copies and comparisons.
 *
 *   double x[12];
 *   fill(x, 12);
 *   remat_shape s = shp(2, DIMS(3, 4));
 *   int64_t idx[REMAT_MAX_RANK];
 *   unravel(&s, 7, idx);                  // {1, 3}; ravel(&s, idx) == 7
 */
#ifndef REMAT_TEST_CPU_KERNELS_UTIL_H
#define REMAT_TEST_CPU_KERNELS_UTIL_H

#include "test_util.h"

/* Values k/8 with |k| <= 100: exact in f32, so f32 and f64 copies agree. */
double rnd(void);
void fill(double *x, int64_t n);

remat_shape shp(int rank, const int64_t *dims);
/* flat row-major index <-> multi-index of s */
void unravel(const remat_shape *s, int64_t flat, int64_t *idx);
int64_t ravel(const remat_shape *s, const int64_t *idx);

/* an xmalloc'ed f32 copy of x */
float *to_f32(const double *x, int64_t n);
/* check_close on got widened to f64 */
void check_close_f32(const char *what, int64_t n, const float *got, const double *want, double rtol,
                     double atol);

#endif

/*
 * reduce.c — reduce_sum and reduce_max over a set of axes.
 *
 * The input is first coalesced: size-1 axes are dropped and neighbouring axes
 * with the same reduce flag merged, so every call becomes alternating groups
 * (kept K / reduced R) and the common cases are short loops:
 *   all axes             (R)      -> one running sum, no index arithmetic
 *   trailing axis        (K,R)    -> row sums, 4 rows at a time
 *   leading axis         (R,K)    -> out[:] += in[r,:] for r ascending
 *                                    (column sums: one vectorised row add each)
 *   anything else        (...)    -> the same inner loops under an odometer.
 *
 * Summation order: each output starts at +0 (XLA's init value, so a sum of
 * -0.0 is +0.0) and adds its inputs one at a time in ascending row-major
 * order: out = ((0 + x0) + x1) + ... . This is the header's contract, and it
 * is also what XLA's CPU backend produced for the reduce_sum goldens in
 * tests/goldens/ops.json (bit for bit), which a lane-split sum would not.
 * Speed therefore comes only from reordering work *across* outputs (column
 * sums vectorise over the row; row sums run 4 independent chains), never
 * within one output's sum.
 */
#include <math.h>

#include "backend/cpu/cpu_kernels.h"
#include "core/assert.h"

/*
 * The odometer walks groups 0..r-2 with the input offset (row-major) and the
 * output offset (0 stride for reduced groups); the innermost group is either
 * kept (row step into out) or reduced (continue the output's running value).
 * STEP(acc, x) combines; out holds each output's initial value on entry.
 */
#define SUM_STEP(s, x) RMI_CPU_SUM_STEP(s, x)

/*
 * reduce_max: XLA's max is IEEE 754-2019 maximum, which lax.reduce_max
 * shows on the CPU backend: a NaN in the run gives NaN, and +0 beats -0
 * whatever their order. So m takes x when x > m, when x is NaN, or when
 * they are equal and m is -0 (x is then +0 or -0); once NaN, m stays NaN.
 * Each output starts at -inf (the empty run's answer).
 */
#define MAX_STEP(m, x) RMI_CPU_MAX_STEP(m, x)

#define DEFINE_REDUCE(T, NAME, STEP)                                                       \
    static void NAME(T *restrict out, const T *restrict in, int r, const int64_t *dims,   \
                     const int64_t *in_st, const int64_t *out_st, bool last_reduced)       \
    {                                                                                      \
        const int64_t n = dims[r - 1];                                                     \
        if (r == 2 && last_reduced) { /* (K,R) row sums: 4 chains at once */               \
            int64_t k = 0;                                                                 \
            for (; k + 4 <= dims[0]; k += 4) {                                             \
                const T *x0 = in + k * n, *x1 = x0 + n, *x2 = x1 + n, *x3 = x2 + n;        \
                T s0 = out[k], s1 = out[k + 1], s2 = out[k + 2], s3 = out[k + 3];          \
                for (int64_t j = 0; j < n; j++) {                                          \
                    s0 = STEP(s0, x0[j]);                                                  \
                    s1 = STEP(s1, x1[j]);                                                  \
                    s2 = STEP(s2, x2[j]);                                                  \
                    s3 = STEP(s3, x3[j]);                                                  \
                }                                                                          \
                out[k] = s0, out[k + 1] = s1, out[k + 2] = s2, out[k + 3] = s3;            \
            }                                                                              \
            for (; k < dims[0]; k++) {                                                     \
                T s = out[k];                                                              \
                for (int64_t j = 0; j < n; j++)                                            \
                    s = STEP(s, in[k * n + j]);                                            \
                out[k] = s;                                                                \
            }                                                                              \
            return;                                                                        \
        }                                                                                  \
        int64_t outer = 1, idx[REMAT_MAX_RANK] = {0}, ioff = 0, ooff = 0;                  \
        for (int i = 0; i < r - 1; i++)                                                    \
            outer *= dims[i];                                                              \
        for (int64_t o = 0; o < outer; o++) {                                              \
            const T *restrict x = in + ioff;                                               \
            if (last_reduced) {                                                            \
                T s = out[ooff];                                                           \
                for (int64_t j = 0; j < n; j++)                                            \
                    s = STEP(s, x[j]);                                                     \
                out[ooff] = s;                                                             \
            } else {                                                                       \
                T *restrict y = out + ooff;                                                \
                for (int64_t j = 0; j < n; j++)                                            \
                    y[j] = STEP(y[j], x[j]);                                               \
            }                                                                              \
            for (int d = r - 2; d >= 0; d--) {                                             \
                ioff += in_st[d];                                                          \
                ooff += out_st[d];                                                         \
                if (++idx[d] < dims[d])                                                    \
                    break;                                                                 \
                ioff -= in_st[d] * dims[d];                                                \
                ooff -= out_st[d] * dims[d];                                               \
                idx[d] = 0;                                                                \
            }                                                                              \
        }                                                                                  \
    }

DEFINE_REDUCE(float, reduce_f32, SUM_STEP)
DEFINE_REDUCE(double, reduce_f64, SUM_STEP)
DEFINE_REDUCE(float, reduce_max_f32, MAX_STEP)
DEFINE_REDUCE(double, reduce_max_f64, MAX_STEP)

/* Coalesces in_shape into alternating kept/reduced groups (dims, red) and
 * their row-major input strides and output strides (0 when reduced);
 * returns the group count (>= 1). */
static int coalesce(const remat_shape *in_shape, const bool *reduce, int64_t *dims, bool *red, int64_t *in_st,
                    int64_t *out_st)
{
    int r = 0;
    for (int i = 0; i < in_shape->rank; i++) {
        if (in_shape->dims[i] == 1)
            continue;
        if (r > 0 && red[r - 1] == reduce[i]) {
            dims[r - 1] *= in_shape->dims[i];
            continue;
        }
        dims[r] = in_shape->dims[i];
        red[r] = reduce[i];
        r++;
    }
    if (r == 0) { /* a single element */
        dims[0] = 1;
        red[0] = false;
        r = 1;
    }
    int64_t si = 1, so = 1;
    for (int i = r - 1; i >= 0; i--) {
        in_st[i] = si;
        si *= dims[i];
        out_st[i] = red[i] ? 0 : so;
        if (!red[i])
            so *= dims[i];
    }
    return r;
}

typedef void (*reduce_f32_fn)(float *restrict, const float *restrict, int, const int64_t *, const int64_t *,
                              const int64_t *, bool);
typedef void (*reduce_f64_fn)(double *restrict, const double *restrict, int, const int64_t *, const int64_t *,
                              const int64_t *, bool);

/* every output := init (also the answer of an empty run), then the reduction */
static void reduce_into(remat_dtype dt, void *out, const void *in, const remat_shape *in_shape, const bool *reduce,
                        double init, reduce_f32_fn f32, reduce_f64_fn f64)
{
    int64_t n_out = 1, n_in = 1;
    for (int i = 0; i < in_shape->rank; i++) {
        n_in *= in_shape->dims[i];
        if (!reduce[i])
            n_out *= in_shape->dims[i];
    }
    for (int64_t i = 0; dt == REMAT_F32 && i < n_out; i++)
        ((float *)out)[i] = (float)init;
    for (int64_t i = 0; dt == REMAT_F64 && i < n_out; i++)
        ((double *)out)[i] = init;
    if (n_out == 0 || n_in == 0)
        return;
    int64_t dims[REMAT_MAX_RANK], in_st[REMAT_MAX_RANK], out_st[REMAT_MAX_RANK];
    bool red[REMAT_MAX_RANK];
    int r = coalesce(in_shape, reduce, dims, red, in_st, out_st);
    if (dt == REMAT_F32)
        f32(out, in, r, dims, in_st, out_st, red[r - 1]);
    else
        f64(out, in, r, dims, in_st, out_st, red[r - 1]);
}

/* outputs start at +0 (XLA's init value, so a sum of -0.0 is +0.0) */
void rmi_cpu_reduce_sum(remat_dtype dt, void *out, const void *in, const remat_shape *in_shape,
                        const bool *reduce)
{
    reduce_into(dt, out, in, in_shape, reduce, 0.0, reduce_f32, reduce_f64);
}

void rmi_cpu_reduce_max(remat_dtype dt, void *out, const void *in, const remat_shape *in_shape,
                        const bool *reduce)
{
    reduce_into(dt, out, in, in_shape, reduce, -INFINITY, reduce_max_f32, reduce_max_f64);
}

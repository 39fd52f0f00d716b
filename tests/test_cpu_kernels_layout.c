/*
 * test_cpu_kernels_layout.c — the structural CPU kernels (transpose,
 * broadcast_in_dim, slice, pad, concatenate), add of a pad, reduce_sum and
 * reduce_max.
 *
 * Every CPU kernel against a naive reference written here from the op's
 * definition (index arithmetic, libm, long double sums), never against another
 * kernel. Structural ops are exact, so they are compared bit for bit in
 * both element sizes (f32 and f64 views of the same values).
 *
 * Bitwise assertions need no contract of docs/design-notes.md ("Bitwise
 * contracts"): structural ops copy, add of a pad is one correctly rounded
 * add, reduce_max picks an operand, and reduce_sum's order is the one its
 * header documents (cpu_kernels.h), the same on any IEEE machine.
 */
#include "test_cpu_kernels_util.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_kernels.h"

/* ---- structural: run a kernel in both element sizes against a reference
 * map "output element i comes from input element src[i]" (-1: zero) ---- */

typedef void (*struct_fn)(remat_dtype dt, void *out, const void *in, const void *ctx);

static void check_structural(const char *what, struct_fn fn, const void *ctx, int64_t n_in,
                             int64_t n_out, const int64_t *src)
{
    double *in = xmalloc((size_t)n_in * sizeof *in), *out = xmalloc((size_t)(n_out + 1) * 8);
    double *want = xmalloc((size_t)n_out * sizeof *want);
    fill(in, n_in);
    for (int64_t i = 0; i < n_out; i++)
        want[i] = src[i] < 0 ? 0.0 : in[src[i]];
    float *in32 = to_f32(in, n_in), *out32 = xmalloc((size_t)(n_out + 1) * 4);
    for (int64_t i = 0; i <= n_out; i++)
        out[i] = NAN, out32[i] = NAN; /* every element must be written */
    fn(REMAT_F64, out, in, ctx);
    check_close(what, n_out, out, want, 0, 0);
    assert_true(isnan(out[n_out]));
    fn(REMAT_F32, out32, in32, ctx);
    check_close_f32(what, n_out, out32, want, 0, 0);
    assert_true(isnan(out32[n_out]));
    free(in), free(out), free(want), free(in32), free(out32);
}

typedef struct {
    remat_shape in, out;
    int perm[REMAT_MAX_RANK];
} transpose_case;

static void run_transpose(remat_dtype dt, void *out, const void *in, const void *ctx)
{
    const transpose_case *c = ctx;
    rmi_cpu_transpose(dt, out, in, &c->in, c->perm);
}

static void transpose_check(int rank, const int64_t *dims, const int *perm)
{
    transpose_case c = {.in = shp(rank, dims)};
    int64_t od[REMAT_MAX_RANK], idx[REMAT_MAX_RANK], iidx[REMAT_MAX_RANK] = {0};
    for (int i = 0; i < rank; i++)
        c.perm[i] = perm[i], od[i] = dims[perm[i]];
    c.out = shp(rank, od);
    const int64_t n = remat_shape_numel(&c.in);
    int64_t *src = xmalloc((size_t)n * sizeof *src);
    for (int64_t f = 0; f < n; f++) {
        unravel(&c.out, f, idx);
        for (int i = 0; i < rank; i++)
            iidx[perm[i]] = idx[i];
        src[f] = ravel(&c.in, iidx);
    }
    check_structural("transpose", run_transpose, &c, n, n, src);
    free(src);
}

static void test_cpu_kernels_transpose_any_perm(void **state)
{
    (void)state;
    transpose_check(0, NULL, NULL);
    transpose_check(1, (int64_t[]){5}, (int[]){0});
    transpose_check(2, (int64_t[]){37, 45}, (int[]){1, 0}); /* tiled path */
    transpose_check(2, (int64_t[]){3, 4}, (int[]){1, 0});
    transpose_check(3, (int64_t[]){5, 40, 33}, (int[]){0, 2, 1}); /* batched tiles */
    transpose_check(3, (int64_t[]){4, 5, 6}, (int[]){2, 0, 1});
    transpose_check(4, (int64_t[]){2, 3, 4, 5}, (int[]){1, 3, 0, 2});
    transpose_check(4, (int64_t[]){2, 1, 4, 5}, (int[]){0, 2, 1, 3});
    transpose_check(3, (int64_t[]){2, 0, 4}, (int[]){2, 1, 0}); /* zero-size */
    transpose_check(8, (int64_t[]){2, 1, 3, 2, 1, 2, 3, 2}, (int[]){7, 2, 5, 0, 1, 6, 3, 4});
}

typedef struct {
    remat_shape in, out;
    int bdims[REMAT_MAX_RANK];
} bcast_case;

static void run_bcast(remat_dtype dt, void *out, const void *in, const void *ctx)
{
    const bcast_case *c = ctx;
    rmi_cpu_broadcast_in_dim(dt, out, &c->out, in, &c->in, c->bdims);
}

static void bcast_check(int in_rank, const int64_t *in_dims, int out_rank, const int64_t *out_dims,
                        const int *bdims)
{
    bcast_case c = {.in = shp(in_rank, in_dims), .out = shp(out_rank, out_dims)};
    int64_t idx[REMAT_MAX_RANK], iidx[REMAT_MAX_RANK] = {0};
    for (int i = 0; i < in_rank; i++)
        c.bdims[i] = bdims[i];
    const int64_t n = remat_shape_numel(&c.out);
    int64_t *src = xmalloc((size_t)n * sizeof *src);
    for (int64_t f = 0; f < n; f++) {
        unravel(&c.out, f, idx);
        for (int i = 0; i < in_rank; i++)
            iidx[i] = in_dims[i] == 1 ? 0 : idx[bdims[i]];
        src[f] = ravel(&c.in, iidx);
    }
    check_structural("broadcast_in_dim", run_bcast, &c, remat_shape_numel(&c.in), n, src);
    free(src);
}

static void test_cpu_kernels_broadcast_in_dim(void **state)
{
    (void)state;
    bcast_check(0, NULL, 0, NULL, NULL);
    bcast_check(0, NULL, 2, (int64_t[]){3, 4}, NULL);
    bcast_check(1, (int64_t[]){4}, 2, (int64_t[]){3, 4}, (int[]){1});
    bcast_check(1, (int64_t[]){3}, 2, (int64_t[]){3, 4}, (int[]){0});
    bcast_check(2, (int64_t[]){3, 1}, 2, (int64_t[]){3, 5}, (int[]){0, 1});
    bcast_check(3, (int64_t[]){2, 1, 3}, 4, (int64_t[]){4, 2, 5, 3}, (int[]){1, 2, 3});
    bcast_check(2, (int64_t[]){1, 6}, 3, (int64_t[]){6, 2, 7}, (int[]){1, 0}); /* swaps order */
    bcast_check(1, (int64_t[]){3}, 2, (int64_t[]){0, 3}, (int[]){1});         /* zero-size */
}

typedef struct {
    remat_shape in;
    remat_slice_params p;
} slice_case;

static void run_slice(remat_dtype dt, void *out, const void *in, const void *ctx)
{
    const slice_case *c = ctx;
    rmi_cpu_slice(dt, out, in, &c->in, &c->p);
}

static void slice_check(int rank, const int64_t *dims, const int64_t *start, const int64_t *limit,
                        const int64_t *stride)
{
    slice_case c = {.in = shp(rank, dims)};
    int64_t od[REMAT_MAX_RANK], idx[REMAT_MAX_RANK], iidx[REMAT_MAX_RANK] = {0};
    for (int i = 0; i < rank; i++) {
        c.p.start[i] = start[i], c.p.limit[i] = limit[i], c.p.stride[i] = stride[i];
        od[i] = 0;
        for (int64_t j = start[i]; j < limit[i]; j += stride[i])
            od[i]++; /* counted, not the ceil formula the kernel uses */
    }
    const remat_shape out = shp(rank, od);
    const int64_t n = remat_shape_numel(&out);
    int64_t *src = xmalloc((size_t)n * sizeof *src);
    for (int64_t f = 0; f < n; f++) {
        unravel(&out, f, idx);
        for (int i = 0; i < rank; i++)
            iidx[i] = start[i] + idx[i] * stride[i];
        src[f] = ravel(&c.in, iidx);
    }
    check_structural("slice", run_slice, &c, remat_shape_numel(&c.in), n, src);
    free(src);
}

static void test_cpu_kernels_slice_with_strides(void **state)
{
    (void)state;
    slice_check(0, NULL, NULL, NULL, NULL);
    slice_check(1, (int64_t[]){10}, (int64_t[]){2}, (int64_t[]){9}, (int64_t[]){3});
    slice_check(2, (int64_t[]){6, 8}, (int64_t[]){1, 0}, (int64_t[]){5, 8}, (int64_t[]){1, 1});
    slice_check(3, (int64_t[]){7, 9, 5}, (int64_t[]){1, 0, 2}, (int64_t[]){7, 9, 5},
                (int64_t[]){2, 3, 1});
    slice_check(3, (int64_t[]){4, 5, 6}, (int64_t[]){0, 4, 1}, (int64_t[]){4, 5, 6},
                (int64_t[]){1, 1, 7}); /* stride past the end */
    slice_check(2, (int64_t[]){4, 5}, (int64_t[]){2, 1}, (int64_t[]){2, 4},
                (int64_t[]){1, 1}); /* empty */
}

typedef struct {
    remat_shape in, out;
    remat_pad_params p;
} pad_case;

static void run_pad(remat_dtype dt, void *out, const void *in, const void *ctx)
{
    const pad_case *c = ctx;
    rmi_cpu_pad(dt, out, &c->out, in, &c->in, &c->p);
}

static void pad_check(int rank, const int64_t *dims, const int64_t *lo, const int64_t *hi,
                      const int64_t *interior)
{
    pad_case c = {.in = shp(rank, dims)};
    int64_t od[REMAT_MAX_RANK], idx[REMAT_MAX_RANK], iidx[REMAT_MAX_RANK] = {0};
    for (int i = 0; i < rank; i++) {
        c.p.low[i] = lo[i], c.p.high[i] = hi[i], c.p.interior[i] = interior[i];
        od[i] = lo[i] + hi[i] + dims[i] + (dims[i] > 0 ? (dims[i] - 1) * interior[i] : 0);
    }
    c.out = shp(rank, od);
    const int64_t n = remat_shape_numel(&c.out);
    int64_t *src = xmalloc((size_t)n * sizeof *src);
    for (int64_t f = 0; f < n; f++) {
        unravel(&c.out, f, idx);
        src[f] = 0;
        for (int i = 0; i < rank; i++) {
            const int64_t q = idx[i] - lo[i];
            if (q < 0 || q % (interior[i] + 1) != 0 || q / (interior[i] + 1) >= dims[i])
                src[f] = -1;
            else
                iidx[i] = q / (interior[i] + 1);
        }
        if (src[f] == 0)
            src[f] = ravel(&c.in, iidx);
    }
    check_structural("pad", run_pad, &c, remat_shape_numel(&c.in), n, src);
    free(src);
}

static void test_cpu_kernels_pad_edges_and_interior(void **state)
{
    (void)state;
    pad_check(0, NULL, NULL, NULL, NULL);
    pad_check(1, (int64_t[]){4}, (int64_t[]){2}, (int64_t[]){1}, (int64_t[]){0});
    pad_check(1, (int64_t[]){4}, (int64_t[]){0}, (int64_t[]){0}, (int64_t[]){2});
    pad_check(2, (int64_t[]){3, 4}, (int64_t[]){0, 0}, (int64_t[]){0, 0}, (int64_t[]){0, 0});
    pad_check(2, (int64_t[]){3, 4}, (int64_t[]){1, 2}, (int64_t[]){2, 0}, (int64_t[]){1, 3});
    pad_check(3, (int64_t[]){2, 3, 4}, (int64_t[]){0, 1, 0}, (int64_t[]){1, 0, 2},
              (int64_t[]){2, 0, 1});
    pad_check(2, (int64_t[]){0, 3}, (int64_t[]){1, 0}, (int64_t[]){2, 1}, (int64_t[]){4, 1});
}

typedef struct {
    int n_in, axis;
    remat_shape shapes[4];
    int64_t offs[4];
} concat_case;

static void run_concat(remat_dtype dt, void *out, const void *in, const void *ctx)
{
    const concat_case *c = ctx;
    const void *ins[4];
    for (int j = 0; j < c->n_in; j++)
        ins[j] = (const char *)in + c->offs[j] * (int64_t)remat_dtype_size(dt);
    int64_t chunks[4];
    remat_concat_plan plan;
    rmi_layout_concatenate(&plan, chunks, dt, c->n_in, c->shapes, c->axis);
    rmi_cpu_concatenate_run(&plan, out, ins);
}

static void concat_check(int rank, const int64_t *dims, int axis, int n_in, const int64_t *sizes)
{
    concat_case c = {.n_in = n_in, .axis = axis};
    int64_t od[REMAT_MAX_RANK], idx[REMAT_MAX_RANK], total = 0, n_all = 0;
    for (int j = 0; j < n_in; j++) {
        c.shapes[j] = shp(rank, dims);
        c.shapes[j].dims[axis] = sizes[j];
        c.offs[j] = n_all; /* all inputs packed one after the other in `in` */
        n_all += remat_shape_numel(&c.shapes[j]);
        total += sizes[j];
    }
    memcpy(od, dims, (size_t)rank * sizeof *od);
    od[axis] = total;
    const remat_shape out = shp(rank, od);
    const int64_t n = remat_shape_numel(&out);
    int64_t *src = xmalloc((size_t)n * sizeof *src);
    for (int64_t f = 0; f < n; f++) {
        unravel(&out, f, idx);
        int j = 0;
        while (idx[axis] >= sizes[j])
            idx[axis] -= sizes[j++];
        src[f] = c.offs[j] + ravel(&c.shapes[j], idx);
    }
    check_structural("concatenate", run_concat, &c, n_all, n, src);
    free(src);
}

static void test_cpu_kernels_concatenate_any_axis(void **state)
{
    (void)state;
    const int64_t d[] = {3, 4, 5};
    for (int axis = 0; axis < 3; axis++) {
        concat_check(3, d, axis, 3, (int64_t[]){2, 0, 3});
        concat_check(3, d, axis, 1, (int64_t[]){4});
    }
    concat_check(1, (int64_t[]){1}, 0, 4, (int64_t[]){1, 2, 1, 3});
    concat_check(2, (int64_t[]){0, 2}, 1, 2, (int64_t[]){2, 3}); /* zero-size */
}

/* ---- reduce_sum ---- */

static void reduce_check(int rank, const int64_t *dims, const bool *reduce)
{
    const remat_shape s = shp(rank, dims);
    int64_t od[REMAT_MAX_RANK], idx[REMAT_MAX_RANK], oidx[REMAT_MAX_RANK] = {0};
    int orank = 0;
    for (int i = 0; i < rank; i++)
        if (!reduce[i])
            od[orank++] = dims[i];
    const remat_shape os = shp(orank, od);
    const int64_t n = remat_shape_numel(&s), no = remat_shape_numel(&os);
    double *in = xmalloc((size_t)n * sizeof *in), *want = xmalloc((size_t)no * sizeof *want);
    double *out = xmalloc((size_t)(no + 1) * sizeof *out);
    long double *acc = xmalloc((size_t)no * sizeof *acc);
    fill(in, n);
    for (int64_t i = 0; i < no; i++)
        acc[i] = 0;
    for (int64_t f = 0; f < n; f++) {
        unravel(&s, f, idx);
        int k = 0;
        for (int i = 0; i < rank; i++)
            if (!reduce[i])
                oidx[k++] = idx[i];
        acc[ravel(&os, oidx)] += in[f];
    }
    for (int64_t i = 0; i < no; i++)
        want[i] = (double)acc[i];
    for (int64_t i = 0; i <= no; i++)
        out[i] = NAN;
    rmi_cpu_reduce_sum(REMAT_F64, out, in, &s, reduce);
    /* inputs are multiples of 1/8 below 2^7: every partial sum is exact */
    check_close("reduce_sum f64", no, out, want, 0, 0);
    assert_true(isnan(out[no]));
    float *in32 = to_f32(in, n), *out32 = xmalloc((size_t)(no + 1) * sizeof *out32);
    rmi_cpu_reduce_sum(REMAT_F32, out32, in32, &s, reduce);
    check_close_f32("reduce_sum f32", no, out32, want, 1e-6, 1e-6 * (double)n);
    free(in), free(want), free(out), free(acc), free(in32), free(out32);
}

/* add(x, pad(g)) with zero interior: x + g inside g's region (g + x for
 * pad_first), x + 0.0 outside (so -0.0 becomes +0.0, as the pad's zeros
 * made it), bit for bit, with -0.0, NaN and infinities on both sides */
static void add_pad_check(int rank, const int64_t *dims, const int64_t *gdims, const int64_t *low)
{
    remat_pad_params pp;
    memset(&pp, 0, sizeof pp);
    for (int i = 0; i < rank; i++) {
        pp.low[i] = low[i];
        pp.high[i] = dims[i] - gdims[i] - low[i];
    }
    const remat_shape os = shp(rank, dims), gs = shp(rank, gdims);
    const int64_t n = remat_shape_numel(&os), ng = remat_shape_numel(&gs);
    static const double special[] = {-0.0, 0.0, NAN, INFINITY, -INFINITY, 1.5, -2.25, 1e-300};
    double *x = xmalloc((size_t)n * 8 + 8), *g = xmalloc((size_t)ng * 8 + 8), *out = xmalloc((size_t)n * 8 + 8);
    double *want = xmalloc((size_t)n * 8 + 8);
    float *x32 = xmalloc((size_t)n * 4 + 4), *g32 = xmalloc((size_t)ng * 4 + 4), *out32 = xmalloc((size_t)n * 4 + 4);
    float *want32 = xmalloc((size_t)n * 4 + 4);
    for (int64_t i = 0; i < n; i++)
        x[i] = special[(i * 3) % 8], x32[i] = (float)x[i];
    for (int64_t i = 0; i < ng; i++)
        g[i] = special[(i * 5 + 1) % 8] * 0.5, g32[i] = (float)g[i];
    for (int pad_first = 0; pad_first < 2; pad_first++) {
        int64_t idx[REMAT_MAX_RANK], gidx[REMAT_MAX_RANK];
        for (int64_t f = 0; f < n; f++) {
            unravel(&os, f, idx);
            int in = 1;
            for (int i = 0; i < rank; i++) {
                gidx[i] = idx[i] - low[i];
                in = in && gidx[i] >= 0 && gidx[i] < gdims[i];
            }
            volatile double zero = 0.0;
            volatile float zero32 = 0.0f;
            if (!in) {
                want[f] = x[f] + zero;
                want32[f] = x32[f] + zero32;
            } else {
                int64_t j = ravel(&gs, gidx);
                want[f] = pad_first ? g[j] + x[f] : x[f] + g[j];
                want32[f] = pad_first ? g32[j] + x32[f] : x32[f] + g32[j];
            }
        }
        for (int64_t i = 0; i <= n; i++)
            out[i] = 7.0, out32[i] = 7.0f; /* every element written, none past */
        rmi_cpu_add_pad(REMAT_F64, out, x, g, &os, &gs, &pp, pad_first);
        rmi_cpu_add_pad(REMAT_F32, out32, x32, g32, &os, &gs, &pp, pad_first);
        if (memcmp(out, want, (size_t)n * 8) != 0 || memcmp(out32, want32, (size_t)n * 4) != 0)
            fail_msg("add_pad rank %d (pad_first %d): bits differ from the definition", rank, pad_first);
        assert_true(out[n] == 7.0 && out32[n] == 7.0f);
    }
    free(x), free(g), free(out), free(want), free(x32), free(g32), free(out32), free(want32);
}

static void test_cpu_kernels_add_pad_bits(void **state)
{
    (void)state;
    add_pad_check(0, NULL, NULL, NULL);
    add_pad_check(1, (int64_t[]){3}, (int64_t[]){1}, (int64_t[]){2});
    add_pad_check(1, (int64_t[]){9}, (int64_t[]){0}, (int64_t[]){4});
    add_pad_check(2, (int64_t[]){3, 100}, (int64_t[]){1, 100}, (int64_t[]){1, 0});
    add_pad_check(2, (int64_t[]){100, 3}, (int64_t[]){100, 1}, (int64_t[]){0, 2});
    add_pad_check(2, (int64_t[]){5, 7}, (int64_t[]){2, 3}, (int64_t[]){3, 1});
    add_pad_check(3, (int64_t[]){4, 5, 6}, (int64_t[]){2, 3, 2}, (int64_t[]){1, 0, 3});
    add_pad_check(2, (int64_t[]){0, 3}, (int64_t[]){0, 1}, (int64_t[]){0, 1});
}

static void test_cpu_kernels_reduce_sum_every_axis_set(void **state)
{
    (void)state;
    const int64_t d[] = {3, 4, 5, 6};
    for (unsigned mask = 0; mask < 16; mask++) {
        bool r[4];
        for (int i = 0; i < 4; i++)
            r[i] = (mask >> i) & 1u;
        reduce_check(4, d, r);
    }
    reduce_check(0, NULL, NULL);
    reduce_check(1, (int64_t[]){100003}, (bool[]){true});                 /* sum all */
    reduce_check(2, (int64_t[]){301, 67}, (bool[]){true, false});         /* column sums */
    reduce_check(2, (int64_t[]){67, 301}, (bool[]){false, true});         /* row sums */
    reduce_check(3, (int64_t[]){1, 7, 1}, (bool[]){true, false, true});   /* size-1 axes */
    reduce_check(3, (int64_t[]){2, 0, 3}, (bool[]){false, true, false});  /* empty sum: 0 */
    reduce_check(2, (int64_t[]){0, 3}, (bool[]){false, true});            /* empty output */
    reduce_check(2, (int64_t[]){3, 4}, (bool[]){false, false});           /* identity */
}

/* The header promises one running sum per output in ascending row-major
 * order; with values that are not exact in binary, any other order (lanes,
 * pairwise, per-row partials) changes the bits, so this compares bitwise. */
static void reduce_order_check(int rank, const int64_t *dims, const bool *reduce)
{
    const remat_shape s = shp(rank, dims);
    int64_t od[REMAT_MAX_RANK], idx[REMAT_MAX_RANK], oidx[REMAT_MAX_RANK] = {0};
    int orank = 0;
    for (int i = 0; i < rank; i++)
        if (!reduce[i])
            od[orank++] = dims[i];
    const remat_shape os = shp(orank, od);
    const int64_t n = remat_shape_numel(&s), no = remat_shape_numel(&os);
    double *in = xmalloc((size_t)n * sizeof *in), *want = xmalloc((size_t)no * sizeof *want);
    double *out = xmalloc((size_t)no * sizeof *out);
    float *want32 = xmalloc((size_t)no * sizeof *want32), *out32 = xmalloc((size_t)no * 4);
    for (int64_t i = 0; i < n; i++)
        in[i] = rnd() * 0.1 + (i % 3 ? 1e7 : -1e7) / 3.0;
    float *in32 = to_f32(in, n);
    for (int64_t i = 0; i < no; i++)
        want[i] = 0, want32[i] = 0;
    for (int64_t f = 0; f < n; f++) {
        unravel(&s, f, idx);
        int k = 0;
        for (int i = 0; i < rank; i++)
            if (!reduce[i])
                oidx[k++] = idx[i];
        want[ravel(&os, oidx)] += in[f];
        want32[ravel(&os, oidx)] += in32[f];
    }
    rmi_cpu_reduce_sum(REMAT_F64, out, in, &s, reduce);
    rmi_cpu_reduce_sum(REMAT_F32, out32, in32, &s, reduce);
    for (int64_t i = 0; i < no; i++) {
        if (memcmp(&out[i], &want[i], sizeof(double)) != 0)
            fail_msg("reduce_sum f64 order: element %lld: got %.17g want %.17g", (long long)i,
                     out[i], want[i]);
        if (memcmp(&out32[i], &want32[i], sizeof(float)) != 0)
            fail_msg("reduce_sum f32 order: element %lld: got %.9g want %.9g", (long long)i,
                     (double)out32[i], (double)want32[i]);
    }
    free(in), free(want), free(out), free(want32), free(out32), free(in32);
}

static void test_cpu_kernels_reduce_sum_order_is_ascending(void **state)
{
    (void)state;
    reduce_order_check(1, (int64_t[]){1001}, (bool[]){true});
    reduce_order_check(2, (int64_t[]){7, 37}, (bool[]){false, true}); /* 4-row chains + tail */
    reduce_order_check(2, (int64_t[]){37, 7}, (bool[]){true, false});
    reduce_order_check(3, (int64_t[]){5, 3, 17}, (bool[]){true, false, true});
    reduce_order_check(4, (int64_t[]){3, 4, 5, 6}, (bool[]){false, true, false, true});
    /* -0.0 sums to +0.0: the running sum starts at +0 */
    const double negz[3] = {-0.0, -0.0, -0.0};
    double o = 1;
    rmi_cpu_reduce_sum(REMAT_F64, &o, negz, &(remat_shape){1, {3}}, (bool[]){true});
    assert_true(o == 0 && !signbit(o));
}

/* ---- reduce_max ---- */

/* IEEE 754-2019 maximum of a run, from its definition: NaN if any element
 * is NaN, else the largest, +0 over -0; -inf for an empty run */
static void reduce_max_check(int rank, const int64_t *dims, const bool *reduce, int specials)
{
    const remat_shape s = shp(rank, dims);
    int64_t od[REMAT_MAX_RANK], idx[REMAT_MAX_RANK], oidx[REMAT_MAX_RANK] = {0};
    int orank = 0;
    for (int i = 0; i < rank; i++)
        if (!reduce[i])
            od[orank++] = dims[i];
    const remat_shape os = shp(orank, od);
    const int64_t n = remat_shape_numel(&s), no = remat_shape_numel(&os);
    double *in = xmalloc((size_t)(n + 1) * sizeof *in), *want = xmalloc((size_t)(no + 1) * sizeof *want);
    double *out = xmalloc((size_t)(no + 1) * sizeof *out);
    bool *nan_seen = xcalloc((size_t)no + 1, 1);
    fill(in, n);
    for (int64_t f = 0; specials && f < n; f++) /* zeros of both signs everywhere, a few NaNs */
        in[f] = f % 29 == 3 ? NAN : f % 5 == 1 ? 0.0 : f % 5 == 2 ? -0.0 : in[f] - 20.0;
    for (int64_t i = 0; i < no; i++)
        want[i] = -INFINITY;
    for (int64_t f = 0; f < n; f++) {
        unravel(&s, f, idx);
        int k = 0;
        for (int i = 0; i < rank; i++)
            if (!reduce[i])
                oidx[k++] = idx[i];
        int64_t o = ravel(&os, oidx);
        if (isnan(in[f]))
            nan_seen[o] = true;
        else if (in[f] > want[o] || (in[f] == want[o] && !signbit(in[f])))
            want[o] = in[f];
    }
    for (int64_t i = 0; i < no; i++)
        if (nan_seen[i])
            want[i] = NAN;
    out[no] = 12345.0;
    rmi_cpu_reduce_max(REMAT_F64, out, in, &s, reduce);
    float *in32 = to_f32(in, n), *out32 = xmalloc((size_t)(no + 1) * sizeof *out32);
    rmi_cpu_reduce_max(REMAT_F32, out32, in32, &s, reduce);
    for (int64_t i = 0; i < no; i++) {
        float w32 = (float)want[i];
        if (memcmp(&out[i], &want[i], sizeof out[i]) && !(isnan(out[i]) && isnan(want[i])))
            fail_msg("reduce_max f64 element %lld: got %g want %g", (long long)i, out[i], want[i]);
        if (memcmp(&out32[i], &w32, sizeof w32) && !(isnan(out32[i]) && isnan(w32)))
            fail_msg("reduce_max f32 element %lld: got %g want %g", (long long)i, (double)out32[i], (double)w32);
    }
    assert_true(out[no] == 12345.0);
    free(in), free(want), free(out), free(nan_seen), free(in32), free(out32);
}

static void test_cpu_kernels_reduce_max_nan_zeros_and_empty(void **state)
{
    (void)state;
    const int64_t d[] = {3, 4, 5, 6};
    for (unsigned mask = 0; mask < 16; mask++) {
        bool r[4];
        for (int i = 0; i < 4; i++)
            r[i] = (mask >> i) & 1u;
        reduce_max_check(4, d, r, 0);
        reduce_max_check(4, d, r, 1);
    }
    reduce_max_check(1, (int64_t[]){1001}, (bool[]){true}, 1);
    reduce_max_check(2, (int64_t[]){3, 0}, (bool[]){false, true}, 0); /* empty runs: -inf */
    reduce_max_check(2, (int64_t[]){0, 3}, (bool[]){false, true}, 0); /* empty output */
    /* +0 beats -0 in either order, as XLA's lax.reduce_max */
    const double z[2][2] = {{0.0, -0.0}, {-0.0, 0.0}};
    for (int k = 0; k < 2; k++) {
        double o = 1;
        rmi_cpu_reduce_max(REMAT_F64, &o, z[k], &(remat_shape){1, {2}}, (bool[]){true});
        assert_true(o == 0 && !signbit(o));
    }
}

/* ---- main ---- */

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cpu_kernels_transpose_any_perm),
        cmocka_unit_test(test_cpu_kernels_broadcast_in_dim),
        cmocka_unit_test(test_cpu_kernels_slice_with_strides),
        cmocka_unit_test(test_cpu_kernels_pad_edges_and_interior),
        cmocka_unit_test(test_cpu_kernels_concatenate_any_axis),
        cmocka_unit_test(test_cpu_kernels_add_pad_bits),
        cmocka_unit_test(test_cpu_kernels_reduce_sum_every_axis_set),
        cmocka_unit_test(test_cpu_kernels_reduce_sum_order_is_ascending),
        cmocka_unit_test(test_cpu_kernels_reduce_max_nan_zeros_and_empty),
    };
    rng_seed(0x9e3779b97f4a7c15ull);
    return cmocka_run_group_tests(tests, NULL, NULL);
}

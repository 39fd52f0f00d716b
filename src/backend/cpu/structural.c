/*
 * structural.c — transpose, broadcast_in_dim, slice, pad and concatenate.
 *
 * All five are "copy elements from a strided view of the input to a strided
 * view of the output". Each op only computes the iteration dims and the two
 * stride vectors (in elements), then hands them to one engine (plan_make(),
 * rmi_cpu_copy_run()), which
 *   1. drops size-1 dims and merges neighbouring dims that are contiguous in
 *      both views, so e.g. slicing whole rows becomes one memcpy;
 *   2. walks the outer dims with an odometer and copies the innermost dim as a
 *      row: memcpy when both sides are contiguous, a fill when the source
 *      stride is 0 (broadcast), else a typed strided loop;
 *   3. for a 2-D transpose-like inner pair (the source contiguous along the
 *      second-innermost dim, the destination along the innermost) copies in
 *      square tiles so that neither side walks memory with a large stride.
 * Elements are moved as uint32_t / uint64_t by element size: the ops are
 * dtype-generic and never look at the values.
 *
 * Steps 1 and the choice in 2-3 depend only on shapes, so each op also has a
 * _plan form that does them once (the CPU backend calls it when it lowers the
 * op) and rmi_cpu_copy_run() that only moves elements. The plain kernels
 * are make-a-plan-then-run, so both paths are one engine. Scan bodies run
 * these ops on 1..3 elements thousands of times: a copy of up to 64 bytes is
 * an inline element loop, not a memcpy/memset call.
 */
#include <string.h>

#include "backend/cpu/cpu_kernels.h"
#include "core/assert.h"

/* 32x32 tiles: 2 x 8 KiB of f64, comfortably inside L1. */
#define TILE 32

static void row_major_strides(int rank, const int64_t *dims, int64_t *strides)
{
    int64_t s = 1;
    for (int i = rank - 1; i >= 0; i--) {
        strides[i] = s;
        s *= dims[i];
    }
}

/* Drop size-1 dims, then merge dim i into i+1 where both views are contiguous
 * across the pair. Returns the new rank; dims/strides are rewritten in place. */
static int coalesce(int rank, int64_t *dims, int64_t *ds, int64_t *ss)
{
    int r = 0;
    for (int i = 0; i < rank; i++) {
        if (dims[i] == 1)
            continue;
        if (r > 0 && ds[r - 1] == ds[i] * dims[i] && ss[r - 1] == ss[i] * dims[i]) {
            dims[r - 1] *= dims[i]; /* outer (r-1) absorbs inner i */
            ds[r - 1] = ds[i];
            ss[r - 1] = ss[i];
            continue;
        }
        dims[r] = dims[i];
        ds[r] = ds[i];
        ss[r] = ss[i];
        r++;
    }
    return r;
}

/* Advance the index over dims[0..nd) by one, moving both offsets along. */
static void odometer_next(int nd, const int64_t *dims, const int64_t *ds, const int64_t *ss,
                          int64_t *idx, int64_t *doff, int64_t *soff)
{
    for (int d = nd - 1; d >= 0; d--) {
        *doff += ds[d];
        *soff += ss[d];
        if (++idx[d] < dims[d])
            return;
        *doff -= ds[d] * dims[d];
        *soff -= ss[d] * dims[d];
        idx[d] = 0;
    }
}

#define COPY_ROW(U)                                \
    do {                                           \
        U *restrict o_ = dst;                      \
        const U *restrict i_ = src;                \
        if (sstride == 0) {                        \
            const U v_ = *i_;                      \
            for (int64_t k = 0; k < n; k++)        \
                o_[k * dstride] = v_;              \
        } else {                                   \
            for (int64_t k = 0; k < n; k++)        \
                o_[k * dstride] = i_[k * sstride]; \
        }                                          \
    } while (0)

/* Small contiguous copies and fills stay inline: the libc call and its size
 * dispatch cost more than moving a few elements. They are written as two
 * overlapping fixed-size moves (as libc does for short sizes), not as an
 * element loop, which gcc would turn back into a memcpy/memset call.
 * bytes is 0 or a multiple of 4 (f32/f64 elements). */
enum { SMALL_BYTES = 64 };

#define MOVE_HEAD_TAIL(K)                  \
    do {                                   \
        unsigned char a_[K], b_[K];        \
        memcpy(a_, s, K);                  \
        memcpy(b_, s + bytes - (K), K);    \
        memcpy(d, a_, K);                  \
        memcpy(d + bytes - (K), b_, K);    \
    } while (0)

static void copy_contig(size_t esize, int64_t n, void *restrict dst, const void *restrict src)
{
    const size_t bytes = (size_t)n * esize;
    unsigned char *d = dst;
    const unsigned char *s = src;
    if (bytes > SMALL_BYTES)
        memcpy(d, s, bytes);
    else if (bytes >= 32)
        MOVE_HEAD_TAIL(32);
    else if (bytes >= 16)
        MOVE_HEAD_TAIL(16);
    else if (bytes >= 8)
        MOVE_HEAD_TAIL(8);
    else if (bytes >= 4)
        memcpy(d, s, 4);
}

static void zero_fill(void *dst, size_t bytes)
{
    unsigned char *d = dst;
    if (bytes > SMALL_BYTES) {
        memset(d, 0, bytes);
    } else if (bytes >= 32) {
        memset(d, 0, 32);
        memset(d + bytes - 32, 0, 32);
    } else if (bytes >= 16) {
        memset(d, 0, 16);
        memset(d + bytes - 16, 0, 16);
    } else if (bytes >= 8) {
        memset(d, 0, 8);
        memset(d + bytes - 8, 0, 8);
    } else if (bytes >= 4) {
        memset(d, 0, 4);
    }
}

static void copy_row(size_t esize, int64_t n, void *dst, int64_t dstride, const void *src,
                     int64_t sstride)
{
    if (dstride == 1 && sstride == 1) {
        copy_contig(esize, n, dst, src);
    } else if (esize == 4) {
        COPY_ROW(uint32_t);
    } else {
        COPY_ROW(uint64_t);
    }
}

/* (A,B) block with source strides (1, sb) and destination strides (da, 1). */
#define COPY_TILED(U)                                               \
    do {                                                            \
        U *restrict o_ = dst;                                       \
        const U *restrict i_ = src;                                 \
        for (int64_t a0 = 0; a0 < na; a0 += TILE)                   \
            for (int64_t b0 = 0; b0 < nb; b0 += TILE) {             \
                const int64_t a1 = a0 + TILE < na ? a0 + TILE : na; \
                const int64_t b1 = b0 + TILE < nb ? b0 + TILE : nb; \
                for (int64_t a = a0; a < a1; a++)                   \
                    for (int64_t b = b0; b < b1; b++)               \
                        o_[a * da + b] = i_[a + b * sb];            \
            }                                                       \
    } while (0)

static void copy_tiled(size_t esize, int64_t na, int64_t nb, void *dst, int64_t da,
                       const void *src, int64_t sb)
{
    if (esize == 4)
        COPY_TILED(uint32_t);
    else
        COPY_TILED(uint64_t);
}

/* dst[sum_i k_i*ds[i]] = src[sum_i k_i*ss[i]] for every index k < dims, dst
 * and src displaced by doff/soff elements, after zeroing zero_bytes of dst.
 * Strides are in elements; dims/ds/ss are scratch copies the plan may edit. */
static void plan_make(remat_cpu_copy_plan *p, size_t esize, int rank, int64_t *dims, int64_t *ds, int64_t doff,
                      int64_t *ss, int64_t soff, size_t zero_bytes)
{
    memset(p, 0, sizeof *p);
    p->esize = (uint8_t)esize;
    p->doff = doff;
    p->soff = soff;
    p->zero_bytes = zero_bytes;
    p->kind = REMAT_CPU_COPY_EMPTY;
    for (int i = 0; i < rank; i++)
        if (dims[i] == 0)
            return;
    const int r = coalesce(rank, dims, ds, ss);
    if (r == 0 || (r == 1 && ds[0] == 1 && ss[0] == 1)) {
        p->kind = REMAT_CPU_COPY_CONTIG;
        p->n = r == 0 ? 1 : dims[0];
        return;
    }
    const bool tiled = r >= 2 && ss[r - 2] == 1 && ds[r - 1] == 1 && ss[r - 1] != 1 &&
                       ss[r - 1] != 0 && dims[r - 1] >= 8 && dims[r - 2] >= 8;
    p->kind = tiled ? REMAT_CPU_COPY_TILED : REMAT_CPU_COPY_ROWS;
    p->rank = (uint8_t)r;
    p->nouter = tiled ? r - 2 : r - 1;
    p->outer = 1;
    for (int i = 0; i < p->nouter; i++)
        p->outer *= dims[i];
    for (int i = 0; i < r; i++) {
        p->dims[i] = dims[i];
        p->ds[i] = ds[i];
        p->ss[i] = ss[i];
    }
}

/* ROWS/TILED: the odometer walk (kept out of rmi_cpu_copy_run so that the
 * contiguous case does not pay for its stack frame) */
__attribute__((noinline)) static void copy_strided(const remat_cpu_copy_plan *p, char *dst, const char *src)
{
    const size_t esize = p->esize;
    const int r = p->rank, nouter = p->nouter;
    const bool tiled = p->kind == REMAT_CPU_COPY_TILED;
    const int64_t *dims = p->dims, *ds = p->ds, *ss = p->ss;
    int64_t idx[REMAT_MAX_RANK] = {0}, doff = 0, soff = 0;
    for (int64_t o = 0; o < p->outer; o++) {
        char *d = dst + doff * (int64_t)esize;
        const char *s = src + soff * (int64_t)esize;
        if (tiled)
            copy_tiled(esize, dims[r - 2], dims[r - 1], d, ds[r - 2], s, ss[r - 1]);
        else
            copy_row(esize, dims[r - 1], d, ds[r - 1], s, ss[r - 1]);
        odometer_next(nouter, dims, ds, ss, idx, &doff, &soff);
    }
}

void rmi_cpu_copy_run(const remat_cpu_copy_plan *p, void *out, const void *in)
{
    if (p->zero_bytes) /* all-zero bits are +0.0 in IEEE f32/f64 */
        zero_fill(out, p->zero_bytes);
    char *dst = (char *)out + p->doff * (int64_t)p->esize;
    const char *src = (const char *)in + p->soff * (int64_t)p->esize;
    if (p->kind == REMAT_CPU_COPY_CONTIG)
        copy_contig(p->esize, p->n, dst, src);
    else if (p->kind != REMAT_CPU_COPY_EMPTY)
        copy_strided(p, dst, src);
}

void rmi_cpu_transpose_plan(remat_cpu_copy_plan *p, remat_dtype dt, const remat_shape *in_shape,
                            const int *perm)
{
    const int r = in_shape->rank;
    int64_t in_st[REMAT_MAX_RANK], dims[REMAT_MAX_RANK], ds[REMAT_MAX_RANK], ss[REMAT_MAX_RANK];
    row_major_strides(r, in_shape->dims, in_st);
    for (int i = 0; i < r; i++) {
        REMAT_ASSERT(perm[i] >= 0 && perm[i] < r);
        dims[i] = in_shape->dims[perm[i]];
        ss[i] = in_st[perm[i]];
    }
    row_major_strides(r, dims, ds);
    plan_make(p, remat_dtype_size(dt), r, dims, ds, 0, ss, 0, 0);
}

void rmi_cpu_transpose(remat_dtype dt, void *out, const void *in, const remat_shape *in_shape,
                       const int *perm)
{
    remat_cpu_copy_plan p;
    rmi_cpu_transpose_plan(&p, dt, in_shape, perm);
    rmi_cpu_copy_run(&p, out, in);
}

void rmi_cpu_broadcast_in_dim_plan(remat_cpu_copy_plan *p, remat_dtype dt, const remat_shape *out_shape,
                                   const remat_shape *in_shape, const int *bdims)
{
    const int r = out_shape->rank;
    int64_t in_st[REMAT_MAX_RANK], dims[REMAT_MAX_RANK], ds[REMAT_MAX_RANK], ss[REMAT_MAX_RANK];
    row_major_strides(in_shape->rank, in_shape->dims, in_st);
    for (int i = 0; i < r; i++) {
        dims[i] = out_shape->dims[i];
        ss[i] = 0; /* out dims no input dim maps to repeat the input */
    }
    for (int i = 0; i < in_shape->rank; i++) {
        const int o = bdims[i];
        REMAT_ASSERT(o >= 0 && o < r);
        REMAT_ASSERT(in_shape->dims[i] == dims[o] || in_shape->dims[i] == 1);
        if (in_shape->dims[i] != 1)
            ss[o] = in_st[i];
    }
    row_major_strides(r, dims, ds);
    plan_make(p, remat_dtype_size(dt), r, dims, ds, 0, ss, 0, 0);
}

void rmi_cpu_broadcast_in_dim(remat_dtype dt, void *out, const remat_shape *out_shape,
                              const void *in, const remat_shape *in_shape, const int *bdims)
{
    remat_cpu_copy_plan p;
    rmi_cpu_broadcast_in_dim_plan(&p, dt, out_shape, in_shape, bdims);
    rmi_cpu_copy_run(&p, out, in);
}

void rmi_cpu_slice_plan(remat_cpu_copy_plan *p, remat_dtype dt, const remat_shape *in_shape,
                        const remat_slice_params *sp)
{
    const int r = in_shape->rank;
    int64_t in_st[REMAT_MAX_RANK], dims[REMAT_MAX_RANK], ds[REMAT_MAX_RANK], ss[REMAT_MAX_RANK];
    int64_t off = 0;
    row_major_strides(r, in_shape->dims, in_st);
    for (int i = 0; i < r; i++) {
        const int64_t st = sp->start[i], lim = sp->limit[i], step = sp->stride[i];
        REMAT_ASSERT(step >= 1 && st >= 0 && st <= lim && lim <= in_shape->dims[i]);
        dims[i] = (lim - st + step - 1) / step;
        ss[i] = step * in_st[i];
        off += st * in_st[i];
    }
    row_major_strides(r, dims, ds);
    plan_make(p, remat_dtype_size(dt), r, dims, ds, 0, ss, off, 0);
}

void rmi_cpu_slice(remat_dtype dt, void *out, const void *in, const remat_shape *in_shape,
                   const remat_slice_params *p)
{
    remat_cpu_copy_plan cp;
    rmi_cpu_slice_plan(&cp, dt, in_shape, p);
    rmi_cpu_copy_run(&cp, out, in);
}

void rmi_cpu_pad_plan(remat_cpu_copy_plan *p, remat_dtype dt, const remat_shape *out_shape,
                      const remat_shape *in_shape, const remat_pad_params *pp)
{
    const int r = in_shape->rank;
    const size_t es = remat_dtype_size(dt);
    int64_t out_st[REMAT_MAX_RANK], dims[REMAT_MAX_RANK], ds[REMAT_MAX_RANK], ss[REMAT_MAX_RANK];
    int64_t off = 0;
    bool no_padding = true;
    REMAT_ASSERT(out_shape->rank == r);
    row_major_strides(r, out_shape->dims, out_st);
    row_major_strides(r, in_shape->dims, ss);
    for (int i = 0; i < r; i++) {
        const int64_t n = in_shape->dims[i];
        REMAT_ASSERT(pp->low[i] >= 0 && pp->high[i] >= 0 && pp->interior[i] >= 0);
        REMAT_ASSERT(out_shape->dims[i] ==
                     pp->low[i] + pp->high[i] + n + (n > 0 ? (n - 1) * pp->interior[i] : 0));
        no_padding = no_padding && pp->low[i] == 0 && pp->high[i] == 0 && pp->interior[i] == 0;
        dims[i] = n;
        ds[i] = (pp->interior[i] + 1) * out_st[i];
        off += pp->low[i] * out_st[i];
    }
    const int64_t n_out = remat_shape_numel(out_shape);
    if (no_padding) { /* one contiguous copy (or nothing) */
        int64_t one = 1, n = n_out;
        plan_make(p, es, 1, &n, &one, 0, (int64_t[]){1}, 0, 0);
        return;
    }
    plan_make(p, es, r, dims, ds, off, ss, 0, (size_t)n_out * es);
}

void rmi_cpu_pad(remat_dtype dt, void *out, const remat_shape *out_shape, const void *in,
                 const remat_shape *in_shape, const remat_pad_params *p)
{
    remat_cpu_copy_plan cp;
    rmi_cpu_pad_plan(&cp, dt, out_shape, in_shape, p);
    rmi_cpu_copy_run(&cp, out, in);
}

/* input j of a concatenation: (outer, chunk) into columns [col, col+chunk) of
 * the (outer, row) output */
static void concat_one(size_t es, int64_t outer, int64_t row, int64_t col, int64_t chunk, void *out,
                       const void *in)
{
    char *o = (char *)out + col * (int64_t)es;
    const char *s = in;
    if (outer == 1) {
        copy_contig(es, chunk, o, s);
    } else if (chunk == 1 && es == 8) { /* a column: one strided element per row */
        uint64_t *restrict od = (uint64_t *)(void *)o;
        const uint64_t *restrict sd = (const uint64_t *)(const void *)s;
        for (int64_t k = 0; k < outer; k++)
            od[k * row] = sd[k];
    } else {
        for (int64_t k = 0; k < outer; k++)
            copy_contig(es, chunk, o + k * row * (int64_t)es, s + k * chunk * (int64_t)es);
    }
}

void rmi_cpu_concatenate(remat_dtype dt, void *out, int n_in, const void *const *ins,
                         const remat_shape *const *in_shapes, int axis)
{
    REMAT_ASSERT(n_in >= 1);
    const remat_shape *s0 = in_shapes[0];
    REMAT_ASSERT(axis >= 0 && axis < s0->rank);
    const size_t es = remat_dtype_size(dt);
    /* view every input as (outer, chunk_j) and the output as (outer, sum chunk_j) */
    int64_t outer = 1, inner = 1, row = 0;
    for (int i = 0; i < axis; i++)
        outer *= s0->dims[i];
    for (int i = axis + 1; i < s0->rank; i++)
        inner *= s0->dims[i];
    for (int j = 0; j < n_in; j++) {
        REMAT_ASSERT(in_shapes[j]->rank == s0->rank);
        row += in_shapes[j]->dims[axis] * inner;
    }
    if (outer == 0 || row == 0)
        return;
    int64_t col = 0;
    for (int j = 0; j < n_in; j++) {
        const int64_t chunk = in_shapes[j]->dims[axis] * inner;
        if (chunk > 0)
            concat_one(es, outer, row, col, chunk, out, ins[j]);
        col += chunk;
    }
}

void rmi_cpu_concatenate_plan(remat_cpu_concat_plan *p, int64_t *chunks, remat_dtype dt, int n_in,
                              const remat_shape *in_shapes, int axis)
{
    REMAT_ASSERT(n_in >= 1);
    const remat_shape *s0 = &in_shapes[0];
    REMAT_ASSERT(axis >= 0 && axis < s0->rank);
    int64_t outer = 1, inner = 1, row = 0;
    for (int i = 0; i < axis; i++)
        outer *= s0->dims[i];
    for (int i = axis + 1; i < s0->rank; i++)
        inner *= s0->dims[i];
    for (int j = 0; j < n_in; j++) {
        REMAT_ASSERT(in_shapes[j].rank == s0->rank);
        chunks[j] = in_shapes[j].dims[axis] * inner;
        row += chunks[j];
    }
    *p = (remat_cpu_concat_plan){.n_in = n_in, .esize = remat_dtype_size(dt), .outer = outer, .row = row,
                                 .chunks = chunks};
}

void rmi_cpu_concatenate_run(const remat_cpu_concat_plan *p, void *out, const void *const *ins)
{
    if (p->outer == 0 || p->row == 0)
        return;
    int64_t col = 0;
    if (p->outer == 1) { /* the inputs one after the other */
        for (int j = 0; j < p->n_in; j++) {
            copy_contig(p->esize, p->chunks[j], (char *)out + col * (int64_t)p->esize, ins[j]);
            col += p->chunks[j];
        }
        return;
    }
    for (int j = 0; j < p->n_in; j++) {
        const int64_t chunk = p->chunks[j];
        if (chunk > 0)
            concat_one(p->esize, p->outer, p->row, col, chunk, out, ins[j]);
        col += chunk;
    }
}

/*
 * structural.c — transpose, broadcast_in_dim, slice, pad and concatenate.
 *
 * All five are "copy elements from a strided view of the input to a strided
 * view of the output". The plan (backend/layout.c, shared with CUDA) drops
 * size-1 dims, merges dims contiguous in both views and chooses how to walk
 * them, from shapes alone; the CPU backend makes it once when it lowers the
 * op. rmi_cpu_copy_run() then only moves elements:
 *   1. contiguous: one memcpy;
 *   2. rows: walks the outer dims with an odometer and copies the innermost
 *      dim as a row: memcpy when both sides are contiguous, a fill when the
 *      source stride is 0 (broadcast), else a typed strided loop;
 *   3. tiles: for a 2-D transpose-like inner pair (the source contiguous
 *      along the second-innermost dim, the destination along the innermost)
 *      copies in square tiles so that neither side walks memory with a large
 *      stride.
 * Elements are moved as uint32_t / uint64_t by element size: the ops are
 * dtype-generic and never look at the values. The plain kernels are
 * make-a-plan-then-run, so both paths are one engine. Scan bodies run
 * these ops on 1..3 elements thousands of times: a copy of up to 64 bytes is
 * an inline element loop, not a memcpy/memset call.
 */
#include <string.h>

#include "backend/cpu/cpu_kernels.h"
#include "core/assert.h"

/* 32x32 tiles: 2 x 8 KiB of f64, comfortably inside L1. */
#define TILE 32

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

/* ROWS/TILED: the odometer walk (kept out of rmi_cpu_copy_run so that the
 * contiguous case does not pay for its stack frame) */
__attribute__((noinline)) static void copy_strided(const remat_copy_plan *p, char *dst, const char *src)
{
    const size_t esize = p->esize;
    const int r = p->rank, nouter = p->nouter;
    const bool tiled = p->kind == REMAT_COPY_TILED;
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

void rmi_cpu_copy_run(const remat_copy_plan *p, void *out, const void *in)
{
    if (p->zero_bytes) /* all-zero bits are +0.0 in IEEE f32/f64 */
        zero_fill(out, p->zero_bytes);
    char *dst = (char *)out + p->doff * (int64_t)p->esize;
    const char *src = (const char *)in + p->soff * (int64_t)p->esize;
    if (p->kind == REMAT_COPY_CONTIG)
        copy_contig(p->esize, p->n, dst, src);
    else if (p->kind != REMAT_COPY_EMPTY)
        copy_strided(p, dst, src);
}

void rmi_cpu_transpose(remat_dtype dt, void *out, const void *in, const remat_shape *in_shape,
                       const int *perm)
{
    remat_copy_plan p;
    rmi_layout_transpose(&p, dt, in_shape, perm);
    rmi_cpu_copy_run(&p, out, in);
}

void rmi_cpu_broadcast_in_dim(remat_dtype dt, void *out, const remat_shape *out_shape,
                              const void *in, const remat_shape *in_shape, const int *bdims)
{
    remat_copy_plan p;
    rmi_layout_broadcast_in_dim(&p, dt, out_shape, in_shape, bdims);
    rmi_cpu_copy_run(&p, out, in);
}

void rmi_cpu_slice(remat_dtype dt, void *out, const void *in, const remat_shape *in_shape,
                   const remat_slice_params *p)
{
    remat_copy_plan cp;
    rmi_layout_slice(&cp, dt, in_shape, p);
    rmi_cpu_copy_run(&cp, out, in);
}

void rmi_cpu_pad(remat_dtype dt, void *out, const remat_shape *out_shape, const void *in,
                 const remat_shape *in_shape, const remat_pad_params *p)
{
    remat_copy_plan cp;
    rmi_layout_pad(&cp, dt, out_shape, in_shape, p);
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

void rmi_cpu_concatenate_run(const remat_concat_plan *p, void *out, const void *const *ins)
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

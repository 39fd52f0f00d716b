/*
 * plan.c — static arena planning: first-fit by offset, in execution order.
 *
 * Buffers are placed in order of their first instruction; before placing a
 * buffer written at instruction t, the buffers whose last read is before t
 * are released. An output never shares memory with a buffer read by the same
 * instruction (kernels assume no overlap), hence "before t", not "at t".
 */
#include <stdlib.h>

#include "backend/backend_impl.h"
#include "core/alloc.h"
#include "core/assert.h"
#include "core/error.h"

typedef struct {
    size_t off, end;
    int32_t last;
} live_buf;

static int by_first(const void *a, const void *b, void *bufs)
{
    const remat_plan_buf *B = bufs;
    int32_t ia = *(const int32_t *)a, ib = *(const int32_t *)b;
    if (B[ia].first != B[ib].first)
        return B[ia].first < B[ib].first ? -1 : 1;
    return ia < ib ? -1 : ia > ib;
}

remat_status remat_plan_offsets(remat_plan_buf *bufs, int32_t n, size_t align, size_t *arena_out)
{
    *arena_out = 0;
    if (n <= 0)
        return REMAT_OK;
    int32_t *order = remat_malloc(sizeof *order * (size_t)n);
    live_buf *act = remat_malloc(sizeof *act * (size_t)n); /* sorted by offset */
    if (!order || !act) {
        remat_free(order);
        remat_free(act);
        return remat_error(REMAT_ERR_NOMEM, "compile: out of memory planning the arena of %d buffers", (int)n);
    }
    for (int32_t i = 0; i < n; i++)
        order[i] = i;
    qsort_r(order, (size_t)n, sizeof *order, by_first, bufs);
    int32_t na = 0;
    size_t arena = 0;
    for (int32_t k = 0; k < n; k++) {
        remat_plan_buf *b = &bufs[order[k]];
        REMAT_ASSERT(b->last >= b->first);
        size_t size = (b->size + align - 1) / align * align;
        /* release buffers dead before this one is written */
        int32_t w = 0;
        for (int32_t i = 0; i < na; i++)
            if (act[i].last >= b->first)
                act[w++] = act[i];
        na = w;
        /* lowest gap that fits */
        size_t off = 0;
        int32_t pos = 0;
        for (; pos < na; pos++) {
            if (act[pos].off >= off + size)
                break;
            if (act[pos].end > off)
                off = act[pos].end;
        }
        b->offset = off;
        for (int32_t i = na; i > pos; i--)
            act[i] = act[i - 1];
        act[pos] = (live_buf){off, off + size, b->last};
        na++;
        if (off + size > arena)
            arena = off + size;
    }
    remat_free(order);
    remat_free(act);
    *arena_out = arena;
    return REMAT_OK;
}

/*
 * plan.c — static arena planning: first-fit by offset, in execution order.
 *
 * Buffers are placed in order of their first instruction; before placing a
 * buffer written at instruction t, the buffers whose last read is before t
 * are released. An output never shares memory with a buffer read by the same
 * instruction (kernels assume no overlap), hence "before t", not "at t".
 *
 * Small plans (most programs) scan a sorted array of the live buffers. In
 * larger ones the buffers alive at a time sit in a treap ordered by offset, each subtree
 * knowing its lowest offset, highest end and widest gap between neighbours,
 * so the lowest gap that fits is found in O(log n); a heap ordered by last
 * use releases them. The whole plan is O(n log n): a kinetics right-hand
 * side of 20,000 species keeps most of its values alive at once, and the
 * former scan over the live list made planning quadratic (82% of compiling
 * it). The offsets are those of the plain first-fit scan (test_exec holds the
 * two equal on random lifetimes).
 */
#include <stdlib.h>

#include "backend/backend_impl.h"
#include "core/alloc.h"
#include "core/assert.h"
#include "core/error.h"

#define NIL (-1)

typedef struct {
    size_t off, end;     /* this buffer: [off, end) */
    size_t lo, hi;       /* subtree: lowest offset, highest end */
    size_t gap;          /* subtree: widest gap between neighbours in it */
    uint32_t prio;
    int32_t left, right;
} node;

typedef struct {
    node *t;
    int32_t root;
    uint32_t rng;
} treap;

static size_t gap_between(size_t end, size_t off) { return off > end ? off - end : 0; }
static size_t max2(size_t a, size_t b) { return a > b ? a : b; }

static void pull(node *t, int32_t i)
{
    node *x = &t[i];
    x->lo = x->off;
    x->hi = x->end;
    x->gap = 0;
    if (x->left != NIL) {
        const node *l = &t[x->left];
        x->lo = l->lo;
        x->gap = max2(l->gap, gap_between(l->hi, x->off));
        x->hi = max2(l->hi, x->end);
    }
    if (x->right != NIL) {
        const node *r = &t[x->right];
        x->gap = max2(x->gap, max2(r->gap, gap_between(x->hi, r->lo)));
        x->hi = max2(x->hi, r->hi);
    }
}

/* Order: offset, then end (zero-size buffers sit at 0 before the others),
 * then index (a total order, so a node is found again to be removed). */
static int before(const node *t, int32_t a, int32_t b)
{
    if (t[a].off != t[b].off)
        return t[a].off < t[b].off;
    if (t[a].end != t[b].end)
        return t[a].end < t[b].end;
    return a < b;
}

/* Splits subtree s into nodes ordered before k (*l) and the rest (*r). */
static void split(node *t, int32_t s, int32_t k, int32_t *l, int32_t *r)
{
    if (s == NIL) {
        *l = *r = NIL;
        return;
    }
    if (before(t, s, k)) {
        split(t, t[s].right, k, &t[s].right, r);
        *l = s;
    } else {
        split(t, t[s].left, k, l, &t[s].left);
        *r = s;
    }
    pull(t, s);
}

static int32_t merge(node *t, int32_t a, int32_t b)
{
    if (a == NIL)
        return b;
    if (b == NIL)
        return a;
    if (t[a].prio > t[b].prio) {
        t[a].right = merge(t, t[a].right, b);
        pull(t, a);
        return a;
    }
    t[b].left = merge(t, a, t[b].left);
    pull(t, b);
    return b;
}

static void insert(treap *T, int32_t k)
{
    T->rng ^= T->rng << 13; /* xorshift32: a fixed sequence, plans are reproducible */
    T->rng ^= T->rng >> 17;
    T->rng ^= T->rng << 5;
    node *x = &T->t[k];
    x->prio = T->rng;
    x->left = x->right = NIL;
    pull(T->t, k);
    int32_t l, r;
    split(T->t, T->root, k, &l, &r);
    T->root = merge(T->t, merge(T->t, l, k), r);
}

static int32_t erase(node *t, int32_t s, int32_t k)
{
    REMAT_ASSERT(s != NIL);
    if (s == k)
        return merge(t, t[s].left, t[s].right);
    if (before(t, k, s))
        t[s].left = erase(t, t[s].left, k);
    else
        t[s].right = erase(t, t[s].right, k);
    pull(t, s);
    return s;
}

/* The lowest offset >= prev of a gap of `size` bytes before or between the
 * buffers of subtree s, where prev is the highest end of every buffer ordered
 * before s; SIZE_MAX when there is none (the caller then places it after all). */
static size_t lowest_fit(const node *t, int32_t s, size_t prev, size_t size)
{
    while (s != NIL) {
        const node *x = &t[s];
        if (gap_between(prev, x->lo) >= size)
            return prev;
        if (x->gap < size)
            return SIZE_MAX;
        size_t at = lowest_fit(t, x->left, prev, size);
        if (at != SIZE_MAX)
            return at;
        if (x->left != NIL)
            prev = max2(prev, t[x->left].hi);
        if (gap_between(prev, x->off) >= size)
            return prev;
        prev = max2(prev, x->end);
        s = x->right;
    }
    return SIZE_MAX;
}

/* ---- a binary min-heap of live buffers by last use ---- */
static int later(const remat_plan_buf *B, int32_t a, int32_t b) { return B[a].last > B[b].last; }

static void heap_push(int32_t *h, int32_t *n, const remat_plan_buf *B, int32_t v)
{
    int32_t i = (*n)++;
    while (i > 0 && later(B, h[(i - 1) / 2], v)) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = v;
}

static int32_t heap_pop(int32_t *h, int32_t *n, const remat_plan_buf *B)
{
    int32_t top = h[0], v = h[--*n], i = 0;
    for (;;) {
        int32_t c = 2 * i + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && later(B, h[c], h[c + 1]))
            c++;
        if (!later(B, v, h[c]))
            break;
        h[i] = h[c];
        i = c;
    }
    if (*n > 0)
        h[i] = v;
    return top;
}

/* ---- small plans: the live buffers in an array sorted by offset ---- */
#define SMALL_PLAN 256

typedef struct {
    size_t off, end;
    int32_t last;
} live_buf;

/* act: room for n live buffers, from the heap: a 6 KB array here was the
 * deepest frame of a compile, and a 32 KB stack (tests/cli/environment.sh)
 * overflowed on it under AddressSanitizer */
static size_t plan_small(remat_plan_buf *bufs, const int32_t *order, int32_t n, size_t align, live_buf *act)
{
    int32_t na = 0;
    size_t arena = 0;
    for (int32_t k = 0; k < n; k++) {
        remat_plan_buf *b = &bufs[order[k]];
        REMAT_ASSERT(b->last >= b->first);
        size_t size = (b->size + align - 1) / align * align;
        int32_t w = 0; /* release buffers dead before this one is written */
        for (int32_t i = 0; i < na; i++)
            if (act[i].last >= b->first)
                act[w++] = act[i];
        na = w;
        size_t off = 0; /* lowest gap that fits */
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
    return arena;
}

static int by_first(const void *a, const void *b, void *bufs)
{
    const remat_plan_buf *B = bufs;
    int32_t ia = *(const int32_t *)a, ib = *(const int32_t *)b;
    if (B[ia].first != B[ib].first)
        return B[ia].first < B[ib].first ? -1 : 1;
    return ia < ib ? -1 : ia > ib;
}

static remat_status nomem(int32_t n)
{
    return rmi_error(REMAT_ERR_NOMEM, "compile: out of memory planning the arena of %d buffers", (int)n);
}

remat_status rmi_plan_offsets(remat_plan_buf *bufs, int32_t n, size_t align, size_t *arena_out)
{
    *arena_out = 0;
    if (n <= 0)
        return REMAT_OK;
    int32_t *order = rmi_malloc(sizeof *order * (size_t)n);
    if (!order)
        return nomem(n);
    for (int32_t i = 0; i < n; i++)
        order[i] = i;
    qsort_r(order, (size_t)n, sizeof *order, by_first, bufs);
    if (n <= SMALL_PLAN) {
        live_buf *act = rmi_malloc(sizeof *act * (size_t)n);
        remat_status st = act ? REMAT_OK : nomem(n);
        if (act)
            *arena_out = plan_small(bufs, order, n, align, act);
        rmi_free(order);
        rmi_free(act);
        return st;
    }
    int32_t *heap = rmi_malloc(sizeof *heap * (size_t)n);
    node *t = rmi_malloc(sizeof *t * (size_t)n);
    if (!heap || !t) {
        rmi_free(order);
        rmi_free(heap);
        rmi_free(t);
        return nomem(n);
    }
    treap T = {t, NIL, 2463534242u};
    int32_t nh = 0;
    size_t arena = 0;
    for (int32_t k = 0; k < n; k++) {
        int32_t i = order[k];
        remat_plan_buf *b = &bufs[i];
        REMAT_ASSERT(b->last >= b->first);
        size_t size = (b->size + align - 1) / align * align;
        /* release buffers dead before this one is written */
        while (nh > 0 && bufs[heap[0]].last < b->first)
            T.root = erase(t, T.root, heap_pop(heap, &nh, bufs));
        size_t off = lowest_fit(t, T.root, 0, size);
        if (off == SIZE_MAX)
            off = T.root == NIL ? 0 : t[T.root].hi;
        b->offset = off;
        t[i].off = off;
        t[i].end = off + size;
        insert(&T, i);
        heap_push(heap, &nh, bufs, i);
        if (off + size > arena)
            arena = off + size;
    }
    rmi_free(order);
    rmi_free(heap);
    rmi_free(t);
    *arena_out = arena;
    return REMAT_OK;
}

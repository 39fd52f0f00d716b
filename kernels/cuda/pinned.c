/* pinned.c — the pinned host blocks a CUDA state keeps (pinned.h). */
#include "kernels/cuda/pinned.h"

void *rmi_pinned_take(rmi_pinned_cache *c, size_t bytes, const rmi_pinned_allocator *a)
{
    int fit = -1, spare = -1;
    for (int i = 0; i < RMI_PINNED_KEPT; i++) {
        const rmi_pinned_block *b = &c->b[i];
        if (b->lent)
            continue;
        if (b->p && b->bytes >= bytes) {
            if (fit < 0 || b->bytes < c->b[fit].bytes)
                fit = i;
        } else if (spare < 0 || (!b->p && c->b[spare].p)) { /* an empty slot rather than a kept block */
            spare = i;
        }
    }
    if (fit >= 0) {
        c->b[fit].lent = true;
        return c->b[fit].p;
    }
    if (spare < 0) /* every slot lent: a block of its own */
        return a->alloc(a->ctx, bytes);
    rmi_pinned_block *b = &c->b[spare];
    if (b->p)
        a->free(a->ctx, b->p); /* too small: the new one replaces it */
    *b = (rmi_pinned_block){.p = a->alloc(a->ctx, bytes), .bytes = bytes};
    b->lent = b->p != NULL;
    return b->p;
}

void rmi_pinned_give(rmi_pinned_cache *c, void *p, const rmi_pinned_allocator *a)
{
    if (!p)
        return;
    for (int i = 0; i < RMI_PINNED_KEPT; i++)
        if (c->b[i].p == p && c->b[i].lent) {
            c->b[i].lent = false;
            return;
        }
    a->free(a->ctx, p);
}

void rmi_pinned_clear(rmi_pinned_cache *c, const rmi_pinned_allocator *a)
{
    for (int i = 0; i < RMI_PINNED_KEPT; i++) {
        if (c->b[i].p)
            a->free(a->ctx, c->b[i].p);
        c->b[i] = (rmi_pinned_block){0};
    }
}

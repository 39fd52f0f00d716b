/* arena.c — chunked bump allocator (see arena.h). */
#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/arena.h"

struct remat_arena_chunk {
    remat_arena_chunk *next;
    size_t pad; /* keeps data 16-byte aligned */
    unsigned char data[];
};

_Static_assert(alignof(max_align_t) <= 16, "arena chunks align data to 16 bytes");

void *rmi_arena_alloc(remat_arena *a, size_t bytes)
{
    if (bytes > SIZE_MAX / 2)
        return NULL; /* rounding up or adding the chunk header would wrap */
    bytes = (bytes + 15) & ~(size_t)15;
    const bool each = rmi_alloc_hook_armed(); /* every request its own chunk (alloc.h) */
    if (!a->head || a->cap - a->used < bytes || each) {
        size_t cap = bytes > 16384 || each ? bytes : 16384;
        remat_arena_chunk *c = rmi_malloc(sizeof *c + cap);
        if (!c)
            return NULL;
        c->next = a->head;
        a->head = c;
        a->used = 0;
        a->cap = cap;
    }
    void *p = a->head->data + a->used;
    a->used += bytes;
    memset(p, 0, bytes);
    return p;
}

char *rmi_arena_strndup(remat_arena *a, const char *s, size_t n)
{
    if (n == SIZE_MAX)
        return NULL;
    char *d = rmi_arena_alloc(a, n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

void rmi_arena_clear(remat_arena *a)
{
    remat_arena_chunk *c = a->head;
    while (c) {
        remat_arena_chunk *n = c->next;
        rmi_free(c);
        c = n;
    }
    a->head = NULL;
    a->used = a->cap = 0;
}

/* arena.c — chunked bump allocator (see arena.h). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"

struct remat_arena_chunk {
    remat_arena_chunk *next;
    size_t pad; /* keeps data 16-byte aligned */
    unsigned char data[];
};

void *remat_arena_alloc(remat_arena *a, size_t bytes)
{
    bytes = (bytes + 15) & ~(size_t)15;
    if (!a->head || a->used + bytes > a->cap) {
        size_t cap = bytes > 16384 ? bytes : 16384;
        remat_arena_chunk *c = malloc(sizeof *c + cap);
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

void remat_arena_clear(remat_arena *a)
{
    remat_arena_chunk *c = a->head;
    while (c) {
        remat_arena_chunk *n = c->next;
        free(c);
        c = n;
    }
    a->head = NULL;
    a->used = a->cap = 0;
}

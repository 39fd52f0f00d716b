/*
 * arena.h (internal) — a bump allocator in chunks; everything freed at once.
 * Pointers it hands out stay valid until remat_arena_clear().
 */
#ifndef REMAT_CORE_ARENA_H
#define REMAT_CORE_ARENA_H

#include <stddef.h>

typedef struct remat_arena_chunk remat_arena_chunk;
typedef struct {
    remat_arena_chunk *head;
    size_t used, cap;
} remat_arena;

/* 16-byte aligned, zeroed; NULL only when out of memory. */
void *remat_arena_alloc(remat_arena *a, size_t bytes);
void remat_arena_clear(remat_arena *a);

#endif

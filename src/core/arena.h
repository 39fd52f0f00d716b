/*
 * arena.h (internal) — a bump allocator in chunks; everything freed at once.
 * Pointers it hands out stay valid until rmi_arena_clear().
 */
#ifndef REMAT_CORE_ARENA_H
#define REMAT_CORE_ARENA_H

#include <stddef.h>

typedef struct remat_arena_chunk remat_arena_chunk;
typedef struct {
    remat_arena_chunk *head;
    size_t used, cap;
} remat_arena;

/* 16-byte aligned (max_align_t), zeroed; NULL when out of memory or when
 * bytes is beyond any allocation (more than SIZE_MAX / 2). */
void *rmi_arena_alloc(remat_arena *a, size_t bytes);
/* s[0..n) and a terminating NUL in the arena; NULL when out of memory. */
char *rmi_arena_strndup(remat_arena *a, const char *s, size_t n);
void rmi_arena_clear(remat_arena *a);

#endif

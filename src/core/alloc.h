/*
 * alloc.h (internal) — the allocator the core goes through, with a test hook
 * that makes it run out of memory on purpose.
 *
 * rmi_malloc/calloc/realloc/strdup/free are the C library's functions
 * behind one counter: memory from either side may be released by the other
 * (callers outside the converted modules free with free()). Every caller
 * handles NULL: a failed allocation becomes REMAT_ERR_NOMEM with a message,
 * never an abort (docs/design-notes.md, "Running out of memory").
 *
 * Test hook: rmi_alloc_fail_after(k) makes allocation number k (counting
 * from 0 at the call) and every later one fail, as a machine that has run
 * out would; rmi_alloc_fail_once(k) fails that one only;
 * rmi_alloc_count() says how many were requested since. A test
 * runs a workload with the hook armed at INT64_MAX to count its allocations
 * N, then once for every k in 0..N:
 *
 *   rmi_alloc_fail_after(k);
 *   st = build_and_differentiate(...);   // must return a status, not crash
 *   rmi_alloc_fail_after(-1);          // off again
 *
 * The hook is process-wide (an atomic counter, so allocations from other
 * threads count too); off, it costs one relaxed load per allocation.
 */
#ifndef REMAT_CORE_ALLOC_H
#define REMAT_CORE_ALLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

void *rmi_malloc(size_t bytes);
void *rmi_calloc(size_t n, size_t size);
/* On failure returns NULL and leaves p as it was. */
void *rmi_realloc(void *p, size_t bytes);
char *rmi_strdup(const char *s);
/* align: a power of two, a multiple of sizeof(void *); bytes 0 gives align
 * bytes. Released with rmi_free. */
void *rmi_aligned_alloc(size_t align, size_t bytes);
void rmi_free(void *p);

/* k >= 0: allocation k from now on and all later ones fail (INT64_MAX: none
 * fails, allocations are only counted); k < 0: the hook is off. Resets the
 * count either way. */
void rmi_alloc_fail_after(int64_t k);
/* Only allocation k from now on fails, later ones are granted again (memory
 * freed elsewhere in the meantime): what is left after one failure must
 * still be consistent. k < 0: off. Resets the count. */
void rmi_alloc_fail_once(int64_t k);
/* Allocations requested (failed ones included) since the hook was armed; 0
 * while it is off. */
int64_t rmi_alloc_count(void);
/* Whether the hook is armed. Pooling allocators (core/arena.c) then take a
 * block of their own for every request, so that each request can fail. */
bool rmi_alloc_hook_armed(void);

#endif

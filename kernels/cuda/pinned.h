/*
 * pinned.h (internal) — the pinned host blocks a CUDA state keeps between
 * runs (memory.cu: rmi_cuda_state, the backend's host_alloc/host_free).
 *
 * cudaHostAlloc of a tier (the slow snapshots of a two-tier loop, the
 * offloaded residuals) costs milliseconds: paid on every run, it dominated
 * short runs. A state keeps up to RMI_PINNED_KEPT blocks: a request takes
 * the smallest kept block that is free and big enough; else it replaces a
 * free one that is too small (or fills an empty slot) with a new block of
 * the size asked; with every slot lent it gets a block of its own, freed
 * when given back. A kept block given back stays allocated for the next
 * run; all are freed with the state (rmi_pinned_clear). The memory is held
 * as long as the program that ran (its root's state): the tier's size, at
 * most one block per slot.
 *
 * Plain C over an allocator passed in, so that tests count the allocations
 * without a GPU (tests/test_cuda_pinned.c).
 */
#ifndef REMAT_CUDA_PINNED_H
#define REMAT_CUDA_PINNED_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { RMI_PINNED_KEPT = 2 }; /* a run's two tiers: a loop's slow snapshots and the offloaded residuals */

typedef struct {
    void *p; /* NULL: an empty slot */
    size_t bytes;
    bool lent;
} rmi_pinned_block;

typedef struct {
    rmi_pinned_block b[RMI_PINNED_KEPT];
} rmi_pinned_cache;

typedef struct {
    void *(*alloc)(void *ctx, size_t bytes); /* NULL when out of memory */
    void (*free)(void *ctx, void *p);
    void *ctx;
} rmi_pinned_allocator;

/* A block of at least `bytes` (NULL when out of memory), lent until given back. */
void *rmi_pinned_take(rmi_pinned_cache *c, size_t bytes, const rmi_pinned_allocator *a);
/* Gives back p (NULL: nothing): kept when it is one of c's, else freed. */
void rmi_pinned_give(rmi_pinned_cache *c, void *p, const rmi_pinned_allocator *a);
/* Frees every kept block, lent or not (the state's teardown). */
void rmi_pinned_clear(rmi_pinned_cache *c, const rmi_pinned_allocator *a);

#ifdef __cplusplus
}
#endif

#endif

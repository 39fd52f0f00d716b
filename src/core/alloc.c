/* alloc.c — the core's allocator and its failure-injection hook (see alloc.h). */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"

static _Atomic int64_t fail_at = -1; /* -1: off */
static _Atomic int64_t count;
static _Atomic int only_one; /* only allocation fail_at fails, later ones are granted */

/* 1 when this allocation is to fail (the hook is armed and its turn came). */
static int injected(void)
{
    int64_t k = atomic_load_explicit(&fail_at, memory_order_relaxed);
    if (k < 0)
        return 0;
    int64_t n = atomic_fetch_add_explicit(&count, 1, memory_order_relaxed);
    return atomic_load_explicit(&only_one, memory_order_relaxed) ? n == k : n >= k;
}

void *rmi_malloc(size_t bytes) { return injected() ? NULL : malloc(bytes); }

void *rmi_calloc(size_t n, size_t size) { return injected() ? NULL : calloc(n, size); }

void *rmi_realloc(void *p, size_t bytes) { return injected() ? NULL : realloc(p, bytes); }

void *rmi_aligned_alloc(size_t align, size_t bytes)
{
    void *p = NULL;
    if (injected() || posix_memalign(&p, align, bytes ? bytes : align) != 0)
        return NULL;
    return p;
}

char *rmi_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = rmi_malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

void rmi_free(void *p) { free(p); }

static void arm(int64_t k, int once)
{
    atomic_store_explicit(&fail_at, -1, memory_order_relaxed);
    atomic_store_explicit(&count, 0, memory_order_relaxed);
    atomic_store_explicit(&only_one, once, memory_order_relaxed);
    if (k >= 0)
        atomic_store_explicit(&fail_at, k, memory_order_relaxed);
}

void rmi_alloc_fail_after(int64_t k) { arm(k, 0); }

void rmi_alloc_fail_once(int64_t k) { arm(k, 1); }

int64_t rmi_alloc_count(void) { return atomic_load_explicit(&count, memory_order_relaxed); }

bool rmi_alloc_hook_armed(void) { return atomic_load_explicit(&fail_at, memory_order_relaxed) >= 0; }

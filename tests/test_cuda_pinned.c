/*
 * test_cuda_pinned.c — the pinned host blocks a CUDA state keeps between
 * runs (kernels/cuda/pinned.h), over a counting allocator: no GPU needed.
 * A run's tier taken and given back, run after run, is allocated once; a
 * bigger one replaces it; two tiers in one run get two blocks; with every
 * slot lent a request gets a block of its own, freed when given back; the
 * teardown frees what is kept.
 */
#include "test_util.h"

#include <stdlib.h>

#include "kernels/cuda/pinned.h"

typedef struct {
    int allocs, frees, live;
    int fail; /* the next allocation fails */
} counts;

static void *count_alloc(void *ctx, size_t bytes)
{
    counts *c = ctx;
    if (c->fail) {
        c->fail = 0;
        return NULL;
    }
    c->allocs++, c->live++;
    return malloc(bytes ? bytes : 1);
}

static void count_free(void *ctx, void *p)
{
    counts *c = ctx;
    c->frees++, c->live--;
    free(p);
}

static void test_cuda_pinned_reused_across_runs(void **state)
{
    (void)state;
    counts n = {0};
    const rmi_pinned_allocator a = {count_alloc, count_free, &n};
    rmi_pinned_cache c = {0};
    void *first = NULL;
    for (int run = 0; run < 5; run++) {
        void *p = rmi_pinned_take(&c, 1 << 20, &a);
        assert_non_null(p);
        if (run == 0)
            first = p;
        assert_ptr_equal(p, first);
        rmi_pinned_give(&c, p, &a);
    }
    assert_int_equal(n.allocs, 1);
    assert_int_equal(n.frees, 0);
    void *smaller = rmi_pinned_take(&c, 1000, &a); /* big enough: the same block */
    assert_ptr_equal(smaller, first);
    rmi_pinned_give(&c, smaller, &a);
    void *bigger = rmi_pinned_take(&c, 2 << 20, &a); /* an empty slot first: the kept one stays */
    assert_int_equal(n.allocs, 2);
    rmi_pinned_give(&c, bigger, &a);
    void *again = rmi_pinned_take(&c, 2 << 20, &a);
    assert_ptr_equal(again, bigger);
    rmi_pinned_give(&c, again, &a);
    assert_int_equal(n.allocs, 2);
    rmi_pinned_clear(&c, &a);
    assert_int_equal(n.live, 0);
}

static void test_cuda_pinned_too_small_replaced(void **state)
{
    (void)state;
    counts n = {0};
    const rmi_pinned_allocator a = {count_alloc, count_free, &n};
    rmi_pinned_cache c = {0};
    void *p[RMI_PINNED_KEPT];
    for (int i = 0; i < RMI_PINNED_KEPT; i++) /* every slot filled with a small block */
        p[i] = rmi_pinned_take(&c, 100, &a);
    for (int i = 0; i < RMI_PINNED_KEPT; i++)
        rmi_pinned_give(&c, p[i], &a);
    assert_int_equal(n.allocs, RMI_PINNED_KEPT);
    void *big = rmi_pinned_take(&c, 1 << 16, &a);
    assert_int_equal(n.allocs, RMI_PINNED_KEPT + 1);
    assert_int_equal(n.frees, 1); /* the small one it replaced */
    rmi_pinned_give(&c, big, &a);
    assert_ptr_equal(rmi_pinned_take(&c, 1 << 16, &a), big);
    rmi_pinned_clear(&c, &a);
    assert_int_equal(n.live, 0);
}

static void test_cuda_pinned_all_lent_own_block(void **state)
{
    (void)state;
    counts n = {0};
    const rmi_pinned_allocator a = {count_alloc, count_free, &n};
    rmi_pinned_cache c = {0};
    void *p[RMI_PINNED_KEPT];
    for (int i = 0; i < RMI_PINNED_KEPT; i++) {
        p[i] = rmi_pinned_take(&c, 64, &a);
        for (int j = 0; j < i; j++)
            assert_ptr_not_equal(p[i], p[j]); /* two tiers of one run: two blocks */
    }
    void *extra = rmi_pinned_take(&c, 64, &a);
    assert_non_null(extra);
    assert_int_equal(n.live, RMI_PINNED_KEPT + 1);
    rmi_pinned_give(&c, extra, &a); /* not kept */
    assert_int_equal(n.live, RMI_PINNED_KEPT);
    rmi_pinned_give(&c, NULL, &a);
    rmi_pinned_clear(&c, &a); /* lent ones too: the state's teardown */
    assert_int_equal(n.live, 0);
}

static void test_cuda_pinned_out_of_memory(void **state)
{
    (void)state;
    counts n = {.fail = 1};
    const rmi_pinned_allocator a = {count_alloc, count_free, &n};
    rmi_pinned_cache c = {0};
    assert_null(rmi_pinned_take(&c, 64, &a));
    void *p = rmi_pinned_take(&c, 64, &a); /* the failed slot is free again */
    assert_non_null(p);
    rmi_pinned_give(&c, p, &a);
    rmi_pinned_clear(&c, &a);
    assert_int_equal(n.live, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cuda_pinned_reused_across_runs),
        cmocka_unit_test(test_cuda_pinned_too_small_replaced),
        cmocka_unit_test(test_cuda_pinned_all_lent_own_block),
        cmocka_unit_test(test_cuda_pinned_out_of_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_core_arena.c — core/arena.c, the one bump allocator (graphs, programs
 * and parsed mechanisms all use it): alignment, zeroing, large requests,
 * strings, and requests no allocation can satisfy.
 */
#include "test_util.h"

#include <stdint.h>

#include "core/arena.h"

static void test_core_arena_aligned_zeroed_and_distinct(void **state)
{
    (void)state;
    remat_arena a = {0};
    unsigned char *prev = NULL;
    for (size_t n = 1; n < 300; n++) {
        unsigned char *p = rmi_arena_alloc(&a, n);
        assert_non_null(p);
        assert_int_equal((uintptr_t)p % 16, 0);
        for (size_t i = 0; i < n; i++)
            assert_int_equal(p[i], 0);
        memset(p, 0xAB, n); /* overlapping blocks would show in the next checks */
        assert_true(p != prev);
        prev = p;
    }
    unsigned char *big = rmi_arena_alloc(&a, 100000); /* beyond one chunk */
    assert_non_null(big);
    big[99999] = 1;
    rmi_arena_clear(&a);
    assert_null(a.head);
    rmi_arena_clear(&a); /* clearing twice is harmless */
}

static void test_core_arena_strndup_copies_and_terminates(void **state)
{
    (void)state;
    remat_arena a = {0};
    char *s = rmi_arena_strndup(&a, "species_A and more", 9);
    assert_string_equal(s, "species_A");
    assert_null(rmi_arena_strndup(&a, "x", SIZE_MAX));
    rmi_arena_clear(&a);
}

/* sizes whose rounding or chunk header wraps size_t: NULL, never a short block */
static void test_core_arena_refuses_sizes_that_wrap(void **state)
{
    (void)state;
    remat_arena a = {0};
    const size_t huge[] = {SIZE_MAX, SIZE_MAX - 3, SIZE_MAX - 15, SIZE_MAX - 16, SIZE_MAX / 2 + 1};
    for (size_t i = 0; i < sizeof huge / sizeof *huge; i++)
        assert_null(rmi_arena_alloc(&a, huge[i]));
    assert_non_null(rmi_arena_alloc(&a, 8)); /* still usable */
    rmi_arena_clear(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_core_arena_aligned_zeroed_and_distinct),
        cmocka_unit_test(test_core_arena_strndup_copies_and_terminates),
        cmocka_unit_test(test_core_arena_refuses_sizes_that_wrap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_dist.c — remat/dist.h: the split, gathers in item order, the
 * deterministic sum, broadcast and error agreement. Run alone (a group of
 * one rank) and under tests/mpi_run.sh on 1, 2 and 4 ranks (suite 'mpi'):
 * every case checks the same results whatever the number of ranks, and
 * REMAT_TEST_NP (set by the wrapper) is the size the group must have.
 */
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "dist/dist_impl.h"
#include "remat/dist.h"

static remat_dist *group;

/* REMAT_TEST_NP ranks started by the wrapper form one MPI group of that
 * size; alone, a group of one rank. */
static void test_dist_group_is_the_launched_one(void **state)
{
    (void)state;
    const char *np = getenv("REMAT_TEST_NP");
    int want = np ? atoi(np) : 1;
    assert_int_equal(remat_dist_size(group), want);
    assert_true(remat_dist_rank(group) >= 0 && remat_dist_rank(group) < want);
    assert_int_equal(remat_dist_is_root(group), remat_dist_rank(group) == 0);
    assert_string_equal(remat_dist_kind(group), np && REMAT_HAVE_MPI ? "mpi" : "single");
    assert_int_equal(remat_dist_rank(NULL), 0);
    assert_int_equal(remat_dist_size(NULL), 1);
    assert_string_equal(remat_dist_kind(NULL), "single");
}

/* Contiguous blocks in rank order; equal costs give every rank floor or
 * ceil of n / size items; a heavy item gets a rank of its own and the
 * others share the rest. */
static void test_dist_split_blocks_balanced(void **state)
{
    (void)state;
    int owner[40];
    for (int size = 1; size <= 5; size++)
        for (int n = 0; n <= 40; n++) {
            assert_ok(rmi_dist_split_n(size, n, NULL, owner));
            int count[5] = {0};
            for (int i = 0; i < n; i++) {
                assert_true(owner[i] >= 0 && owner[i] < size);
                assert_true(i == 0 || owner[i] >= owner[i - 1]); /* blocks in rank order */
                count[owner[i]]++;
            }
            for (int r = 0; r < size; r++)
                assert_true(count[r] == n / size || count[r] == (n + size - 1) / size);
        }
    double cost[9] = {1, 1, 1, 1, 1, 1, 1, 1, 8};
    assert_ok(rmi_dist_split_n(2, 9, cost, owner));
    for (int i = 0; i < 9; i++)
        assert_int_equal(owner[i], i == 8);
    double skew[6] = {10, 0, 0, 1, 1, 1}; /* rank 0 takes the big one, the others share the rest */
    assert_ok(rmi_dist_split_n(3, 6, skew, owner));
    int want[6] = {0, 1, 1, 1, 1, 2};
    for (int i = 0; i < 6; i++)
        assert_int_equal(owner[i], want[i]);
    double zero[3] = {0, 0, 0}; /* all zero: equal shares */
    assert_ok(rmi_dist_split_n(3, 3, zero, owner));
    assert_true(owner[0] == 0 && owner[1] == 1 && owner[2] == 2);
}

static void test_dist_split_rejects_bad_costs(void **state)
{
    (void)state;
    int owner[3];
    double neg[3] = {1, -1, 1}, nan_[3] = {1, 1, NAN};
    assert_int_equal(rmi_dist_split_n(2, 3, neg, owner), REMAT_ERR_VALUE);
    assert_contains(remat_last_error(), "cost[1] = -1");
    assert_int_equal(rmi_dist_split_n(2, 3, nan_, owner), REMAT_ERR_VALUE);
    assert_contains(remat_last_error(), "cost[2]");
    assert_int_equal(remat_dist_split(group, -1, NULL, owner), REMAT_ERR_ARG);
}

enum { N_ITEMS = 11 };

static int64_t item_len(int64_t i) { return i % 3; } /* 0, 1, 2 doubles: empty items too */
static double item_val(int64_t i, int64_t k) { return 1000.0 * (double)i + (double)k; }

/* owners: the split's blocks, or round robin (not in rank order) */
static void owners(int kind, int *owner)
{
    int size = remat_dist_size(group);
    for (int i = 0; i < N_ITEMS; i++)
        owner[i] = i % size;
    if (kind == 0)
        assert_ok(remat_dist_split(group, N_ITEMS, NULL, owner));
}

/* mine: this rank's items' values concatenated in item order */
static int64_t fill_mine(const int *owner, int64_t (*len)(int64_t), int64_t width,
                         double (*val)(int64_t, int64_t), double *mine)
{
    int64_t m = 0;
    for (int64_t i = 0; i < N_ITEMS; i++)
        if (owner[i] == remat_dist_rank(group))
            for (int64_t k = 0; k < (len ? len(i) : width); k++)
                mine[m++] = val(i, k);
    return m;
}

static void test_dist_gather_in_item_order(void **state)
{
    (void)state;
    int owner[N_ITEMS];
    int64_t len[N_ITEMS], total = 0;
    for (int i = 0; i < N_ITEMS; i++)
        total += len[i] = item_len(i);
    double mine[2 * N_ITEMS], all[2 * N_ITEMS], want[2 * N_ITEMS];
    for (int64_t i = 0, m = 0; i < N_ITEMS; i++)
        for (int64_t k = 0; k < len[i]; k++)
            want[m++] = item_val(i, k);
    for (int kind = 0; kind < 2; kind++) {
        owners(kind, owner);
        fill_mine(owner, item_len, 0, item_val, mine);
        memset(all, 0xff, sizeof all);
        assert_ok(remat_dist_gather(group, N_ITEMS, owner, len, mine, all));
        assert_memory_equal(all, want, (size_t)total * sizeof *all);
        int root = remat_dist_size(group) - 1;
        bool me = remat_dist_rank(group) == root;
        memset(all, 0xff, sizeof all);
        assert_ok(remat_dist_gather_to(group, root, N_ITEMS, owner, len, mine, me ? all : NULL));
        if (me)
            assert_memory_equal(all, want, (size_t)total * sizeof *all);
    }
    int bad[N_ITEMS] = {0};
    bad[3] = remat_dist_size(group);
    assert_int_equal(remat_dist_gather(group, N_ITEMS, bad, len, mine, all), REMAT_ERR_ARG);
    assert_contains(remat_last_error(), "owner[3]");
}

enum { WIDTH = 5 };

/* magnitudes from 2^-40 to 2^60 with both signs: the order of the
 * additions shows in the bits */
static double vec_val(int64_t i, int64_t k)
{
    return ldexp((i % 2 ? -1.0 : 1.0) * (1.0 + 0.1 * (double)k + 0.37 * (double)i), (int)((i * 37 + k * 11) % 101) - 40);
}

static void test_dist_sum_in_item_order(void **state)
{
    (void)state;
    double fold[WIDTH], reverse[WIDTH];
    for (int k = 0; k < WIDTH; k++) {
        fold[k] = vec_val(0, k);
        for (int64_t i = 1; i < N_ITEMS; i++)
            fold[k] += vec_val(i, k);
        reverse[k] = vec_val(N_ITEMS - 1, k);
        for (int64_t i = N_ITEMS - 2; i >= 0; i--)
            reverse[k] += vec_val(i, k);
    }
    /* the data can tell one order from another */
    assert_true(memcmp(fold, reverse, sizeof fold) != 0);
    int owner[N_ITEMS];
    double mine[N_ITEMS * WIDTH], sum[WIDTH];
    for (int kind = 0; kind < 2; kind++) {
        owners(kind, owner);
        fill_mine(owner, NULL, WIDTH, vec_val, mine);
        memset(sum, 0xff, sizeof sum);
        assert_ok(remat_dist_sum(group, N_ITEMS, owner, WIDTH, mine, sum));
        assert_memory_equal(sum, fold, sizeof fold); /* contract 4 */
    }
    /* no items: zeros */
    assert_ok(remat_dist_sum(group, 0, NULL, WIDTH, NULL, sum));
    for (int k = 0; k < WIDTH; k++)
        assert_true(sum[k] == 0);
    /* NULL: a group of one rank */
    double local[N_ITEMS * WIDTH];
    int zeros[N_ITEMS] = {0};
    for (int64_t i = 0; i < N_ITEMS; i++)
        for (int k = 0; k < WIDTH; k++)
            local[i * WIDTH + k] = vec_val(i, k);
    assert_ok(remat_dist_sum(NULL, N_ITEMS, zeros, WIDTH, local, sum));
    assert_memory_equal(sum, fold, sizeof fold); /* contract 4 */
}

static void test_dist_bcast_from_any_root(void **state)
{
    (void)state;
    int size = remat_dist_size(group), rank = remat_dist_rank(group);
    for (int root = 0; root < size; root++) {
        struct { double x; char name[16]; } v = {0};
        if (rank == root)
            v.x = 1.5 + root, snprintf(v.name, sizeof v.name, "from %d", root);
        assert_ok(remat_dist_bcast(group, root, &v, sizeof v));
        char want[16];
        snprintf(want, sizeof want, "from %d", root);
        assert_true(v.x == 1.5 + root);
        assert_string_equal(v.name, want);
    }
    int x = 0;
    assert_int_equal(remat_dist_bcast(group, size, &x, sizeof x), REMAT_ERR_ARG);
}

/* The lowest failing rank's status and message reach every rank, named
 * "rank R: " when there are several; agreeing again keeps one name. */
static void test_dist_agree_lowest_failing_rank(void **state)
{
    (void)state;
    int size = remat_dist_size(group), rank = remat_dist_rank(group);
    remat_clear_error();
    assert_int_equal(remat_dist_agree(group, REMAT_OK), REMAT_OK);

    remat_status local = REMAT_OK;
    if (rank == size - 1)
        local = rmi_error(REMAT_ERR_IO, "cannot read exp%d.csv", rank);
    else
        remat_clear_error();
    assert_int_equal(remat_dist_agree(group, local), REMAT_ERR_IO);
    char want[64];
    if (size > 1)
        snprintf(want, sizeof want, "rank %d: cannot read exp%d.csv", size - 1, size - 1);
    else
        snprintf(want, sizeof want, "cannot read exp0.csv");
    assert_string_equal(remat_last_error(), want);
    assert_int_equal(remat_dist_agree(group, REMAT_ERR_IO), REMAT_ERR_IO);
    assert_string_equal(remat_last_error(), want);

    /* two failing ranks: the lower one's status and message */
    local = REMAT_OK;
    if (rank == size - 1)
        local = rmi_error(REMAT_ERR_IO, "last rank's error");
    if (rank == size / 2)
        local = rmi_error(REMAT_ERR_PARSE, "middle rank's error");
    assert_int_equal(remat_dist_agree(group, local), REMAT_ERR_PARSE);
    assert_contains(remat_last_error(), "middle rank's error");
}

int main(int argc, char **argv)
{
    if (remat_dist_init(&argc, &argv, &group) != REMAT_OK) {
        fprintf(stderr, "test_dist: remat_dist_init: %s\n", remat_last_error());
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dist_group_is_the_launched_one),
        cmocka_unit_test(test_dist_split_blocks_balanced),
        cmocka_unit_test(test_dist_split_rejects_bad_costs),
        cmocka_unit_test(test_dist_gather_in_item_order),
        cmocka_unit_test(test_dist_sum_in_item_order),
        cmocka_unit_test(test_dist_bcast_from_any_root),
        cmocka_unit_test(test_dist_agree_lowest_failing_rank),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    remat_dist_finalize(group);
    return failed;
}

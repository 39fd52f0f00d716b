/*
 * test_dist_faults.c — remat/dist.h when one rank fails: every collective
 * returns the same status on every rank when one rank runs out of memory
 * in it (core/alloc.h's hook, armed on that rank only), agreements carry a
 * caller's text, and a message every rank failed with alike is said without
 * a rank. Run alone (a group of one) and under tests/mpi_run.sh on 1, 2 and
 * 4 ranks (suite 'mpi'); there a collective that let the other ranks wait
 * hangs until the wrapper's timeout, which fails the test. The ranks found
 * out of step are tests/dist_out_of_step.sh's.
 */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "remat/dist.h"

static remat_dist *group;

enum { N_ITEMS = 7, WIDTH = 3, MAX_ALLOCS = 16 };

typedef enum { GATHER_IN_ORDER, GATHER_ROUND_ROBIN, GATHER_TO_ROOT, SUM, BCAST, AGREE, N_CALLS } call;
static const char *const call_name[N_CALLS] = {"gather (split owners)", "gather (round-robin owners)",
                                               "gather_to", "sum", "bcast", "agree"};

/* One collective over N_ITEMS items of WIDTH doubles (item i's values
 * 10 i + k); on success checks what it delivered. */
static remat_status run_call(call c)
{
    int size = remat_dist_size(group), rank = remat_dist_rank(group);
    int owner[N_ITEMS];
    int64_t len[N_ITEMS];
    double mine[N_ITEMS * WIDTH], all[N_ITEMS * WIDTH], want[N_ITEMS * WIDTH];
    for (int i = 0; i < N_ITEMS; i++)
        owner[i] = i % size, len[i] = WIDTH;
    if (c != GATHER_ROUND_ROBIN)
        assert_ok(remat_dist_split(group, N_ITEMS, NULL, owner));
    int m = 0;
    for (int i = 0; i < N_ITEMS; i++)
        for (int k = 0; k < WIDTH; k++) {
            want[i * WIDTH + k] = 10.0 * i + k;
            if (owner[i] == rank)
                mine[m++] = 10.0 * i + k;
        }
    memset(all, 0, sizeof all);
    remat_status st;
    switch (c) {
    case GATHER_IN_ORDER:
    case GATHER_ROUND_ROBIN: st = remat_dist_gather(group, N_ITEMS, owner, len, mine, all); break;
    case GATHER_TO_ROOT: st = remat_dist_gather_to(group, size - 1, N_ITEMS, owner, len, mine, all); break;
    case SUM: st = remat_dist_sum(group, N_ITEMS, owner, WIDTH, mine, all); break;
    case BCAST:
        if (rank == 0)
            memcpy(all, want, sizeof want);
        st = remat_dist_bcast(group, 0, all, sizeof all);
        break;
    default: st = remat_dist_agree(group, REMAT_OK); break;
    }
    if (st != REMAT_OK)
        return st;
    if (c == SUM) {
        for (int k = 0; k < WIDTH; k++) {
            double s = want[k];
            for (int i = 1; i < N_ITEMS; i++)
                s += want[i * WIDTH + k];
            assert_true(all[k] == s); /* contract 4 */
        }
    } else if (c != AGREE && (c != GATHER_TO_ROOT || rank == size - 1)) {
        assert_memory_equal(all, want, sizeof want);
    }
    return REMAT_OK;
}

/* Rank 0's status, as every rank sees it (a broadcast after the call). */
static int root_status(remat_status st)
{
    int s = (int)st;
    assert_ok(remat_dist_bcast(group, 0, &s, sizeof s));
    return s;
}

/* For every rank v and every collective: allocation k (k = 0, 1, ...) of
 * rank v alone fails, until the call needs fewer. Every rank returns
 * REMAT_ERR_NOMEM with v's message ("rank v: ..." on several ranks), then
 * the call works again; before the collectives agreed on their own
 * preparation, rank v returned while the others waited in MPI. */
static void test_dist_faults_one_rank_out_of_memory(void **state)
{
    (void)state;
    int size = remat_dist_size(group), rank = remat_dist_rank(group);
    int failed_somewhere = 0;
    for (int v = 0; v < size; v++)
        for (int c = 0; c < N_CALLS; c++) {
            remat_status st = REMAT_ERR_NOMEM;
            int k;
            for (k = 0; k < MAX_ALLOCS && st != REMAT_OK; k++) {
                rmi_alloc_fail_once(rank == v ? k : -1);
                st = run_call((call)c);
                rmi_alloc_fail_after(-1);
                assert_int_equal(root_status(st), st); /* the same on every rank */
                if (st == REMAT_OK)
                    break;
                failed_somewhere = 1;
                if (st != REMAT_ERR_NOMEM)
                    fail_msg("%s, allocation %d of rank %d failing: status %s (%s)", call_name[c], k, v,
                             remat_status_name(st), remat_last_error());
                assert_contains(remat_last_error(), "out of memory");
                if (size > 1) {
                    char who[32];
                    snprintf(who, sizeof who, "rank %d: ", v);
                    assert_contains(remat_last_error(), who);
                }
            }
            if (st != REMAT_OK)
                fail_msg("%s still fails after %d allocations of rank %d failed in turn", call_name[c], k, v);
        }
    /* the gathers allocate (counts, a round-robin scratch): the hook bit */
    assert_true(failed_somewhere);
}

/* A message every rank fails with alike is nobody's in particular; a
 * different one, or a rank that did not fail, names the rank. */
static void test_dist_faults_alike_messages_unnamed(void **state)
{
    (void)state;
    int size = remat_dist_size(group), rank = remat_dist_rank(group);
    remat_status st = rmi_error(REMAT_ERR_VALUE, "--steps: -3 is not a count");
    assert_int_equal(remat_dist_agree(group, st), REMAT_ERR_VALUE);
    assert_string_equal(remat_last_error(), "--steps: -3 is not a count");
    /* the same text, another status on one rank: not alike */
    st = rmi_error(rank == size - 1 ? REMAT_ERR_ARG : REMAT_ERR_VALUE, "same words");
    assert_int_equal(remat_dist_agree(group, st), size > 1 ? REMAT_ERR_VALUE : REMAT_ERR_ARG);
    assert_string_equal(remat_last_error(), size > 1 ? "rank 0: same words" : "same words");
    /* each rank its own file */
    char text[64];
    snprintf(text, sizeof text, "cannot open part%d.csv", rank);
    st = rmi_error(REMAT_ERR_IO, "%s", text);
    assert_int_equal(remat_dist_agree(group, st), REMAT_ERR_IO);
    assert_string_equal(remat_last_error(), size > 1 ? "rank 0: cannot open part0.csv" : "cannot open part0.csv");
}

/* remat_dist_agree_msg carries the caller's text, not remat_last_error() */
static void test_dist_faults_agree_carries_caller_text(void **state)
{
    (void)state;
    int size = remat_dist_size(group), rank = remat_dist_rank(group);
    char msg[64] = "untouched";
    assert_int_equal(remat_dist_agree_msg(group, REMAT_OK, msg, sizeof msg), REMAT_OK);
    assert_string_equal(msg, "untouched");
    rmi_error(REMAT_ERR_IO, "not this one");
    snprintf(msg, sizeof msg, "P.csv:%d: not a number", 7 + rank);
    remat_status st = rank == size - 1 ? REMAT_ERR_PARSE : REMAT_OK;
    assert_int_equal(remat_dist_agree_msg(group, st, msg, sizeof msg), REMAT_ERR_PARSE);
    char want[64];
    if (size > 1)
        snprintf(want, sizeof want, "rank %d: P.csv:%d: not a number", size - 1, 7 + size - 1);
    else
        snprintf(want, sizeof want, "P.csv:7: not a number");
    assert_string_equal(msg, want);
    assert_string_equal(remat_last_error(), want);
    /* a buffer too small for the message: cut, still terminated */
    char small[8] = "abcdefg";
    assert_int_equal(remat_dist_agree_msg(group, rank == 0 ? REMAT_ERR_IO : REMAT_OK, small, sizeof small),
                     REMAT_ERR_IO);
    assert_string_equal(small, size > 1 ? "rank 0:" : "abcdefg");
}

int main(int argc, char **argv)
{
    if (remat_dist_init(&argc, &argv, &group) != REMAT_OK) {
        fprintf(stderr, "test_dist_faults: remat_dist_init: %s\n", remat_last_error());
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dist_faults_one_rank_out_of_memory),
        cmocka_unit_test(test_dist_faults_alike_messages_unnamed),
        cmocka_unit_test(test_dist_faults_agree_carries_caller_text),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    remat_dist_finalize(group);
    return failed;
}

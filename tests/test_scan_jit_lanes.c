/*
 * test_scan_jit_lanes.c — how compiled scan loops run their lanes, checked
 * against the interpreter and against themselves: the counting executor's
 * predictions, plans streamed against kept, lane blocks (scan_lanes.h),
 * blocks and lane ranges on the thread pool, packed interleaved carries.
 * Every case runs the PFR Euler step (test_scan_jit_util.h) and compares
 * outputs bit for bit and the stats that must not depend on how lanes are
 * cut (evaluations, store peak, measured = planned). The bodies themselves
 * are test_scan_jit.c's.
 *
 * Bitwise assertions rest on contracts 2 (compiled = interpreted) and 4
 * (lane blocks and threads) of docs/design-notes.md, "Bitwise contracts";
 * a streamed plan replays the kept plan's schedule (contract 3).
 */
#include "test_scan_jit_util.h"

#include <stdio.h>
#include <stdlib.h>

#include "core/pool.h"
#include "remat/remat.h"

/* The counting executor (src/scan/scan_replay.c) replays each schedule at
 * compile: its count is plan.forward_evals. A run must measure exactly that
 * and the schedule's prediction, compiled and interpreted, and hold the
 * predicted store at its peak. */
static void check_counted(const char *what, const remat_fn *g, int n_in, const remat_tensor *in, int64_t want_evals)
{
    for (int jit = 0; jit < 2; jit++) {
        result r;
        run_mode(g, n_in, in, jit, &r);
        if (r.plan.forward_evals != want_evals || r.st.forward_evals != want_evals ||
            r.st.peak_snapshot_bytes != r.plan.peak_snapshot_bytes)
            fail_msg("%s (%s): evals counted %lld, measured %lld, predicted %lld; store peak %zu, planned %zu", what,
                     jit ? "compiled" : "interpreted", (long long)r.plan.forward_evals, (long long)r.st.forward_evals,
                     (long long)want_evals, r.st.peak_snapshot_bytes, r.plan.peak_snapshot_bytes);
        outs_free(&r.o);
    }
}

static void test_scan_jit_counting_predicts_runs(void **state)
{
    (void)state;
    static const char *const sched[] = {"store-all", "per-step", "periodic:3", "two-level", "binomial:1",
                                        "binomial:4", "binomial:10", "online:2", "online:10"};
    static const int64_t lens[] = {0, 1, 2, 5, 37, 100};
    for (int lay = 0; lay < 2; lay++) { /* scalar, (3,m) */
        const int64_t m = lay == 0 ? 0 : 4;
        euler_case c = euler_case_new(REMAT_F64, m, 1);
        for (size_t si = 0; si < sizeof sched / sizeof sched[0]; si++)
            for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++)
                for (int rev = 0; rev < 2; rev++) {
                    remat_scan_options o = opts(sched[si], rev, NULL);
                    remat_schedule_cost cost;
                    assert_int_equal(remat_schedule_predict(&o.schedule, lens[li], &cost), REMAT_OK);
                    remat_fn *f = euler_loss(&c, &o, lens[li]);
                    remat_fn *g = ad_ok(AD_VALUE_AND_GRAD, f, 0, NULL);
                    char what[96];
                    snprintf(what, sizeof what, "euler layout %d %s n=%lld%s", lay, sched[si], (long long)lens[li],
                             rev ? " reverse" : "");
                    check_counted(what, g, 3, c.in, cost.forward_evals);
                    check_counted(what, f, 3, c.in, lens[li]); /* the primal alone: one evaluation a step */
                    remat_fn_free(g);
                    remat_fn_free(f);
                }
        euler_case_free(&c);
    }
}

/* A node whose plan is too long to keep replays its schedule at each run,
 * a chunk of ops at a time (scan_replay.h); REMAT_SCAN_PLAN_MAX_OPS moves
 * the limit. Streamed and kept plans give the same bits and stats,
 * compiled and interpreted; the long cases stream more than one chunk. */
static void test_scan_jit_streamed_plan_equals_kept(void **state)
{
    (void)state;
    static const struct {
        const char *sched;
        int64_t n;
    } cases[] = {{"store-all", 37}, {"per-step", 37}, {"periodic:3", 37}, {"two-level", 37}, {"binomial:3", 37},
                 {"online:2", 37},  {"binomial:1", 600}, {"online:2", 400}};
    for (int lay = 0; lay < 2; lay++) {
        const int64_t m = lay == 0 ? 0 : 4;
        euler_case c = euler_case_new(REMAT_F64, m, 1);
        for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
            remat_scan_options o = opts(cases[ci].sched, 0, NULL);
            remat_fn *f = euler_loss(&c, &o, cases[ci].n);
            remat_fn *g = ad_ok(AD_VALUE_AND_GRAD, f, 0, NULL);
            for (int jit = 0; jit < 2; jit++) {
                result kept, streamed, partial;
                run_mode(g, 3, c.in, jit, &kept);
                setenv("REMAT_SCAN_PLAN_MAX_OPS", "0", 1);
                run_mode(g, 3, c.in, jit, &streamed);
                setenv("REMAT_SCAN_PLAN_MAX_OPS", "3", 1);
                run_mode(g, 3, c.in, jit, &partial);
                unsetenv("REMAT_SCAN_PLAN_MAX_OPS");
                const result *r[2] = {&streamed, &partial};
                for (int k = 0; k < 2; k++) {
                    char what[96];
                    snprintf(what, sizeof what, "layout %d %s n=%lld %s, %s", lay, cases[ci].sched,
                             (long long)cases[ci].n, jit ? "compiled" : "interpreted", k ? "limit 3" : "streamed");
                    check_outs_bitwise(what, &r[k]->o, &kept.o);
                    assert_int_equal(r[k]->st.forward_evals, kept.st.forward_evals);
                    assert_int_equal(r[k]->plan.forward_evals, kept.plan.forward_evals);
                    assert_int_equal(r[k]->st.ops_executed, kept.st.ops_executed);
                    assert_int_equal(r[k]->st.peak_snapshot_bytes, kept.st.peak_snapshot_bytes);
                }
                outs_free(&kept.o);
                outs_free(&streamed.o);
                outs_free(&partial.o);
            }
            remat_fn_free(g);
            remat_fn_free(f);
        }
        euler_case_free(&c);
    }
}

/* Lane blocks (scan_lanes.h): with REMAT_SCAN_BLOCK=2 a batch of
 * independent lanes runs the schedule two lanes at a time, forward and
 * reverse of a block back to back. Outputs are bitwise those of the
 * unblocked loops and of the interpreter; the run measures the forward
 * node's primal pass plus the schedule, as the plan counted. */
static void test_scan_jit_lane_blocks_bitwise(void **state)
{
    (void)state;
    static const char *const sched[] = {"store-all", "per-step", "periodic:3", "two-level", "binomial:1",
                                        "binomial:4", "online:2", "online:5"};
    static const int64_t lens[] = {1, 2, 13, 40};
    for (int lay = 1; lay < 3; lay++) { /* (3,m), (m,3) */
        const int64_t m = 6;
        euler_case c = euler_case_new(REMAT_F64, m, lay == 1);
        for (size_t si = 0; si < sizeof sched / sizeof sched[0]; si++)
            for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++)
                for (int rev = 0; rev < 2; rev++) {
                    remat_scan_options o = opts(sched[si], rev, NULL);
                    remat_schedule_cost cost;
                    assert_int_equal(remat_schedule_predict(&o.schedule, lens[li], &cost), REMAT_OK);
                    remat_fn *f = euler_loss(&c, &o, lens[li]);
                    remat_fn *g = ad_ok(AD_VALUE_AND_GRAD, f, 0, NULL);
                    char what[96];
                    snprintf(what, sizeof what, "euler layout %d %s n=%lld%s", lay, sched[si], (long long)lens[li],
                             rev ? " reverse" : "");
                    result plain, interp, blocked;
                    setenv("REMAT_SCAN_BLOCK", "0", 1);
                    run_mode(g, 3, c.in, 1, &plain);
                    run_mode(g, 3, c.in, 0, &interp);
                    setenv("REMAT_SCAN_BLOCK", "2", 1);
                    run_mode(g, 3, c.in, 1, &blocked);
                    unsetenv("REMAT_SCAN_BLOCK");
                    check_outs_bitwise(what, &blocked.o, &plain.o);
                    check_outs_bitwise(what, &blocked.o, &interp.o);
                    assert_int_equal(plain.plan.scan_block_lanes, 0);
#if REMAT_HAVE_GCCJIT
                    /* carry 0 waits in the store for the backward: blocked when it fits */
                    if (blocked.plan.peak_snapshot_bytes >= blocked.plan.scan_carry_bytes) {
                        assert_int_equal(blocked.plan.scan_block_lanes, 2);
                        assert_int_equal(blocked.st.forward_evals, cost.forward_evals + lens[li]);
                    }
#endif
                    assert_int_equal(blocked.plan.forward_evals, blocked.st.forward_evals);
                    assert_int_equal(plain.st.forward_evals, cost.forward_evals);
                    assert_int_equal(blocked.st.peak_snapshot_bytes, plain.st.peak_snapshot_bytes);
                    outs_free(&plain.o);
                    outs_free(&interp.o);
                    outs_free(&blocked.o);
                    remat_fn_free(g);
                    remat_fn_free(f);
                }
        euler_case_free(&c);
    }
}

/* Lane blocks on the thread pool (scan_exec_lanes.c): each block owns its
 * lanes of every buffer and nothing is summed across blocks, so 2 and 4
 * threads give 1 thread's bits, for blocked and unblocked batches under
 * every schedule, both layouts, both directions; the run holds the store
 * the plan predicts and counts the evaluations it predicts; and a blocked
 * run on more than one thread really was split (the pool's counter). */
static void test_scan_jit_lane_blocks_threads(void **state)
{
    (void)state;
    const int64_t m = 8, len = 13;
    for (int lay = 1; lay < 3; lay++) { /* (3,m), (m,3) */
        euler_case c = euler_case_new(REMAT_F64, m, lay == 1);
        for (int si = 0; si < N_JIT_SCHED; si++)
            for (int blocked = 0; blocked < 2; blocked++)
                for (int rev = 0; rev < 2; rev++) {
                    remat_scan_options o = opts(jit_schedules[si], rev, NULL);
                    remat_fn *f = euler_loss(&c, &o, len);
                    remat_fn *g = ad_ok(AD_VALUE_AND_GRAD, f, 0, NULL);
                    setenv("REMAT_SCAN_BLOCK", blocked ? "2" : "0", 1);
                    result one;
                    assert_int_equal(remat_set_num_threads(1), REMAT_OK);
                    run_mode(g, 3, c.in, 1, &one);
                    for (int th = 2; th <= 4; th += 2) {
                        char what[96];
                        snprintf(what, sizeof what, "euler layout %d %s%s%s, %d threads", lay, jit_schedules[si],
                                 blocked ? " blocked" : "", rev ? " reverse" : "", th);
                        const int64_t splits = rmi_pool_split_loops();
                        result many;
                        assert_int_equal(remat_set_num_threads(th), REMAT_OK);
                        run_mode(g, 3, c.in, 1, &many);
                        check_outs_bitwise(what, &many.o, &one.o);
                        assert_int_equal(many.st.forward_evals, one.st.forward_evals);
                        assert_int_equal(many.st.forward_evals, many.plan.forward_evals);
                        assert_int_equal(many.st.peak_snapshot_bytes, one.st.peak_snapshot_bytes);
                        assert_int_equal(many.st.peak_snapshot_bytes, many.plan.peak_snapshot_bytes);
                        assert_int_equal(many.plan.scan_block_lanes, one.plan.scan_block_lanes);
#if REMAT_HAVE_GCCJIT
                        /* blocked when carry 0 fits in the schedule's peak (lower_checkpointed) */
                        if (blocked && many.plan.peak_snapshot_bytes >= many.plan.scan_carry_bytes) {
                            assert_int_equal(many.plan.scan_block_lanes, 2);
                            if (rmi_pool_split_loops() <= splits)
                                fail_msg("%s: the lane blocks ran on one thread", what);
                        }
#else
                        (void)splits;
#endif
                        outs_free(&many.o);
                    }
                    unsetenv("REMAT_SCAN_BLOCK");
                    assert_int_equal(remat_set_num_threads(0), REMAT_OK);
                    outs_free(&one.o);
                    remat_fn_free(g);
                    remat_fn_free(f);
                }
        euler_case_free(&c);
    }
}

/* Kernels take their lane count at run time (backend/lane.h), so every
 * long batched run splits into lane ranges on the pool, blocked or not:
 * each schedule, both layouts, both directions, m = 100 lanes (ranges of
 * 8, the last one 4) on 2 and 4 threads give 1 thread's bits, the
 * evaluations and store the plan predicts, and both nodes (the forward
 * phase, the reverse phase) really were split. Blocks need not divide m
 * either: REMAT_SCAN_BLOCK=24 runs blocks of 24, 24, 24, 24 and 4 lanes,
 * with the unblocked bits, on 3 threads each in its worker's store (a
 * block's items packed 4 to a full-width carry or tape, so a store-all
 * block holds a quarter of the store). */
static void test_scan_jit_lane_ranges_threads(void **state)
{
    (void)state;
    const int64_t m = 100, len = 700; /* 70000 lane-steps a phase: worth splitting */
    for (int lay = 1; lay < 3; lay++) { /* (3,m), (m,3) */
        euler_case c = euler_case_new(REMAT_F64, m, lay == 1);
        for (int si = 0; si < N_JIT_SCHED; si++)
            for (int rev = 0; rev < 2; rev++) {
                remat_scan_options o = opts(jit_schedules[si], rev, NULL);
                remat_fn *f = euler_loss(&c, &o, len);
                remat_fn *g = ad_ok(AD_VALUE_AND_GRAD, f, 0, NULL);
                setenv("REMAT_SCAN_BLOCK", "0", 1);
                result one;
                assert_int_equal(remat_set_num_threads(1), REMAT_OK);
                run_mode(g, 3, c.in, 1, &one);
                assert_int_equal(one.plan.scan_block_lanes, 0);
                for (int th = 2; th <= 4; th += 2) {
                    char what[96];
                    snprintf(what, sizeof what, "euler layout %d %s%s, %d threads", lay, jit_schedules[si],
                             rev ? " reverse" : "", th);
                    result many;
                    assert_int_equal(remat_set_num_threads(th), REMAT_OK);
                    const int64_t splits = rmi_pool_split_loops();
                    run_mode(g, 3, c.in, 1, &many);
                    const int64_t split = rmi_pool_split_loops() - splits;
                    check_outs_bitwise(what, &many.o, &one.o);
                    assert_int_equal(many.st.forward_evals, one.st.forward_evals);
                    assert_int_equal(many.st.forward_evals, many.plan.forward_evals);
                    assert_int_equal(many.st.peak_snapshot_bytes, many.plan.peak_snapshot_bytes);
#if REMAT_HAVE_GCCJIT
                    if (split < 2)
                        fail_msg("%s: %lld loops split, expected the forward and the reverse phase", what,
                                 (long long)split);
#else
                    (void)split;
#endif
                    outs_free(&many.o);
                }
                setenv("REMAT_SCAN_BLOCK", "24", 1);
                result blocked;
                assert_int_equal(remat_set_num_threads(3), REMAT_OK);
                run_mode(g, 3, c.in, 1, &blocked);
                check_outs_bitwise(jit_schedules[si], &blocked.o, &one.o);
                assert_int_equal(blocked.st.forward_evals, blocked.plan.forward_evals);
#if REMAT_HAVE_GCCJIT
                if (blocked.plan.peak_snapshot_bytes >= blocked.plan.scan_carry_bytes)
                    assert_int_equal(blocked.plan.scan_block_lanes, 24);
                /* store-all: a block's 700 tapes packed 4 to a full-width tape */
                if (si == 0 && (blocked.plan.scan_block_store_bytes == 0 ||
                                blocked.plan.scan_block_store_bytes > blocked.plan.peak_snapshot_bytes / 3))
                    fail_msg("%s: a block's store is %zu bytes of the schedule's %zu", jit_schedules[si],
                             blocked.plan.scan_block_store_bytes, blocked.plan.peak_snapshot_bytes);
#endif
                unsetenv("REMAT_SCAN_BLOCK");
                assert_int_equal(remat_set_num_threads(0), REMAT_OK);
                outs_free(&blocked.o);
                outs_free(&one.o);
                remat_fn_free(g);
                remat_fn_free(f);
            }
        euler_case_free(&c);
    }
}

/* Interleaved carries are packed for the kernels (scan_lanes.h), so a
 * (m,3) batch vectorises and blocks as a (3,m) one: a store-all gradient
 * over a 6 MiB store is lane-blocked in both layouts (before packing, an
 * interleaved store-all batch was never blocked: its extra forward pass
 * cost more than the cache saved), with the interpreter's bits, on 1 and 2
 * threads. */
static void test_scan_jit_packed_carries_block(void **state)
{
    (void)state;
    const int64_t m = 128, len = 3000;
    for (int lay = 1; lay < 3; lay++) {
        euler_case c = euler_case_new(REMAT_F64, m, lay == 1);
        remat_scan_options o = opts("store-all", 0, NULL);
        remat_fn *f = euler_loss(&c, &o, len);
        remat_fn *g = ad_ok(AD_VALUE_AND_GRAD, f, 0, NULL);
        result one, two, interp;
        assert_int_equal(remat_set_num_threads(1), REMAT_OK);
        run_mode(g, 3, c.in, 1, &one);
        run_mode(g, 3, c.in, 0, &interp);
        assert_int_equal(remat_set_num_threads(2), REMAT_OK);
        run_mode(g, 3, c.in, 1, &two);
        assert_int_equal(remat_set_num_threads(0), REMAT_OK);
        check_outs_bitwise(lay == 1 ? "(3,m)" : "(m,3)", &one.o, &interp.o);
        check_outs_bitwise(lay == 1 ? "(3,m)" : "(m,3)", &two.o, &interp.o);
        assert_true(one.plan.peak_snapshot_bytes >= ((size_t)4 << 20));
#if REMAT_HAVE_GCCJIT
        if (one.plan.scan_block_lanes == 0)
            fail_msg("layout %d: a store-all batch over %zu bytes of store not blocked", lay,
                     one.plan.peak_snapshot_bytes);
#endif
        outs_free(&one.o), outs_free(&two.o), outs_free(&interp.o);
        remat_fn_free(g);
        remat_fn_free(f);
        euler_case_free(&c);
    }
}

/* A long blocked batch: the forward node's pass over all lanes (and any
 * long run over all lanes) is split into lane ranges on the pool too
 * (scan_exec_lanes.c, run): 1 and 2 threads agree bit for bit, and on 2
 * threads a run splits two loops, the forward pass and the blocks. */
static void test_scan_jit_lane_blocks_split_forward(void **state)
{
    (void)state;
    const int64_t m = 64, len = 1024;
    euler_case c = euler_case_new(REMAT_F64, m, 1);
    static const char *const sched[] = {"store-all", "binomial:4"};
    for (int si = 0; si < 2; si++) {
        remat_scan_options o = opts(sched[si], 0, NULL);
        remat_fn *f = euler_loss(&c, &o, len);
        remat_fn *g = ad_ok(AD_VALUE_AND_GRAD, f, 0, NULL);
        setenv("REMAT_SCAN_BLOCK", "8", 1);
        result one, two;
        assert_int_equal(remat_set_num_threads(1), REMAT_OK);
        run_mode(g, 3, c.in, 1, &one);
        assert_int_equal(remat_set_num_threads(2), REMAT_OK);
        const int64_t splits = rmi_pool_split_loops();
        run_mode(g, 3, c.in, 1, &two);
        const int64_t split = rmi_pool_split_loops() - splits;
        unsetenv("REMAT_SCAN_BLOCK");
        assert_int_equal(remat_set_num_threads(0), REMAT_OK);
        check_outs_bitwise(sched[si], &two.o, &one.o);
        assert_int_equal(two.st.forward_evals, two.plan.forward_evals);
        assert_int_equal(two.st.peak_snapshot_bytes, two.plan.peak_snapshot_bytes);
#if REMAT_HAVE_GCCJIT
        assert_int_equal(two.plan.scan_block_lanes, 8);
        if (split < 2)
            fail_msg("%s: %lld loops split on 2 threads, expected the forward pass and the blocks", sched[si],
                     (long long)split);
#else
        (void)split;
#endif
        outs_free(&one.o);
        outs_free(&two.o);
        remat_fn_free(g);
        remat_fn_free(f);
    }
    euler_case_free(&c);
}

int main(void)
{
    setenv("REMAT_JIT", "always", 1); /* the compiled loops, on scans too short for the default policy */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scan_jit_counting_predicts_runs),
        cmocka_unit_test(test_scan_jit_streamed_plan_equals_kept),
        cmocka_unit_test(test_scan_jit_lane_blocks_bitwise),
        cmocka_unit_test(test_scan_jit_lane_blocks_threads),
        cmocka_unit_test(test_scan_jit_lane_blocks_split_forward),
        cmocka_unit_test(test_scan_jit_lane_ranges_threads),
        cmocka_unit_test(test_scan_jit_packed_carries_block),
    };
#if !REMAT_HAVE_GCCJIT
    printf("test_scan_jit_lanes: built without libgccjit: checking that nothing is compiled and results agree\n");
#endif
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_while_tiers.c — two-tier schedules run by the while loop: the
 * counting pass tells the length, the schedule is played for it, and the
 * snapshots past the RAM slots live in a file under the compile options'
 * tier_dir, made for the run after the count.
 *
 * Held to: the gradient of store-all to the bit (contract 3), with and
 * without rejected iterations; the slow tier's measured bytes equal to the
 * schedule's prediction at the counted length, and to the plan's capacity
 * (min(D, max_steps) slots) when that length writes every slow slot; the
 * RAM store and the evaluations as predicted; nothing left in the
 * directory; a missing directory and a full tier failing the run with
 * REMAT_ERR_IO naming the directory and the loop; the solved two-tier
 * table kept, so a second compile and run solves nothing.
 *
 * The model: while_models.h (16 iterations, 32 with rejections).
 */
#include "while_models.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "adjoint/schedule_impl.h"
#include "remat/remat.h"

static const size_t carry_bytes = 48; /* y (16) + t (16) + r (16) */

static void inputs(remat_tensor in[4], double *y0, double *k, double *T, double *h)
{
    y0[0] = 1.5, y0[1] = -0.75, k[0] = 0.8, k[1] = 2.3, *T = 1.0, *h = 0.0625;
    in[0] = remat_tensor_f64(y0, 1, DIMS(2));
    in[1] = remat_tensor_f64(k, 1, DIMS(2));
    in[2] = remat_tensor_f64(T, 0, NULL);
    in[3] = remat_tensor_f64(h, 0, NULL);
}

/* grad wrt (y0, k) of model(reject, spec, max_steps), compiled with the
 * slow tier in dir, at most max_bytes (0: no limit) */
static remat_program *compile_tiered(bool reject, const char *sched, int64_t max_steps, const char *dir,
                                     int64_t max_bytes)
{
    remat_schedule_spec spec = spec_of(sched);
    remat_fn *f = model(reject, -1, &spec, max_steps);
    remat_fn *g = grad_ok(f, 2, (int[]){0, 1});
    remat_compile_options o = remat_compile_options_default();
    o.tier_dir = dir;
    o.tier_max_bytes = max_bytes;
    o.jit = REMAT_JIT_ALWAYS; /* a two-tier loop stays interpreted even so */
    remat_program *p = NULL;
    if (remat_compile_opts(g, remat_backend_cpu(), &o, &p) != REMAT_OK)
        fail_msg("compile %s: %s", sched, remat_last_error());
    remat_fn_free(g);
    remat_fn_free(f);
    return p;
}

static void grad_run(remat_program *p, double g[4], remat_stats *st)
{
    double y[2], k[2], T, h;
    remat_tensor in[4];
    inputs(in, y, k, &T, &h);
    outs_t o;
    run_prog(p, 4, in, &o, st);
    memcpy(g, o.t[0].data, 2 * sizeof(double));
    memcpy(g + 2, o.t[1].data, 2 * sizeof(double));
    outs_free(&o);
}

static int entries(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int k = 0;
    for (struct dirent *e; (e = readdir(d));)
        k += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return k;
}

/* the slow slots the schedule writes over n steps */
static int64_t slow_extent(const remat_schedule_spec *spec, int64_t n)
{
    remat_schedule *s;
    assert_int_equal(remat_schedule_new(spec, n, &s), REMAT_OK);
    int64_t hi = 0;
    remat_action a;
    for (remat_schedule_next(s, &a); a.kind != REMAT_ACT_DONE; remat_schedule_next(s, &a))
        if (a.kind == REMAT_ACT_TAKESHOT && a.slot >= spec->snapshots && a.slot - spec->snapshots + 1 > hi)
            hi = a.slot - spec->snapshots + 1;
    remat_schedule_free(s);
    return hi;
}

static void test_while_tiers_gradient_and_bytes(void **state)
{
    (void)state;
    char dir[] = "/tmp/remat-while-tier-XXXXXX";
    assert_non_null(mkdtemp(dir));
    const char *const scheds[] = {"two-tier:1:4", "two-tier:2:3:0.5:0.5", "two-tier:0:15:0:0", "two-tier:3:0",
                                  "two-tier:1:40:0.25:0.25", "two-tier:0:2:1:2"};
    int full = 0; /* cases whose length writes every slow slot: plan = measured */
    for (int reject = 0; reject < 2; reject++) {
        const int64_t n = reject ? 32 : 16;
        for (int tight = 0; tight < 2; tight++) {
            const int64_t max_steps = tight ? n : 100;
            double ref[4];
            remat_program *p0 = compile_tiered(reject, "store-all", max_steps, dir, 0);
            grad_run(p0, ref, NULL);
            remat_program_free(p0);
            for (size_t i = 0; i < sizeof scheds / sizeof *scheds; i++) {
                remat_program *p = compile_tiered(reject, scheds[i], max_steps, dir, 0);
                remat_schedule_spec spec = spec_of(scheds[i]);
                remat_memory_plan plan;
                remat_program_plan(p, &plan);
                if (plan.compiled_loops != (spec.disk_snapshots > 0 ? 0 : 2)) /* a slow tier: interpreted */
                    fail_msg("%s: %d compiled loops", scheds[i], plan.compiled_loops);
                double g[4];
                remat_stats st;
                grad_run(p, g, &st);
                for (int j = 0; j < 4; j++)
                    if (memcmp(&g[j], &ref[j], sizeof(double)) != 0) /* contract 3 */
                        fail_msg("%s (reject %d): gradient %d is %.17g, store-all %.17g", scheds[i], reject, j,
                                 g[j], ref[j]);
                const int64_t hi = slow_extent(&spec, n);
                const int64_t cap = spec.disk_snapshots < max_steps ? spec.disk_snapshots : max_steps;
                if (st.tier_bytes != (size_t)hi * carry_bytes || plan.tier_bytes != (size_t)cap * carry_bytes)
                    fail_msg("%s (n %lld, max_steps %lld): slow tier measured %zu, planned %zu; schedule %lld "
                             "slots, capacity %lld",
                             scheds[i], (long long)n, (long long)max_steps, st.tier_bytes, plan.tier_bytes,
                             (long long)hi, (long long)cap);
                full += hi == cap && hi > 0;
                remat_schedule_cost cost;
                assert_int_equal(remat_schedule_predict(&spec, n, &cost), REMAT_OK);
                const size_t peak =
                    (size_t)cost.peak_snapshots * carry_bytes + (size_t)cost.peak_tapes * plan.scan_tape_bytes;
                if (st.peak_snapshot_bytes != peak || plan.peak_snapshot_bytes < peak)
                    fail_msg("%s: RAM store measured %zu, planned %zu, predicted %zu", scheds[i],
                             st.peak_snapshot_bytes, plan.peak_snapshot_bytes, peak);
                /* the counting pass, then the schedule's (a rejected
                 * iteration is not recomputed for the reverse pass) */
                if (!reject && st.forward_evals != cost.forward_evals + n)
                    fail_msg("%s: %lld evaluations, expected %lld", scheds[i], (long long)st.forward_evals,
                             (long long)(cost.forward_evals + n));
                assert_int_equal(entries(dir), 0); /* the file was unlinked at its creation */
                remat_program_free(p);
            }
        }
    }
    assert_true(full > 0);
    rmdir(dir);
}

static void expect_io_error(remat_program *p, const char *want)
{
    double y[2], k[2], T, h;
    remat_tensor in[4];
    inputs(in, y, k, &T, &h);
    double out[4];
    remat_tensor o[2];
    for (int i = 0; i < 2; i++) {
        o[i] = remat_program_output_desc(p, i);
        o[i].data = out + 2 * i;
    }
    assert_int_equal(remat_run(p, 4, in, 2, o, NULL), REMAT_ERR_IO);
    assert_non_null(strstr(remat_last_error(), want));
    assert_non_null(strstr(remat_last_error(), "while(cond"));
}

static void test_while_tiers_bad_directory_and_full_tier(void **state)
{
    (void)state;
    remat_program *p = compile_tiered(false, "two-tier:1:8:0.5:0.5", 100, "/nonexistent/remat-tier", 0);
    expect_io_error(p, "/nonexistent/remat-tier");
    remat_program_free(p);
    char dir[] = "/tmp/remat-while-tier-XXXXXX";
    assert_non_null(mkdtemp(dir));
    p = compile_tiered(false, "two-tier:1:8:0.5:0.5", 100, dir, 2 * (int64_t)carry_bytes);
    expect_io_error(p, "tier_max_bytes");
    /* the program runs again once there is room: nothing was left open */
    remat_program_free(p);
    p = compile_tiered(false, "two-tier:1:8:0.5:0.5", 100, dir, 0);
    double g[4];
    grad_run(p, g, NULL);
    remat_program_free(p);
    assert_int_equal(entries(dir), 0);
    rmdir(dir);
}

/* the solved table is kept: a second compile and run of the same loop
 * solves nothing; the first solves the counted length's table once, not
 * once per phase */
static void test_while_tiers_table_kept(void **state)
{
    (void)state;
    double g1[4], g2[4];
    const int64_t before = rmi_sched_two_tier_tables_solved();
    remat_program *p = compile_tiered(false, "two-tier:2:5:0.375:0.625", 100, "/tmp", 0);
    grad_run(p, g1, NULL);
    remat_program_free(p);
    const int64_t first = rmi_sched_two_tier_tables_solved() - before;
    p = compile_tiered(false, "two-tier:2:5:0.375:0.625", 100, "/tmp", 0);
    grad_run(p, g2, NULL);
    remat_program_free(p);
    const int64_t second = rmi_sched_two_tier_tables_solved() - before - first;
    if (first < 1 || first > 2 || second != 0) /* n = 1 (the spec's check at build) and n = 16 */
        fail_msg("two-tier tables solved: %lld by the first compile and run, %lld by the second", (long long)first,
                 (long long)second);
    assert_memory_equal(g1, g2, sizeof g1);
}

/* the residual report: the store's RAM slots, the slow tier's capacity
 * named as offloaded (not in the store's bytes) */
static void test_while_tiers_residual_report(void **state)
{
    (void)state;
    const char *const scheds[] = {"two-tier:1:4", "two-tier:3:0"};
    for (int i = 0; i < 2; i++) {
        remat_schedule_spec spec = spec_of(scheds[i]);
        remat_fn *f = model(false, -1, &spec, 100);
        remat_residual_list *rl;
        assert_int_equal(remat_saved_residuals(f, 0, NULL, &rl), REMAT_OK);
        bool seen = false;
        for (int k = 0; k < remat_residual_list_count(rl); k++) {
            const remat_residual *e = remat_residual_list_get(rl, k);
            if (e->kind != REMAT_RESIDUAL_SNAPSHOT)
                continue;
            seen = true;
            assert_int_equal(e->count, spec.snapshots);
            const bool named = strstr(e->detail, "+ up to 4 snapshots offloaded to the slow tier (192 bytes)") != NULL;
            if (named != (spec.disk_snapshots > 0))
                fail_msg("%s: residual detail '%s'", scheds[i], e->detail);
        }
        assert_true(seen);
        remat_residual_list_free(rl);
        remat_fn_free(f);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_while_tiers_gradient_and_bytes),
        cmocka_unit_test(test_while_tiers_bad_directory_and_full_tier),
        cmocka_unit_test(test_while_tiers_table_kept),
        cmocka_unit_test(test_while_tiers_residual_report),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

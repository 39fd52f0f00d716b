/*
 * test_scan_diagnostics.c — what scan tells its user: the residual report
 * lists the schedule's snapshots, and bad input is refused with a message
 * naming the input.
 */
#include "test_scan_util.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remat/remat.h"

/* ==== 7. the residual report ==== */

/* body(c (3), x (3), k (3)) = (sin(c) * k + x, sum of it) */
static remat_fn *body_res(void)
{
    remat_fn *b = remat_fn_new("body_res");
    remat_val c = remat_arg(b, "c", REMAT_F64, 1, DIMS(3));
    remat_val x = remat_arg(b, "x", REMAT_F64, 1, DIMS(3));
    remat_val k = remat_arg(b, "k", REMAT_F64, 1, DIMS(3));
    remat_val c1 = remat_add(b, remat_mul(b, remat_sin(b, c), k), x);
    remat_fn_output(b, c1);
    remat_fn_output(b, remat_sum_all(b, c1));
    assert_fn_ok(b);
    return b;
}

static void test_scan_residual_report_lists_snapshots(void **state)
{
    (void)state;
    const int64_t n = 100;
    remat_fn *body = body_res();
    size_t tape = tape_bytes_of(body, NULL, 1);
    static const struct {
        const char *sched;
        int64_t slots, tapes; /* written out from the schedules' documentation, n = 100 */
    } v[] = {{"store-all", 0, 100}, {"per-step", 99, 1},  {"periodic:7", 14, 7}, {"two-level", 9, 10},
             {"binomial:3", 3, 1},  {"binomial:90", 90, 1}, {"online:2", 2, 1}};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        remat_scan_options opt = {.schedule = spec_of(v[i].sched)};
        remat_fn *f = remat_fn_new("scanned");
        remat_val a[3] = {remat_arg(f, "c0", REMAT_F64, 1, DIMS(3)), remat_arg(f, "xs", REMAT_F64, 2, DIMS(n, 3)),
                          remat_arg(f, "k", REMAT_F64, 1, DIMS(3))};
        remat_val c, ys;
        scan_ok(f, body, n, 1, a, 1, a + 1, 1, a + 2, &opt, &c, &ys);
        remat_fn_output(f, remat_add(f, remat_sum_all(f, c), remat_sum_all(f, remat_square(f, ys))));
        assert_fn_ok(f);
        remat_residual_list *r = NULL;
        assert_int_equal(remat_saved_residuals(f, 0, NULL, &r), REMAT_OK);
        int found = 0;
        for (int j = 0; j < remat_residual_list_count(r); j++) {
            const remat_residual *e = remat_residual_list_get(r, j);
            if (e->kind != REMAT_RESIDUAL_SNAPSHOT)
                continue;
            found++;
            char line[256];
            remat_residual_format(e, line, sizeof line);
            assert_int_equal(e->dtype, REMAT_F64);
            assert_int_equal(e->shape.rank, 1);
            assert_int_equal(e->shape.dims[0], 3);
            if (e->count != v[i].slots)
                fail_msg("%s: count %lld, want %lld slots (%s)", v[i].sched, (long long)e->count,
                         (long long)v[i].slots, line);
            assert_non_null(e->detail);
            assert_contains(e->detail, v[i].sched);
            assert_contains(line, v[i].sched);
            /* slots of 32 bytes (f64[3] = 24, 16-aligned) and the peak tapes */
            assert_int_equal(e->bytes, (size_t)v[i].slots * 32 + (size_t)v[i].tapes * tape);
        }
        if (found != 1)
            fail_msg("%s: %d snapshot entries in the residual report, want 1", v[i].sched, found);
        if (!strcmp(v[i].sched, "binomial:3")) {
            printf("residuals of a 100-step scan, binomial:3 (tape %zu bytes):\n", tape);
            remat_residual_list_print(r, stdout);
        }
        remat_residual_list_free(r);
        remat_fn_free(f);
    }
    remat_fn_free(body);
}

/* ==== 8. bad input ==== */

/* A fresh function with c (3), xs (5,3), k (3), bad (f32[3]) to scan over. */
typedef struct {
    remat_fn *f;
    remat_val c, xs, k, c4, c32, xs_short, xs_flat, k2;
    int nodes;
} bad_ctx;

static bad_ctx bad_new(void)
{
    bad_ctx b;
    b.f = remat_fn_new("caller");
    b.c = remat_arg(b.f, "c", REMAT_F64, 1, DIMS(3));
    b.xs = remat_arg(b.f, "xs", REMAT_F64, 2, DIMS(5, 3));
    b.k = remat_arg(b.f, "k", REMAT_F64, 1, DIMS(3));
    b.c4 = remat_arg(b.f, "c4", REMAT_F64, 1, DIMS(4));
    b.c32 = remat_arg(b.f, "c32", REMAT_F32, 1, DIMS(3));
    b.xs_short = remat_arg(b.f, "xs_short", REMAT_F64, 2, DIMS(4, 3));
    b.xs_flat = remat_arg(b.f, "xs_flat", REMAT_F64, 1, DIMS(5));
    b.k2 = remat_arg(b.f, "k2", REMAT_F64, 1, DIMS(2));
    assert_fn_ok(b.f);
    b.nodes = remat_fn_num_nodes(b.f);
    return b;
}

/* st is the status of the scan called on `line`: it and the function's
 * recorded error must be `want`, the message must name this file:line and
 * every needle, and nothing may have been added to the graph. */
static void bad_check(bad_ctx *b, remat_status st, int line, remat_status want, const char *n1, const char *n2)
{
    char here[64];
    snprintf(here, sizeof here, "test_scan_diagnostics.c:%d:", line);
    if (st != want)
        fail_msg("line %d: status %s, want %s (%s)", line, remat_status_name(st), remat_status_name(want),
                 remat_last_error());
    assert_contains(remat_last_error(), here);
    assert_contains(remat_last_error(), n1);
    if (n2)
        assert_contains(remat_last_error(), n2);
    assert_int_equal(remat_fn_status(b->f), want);
    assert_contains(remat_fn_error(b->f), here);
    assert_int_equal(remat_fn_num_nodes(b->f), b->nodes);
    remat_fn_free(b->f);
}

static void test_scan_bad_input_names_the_input(void **state)
{
    (void)state;
    remat_fn *body = body_res(); /* (c (3), x (3), k (3)) -> (c', y) */
    remat_fn *broken = remat_fn_new("broken_body");
    remat_val bc = remat_arg(broken, "c", REMAT_F64, 1, DIMS(3));
    remat_fn_output(broken, remat_add(broken, bc, remat_arg(broken, "d", REMAT_F64, 1, DIMS(2))));
    assert_int_not_equal(remat_fn_status(broken), REMAT_OK);
    remat_fn *shrink = remat_fn_new("shrinking_body"); /* carry (3) -> (2) */
    remat_val sc = remat_arg(shrink, "c", REMAT_F64, 1, DIMS(3));
    remat_fn_output(shrink, remat_slice(shrink, sc, DIMS(0), DIMS(2), NULL));
    assert_fn_ok(shrink);
    remat_val cout, ys;
    remat_status st;
    int line;
    bad_ctx b;
    remat_scan_options bad_sched = {.schedule = {.kind = REMAT_SCHED_BINOMIAL, .snapshots = 0}};

    /* argument count: 1 carry + 1 xs + 0 consts for a body of 3 arguments */
    b = bad_new();
    line = __LINE__; st = remat_scan(b.f, body, 5, 1, &b.c, 1, &b.xs, 0, NULL, NULL, &cout, &ys);
    bad_check(&b, st, line, REMAT_ERR_ARG, "body_res", "takes 3 arguments");

    /* init carry shape */
    b = bad_new();
    line = __LINE__; st = remat_scan(b.f, body, 5, 1, &b.c4, 1, &b.xs, 1, &b.k, NULL, &cout, &ys);
    bad_check(&b, st, line, REMAT_ERR_SHAPE, "init carry 0 is f64[4]", "f64[3]");

    /* init carry dtype: a dtype error, as remat_call reports it */
    b = bad_new();
    line = __LINE__; st = remat_scan(b.f, body, 5, 1, &b.c32, 1, &b.xs, 1, &b.k, NULL, &cout, &ys);
    bad_check(&b, st, line, REMAT_ERR_DTYPE, "init carry 0 is f32[3]", "f64[3]");

    /* xs stacked with the wrong length */
    b = bad_new();
    line = __LINE__; st = remat_scan(b.f, body, 5, 1, &b.c, 1, &b.xs_short, 1, &b.k, NULL, &cout, &ys);
    bad_check(&b, st, line, REMAT_ERR_SHAPE, "xs 0 is f64[4,3]", "f64[5,3]");

    /* xs not stacked at all */
    b = bad_new();
    line = __LINE__; st = remat_scan(b.f, body, 5, 1, &b.c, 1, &b.xs_flat, 1, &b.k, NULL, &cout, &ys);
    bad_check(&b, st, line, REMAT_ERR_SHAPE, "xs 0 is f64[5]", "f64[5,3]");

    /* const shape */
    b = bad_new();
    line = __LINE__; st = remat_scan(b.f, body, 5, 1, &b.c, 1, &b.xs, 1, &b.k2, NULL, &cout, &ys);
    bad_check(&b, st, line, REMAT_ERR_SHAPE, "const 0 is f64[2]", "f64[3]");

    /* negative length */
    b = bad_new();
    line = __LINE__; st = remat_scan(b.f, body, -1, 1, &b.c, 1, &b.xs, 1, &b.k, NULL, &cout, &ys);
    bad_check(&b, st, line, REMAT_ERR_VALUE, "length -1", NULL);

    /* NULL body */
    b = bad_new();
    line = __LINE__; st = remat_scan(b.f, NULL, 5, 1, &b.c, 1, &b.xs, 1, &b.k, NULL, &cout, &ys);
    bad_check(&b, st, line, REMAT_ERR_NULL, "body is NULL", NULL);

    /* binomial with 0 snapshots */
    b = bad_new();
    line = __LINE__; st = remat_scan(b.f, body, 5, 1, &b.c, 1, &b.xs, 1, &b.k, &bad_sched, &cout, &ys);
    bad_check(&b, st, line, REMAT_ERR_ARG, "binomial:0", "snapshots");

    /* a body whose carry changes shape */
    b = bad_new();
    line = __LINE__; st = remat_scan(b.f, shrink, 5, 1, &b.c, 0, NULL, 0, NULL, NULL, &cout, NULL);
    bad_check(&b, st, line, REMAT_ERR_SHAPE, "carry 0 goes in as f64[3] but comes out as f64[2]", NULL);

    /* a body with a build error */
    b = bad_new();
    line = __LINE__; st = remat_scan(b.f, broken, 5, 1, &b.c, 0, NULL, 1, &b.k2, NULL, &cout, NULL);
    bad_check(&b, st, line, remat_fn_status(broken), "broken_body", "build error");

    /* ys wanted but no room for them */
    b = bad_new();
    line = __LINE__; st = remat_scan(b.f, body, 5, 1, &b.c, 1, &b.xs, 1, &b.k, NULL, &cout, NULL);
    bad_check(&b, st, line, REMAT_ERR_NULL, "ys is NULL", NULL);

    /* the body is untouched and still usable after all that */
    b = bad_new();
    scan_ok(b.f, body, 5, 1, &b.c, 1, &b.xs, 1, &b.k, NULL, &cout, &ys);
    remat_fn_free(b.f);

    remat_fn_free(shrink);
    remat_fn_free(broken);
    remat_fn_free(body);
}

/* ---- main ---- */

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scan_residual_report_lists_snapshots),
        cmocka_unit_test(test_scan_bad_input_names_the_input),
    };
    rng_seed(0x9e3779b97f4a7c15ull);
    return cmocka_run_group_tests_name("scan_diagnostics", tests, NULL, NULL);
}

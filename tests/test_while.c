/*
 * test_while.c — remat_while (remat/loop.h): a loop whose count depends on
 * the data, reverse mode against the same iterations unrolled by hand and
 * against central differences in f64, rejected iterations absent from the
 * reverse pass, every schedule bit for bit, the store measured against the
 * schedule's prediction, max_steps, zero iterations.
 *
 * The model and why it shows rejected iterations: while_models.h.
 */
#include "while_models.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remat/remat.h"

static double y0v[2] = {1.5, -0.75}, kv[2] = {0.8, 2.3}, Tv = 1.0, hv = 0.0625;

static void inputs(remat_tensor in[4], double *y0, double *k, double *T, double *h)
{
    in[0] = remat_tensor_f64(y0, 1, DIMS(2));
    in[1] = remat_tensor_f64(k, 1, DIMS(2));
    in[2] = remat_tensor_f64(T, 0, NULL);
    in[3] = remat_tensor_f64(h, 0, NULL);
}

/* the loss at (y0, k), through the while under the default schedule */
static double loss_at(const double *y0, const double *k, bool reject)
{
    remat_fn *f = model(reject, -1, NULL, 1000);
    double y[2] = {y0[0], y0[1]}, kk[2] = {k[0], k[1]}, T = Tv, h = hv;
    remat_tensor in[4];
    inputs(in, y, kk, &T, &h);
    outs_t o;
    run_fn(f, 4, in, &o, NULL, NULL);
    double v = ((double *)o.t[0].data)[0];
    outs_free(&o);
    remat_fn_free(f);
    return v;
}

/* gradient (d y0 (2), d k (2)) of loss; st/plan may be NULL */
static void grad_of(const remat_fn *f, double g[4], remat_stats *st, remat_memory_plan *plan)
{
    double y[2] = {y0v[0], y0v[1]}, kk[2] = {kv[0], kv[1]}, T = Tv, h = hv;
    remat_tensor in[4];
    inputs(in, y, kk, &T, &h);
    remat_fn *df = grad_ok(f, 2, (int[]){0, 1});
    outs_t o;
    run_fn(df, 4, in, &o, st, plan);
    memcpy(g, o.t[0].data, 2 * sizeof(double));
    memcpy(g + 2, o.t[1].data, 2 * sizeof(double));
    outs_free(&o);
    remat_fn_free(df);
}

/* 16 steps of 1/16 reach T = 1 exactly: the count is the data's */
static void test_while_count_depends_on_data(void **state)
{
    (void)state;
    for (int reject = 0; reject < 2; reject++) {
        remat_fn *c = cond_fn(), *b = body_fn(reject);
        remat_fn *f = remat_fn_new("count");
        remat_val a[4] = {remat_arg(f, "y0", REMAT_F64, 1, DIMS(2)), remat_arg(f, "k", REMAT_F64, 1, DIMS(2)),
                          remat_arg(f, "T", REMAT_F64, 0, NULL), remat_arg(f, "h", REMAT_F64, 0, NULL)};
        remat_val init[3] = {a[0], remat_scalar(f, REMAT_F64, 0.0), remat_scalar(f, REMAT_F64, reject ? 0 : 1)};
        remat_val out[3], n;
        remat_while_options opt = {.max_steps = 100};
        assert_ok(remat_while(f, c, b, 3, 1, init, 3, a + 1, &opt, out, &n));
        remat_fn_output(f, n);
        remat_fn_output(f, out[0]);
        remat_fn_output(f, out[1]);
        for (int trial = 0; trial < 3; trial++) {
            double y[2] = {y0v[0], y0v[1]}, kk[2] = {kv[0], kv[1]}, T = trial == 2 ? 0.0 : Tv;
            double h = trial == 1 ? 0.125 : hv;
            remat_tensor in[4];
            inputs(in, y, kk, &T, &h);
            outs_t o;
            run_fn(f, 4, in, &o, NULL, NULL);
            const int64_t steps = trial == 2 ? 0 : (int64_t)(T / h);
            assert_true(((double *)o.t[0].data)[0] == (double)(steps * (reject ? 2 : 1)));
            double want[2] = {y[0], y[1]};
            for (int64_t s = 0; s < steps; s++)
                for (int i = 0; i < 2; i++)
                    want[i] = want[i] + (h * -(kk[i] * want[i])) / 1.0;
            check_close("y_n", 2, o.t[1].data, want, 0, 0);
            assert_true(((double *)o.t[2].data)[0] == (double)steps * h);
            outs_free(&o);
        }
        remat_fn_free(f);
        remat_fn_free(c);
        remat_fn_free(b);
    }
}

/* the gradient against the accepted iterations unrolled by hand and
 * against central differences */
static void test_while_grad_unrolled_and_fd(void **state)
{
    (void)state;
    double g[4], gu[4], gr[4];
    remat_fn *f = model(false, -1, NULL, 1000), *u = model(false, 16, NULL, 0), *fr = model(true, -1, NULL, 1000);
    grad_of(f, g, NULL, NULL);
    grad_of(u, gu, NULL, NULL);
    grad_of(fr, gr, NULL, NULL);
    check_close("while vs unrolled", 4, g, gu, 1e-14, 1e-15);
    for (int i = 0; i < 4; i++) /* rejected iterations change nothing */
        assert_memory_equal(&g[i], &gr[i], sizeof(double));
    for (int p = 0; p < 4; p++) {
        const double eps = 1e-6;
        double y[2] = {y0v[0], y0v[1]}, k[2] = {kv[0], kv[1]};
        double *x = p < 2 ? &y[p] : &k[p - 2], x0 = *x;
        *x = x0 + eps;
        double lp = loss_at(y, k, p & 1);
        *x = x0 - eps;
        double lm = loss_at(y, k, p & 1);
        double fd = (lp - lm) / (2 * eps);
        check_close("central difference", 1, &g[p], &fd, 1e-7, 1e-9);
    }
    remat_fn_free(f);
    remat_fn_free(u);
    remat_fn_free(fr);
}

static const char *const schedules[] = {
    "store-all", "per-step", "periodic:1", "periodic:3", "periodic:7", "two-level", "two-level:5",
    "binomial:1", "binomial:2", "binomial:5", "binomial:40", "online:1", "online:2", "online:3", "online:8",
};

/* every schedule: the gradient bit for bit, the store it held as its
 * prediction for the length that ran says, evaluations as counted */
static void test_while_schedules_bitwise(void **state)
{
    (void)state;
    for (int reject = 0; reject < 2; reject++) {
        double ref[4];
        remat_fn *f0 = model(reject, -1, NULL, 1000);
        grad_of(f0, ref, NULL, NULL);
        remat_fn_free(f0);
        const int64_t n = reject ? 32 : 16;
        for (size_t s = 0; s < sizeof schedules / sizeof *schedules; s++) {
            remat_schedule_spec spec = spec_of(schedules[s]);
            remat_fn *f = model(reject, -1, &spec, 1000);
            double g[4];
            remat_stats st;
            remat_memory_plan plan;
            grad_of(f, g, &st, &plan);
            for (int i = 0; i < 4; i++)
                if (memcmp(&g[i], &ref[i], sizeof(double)) != 0) /* contract 3 */
                    fail_msg("%s (reject %d): gradient %d is %.17g, default %.17g", schedules[s], reject, i, g[i],
                             ref[i]);
            remat_schedule_cost cost;
            assert_ok(remat_schedule_predict(&spec, n, &cost));
            /* carry: y (16) + t (16) + r (16) */
            const size_t peak = (size_t)cost.peak_snapshots * 48 + (size_t)cost.peak_tapes * plan.scan_tape_bytes;
            if (st.peak_snapshot_bytes != peak)
                fail_msg("%s: measured store %zu, predicted %zu", schedules[s], st.peak_snapshot_bytes, peak);
            assert_true(plan.peak_snapshot_bytes >= peak);
            assert_int_equal(plan.scan_carry_bytes, 48);
            /* online learns the length as it runs (its last iteration may
             * be evaluated twice: ahead, then taped); the others count
             * first. A rejected iteration is not recomputed for the reverse
             * pass: fewer evaluations than the schedule's. */
            const int64_t evals = cost.forward_evals + (spec.kind == REMAT_SCHED_ONLINE ? 0 : n);
            if ((!reject && st.forward_evals < evals) || st.forward_evals > evals + 1)
                fail_msg("%s: %lld evaluations, expected %lld (+1 at most)", schedules[s],
                         (long long)st.forward_evals, (long long)evals);
            remat_fn_free(f);
        }
    }
}

static void expect_run_error(remat_fn *f, const char *needle)
{
    double y[2] = {y0v[0], y0v[1]}, kk[2] = {kv[0], kv[1]}, T = Tv, h = hv;
    remat_tensor in[4];
    inputs(in, y, kk, &T, &h);
    remat_program *p = compile_ok(f);
    double out[8];
    remat_tensor o[4];
    const int no = remat_program_num_outputs(p);
    for (int i = 0; i < no; i++) {
        o[i] = remat_program_output_desc(p, i);
        o[i].data = out + 2 * i;
    }
    assert_int_equal(remat_run(p, 4, in, no, o, NULL), REMAT_ERR_VALUE);
    assert_contains(remat_last_error(), needle);
    assert_contains(remat_last_error(), "euler");
    remat_program_free(p);
}

static void test_while_max_steps_exceeded(void **state)
{
    (void)state;
    const char *specs[] = {"online:2", "store-all", "binomial:3"};
    for (int s = 0; s < 3; s++) {
        remat_schedule_spec spec = spec_of(specs[s]);
        remat_fn *f = model(false, -1, &spec, 15); /* 16 are needed */
        expect_run_error(f, "max_steps = 15");
        remat_fn *df = grad_ok(f, 2, (int[]){0, 1});
        expect_run_error(df, "max_steps = 15");
        remat_fn_free(df);
        remat_fn_free(f);
        f = model(false, -1, &spec, 16); /* exactly enough */
        double g[4], ref[4];
        grad_of(f, g, NULL, NULL);
        remat_fn *f0 = model(false, -1, NULL, 1000);
        grad_of(f0, ref, NULL, NULL);
        assert_memory_equal(g, ref, sizeof g); /* contract 3 */
        remat_fn_free(f0);
        remat_fn_free(f);
    }
}

/* T = 0: no iteration; y0's gradient is the loss's, k's is zero */
static void test_while_zero_iterations(void **state)
{
    (void)state;
    const char *specs[] = {"online:8", "store-all", "binomial:2", "per-step"};
    for (int s = 0; s < 4; s++) {
        remat_schedule_spec spec = spec_of(specs[s]);
        remat_fn *f = model(true, -1, &spec, 10);
        double y[2] = {y0v[0], y0v[1]}, kk[2] = {kv[0], kv[1]}, T = 0, h = hv;
        remat_tensor in[4];
        inputs(in, y, kk, &T, &h);
        remat_fn *df = grad_ok(f, 2, (int[]){0, 1});
        outs_t o;
        run_fn(df, 4, in, &o, NULL, NULL);
        const double want[4] = {2 * y[0] + 1, 2 * y[1] + 1, 0, 0};
        check_close("d y0", 2, o.t[0].data, want, 0, 0);
        check_close("d k", 2, o.t[1].data, want + 2, 0, 0);
        assert_false(signbit(((double *)o.t[1].data)[0]));
        outs_free(&o);
        remat_fn_free(df);
        remat_fn_free(f);
    }
}

int main(void)
{
    rng_seed(0x9e3779b97f4a7c15ull);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_while_count_depends_on_data),
        cmocka_unit_test(test_while_grad_unrolled_and_fd),
        cmocka_unit_test(test_while_schedules_bitwise),
        cmocka_unit_test(test_while_max_steps_exceeded),
        cmocka_unit_test(test_while_zero_iterations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

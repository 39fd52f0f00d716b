/*
 * test_scan_schedules.c — reverse mode through every checkpoint schedule and
 * body policy, measured vs predicted costs, the seed values and nesting.
 *
 * Every expectation comes from outside the scan: the same body unrolled by
 * hand into a graph with remat_call (no scan node anywhere), closed forms
 * computed here in plain C, central finite differences in f64, the schedules' cost formulas
 * written out here, the binomial optimum's published test vectors, and the seed
 * values (tests/goldens/seed_values.json and
 * tests/goldens/gradients.json, JAX 0.10.2 in float64). Schedules and body
 * policies are held to the store-all gradient bit for bit, as docs/DESIGN.md
 * promises ("Schedules and policies change memory and time, never results").
 *
 * Bitwise assertions rest on contract 3 (docs/design-notes.md, "Bitwise
 * contracts") unless marked.
 */
#include "test_scan_util.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remat/remat.h"

/* ==== 3 and 4. a body where policies matter: matmul + tanh, xs and ys ====
 *
 * body(h (3,5), acc (), x (5), W (5,5)):
 *   h'   = tanh(h @ W + x)
 *   y    = sum(h' * h, axis 1)      (3)
 *   acc' = acc + 0.01 sum(y)
 * Carry bytes 120 and 8: neither a multiple of the 16-byte alignment.
 */
static remat_fn *body_mm(void)
{
    remat_fn *b = remat_fn_new("body_mm");
    remat_val h = remat_arg(b, "h", REMAT_F64, 2, DIMS(3, 5));
    remat_val acc = remat_arg(b, "acc", REMAT_F64, 0, NULL);
    remat_val x = remat_arg(b, "x", REMAT_F64, 1, DIMS(5));
    remat_val w = remat_arg(b, "W", REMAT_F64, 2, DIMS(5, 5));
    remat_val h1 = remat_tanh(b, remat_add(b, remat_matmul(b, h, w), x));
    remat_val y = remat_sum(b, remat_mul(b, h1, h), 1, (int[]){1});
    remat_fn_output(b, h1);
    remat_fn_output(b, remat_add(b, acc, remat_mul_scalar(b, remat_sum_all(b, y), 0.01)));
    remat_fn_output(b, y);
    assert_fn_ok(b);
    return b;
}

static const size_t mm_carry_bytes = 128 + 16; /* align16(3*5*8) + align16(8) */

/* loss(h0, acc0, X (n,5), W) = sum(h_n^2) + acc_n + sum(sin ys) */
static remat_fn *model_mm(int64_t n, bool by_scan, const remat_scan_options *opt)
{
    remat_fn *body = body_mm();
    remat_fn *f = remat_fn_new(by_scan ? "mm_scan" : "mm_unrolled");
    remat_val a[4] = {remat_arg(f, "h0", REMAT_F64, 2, DIMS(3, 5)), remat_arg(f, "acc0", REMAT_F64, 0, NULL),
                      remat_arg(f, "X", REMAT_F64, 2, DIMS(n, 5)), remat_arg(f, "W", REMAT_F64, 2, DIMS(5, 5))};
    remat_val c[2], ys = REMAT_NONE;
    if (by_scan) {
        scan_ok(f, body, n, 2, a, 1, a + 2, 1, a + 3, opt, c, &ys);
    } else {
        remat_val *y = xcalloc((size_t)n, sizeof *y);
        c[0] = a[0];
        c[1] = a[1];
        for (int64_t t = 0; t < n; t++) {
            remat_val o[3];
            assert_int_equal(remat_call(f, body, 4, (remat_val[]){c[0], c[1], remat_index(f, a[2], t), a[3]}, o),
                             REMAT_OK);
            c[0] = o[0];
            c[1] = o[1];
            y[t] = o[2];
        }
        if (n > 0)
            ys = stack(f, n, y);
        free(y);
    }
    remat_val l = remat_add(f, remat_sum_all(f, remat_square(f, c[0])), c[1]);
    if (ys != REMAT_NONE)
        l = remat_add(f, l, remat_sum_all(f, remat_sin(f, ys)));
    remat_fn_output(f, l);
    remat_fn_free(body);
    assert_fn_ok(f);
    return f;
}

static void inputs_mm(int64_t n, remat_tensor *in)
{
    in[0] = t_rand(REMAT_F64, 2, DIMS(3, 5), -1, 1);
    in[1] = t_rand(REMAT_F64, 0, NULL, -1, 1);
    in[2] = t_rand(REMAT_F64, 2, DIMS(n, 5), -1, 1);
    in[3] = t_rand(REMAT_F64, 2, DIMS(5, 5), -0.6, 0.6);
}

static const int64_t grid_lengths[] = {0, 1, 2, 3, 5, 7, 13, 16, 31, 64, 97, 128, 1000};
#define N_GRID_LENGTHS ((int)(sizeof grid_lengths / sizeof grid_lengths[0]))

static const remat_policy *grid_policy(int p)
{
    return p == 0 ? NULL : p == 1 ? remat_nothing_saveable : remat_dots_saveable;
}
static const char *grid_policy_name(int p)
{
    return p == 0 ? "no policy" : p == 1 ? "nothing_saveable" : "dots_saveable";
}

typedef struct {
    outs_t o; /* loss, d/dh0, d/dacc0, d/dX, d/dW */
    remat_stats st;
    remat_memory_plan plan;
} mm_run;

static void run_mm(int64_t n, const char *sched, int policy, remat_tensor *in, mm_run *r)
{
    remat_scan_options opt = {.schedule = spec_of(sched), .body_policy = grid_policy(policy)};
    remat_fn *f = model_mm(n, true, &opt);
    run_ad(AD_VALUE_AND_GRAD, f, 4, in, &r->o, &r->st, &r->plan);
    remat_fn_free(f);
}

/* lax.scan's unroll (remat_scan_options.unroll): the interpreter runs
 * `unroll` bodies as one sub-program per iteration of its plain loop, the
 * rest of a run one at a time. Values and gradients keep unroll 1's bits
 * (contract 3: the same ops on the same operands in the same order), forward
 * and reverse, under schedules with plain advances (binomial, periodic
 * recompute with them), lengths not a multiple of the unroll. body_mm has a
 * dot_general: interpreted, so the unrolled program must be there. */
static void test_scan_schedules_unroll_keeps_bits(void **state)
{
    (void)state;
    const int unrolls[] = {2, 3, 7};
    const char *const scheds[] = {"store-all", "binomial:3", "periodic:4"};
    const int64_t lengths[] = {1, 13, 30};
    for (size_t li = 0; li < sizeof lengths / sizeof *lengths; li++) {
        const int64_t n = lengths[li];
        remat_tensor in[4];
        inputs_mm(n, in);
        for (int rev = 0; rev < 2; rev++)
            for (size_t si = 0; si < sizeof scheds / sizeof *scheds; si++) {
                remat_scan_options o1 = {.reverse = rev, .schedule = spec_of(scheds[si]), .unroll = 1};
                remat_fn *f1 = model_mm(n, true, &o1);
                mm_run ref, prim_ref;
                run_ad(AD_VALUE_AND_GRAD, f1, 4, in, &ref.o, &ref.st, &ref.plan);
                remat_program *p1 = compile_ok(f1);
                run_prog(p1, 4, in, &prim_ref.o, NULL);
                remat_program_plan(p1, &prim_ref.plan);
                assert_int_equal(prim_ref.plan.unrolled_loops, 0);
                for (size_t ui = 0; ui < sizeof unrolls / sizeof *unrolls; ui++) {
                    const int u = unrolls[ui];
                    remat_scan_options o = o1;
                    o.unroll = u;
                    remat_fn *f = model_mm(n, true, &o);
                    mm_run got, prim;
                    run_ad(AD_VALUE_AND_GRAD, f, 4, in, &got.o, &got.st, &got.plan);
                    char what[96];
                    snprintf(what, sizeof what, "unroll %d, %s, n=%lld%s", u, scheds[si], (long long)n,
                             rev ? ", reverse" : "");
                    check_outs_bitwise(what, &got.o, &ref.o);
                    assert_int_equal(got.st.forward_evals, ref.st.forward_evals);
                    /* the primal: one plain run of n steps, unrolled where n holds a group */
                    remat_program *p = compile_ok(f);
                    run_prog(p, 4, in, &prim.o, NULL);
                    remat_program_plan(p, &prim.plan);
                    check_outs_bitwise(what, &prim.o, &prim_ref.o);
                    if (prim.plan.unrolled_loops != (n >= u ? 1 : 0))
                        fail_msg("%s: %lld unrolled loops", what, (long long)prim.plan.unrolled_loops);
                    if (n >= u && !strcmp(scheds[si], "binomial:3") && got.plan.unrolled_loops < 1)
                        fail_msg("%s: the gradient's recomputations are not unrolled", what);
                    remat_program_free(p);
                    outs_free(&prim.o);
                    outs_free(&got.o);
                    remat_fn_free(f);
                }
                remat_program_free(p1);
                outs_free(&prim_ref.o);
                outs_free(&ref.o);
                remat_fn_free(f1);
            }
        t_free_all(4, in);
    }
    /* lax.scan refuses unroll < 1; 0 is C's zero initialisation (1) */
    remat_scan_options bad = {.unroll = -2};
    remat_fn *body = body_mm();
    remat_fn *f = remat_fn_new("bad_unroll");
    remat_val a[4] = {remat_arg(f, "h0", REMAT_F64, 2, DIMS(3, 5)), remat_arg(f, "acc0", REMAT_F64, 0, NULL),
                      remat_arg(f, "X", REMAT_F64, 2, DIMS(4, 5)), remat_arg(f, "W", REMAT_F64, 2, DIMS(5, 5))};
    remat_val c[2], ys;
    assert_int_equal(remat_scan(f, body, 4, 2, a, 1, a + 2, 1, a + 3, &bad, c, &ys), REMAT_ERR_VALUE);
    assert_non_null(strstr(remat_fn_error(f), "unroll -2 is not a positive number of steps"));
    assert_non_null(strstr(remat_fn_error(f), "test_scan_schedules.c:"));
    remat_fn_free(f);
    remat_fn_free(body);
}

static void test_scan_schedules_policies_bitwise_identical(void **state)
{
    (void)state;
    for (int li = 0; li < N_GRID_LENGTHS; li++) {
        int64_t n = grid_lengths[li];
        remat_tensor in[4];
        inputs_mm(n, in);
        mm_run ref;
        run_mm(n, "store-all", 0, in, &ref);
        if (n <= 128) { /* store-all itself against the unrolled graph */
            remat_fn *fu = model_mm(n, false, NULL);
            outs_t gu;
            run_ad(AD_VALUE_AND_GRAD, fu, 4, in, &gu, NULL, NULL);
            char what[64];
            snprintf(what, sizeof what, "store-all vs unrolled, n=%lld", (long long)n);
            check_outs_close(what, 0, 5, &ref.o, &gu, 1e-13);
            outs_free(&gu);
            remat_fn_free(fu);
        }
        for (int si = 0; si < N_SCHEDULES; si++) {
            for (int p = 0; p < 3; p++) {
                if (si == 0 && p == 0)
                    continue;
                mm_run r;
                run_mm(n, schedules[si], p, in, &r);
                char what[96];
                snprintf(what, sizeof what, "n=%lld %s %s vs store-all", (long long)n, schedules[si],
                         grid_policy_name(p));
                check_outs_bitwise(what, &r.o, &ref.o);
                outs_free(&r.o);
            }
        }
        outs_free(&ref.o);
        t_free_all(4, in);
    }
}

/* One compiled program run on inputs A, then B, then A again: the runtime's
 * schedule state, slots and tapes are per run, so A's bits come back, and B's
 * equal a fresh program's. */
static void test_scan_program_reruns_reproduce(void **state)
{
    (void)state;
    static const char *const sched[] = {"binomial:3", "online:2", "periodic:3", "per-step"};
    const int64_t n = 37;
    for (size_t si = 0; si < sizeof sched / sizeof sched[0]; si++) {
        remat_scan_options opt = {.schedule = spec_of(sched[si]), .body_policy = remat_dots_saveable};
        remat_fn *f = model_mm(n, true, &opt);
        remat_fn *g = ad_ok(AD_VALUE_AND_GRAD, f, 0, NULL);
        remat_program *p = compile_ok(g);
        remat_tensor ia[4], ib[4];
        inputs_mm(n, ia);
        inputs_mm(n, ib);
        outs_t a1, b1, a2, b_fresh;
        remat_stats s1, s2;
        run_prog(p, 4, ia, &a1, &s1);
        run_prog(p, 4, ib, &b1, NULL);
        run_prog(p, 4, ia, &a2, &s2);
        run_fn(g, 4, ib, &b_fresh, NULL, NULL);
        check_outs_bitwise(sched[si], &a2, &a1); /* contract 1 */
        check_outs_bitwise(sched[si], &b1, &b_fresh); /* contract 1 */
        assert_int_equal(s1.forward_evals, s2.forward_evals);
        assert_int_equal(s1.peak_snapshot_bytes, s2.peak_snapshot_bytes);
        assert_int_equal(s1.peak_arena_bytes, s2.peak_arena_bytes);
        outs_free(&a1);
        outs_free(&b1);
        outs_free(&a2);
        outs_free(&b_fresh);
        t_free_all(4, ia);
        t_free_all(4, ib);
        remat_program_free(p);
        remat_fn_free(g);
        remat_fn_free(f);
    }
}

static int64_t ceil_div(int64_t a, int64_t b) { return a / b + (a % b != 0); }

/* The cost formulas, written out here from the schedules' documentation
 * (remat/schedule.h, docs/DESIGN.md); online has no closed form for its peak. */
static void closed_form(const remat_schedule_spec *s, int64_t n, remat_schedule_cost *c)
{
    *c = (remat_schedule_cost){0};
    if (n == 0)
        return;
    int64_t k;
    switch (s->kind) {
    case REMAT_SCHED_STORE_ALL: *c = (remat_schedule_cost){.forward_evals = n, .peak_snapshots = 0, .peak_tapes = n}; return;
    case REMAT_SCHED_PER_STEP: *c = (remat_schedule_cost){.forward_evals = 2 * n - 1, .peak_snapshots = n - 1, .peak_tapes = 1}; return;
    case REMAT_SCHED_PERIODIC:
    case REMAT_SCHED_TWO_LEVEL:
        k = s->period;
        if (k == 0)
            for (k = 1; k * k < n; k++)
                ;
        *c = (remat_schedule_cost){.forward_evals = n + (ceil_div(n, k) - 1) * k,
                                   .peak_snapshots = ceil_div(n, k) - 1,
                                   .peak_tapes = k < n ? k : n};
        return;
    case REMAT_SCHED_BINOMIAL:
        *c = (remat_schedule_cost){.forward_evals = remat_binomial_optimum(n, s->snapshots),
                                   .peak_snapshots = s->snapshots < n - 1 ? s->snapshots : n - 1,
                                   .peak_tapes = 1};
        return;
    default: c->forward_evals = -1; return;
    }
}

static void test_scan_measured_equals_predicted(void **state)
{
    (void)state;
    remat_fn *body = body_mm();
    size_t tape[3];
    for (int p = 0; p < 3; p++)
        tape[p] = tape_bytes_of(body, grid_policy(p), 2);
    /* Written out: no policy keeps h, W and tanh's output; nothing_saveable
     * the inputs h, x, W; dots_saveable adds the dot_general's output (tanh
     * is recomputed from it and x). Of those, x_t and W are read from xs and
     * the consts, not taped: 128 + 128, 128, 128 + 128. */
    assert_int_equal(tape[0], 256);
    assert_int_equal(tape[1], 128);
    assert_int_equal(tape[2], 256);
    char table[8192];
    int tl = snprintf(table, sizeof table, "%-12s %10s %10s %14s %14s\n", "n=1000", "evals", "predicted",
                      "peak snap B", "predicted B");
    for (int li = 0; li < N_GRID_LENGTHS; li++) {
        int64_t n = grid_lengths[li];
        remat_tensor in[4];
        inputs_mm(n, in);
        for (int si = 0; si < N_SCHEDULES; si++) {
            remat_schedule_spec spec = spec_of(schedules[si]);
            remat_schedule_cost pred, cf;
            assert_int_equal(remat_schedule_predict(&spec, n, &pred), REMAT_OK);
            closed_form(&spec, n, &cf);
            if (cf.forward_evals >= 0) { /* the prediction is the documented formula */
                assert_int_equal(pred.forward_evals, cf.forward_evals);
                assert_int_equal(pred.peak_snapshots, cf.peak_snapshots);
                assert_int_equal(pred.peak_tapes, cf.peak_tapes);
            } else { /* online: never better than the offline optimum, equal to it while
                        n <= (s+1)(s+2)/2 (Stumm & Walther 2010) */
                assert_true(pred.forward_evals >= remat_binomial_optimum(n, spec.snapshots));
                if (n <= (spec.snapshots + 1) * (spec.snapshots + 2) / 2)
                    assert_int_equal(pred.forward_evals, remat_binomial_optimum(n, spec.snapshots));
                assert_true(pred.peak_snapshots <= spec.snapshots);
            }
            for (int p = 0; p < 3; p++) {
                mm_run r;
                run_mm(n, schedules[si], p, in, &r);
                size_t want = (size_t)pred.peak_snapshots * mm_carry_bytes + (size_t)pred.peak_tapes * tape[p];
                /* the plan reports the same prediction and the byte sizes worked out here */
                assert_int_equal(r.plan.peak_snapshot_bytes, want);
                assert_int_equal(r.plan.scan_carry_bytes, mm_carry_bytes);
                assert_int_equal(r.plan.scan_tape_bytes, tape[p]);
                if (r.st.forward_evals != pred.forward_evals || r.st.peak_snapshot_bytes != want ||
                    r.plan.arena_bytes != r.st.peak_arena_bytes)
                    fail_msg("n=%lld %s %s: evals %lld (predicted %lld), peak snapshot bytes %zu (predicted %lld "
                             "x %zu + %lld x %zu = %zu), arena %zu (planned %zu)",
                             (long long)n, schedules[si], grid_policy_name(p), (long long)r.st.forward_evals,
                             (long long)pred.forward_evals, r.st.peak_snapshot_bytes, (long long)pred.peak_snapshots,
                             mm_carry_bytes, (long long)pred.peak_tapes, tape[p], want, r.st.peak_arena_bytes,
                             r.plan.arena_bytes);
                if (n == 1000 && p == 0 && tl < (int)sizeof table)
                    tl += snprintf(table + tl, sizeof table - (size_t)tl, "%-12s %10lld %10lld %14zu %14zu\n",
                                   schedules[si], (long long)r.st.forward_evals, (long long)pred.forward_evals,
                                   r.st.peak_snapshot_bytes, want);
                outs_free(&r.o);
            }
        }
        t_free_all(4, in);
    }
    printf("scan body_mm: carry %zu bytes, tape %zu bytes (nothing_saveable %zu, dots_saveable %zu)\n%s",
           mm_carry_bytes, tape[0], tape[1], tape[2], table);
    remat_fn_free(body);
}

/* Griewank & Walther's binomial optimum: published test vectors, and the
 * binomial schedule's measured evaluations hitting it. */
static void test_scan_binomial_optimum_vectors(void **state)
{
    (void)state;
    static const int64_t v[][3] = {{5, 2, 11},     {10, 3, 25},     {20, 3, 65},
                                   {100, 3, 590},  {100, 10, 322},  {1000, 5, 7284}};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        assert_int_equal(remat_binomial_optimum(v[i][0], v[i][1]), v[i][2]);
        char sched[32];
        snprintf(sched, sizeof sched, "binomial:%lld", (long long)v[i][1]);
        remat_tensor in[4];
        inputs_mm(v[i][0], in);
        mm_run r;
        run_mm(v[i][0], sched, 0, in, &r);
        if (r.st.forward_evals != v[i][2])
            fail_msg("binomial (%lld, %lld): %lld evaluations, optimum %lld", (long long)v[i][0],
                     (long long)v[i][1], (long long)r.st.forward_evals, (long long)v[i][2]);
        outs_free(&r.o);
        t_free_all(4, in);
    }
}

/* ==== 5. the seeds ==== */

/* body(c) = (sin c + 0.1 c, same): seed 004 section 5 */
static remat_fn *body_sin(void)
{
    remat_fn *b = remat_fn_new("scan_body");
    remat_val c = remat_arg(b, "x", REMAT_F64, 1, DIMS(100));
    remat_val c1 = remat_add(b, remat_sin(b, c), remat_mul_scalar(b, c, 0.1));
    remat_fn_output(b, c1);
    remat_fn_output(b, c1);
    assert_fn_ok(b);
    return b;
}

static void test_scan_seed_scan_sin(void **state)
{
    (void)state;
    /* seed_values.json scan_sin.grad_norm_more_digits; goldens/gradients.json
     * scan_sin: grad_norm 1.8153891594704775e-09, every entry 1.8153891594704774e-10 */
    const double want_norm = 1.8153891594704794e-09, want_entry = 1.8153891594704774e-10;
    remat_fn *body = body_sin();
    remat_fn *cp_body = remat_checkpoint(body, NULL);
    assert_non_null(cp_body);
    outs_t first = {0};
    for (int variant = 0; variant < 3; variant++) {
        remat_scan_options opt = {.body_policy = variant == 1 ? remat_nothing_saveable : NULL};
        remat_fn *f = remat_fn_new("sequential");
        remat_val x = remat_arg(f, "x", REMAT_F64, 1, DIMS(100));
        remat_val fin, traj;
        scan_ok(f, variant == 2 ? cp_body : body, 100, 1, &x, 0, NULL, 0, NULL, &opt, &fin, &traj);
        remat_fn_output(f, remat_sum_all(f, fin));
        assert_fn_ok(f);
        remat_tensor in = t_new(REMAT_F64, 1, DIMS(100));
        for (int i = 0; i < 100; i++)
            t_set(&in, i, 1.0);
        outs_t g;
        run_ad(AD_GRAD, f, 1, &in, &g, NULL, NULL);
        double norm = 0;
        for (int i = 0; i < 100; i++) {
            double e = t_get(&g.t[0], i);
            norm += e * e;
            if (!(fabs(e - want_entry) <= 1e-12 * want_entry))
                fail_msg("variant %d: grad[%d] = %.17g, want %.17g", variant, i, e, want_entry);
        }
        norm = sqrt(norm);
        if (!(fabs(norm - want_norm) <= 1e-12 * want_norm))
            fail_msg("variant %d: gradient norm %.17g, want %.17g", variant, norm, want_norm);
        if (variant == 0)
            first = g;
        else { /* "max_abs_diff_checkpointed_body": 0.0 */
            check_outs_bitwise("scan_sin checkpointed body", &g, &first);
            outs_free(&g);
        }
        free(in.data);
        remat_fn_free(f);
    }
    outs_free(&first);
    remat_fn_free(cp_body);
    remat_fn_free(body);
}

/* euler_step(C, (k1, k2, dt)) of seed 004 section 7, dt = L / n = 0.01 */
static remat_fn *body_pfr(void)
{
    remat_fn *b = remat_fn_new("euler_step");
    remat_val c = remat_arg(b, "C", REMAT_F64, 1, DIMS(3));
    remat_val k1 = remat_arg(b, "k1", REMAT_F64, 0, NULL);
    remat_val k2 = remat_arg(b, "k2", REMAT_F64, 0, NULL);
    remat_val r1 = remat_mul(b, k1, remat_index(b, c, 0));
    remat_val r2 = remat_mul(b, k2, remat_index(b, c, 1));
    remat_val parts[3] = {remat_reshape(b, remat_neg(b, r1), 1, DIMS(1)),
                          remat_reshape(b, remat_sub(b, r1, r2), 1, DIMS(1)), remat_reshape(b, r2, 1, DIMS(1))};
    remat_val dc = remat_concatenate(b, 3, parts, 0);
    remat_val c1 = remat_add(b, c, remat_mul_scalar(b, dc, 10.0 / 1000));
    remat_fn_output(b, c1);
    remat_fn_output(b, c1);
    assert_fn_ok(b);
    return b;
}

static void test_scan_seed_pfr_every_schedule(void **state)
{
    (void)state;
    /* goldens/gradients.json pfr_euler (JAX, float64); seed_values.json pfr_euler */
    const double want_j = -0.013221594662842685, want_k1 = 0.012349448250506132, want_k2 = 0.10730492281164114;
    remat_fn *body = body_pfr();
    remat_tensor in[3] = {t_new(REMAT_F64, 1, DIMS(3)), t_new(REMAT_F64, 0, NULL), t_new(REMAT_F64, 0, NULL)};
    t_set(&in[0], 0, 1.0);
    t_set(&in[1], 0, 1.0);
    t_set(&in[2], 0, 0.5);
    outs_t first = {0};
    for (int si = 0; si < N_SCHEDULES; si++) {
        for (int p = 0; p < 2; p++) {
            remat_scan_options opt = {.schedule = spec_of(schedules[si]),
                                      .body_policy = p ? remat_nothing_saveable : NULL};
            remat_fn *f = remat_fn_new("pfr");
            remat_val a[3] = {remat_arg(f, "C0", REMAT_F64, 1, DIMS(3)), remat_arg(f, "k1", REMAT_F64, 0, NULL),
                              remat_arg(f, "k2", REMAT_F64, 0, NULL)};
            remat_val fin, traj;
            scan_ok(f, body, 1000, 1, a, 0, NULL, 2, a + 1, &opt, &fin, &traj);
            remat_fn_output(f, remat_neg(f, remat_index(f, fin, 1)));
            assert_fn_ok(f);
            remat_fn *g = ad_ok(AD_VALUE_AND_GRAD, f, 2, (int[]){1, 2});
            outs_t o;
            run_fn(g, 3, in, &o, NULL, NULL);
            assert_int_equal(o.n, 3);
            double got[3] = {t_get(&o.t[0], 0), t_get(&o.t[1], 0), t_get(&o.t[2], 0)};
            double want[3] = {want_j, want_k1, want_k2};
            for (int i = 0; i < 3; i++)
                if (!(fabs(got[i] - want[i]) <= 1e-12 * fabs(want[i])))
                    fail_msg("pfr %s %s: %s = %.17g, want %.17g", schedules[si], p ? "nothing_saveable" : "",
                             i == 0 ? "J" : i == 1 ? "dJ/dk1" : "dJ/dk2", got[i], want[i]);
            if (si == 0 && p == 0) {
                first = o;
            } else {
                char what[64];
                snprintf(what, sizeof what, "pfr %s%s", schedules[si], p ? " nothing_saveable" : "");
                check_outs_bitwise(what, &o, &first);
                outs_free(&o);
            }
            remat_fn_free(g);
            remat_fn_free(f);
        }
    }
    outs_free(&first);
    t_free_all(3, in);
    remat_fn_free(body);
}

/* ==== 6. nesting ==== */

/* inner(h (3), x (), a (3)) = (tanh(h * a + x), sum of it) */
static remat_fn *body_inner(void)
{
    remat_fn *b = remat_fn_new("inner");
    remat_val h = remat_arg(b, "h", REMAT_F64, 1, DIMS(3));
    remat_val x = remat_arg(b, "x", REMAT_F64, 0, NULL);
    remat_val a = remat_arg(b, "a", REMAT_F64, 1, DIMS(3));
    remat_val h1 = remat_tanh(b, remat_add(b, remat_mul(b, h, a), x));
    remat_fn_output(b, h1);
    remat_fn_output(b, remat_sum_all(b, h1));
    assert_fn_ok(b);
    return b;
}

/* outer(c (3), row (m), a (3)): scan inner over row from c, then
 * (h_m + 0.1 c, sum(sin(inner ys))) — or the same with inner unrolled */
static remat_fn *body_outer(int64_t m, bool by_scan, const remat_scan_options *inner_opt)
{
    remat_fn *inner = body_inner();
    remat_fn *b = remat_fn_new("outer");
    remat_val c = remat_arg(b, "c", REMAT_F64, 1, DIMS(3));
    remat_val row = remat_arg(b, "row", REMAT_F64, 1, DIMS(m));
    remat_val a = remat_arg(b, "a", REMAT_F64, 1, DIMS(3));
    remat_val h, ys;
    if (by_scan) {
        scan_ok(b, inner, m, 1, &c, 1, &row, 1, &a, inner_opt, &h, &ys);
    } else {
        remat_val *y = xcalloc((size_t)m, sizeof *y);
        h = c;
        for (int64_t j = 0; j < m; j++) {
            remat_val o[2];
            assert_int_equal(remat_call(b, inner, 3, (remat_val[]){h, remat_index(b, row, j), a}, o), REMAT_OK);
            h = o[0];
            y[j] = o[1];
        }
        ys = stack(b, m, y);
        free(y);
    }
    remat_fn_output(b, remat_add(b, h, remat_mul_scalar(b, c, 0.1)));
    remat_fn_output(b, remat_sum_all(b, remat_sin(b, ys)));
    remat_fn_free(inner);
    assert_fn_ok(b);
    return b;
}

/* loss(c0 (3), X (n,m), a (3)) = sum(c_n^2) + sum(sin Y) */
static remat_fn *model_nested(int64_t n, int64_t m, bool by_scan, const remat_scan_options *outer_opt,
                              const remat_scan_options *inner_opt)
{
    remat_fn *outer = body_outer(m, by_scan, inner_opt);
    remat_fn *f = remat_fn_new(by_scan ? "nested_scan" : "nested_unrolled");
    remat_val a[3] = {remat_arg(f, "c0", REMAT_F64, 1, DIMS(3)), remat_arg(f, "X", REMAT_F64, 2, DIMS(n, m)),
                      remat_arg(f, "a", REMAT_F64, 1, DIMS(3))};
    remat_val c, ys;
    if (by_scan) {
        scan_ok(f, outer, n, 1, a, 1, a + 1, 1, a + 2, outer_opt, &c, &ys);
    } else {
        remat_val *y = xcalloc((size_t)n, sizeof *y);
        c = a[0];
        for (int64_t t = 0; t < n; t++) {
            remat_val o[2];
            assert_int_equal(remat_call(f, outer, 3, (remat_val[]){c, remat_index(f, a[1], t), a[2]}, o), REMAT_OK);
            c = o[0];
            y[t] = o[1];
        }
        ys = stack(f, n, y);
        free(y);
    }
    remat_fn_output(f, remat_add(f, remat_sum_all(f, remat_square(f, c)), remat_sum_all(f, remat_sin(f, ys))));
    remat_fn_free(outer);
    assert_fn_ok(f);
    return f;
}

static void test_scan_nested_matches_unrolled(void **state)
{
    (void)state;
    const int64_t n = 5, m = 4;
    remat_tensor in[3] = {t_rand(REMAT_F64, 1, DIMS(3), -1, 1), t_rand(REMAT_F64, 2, DIMS(n, m), -1, 1),
                          t_rand(REMAT_F64, 1, DIMS(3), -1.2, 1.2)};
    remat_fn *fu = model_nested(n, m, false, NULL, NULL);
    outs_t gu;
    run_ad(AD_VALUE_AND_GRAD, fu, 3, in, &gu, NULL, NULL);
    static const struct {
        const char *outer, *inner;
        int inner_policy;
    } v[] = {
        {"store-all", "store-all", 0},
        {"binomial:2", "periodic:2", 0},
        {"online:2", "per-step", 1},
        {"per-step", "binomial:1", 2},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        remat_scan_options oo = {.schedule = spec_of(v[i].outer)};
        remat_scan_options io = {.schedule = spec_of(v[i].inner), .body_policy = grid_policy(v[i].inner_policy)};
        remat_fn *fs = model_nested(n, m, true, &oo, &io);
        outs_t gs;
        remat_stats st;
        run_ad(AD_VALUE_AND_GRAD, fs, 3, in, &gs, &st, NULL);
        char what[96];
        snprintf(what, sizeof what, "nested outer %s inner %s", v[i].outer, v[i].inner);
        check_outs_close(what, 0, 4, &gs, &gu, 1e-14);
        outs_free(&gs);
        remat_fn_free(fs);
    }
    outs_free(&gu);
    remat_fn_free(fu);
    t_free_all(3, in);
}

/* g(h0, acc0, X, W) = (h_n, acc_n, sum(sin ys)) by a scan; G = checkpoint(g,
 * policy) called from F, loss as model_mm: against the unrolled model_mm. */
static void test_scan_inside_checkpoint_region(void **state)
{
    (void)state;
    const int64_t n = 9;
    remat_tensor in[4];
    inputs_mm(n, in);
    remat_fn *fu = model_mm(n, false, NULL);
    outs_t gu;
    run_ad(AD_VALUE_AND_GRAD, fu, 4, in, &gu, NULL, NULL);
    static const struct {
        const char *sched;
        int policy; /* 0: checkpoint default (nothing_saveable), 1: dots, 2: everything */
    } v[] = {{"store-all", 0}, {"binomial:3", 0}, {"store-all", 1}, {"periodic:2", 1}, {"online:2", 2}};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        remat_fn *body = body_mm();
        remat_fn *g = remat_fn_new("scan_region");
        remat_val a[4] = {remat_arg(g, "h0", REMAT_F64, 2, DIMS(3, 5)), remat_arg(g, "acc0", REMAT_F64, 0, NULL),
                          remat_arg(g, "X", REMAT_F64, 2, DIMS(n, 5)), remat_arg(g, "W", REMAT_F64, 2, DIMS(5, 5))};
        remat_val c[2], ys;
        remat_scan_options opt = {.schedule = spec_of(v[i].sched)};
        scan_ok(g, body, n, 2, a, 1, a + 2, 1, a + 3, &opt, c, &ys);
        remat_fn_output(g, c[0]);
        remat_fn_output(g, c[1]);
        remat_fn_output(g, remat_sum_all(g, remat_sin(g, ys)));
        assert_fn_ok(g);
        remat_fn *cg = remat_checkpoint(g, v[i].policy == 0   ? NULL
                                           : v[i].policy == 1 ? remat_dots_saveable
                                                              : remat_everything_saveable);
        assert_non_null(cg);
        remat_fn *f = remat_fn_new("calls_region");
        remat_val b[4] = {remat_arg(f, "h0", REMAT_F64, 2, DIMS(3, 5)), remat_arg(f, "acc0", REMAT_F64, 0, NULL),
                          remat_arg(f, "X", REMAT_F64, 2, DIMS(n, 5)), remat_arg(f, "W", REMAT_F64, 2, DIMS(5, 5))};
        remat_val o[3];
        assert_int_equal(remat_call(f, cg, 4, b, o), REMAT_OK);
        remat_fn_output(f, remat_add(f, remat_add(f, remat_sum_all(f, remat_square(f, o[0])), o[1]), o[2]));
        assert_fn_ok(f);
        outs_t gs;
        run_ad(AD_VALUE_AND_GRAD, f, 4, in, &gs, NULL, NULL);
        char what[96];
        snprintf(what, sizeof what, "scan in checkpoint region (%s, policy %d)", v[i].sched, v[i].policy);
        check_outs_close(what, 0, 5, &gs, &gu, 1e-13);
        outs_free(&gs);
        remat_fn_free(f);
        remat_fn_free(cg);
        remat_fn_free(g);
        remat_fn_free(body);
    }
    outs_free(&gu);
    remat_fn_free(fu);
    t_free_all(4, in);
}

/* ---- main ---- */

int main(void)
{
    remat_test_backend(); /* REMAT_BACKEND: skip (77) when it is not there */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scan_schedules_policies_bitwise_identical),
        cmocka_unit_test(test_scan_schedules_unroll_keeps_bits),
        cmocka_unit_test(test_scan_program_reruns_reproduce),
        cmocka_unit_test(test_scan_measured_equals_predicted),
        cmocka_unit_test(test_scan_binomial_optimum_vectors),
        cmocka_unit_test(test_scan_seed_scan_sin),
        cmocka_unit_test(test_scan_seed_pfr_every_schedule),
        cmocka_unit_test(test_scan_nested_matches_unrolled),
        cmocka_unit_test(test_scan_inside_checkpoint_region),
    };
    rng_seed(0x9e3779b97f4a7c15ull);
    return cmocka_run_group_tests_name("scan_schedules", tests, NULL, NULL);
}

/*
 * test_models_adaptive.c — adaptive Tsit5 and Dopri5 (remat/ode.h,
 * opt.adaptive): diffrax's states, step counts and RecursiveCheckpointAdjoint
 * gradients (tests/goldens/adaptive.json, tools/goldens/gen_adaptive_goldens.py),
 * the seed reactor's analytic gradient, bitwise agreement of gradients across
 * schedules, and the failures a user meets (max_steps, a stiff problem, bad
 * tolerances).
 */
#include "test_golden.h"
#include "test_models_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remat/remat.h"

#define MAXK 8

/* the explicit pairs with an error estimate */
static const remat_ode_method pairs[] = {REMAT_ODE_TSIT5, REMAT_ODE_DOPRI5};

/* f(y0: (S,), params: (P,)) -> (sum(W * states), states, stats); W may be NULL (zeros) */
static remat_fn *adaptive_fn(const remat_mechanism *m, const remat_ode_options *opt, const double *w)
{
    int64_t S = remat_mechanism_species_count(m), P = remat_mechanism_param_count(m);
    remat_fn *f = remat_fn_new("adaptive");
    remat_val y0 = remat_arg(f, "y0", REMAT_F64, 1, &S);
    remat_val p = remat_arg(f, "params", REMAT_F64, 1, &P);
    remat_val ys, stats;
    assert_ok(remat_ode_integrate_stats(f, m, opt, y0, p, &ys, &stats));
    remat_val W = w ? remat_const_data(f, REMAT_F64, 2, DIMS(opt->n_times, S), w)
                    : remat_const_fill(f, REMAT_F64, 2, DIMS(opt->n_times, S), 0.0);
    remat_fn_output(f, remat_sum_all(f, remat_mul(f, W, ys)));
    remat_fn_output(f, ys);
    remat_fn_output(f, stats);
    assert_int_equal(remat_fn_status(f), REMAT_OK);
    return f;
}

typedef struct {
    double loss, ys[MAXK * MAXV], stats[REMAT_ODE_STATS], gy0[MAXV], gp[MAXV];
} solved;

/* runs the VJP of adaptive_fn w.r.t. (y0, params), the loss's cotangent 1 */
static void solve(const remat_mechanism *m, const remat_ode_options *opt, const double *w, double *y0, double *p,
                  solved *out)
{
    remat_fn *f = adaptive_fn(m, opt, w), *g;
    assert_ok(remat_vjp(f, 2, (int[]){0, 1}, &g));
    remat_program *prog = compile_ok(g);
    double one = 1.0, zeros[MAXK * MAXV] = {0};
    run(prog, (double *[]){y0, p, &one, zeros, zeros},
        (double *[]){&out->loss, out->ys, out->stats, out->gy0, out->gp}, NULL);
    remat_program_free(prog);
    remat_fn_free(g);
    remat_fn_free(f);
}

static int jdoubles(const cJSON *a, double *out, int max)
{
    int n = cJSON_GetArraySize(a);
    assert_true(n <= max);
    for (int i = 0; i < n; i++)
        out[i] = cJSON_GetArrayItem(a, i)->valuedouble;
    return n;
}

/* Every golden case: diffrax's accepted and rejected counts exactly, states
 * and gradients to a thousandth of the tolerance (the same steps, rounding
 * apart). */
static void test_models_adaptive_matches_diffrax(void **state)
{
    (void)state;
    const cJSON *cases = jget(golden("adaptive.json"), "cases");
    int n_cases = 0;
    for (const cJSON *c = cases->child; c; c = c->next, n_cases++) {
        const char *name = jget(c, "name")->valuestring;
        remat_mechanism *m = parse(jget(c, "mechanism")->valuestring);
        double y0[MAXV], p[MAXV], times[MAXK], want[MAXK * MAXV], w[MAXK * MAXV], gp[MAXV], gy0[MAXV];
        int S = jdoubles(jget(c, "y0"), y0, MAXV), P = jdoubles(jget(c, "params"), p, MAXV);
        int K = jdoubles(jget(c, "times"), times, MAXK);
        jdoubles(jget(c, "ys"), want, MAXK * MAXV);
        jdoubles(jget(c, "w"), w, MAXK * MAXV);
        jdoubles(jget(c, "grad_params"), gp, MAXV);
        jdoubles(jget(c, "grad_y0"), gy0, MAXV);
        double rtol = jget(c, "rtol")->valuedouble, atol = jget(c, "atol")->valuedouble;
        remat_ode_options opt = {.n_times = K, .times = times, .adaptive = true, .rtol = rtol, .atol = atol};
        assert_ok(remat_ode_method_parse(jget(c, "method")->valuestring, &opt.method));
        solved s;
        solve(m, &opt, w, y0, p, &s);
        int acc = jget(c, "accepted")->valueint, rej = jget(c, "rejected")->valueint;
        printf("# %-24s accepted %4g (diffrax %4d)  rejected %3g (diffrax %3d)\n", name,
               s.stats[REMAT_ODE_STAT_ACCEPTED], acc, s.stats[REMAT_ODE_STAT_REJECTED], rej);
        assert_true(s.stats[REMAT_ODE_STAT_CODE] == 0);
        /* the same controller on the same steps: the same decisions, held
         * within one (docs/design-notes.md, "Bitwise contracts": diffrax's
         * counts are another library's, and an error norm within rounding of
         * 1 accepts on one side and rejects on the other) */
        assert_true(fabs(s.stats[REMAT_ODE_STAT_ACCEPTED] - acc) <= 1);
        assert_true(fabs(s.stats[REMAT_ODE_STAT_REJECTED] - rej) <= 1);
        double worst = 0;
        for (int i = 0; i < K * S; i++)
            worst = fmax(worst, fabs(s.ys[i] - want[i]) / (fabs(want[i]) + 1e-300));
        printf("#   states: max relative difference %.2g\n", worst);
        /* same steps, rounding apart: far inside the tolerance */
        for (int i = 0; i < K * S; i++)
            assert_close(s.ys[i], want[i], 1e-3 * rtol, 1e-3 * atol);
        double gscale = 0;
        for (int i = 0; i < P; i++)
            gscale = fmax(gscale, fabs(gp[i]));
        for (int i = 0; i < S; i++)
            gscale = fmax(gscale, fabs(gy0[i]));
        double gworst = 0;
        for (int i = 0; i < P; i++)
            gworst = fmax(gworst, fabs(s.gp[i] - gp[i]) / gscale);
        for (int i = 0; i < S; i++)
            gworst = fmax(gworst, fabs(s.gy0[i] - gy0[i]) / gscale);
        printf("#   gradient: max difference %.2g of its largest entry\n", gworst);
        for (int i = 0; i < P; i++)
            assert_close(s.gp[i], gp[i], 0, 1e-3 * rtol * gscale);
        for (int i = 0; i < S; i++)
            assert_close(s.gy0[i], gy0[i], 0, 1e-3 * rtol * gscale);
        remat_mechanism_free(m);
    }
    assert_true(n_cases >= 12);
}

/* The seed reactor A -> B -> C (k = 1, 0.5, L = 10): -C_B and its gradient
 * against the closed form, within 10 rtol, for both pairs and three
 * tolerances; the step count falls as rtol grows. */
static void test_models_adaptive_seed_matches_analytic_gradient(void **state)
{
    (void)state;
    remat_mechanism *m = parse(ABC);
    double B, dk1, dk2, L = 10.0;
    abc_exact(L, 1.0, 0.5, &B, &dk1, &dk2);
    const double rtols[] = {1e-4, 1e-6, 1e-8};
    for (int pi = 0; pi < 2; pi++) {
        remat_ode_method meth = pairs[pi];
        double prev_steps = 0;
        for (int i = 2; i >= 0; i--) {
            remat_ode_options opt = {.method = meth, .n_times = 1, .times = &L,
                                     .adaptive = true, .rtol = rtols[i], .atol = rtols[i] * 1e-3};
            double y0[3] = {1, 0, 0}, k[2] = {1.0, 0.5}, w[3] = {0, -1, 0};
            solved s;
            solve(m, &opt, w, y0, k, &s);
            assert_true(s.stats[REMAT_ODE_STAT_CODE] == 0);
            assert_true(s.stats[REMAT_ODE_STAT_T] == L);
            assert_close(-s.loss, B, 10 * rtols[i], 0);
            assert_close(-s.gp[0], dk1, 10 * rtols[i], 0);
            assert_close(-s.gp[1], dk2, 10 * rtols[i], 0);
            assert_true(prev_steps == 0 || s.stats[REMAT_ODE_STAT_ACCEPTED] < prev_steps);
            prev_steps = s.stats[REMAT_ODE_STAT_ACCEPTED];
        }
    }
    remat_mechanism_free(m);
}

/* The gradient of an adaptive integration is the same bits under every
 * schedule of the loop, and with every interval's store kept. */
static void test_models_adaptive_gradients_bitwise_across_schedules(void **state)
{
    (void)state;
    remat_mechanism *m = parse(NET5);
    enum { S = 5, K = 3 };
    const double times[K] = {0.3, 1.0, 2.45};
    double w[K * S];
    for (int i = 0; i < K * S; i++)
        w[i] = 0.1 * (double)(i % 7) - 0.25;
    const remat_schedule_spec specs[] = {
        {.kind = REMAT_SCHED_STORE_ALL},
        {.kind = REMAT_SCHED_PER_STEP},
        {.kind = REMAT_SCHED_BINOMIAL, .snapshots = 6},
        {.kind = REMAT_SCHED_ONLINE, .snapshots = 4},
    };
    solved ref = {0};
    for (int pi = 0; pi < 2; pi++)
        for (int keep = 0; keep < 2; keep++)
            for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
                remat_ode_options opt = {.method = pairs[pi], .t0 = 0.1, .n_times = K, .times = times,
                                         .adaptive = true, .rtol = 1e-7, .atol = 1e-10, .max_steps = 300,
                                         .keep_interval_stores = keep, .scan = {.schedule = specs[i]}};
                double y0[S], p[5] = {1.2, 0.4, 0.7, 0.9, 0.3};
                memcpy(y0, NET5_Y0, sizeof y0);
                solved s;
                solve(m, &opt, w, y0, p, &s);
                assert_true(s.stats[REMAT_ODE_STAT_CODE] == 0);
                assert_true(s.stats[REMAT_ODE_STAT_ACCEPTED] > 10);
                if (keep == 0 && i == 0) {
                    ref = s;
                    continue;
                }
                assert_memory_equal(s.gp, ref.gp, sizeof(double) * 5); /* contract 3 */
                assert_memory_equal(s.gy0, ref.gy0, sizeof(double) * S); /* contract 3 */
                assert_memory_equal(s.ys, ref.ys, sizeof(double) * K * S); /* contract 3 */
            }
    remat_mechanism_free(m);
}

/* Running out of max_steps is a failure the stats report by name, with NaN
 * outputs; with one attempt more than it takes the same integration passes. */
static void test_models_adaptive_max_steps_is_a_clear_error(void **state)
{
    (void)state;
    remat_mechanism *m = parse(ABC);
    double L = 10.0, y0[3] = {1, 0, 0}, k[2] = {1.0, 0.5};
    remat_ode_options opt = {.method = REMAT_ODE_TSIT5, .n_times = 1, .times = &L, .adaptive = true,
                             .rtol = 1e-8, .atol = 1e-11};
    solved s;
    solve(m, &opt, NULL, y0, k, &s);
    assert_ok(remat_ode_stats_check(&opt, s.stats));
    int64_t used = (int64_t)(s.stats[REMAT_ODE_STAT_ACCEPTED] + s.stats[REMAT_ODE_STAT_REJECTED]);
    assert_true(used > 20);
    opt.max_steps = used;
    solve(m, &opt, NULL, y0, k, &s);
    assert_ok(remat_ode_stats_check(&opt, s.stats));
    opt.max_steps = used - 1;
    solve(m, &opt, NULL, y0, k, &s);
    assert_true(s.stats[REMAT_ODE_STAT_CODE] == 1);
    assert_true(s.stats[REMAT_ODE_STAT_T] < L);
    assert_true(isnan(s.ys[1]));
    assert_int_equal(remat_ode_stats_check(&opt, s.stats), REMAT_ERR_VALUE);
    assert_non_null(strstr(remat_last_error(), "max_steps"));
    remat_mechanism_free(m);
}

/* Robertson's problem under an explicit method: the step collapses onto the
 * stability bound, and the stats name the stiff method to use. */
static void test_models_adaptive_stiff_problem_names_rodas5(void **state)
{
    (void)state;
    remat_mechanism *m = parse("A -> B : k1\nB + C -> A + C : k3\n2 B -> B + C : k2\n"
                               "param k1 = 0.04\nparam k2 = 3e7\nparam k3 = 1e4");
    double T = 1e5, y0[3] = {1, 0, 0}, k[3] = {0.04, 3e7, 1e4};
    for (int pi = 0; pi < 2; pi++) {
        remat_ode_options opt = {.method = pairs[pi], .n_times = 1, .times = &T, .adaptive = true,
                                 .rtol = 1e-6, .atol = 1e-10};
        solved s;
        solve(m, &opt, NULL, y0, k, &s);
        assert_true(s.stats[REMAT_ODE_STAT_CODE] == 2);
        assert_true(s.stats[REMAT_ODE_STAT_T] < 1.0);
        assert_int_equal(remat_ode_stats_check(&opt, s.stats), REMAT_ERR_VALUE);
        assert_non_null(strstr(remat_last_error(), "stiff"));
        assert_non_null(strstr(remat_last_error(), "rodas5"));
    }
    remat_mechanism_free(m);
}

/* Bad adaptive options are refused while the graph is built, naming the option. */
static void test_models_adaptive_bad_options_name_the_option(void **state)
{
    (void)state;
    remat_mechanism *m = parse(ABC);
    double L = 10.0;
    struct {
        remat_ode_options opt;
        const char *needle;
    } bad[] = {
        {{.method = REMAT_ODE_TSIT5, .rtol = 0, .atol = 1e-9}, "rtol"},
        {{.method = REMAT_ODE_TSIT5, .rtol = -1e-6, .atol = 1e-9}, "rtol"},
        {{.method = REMAT_ODE_DOPRI5, .rtol = 1e-6, .atol = -1e-9}, "atol"},
        {{.method = REMAT_ODE_TSIT5, .rtol = NAN, .atol = 1e-9}, "rtol"},
        {{.method = REMAT_ODE_RK4, .rtol = 1e-6, .atol = 1e-9}, "rk4"},
        {{.method = REMAT_ODE_TSIT5, .rtol = 1e-6, .atol = 1e-9, .max_steps = -1}, "max_steps"},
        {{.method = REMAT_ODE_TSIT5, .rtol = 1e-6, .atol = 1e-9, .dt0 = -0.1}, "dt0"},
        {{.method = REMAT_ODE_TSIT5, .rtol = 1e-6, .atol = 1e-9,
          .controller = &(remat_ode_controller){.factormin = 2}}, "factormin"},
        {{.method = REMAT_ODE_TSIT5, .rtol = 1e-6, .atol = 1e-9,
          .controller = &(remat_ode_controller){.safety = 1.5}}, "safety"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        remat_ode_options o = bad[i].opt;
        o.adaptive = true;
        o.n_times = 1;
        o.times = &L;
        remat_fn *f = remat_fn_new("bad");
        remat_val y0 = remat_arg(f, "y0", REMAT_F64, 1, DIMS(3));
        remat_val k = remat_arg(f, "k", REMAT_F64, 1, DIMS(2));
        remat_val ys = 0, stats = 0;
        assert_int_not_equal(remat_ode_integrate_stats(f, m, &o, y0, k, &ys, &stats), REMAT_OK);
        assert_int_equal(ys, REMAT_NONE);
        assert_int_equal(stats, REMAT_NONE);
        if (!strstr(remat_last_error(), bad[i].needle))
            fail_msg("case %zu: '%s' does not name %s", i, remat_last_error(), bad[i].needle);
        remat_fn_free(f);
    }
    /* adaptive steps are not known before the run; a y0 whose last axis is
     * not the species, or an empty batch, is refused naming y0 */
    remat_ode_options o = {.method = REMAT_ODE_TSIT5, .n_times = 1, .times = &L, .adaptive = true, .rtol = 1e-6};
    assert_int_equal(remat_ode_count_steps(&o, NULL, NULL), REMAT_ERR_ARG);
    const int64_t bad_shapes[3][2] = {{3, 4}, {0, 3}, {4, 2}};
    for (int i = 0; i < 3; i++) {
        remat_fn *f = remat_fn_new("batched");
        remat_val y0 = remat_arg(f, "y0", REMAT_F64, 2, bad_shapes[i]);
        remat_val ys;
        assert_int_equal(remat_ode_integrate(f, m, &o, y0, REMAT_NONE, &ys), REMAT_ERR_SHAPE);
        assert_non_null(strstr(remat_last_error(), "y0"));
        remat_fn_free(f);
    }
    remat_mechanism_free(m);
}

/* sum(W * states) of a batch y0 (NB, S) and its gradient (y0, params) */
static void solve_batch(const remat_mechanism *m, const remat_ode_options *opt, int64_t NB, const double *w,
                        double *y0, double *p, double *loss, double *ys, double *stats, double *gy0, double *gp)
{
    int64_t S = remat_mechanism_species_count(m), P = remat_mechanism_param_count(m), K = opt->n_times;
    remat_fn *f = remat_fn_new("adaptive_batch");
    remat_val y = remat_arg(f, "y0", REMAT_F64, 2, DIMS(NB, S));
    remat_val pv = remat_arg(f, "params", REMAT_F64, 1, &P);
    remat_val out, sv;
    assert_ok(remat_ode_integrate_stats(f, m, opt, y, pv, &out, &sv));
    remat_shape os = remat_val_shape(f, out);
    assert_int_equal(os.rank, 3);
    assert_true(os.dims[0] == K && os.dims[1] == NB && os.dims[2] == S);
    remat_val W = remat_const_data(f, REMAT_F64, 3, DIMS(K, NB, S), w);
    remat_fn_output(f, remat_sum_all(f, remat_mul(f, W, out)));
    remat_fn_output(f, out);
    remat_fn_output(f, sv);
    assert_fn_ok(f);
    remat_fn *g;
    assert_ok(remat_vjp(f, 2, (int[]){0, 1}, &g));
    remat_program *prog = compile_ok(g);
    double one = 1.0, zeros[MAXK * 4 * MAXV] = {0}, l = 0, yb[MAXK * 4 * MAXV], sb[REMAT_ODE_STATS], gyb[4 * MAXV],
           gpb[MAXV];
    run(prog, (double *[]){y0, p, &one, zeros, zeros},
        (double *[]){loss ? loss : &l, ys ? ys : yb, stats ? stats : sb, gy0 ? gy0 : gyb, gp ? gp : gpb}, NULL);
    remat_program_free(prog);
    remat_fn_free(g);
    remat_fn_free(f);
}

/* A batch of initial states integrates adaptively with per-member control
 * (jax.vmap of diffeqsolve): each member's states and y0-gradient are the
 * bits of its own unbatched run, the parameter gradient is the members'
 * sum, the stats sum the counts; the gradient agrees with central
 * differences of the batch loss; a member that fails makes only its own
 * rows NaN. */
static void test_models_adaptive_batch_per_member(void **state)
{
    (void)state;
    remat_mechanism *m = parse(NET5);
    enum { S = 5, K = 3, NB = 3, P = 5 };
    const double times[K] = {0.3, 1.0, 2.45};
    double y0[NB * S], p[P] = {1.2, 0.4, 0.7, 0.9, 0.3}, w[K * NB * S];
    for (int b = 0; b < NB; b++)
        for (int s = 0; s < S; s++)
            y0[b * S + s] = NET5_Y0[s] * (1.0 + 0.6 * b) + 0.05 * b * s;
    for (int i = 0; i < K * NB * S; i++)
        w[i] = 0.1 * (double)(i % 7) - 0.25;
    for (int pi = 0; pi < 2; pi++) {
        remat_ode_options opt = {.method = pairs[pi], .t0 = 0.1, .n_times = K, .times = times, .adaptive = true,
                                 .rtol = 1e-10, .atol = 1e-13, .max_steps = 2000};
        double loss, ys[K * NB * S], stats[REMAT_ODE_STATS], gy0[NB * S], gp[P];
        solve_batch(m, &opt, NB, w, y0, p, &loss, ys, stats, gy0, gp);
        assert_true(stats[REMAT_ODE_STAT_CODE] == 0);
        assert_true(stats[REMAT_ODE_STAT_T] == times[K - 1]);
        double gp_sum[P] = {0}, acc = 0, rej = 0;
        int64_t steps[NB], att[NB];
        for (int b = 0; b < NB; b++) {
            double wb[K * S], yb[S];
            for (int k = 0; k < K; k++)
                memcpy(wb + k * S, w + (k * NB + b) * S, sizeof(double) * S);
            memcpy(yb, y0 + b * S, sizeof yb);
            solved one;
            solve(m, &opt, wb, yb, p, &one);
            for (int k = 0; k < K; k++)
                assert_memory_equal(ys + (k * NB + b) * S, one.ys + k * S, sizeof(double) * S); /* contract 5 */
            assert_memory_equal(gy0 + b * S, one.gy0, sizeof(double) * S); /* contract 5 */
            for (int i = 0; i < P; i++)
                gp_sum[i] += one.gp[i];
            acc += one.stats[REMAT_ODE_STAT_ACCEPTED];
            rej += one.stats[REMAT_ODE_STAT_REJECTED];
            steps[b] = (int64_t)one.stats[REMAT_ODE_STAT_ACCEPTED];
            att[b] = steps[b] + (int64_t)one.stats[REMAT_ODE_STAT_REJECTED];
        }
        assert_true(steps[0] != steps[NB - 1]); /* the members did take their own steps */
        assert_true(stats[REMAT_ODE_STAT_ACCEPTED] == acc && stats[REMAT_ODE_STAT_REJECTED] == rej); /* contract 5 */
        for (int i = 0; i < P; i++)
            assert_close(gp[i], gp_sum[i], 1e-13, 1e-15);
        /* central differences of the batch loss (the steps move with p; at
         * rtol 1e-10 that is far below the tolerance) */
        for (int i = 0; i < P; i++) {
            double h = 1e-5 * fabs(p[i]), lp, lm, pp[P];
            memcpy(pp, p, sizeof pp);
            pp[i] = p[i] + h;
            solve_batch(m, &opt, NB, w, y0, pp, &lp, NULL, NULL, NULL, NULL);
            pp[i] = p[i] - h;
            solve_batch(m, &opt, NB, w, y0, pp, &lm, NULL, NULL, NULL, NULL);
            assert_close(gp[i], (lp - lm) / (2 * h), 1e-6, 1e-9);
        }
        for (int j = 0; j < NB * S; j += 4) {
            double h = 1e-5, lp, lm, yy[NB * S];
            memcpy(yy, y0, sizeof yy);
            yy[j] = y0[j] + h;
            solve_batch(m, &opt, NB, w, yy, p, &lp, NULL, NULL, NULL, NULL);
            yy[j] = y0[j] - h;
            solve_batch(m, &opt, NB, w, yy, p, &lm, NULL, NULL, NULL, NULL);
            assert_close(gy0[j], (lp - lm) / (2 * h), 1e-6, 1e-9);
        }
        /* the member with the most attempts alone runs out of them: its rows
         * are NaN, the others' are not */
        int hi = 0;
        for (int b = 1; b < NB; b++)
            hi = att[b] > att[hi] ? b : hi;
        opt.max_steps = att[hi] - 1;
        for (int b = 0; b < NB; b++)
            assert_true(b == hi || att[b] <= opt.max_steps);
        solve_batch(m, &opt, NB, w, y0, p, NULL, ys, stats, NULL, NULL);
        assert_true(stats[REMAT_ODE_STAT_CODE] == 1);
        for (int b = 0; b < NB; b++)
            assert_true(isnan(ys[(K - 1) * NB * S + b * S]) == (b == hi));
        assert_int_equal(remat_ode_stats_check(&opt, stats), REMAT_ERR_VALUE);
        assert_non_null(strstr(remat_last_error(), "max_steps"));
    }
    /* a batch of rank 3 keeps its axes: (K, 2, 2, S) */
    remat_ode_options opt = {.method = REMAT_ODE_TSIT5, .n_times = K, .times = times, .adaptive = true,
                             .rtol = 1e-6, .atol = 1e-9};
    remat_fn *f = remat_fn_new("rank3");
    remat_val yv = remat_arg(f, "y0", REMAT_F64, 3, DIMS(2, 2, S)), out;
    assert_ok(remat_ode_integrate(f, m, &opt, yv, remat_const_data(f, REMAT_F64, 1, DIMS(P), p), &out));
    remat_shape os = remat_val_shape(f, out);
    assert_true(os.rank == 4 && os.dims[0] == K && os.dims[1] == 2 && os.dims[2] == 2 && os.dims[3] == S);
    remat_fn_free(f);
    remat_mechanism_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_models_adaptive_seed_matches_analytic_gradient),
        cmocka_unit_test(test_models_adaptive_matches_diffrax),
        cmocka_unit_test(test_models_adaptive_gradients_bitwise_across_schedules),
        cmocka_unit_test(test_models_adaptive_max_steps_is_a_clear_error),
        cmocka_unit_test(test_models_adaptive_stiff_problem_names_rodas5),
        cmocka_unit_test(test_models_adaptive_bad_options_name_the_option),
        cmocka_unit_test(test_models_adaptive_batch_per_member),
    };
    return cmocka_run_group_tests(tests, NULL, golden_free_all);
}

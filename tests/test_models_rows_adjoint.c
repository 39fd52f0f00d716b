/*
 * test_models_rows_adjoint.c — the continuous adjoints (backsolve,
 * interpolating) of fixed steps with the times and step counts as data
 * (remat_ode_integrate_rows with opt.adjoint continuous,
 * src/models/ode/rows_adjoint.c; issue 21): one compiled program serves
 * every set of K times, its values and gradients those of the per-interval
 * integration with the same adjoint (remat_ode_integrate, a scan per output
 * time and a backward program built from the times), and its graph does
 * not grow with K. Different programs: tolerances, not bits (DESIGN.md
 * "contracts").
 */
#include "test_models_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remat/remat.h"

/* a system that reads t: the backward walk's times t_k - j h_k */
static const char *const TIMED = "indep t\nparam k1 = 1\nparam k2 = 0.5\n"
                                 "y1' = -k1 * y1 + sin(3 * t)\ny2' = y1 - k2 * t * y2\ny3' = y2\n";

enum { K = 30 };

/* (y0, p, ts, nsteps) -> (loss = sum W . rows, d loss / d y0, d loss / d p) through the row scan */
static remat_program *rows_grad(const char *mech, remat_ode_method method, remat_ode_adjoint adj, int64_t max_steps,
                                int64_t k, const double *w, int *nodes)
{
    remat_mechanism *m = parse(mech);
    int64_t S = 3, P = 2;
    remat_fn *f = remat_fn_new("rows_adjoint");
    remat_val y0 = remat_arg(f, "y0", REMAT_F64, 1, &S), pv = remat_arg(f, "p", REMAT_F64, 1, &P);
    remat_val ts = remat_arg(f, "ts", REMAT_F64, 1, &k), ns = remat_arg(f, "nsteps", REMAT_F64, 1, &k), out;
    remat_ode_options opt = {.method = method, .max_steps = max_steps, .adjoint = adj};
    assert_ok(remat_ode_integrate_rows(f, m, &opt, y0, pv, ts, ns, &out));
    remat_val wv = w ? remat_const_data(f, REMAT_F64, 2, DIMS(k, S), w)
                     : remat_const_fill(f, REMAT_F64, 2, DIMS(k, S), 1.0);
    remat_fn_output(f, remat_sum_all(f, remat_mul(f, wv, out)));
    remat_fn *g = NULL;
    assert_ok(remat_value_and_grad(f, 2, (int[]){0, 1}, &g));
    if (nodes)
        *nodes = remat_fn_num_nodes(f) + remat_fn_num_nodes(g);
    remat_program *prog = compile_ok(g);
    remat_fn_free(g);
    remat_fn_free(f);
    remat_mechanism_free(m);
    return prog;
}

/* the same loss and gradient through remat_ode_integrate (opt.times, dt
 * 0.05): the per-interval grid and its backward program; its step counts */
static void per_interval(const char *mech, remat_ode_method method, remat_ode_adjoint adj, const double *t,
                         const double *w, const double *y0, const double *p, double out[6], double *nsteps,
                         int64_t *most)
{
    remat_mechanism *m = parse(mech);
    remat_ode_options opt = {.method = method, .dt = 0.05, .n_times = K, .times = t, .adjoint = adj};
    int64_t n[K];
    assert_ok(remat_ode_count_steps(&opt, n, NULL));
    *most = 1;
    for (int k = 0; k < K; k++) {
        nsteps[k] = (double)n[k];
        *most = n[k] > *most ? n[k] : *most;
    }
    remat_fn *f = weighted_loss_fn(m, &opt, w), *g = NULL;
    assert_ok(remat_value_and_grad(f, 2, (int[]){0, 1}, &g));
    remat_program *prog = compile_ok(g);
    run(prog, (double *[]){(double *)y0, (double *)p}, (double *[]){out, out + 1, out + 4}, NULL);
    remat_program_free(prog);
    remat_fn_free(g);
    remat_fn_free(f);
    remat_mechanism_free(m);
}

/* One program of K rows per method and adjoint, run on two sets of times
 * (uneven with a long gap, and every 0.2 from t0, whose first row has no
 * step): the loss, d/dy0 and d/dp to 1e-12 of the per-interval
 * integration with that adjoint, built for each set from its times, for
 * ABC and a system that reads t. Measured: equal (the same
 * steps, in the same order). */
static void check_adjoint(remat_ode_adjoint adj, const remat_ode_method *methods, int n_methods)
{
    double t[2][K], w[K * 3], y0[3] = {1.0, 0.2, 0.0}, p[2] = {0.9, 0.35};
    for (int k = 0; k < K; k++) {
        t[0][k] = k == 0 ? 0.02 : k == 15 ? t[0][14] + 1.5 : t[0][k - 1] + 0.013 + 0.21 * fabs(sin(1.3 * k));
        t[1][k] = 0.2 * k;
    }
    for (int i = 0; i < K * 3; i++)
        w[i] = 0.3 * sin(1.7 * i) + 0.1;
    for (int mi = 0; mi < 2 * n_methods; mi++) {
        const char *mech = mi < n_methods ? ABC : TIMED;
        remat_ode_method method = methods[mi % n_methods];
        double want[2][6], ns[2][K], got[6];
        int64_t most[2];
        for (int set = 0; set < 2; set++)
            per_interval(mech, method, adj, t[set], w, y0, p, want[set], ns[set], &most[set]);
        int64_t ms = most[0] > most[1] ? most[0] : most[1];
        remat_program *prog = rows_grad(mech, method, adj, ms, K, w, NULL);
        remat_program *disc = rows_grad(mech, method, REMAT_ODE_ADJOINT_DISCRETE, ms, K, w, NULL);
        for (int set = 0; set < 2; set++) {
            run(prog, (double *[]){y0, p, t[set], ns[set]}, (double *[]){got, got + 1, got + 4}, NULL);
            /* the test tells the adjoints apart: the discrete adjoint's
             * gradient (the exact one of the steps) differs from the
             * continuous one's by the steps' error: tsit5 4.7e-10 and more, past 1e-12 */
            double dg[6], apart = 0;
            run(disc, (double *[]){y0, p, t[set], ns[set]}, (double *[]){dg, dg + 1, dg + 4}, NULL);
            for (int i = 1; i < 6; i++)
                apart = fmax(apart, fabs(dg[i] - got[i]) / fmax(fabs(got[i]), 1e-300));
            if (!(apart > 1e-10))
                fail_msg("%s adjoint, %s: the gradient is the discrete adjoint's (within %.3g)",
                         remat_ode_adjoint_name(adj), remat_ode_method_name(method), apart);
            double worst = 0;
            for (int i = 0; i < 6; i++) {
                double tol = 1e-12;
                if (!(fabs(got[i] - want[set][i]) <= tol * fabs(want[set][i]) + 1e-14))
                    fail_msg("%s adjoint, %s%s, times set %d: output %d (0 loss, 1-3 d/dy0, 4-5 d/dp) = %.17g, "
                             "per-interval %.17g",
                             remat_ode_adjoint_name(adj), remat_ode_method_name(method),
                             mech == TIMED ? " (timed)" : "", set, i, got[i], want[set][i]);
                worst = fmax(worst, fabs(got[i] - want[set][i]) / fmax(fabs(want[set][i]), 1e-300));
            }
            print_message("%s adjoint, %s%s, times set %d: worst relative difference %.3g\n",
                          remat_ode_adjoint_name(adj), remat_ode_method_name(method), mech == TIMED ? " (timed)" : "",
                          set, worst);
        }
        remat_program_free(prog);
        remat_program_free(disc);
    }
}

static const remat_ode_method methods[] = {REMAT_ODE_EULER, REMAT_ODE_RK4, REMAT_ODE_TSIT5, REMAT_ODE_RODAS5};

static void test_models_rows_adjoint_backsolve_matches_per_interval(void **state)
{
    (void)state;
    check_adjoint(REMAT_ODE_ADJOINT_BACKSOLVE, methods, 4);
}

static void test_models_rows_adjoint_interpolating_matches_per_interval(void **state)
{
    (void)state;
    check_adjoint(REMAT_ODE_ADJOINT_INTERPOLATING, methods, 4);
}

/* The graphs (forward and value_and_grad) are as many nodes for 10 rows as
 * for 10,000, with either adjoint (the per-interval integration: a scan per
 * row, and its backward program a scan per row too); the program's planned
 * buffers grow by at most 64 bytes per row cell beyond the rows themselves
 * (the per-interval programs: ~0.1 MB per row, issue 21) */
static void test_models_rows_adjoint_graph_does_not_grow(void **state)
{
    (void)state;
    static const remat_ode_adjoint adjs[] = {REMAT_ODE_ADJOINT_BACKSOLVE, REMAT_ODE_ADJOINT_INTERPOLATING};
    for (int a = 0; a < 2; a++) {
        int small, big;
        remat_program *ps = rows_grad(ABC, REMAT_ODE_RK4, adjs[a], 4, 10, NULL, &small);
        remat_program *pb = rows_grad(ABC, REMAT_ODE_RK4, adjs[a], 4, 10000, NULL, &big);
        assert_int_equal(small, big);
        remat_memory_plan s, b;
        remat_program_plan(ps, &s);
        remat_program_plan(pb, &b);
        size_t grown = (b.arena_bytes + b.residual_bytes + b.constant_bytes) -
                       (s.arena_bytes + s.residual_bytes + s.constant_bytes);
        print_message("%s: %d nodes; planned bytes %zu for 10 rows, %zu for 10,000 (%.1f per row cell)\n",
                      remat_ode_adjoint_name(adjs[a]), big, s.arena_bytes + s.residual_bytes + s.constant_bytes,
                      b.arena_bytes + b.residual_bytes + b.constant_bytes, (double)grown / (9990.0 * 3));
        assert_true(grown <= (size_t)64 * 9990 * 3);
        remat_program_free(ps);
        remat_program_free(pb);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_models_rows_adjoint_backsolve_matches_per_interval),
        cmocka_unit_test(test_models_rows_adjoint_interpolating_matches_per_interval),
        cmocka_unit_test(test_models_rows_adjoint_graph_does_not_grow),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

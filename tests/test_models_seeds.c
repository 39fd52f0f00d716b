/*
 * test_models_seeds.c — the seed values of the PFR models and Adam.
 *
 * Every expectation comes from outside the code under test: the seed values
 * (tests/goldens/seed_values.json: pfr_euler, pfr_tsit5_fixed,
 * pfr_adam_fit; the full-precision Euler numbers were re-derived in f64), the
 * exact discrete Euler solution of A->B->C, and optax's Adam formulas written
 * out here.
 */
#include "test_models_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remat/remat.h"

/* ---- the seeds ---- */

/* seed 004 section 7, seed_values.json pfr_euler; the full-precision values
 * are the same computation re-derived in f64 (jax_enable_x64). */
static void test_models_euler_seed_pfr(void **state)
{
    (void)state;
    remat_mechanism *m = parse(ABC);
    const char *schedules[] = {"store-all", "binomial:10", "online:10"};
    double C0[3] = {1, 0, 0}, k[2] = {1.0, 0.5}, g_ref[2] = {0};
    for (int s = 0; s < 3; s++) {
        remat_ode_options opt = {.method = REMAT_ODE_EULER, .t0 = 0, .n_times = 1, .times = (double[]){10.0},
                                 .dt = 0.01, .scan = {.schedule = spec_of(schedules[s])}};
        int64_t total;
        assert_ok(remat_ode_count_steps(&opt, NULL, &total));
        assert_int_equal(total, 1000);
        if (s == 0) {
            remat_fn *f = states_fn(m, &opt);
            remat_program *p = compile_ok(f);
            double y[3];
            run(p, (double *[]){C0, k}, (double *[]){y}, NULL);
            printf("  euler seed: A=%.17g B=%.17g C=%.17g sum=%.17g\n", y[0], y[1], y[2], y[0] + y[1] + y[2]);
            assert_close(y[0], 4.317124741065819e-05, 1e-12, 0);
            assert_close(y[1], 0.013221594662842685, 1e-12, 0);
            assert_close(y[2], 0.9867352340897478, 1e-12, 0);
            assert_close(y[0] + y[1] + y[2], 1.0, 0, 1e-12);
            assert_printed("%.6f", y[0], "0.000043");
            assert_printed("%.6f", y[1], "0.013222");
            assert_printed("%.6f", y[2], "0.986735");
            remat_program_free(p);
            remat_fn_free(f);
        }
        remat_fn *f = neg_cb_fn(m, &opt), *g;
        assert_ok(remat_grad(f, 1, (int[]){1}, &g));
        remat_program *p = compile_ok(g);
        double dk[2];
        remat_stats st;
        run(p, (double *[]){C0, k}, (double *[]){dk}, &st);
        printf("  euler seed %-11s: d(-C_B)/dk1=%.17g d(-C_B)/dk2=%.17g (forward evals %lld)\n", schedules[s],
               dk[0], dk[1], (long long)st.forward_evals);
        assert_close(dk[0], 0.012349448250506132, 1e-10, 0);
        assert_close(dk[1], 0.10730492281164114, 1e-10, 0);
        assert_printed("%.6f", dk[0], "0.012349");
        assert_printed("%.6f", dk[1], "0.107305");
        if (s == 0)
            memcpy(g_ref, dk, sizeof dk);
        else
            assert_memory_equal(dk, g_ref, sizeof dk); /* schedules change memory, never bits (contract 3) */
        remat_schedule_cost cost;
        assert_ok(remat_schedule_predict(&opt.scan.schedule, 1000, &cost));
        assert_int_equal(st.forward_evals, cost.forward_evals);
        remat_program_free(p);
        remat_fn_free(f);
        remat_fn_free(g);
    }
    remat_mechanism_free(m);
}

/* y_{n+1} = (I + hK) y_n has the closed form A_n = (1-hk1)^n,
 * B_n = k1/(k2-k1) ((1-hk1)^n - (1-hk2)^n), C_n = 1 - A_n - B_n. */
static void test_models_euler_matches_exact_discrete_solution(void **state)
{
    (void)state;
    remat_mechanism *m = parse(ABC);
    const double times[4] = {0.0, 1.0, 2.5, 10.0};
    const int64_t at_step[4] = {0, 100, 250, 1000};
    double C0[3] = {1, 0, 0}, k[2] = {1.0, 0.5}, h = 0.01, y[12];
    remat_ode_options opt = {.method = REMAT_ODE_EULER, .n_times = 4, .times = times, .dt = h};
    int64_t steps[4], total;
    assert_ok(remat_ode_count_steps(&opt, steps, &total));
    assert_int_equal(steps[0], 0);
    assert_int_equal(steps[1], 100);
    assert_int_equal(steps[2], 150);
    assert_int_equal(steps[3], 750);
    remat_fn *f = states_fn(m, &opt);
    remat_program *p = compile_ok(f);
    run(p, (double *[]){C0, k}, (double *[]){y}, NULL);
    double worst = 0;
    for (int r = 0; r < 4; r++) {
        double n = (double)at_step[r], a = pow(1 - h * k[0], n), b2 = pow(1 - h * k[1], n);
        double A = a, B = k[0] / (k[1] - k[0]) * (a - b2), C = 1 - A - B;
        assert_close(y[3 * r + 0], A, 0, 1e-13);
        assert_close(y[3 * r + 1], B, 0, 1e-13);
        assert_close(y[3 * r + 2], C, 0, 1e-13);
        worst = fmax(worst, fmax(fabs(y[3 * r] - A), fmax(fabs(y[3 * r + 1] - B), fabs(y[3 * r + 2] - C))));
    }
    printf("  euler vs exact discrete solution: max |diff| = %.3g\n", worst);
    remat_program_free(p);
    remat_fn_free(f);
    remat_mechanism_free(m);
}

/* seed 004 section 8 (diffrax Tsit5, ConstantStepSize dt0=0.01),
 * seed_values.json pfr_tsit5_fixed */
static void test_models_tsit5_seed_pfr(void **state)
{
    (void)state;
    remat_mechanism *m = parse(ABC);
    remat_ode_options opt = {.method = REMAT_ODE_TSIT5, .t0 = 0, .n_times = 1, .times = (double[]){10.0},
                             .dt = 0.01, .scan = {.schedule = spec_of("binomial:10")}};
    remat_fn *f = neg_cb_fn(m, &opt), *g;
    assert_ok(remat_value_and_grad(f, 1, (int[]){1}, &g));
    remat_program *pg = compile_ok(g), *pf = compile_ok(f);
    double C0[3] = {1, 0, 0}, k[2] = {1.0, 0.5}, loss, dk[2];
    run(pg, (double *[]){C0, k}, (double *[]){&loss, dk}, NULL);
    double CB = -loss, dCB[2] = {-dk[0], -dk[1]};
    printf("  tsit5 seed: C_B=%.17g dC_B/dk1=%.17g dC_B/dk2=%.17g\n", CB, dCB[0], dCB[1]);
    assert_printed("%.6f", CB, "0.013385");
    assert_printed("%.6f", dCB[0], "-0.012477");
    assert_printed("%.6f", dCB[1], "-0.107989");
    /* a tight reference: the ODE's solution (Tsit5 at h = 0.01 is ~1e-12 off) */
    double B, d1, d2;
    abc_exact(10.0, 1.0, 0.5, &B, &d1, &d2);
    printf("  analytic:   C_B=%.17g dC_B/dk1=%.17g dC_B/dk2=%.17g\n", B, d1, d2);
    assert_close(CB, B, 1e-9, 0);
    assert_close(dCB[0], d1, 1e-9, 0);
    assert_close(dCB[1], d2, 1e-9, 0);
    /* and the discrete derivative itself by central differences */
    for (int i = 0; i < 2; i++) {
        double x = k[i], h = 1e-6, lp, lm;
        k[i] = x + h;
        run(pf, (double *[]){C0, k}, (double *[]){&lp}, NULL);
        k[i] = x - h;
        run(pf, (double *[]){C0, k}, (double *[]){&lm}, NULL);
        k[i] = x;
        assert_close(dk[i], (lp - lm) / (2 * h), 1e-7, 1e-11);
    }
    remat_program_free(pf);
    remat_program_free(pg);
    remat_fn_free(f);
    remat_fn_free(g);
    remat_mechanism_free(m);
}

/* seed 004 section 7, seed_values.json pfr_adam_fit: optax.adam(0.1) on
 * -C_B, 50 iterations from (0.5, 0.3), params = max(params, 0.01) */
static void test_models_adam_seed_fit(void **state)
{
    (void)state;
    remat_mechanism *m = parse(ABC);
    remat_ode_options opt = {.method = REMAT_ODE_EULER, .t0 = 0, .n_times = 1, .times = (double[]){10.0},
                             .dt = 0.01, .scan = {.schedule = spec_of("binomial:10")}};
    remat_fn *f = neg_cb_fn(m, &opt), *g;
    assert_ok(remat_value_and_grad(f, 1, (int[]){1}, &g));
    remat_program *pg = compile_ok(g), *pf = compile_ok(f);
    remat_adam_options o = remat_adam_optax(0.1);
    o.lo = (double[]){0.01, 0.01};
    remat_adam *adam;
    assert_ok(remat_adam_new(2, &o, &adam));
    double C0[3] = {1, 0, 0}, params[2] = {0.5, 0.3}, loss, grads[2];
    int row = 0;
    for (int i = 0; i < 50; i++) {
        run(pg, (double *[]){C0, params}, (double *[]){&loss, grads}, NULL);
        assert_ok(remat_adam_update(adam, params, grads));
        if (row < SEED_ADAM_ROWS && seed_adam_table[row].it == i) {
            printf("  adam %-3d k1=%.17g k2=%.17g C_B=%.17g\n", i, params[0], params[1], -loss);
            assert_seed_adam(&seed_adam_table[row], params[0], params[1], -loss);
            row++;
        }
    }
    assert_int_equal(row, SEED_ADAM_ROWS);
    assert_int_equal(remat_adam_count(adam), 50);
    run(pf, (double *[]){C0, params}, (double *[]){&loss}, NULL);
    printf("  adam optimum: k1=%.17g k2=%.17g C_B=%.17g\n", params[0], params[1], -loss);
    assert_seed_adam(&seed_adam_final, params[0], params[1], -loss);
    remat_adam_free(adam);
    remat_program_free(pf);
    remat_program_free(pg);
    remat_fn_free(f);
    remat_fn_free(g);
    remat_mechanism_free(m);
}

/* ---- Adam ---- */

/* Two steps of optax.adam written out, then the projection on both bounds. */
static void test_models_adam_matches_optax_formulas(void **state)
{
    (void)state;
    remat_adam_options o = remat_adam_optax(0.05);
    o.lo = (double[]){-INFINITY, 0.0, -1.0};
    o.hi = (double[]){INFINITY, INFINITY, 1.0};
    remat_adam *a;
    assert_ok(remat_adam_new(3, &o, &a));
    double p[3] = {1.0, 0.02, 0.999}, q[3] = {1.0, 0.02, 0.999}, mu[3] = {0}, nu[3] = {0};
    const double g[2][3] = {{0.3, 2.0, -4.0}, {-0.1, 0.5, -3.0}};
    for (int t = 1; t <= 2; t++) {
        assert_ok(remat_adam_update(a, p, g[t - 1]));
        for (int i = 0; i < 3; i++) {
            mu[i] = (1 - 0.9) * g[t - 1][i] + 0.9 * mu[i];
            nu[i] = (1 - 0.999) * (g[t - 1][i] * g[t - 1][i]) + 0.999 * nu[i];
            double mh = mu[i] / (1 - pow(0.9, t)), nh = nu[i] / (1 - pow(0.999, t));
            q[i] = q[i] + -0.05 * (mh / (sqrt(nh) + 1e-8));
            q[i] = fmin(fmax(q[i], o.lo[i]), o.hi[i]);
        }
        assert_memory_equal(p, q, sizeof p);
        assert_memory_equal(remat_adam_mu(a), mu, sizeof mu);
        assert_memory_equal(remat_adam_nu(a), nu, sizeof nu);
    }
    assert_true(p[1] == 0.0); /* clipped at lo */
    assert_true(p[2] == 1.0); /* clipped at hi */
    /* a NaN gradient is refused and changes nothing */
    double keep[3];
    memcpy(keep, p, sizeof p);
    assert_int_equal(remat_adam_update(a, p, (double[]){0.1, NAN, 0.0}), REMAT_ERR_NUMERIC);
    assert_contains(remat_last_error(), "gradient 1");
    assert_memory_equal(p, keep, sizeof p);
    assert_int_equal(remat_adam_count(a), 2);
    remat_adam_reset(a);
    assert_int_equal(remat_adam_count(a), 0);
    assert_true(remat_adam_mu(a)[0] == 0.0);
    remat_adam_free(a);
    remat_adam_free(NULL);

    /* bad options */
    remat_adam *b = (remat_adam *)1;
    remat_adam_options bad = remat_adam_optax(0.0);
    assert_int_equal(remat_adam_new(2, &bad, &b), REMAT_ERR_VALUE);
    assert_null(b);
    assert_contains(remat_last_error(), "learning rate");
    bad = remat_adam_optax(0.1);
    bad.b2 = 1.0;
    assert_int_equal(remat_adam_new(2, &bad, &b), REMAT_ERR_VALUE);
    bad = remat_adam_optax(0.1);
    bad.lo = (double[]){0.0, 2.0};
    bad.hi = (double[]){1.0, 1.0};
    assert_int_equal(remat_adam_new(2, &bad, &b), REMAT_ERR_VALUE);
    assert_contains(remat_last_error(), "parameter 1");
    assert_int_equal(remat_adam_new(2, NULL, &b), REMAT_ERR_NULL);
}

/* ---- main ---- */

int main(void)
{
    remat_test_backend(); /* REMAT_BACKEND: skip (77) when it is not there */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_models_euler_seed_pfr),
        cmocka_unit_test(test_models_euler_matches_exact_discrete_solution),
        cmocka_unit_test(test_models_tsit5_seed_pfr),
        cmocka_unit_test(test_models_adam_seed_fit),
        cmocka_unit_test(test_models_adam_matches_optax_formulas),
    };
    rng_seed(0x2545f4914f6cdd1dull);
    return cmocka_run_group_tests(tests, NULL, NULL);
}

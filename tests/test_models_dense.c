/*
 * test_models_dense.c — output times as data of one adaptive loop
 * (remat_ode_options.dense, src/models/ode/dense.c): the continuous
 * extensions of tsit5, dopri5 and rodas5 against the exact solution and
 * against today's steps clipped to every output time, the gradient through
 * the interpolant against central differences (f64), and memory that grows
 * with the rows only as O(rows x species).
 */
#include "test_models_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "models/fit/fit_impl.h"
#include "remat/remat.h"

static const remat_ode_method methods[] = {REMAT_ODE_TSIT5, REMAT_ODE_DOPRI5, REMAT_ODE_RODAS5};

/* K evenly spaced times in (0, 10], the first at t0 = 0 when with_t0 */
static double *times_of(int K, int with_t0)
{
    double *t = malloc(sizeof *t * (size_t)K);
    assert_non_null(t);
    for (int k = 0; k < K; k++)
        t[k] = with_t0 ? 10.0 * k / (K - 1) : 10.0 * (k + 1) / K;
    return t;
}

/* the states (K, 3) of ABC from (1, 0, 0) at p, and the stats */
static void states(const remat_ode_options *opt, const double *p, double *ys, double *stats)
{
    remat_mechanism *m = parse(ABC);
    int64_t S = 3, P = 2;
    remat_fn *f = remat_fn_new("dense_states");
    remat_val y0 = remat_arg(f, "y0", REMAT_F64, 1, &S), pv = remat_arg(f, "p", REMAT_F64, 1, &P), out, sv;
    assert_ok(remat_ode_integrate_stats(f, m, opt, y0, pv, &out, &sv));
    remat_fn_output(f, out);
    remat_fn_output(f, sv);
    remat_program *prog = compile_ok(f);
    double y0v[3] = {1, 0, 0};
    run(prog, (double *[]){y0v, (double *)p}, (double *[]){ys, stats}, NULL);
    remat_program_free(prog);
    remat_fn_free(f);
    remat_mechanism_free(m);
}

/* Every row of a dense run is within a small multiple of the tolerance of
 * the exact solution, with far fewer steps than rows: a wrong coefficient of
 * an extension (or a row taken from the wrong step) is off by O(h). One
 * bound for the three: rodas5's own extension (order 4; measured 4.8e-10)
 * is as good as tsit5's (8.1e-10), where its cubic Hermite rows needed 1e-5. */
static void test_models_dense_rows_match_exact_solution(void **state)
{
    (void)state;
    enum { K = 400 };
    double *t = times_of(K, 1), p[2] = {1.0, 0.5};
    double *ys = malloc(sizeof *ys * K * 3), stats[REMAT_ODE_STATS];
    for (int mi = 0; mi < 3; mi++) {
        remat_ode_options opt = {.method = methods[mi], .n_times = K, .times = t, .adaptive = true,
                                 .rtol = 1e-8, .atol = 1e-11, .dense = true};
        states(&opt, p, ys, stats);
        assert_true(stats[REMAT_ODE_STAT_CODE] == 0);
        assert_true(stats[REMAT_ODE_STAT_ACCEPTED] < K / 2); /* rows are not steps */
        double worst = 0;
        for (int k = 0; k < K; k++) {
            double B, d1, d2, A = exp(-t[k]);
            abc_exact(t[k], 1.0, 0.5, &B, &d1, &d2);
            worst = fmax(worst, fmax(fabs(ys[k * 3] - A), fabs(ys[k * 3 + 1] - B)));
            assert_close(ys[k * 3] + ys[k * 3 + 1] + ys[k * 3 + 2], 1.0, 1e-12, 0);
        }
        print_message("%s: worst row error %.3g, %g accepted steps\n", remat_ode_method_name(methods[mi]), worst,
                      stats[REMAT_ODE_STAT_ACCEPTED]);
        double bound = 1e-7;
        if (!(worst < bound))
            fail_msg("%s: worst row error %.3g past %.3g", remat_ode_method_name(methods[mi]), worst, bound);
        assert_true(ys[0] == 1.0 && ys[1] == 0.0); /* t_0 = t0: y0 itself */
    }
    free(ys);
    free(t);
}

/* Dense rows agree with the steps clipped to every output time (today's
 * intervals) to the integrators' tolerance, 1e-8 for all three (measured
 * 8.9e-11 tsit5, 1.2e-10 dopri5, 5.2e-11 rodas5, whose Hermite rows needed
 * 1e-6); the last row is a step end in both. */
static void test_models_dense_agrees_with_clipped_steps(void **state)
{
    (void)state;
    enum { K = 60 };
    double *t = times_of(K, 0), p[2] = {1.3, 0.4};
    double a[K * 3], b[K * 3], sa[REMAT_ODE_STATS], sb[REMAT_ODE_STATS];
    for (int mi = 0; mi < 3; mi++) {
        remat_ode_options opt = {.method = methods[mi], .n_times = K, .times = t, .adaptive = true,
                                 .rtol = 1e-9, .atol = 1e-12};
        states(&opt, p, a, sa);
        opt.dense = true;
        states(&opt, p, b, sb);
        assert_true(sa[REMAT_ODE_STAT_CODE] == 0 && sb[REMAT_ODE_STAT_CODE] == 0);
        assert_true(sb[REMAT_ODE_STAT_ACCEPTED] < sa[REMAT_ODE_STAT_ACCEPTED]);
        assert_true(sb[REMAT_ODE_STAT_T] == t[K - 1]);
        double dmax = 0;
        for (int i = 0; i < K * 3; i++)
            dmax = fmax(dmax, fabs(b[i] - a[i]));
        print_message("%s: dense rows within %.3g of the clipped steps'\n", remat_ode_method_name(methods[mi]), dmax);
        for (int i = 0; i < K * 3; i++)
            assert_close(b[i], a[i], 0, 1e-8);
    }
    free(t);
}

/* loss(p, y0) = sum_k W_k . y(t_k) through dense rows, and its VJP */
static remat_program *loss_prog(const remat_ode_options *opt, const double *w, int grad)
{
    remat_mechanism *m = parse(ABC);
    int64_t S = 3, P = 2;
    remat_fn *f = remat_fn_new("dense_loss");
    remat_val y0 = remat_arg(f, "y0", REMAT_F64, 1, &S), pv = remat_arg(f, "p", REMAT_F64, 1, &P), out;
    assert_ok(remat_ode_integrate(f, m, opt, y0, pv, &out));
    remat_val W = remat_const_data(f, REMAT_F64, 2, DIMS(opt->n_times, S), w);
    remat_fn_output(f, remat_sum_all(f, remat_mul(f, W, out)));
    remat_fn *g = NULL;
    if (grad)
        assert_ok(remat_grad(f, 2, (int[]){0, 1}, &g));
    remat_program *prog = compile_ok(grad ? g : f);
    remat_fn_free(g);
    remat_fn_free(f);
    remat_mechanism_free(m);
    return prog;
}

/* Reverse mode through the interpolant: the gradient of a loss over rows
 * that fall inside steps (none on a step end but the last) matches central
 * differences of the forward loss in f64, w.r.t. the rate constants and y0,
 * for each method's extension. At rtol 1e-11 the step sizes' own dependence
 * on p (constants of the reverse pass, as in diffrax, but seen by central
 * differences) is below 1e-6 relative for the 4th-order extensions of
 * tsit5, dopri5 and rodas5 (measured worst 3.5e-9, 3.5e-9, 2.5e-8); the
 * cubic Hermite rows rodas5 took before carried an interpolation error of
 * ~1e-8 that moved with the step sizes and agreed to 3e-5 only. */
static void test_models_dense_gradient_matches_central_differences(void **state)
{
    (void)state;
    enum { K = 37 };
    double *t = times_of(K, 0), w[K * 3];
    for (int i = 0; i < K * 3; i++)
        w[i] = 0.3 * sin(1.7 * i) + 0.1;
    for (int mi = 0; mi < 3; mi++) {
        remat_ode_options opt = {.method = methods[mi], .n_times = K, .times = t, .adaptive = true,
                                 .rtol = 1e-11, .atol = 1e-14, .max_steps = 20000, .dense = true};
        remat_program *g = loss_prog(&opt, w, 1), *fwd = loss_prog(&opt, w, 0);
        double y0[3] = {1.0, 0.2, 0.0}, p[2] = {0.9, 0.35}, gy0[3], gp[2];
        run(g, (double *[]){y0, p}, (double *[]){gy0, gp}, NULL);
        double x[5] = {p[0], p[1], y0[0], y0[1], y0[2]}, an[5] = {gp[0], gp[1], gy0[0], gy0[1], gy0[2]};
        for (int i = 0; i < 5; i++) {
            double e = 1e-5 * fmax(1.0, fabs(x[i])), lp, lm, xp[5], xm[5];
            memcpy(xp, x, sizeof x), memcpy(xm, x, sizeof x);
            xp[i] += e, xm[i] -= e;
            run(fwd, (double *[]){xp + 2, xp}, (double *[]){&lp}, NULL);
            run(fwd, (double *[]){xm + 2, xm}, (double *[]){&lm}, NULL);
            double cd = (lp - lm) / (2 * e);
            double rel = 1e-6;
            print_message("%s: d loss / d x%d relative error %.3g\n", remat_ode_method_name(methods[mi]), i,
                          fabs(an[i] - cd) / fabs(cd));
            if (!(fabs(an[i] - cd) <= rel * fabs(cd) + 1e-8))
                fail_msg("%s: d loss / d x%d = %.12g, central differences %.12g", remat_ode_method_name(methods[mi]),
                         i, an[i], cd);
        }
        remat_program_free(g);
        remat_program_free(fwd);
    }
    free(t);
}

/* The reverse program's planned bytes grow with the rows as O(rows x S)
 * only: 10x the rows add at most 200 doubles per row and species (the
 * online schedule's 16 snapshots of the rows, the rows of one step tape, the
 * output and its cotangent), where a loop per interval added ~160 kB a row. */
static void test_models_dense_memory_linear_in_rows(void **state)
{
    (void)state;
    size_t bytes[2];
    const int Ks[2] = {1000, 10000};
    for (int i = 0; i < 2; i++) {
        int K = Ks[i];
        double *t = times_of(K, 0), *w = calloc((size_t)K * 3, sizeof *w);
        remat_ode_options opt = {.method = REMAT_ODE_TSIT5, .n_times = K, .times = t, .adaptive = true,
                                 .rtol = 1e-6, .atol = 1e-9, .dense = true};
        remat_program *g = loss_prog(&opt, w, 1);
        remat_memory_plan plan;
        remat_program_plan(g, &plan);
        bytes[i] = plan.arena_bytes + plan.constant_bytes;
        remat_program_free(g);
        free(w);
        free(t);
    }
    double per_row = (double)(bytes[1] - bytes[0]) / (Ks[1] - Ks[0]);
    if (!(per_row <= 200.0 * 3 * 8))
        fail_msg("%.0f bytes per row (%zu at %d rows, %zu at %d)", per_row, bytes[0], Ks[0], bytes[1], Ks[1]);
}

/* Output times as a value: one compiled program integrates two different
 * time grids of the same length, each as a graph with those times as
 * constants does (to rounding). */
static void test_models_dense_times_as_input_share_a_program(void **state)
{
    (void)state;
    enum { K = 25 };
    remat_mechanism *m = parse(ABC);
    int64_t S = 3, P = 2, KK = K;
    remat_fn *f = remat_fn_new("dense_times");
    remat_val y0 = remat_arg(f, "y0", REMAT_F64, 1, &S), pv = remat_arg(f, "p", REMAT_F64, 1, &P);
    remat_val ts = remat_arg(f, "ts", REMAT_F64, 1, &KK), out, sv;
    remat_ode_options opt = {.method = REMAT_ODE_TSIT5, .adaptive = true, .rtol = 1e-8, .atol = 1e-11};
    assert_ok(remat_ode_integrate_times(f, m, &opt, y0, pv, ts, &out, &sv));
    remat_fn_output(f, out);
    remat_fn_output(f, sv);
    remat_program *prog = compile_ok(f);
    double y0v[3] = {1, 0, 0}, p[2] = {1.0, 0.5}, t1[K], t2[K], a[K * 3], b[K * 3], sa[REMAT_ODE_STATS],
           sb[REMAT_ODE_STATS];
    for (int k = 0; k < K; k++)
        t1[k] = 0.2 * k, t2[k] = 0.05 + 0.7 * k * k / K;
    for (int i = 0; i < 2; i++) {
        double *t = i ? t2 : t1;
        run(prog, (double *[]){y0v, p, t}, (double *[]){a, sa}, NULL);
        remat_ode_options o = opt;
        o.n_times = K, o.times = t, o.dense = true;
        states(&o, p, b, sb);
        assert_true(sa[REMAT_ODE_STAT_CODE] == 0 && sa[REMAT_ODE_STAT_T] == t[K - 1]);
        assert_true(sa[REMAT_ODE_STAT_ACCEPTED] == sb[REMAT_ODE_STAT_ACCEPTED]);
        for (int j = 0; j < K * 3; j++)
            assert_close(a[j], b[j], 1e-13, 1e-15);
    }
    /* times that are not a (K,) value of y0's dtype: a shape error */
    remat_val bad = remat_arg(f, "bad", REMAT_F64, 2, DIMS(2, 2)), o2;
    assert_int_equal(remat_ode_integrate_times(f, m, &opt, y0, pv, bad, &o2, NULL), REMAT_ERR_SHAPE);
    assert_non_null(strstr(remat_last_error(), "times is f64[2,2]"));
    remat_program_free(prog);
    remat_fn_free(f);
    remat_mechanism_free(m);
}

/* bytes a program plans: its arena and constants (NULL: 0) */
static double planned(const remat_program *p)
{
    if (!p)
        return 0;
    remat_memory_plan plan;
    remat_program_plan(p, &plan);
    return (double)(plan.arena_bytes + plan.constant_bytes);
}

static const char *const abc_fit = "species A, B, C\nparam k1 = 0.5\nparam k2 = 0.5\nA -> B : k1\nB -> C : k2\n";

/* K rows of the exact A -> B -> C solution (k = 0.7, 0.3) from A = a0 over
 * [0, 10], read as a data file */
static remat_dataset *abc_rows(const remat_mechanism *m, int K, double a0)
{
    char path[] = "/tmp/remat_dense_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *fp = fdopen(fd, "w");
    fprintf(fp, "t,A,B,C\n");
    for (int i = 0; i < K; i++) {
        double t = 10.0 * i / (K - 1), A = a0 * exp(-0.7 * t);
        double B = a0 * 0.7 / (0.3 - 0.7) * (exp(-0.7 * t) - exp(-0.3 * t));
        fprintf(fp, "%.17g,%.17g,%.17g,%.17g\n", t, A, B, a0 - A - B);
    }
    fclose(fp);
    remat_dataset *d;
    assert_ok(remat_dataset_read(path, m, &d));
    unlink(path);
    return d;
}

/* A fit of K rows from k = 0.5, 0.5 with the defaults (adaptive tsit5,
 * lm): the constants recovered, and the bytes of its compiled programs */
static double fit_rows(int K)
{
    remat_mechanism *m = parse(abc_fit);
    remat_dataset *d = abc_rows(m, K, 1.0);
    remat_fit_options o = remat_fit_defaults();
    remat_fit *fit;
    assert_ok(remat_fit_new(m, 1, &d, &o, &fit));
    remat_fit_result r;
    assert_ok(remat_fit_run(fit, &r));
    assert_close(r.params[0], 0.7, 1e-6, 0);
    assert_close(r.params[1], 0.3, 1e-6, 0);
    assert_int_equal(fit->n_cls, 1);
    const fit_class *k = &fit->cls[0];
    double bytes = planned(k->res) + planned(k->vg) + planned(k->vjp) + planned(k->jvp);
    remat_fit_result_clear(&r);
    remat_fit_free(fit);
    remat_dataset_free(d);
    remat_mechanism_free(m);
    return bytes;
}

/* Experiments of one length share one class of programs, another length
 * gets its own: five files of 10, 10, 12, 10 and 12 rows make two classes,
 * under lm (forward and reverse Jacobians) and lbfgs-b, each recovering the
 * constants. */
static void test_models_dense_experiments_share_programs(void **state)
{
    (void)state;
    remat_mechanism *m = parse(abc_fit);
    const int rows[5] = {10, 10, 12, 10, 12};
    remat_dataset *d[5];
    for (int e = 0; e < 5; e++)
        d[e] = abc_rows(m, rows[e], 0.5 + 0.25 * e);
    const remat_fit_optimizer opts[3] = {REMAT_FIT_LM, REMAT_FIT_LM, REMAT_FIT_LBFGSB};
    const remat_fit_jacobian jac[3] = {REMAT_FIT_JACOBIAN_FORWARD, REMAT_FIT_JACOBIAN_REVERSE,
                                       REMAT_FIT_JACOBIAN_AUTO};
    for (int i = 0; i < 3; i++) {
        remat_fit_options o = remat_fit_defaults();
        o.optimizer = opts[i], o.jacobian = jac[i];
        remat_fit *fit;
        assert_ok(remat_fit_new(m, 5, d, &o, &fit));
        assert_int_equal(fit->n_cls, 2);
        assert_int_equal(fit->exp[3].cls, fit->exp[0].cls);
        assert_int_equal(fit->exp[4].cls, fit->exp[2].cls);
        remat_fit_result r;
        assert_ok(remat_fit_run(fit, &r));
        assert_close(r.params[0], 0.7, 1e-5, 0);
        assert_close(r.params[1], 0.3, 1e-5, 0);
        remat_fit_result_clear(&r);
        remat_fit_free(fit);
    }
    for (int e = 0; e < 5; e++)
        remat_dataset_free(d[e]);
    remat_mechanism_free(m);
}

/* A 10,000-row experiment fits, and the fit's programs grow by O(rows x S)
 * from 1,000 rows: the bound of the memory test above, per program. */
static void test_models_dense_fit_of_10000_rows(void **state)
{
    (void)state;
    double small = fit_rows(1000), big = fit_rows(10000);
    double per_row = (big - small) / 9000.0;
    if (!(per_row <= 4 * 200.0 * 3 * 8))
        fail_msg("the fit's programs grow by %.0f bytes per row (%.0f at 1000 rows, %.0f at 10000)", per_row, small,
                 big);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_models_dense_rows_match_exact_solution),
        cmocka_unit_test(test_models_dense_agrees_with_clipped_steps),
        cmocka_unit_test(test_models_dense_gradient_matches_central_differences),
        cmocka_unit_test(test_models_dense_memory_linear_in_rows),
        cmocka_unit_test(test_models_dense_times_as_input_share_a_program),
        cmocka_unit_test(test_models_dense_fit_of_10000_rows),
        cmocka_unit_test(test_models_dense_experiments_share_programs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

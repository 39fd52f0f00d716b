/*
 * test_models_rodas.c — Rodas5, the Rosenbrock method of remat/ode.h: its
 * coefficients against the order conditions, L-stability on a stiff decay,
 * batched steps, a non-autonomous mechanism's order, and its continuous
 * extension (order, ends, formula, no extra right-hand side). Robertson against
 * CVODES is test_models_robertson.c.
 *
 * Expectations from outside the code: the Rosenbrock order conditions of
 * Hairer & Wanner II (Table IV.7.1) in the untransformed (alpha, gamma) form,
 * the exact solution of linear decay, and error ratios as the step halves.
 */
#include "test_models_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/jit.h"
#include "remat/remat.h"

enum { MS = ODE_MAX_STAGES };

/* L = inverse of a lower-triangular M (s x s) */
static void lower_inverse(int s, double M[MS][MS], double L[MS][MS])
{
    for (int j = 0; j < s; j++)
        for (int i = 0; i < s; i++) {
            double r = i == j ? 1.0 : 0.0;
            for (int k = j; k < i; k++)
                r -= M[i][k] * L[k][j];
            L[i][j] = i < j ? 0.0 : r / M[i][i];
        }
}

/* The W-transformed tableau back to (alpha, Gamma, b) (H-W II (4.7')):
 * Gamma^{-1} = I/gamma - C, alpha = a Gamma, b = m^T Gamma; then the
 * conditions for order 4 and the bushy ones of order 5, with
 * beta = alpha + Gamma below the diagonal and beta'_i = sum_{j<i} beta_ij. */
static void test_models_rodas5_satisfies_rosenbrock_order_conditions(void **state)
{
    (void)state;
    const ode_tableau *tb = rmi_ode_tableau(REMAT_ODE_RODAS5);
    assert_non_null(tb->ros);
    const ode_rosenbrock *rb = tb->ros;
    int s = tb->stages;
    double g = rb->gamma, Gi[MS][MS] = {{0}}, G[MS][MS], a[MS][MS] = {{0}}, al[MS][MS] = {{0}}, be[MS][MS] = {{0}};
    double b[MS] = {0}, bp[MS] = {0}, ai[MS] = {0};
    for (int i = 0; i < s; i++) {
        Gi[i][i] = 1.0 / g;
        for (int j = 0; j < i; j++) {
            Gi[i][j] = -rb->C[i * (i - 1) / 2 + j];
            a[i][j] = rb->a[i * (i - 1) / 2 + j];
        }
    }
    lower_inverse(s, Gi, G);
    for (int i = 0; i < s; i++)
        for (int j = 0; j < s; j++) {
            for (int k = 0; k < s; k++)
                al[i][j] += a[i][k] * G[k][j];
            b[j] += rb->b[i] * G[i][j];
        }
    for (int i = 0; i < s; i++) {
        double d = 0;
        for (int j = 0; j <= i; j++)
            d += G[i][j];
        for (int j = 0; j < i; j++) {
            be[i][j] = al[i][j] + G[i][j];
            bp[i] += be[i][j];
            ai[i] += al[i][j];
        }
        /* c_i = sum_j alpha_ij and d_i = sum_j gamma_ij, which the step reads */
        assert_close(ai[i], rb->c[i], 1e-12, 1e-12);
        assert_close(d, rb->d[i], 1e-12, 1e-12);
    }
    double cond[7] = {0}, bbp[MS] = {0}, bbbp[MS] = {0}, ba2[MS] = {0}, aab[MS] = {0};
    for (int i = 0; i < s; i++)
        for (int j = 0; j < i; j++) {
            bbp[i] += be[i][j] * bp[j];
            ba2[i] += be[i][j] * ai[j] * ai[j];
            aab[i] += al[i][j] * bp[j];
        }
    for (int i = 0; i < s; i++)
        for (int j = 0; j < i; j++)
            bbbp[i] += be[i][j] * bbp[j];
    for (int i = 0; i < s; i++) {
        cond[0] += b[i];
        cond[1] += b[i] * bp[i];
        cond[2] += b[i] * ai[i] * ai[i];
        cond[3] += b[i] * bbp[i];
        cond[4] += b[i] * ai[i] * ai[i] * ai[i];
        cond[5] += b[i] * ai[i] * aab[i];
        cond[6] += b[i] * bbbp[i];
    }
    const double want[7] = {1, 0.5 - g, 1.0 / 3, 1.0 / 6 - g + g * g, 0.25, 1.0 / 8 - g / 3,
                            1.0 / 24 - g / 2 + 1.5 * g * g - g * g * g};
    for (int k = 0; k < 7; k++)
        if (fabs(cond[k] - want[k]) > 1e-10)
            fail_msg("rodas5: order condition %d: %.17g, expected %.17g", k, cond[k], want[k]);
    /* the remaining order-4 tree: sum b_i beta_ij alpha_j^2 = 1/12 - gamma/3 */
    double c4 = 0;
    for (int i = 0; i < s; i++)
        c4 += b[i] * ba2[i];
    assert_close(c4, 1.0 / 12 - g / 3, 1e-10, 1e-12);
    /* stiffly accurate: b is the last row of (alpha, Gamma) */
    for (int j = 0; j < s; j++)
        assert_close(b[j], (j < s - 1 ? al[s - 1][j] : 0.0) + G[s - 1][j], 1e-10, 1e-12);
}

/* A -> B at k = 1e8 and 1e10 with one step of h = 1: L-stability, R(z) -> 0
 * as z = -h k -> -inf (like 1/z), damps A to nothing and B takes the mass;
 * an explicit step of that size blows up. */
static void test_models_rodas5_damps_stiff_decay_in_one_step(void **state)
{
    (void)state;
    remat_mechanism *m = parse("species A, B\nparam k = 1e8\nA -> B : k\n");
    for (int meth = 0; meth < REMAT_ODE_METHOD_COUNT; meth++) {
        if (meth == REMAT_ODE_BDF)
            continue; /* multistep, adaptive only: no fixed step (test_models_bdf.c) */
        remat_ode_options opt = {.method = (remat_ode_method)meth, .n_times = 1, .times = (double[]){1.0},
                                 .steps = 1};
        remat_fn *f = states_fn(m, &opt);
        remat_program *p = compile_ok(f);
        double y0[2] = {1.0, 0.0}, a[2];
        for (int e = 0; e < 2; e++) {
            double k[1] = {e ? 1e10 : 1e8}, y[2];
            run(p, (double *[]){y0, k}, (double *[]){y}, NULL);
            a[e] = y[0];
            /* A + B is conserved up to the solve's rounding, eps * cond(W) ~ eps h gamma k */
            if (meth == REMAT_ODE_RODAS5)
                assert_close(y[0] + y[1], 1.0, 10 * 2.2e-16 * 0.19 * k[0], 0);
        }
        if (meth == REMAT_ODE_RODAS5) {
            printf("  rodas5: R(-1e8) = %.3g, R(-1e10) = %.3g\n", a[0], a[1]);
            assert_true(fabs(a[0]) < 1e-6 && fabs(a[1]) < 1e-8);
            assert_true(fabs(a[1]) < fabs(a[0]) / 50);
        } else {
            assert_true(!(fabs(a[0]) < 1.0)); /* |R(-1e8)| >= 1 for every explicit tableau */
        }
        remat_program_free(p);
        remat_fn_free(f);
    }
    remat_mechanism_free(m);
}

/* A batch of initial states (B, S) integrates as its rows: the Jacobian's
 * one-hot tangents broadcast over the batch give each row its own J. */
static void test_models_rodas5_batched_rows_match_unbatched(void **state)
{
    (void)state;
    remat_mechanism *m = parse(NET5);
    enum { S = 5, P = 5, B = 3, K = 2 };
    double p[P] = {1.2, 0.4, 0.7, 0.9, 0.3}, y0[B * S];
    for (int r = 0; r < B; r++)
        for (int i = 0; i < S; i++)
            y0[r * S + i] = NET5_Y0[i] * (1.0 + 0.3 * r);
    const double times[K] = {0.5, 1.25};
    remat_ode_options opt = {.method = REMAT_ODE_RODAS5, .t0 = 0.1, .n_times = K, .times = times, .dt = 0.1};
    remat_fn *fb = remat_fn_new("batched");
    remat_val yb = remat_arg(fb, "y0", REMAT_F64, 2, (int64_t[]){B, S});
    remat_val pb = remat_arg(fb, "params", REMAT_F64, 1, (int64_t[]){P});
    remat_val ys;
    assert_ok(remat_ode_integrate(fb, m, &opt, yb, pb, &ys));
    remat_fn_output(fb, ys);
    remat_program *pbat = compile_ok(fb), *pone = NULL;
    double got[K * B * S], one[K * S];
    run(pbat, (double *[]){y0, p}, (double *[]){got}, NULL);
    remat_fn *f1 = states_fn(m, &opt);
    pone = compile_ok(f1);
    for (int r = 0; r < B; r++) {
        run(pone, (double *[]){y0 + r * S, p}, (double *[]){one}, NULL);
        for (int k = 0; k < K; k++)
            for (int i = 0; i < S; i++)
                assert_close(got[(k * B + r) * S + i], one[k * S + i], 1e-14, 1e-16);
    }
    remat_program_free(pbat);
    remat_program_free(pone);
    remat_fn_free(fb);
    remat_fn_free(f1);
    remat_mechanism_free(m);
}

/* y' = -a(t) y with a(t) = 1 + t reads t: the step's df/dt terms (d_i) are
 * what keep order 5 (without them a Rosenbrock step drops to order 1 on a
 * non-autonomous problem). Exact: y = exp(-(t + t^2/2)). */
static double decay_error(double dt)
{
    remat_mechanism *m = parse("indep t\nspecies A, B\nlet a = 1 + t\nA -> B : a\n");
    double T = 2.0;
    remat_ode_options opt = {.method = REMAT_ODE_RODAS5, .n_times = 1, .times = &T, .dt = dt};
    int64_t S = 2;
    remat_fn *f = remat_fn_new("decay");
    remat_val y0 = remat_arg(f, "y0", REMAT_F64, 1, &S), ys;
    assert_ok(remat_ode_integrate(f, m, &opt, y0, REMAT_NONE, &ys));
    remat_fn_output(f, ys);
    remat_program *p = compile_ok(f);
    double y[2], init[2] = {1.0, 0.0};
    run(p, (double *[]){init}, (double *[]){y}, NULL);
    remat_program_free(p);
    remat_fn_free(f);
    remat_mechanism_free(m);
    return fabs(y[0] - exp(-(T + T * T / 2)));
}

static void test_models_rodas5_time_dependent_rates_keep_order_5(void **state)
{
    (void)state;
    double prev = decay_error(0.2);
    for (double dt = 0.1; dt > 0.02; dt /= 2) {
        double e = decay_error(dt), order = log2(prev / e);
        printf("  rodas5 a(t) = 1 + t, dt=%-6g error %.3e  observed order %.3f\n", dt, e, order);
        if (!(order > 4.5 && order < 5.6))
            fail_msg("observed order %.3f at dt %g", order, dt);
        prev = e;
    }
}

/* Bad inputs to a Rodas5 step name the input: a y of the wrong species
 * count, params of the wrong rank, t absent for a mechanism that reads it. */
static void test_models_rodas5_bad_input_names_the_input(void **state)
{
    (void)state;
    remat_mechanism *m = parse("indep t\nspecies A, B\nparam k = 2\nlet a = k * (1 + t)\nA -> B : a\n");
    remat_fn *f = remat_fn_new("bad");
    remat_val y3 = remat_arg(f, "y3", REMAT_F64, 1, (int64_t[]){3});
    remat_val y2 = remat_arg(f, "y2", REMAT_F64, 1, (int64_t[]){2});
    remat_val p0 = remat_arg(f, "p0", REMAT_F64, 0, NULL);
    remat_val p1 = remat_arg(f, "p1", REMAT_F64, 1, (int64_t[]){1});
    remat_val t = remat_arg(f, "t", REMAT_F64, 0, NULL), h = remat_arg(f, "h", REMAT_F64, 0, NULL), out;
    assert_int_equal(remat_ode_step(f, m, REMAT_ODE_RODAS5, t, h, y3, p1, &out), REMAT_ERR_SHAPE);
    assert_contains(remat_last_error(), "y");
    assert_int_equal(out, REMAT_NONE);
    assert_int_equal(remat_ode_step(f, m, REMAT_ODE_RODAS5, t, h, y2, p0, &out), REMAT_ERR_SHAPE);
    assert_contains(remat_last_error(), "params");
    assert_int_not_equal(remat_ode_step(f, m, REMAT_ODE_RODAS5, REMAT_NONE, h, y2, p1, &out), REMAT_OK);
    assert_contains(remat_last_error(), "independent variable");
    assert_ok(remat_ode_step(f, m, REMAT_ODE_RODAS5, t, h, y2, p1, &out));
    remat_fn_free(f);
    remat_mechanism_free(m);
}

/* Adaptive Rodas5 (remat_while with the attempt as body) runs as compiled
 * lane loops: Robertson's problem at rtol 1e-6 through three output times,
 * value and gradient with REMAT_JIT=always the interpreter's bits, every
 * loop node compiled (each of the first two intervals a checkpoint region:
 * its loop in the forward, re-run, and reversed; the last forward and
 * reversed: 3 + 3 + 2). The controller's NaN test is a reduce_max, which
 * the lane translator once declined, leaving the whole loop interpreted. */
static void jit_run(const remat_fn *g, const char *jit, double *y0, double *k, double *out, remat_stats *st,
                    remat_memory_plan *plan)
{
    setenv("REMAT_JIT", jit, 1);
    remat_program *p = compile_ok(g);
    unsetenv("REMAT_JIT");
    remat_program_plan(p, plan);
    run(p, (double *[]){y0, k}, (double *[]){out, out + 1, out + 4}, st); /* L, dL/dy0, dL/dk */
    remat_program_free(p);
}

static void test_models_rodas5_adaptive_compiled_matches_interpreted(void **state)
{
    (void)state;
    remat_mechanism *m = parse("species A, B, C\nparam k1 = 0.04\nparam k2 = 3e7\nparam k3 = 1e4\n"
                               "A -> B : k1\n2 B -> B + C : k2\nB + C -> A + C : k3\n");
    const double times[3] = {1e-3, 1.0, 100.0}, w[9] = {0, 0, 0, 0, 1e4, 0, 1, 1e4, 0};
    remat_ode_options opt = {.method = REMAT_ODE_RODAS5, .n_times = 3, .times = times, .adaptive = true,
                             .rtol = 1e-6, .atol = 1e-12};
    remat_fn *f = weighted_loss_fn(m, &opt, w);
    remat_fn *g = ad_ok(AD_VALUE_AND_GRAD, f, 0, NULL);
    double y0[3] = {1, 0, 0}, k[3] = {0.04, 3e7, 1e4}, got[2][7];
    remat_stats st[2];
    remat_memory_plan plan[2];
    jit_run(g, "always", y0, k, got[0], &st[0], &plan[0]);
    jit_run(g, "never", y0, k, got[1], &st[1], &plan[1]);
    for (int i = 0; i < 7; i++)
        assert_true(isfinite(got[1][i]));
    assert_memory_equal(got[0], got[1], sizeof got[0]); /* contract 2 */
    assert_int_equal(st[0].forward_evals, st[1].forward_evals);
    assert_int_equal(st[0].ops_executed, st[1].ops_executed);
    assert_int_equal(plan[1].compiled_loops, 0);
#if REMAT_HAVE_GCCJIT
    if (rmi_cpu_can_compile_lanes())
        assert_int_equal(plan[0].compiled_loops, 8);
#endif
    remat_fn_free(g);
    remat_fn_free(f);
    remat_mechanism_free(m);
}

/* ---- Rodas5's own continuous extension (dense.c, rodas5.c's H) ---- */

/* 2 A -> B (A' = -2 k A^2, nonlinear), exact A = 1 / (1 + 2 k t), B = (1 - A) / 2 */
static const char *const DIMER = "species A, B\nparam k = 1\n2 A -> B : k\n";

/* the worst error over theta = 1/4, 1/2, 3/4 of one rodas5 step of h from
 * the exact state at 0, rows read through remat_ode_integrate_times with
 * fixed steps (fixed_dense.c: rows strictly inside the step take its
 * continuous extension); *end the error of the step's end */
static double extension_error(double h, double *end)
{
    remat_mechanism *m = parse(DIMER);
    int64_t S = 2, P = 1, K = 4;
    remat_fn *f = remat_fn_new("rodas5_rows");
    remat_val y0 = remat_arg(f, "y0", REMAT_F64, 1, &S), pv = remat_arg(f, "p", REMAT_F64, 1, &P);
    remat_val ts = remat_arg(f, "ts", REMAT_F64, 1, &K), out;
    remat_ode_options opt = {.method = REMAT_ODE_RODAS5, .dt = h, .steps = 1};
    assert_ok(remat_ode_integrate_times(f, m, &opt, y0, pv, ts, &out, NULL));
    remat_fn_output(f, out);
    remat_program *prog = compile_ok(f);
    double y0v[2] = {1, 0}, k[1] = {1}, t[4] = {0.25 * h, 0.5 * h, 0.75 * h, h}, y[8], worst = 0;
    run(prog, (double *[]){y0v, k, t}, (double *[]){y}, NULL);
    for (int i = 0; i < 4; i++) {
        double A = 1.0 / (1.0 + 2.0 * t[i]), e = fmax(fabs(y[2 * i] - A), fabs(y[2 * i + 1] - (1.0 - A) / 2));
        if (i < 3)
            worst = fmax(worst, e);
        else
            *end = e;
    }
    remat_program_free(prog);
    remat_fn_free(f);
    remat_mechanism_free(m);
    return worst;
}

/* Rows inside a rodas5 step converge at the extension's order: the error
 * at interior theta of one step falls ~32x per halving of h (local error
 * O(h^5), order 4: rodas5.c's three rows of H), measured 29x and 30x here.
 * The cubic Hermite rows rodas5 took before fall ~15x (order 3), and so do
 * H's first two rows alone (measured in a plain-C transcription of the
 * step: 14x and 15x at these h), so the bound tells the three apart. */
static void test_models_rodas5_extension_order(void **state)
{
    (void)state;
    double end, prev = extension_error(0.05, &end);
    for (double h = 0.025; h > 0.01; h /= 2) {
        double e = extension_error(h, &end), ratio = prev / e;
        printf("  rodas5 extension, h=%-6g interior error %.3e (ratio %.1f), step end %.3e\n", h, e, ratio, end);
        if (!(ratio > 24.0 && ratio < 40.0))
            fail_msg("interior error falls %.1fx from h %g to %g (order 4: ~32x)", ratio, 2 * h, h);
        assert_true(end < e); /* the step's end (order 5) is not what limits */
        prev = e;
    }
}

/* The extension from arbitrary stages: theta 0 and 1 give y and y' to the
 * bit ((1 - 1) and 0 multiply finite values: the form's identity, not a
 * contract between paths), and theta 1/2 the formula of ode_impl.h written
 * out in plain C over rodas5.c's H, to rounding. */
static void test_models_rodas5_extension_ends_and_formula(void **state)
{
    (void)state;
    const ode_tableau *tb = &rmi_ode_rodas5_tableau;
    const ode_rosenbrock *rb = tb->ros;
    assert_int_equal(rb->n_dense, 3);
    enum { S = 3, K = 3, NS = 8 };
    int64_t s = S, KS[2] = {S, K}, kk = K;
    remat_fn *f = remat_fn_new("rodas5_extension");
    remat_val y = remat_arg(f, "y", REMAT_F64, 1, &s), y1 = remat_arg(f, "y1", REMAT_F64, 1, &s), k[NS];
    for (int i = 0; i < NS; i++)
        k[i] = remat_arg(f, "k", REMAT_F64, 1, &s);
    remat_val ts = remat_arg(f, "ts", REMAT_F64, 1, &kk), buf = remat_arg(f, "out", REMAT_F64, 2, KS);
    remat_val t = remat_scalar(f, REMAT_F64, 0.5), h = remat_scalar(f, REMAT_F64, 0.25);
    remat_val mask = remat_broadcast_to(f, remat_scalar(f, REMAT_F64, 1.0), 1, &kk);
    remat_val rows = ode_dense_update_masked(f, tb, REMAT_F64, S, K, buf, ts, t, mask, y, y1, h, k);
    assert_int_not_equal(rows, REMAT_NONE);
    remat_fn_output(f, rows);
    remat_program *prog = compile_ok(f);
    double yv[S], y1v[S], kv[NS][S], tv[K] = {0.5, 0.75, 0.625}, bv[S * K] = {0}, got[S * K];
    for (int j = 0; j < S; j++) {
        yv[j] = 0.3 + 0.1 * j, y1v[j] = 0.7 - 0.2 * j;
        for (int i = 0; i < NS; i++)
            kv[i][j] = 0.01 * sin(1.0 + i + 3.0 * j);
    }
    double *in[2 + NS + 2] = {yv, y1v};
    for (int i = 0; i < NS; i++)
        in[2 + i] = kv[i];
    in[2 + NS] = tv, in[3 + NS] = bv;
    run(prog, in, (double *[]){got}, NULL);
    for (int j = 0; j < S; j++) { /* rows species-major: (S, K) */
        assert_true(got[j * K] == yv[j]);
        assert_true(got[j * K + 1] == y1v[j]);
        double d[3] = {0}, th = 0.5;
        for (int r = 0; r < 3; r++)
            for (int i = 0; i < NS; i++)
                d[r] += rb->H[r * NS + i] * kv[i][j];
        double want = (1 - th) * yv[j] + th * (y1v[j] + (1 - th) * (d[0] + th * (d[1] + th * d[2])));
        assert_close(got[j * K + 2], want, 1e-14, 1e-16);
    }
    remat_program_free(prog);
    remat_fn_free(f);
}

/* right-hand sides an attempt emits: the mechanism's, counted */
static int rhs_count;
static remat_status counting_rhs(remat_fn *f, const ode_rhs *r, remat_val t, remat_val y, remat_val p,
                                 remat_val *dydt)
{
    rhs_count++;
    return remat_kinetics_rhs(f, r->m, t, y, p, dydt);
}

static int attempt_rhs(const remat_mechanism *m, int64_t K)
{
    remat_ode_options opt = {.method = REMAT_ODE_RODAS5, .adaptive = true, .rtol = 1e-6, .atol = 1e-9};
    ode_ctl c;
    assert_ok(ode_ctl_of(&opt, &c));
    ode_rhs r = ode_rhs_of(m);
    r.eval = counting_rhs;
    remat_fn *body = NULL;
    rhs_count = 0;
    assert_ok(ode_attempt_body(&r, &c, REMAT_F64, r.S, 1, K, &body));
    remat_fn_free(body);
    return rhs_count;
}

/* Dense output costs a rodas5 attempt no right-hand side: the attempt with
 * rows emits as many evaluations of the mechanism as the one without (one
 * for the Jacobian's JVPs and f(t, y), seven for the later stages). The
 * cubic Hermite rows took one more, f(t + h, y'), per attempt. */
static void test_models_rodas5_dense_attempt_takes_no_extra_rhs(void **state)
{
    (void)state;
    remat_mechanism *m = parse(ABC);
    int plain = attempt_rhs(m, 0), dense = attempt_rhs(m, 5);
    printf("  rodas5 attempt: %d right-hand sides, %d with dense rows\n", plain, dense);
    assert_int_equal(plain, 8);
    assert_int_equal(dense, plain);
    remat_mechanism_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_models_rodas5_satisfies_rosenbrock_order_conditions),
        cmocka_unit_test(test_models_rodas5_damps_stiff_decay_in_one_step),
        cmocka_unit_test(test_models_rodas5_batched_rows_match_unbatched),
        cmocka_unit_test(test_models_rodas5_time_dependent_rates_keep_order_5),
        cmocka_unit_test(test_models_rodas5_bad_input_names_the_input),
        cmocka_unit_test(test_models_rodas5_adaptive_compiled_matches_interpreted),
        cmocka_unit_test(test_models_rodas5_extension_order),
        cmocka_unit_test(test_models_rodas5_extension_ends_and_formula),
        cmocka_unit_test(test_models_rodas5_dense_attempt_takes_no_extra_rhs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_fit_optimizers_fake.c — fit/'s optimizers (src/models/fit/optimize.h:
 * LM, BFGS, NLopt's L-BFGS-B, Adam) driven on fake objectives through the
 * objective interface (objective.h) and the variable transforms (vars.h),
 * with no ODE, program or rank behind them:
 *   - a linear least-squares problem with a known answer (a line through
 *     four points whose residual at the optimum is orthogonal to the
 *     columns: p* = (1, 2), F* = 4), plain, with a fixed third parameter,
 *     and bounded on the log scale (the MINUIT transform);
 *   - Rosenbrock as least squares (r = (10 (p2 - p1^2), 1 - p1), optimum
 *     (1, 1), F* = 0) from the classic start (-1.2, 1);
 *   - an objective that fails on its N-th call: every driver stops there and
 *     returns that error with its message, calling nothing after it;
 *   - an objective whose value is NaN at the start: REMAT_ERR_NUMERIC with
 *     the objective's own explanation in the message;
 *   - an objective whose agreement fails (another rank out of memory): no
 *     evaluation at all;
 * and multistart's random starts on the variables alone.
 */
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "models/fit/optimize.h"

#define MAXP 3

typedef enum { FAKE_LINE, FAKE_ROSENBROCK } fake_kind;

typedef struct {
    fake_kind kind;
    int calls;          /* residuals, gradient and Jacobian calls so far */
    int fail_at;        /* 1-based call that fails with REMAT_ERR_BACKEND (0: none) */
    int nan_at;         /* 1-based call whose value is NaN (0: none) */
    int calls_after_fail;
    remat_status agree_with; /* what agree answers for OK (an "other rank" failing) */
    int agrees;
} fake;

/* a line y = p0 + p1 t through (t, b): b = A p* + e, e orthogonal to A's columns */
static const double line_t[4] = {0, 1, 2, 3};
static const double line_b[4] = {2, 2, 4, 8};

static int64_t fake_n_res(fake_kind k) { return k == FAKE_LINE ? 4 : 2; }

static void fake_r(const fake *f, const double *p, double *r)
{
    if (f->kind == FAKE_LINE) {
        for (int k = 0; k < 4; k++)
            r[k] = p[0] + p[1] * line_t[k] - line_b[k];
    } else {
        r[0] = 10 * (p[1] - p[0] * p[0]);
        r[1] = 1 - p[0];
    }
}

/* J (N x MAXP, row-major, P = MAXP): the third column is the fixed
 * parameter's, which no residual depends on */
static void fake_J(const fake *f, const double *p, double *J, int P)
{
    int64_t N = fake_n_res(f->kind);
    memset(J, 0, sizeof *J * (size_t)N * (size_t)P);
    if (f->kind == FAKE_LINE) {
        for (int k = 0; k < 4; k++) {
            J[k * P + 0] = 1;
            J[k * P + 1] = line_t[k];
        }
    } else {
        J[0 * P + 0] = -20 * p[0];
        J[0 * P + 1] = 10;
        J[1 * P + 0] = -1;
    }
}

static remat_status fake_call(fake *f)
{
    if (f->fail_at && f->calls >= f->fail_at) {
        f->calls_after_fail++;
        f->calls++;
        return rmi_error(REMAT_ERR_BACKEND, "fake: called again after failing");
    }
    if (++f->calls == f->fail_at)
        return rmi_error(REMAT_ERR_BACKEND, "fake: failure on call %d", f->calls);
    return REMAT_OK;
}

static int P_of(const fake *f) { (void)f; return MAXP; }

static remat_status fake_residuals(void *self, const double *p, double *F, double *r)
{
    fake *f = self;
    remat_status st = fake_call(f);
    if (st != REMAT_OK)
        return st;
    double rr[4] = {0};
    fake_r(f, p, rr);
    double s = 0;
    for (int64_t k = 0; k < fake_n_res(f->kind); k++) {
        s += rr[k] * rr[k];
        if (r)
            r[k] = rr[k];
    }
    *F = f->calls == f->nan_at ? NAN : s;
    return REMAT_OK;
}

static remat_status fake_gradient(void *self, const double *p, double *F, double *grad)
{
    fake *f = self;
    remat_status st = fake_call(f);
    if (st != REMAT_OK)
        return st;
    int P = P_of(f);
    int64_t N = fake_n_res(f->kind);
    double r[4] = {0}, J[4 * MAXP], s = 0;
    fake_r(f, p, r);
    fake_J(f, p, J, P);
    for (int i = 0; i < P; i++)
        grad[i] = 0;
    for (int64_t k = 0; k < N; k++) {
        s += r[k] * r[k];
        for (int i = 0; i < P; i++)
            grad[i] += 2 * r[k] * J[k * P + i];
    }
    *F = f->calls == f->nan_at ? NAN : s;
    return REMAT_OK;
}

static remat_status fake_jacobian(void *self, const double *p, double *J)
{
    fake *f = self;
    remat_status st = fake_call(f);
    if (st != REMAT_OK)
        return st;
    fake_J(f, p, J, P_of(f));
    return REMAT_OK;
}

static remat_status fake_agree(void *self, remat_status local)
{
    fake *f = self;
    f->agrees++;
    return local == REMAT_OK && f->agree_with != REMAT_OK ? rmi_error(f->agree_with, "fake: another rank failed")
                                                          : local;
}

static const char *fake_explain(void *self, const double *p)
{
    (void)self;
    (void)p;
    return "fake: explained";
}

static const fit_objective_ops fake_ops = {
    .residuals = fake_residuals,
    .gradient = fake_gradient,
    .jacobian = fake_jacobian,
    .agree = fake_agree,
    .explain = fake_explain,
};

typedef remat_status (*driver_fn)(fit_run *);

static const struct {
    const char *name;
    driver_fn run;
    int minuit; /* runs on the MINUIT variables (fit.c's choice for LM and BFGS) */
    int max_iters;
} drivers[] = {
    {"lm", fit_opt_lm, 1, 200},
    {"bfgs", fit_opt_bfgs, 1, 500},
    {"lbfgs-b", fit_opt_nlopt, 0, 2000},
    {"adam", fit_opt_adam, 0, 20000},
};
#define N_DRIVERS ((int)(sizeof drivers / sizeof drivers[0]))

typedef struct {
    double start[MAXP], lo[MAXP], hi[MAXP];
    int logscale[MAXP], fixed[MAXP];
} param_spec;

typedef struct {
    double start[MAXP], lo[MAXP], hi[MAXP], tlo[MAXP], thi[MAXP], x0[MAXP];
    int logscale[MAXP], fixed[MAXP], free_idx[MAXP];
    fit_var_map map[MAXP];
    fit_vars v;
    double params[MAXP], p[MAXP], gp[MAXP];
    remat_fit_result res;
} run_store;

static const char *const names[MAXP] = {"a", "b", "c"};

/* One run of driver d on objective f with parameters ps. */
static remat_status run_driver(int d, fake *f, const param_spec *ps, double lr, run_store *s)
{
    memset(s, 0, sizeof *s);
    memcpy(s->start, ps->start, sizeof s->start);
    memcpy(s->lo, ps->lo, sizeof s->lo);
    memcpy(s->hi, ps->hi, sizeof s->hi);
    memcpy(s->logscale, ps->logscale, sizeof s->logscale);
    memcpy(s->fixed, ps->fixed, sizeof s->fixed);
    s->v = (fit_vars){.P = MAXP, .start = s->start, .lo = s->lo, .hi = s->hi, .logscale = s->logscale,
                      .fixed = s->fixed, .free_idx = s->free_idx, .tlo = s->tlo, .thi = s->thi, .map = s->map,
                      .x0 = s->x0};
    fit_vars_setup(&s->v, drivers[d].minuit);
    fit_objective obj = {.ops = &fake_ops, .self = f, .P = MAXP, .n_res = fake_n_res(f->kind)};
    s->res.params = s->params;
    memcpy(s->params, s->start, sizeof s->params);
    s->res.objective = NAN;
    fit_run run = {.obj = &obj, .vars = &s->v, .names = names, .res = &s->res, .n = s->v.n_free, .p = s->p,
                   .gp = s->gp, .max_iters = drivers[d].max_iters, .xtol = 1e-12, .gtol = 1e-12, .ftol = 1e-15,
                   .lr = lr};
    remat_status st = drivers[d].run(&run);
    printf("%-8s %-10s st %d, F %.12g at (%.9g, %.9g, %.9g) after %d iterations, %d calls: %s\n", drivers[d].name,
           f->kind == FAKE_LINE ? "line" : "rosenbrock", st, s->res.objective, s->params[0], s->params[1],
           s->params[2], s->res.iterations, f->calls, s->res.message);
    return st;
}

static void release(run_store *s)
{
    free(s->res.history_objective);
    free(s->res.history_params);
}

static param_spec free_params(double a, double b)
{
    return (param_spec){.start = {a, b, 7}, .lo = {-INFINITY, -INFINITY, -INFINITY},
                        .hi = {INFINITY, INFINITY, INFINITY}, .fixed = {0, 0, 1}};
}

/* Every driver reaches the line's known optimum p* = (1, 2), F* = 4, with
 * the fixed third parameter kept at its start; the history starts at the
 * start point. */
static void test_fit_fake_line_known_answer(void **state)
{
    (void)state;
    for (int d = 0; d < N_DRIVERS; d++) {
        fake f = {.kind = FAKE_LINE};
        run_store s;
        param_spec ps = free_params(0.5, 0.5);
        assert_ok(run_driver(d, &f, &ps, 0.05, &s));
        double tol = d == 3 ? 1e-4 : 1e-7; /* Adam stops on a plateau, not at a root of the gradient */
        assert_true(s.res.converged);
        assert_true(fabs(s.params[0] - 1) < tol);
        assert_true(fabs(s.params[1] - 2) < tol);
        assert_true(s.params[2] == 7);
        assert_true(fabs(s.res.objective - 4) < tol);
        assert_true(s.res.n_history >= 2);
        assert_true(s.res.history_objective[0] == 0.0 + (0.5 - 2) * (0.5 - 2) + (1 - 2) * (1 - 2) +
                                                       (1.5 - 4) * (1.5 - 4) + (2 - 8) * (2 - 8));
        assert_int_equal(f.agrees, 1); /* the driver's memory agreed on once, before any evaluation */
        release(&s);
    }
}

/* The same optimum on the log scale inside bounds [0.5, 3] x [1, 5]: LM and
 * BFGS through the MINUIT transform, L-BFGS-B and Adam with the bounds. */
static void test_fit_fake_line_log_scale_bounds(void **state)
{
    (void)state;
    for (int d = 0; d < N_DRIVERS; d++) {
        fake f = {.kind = FAKE_LINE};
        run_store s;
        param_spec ps = {.start = {2.5, 1.5, 7}, .lo = {0.5, 1, -INFINITY}, .hi = {3, 5, INFINITY},
                         .logscale = {1, 1, 0}, .fixed = {0, 0, 1}};
        assert_ok(run_driver(d, &f, &ps, 0.05, &s));
        assert_int_equal(s.v.bounded, 1);
        assert_int_equal(s.v.map[0], drivers[d].minuit ? VAR_SIN : VAR_PLAIN);
        double tol = d == 3 ? 1e-3 : 1e-6;
        assert_true(fabs(s.params[0] - 1) < tol);
        assert_true(fabs(s.params[1] - 2) < tol);
        assert_true(s.params[2] == 7);
        for (int k = 0; k < s.res.n_history; k++) /* every iterate inside the box */
            for (int i = 0; i < 2; i++) {
                double v = s.res.history_params[k * MAXP + i];
                assert_true(v >= ps.lo[i] && v <= ps.hi[i]);
            }
        release(&s);
    }
}

/* Rosenbrock's valley from (-1.2, 1): LM, BFGS and L-BFGS-B reach (1, 1). */
static void test_fit_fake_rosenbrock(void **state)
{
    (void)state;
    for (int d = 0; d < 3; d++) {
        fake f = {.kind = FAKE_ROSENBROCK};
        run_store s;
        param_spec ps = free_params(-1.2, 1);
        assert_ok(run_driver(d, &f, &ps, 0, &s));
        assert_true(s.res.converged);
        assert_true(fabs(s.params[0] - 1) < 1e-6);
        assert_true(fabs(s.params[1] - 1) < 1e-6);
        assert_true(s.res.objective < 1e-12);
        release(&s);
    }
}

/* A failure on call N (N = 1, the start, and later ones inside the
 * iterations) is the driver's status, its message is the run's, and the
 * objective is not called again. */
static void test_fit_fake_error_on_call_n(void **state)
{
    (void)state;
    for (int d = 0; d < N_DRIVERS; d++)
        for (int n = 1; n <= 9; n += 4) {
            fake f = {.kind = FAKE_ROSENBROCK, .fail_at = n};
            run_store s;
            param_spec ps = free_params(-1.2, 1);
            assert_int_equal(run_driver(d, &f, &ps, 0, &s), REMAT_ERR_BACKEND);
            char want[64];
            snprintf(want, sizeof want, "fake: failure on call %d", n);
            assert_non_null(strstr(s.res.message, want));
            assert_int_equal(f.calls, n);
            assert_int_equal(f.calls_after_fail, 0);
            assert_false(s.res.converged);
            release(&s);
        }
}

/* A NaN objective at the start is REMAT_ERR_NUMERIC naming the parameters
 * and the objective's own explanation. */
static void test_fit_fake_nan_at_start(void **state)
{
    (void)state;
    for (int d = 0; d < N_DRIVERS; d++) {
        fake f = {.kind = FAKE_LINE, .nan_at = 1};
        run_store s;
        param_spec ps = free_params(0.5, 0.5);
        assert_int_equal(run_driver(d, &f, &ps, 0, &s), REMAT_ERR_NUMERIC);
        assert_non_null(strstr(s.res.message, "fake: explained"));
        assert_non_null(strstr(s.res.message, "a=0.5, b=0.5, c=7"));
        assert_int_equal(f.calls, 1);
        release(&s);
    }
}

/* The agreement before the first evaluation fails (another evaluator out
 * of memory): the driver returns it and evaluates nothing. */
static void test_fit_fake_agreement_fails(void **state)
{
    (void)state;
    for (int d = 0; d < N_DRIVERS; d++) {
        fake f = {.kind = FAKE_LINE, .agree_with = REMAT_ERR_NOMEM};
        run_store s;
        param_spec ps = free_params(0.5, 0.5);
        assert_int_equal(run_driver(d, &f, &ps, 0, &s), REMAT_ERR_NOMEM);
        assert_non_null(strstr(s.res.message, "fake: another rank failed"));
        assert_int_equal(f.calls, 0);
        assert_int_equal(f.agrees, 1);
        release(&s);
    }
}

/* multistart's random starts (vars.h), on the variables alone: inside the
 * bounds, spread over both halves of each range (log-uniform on the log
 * scale), the fixed parameter kept, the same seed the same stream, and x0
 * mapping back to each start exactly. */
static void test_fit_fake_random_starts(void **state)
{
    (void)state;
    run_store s = {0};
    param_spec ps = {.start = {2.5, 1.5, 7}, .lo = {0.5, -INFINITY, -INFINITY}, .hi = {3, INFINITY, INFINITY},
                     .logscale = {1, 0, 0}, .fixed = {0, 0, 1}};
    memcpy(s.start, ps.start, sizeof s.start);
    memcpy(s.lo, ps.lo, sizeof s.lo);
    memcpy(s.hi, ps.hi, sizeof s.hi);
    memcpy(s.logscale, ps.logscale, sizeof s.logscale);
    memcpy(s.fixed, ps.fixed, sizeof s.fixed);
    s.v = (fit_vars){.P = MAXP, .start = s.start, .lo = s.lo, .hi = s.hi, .logscale = s.logscale, .fixed = s.fixed,
                     .free_idx = s.free_idx, .tlo = s.tlo, .thi = s.thi, .map = s.map, .x0 = s.x0};
    fit_vars_setup(&s.v, 1);
    uint64_t rng = 11, again = 11;
    int low_half[2] = {0, 0};
    double first[2] = {0, 0};
    for (int k = 0; k < 400; k++) {
        fit_vars_draw_start(&s.v, ps.start, &rng);
        if (k == 0)
            memcpy(first, s.start, sizeof first);
        assert_true(s.start[0] >= 0.5 && s.start[0] <= 3);
        assert_true(s.start[1] >= 1.5 - 1.5 && s.start[1] <= 1.5 + 1.5); /* start -+ max(|start|, 1) */
        assert_true(s.start[2] == 7);
        low_half[0] += s.start[0] < sqrt(0.5 * 3); /* the geometric middle */
        low_half[1] += s.start[1] < 1.5;
        double p[MAXP];
        fit_x_to_p(&s.v, s.x0, p);
        assert_true(p[0] == s.start[0] && p[1] == s.start[1] && p[2] == 7);
    }
    for (int i = 0; i < 2; i++)
        assert_true(low_half[i] > 120 && low_half[i] < 280);
    fit_vars_draw_start(&s.v, ps.start, &again);
    assert_true(s.start[0] == first[0] && s.start[1] == first[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fit_fake_line_known_answer),
        cmocka_unit_test(test_fit_fake_line_log_scale_bounds),
        cmocka_unit_test(test_fit_fake_rosenbrock),
        cmocka_unit_test(test_fit_fake_error_on_call_n),
        cmocka_unit_test(test_fit_fake_nan_at_start),
        cmocka_unit_test(test_fit_fake_agreement_fails),
        cmocka_unit_test(test_fit_fake_random_starts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * bench_pfr.c — gradients of the seed plug-flow reactor and of a fit
 * objective: remat against a hand-written discrete adjoint and against
 * SUNDIALS CVODES's adjoint at matched accuracy.
 *
 * Problems (A -> B -> C, y' = [-k1 A, k1 A - k2 B, k2 B], gradient w.r.t.
 * (k1, k2)):
 *   seed-pfr       y0 = [1, 0, 0], L = 10, k = (1, 0.5), J = -B(L)
 *                  (remat/pfr.h's seed reactor)
 *   fit-objective  3 experiments (different inlets and lengths), all three
 *                  species measured at 20 equally spaced points each, data
 *                  from the exact solution at k = (1, 0.5) plus 1% noise;
 *                  J = sum of squared residuals at k = (0.7, 0.6)
 *                  (remat/fit.h's objective, built here from the public API
 *                  as fit.c builds it, because remat_fit_objective has no
 *                  gradient; its value is checked against remat_fit_objective)
 * Both have closed forms: B(t) = B0 e^{-k2 t} + k1 A0 (e^{-k1 t} - e^{-k2 t})
 * / (k2 - k1); the exact gradient is differentiated analytically (seed) and
 * by the complex step (seed cross-check, fit): d/dk Im J(k + i 1e-30)/1e-30,
 * exact to rounding.
 *
 * Implementations, one gradient evaluation each:
 *   remat   remat_ode_integrate (api "ode.h") under store-all and binomial:10
 *           at several fixed steps of Euler, RK4, Tsit5; the seed's Euler
 *           also through remat_pfr_objective (api "pfr.h", the same graph)
 *           and as bench_scan's hand-built Euler graph (api
 *           "problems.h:pfr-euler": 12 ops a step where the mechanism's
 *           lowering emits 16 (a slice, reshape and broadcast per rate
 *           constant), so it shows what the lowering costs); the fit also
 *           with keep_interval_stores (no re-run of each interval before
 *           its reverse, at the memory of every interval's store)
 *   hand    pfr_hand.c: store-all discrete adjoint in plain C of the same
 *           discretisation (the Euler one is bench_scan's)
 *   cvodes  pfr_cvodes.c: CVODES's checkpointed continuous adjoint, Adams +
 *           fixed-point and BDF + dense Newton, at every rtol of a sweep
 *           (10^-1 .. 10^-12 in half decades, atol = 1e-3 rtol). Matched
 *           accuracy: for each remat row, the loosest rtol whose gradient
 *           error (max abs over k1, k2, against the exact gradient) is <=
 *           remat's, and stays so at every tighter rtol of the sweep (so a
 *           lucky cancellation at a loose rtol does not count). Each remat
 *           row is compared with the faster of the two CVODES methods so
 *           matched.
 *
 * Timing as bench_scan: every variant of a problem (remat, hand, matched
 * CVODES) is compiled/allocated once, then all are timed round-robin, one
 * sample of each per round, a sample repeating the run to ~2 ms; thread CPU
 * time; medians over rounds. Ratios are ratios of medians; *_paired are the
 * medians over rounds of the per-round ratios.
 *
 * Checks (exit status 1): remat agrees with the hand adjoint of the same
 * discretisation to 1e-10 relative; binomial:10 and keep_interval_stores
 * are bitwise equal to store-all; pfr.h equals ode.h; the two hand Euler loops agree; the fit objective equals
 * remat_fit_objective to 1e-12 where fit.h steps as ode.h does, and where fit.h reads off-grid rows from
 * tsit5's own dense output its exact-loss error is within FIT_DENSE_ERR_FACTOR of ode.h's (the
 * store-all fit row's "fit_objective", "fit_dense_rows"); the same rule for rodas5's own dense output
 * (rows "api":"fit.h", no hand adjoint of Rodas5 to time against); the analytic and complex-step seed gradients agree;
 * CVODES at its tightest rtol is within 1e-6 of the exact gradient.
 *
 * One JSON object on stdout. --smoke: fewer configurations, a decade sweep,
 * 2 rounds (the test bench_smoke_pfr). --rounds R, --sample-ms MS as
 * bench_scan's. Built without SUNDIALS, the CVODES fields are null and the JSON
 * says why ("cvodes": {"built": false, ...}).
 *   ninja -C build bench/bench_pfr && OPENBLAS_NUM_THREADS=1 ./build/bench/bench_pfr
 */
#include <complex.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <remat/remat.h>

#include "bench_util.h"
#include "pfr_hand.h"
#ifdef HAVE_CVODES
#include "pfr_cvodes.h"
#endif

#define TOL_HAND 1e-10
#define TOL_CVODES_TIGHT 1e-6

/* ---- statistics ---- */

static double rel_diff(const double *a, const double *b, int n)
{
    double e = 0;
    for (int i = 0; i < n; i++)
        e = fmax(e, fabs(a[i] - b[i]) / fmax(fabs(b[i]), 1e-300));
    return e;
}

static double abs_err(const double g[2], const double ex[2]) { return fmax(fabs(g[0] - ex[0]), fabs(g[1] - ex[1])); }

/* ---- exact solutions ---- */

/* y(t) of A -> B -> C from y0 at rates k (k1 != k2), in complex arithmetic so
 * that the complex step differentiates it */
static void exact_state(const double y0[3], double complex k1, double complex k2, double t, double complex y[3])
{
    double complex e1 = cexp(-k1 * t), e2 = cexp(-k2 * t);
    y[0] = y0[0] * e1;
    y[1] = y0[1] * e2 + k1 * y0[0] * (e1 - e2) / (k2 - k1);
    y[2] = y0[0] + y0[1] + y0[2] - y[0] - y[1];
}

/* dJ/dk for J = -B(L), y0 = [1, 0, 0]: B = k1 (E1 - E2) / D, D = k2 - k1, E_i = e^{-k_i L} */
static void seed_exact_grad(double k1, double k2, double L, double g[2])
{
    double D = k2 - k1, E1 = exp(-k1 * L), E2 = exp(-k2 * L);
    double dB1 = (E1 - E2) / D - k1 * L * E1 / D + k1 * (E1 - E2) / (D * D);
    double dB2 = k1 * L * E2 / D - k1 * (E1 - E2) / (D * D);
    g[0] = -dB1, g[1] = -dB2;
}

#define CSTEP 1e-30

/* ---- the fit problem ---- */

#define FIT_E 3
#define FIT_K 20

typedef struct {
    double y0[3], T;
    double t[FIT_K];
    double data[FIT_K * 3];
} experiment;

static const double fit_k_true[2] = {1.0, 0.5}, fit_k_eval[2] = {0.7, 0.6};

static double fit_exact_loss(const experiment *x, double complex k1, double complex k2, double complex *J)
{
    *J = 0;
    for (int e = 0; e < FIT_E; e++)
        for (int j = 0; j < FIT_K; j++) {
            double complex y[3];
            exact_state(x[e].y0, k1, k2, x[e].t[j], y);
            for (int s = 0; s < 3; s++) {
                double complex r = y[s] - x[e].data[3 * j + s];
                *J += r * r; /* not |r|^2: the complex step needs an analytic function */
            }
        }
    return creal(*J);
}

static void fit_setup(experiment x[FIT_E], double *loss, double g[2])
{
    static const double y0[FIT_E][3] = {{1, 0, 0}, {0.5, 0.5, 0}, {0.8, 0.1, 0.1}};
    static const double T[FIT_E] = {10, 8, 12};
    uint64_t rng = 0x9e3779b97f4a7c15u;
    for (int e = 0; e < FIT_E; e++) {
        memcpy(x[e].y0, y0[e], sizeof x[e].y0);
        x[e].T = T[e];
        for (int j = 0; j < FIT_K; j++) {
            x[e].t[j] = T[e] * (j + 1) / FIT_K;
            double complex y[3];
            exact_state(y0[e], fit_k_true[0], fit_k_true[1], x[e].t[j], y);
            for (int s = 0; s < 3; s++) {
                rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17; /* xorshift64 */
                double u = (double)(rng >> 11) / 9007199254740992.0;
                x[e].data[3 * j + s] = creal(y[s]) + 0.01 * (2 * u - 1);
            }
        }
    }
    double complex J;
    *loss = fit_exact_loss(x, fit_k_eval[0], fit_k_eval[1], &J);
    fit_exact_loss(x, fit_k_eval[0] + I * CSTEP, fit_k_eval[1], &J);
    g[0] = cimag(J) / CSTEP;
    fit_exact_loss(x, fit_k_eval[0], fit_k_eval[1] + I * CSTEP, &J);
    g[1] = cimag(J) / CSTEP;
}

/* ---- variants ---- */

typedef enum { V_NONE = 0, V_REMAT, V_PFR, V_PROBLEM, V_HAND_EULER, V_HAND_RK, V_CVODES } variant_kind;

typedef struct {
    variant_kind kind;
    const char *problem, *api;
    remat_ode_method method;
    const char *schedule; /* remat; hand: "store-all" */
    bool keep;            /* remat: keep_interval_stores */
    int64_t steps;        /* total steps (all experiments); cvodes: forward steps taken */
    double dt;            /* fit: the largest step */
    /* remat */
    remat_program *prog;
    remat_tensor in[2], out[2];
    double y0[3], k[2];
    remat_pfr *pfr;
    remat_problem *pb;
    remat_tensor out3[3];
    /* hand */
    double *hand_y, h;
    pfr_hand_rk_problem hand[FIT_E];
    int n_hand;
    /* cvodes */
#ifdef HAVE_CVODES
    pfr_cv *cv;
    pfr_cv_kind cv_kind;
#endif
    int sweep_index;
    long steps_b;
    int checkpoints; /* cvodes: most checkpoints stored by one forward run */
    /* results */
    double loss, g[2], err;
    double fit_obj;     /* fit, store-all: remat_fit_objective at the same dt */
    bool fit_own_dense; /* ... whose off-grid rows are the method's own dense output */
    bench_timing timing; /* thread CPU ms per run, one per round */
    int match[2]; /* remat rows: matched sweep index per CVODES kind, -1 none */
} variant;

typedef struct {
    bool smoke;
    int rounds;
    double sample_ns;
    const experiment *fit; /* NULL: the seed problem */
} context;

static const double seed_L = 10.0, seed_y0[3] = {1, 0, 0}, seed_k[2] = {1.0, 0.5};

static int run_variant(variant *v, const context *cx)
{
    switch (v->kind) {
    case V_REMAT:
        if (remat_run(v->prog, v->in[1].data ? 2 : 1, v->in, 2, v->out, NULL) != REMAT_OK)
            return fprintf(stderr, "bench_pfr: run: %s\n", remat_last_error()), 1;
        return 0;
    case V_PROBLEM:
        if (remat_run(v->prog, 3, remat_problem_inputs(v->pb), 3, v->out3, NULL) != REMAT_OK)
            return fprintf(stderr, "bench_pfr: run: %s\n", remat_last_error()), 1;
        return 0;
    case V_PFR:
        if (remat_pfr_objective(v->pfr, v->k, &v->loss, v->g) != REMAT_OK)
            return fprintf(stderr, "bench_pfr: pfr: %s\n", remat_last_error()), 1;
        return 0;
    case V_HAND_EULER:
        pfr_hand_euler(v->steps, v->h, seed_y0, seed_k[0], seed_k[1], v->hand_y, &v->loss, v->g);
        return 0;
    case V_HAND_RK:
        v->loss = 0, v->g[0] = v->g[1] = 0;
        for (int e = 0; e < v->n_hand; e++) {
            double g[2];
            v->loss += pfr_hand_rk(&v->hand[e], cx->fit ? cx->fit[e].y0 : seed_y0, v->k[0], v->k[1], g);
            v->g[0] += g[0], v->g[1] += g[1];
        }
        return 0;
    case V_CVODES:
#ifdef HAVE_CVODES
        v->loss = 0, v->g[0] = v->g[1] = 0;
        v->steps = 0, v->steps_b = 0, v->checkpoints = 0;
        for (int e = 0; e < (cx->fit ? FIT_E : 1); e++) {
            double J, g[2];
            int rc = cx->fit ? pfr_cv_grad(v->cv, cx->fit[e].y0, v->k[0], v->k[1], FIT_K, cx->fit[e].t,
                                           cx->fit[e].data, &J, g)
                             : pfr_cv_grad(v->cv, seed_y0, v->k[0], v->k[1], 1, &seed_L, NULL, &J, g);
            if (rc)
                return fprintf(stderr, "bench_pfr: cvodes failed\n"), 1;
            long nf, nb;
            int nc;
            pfr_cv_steps(v->cv, &nf, &nb, &nc);
            v->checkpoints = nc > v->checkpoints ? nc : v->checkpoints;
            v->loss += J, v->g[0] += g[0], v->g[1] += g[1], v->steps += nf, v->steps_b += nb;
        }
        return 0;
#else
        return 1;
#endif
    case V_NONE:
        break;
    }
    return 1;
}

/* the median over rounds of the per-round ratio a/b */
static double paired(const variant *a, const variant *b, int rounds)
{
    return bench_paired_ratio(a->timing.samples, b->timing.samples, rounds);
}

static bool is_remat(const variant *v) { return v->kind == V_REMAT || v->kind == V_PFR || v->kind == V_PROBLEM; }

static void free_variant(variant *v)
{
    remat_program_free(v->prog);
    remat_pfr_free(v->pfr);
    remat_problem_free(v->pb);
    free(v->hand_y);
    for (int e = 0; e < v->n_hand; e++) {
        free(v->hand[e].work);
        free((void *)v->hand[e].steps);
        free((void *)v->hand[e].h);
    }
#ifdef HAVE_CVODES
    pfr_cv_free(v->cv);
#endif
    free(v->timing.samples);
}

typedef struct {
    variant **v;
    const context *cx;
} group;

static int run_indexed(void *ctx, int i, bool first)
{
    const group *g = ctx;
    return run_variant(g->v[i], g->cx);
}

/* Times the variants round-robin (bench_util.h). */
static int time_group(variant **v, int n, const context *cx)
{
    bench_timing **t = malloc(sizeof *t * (size_t)n);
    if (!t)
        return 1;
    for (int i = 0; i < n; i++)
        t[i] = &v[i]->timing;
    group g = {v, cx};
    int rc = bench_time_round_robin(n, t, run_indexed, &g, cx->rounds, cx->sample_ns, false);
    free(t);
    return rc;
}

/* ---- building the remat variants ---- */

static remat_mechanism *seed_mechanism(void)
{
    remat_mechanism *m;
    if (remat_mechanism_parse_string(remat_pfr_seed()->mechanism, "seed", &m) != REMAT_OK) {
        fprintf(stderr, "bench_pfr: seed mechanism: %s\n", remat_last_error());
        return NULL;
    }
    return m;
}

static remat_ode_options ode_opts(remat_ode_method method, int n_times, const double *times, double dt,
                                  int64_t steps, const remat_schedule_spec *spec, bool keep)
{
    return (remat_ode_options){.method = method, .t0 = 0.0, .n_times = n_times, .times = times, .dt = dt,
                               .steps = steps, .scan = {.schedule = *spec}, .keep_interval_stores = keep};
}

/* value_and_grad of the loss w.r.t. k: seed (y0, k) -> (-B(L), dk); fit
 * (k) -> (sum of squared residuals, dk), as src/models/fit builds it */
static int build_remat(variant *v, const remat_mechanism *m, const context *cx)
{
    remat_schedule_spec spec;
    if (remat_schedule_parse(v->schedule, &spec) != REMAT_OK)
        return fprintf(stderr, "bench_pfr: %s\n", remat_last_error()), 1;
    remat_fn *f = remat_fn_new(cx->fit ? "fit_objective" : "seed_pfr"), *g = NULL;
    remat_status st = REMAT_OK;
    int64_t two = 2, three = 3;
    if (!cx->fit) {
        remat_val y0 = remat_arg(f, "y0", REMAT_F64, 1, &three), k = remat_arg(f, "k", REMAT_F64, 1, &two), ys;
        remat_ode_options o = ode_opts(v->method, 1, &seed_L, 0.0, v->steps, &spec, v->keep);
        st = remat_ode_integrate(f, m, &o, y0, k, &ys);
        if (st == REMAT_OK)
            remat_fn_output(f, remat_neg(f, remat_index(f, remat_index(f, ys, 0), 1)));
    } else {
        remat_val k = remat_arg(f, "k", REMAT_F64, 1, &two), total = REMAT_NONE;
        v->steps = 0;
        for (int e = 0; e < FIT_E && st == REMAT_OK; e++) {
            const experiment *x = &cx->fit[e];
            remat_val y0 = remat_const_data(f, REMAT_F64, 1, &three, x->y0), ys;
            remat_ode_options o = ode_opts(v->method, FIT_K, x->t, v->dt, 0, &spec, v->keep);
            int64_t n;
            st = remat_ode_count_steps(&o, NULL, &n);
            if (st == REMAT_OK)
                st = remat_ode_integrate(f, m, &o, y0, k, &ys);
            if (st != REMAT_OK)
                break;
            v->steps += n;
            remat_val d = remat_const_data(f, REMAT_F64, 2, ((int64_t[]){FIT_K, 3}), x->data);
            remat_val ss = remat_sum_all(f, remat_square(f, remat_sub(f, ys, d)));
            total = total == REMAT_NONE ? ss : remat_add(f, total, ss);
        }
        if (st == REMAT_OK)
            remat_fn_output(f, total);
    }
    if (st == REMAT_OK)
        st = remat_fn_status(f);
    if (st == REMAT_OK)
        st = remat_value_and_grad(f, 1, (int[]){cx->fit ? 0 : 1}, &g);
    if (st == REMAT_OK)
        st = remat_compile(g, remat_backend_cpu(), &v->prog);
    remat_fn_free(f);
    remat_fn_free(g);
    if (st != REMAT_OK)
        return fprintf(stderr, "bench_pfr: build %s %s: %s\n", remat_ode_method_name(v->method), v->schedule,
                       remat_last_error()), 1;
    if (!cx->fit) {
        memcpy(v->y0, seed_y0, sizeof v->y0);
        v->in[0] = remat_tensor_f64(v->y0, 1, &three);
        v->in[1] = remat_tensor_f64(v->k, 1, &two);
    } else {
        v->in[0] = remat_tensor_f64(v->k, 1, &two);
    }
    v->out[0] = remat_tensor_f64(&v->loss, 0, NULL);
    v->out[1] = remat_tensor_f64(v->g, 1, &two);
    return 0;
}

static int build_pfr(variant *v, const remat_mechanism *m)
{
    remat_schedule_spec spec;
    if (remat_schedule_parse(v->schedule, &spec) != REMAT_OK)
        return 1;
    remat_pfr_options o = {.method = v->method, .length = seed_L, .steps = v->steps, .inlet = seed_y0,
                           .goal = REMAT_PFR_MAXIMIZE, .species = remat_mechanism_species_find(m, "B"),
                           .schedule = spec};
    if (remat_pfr_new(m, &o, &v->pfr) != REMAT_OK)
        return fprintf(stderr, "bench_pfr: pfr: %s\n", remat_last_error()), 1;
    return 0;
}

/* bench_scan's graph: remat/problems.h "pfr-euler", the Euler step written
 * by hand as graph ops (fewer ops per step than the mechanism's lowering) */
static int build_problem(variant *v)
{
    remat_scan_options o = {0};
    remat_fn *f = NULL;
    remat_status st = remat_schedule_parse(v->schedule, &o.schedule);
    if (st == REMAT_OK)
        st = remat_problem_new("pfr-euler", v->steps, &v->pb);
    if (st == REMAT_OK)
        st = remat_problem_build(v->pb, &o, &f);
    if (st == REMAT_OK)
        st = remat_compile(f, remat_backend_cpu(), &v->prog);
    remat_fn_free(f);
    if (st != REMAT_OK)
        return fprintf(stderr, "bench_pfr: pfr-euler: %s\n", remat_last_error()), 1;
    const remat_tensor *in = remat_problem_inputs(v->pb);
    if (((double *)in[1].data)[0] != seed_k[0] || ((double *)in[2].data)[0] != seed_k[1])
        return fprintf(stderr, "bench_pfr: pfr-euler is not the seed reactor\n"), 1;
    v->out3[0] = remat_tensor_f64(&v->loss, 0, NULL);
    v->out3[1] = remat_tensor_f64(&v->g[0], 0, NULL);
    v->out3[2] = remat_tensor_f64(&v->g[1], 0, NULL);
    return 0;
}

/* The hand adjoint of the same discretisation: the steps remat takes. */
static int build_hand(variant *v, const context *cx)
{
    static const pfr_hand_method hm[] = {[REMAT_ODE_EULER] = PFR_HAND_EULER, [REMAT_ODE_RK4] = PFR_HAND_RK4,
                                         [REMAT_ODE_TSIT5] = PFR_HAND_TSIT5};
    if (!cx->fit && v->method == REMAT_ODE_EULER) { /* bench_scan's hand Euler */
        v->kind = V_HAND_EULER;
        v->h = seed_L / (double)v->steps;
        v->hand_y = malloc(sizeof(double) * 3 * (size_t)(v->steps + 1));
        return 0;
    }
    v->kind = V_HAND_RK;
    v->n_hand = cx->fit ? FIT_E : 1;
    const int64_t seed_steps = v->steps;
    v->steps = 0;
    for (int e = 0; e < v->n_hand; e++) {
        remat_schedule_spec spec = {0};
        int n_t = cx->fit ? FIT_K : 1;
        const double *t = cx->fit ? cx->fit[e].t : &seed_L;
        remat_ode_options o = ode_opts(v->method, n_t, t, cx->fit ? v->dt : 0.0, cx->fit ? 0 : seed_steps, &spec, false);
        int64_t *steps = malloc(sizeof *steps * (size_t)n_t), n;
        double *h = malloc(sizeof *h * (size_t)n_t);
        if (remat_ode_count_steps(&o, steps, &n) != REMAT_OK)
            return fprintf(stderr, "bench_pfr: %s\n", remat_last_error()), 1;
        for (int k = 0; k < n_t; k++)
            h[k] = (t[k] - (k ? t[k - 1] : 0.0)) / (double)steps[k];
        v->hand[e] = (pfr_hand_rk_problem){.method = hm[v->method], .n_int = n_t, .steps = steps, .h = h,
                                           .data = cx->fit ? cx->fit[e].data : NULL};
        v->hand[e].work = malloc(sizeof(double) * pfr_hand_rk_work_doubles(&v->hand[e]));
        v->steps += n;
    }
    return 0;
}

/* remat_fit_objective against ode.h's per-interval grid: fit.h integrates
 * each experiment in one scan over its rows (remat_ode_integrate_rows):
 * euler and rk4 take ode.h's per-interval steps (equal to 1e-12);
 * tsit5, dopri5 and rodas5 keep the uniform grid t0 + j dt, its rows on the grid
 * (within REMAT_ODE_GRID_TOL) the step ends, so equal to ode.h's to
 * rounding (1e-12), and its rows off the grid the method's own continuous
 * extension of the grid step holding them: a different discretisation, whose
 * error against the exact loss may be at most this factor times ode.h's.
 * Measured (smoke, tsit5 dt 0.6): 1.56e-6 against ode.h's 3.67e-6; rodas5
 * (fit_dense_check) dt 0.6 7.6e-8 against 8.0e-7, dt 0.3 9.1e-10 against
 * 2.8e-8. */
#define FIT_DENSE_ERR_FACTOR 2.0

static bool fit_takes_own_dense(const experiment *x, remat_ode_method method, double dt)
{
    if (method != REMAT_ODE_TSIT5 && method != REMAT_ODE_DOPRI5 && method != REMAT_ODE_RODAS5)
        return false;
    for (int e = 0; e < FIT_E; e++)
        for (int j = 0; j < FIT_K; j++) {
            double n = round(x[e].t[j] / dt); /* t0 = 0 */
            if (!(fabs(x[e].t[j] - n * dt) <= REMAT_ODE_GRID_TOL * n * dt))
                return true;
        }
    return false;
}

/* fit.h's own objective at the same discretisation, for the check: the
 * experiments written as CSV files */
static int fit_library_objective(const remat_mechanism *m, const experiment *x, remat_ode_method method, double dt,
                                 double *obj)
{
    char dir[] = "/tmp/bench_pfr_XXXXXX", path[FIT_E][64];
    if (!mkdtemp(dir))
        return perror("bench_pfr: mkdtemp"), 1;
    remat_dataset *d[FIT_E] = {0};
    const double *y0[FIT_E];
    int fail = 0;
    for (int e = 0; e < FIT_E; e++) {
        snprintf(path[e], sizeof path[e], "%s/exp%d.csv", dir, e);
        FILE *fp = fopen(path[e], "w");
        if (!fp)
            return perror("bench_pfr: csv"), 1;
        fprintf(fp, "t,A,B,C\n");
        for (int j = 0; j < FIT_K; j++)
            fprintf(fp, "%.17g,%.17g,%.17g,%.17g\n", x[e].t[j], x[e].data[3 * j], x[e].data[3 * j + 1],
                    x[e].data[3 * j + 2]);
        fclose(fp);
        y0[e] = x[e].y0;
        if (remat_dataset_read(path[e], m, &d[e]) != REMAT_OK)
            fail = fprintf(stderr, "bench_pfr: %s\n", remat_last_error());
    }
    remat_fit_options o = remat_fit_defaults();
    o.method = method, o.adaptive = false, o.dt = dt, o.y0 = y0;
    remat_fit *fit = NULL;
    if (!fail && (remat_fit_new(m, FIT_E, d, &o, &fit) != REMAT_OK ||
                  remat_fit_objective(fit, fit_k_eval, obj) != REMAT_OK))
        fail = fprintf(stderr, "bench_pfr: fit: %s\n", remat_last_error());
    remat_fit_free(fit);
    for (int e = 0; e < FIT_E; e++) {
        remat_dataset_free(d[e]);
        remove(path[e]);
    }
    rmdir(dir);
    return fail != 0;
}

/* ---- the CVODES sweep ---- */

#define MAX_SWEEP 32

typedef struct {
    int n;
    double rtol[MAX_SWEEP];
    double err[2][MAX_SWEEP];
    double g[2][MAX_SWEEP][2];
    long steps_f[2][MAX_SWEEP], steps_b[2][MAX_SWEEP];
    int checkpoints[2][MAX_SWEEP];
    variant *timed[2][MAX_SWEEP]; /* the timed variant at this rtol, if any row matched it */
} sweep;

#ifdef HAVE_CVODES
static int run_sweep(sweep *s, const context *cx, const double g_exact[2])
{
    for (int kd = 0; kd < PFR_CV_KIND_COUNT; kd++)
        for (int i = 0; i < s->n; i++) {
            variant v = {.kind = V_CVODES, .k = {cx->fit ? fit_k_eval[0] : seed_k[0], cx->fit ? fit_k_eval[1] : seed_k[1]}};
            v.cv = pfr_cv_new((pfr_cv_kind)kd, s->rtol[i]);
            if (!v.cv || run_variant(&v, cx)) {
                free_variant(&v);
                return 1;
            }
            s->err[kd][i] = abs_err(v.g, g_exact);
            memcpy(s->g[kd][i], v.g, sizeof v.g);
            s->steps_f[kd][i] = (long)v.steps, s->steps_b[kd][i] = v.steps_b;
            s->checkpoints[kd][i] = v.checkpoints;
            free_variant(&v);
        }
    return 0;
}

/* the loosest rtol with error <= target there and at every tighter rtol */
static int match(const sweep *s, int kd, double target)
{
    int best = -1;
    for (int i = s->n - 1; i >= 0 && s->err[kd][i] <= target; i--)
        best = i;
    return best;
}
#endif

/* ---- one problem ---- */

typedef struct {
    remat_ode_method method;
    int64_t steps; /* seed */
    double dt;     /* fit */
} disc;

/* fit.h's rule for a method without a hand adjoint (rodas5): ode.h's
 * store-all objective and remat_fit_objective at the same dt, against the
 * exact loss; one JSON row each (after the first row of the results) */
static int fit_dense_check(const context *cx, const remat_mechanism *m, const disc *ds, int n_ds)
{
    double loss_exact, g[2];
    experiment x[FIT_E];
    fit_setup(x, &loss_exact, g);
    int fail = 0;
    for (int d = 0; d < n_ds && !fail; d++) {
        variant v = {.kind = V_REMAT, .problem = "fit-objective", .api = "ode.h", .method = ds[d].method,
                     .schedule = "store-all", .dt = ds[d].dt, .k = {fit_k_eval[0], fit_k_eval[1]}};
        double obj = 0;
        if (build_remat(&v, m, cx) || run_variant(&v, cx) || fit_library_objective(m, x, ds[d].method, ds[d].dt, &obj))
            fail = 1;
        bool own = !fail && fit_takes_own_dense(x, ds[d].method, ds[d].dt);
        double err_fit = fabs(obj - loss_exact), err_ode = fabs(v.loss - loss_exact);
        bool ok = !fail && (!own ? fabs(obj - v.loss) <= 1e-12 * fabs(obj)
                                 : err_fit <= FIT_DENSE_ERR_FACTOR * err_ode + 1e-12 * fabs(obj));
        if (!fail)
            printf(",\n  {\"problem\":\"fit-objective\", \"impl\":\"remat\", \"api\":\"fit.h\", \"method\":\"%s\", "
                   "\"dt\":%g, \"loss\":%.17g, \"fit_objective\":%.17g, \"fit_dense_rows\":%s, "
                   "\"exact_loss_err\":%.3e, \"fit_exact_loss_err\":%.3e, \"ok\":%s}",
                   remat_ode_method_name(ds[d].method), ds[d].dt, v.loss, obj, own ? "true" : "false", err_ode,
                   err_fit, ok ? "true" : "false");
        if (!fail && !ok) {
            fprintf(stderr, "bench_pfr: fit %s dt %g: exact-loss error %.3e, ode.h's %.3e (%s)\n",
                    remat_ode_method_name(ds[d].method), ds[d].dt, err_fit, err_ode,
                    own ? "dense rows: within FIT_DENSE_ERR_FACTOR of ode.h's" : "must be equal to 1e-12");
            fail = 1;
        }
        free_variant(&v);
    }
    return fail;
}

static const char *sched_names[] = {"store-all", "binomial:10"};
#define N_SCHED 2
/* the ode.h variants: each schedule, then (fit only) store-all with
 * keep_interval_stores, which skips the re-run of each interval before its
 * reverse (remat/ode.h) */
#define N_ODE (N_SCHED + 1)

static void print_grad(const double g[2]) { printf("[%.17g, %.17g]", g[0], g[1]); }

static bool first_row = true;

static int bench_problem(const context *cx, const remat_mechanism *m, const disc *ds, int n_ds, const sweep *sw_in)
{
    const char *problem = cx->fit ? "fit-objective" : "seed-pfr";
    const double *k = cx->fit ? fit_k_eval : seed_k;
    int fail = 0;
    double g_exact[2], loss_exact;
    if (!cx->fit) {
        seed_exact_grad(seed_k[0], seed_k[1], seed_L, g_exact);
        double complex y[3], yc[3];
        exact_state(seed_y0, seed_k[0], seed_k[1], seed_L, y);
        loss_exact = -creal(y[1]);
        exact_state(seed_y0, seed_k[0] + I * CSTEP, seed_k[1], seed_L, y);
        exact_state(seed_y0, seed_k[0], seed_k[1] + I * CSTEP, seed_L, yc);
        double gc[2] = {-cimag(y[1]) / CSTEP, -cimag(yc[1]) / CSTEP};
        if (rel_diff(gc, g_exact, 2) > 1e-12) {
            fprintf(stderr, "bench_pfr: seed: analytic gradient (%.17g, %.17g) != complex step (%.17g, %.17g)\n",
                    g_exact[0], g_exact[1], gc[0], gc[1]);
            fail = 1;
        }
    } else {
        experiment x[FIT_E];
        fit_setup(x, &loss_exact, g_exact);
    }

    /* variants: per discretisation the remat schedules (+ pfr.h and problems.h
     * for the seed's Euler) and one hand adjoint; then the matched CVODES ones */
    /* per discretisation d, vs[d * PER + ...]: */
    enum { OFF_PFR = N_ODE, OFF_PROB = N_ODE + 1, OFF_HAND = N_ODE + 1 + N_SCHED, PER = N_ODE + 2 + N_SCHED };
    const int per = PER;
    int cap = n_ds * per + 2 * MAX_SWEEP;
    variant *vs = calloc((size_t)cap, sizeof *vs);
    variant **all = calloc((size_t)cap, sizeof *all);
    int nv = 0;
    for (int d = 0; d < n_ds; d++) {
        for (int s = 0; s < (cx->fit ? N_ODE : N_SCHED); s++) {
            variant *v = &vs[d * per + s];
            *v = (variant){.kind = V_REMAT, .problem = problem, .api = "ode.h", .method = ds[d].method,
                           .schedule = sched_names[s < N_SCHED ? s : 0], .keep = s == N_SCHED,
                           .steps = ds[d].steps, .dt = ds[d].dt, .k = {k[0], k[1]}};
            if (build_remat(v, m, cx))
                return 1;
            all[nv++] = v;
        }
        if (!cx->fit && ds[d].method == REMAT_ODE_EULER) {
            variant *v = &vs[d * per + OFF_PFR];
            *v = (variant){.kind = V_PFR, .problem = problem, .api = "pfr.h", .method = ds[d].method,
                           .schedule = "store-all", .steps = ds[d].steps, .k = {k[0], k[1]}};
            if (build_pfr(v, m))
                return 1;
            all[nv++] = v;
            for (int s = 0; s < N_SCHED; s++) {
                v = &vs[d * per + OFF_PROB + s];
                *v = (variant){.kind = V_PROBLEM, .problem = problem, .api = "problems.h:pfr-euler",
                               .method = ds[d].method, .schedule = sched_names[s], .steps = ds[d].steps,
                               .k = {k[0], k[1]}};
                if (build_problem(v))
                    return 1;
                all[nv++] = v;
            }
        }
        variant *h = &vs[d * per + OFF_HAND];
        *h = (variant){.problem = problem, .method = ds[d].method, .schedule = "store-all", .steps = ds[d].steps,
                       .dt = ds[d].dt, .k = {k[0], k[1]}};
        if (build_hand(h, cx))
            return 1;
        all[nv++] = h;
    }
    for (int i = 0; i < nv; i++) { /* one run each: the gradients for the checks and the matching */
        if (run_variant(all[i], cx))
            return 1;
        all[i]->err = abs_err(all[i]->g, g_exact);
    }

    /* checks against the hand adjoint, store-all and the library's own paths */
    for (int d = 0; d < n_ds; d++) {
        variant *sa = &vs[d * per], *hand = &vs[d * per + OFF_HAND];
        for (int i = 0; i < OFF_HAND; i++) {
            variant *v = &vs[d * per + i];
            if (v->kind == V_NONE)
                continue;
            double lv[3] = {v->loss, v->g[0], v->g[1]}, lh[3] = {hand->loss, hand->g[0], hand->g[1]};
            if (rel_diff(lv, lh, 3) > TOL_HAND) {
                fprintf(stderr, "bench_pfr: %s %s %s: remat (%.17g; %.17g, %.17g) vs hand (%.17g; %.17g, %.17g)\n",
                        problem, remat_ode_method_name(v->method), v->schedule, lv[0], lv[1], lv[2], lh[0], lh[1],
                        lh[2]);
                fail = 1;
            }
            const variant *ref = i < N_ODE ? sa : i >= OFF_PROB ? &vs[d * per + OFF_PROB] : NULL;
            if (ref && ref != v && (v->loss != ref->loss || memcmp(v->g, ref->g, sizeof v->g))) {
                fprintf(stderr, "bench_pfr: %s %s %s: not bitwise equal to store-all\n", problem,
                        remat_ode_method_name(v->method), v->schedule);
                fail = 1;
            }
        }
        variant *p = &vs[d * per + OFF_PFR];
        if (p->kind == V_PFR && (p->loss != sa->loss || rel_diff(p->g, sa->g, 2) > 1e-13)) {
            fprintf(stderr, "bench_pfr: pfr.h (%.17g; %.17g, %.17g) != ode.h (%.17g; %.17g, %.17g)\n", p->loss,
                    p->g[0], p->g[1], sa->loss, sa->g[0], sa->g[1]);
            fail = 1;
        }
        if (hand->kind == V_HAND_EULER) { /* bench_scan's Euler against the generic tableau one */
            int64_t n = hand->steps;
            double hh = hand->h, g[2];
            pfr_hand_rk_problem rk = {.method = PFR_HAND_EULER, .n_int = 1, .steps = &n, .h = &hh};
            rk.work = malloc(sizeof(double) * pfr_hand_rk_work_doubles(&rk));
            double l = pfr_hand_rk(&rk, seed_y0, k[0], k[1], g);
            free(rk.work);
            double a[3] = {l, g[0], g[1]}, b[3] = {hand->loss, hand->g[0], hand->g[1]};
            if (rel_diff(a, b, 3) > 1e-12) {
                fprintf(stderr, "bench_pfr: hand Euler and hand tableau Euler disagree\n");
                fail = 1;
            }
        }
        if (cx->fit) {
            double obj;
            if (fit_library_objective(m, cx->fit, ds[d].method, ds[d].dt, &obj))
                return 1;
            sa->fit_obj = obj;
            sa->fit_own_dense = fit_takes_own_dense(cx->fit, ds[d].method, ds[d].dt);
            double err_fit = fabs(obj - loss_exact), err_ode = fabs(sa->loss - loss_exact);
            if (!sa->fit_own_dense ? fabs(obj - sa->loss) > 1e-12 * fabs(obj)
                                   : err_fit > FIT_DENSE_ERR_FACTOR * err_ode + 1e-12 * fabs(obj)) {
                fprintf(stderr,
                        "bench_pfr: fit %s dt %g: objective %.17g, remat_fit_objective %.17g (%s; exact loss "
                        "%.17g)\n",
                        remat_ode_method_name(ds[d].method), ds[d].dt, sa->loss, obj,
                        sa->fit_own_dense ? "dense rows: its error must stay within FIT_DENSE_ERR_FACTOR of ode.h's"
                                          : "must be equal to 1e-12",
                        loss_exact);
                fail = 1;
            }
        }
    }

    /* CVODES: sweep, match, and time the matched ones with the rest */
#ifdef HAVE_CVODES
    sweep sw = *sw_in;
    if (run_sweep(&sw, cx, g_exact))
        return 1;
    for (int kd = 0; kd < PFR_CV_KIND_COUNT; kd++)
        if (sw.err[kd][sw.n - 1] > TOL_CVODES_TIGHT) {
            fprintf(stderr, "bench_pfr: %s: cvodes %s at rtol %g: gradient error %g\n", problem,
                    pfr_cv_kind_name((pfr_cv_kind)kd), sw.rtol[sw.n - 1], sw.err[kd][sw.n - 1]);
            fail = 1;
        }
    int n_remat = nv, next = n_ds * per; /* the timed CVODES variants follow the others in vs */
    for (int i = 0; i < n_remat; i++) {
        variant *v = all[i];
        v->match[0] = v->match[1] = -1;
        if (is_remat(v))
            for (int kd = 0; kd < PFR_CV_KIND_COUNT; kd++)
                v->match[kd] = match(&sw, kd, v->err);
    }
    for (int i = 0; i < n_remat; i++)
        for (int kd = 0; kd < PFR_CV_KIND_COUNT; kd++) {
            int j = all[i]->match[kd];
            if (j < 0 || sw.timed[kd][j])
                continue;
            variant *c = &vs[next++];
            *c = (variant){.kind = V_CVODES, .problem = problem, .k = {k[0], k[1]}, .cv_kind = (pfr_cv_kind)kd,
                           .sweep_index = j};
            c->cv = pfr_cv_new((pfr_cv_kind)kd, sw.rtol[j]);
            if (!c->cv)
                return 1;
            sw.timed[kd][j] = c;
            all[nv++] = c;
        }
#endif
    if (time_group(all, nv, cx))
        return 1;

    /* rows */
    for (int d = 0; d < n_ds; d++) {
        variant *hand = &vs[d * per + OFF_HAND];
        double hand_ms = bench_median(hand->timing.samples, cx->rounds);
        for (int i = 0; i < OFF_HAND; i++) {
            variant *v = &vs[d * per + i];
            if (!is_remat(v))
                continue;
            double ms = bench_median(v->timing.samples, cx->rounds);
            printf("%s\n  {\"problem\":\"%s\", \"impl\":\"remat\", \"api\":\"%s\", \"method\":\"%s\", "
                   "\"schedule\":\"%s\", \"keep_interval_stores\":%s, \"steps\":%lld, \"dt\":",
                   first_row ? "" : ",", problem, v->api, remat_ode_method_name(v->method), v->schedule,
                   v->keep ? "true" : "false", (long long)hand->steps);
            first_row = false;
            if (cx->fit)
                printf("%g", v->dt);
            else
                printf("%.6g", seed_L / (double)v->steps);
            printf(", \"median_ms\":%.5f, \"loss\":%.17g, ", ms, v->loss);
            if (cx->fit && i == 0)
                printf("\"fit_objective\":%.17g, \"fit_dense_rows\":%s, ", v->fit_obj,
                       v->fit_own_dense ? "true" : "false");
            printf("\"grad\":");
            print_grad(v->g);
            printf(", \"grad_abs_err\":%.3e, \"hand_ms\":%.5f, \"vs_hand_ratio\":%.3f, "
                   "\"vs_hand_ratio_paired\":%.3f, \"hand_grad_rel_diff\":%.2e",
                   v->err, hand_ms, ms / hand_ms, paired(v, hand, cx->rounds), rel_diff(v->g, hand->g, 2));
            variant *best = NULL;
#ifdef HAVE_CVODES
            for (int kd = 0; kd < PFR_CV_KIND_COUNT; kd++) {
                int j = v->match[kd];
                if (j < 0)
                    continue;
                variant *c = sw.timed[kd][j];
                if (!best || bench_median(c->timing.samples, cx->rounds) < bench_median(best->timing.samples, cx->rounds))
                    best = c;
            }
#endif
            if (best) {
#ifdef HAVE_CVODES
                double cms = bench_median(best->timing.samples, cx->rounds);
                printf(", \"cvodes_method\":\"%s\", \"cvodes_rtol\":%.1e, \"cvodes_ms\":%.5f, "
                       "\"cvodes_grad_abs_err\":%.3e, \"vs_cvodes_ratio\":%.3f, \"vs_cvodes_ratio_paired\":%.3f}",
                       pfr_cv_kind_name(best->cv_kind), sw.rtol[best->sweep_index], cms,
                       sw.err[best->cv_kind][best->sweep_index], ms / cms, paired(v, best, cx->rounds));
#endif
            } else {
                printf(", \"cvodes_method\":null, \"cvodes_rtol\":null, \"cvodes_ms\":null, "
                       "\"cvodes_grad_abs_err\":null, \"vs_cvodes_ratio\":null, \"cvodes_note\":\"%s\"}",
#ifdef HAVE_CVODES
                       "no rtol of the sweep reaches this accuracy"
#else
                       "not built: SUNDIALS not found at configure time"
#endif
                );
            }
        }
        printf(",\n  {\"problem\":\"%s\", \"impl\":\"hand\", \"api\":null, \"method\":\"%s\", \"schedule\":\"store-all\", "
               "\"steps\":%lld, \"median_ms\":%.5f, \"loss\":%.17g, \"grad\":",
               problem, remat_ode_method_name(hand->method), (long long)hand->steps, hand_ms, hand->loss);
        print_grad(hand->g);
        printf(", \"grad_abs_err\":%.3e}", hand->err);
    }
#ifdef HAVE_CVODES
    for (int kd = 0; kd < PFR_CV_KIND_COUNT; kd++)
        for (int j = 0; j < sw.n; j++) {
            variant *c = sw.timed[kd][j];
            if (!c)
                continue;
            printf(",\n  {\"problem\":\"%s\", \"impl\":\"cvodes\", \"api\":null, \"method\":\"%s\", "
                   "\"schedule\":\"hermite, checkpoint every %d steps\", \"checkpoints\":%d, \"steps\":%ld, "
                   "\"steps_backward\":%ld, "
                   "\"cvodes_rtol\":%.1e, \"median_ms\":%.5f, \"loss\":%.17g, \"grad\":",
                   problem, pfr_cv_kind_name((pfr_cv_kind)kd), PFR_CV_CHECKPOINT_STEPS, sw.checkpoints[kd][j], sw.steps_f[kd][j],
                   sw.steps_b[kd][j], sw.rtol[j], bench_median(c->timing.samples, cx->rounds), c->loss);
            print_grad(c->g);
            printf(", \"grad_abs_err\":%.3e}", sw.err[kd][j]);
        }
#endif
    /* the exact gradient and the sweep, as one row each */
    printf(",\n  {\"problem\":\"%s\", \"impl\":\"exact\", \"loss\":%.17g, \"grad\":", problem, loss_exact);
    print_grad(g_exact);
    printf(", \"k\":");
    print_grad(k);
    printf("}");
#ifdef HAVE_CVODES
    printf(",\n  {\"problem\":\"%s\", \"impl\":\"cvodes-sweep\", \"rtol\":[", problem);
    for (int j = 0; j < sw.n; j++)
        printf("%s%.1e", j ? ", " : "", sw.rtol[j]);
    for (int kd = 0; kd < PFR_CV_KIND_COUNT; kd++) {
        printf("], \"%s_grad_abs_err\":[", pfr_cv_kind_name((pfr_cv_kind)kd));
        for (int j = 0; j < sw.n; j++)
            printf("%s%.2e", j ? ", " : "", sw.err[kd][j]);
        printf("], \"%s_steps\":[", pfr_cv_kind_name((pfr_cv_kind)kd));
        for (int j = 0; j < sw.n; j++)
            printf("%s%ld", j ? ", " : "", sw.steps_f[kd][j]);
    }
    printf("]}");
#endif
    for (int i = 0; i < cap; i++)
        free_variant(&vs[i]);
    free(vs);
    free(all);
    return fail;
}

int main(int argc, char **argv)
{
    setenv("REMAT_JIT", "always", 0); /* time the compiled loops, compiled before the clock starts */
    context cx = {.rounds = 21, .sample_ns = 2e6};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--smoke"))
            cx.smoke = true, cx.rounds = 2, cx.sample_ns = 5e4;
        else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
            cx.rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--sample-ms") && i + 1 < argc)
            cx.sample_ns = 1e6 * atof(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--smoke] [--rounds R] [--sample-ms MS]\n", argv[0]);
            return 2;
        }
    }
    if (cx.rounds < 1 || cx.sample_ns <= 0)
        return fprintf(stderr, "bench_pfr: need rounds >= 1 and sample-ms > 0\n"), 2;
    remat_mechanism *m = seed_mechanism();
    if (!m)
        return 1;

    static const disc seed_full[] = {{REMAT_ODE_EULER, 1000, 0}, {REMAT_ODE_RK4, 20, 0}, {REMAT_ODE_RK4, 50, 0},
                                     {REMAT_ODE_RK4, 100, 0},    {REMAT_ODE_TSIT5, 10, 0}, {REMAT_ODE_TSIT5, 20, 0},
                                     {REMAT_ODE_TSIT5, 50, 0}};
    static const disc seed_smoke[] = {{REMAT_ODE_EULER, 100, 0}, {REMAT_ODE_RK4, 20, 0}, {REMAT_ODE_TSIT5, 10, 0}};
    static const disc fit_full[] = {{REMAT_ODE_EULER, 0, 0.01}, {REMAT_ODE_RK4, 0, 0.5}, {REMAT_ODE_RK4, 0, 0.2},
                                    {REMAT_ODE_RK4, 0, 0.1},    {REMAT_ODE_TSIT5, 0, 0.6}, {REMAT_ODE_TSIT5, 0, 0.3},
                                    {REMAT_ODE_TSIT5, 0, 0.1}};
    /* tsit5 dt 0.1: every row on the grid (fit.h's check at 1e-12) */
    static const disc fit_smoke[] = {{REMAT_ODE_EULER, 0, 0.1}, {REMAT_ODE_RK4, 0, 0.5}, {REMAT_ODE_TSIT5, 0, 0.6},
                                     {REMAT_ODE_TSIT5, 0, 0.1}};

    sweep sw = {0};
    for (int j = 0; cx.smoke ? j <= 16 : j <= 22; j += cx.smoke ? 4 : 1) /* 1e-1 .. 1e-12 (smoke: 1e-1 .. 1e-9) */
        sw.rtol[sw.n++] = pow(10.0, -1.0 - 0.5 * j);

    printf("{\"bench\":\"pfr\", \"smoke\":%s, \"rounds\":%d, \"time\":\"thread CPU, median over rounds\", ",
           cx.smoke ? "true" : "false", cx.rounds);
#ifdef HAVE_CVODES
    printf("\"cvodes\":{\"built\":true, \"sundials_version\":\"%s\", \"atol_per_rtol\":%g, "
           "\"checkpoint_steps\":%d, \"interpolation\":\"hermite\", \"match\":\"loosest rtol with grad_abs_err <= "
           "remat's at it and every tighter rtol\"}, ",
           pfr_cv_version(), PFR_CV_ATOL_PER_RTOL, PFR_CV_CHECKPOINT_STEPS);
#else
    printf("\"cvodes\":{\"built\":false, \"why\":\"SUNDIALS not found at configure time: no CVODES rows\"}, ");
#endif
    printf("\"results\":[");
    int fail = 0;
    fail |= bench_problem(&cx, m, cx.smoke ? seed_smoke : seed_full,
                          cx.smoke ? 3 : (int)(sizeof seed_full / sizeof seed_full[0]), &sw);
    experiment x[FIT_E];
    double l, g[2];
    fit_setup(x, &l, g);
    cx.fit = x;
    int n_fit = (int)(cx.smoke ? sizeof fit_smoke / sizeof fit_smoke[0] : sizeof fit_full / sizeof fit_full[0]);
    fail |= bench_problem(&cx, m, cx.smoke ? fit_smoke : fit_full, n_fit, &sw);
    /* rodas5's rows off the grid (dt 0.6, 0.3) from its own dense output, on it (0.1) the step ends */
    static const disc fit_rodas[] = {{REMAT_ODE_RODAS5, 0, 0.6}, {REMAT_ODE_RODAS5, 0, 0.3},
                                     {REMAT_ODE_RODAS5, 0, 0.1}};
    fail |= fit_dense_check(&cx, m, fit_rodas, cx.smoke ? 1 : 3);
    printf("\n], \"ok\":%s}\n", fail ? "false" : "true");
    remat_mechanism_free(m);
    return fail;
}

/*
 * bench_adaptive.c — adaptive Tsit5 (remat/ode.h, opt.adaptive) against
 * SUNDIALS CVODES's checkpointed adjoint (pfr_cvodes.c) at matched
 * accuracy, on the gradients issue 10 names:
 *
 *   seed   A->B->C (k = 1, 0.5), y0 = (1, 0, 0), J = -C_B(10)
 *   fit3   three experiments (y0 = (1,0,0), (0.5,0.5,0), (2,0,0.1)), six
 *          data times each in (0, 8], data the closed form at k = (1, 0.5),
 *          J = sum |y(t_k) - d_k|^2 at k = (0.7, 0.6)
 *
 * The exact gradient comes from the closed form by complex step. Each side
 * sweeps its tolerance (remat: rtol 1e-3..1e-11, atol = 1e-3 rtol; CVODES:
 * Adams, its own atol = 1e-3 rtol); for each accuracy target (largest
 * relative gradient error) the loosest tolerance meeting it is timed, remat
 * and CVODES round-robin, thread CPU time, median of the rounds.
 *
 *   taskset -c 1 env OPENBLAS_NUM_THREADS=1 ./build/bench/bench_adaptive [--rounds N] [--smoke]
 *
 * One JSON document on stdout: the sweeps (rtol, gradient error, steps) and,
 * per problem and target, both sides' rtol, median ms and the ratio.
 */
#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "remat/remat.h"
#ifdef HAVE_CVODES
#include "pfr_cvodes.h"
#endif

#define NE 3
#define NT 6
#define NRT 9

static const double rtols[NRT] = {1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10, 1e-11};
static const double targets[] = {1e-4, 1e-6, 1e-8};
static const double ks_true[2] = {1.0, 0.5}, ks_eval[2] = {0.7, 0.6};

typedef struct {
    const char *name;
    int n_exp, n_times;
    double y0[NE][3], t[NT], data[NE][NT * 3];
    int fit; /* 0: J = -C_B(t_last) of experiment 0 */
    double k[2], g_exact[2];
} problem;

static void exact_state(const double *y0, double complex k1, double complex k2, double t, double complex *y)
{
    double complex e1 = cexp(-k1 * t), e2 = cexp(-k2 * t);
    y[0] = y0[0] * e1;
    y[1] = y0[1] * e2 + y0[0] * k1 / (k2 - k1) * (e1 - e2);
    y[2] = y0[0] + y0[1] + y0[2] - y[0] - y[1];
}

static double complex exact_loss(const problem *p, double complex k1, double complex k2)
{
    double complex J = 0, y[3];
    if (!p->fit) {
        exact_state(p->y0[0], k1, k2, p->t[p->n_times - 1], y);
        return -y[1];
    }
    for (int e = 0; e < p->n_exp; e++)
        for (int i = 0; i < p->n_times; i++) {
            exact_state(p->y0[e], k1, k2, p->t[i], y);
            for (int s = 0; s < 3; s++)
                J += (y[s] - p->data[e][i * 3 + s]) * (y[s] - p->data[e][i * 3 + s]);
        }
    return J;
}

static void setup(problem *p, int fit)
{
    static const double y0s[NE][3] = {{1, 0, 0}, {0.5, 0.5, 0}, {2, 0, 0.1}};
    static const double ts[NT] = {0.5, 1.2, 2.0, 3.5, 5.0, 8.0};
    memset(p, 0, sizeof *p);
    p->fit = fit;
    p->name = fit ? "fit3" : "seed";
    p->n_exp = fit ? NE : 1;
    p->n_times = fit ? NT : 1;
    memcpy(p->y0, y0s, sizeof y0s);
    if (fit)
        memcpy(p->t, ts, sizeof ts);
    else
        p->t[0] = 10.0;
    for (int e = 0; e < p->n_exp; e++)
        for (int i = 0; i < p->n_times; i++) {
            double complex y[3];
            exact_state(p->y0[e], ks_true[0], ks_true[1], p->t[i], y);
            for (int s = 0; s < 3; s++)
                p->data[e][i * 3 + s] = creal(y[s]);
        }
    memcpy(p->k, fit ? ks_eval : ks_true, sizeof p->k);
    const double h = 1e-30; /* complex step: exact to rounding */
    p->g_exact[0] = cimag(exact_loss(p, p->k[0] + I * h, p->k[1])) / h;
    p->g_exact[1] = cimag(exact_loss(p, p->k[0], p->k[1] + I * h)) / h;
}

static double grad_err(const problem *p, const double g[2])
{
    double scale = fmax(fabs(p->g_exact[0]), fabs(p->g_exact[1]));
    return fmax(fabs(g[0] - p->g_exact[0]), fabs(g[1] - p->g_exact[1])) / scale;
}

/* value_and_grad of J w.r.t. k, adaptive Tsit5 at rtol (atol 1e-3 rtol) */
typedef struct {
    remat_fn *f, *g;
    remat_program *prog;
    double J, grad[2], stats[REMAT_ODE_STATS];
} remat_side;

static int remat_build(remat_side *r, const remat_mechanism *m, const problem *p, double rtol)
{
    memset(r, 0, sizeof *r);
    r->f = remat_fn_new("J");
    remat_val k = remat_arg(r->f, "k", REMAT_F64, 1, ((int64_t[]){2}));
    remat_val J = REMAT_NONE, stats = REMAT_NONE;
    remat_ode_options o = {.method = REMAT_ODE_TSIT5, .n_times = p->n_times, .times = p->t, .adaptive = true,
                           .rtol = rtol, .atol = 1e-3 * rtol};
    for (int e = 0; e < p->n_exp; e++) {
        remat_val y0 = remat_const_data(r->f, REMAT_F64, 1, ((int64_t[]){3}), p->y0[e]), ys, sv;
        if (remat_ode_integrate_stats(r->f, m, &o, y0, k, &ys, &sv) != REMAT_OK)
            return fprintf(stderr, "bench_adaptive: %s\n", remat_last_error()), 1;
        remat_val term;
        if (p->fit) {
            remat_val d = remat_const_data(r->f, REMAT_F64, 2, ((int64_t[]){p->n_times, 3}), p->data[e]);
            term = remat_sum_all(r->f, remat_square(r->f, remat_sub(r->f, ys, d)));
        } else {
            term = remat_neg(r->f, remat_index(r->f, remat_index(r->f, ys, p->n_times - 1), 1));
        }
        J = e ? remat_add(r->f, J, term) : term;
        stats = e ? remat_add(r->f, stats, sv) : sv;
    }
    remat_fn_output(r->f, J);
    remat_fn_output(r->f, stats);
    if (remat_vjp(r->f, 1, (int[]){0}, &r->g) != REMAT_OK || remat_compile(r->g, remat_backend_cpu(), &r->prog))
        return fprintf(stderr, "bench_adaptive: %s\n", remat_last_error()), 1;
    return 0;
}

static int remat_run_once(remat_side *r, const problem *p)
{
    double one = 1.0, zero[REMAT_ODE_STATS] = {0};
    remat_tensor in[3] = {remat_tensor_f64((double *)p->k, 1, ((int64_t[]){2})), remat_tensor_f64(&one, 0, NULL),
                          remat_tensor_f64(zero, 1, ((int64_t[]){REMAT_ODE_STATS}))};
    remat_tensor out[3] = {remat_tensor_f64(&r->J, 0, NULL),
                           remat_tensor_f64(r->stats, 1, ((int64_t[]){REMAT_ODE_STATS})),
                           remat_tensor_f64(r->grad, 1, ((int64_t[]){2}))};
    return remat_run(r->prog, 3, in, 3, out, NULL) != REMAT_OK;
}

static void remat_free_side(remat_side *r)
{
    remat_program_free(r->prog);
    remat_fn_free(r->g);
    remat_fn_free(r->f);
}

#ifdef HAVE_CVODES
typedef struct {
    pfr_cv *cv;
    double J, grad[2];
    long fwd, bwd;
} cv_side;

static int cv_run_once(cv_side *c, const problem *p)
{
    double J = 0, g[2] = {0, 0};
    for (int e = 0; e < p->n_exp; e++) {
        double Je, ge[2];
        if (pfr_cv_grad(c->cv, p->y0[e], p->k[0], p->k[1], p->n_times, p->t, p->fit ? p->data[e] : NULL, &Je, ge))
            return 1;
        J += Je, g[0] += ge[0], g[1] += ge[1];
    }
    c->J = J, c->grad[0] = g[0], c->grad[1] = g[1];
    return 0;
}
#endif

typedef struct {
    remat_side *r;
#ifdef HAVE_CVODES
    cv_side *c;
#endif
    const problem *p;
} timed_pair;

static int run_pair(void *ctx, int i, bool first)
{
    (void)first;
    timed_pair *t = ctx;
#ifdef HAVE_CVODES
    if (i == 1)
        return cv_run_once(t->c, t->p);
#else
    (void)i;
#endif
    return remat_run_once(t->r, t->p);
}

static int bench_problem(const remat_mechanism *m, int fit, int rounds, int n_rt, bool *first)
{
    problem p;
    setup(&p, fit);
    double rerr[NRT], cerr[NRT] = {0};
    printf("%s{\"problem\": \"%s\", \"grad_exact\": [%.17g, %.17g],\n  \"sweep\": [", *first ? "" : ",\n ",
           p.name, p.g_exact[0], p.g_exact[1]);
    *first = false;
    for (int i = 0; i < n_rt; i++) {
        remat_side r;
        if (remat_build(&r, m, &p, rtols[i]) || remat_run_once(&r, &p))
            return 1;
        rerr[i] = grad_err(&p, r.grad);
        printf("%s\n    {\"rtol\": %.0e, \"remat_grad_rel_err\": %.3e, \"remat_accepted\": %.0f, "
               "\"remat_rejected\": %.0f",
               i ? "," : "", rtols[i], rerr[i], r.stats[REMAT_ODE_STAT_ACCEPTED], r.stats[REMAT_ODE_STAT_REJECTED]);
        remat_free_side(&r);
#ifdef HAVE_CVODES
        cv_side c = {.cv = pfr_cv_new(PFR_CV_ADAMS, rtols[i])};
        if (!c.cv || cv_run_once(&c, &p))
            return 1;
        int ck;
        pfr_cv_steps(c.cv, &c.fwd, &c.bwd, &ck);
        cerr[i] = grad_err(&p, c.grad);
        printf(", \"cvodes_grad_rel_err\": %.3e, \"cvodes_steps_last_experiment\": [%ld, %ld]", cerr[i], c.fwd, c.bwd);
        pfr_cv_free(c.cv);
#endif
        printf("}");
    }
    printf("],\n  \"matched\": [");
    for (size_t ti = 0; ti < sizeof targets / sizeof targets[0]; ti++) {
        int ir = -1, ic = -1;
        for (int i = 0; i < n_rt && ir < 0; i++)
            if (rerr[i] <= targets[ti])
                ir = i;
#ifdef HAVE_CVODES
        for (int i = 0; i < n_rt && ic < 0; i++)
            if (cerr[i] <= targets[ti])
                ic = i;
#endif
        printf("%s\n    {\"target\": %.0e", ti ? "," : "", targets[ti]);
        if (ir < 0) {
            printf(", \"remat\": null}");
            continue;
        }
        remat_side r;
        if (remat_build(&r, m, &p, rtols[ir]))
            return 1;
        timed_pair tp = {.r = &r, .p = &p};
        bench_timing tr = {0}, tc = {0};
        bench_timing *tt[2] = {&tr, &tc};
        int n = 1;
#ifdef HAVE_CVODES
        cv_side c = {.cv = ic >= 0 ? pfr_cv_new(PFR_CV_ADAMS, rtols[ic]) : NULL};
        tp.c = &c;
        n = c.cv ? 2 : 1;
#endif
        if (bench_time_round_robin(n, tt, run_pair, &tp, rounds, 2e6, false))
            return 1;
        double rm = bench_median(tr.samples, rounds);
        printf(", \"remat_rtol\": %.0e, \"remat_ms\": %.5f", rtols[ir], rm);
        if (n == 2) {
            double cm = bench_median(tc.samples, rounds);
            printf(", \"cvodes_rtol\": %.0e, \"cvodes_ms\": %.5f, \"remat_over_cvodes\": %.3f, "
                   "\"remat_over_cvodes_paired\": %.3f",
                   rtols[ic], cm, rm / cm, bench_paired_ratio(tr.samples, tc.samples, rounds));
        } else {
            printf(", \"cvodes\": null");
        }
        printf("}");
#ifdef HAVE_CVODES
        pfr_cv_free(c.cv);
#endif
        free(tr.samples);
        free(tc.samples);
        remat_free_side(&r);
    }
    printf("]}");
    return 0;
}

int main(int argc, char **argv)
{
    int rounds = 15, smoke = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--smoke"))
            smoke = 1, rounds = 3;
        else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else
            return fprintf(stderr, "usage: bench_adaptive [--rounds N] [--smoke]\n"), 2;
    }
    remat_mechanism *m;
    if (remat_mechanism_parse_string("A -> B : k1\nB -> C : k2\nparam k1 = 1.0\nparam k2 = 0.5", "A->B->C", &m))
        return fprintf(stderr, "bench_adaptive: %s\n", remat_last_error()), 1;
    printf("{\"bench\": \"adaptive\", \"method\": \"tsit5\", \"atol_per_rtol\": 1e-3, \"rounds\": %d, ", rounds);
#ifdef HAVE_CVODES
    printf("\"cvodes\": {\"built\": true, \"version\": \"%s\", \"kind\": \"%s\"},\n \"problems\": [", pfr_cv_version(),
           pfr_cv_kind_name(PFR_CV_ADAMS));
#else
    printf("\"cvodes\": {\"built\": false, \"why\": \"SUNDIALS not found when configured\"},\n \"problems\": [");
#endif
    bool first = true;
    int rc = bench_problem(m, 0, rounds, smoke ? 3 : NRT, &first) || bench_problem(m, 1, rounds, smoke ? 3 : NRT, &first);
    printf("]}\n");
    remat_mechanism_free(m);
    return rc;
}

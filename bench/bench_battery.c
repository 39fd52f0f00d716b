/*
 * bench_battery.c — every optimizer of remat/fit.h on every problem of the
 * fitting battery (bench/battery/, one .mech per problem: published kinetics estimation
 * problems with their data and reported optima; sources in its README.md),
 * from the declared start values and from K seeded random starts.
 *
 * A run succeeds when remat_fit_run returns REMAT_OK and its final SSE is at
 * most target * (1 + 1e-4), where target is the reported SSE, or the SSE at
 * the reported parameters under the same integration when that is lower or
 * no SSE was reported (battery_util.h). Whether the optimizer says it
 * converged is reported, not required.
 *
 * Random starts (seeded, the same for every optimizer): each parameter
 * log-uniform in [lo, hi] when both bounds are positive and finite; in
 * [hi 1e-6, hi] when lo <= 0 and hi is finite; within a decade of the
 * declared start, [start/10, start*10], when hi is infinite.
 *
 * Options are remat_fit_defaults() (what `remat pfr fit` runs) but for the
 * optimizer (adaptive Tsit5 at rtol 1e-6, lm), unless --steps N asks for N fixed RK4
 * steps per data interval (the default before adaptive stepping). Times are
 * the thread's CPU time (as bench_util.h's samples: time spent descheduled
 * on a shared machine is not the fit's; a fit runs on the calling thread
 * with OPENBLAS_NUM_THREADS=1) of remat_fit_new (graph build and compile,
 * "setup"; each problem is compiled once untimed first, so the process's JIT
 * cache is warm for every optimizer alike) and of remat_fit_run ("run"), in
 * ms; pin it:
 *   ninja -C build bench/bench_battery
 *   OPENBLAS_NUM_THREADS=1 taskset -c 1 ./build/bench/bench_battery --starts 8 > battery.json
 * --dir D (default: the source tree's bench/battery), --seed S, --only NAME
 * (one problem), --log-zero (parameters with a lower bound of 0 and a
 * positive start searched on the log scale, where remat_fit_defaults keeps
 * them linear: the comparison that kept the default), --verify (only each problem's SSE at its reported optimum,
 * at the default steps and at 2000 steps per interval), --smoke (two small
 * problems, declared starts only; the test bench_smoke_battery),
 * --optimizer NAME (that optimizer only), --jacobian auto|forward|reverse
 * (the Jacobian's mode of lm and the statistics; default auto), --method M
 * (tsit5, dopri5, rodas5 adaptive; with --steps N any method at fixed steps),
 * --lm-more (lm with Moré's scaling, GSL's default, instead of Levenberg's).
 * One JSON object on stdout; exit 1 when a problem cannot be loaded.
 */
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "battery_util.h"
#include "bench_util.h"
#include "remat/remat.h"

#ifndef BATTERY_DIR
#define BATTERY_DIR "bench/battery"
#endif

#define MAX_PROBLEMS 64
#define REL_TOL 1e-4
#define MAX_PARAMS 256

static int log_zero; /* --log-zero */

typedef struct {
    int status;      /* remat_status of the run */
    double sse, ms_setup, ms_run;
    int64_t evaluations;
    int iterations;
    bool converged, success;
    char message[512];
} run_result;

static uint64_t rng_next(uint64_t *s) /* splitmix64 */
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double rng_uniform(uint64_t *s) { return (double)(rng_next(s) >> 11) * 0x1.0p-53; }

static void random_start(const remat_mechanism *m, uint64_t *s, double *p)
{
    for (int i = 0; i < remat_mechanism_param_count(m); i++) {
        double lo = remat_mechanism_param_lo(m, i), hi = remat_mechanism_param_hi(m, i);
        double v = remat_mechanism_param_value(m, i), a, b;
        if (isfinite(hi) && lo > 0)
            a = lo, b = hi;
        else if (isfinite(hi))
            a = hi * 1e-6, b = hi;
        else
            a = fmax(v / 10, lo > 0 ? lo : 0), b = v * 10;
        p[i] = exp(log(a) + (log(b) - log(a)) * rng_uniform(s));
    }
}

static int cmp_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* the .mech files of dir, sorted; returns the count */
static int list_problems(const char *dir, const char *only, char **paths)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < MAX_PROBLEMS) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".mech") != 0)
            continue;
        if (only && (strncmp(e->d_name, only, len - 5) != 0 || strlen(only) != len - 5))
            continue;
        paths[n] = malloc(strlen(dir) + len + 2);
        sprintf(paths[n], "%s/%s", dir, e->d_name);
        n++;
    }
    closedir(d);
    qsort(paths, (size_t)n, sizeof *paths, cmp_names);
    return n;
}

static void json_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            printf("\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            printf("\\u%04x", *s);
        else
            putchar(*s);
    }
    putchar('"');
}

static void json_number(double x)
{
    if (isfinite(x))
        printf("%.10g", x);
    else
        printf("null");
}

static void run_one(const battery_problem *b, const remat_fit_options *base, const double *start, double target,
                    run_result *r)
{
    memset(r, 0, sizeof *r);
    r->sse = NAN;
    remat_fit_options o = *base;
    o.start = start;
    remat_fit_scale scale[MAX_PARAMS];
    if (log_zero) {
        /* --log-zero: a lower bound of 0 with a positive start on the log
         * scale too (the default keeps such parameters linear) */
        int P = remat_mechanism_param_count(b->mech);
        for (int i = 0; i < P && i < MAX_PARAMS; i++)
            scale[i] = remat_mechanism_param_lo(b->mech, i) == 0 && start[i] > 0 ? REMAT_FIT_SCALE_LOG
                                                                              : REMAT_FIT_SCALE_AUTO;
        o.scale = scale;
    }
    remat_dataset *d[1] = {b->data};
    remat_fit *fit = NULL;
    double t0 = bench_clock_ms(CLOCK_THREAD_CPUTIME_ID);
    r->status = remat_fit_new(b->mech, 1, d, &o, &fit);
    double t1 = bench_clock_ms(CLOCK_THREAD_CPUTIME_ID);
    r->ms_setup = t1 - t0;
    if (r->status != REMAT_OK) {
        snprintf(r->message, sizeof r->message, "%s", remat_last_error());
        return;
    }
    remat_fit_result res = {0};
    r->status = remat_fit_run(fit, &res);
    r->ms_run = bench_clock_ms(CLOCK_THREAD_CPUTIME_ID) - t1;
    if (r->status != REMAT_OK)
        snprintf(r->message, sizeof r->message, "%s", remat_last_error());
    else
        snprintf(r->message, sizeof r->message, "%s", res.message);
    r->sse = res.objective;
    r->evaluations = res.evaluations;
    r->iterations = res.iterations;
    r->converged = res.converged;
    r->success = r->status == REMAT_OK && r->sse <= target * (1 + REL_TOL);
    remat_fit_result_clear(&res);
    remat_fit_free(fit);
}

static void print_run(const run_result *r, double target)
{
    printf("{\"success\": %s, \"sse\": ", r->success ? "true" : "false");
    json_number(r->sse);
    printf(", \"rel_gap\": ");
    json_number((r->sse - target) / target);
    printf(", \"evaluations\": %lld, \"iterations\": %d, \"converged\": %s, \"ms_setup\": %.3f, \"ms_run\": %.3f, "
           "\"message\": ",
           (long long)r->evaluations, r->iterations, r->converged ? "true" : "false", r->ms_setup, r->ms_run);
    json_string(r->message);
    printf("}");
}

typedef struct {
    int runs, successes, finite_runs, finite_successes, declared_successes, problems;
    double *ms; /* per-problem median run ms */
} optimizer_summary;

/* The declared start and K random starts, starts[k * P ...], and whether
 * the objective is finite there under the integration of o (a start where
 * it is not fails with every optimizer: the fixed-step integrator diverges,
 * which no optimizer can help). */
static double *make_starts(const battery_problem *b, const remat_fit_options *o, int K, uint64_t seed,
                           bool *finite)
{
    int P = remat_mechanism_param_count(b->mech);
    double *starts = malloc(sizeof *starts * (size_t)(P * (K + 1)));
    uint64_t s = seed;
    for (int k = 0; k <= K; k++) {
        double *p = starts + (size_t)k * (size_t)P, f = NAN;
        if (k == 0)
            remat_mechanism_param_values(b->mech, p);
        else
            random_start(b->mech, &s, p);
        finite[k] = battery_sse(b, o, p, &f) == 0 && isfinite(f);
    }
    return starts;
}

/* one problem x one optimizer over the starts */
static void bench_pair(const battery_problem *b, const remat_fit_options *base, int K, const double *starts,
                       const bool *finite, double target, optimizer_summary *sum)
{
    int P = remat_mechanism_param_count(b->mech), n = K + 1, succ = 0, n_finite = 0, succ_finite = 0;
    run_result *r = calloc((size_t)n, sizeof *r);
    double *evals = malloc(sizeof *evals * (size_t)n), *ms = malloc(sizeof *ms * (size_t)n);
    for (int k = 0; k < n; k++) {
        run_one(b, base, starts + (size_t)k * (size_t)P, target, &r[k]);
        succ += r[k].success;
        n_finite += finite[k];
        succ_finite += finite[k] && r[k].success;
        evals[k] = (double)r[k].evaluations;
        ms[k] = r[k].ms_setup + r[k].ms_run;
    }
    printf("{\"optimizer\": ");
    json_string(remat_fit_optimizer_name(base->optimizer));
    printf(", \"runs\": %d, \"successes\": %d, \"success_rate\": %.4f, \"finite_starts\": %d, "
           "\"successes_from_finite_starts\": %d, \"median_evaluations\": %g, \"median_ms\": %.3f, "
           "\"declared_start\": ",
           n, succ, (double)succ / n, n_finite, succ_finite, bench_median(evals, n), bench_median(ms, n));
    print_run(&r[0], target);
    printf(", \"failures\": [");
    for (int k = 0, first = 1; k < n; k++) {
        if (r[k].success)
            continue;
        printf("%s{\"start\": %d, \"finite_start\": %s, \"sse\": ", first ? "" : ", ", k,
               finite[k] ? "true" : "false");
        json_number(r[k].sse);
        printf(", \"rel_gap\": ");
        json_number((r[k].sse - target) / target);
        printf(", \"evaluations\": %lld, \"message\": ", (long long)r[k].evaluations);
        json_string(r[k].message);
        printf("}");
        first = 0;
    }
    printf("]}");
    sum->runs += n;
    sum->successes += succ;
    sum->finite_runs += n_finite;
    sum->finite_successes += succ_finite;
    sum->declared_successes += r[0].success;
    sum->ms[sum->problems++] = bench_median(ms, n);
    free(r);
    free(evals);
    free(ms);
}

static void verify(const battery_problem *b, const remat_fit_options *base)
{
    remat_fit_options fine = *base;
    fine.adaptive = false;
    fine.method = REMAT_ODE_RK4;
    fine.dt = 0;
    fine.steps = 2000;
    double at = NAN, at_fine = NAN;
    if (b->optimum) {
        battery_sse(b, base, b->optimum, &at);
        battery_sse(b, &fine, b->optimum, &at_fine);
    }
    printf("\"reported_sse\": ");
    json_number(b->reported_sse);
    printf(", \"sse_at_reported_optimum\": ");
    json_number(at);
    printf(", \"sse_at_reported_optimum_2000_steps\": ");
    json_number(at_fine);
    printf(", \"target\": ");
    json_number(battery_target(b, base));
}

int main(int argc, char **argv)
{
    const char *dir = BATTERY_DIR, *only = NULL;
    int K = 8, smoke = 0, verify_only = 0, only_opt = -1;
    remat_fit_jacobian jac = REMAT_FIT_JACOBIAN_AUTO;
    int64_t steps = 0;
    const char *method = NULL;
    int lm_more = 0;
    uint64_t seed = 20261201;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--dir") && i + 1 < argc)
            dir = argv[++i];
        else if (!strcmp(argv[i], "--only") && i + 1 < argc)
            only = argv[++i];
        else if (!strcmp(argv[i], "--starts") && i + 1 < argc)
            K = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--steps") && i + 1 < argc)
            steps = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--method") && i + 1 < argc)
            method = argv[++i];
        else if (!strcmp(argv[i], "--lm-more"))
            lm_more = 1;
        else if (!strcmp(argv[i], "--optimizer") && i + 1 < argc) {
            remat_fit_optimizer o;
            if (remat_fit_optimizer_parse(argv[++i], &o) != REMAT_OK) {
                fprintf(stderr, "bench_battery: --optimizer: %s\n", remat_last_error());
                return 2;
            }
            only_opt = (int)o;
        } else if (!strcmp(argv[i], "--jacobian") && i + 1 < argc) {
            if (remat_fit_jacobian_parse(argv[++i], &jac) != REMAT_OK) {
                fprintf(stderr, "bench_battery: --jacobian: %s\n", remat_last_error());
                return 2;
            }
        } else if (!strcmp(argv[i], "--log-zero"))
            log_zero = 1;
        else if (!strcmp(argv[i], "--smoke"))
            smoke = 1;
        else if (!strcmp(argv[i], "--verify"))
            verify_only = 1;
        else {
            fprintf(stderr, "bench_battery: unknown argument '%s'\n", argv[i]);
            return 2;
        }
    }
    if (K < 0) {
        fprintf(stderr, "bench_battery: --starts must be >= 0\n");
        return 2;
    }
    char *paths[MAX_PROBLEMS];
    int n = list_problems(dir, only, paths);
    if (n <= 0) {
        fprintf(stderr, "bench_battery: no problems in '%s'%s%s\n", dir, only ? " named " : "", only ? only : "");
        return 1;
    }
    if (smoke)
        K = 0;
    remat_fit_options base = remat_fit_defaults();
    if (steps > 0) /* fixed RK4 steps, the default before adaptive stepping */
        base.adaptive = false, base.method = REMAT_ODE_RK4, base.dt = 0, base.steps = steps;
    if (method && remat_ode_method_parse(method, &base.method) != REMAT_OK) {
        fprintf(stderr, "bench_battery: --method: %s\n", remat_last_error());
        return 2;
    }
    if (method && steps == 0 && !remat_ode_method_adaptive(base.method)) {
        fprintf(stderr, "bench_battery: --method %s has fixed steps: give --steps N\n", method);
        return 2;
    }
    base.jacobian = jac;
    base.lm_more_scaling = lm_more;

    optimizer_summary sum[REMAT_FIT_OPTIMIZER_COUNT] = {{0}};
    for (int o = 0; o < REMAT_FIT_OPTIMIZER_COUNT; o++)
        sum[o].ms = calloc((size_t)n, sizeof(double));
    printf("{\"benchmark\": \"battery\", \"random_starts\": %d, \"seed\": %llu, \"method\": \"%s\", "
           "\"adaptive\": %s, \"rtol\": %g, \"atol\": %g, \"steps_per_interval\": %lld, "
           "\"rel_tol\": %g, \"log_zero\": %s, \"jacobian\": \"%s\", \"lm_scaling\": \"%s\", \"problems\": [",
           K, (unsigned long long)seed, remat_ode_method_name(base.method), base.adaptive ? "true" : "false",
           base.rtol, base.atol, (long long)steps, REL_TOL, log_zero ? "true" : "false", remat_fit_jacobian_name(jac),
           lm_more ? "more" : "levenberg");
    int status = 0, printed = 0;
    for (int i = 0; i < n; i++) {
        battery_problem b;
        char err[1024];
        if (smoke && !strstr(paths[i], "/bod.mech") && !strstr(paths[i], "/series_irreversible.mech"))
            continue;
        if (battery_load(paths[i], &b, err, sizeof err)) {
            fprintf(stderr, "bench_battery: %s\n", err);
            status = 1;
            continue;
        }
        printf("%s\n{\"name\": ", printed++ ? "," : "");
        json_string(b.name);
        printf(", \"params\": %d, ", remat_mechanism_param_count(b.mech));
        verify(&b, &base);
        double target = battery_target(&b, &base);
        if (!verify_only) {
            /* compile once untimed: the per-process JIT cache would otherwise
             * charge the first optimizer with the problem's compilation */
            remat_fit *warm = NULL;
            remat_dataset *d[1] = {b.data};
            if (remat_fit_new(b.mech, 1, d, &base, &warm) == REMAT_OK)
                remat_fit_free(warm);
            bool *finite = malloc(sizeof *finite * (size_t)(K + 1));
            double *starts = make_starts(&b, &base, K, seed + (uint64_t)i, finite);
            printf(", \"optimizers\": [");
            for (int o = 0, first = 1; o < REMAT_FIT_OPTIMIZER_COUNT; o++) {
                if (only_opt >= 0 && o != only_opt)
                    continue;
                remat_fit_options opt = base;
                opt.optimizer = (remat_fit_optimizer)o;
                printf("%s\n  ", first ? "" : ",");
                first = 0;
                bench_pair(&b, &opt, K, starts, finite, target, &sum[o]);
            }
            printf("]");
            free(starts);
            free(finite);
        }
        printf("}");
        fflush(stdout);
        battery_free(&b);
    }
    printf("]");
    if (!verify_only) {
        printf(",\n\"summary\": [");
        for (int o = 0, first = 1; o < REMAT_FIT_OPTIMIZER_COUNT; o++) {
            if (only_opt >= 0 && o != only_opt)
                continue;
            printf("%s\n  {\"optimizer\": ", first ? "" : ",");
            first = 0;
            json_string(remat_fit_optimizer_name((remat_fit_optimizer)o));
            printf(", \"problems\": %d, \"solved_from_declared_start\": %d, \"runs\": %d, \"successes\": %d, "
                   "\"success_rate\": %.4f, \"finite_starts\": %d, \"successes_from_finite_starts\": %d, "
                   "\"median_of_problem_median_ms\": %.3f}",
                   sum[o].problems, sum[o].declared_successes, sum[o].runs, sum[o].successes,
                   sum[o].runs ? (double)sum[o].successes / sum[o].runs : 0.0, sum[o].finite_runs,
                   sum[o].finite_successes,
                   sum[o].problems ? bench_median(sum[o].ms, sum[o].problems) : 0.0);
        }
        printf("]");
    }
    printf("}\n");
    for (int o = 0; o < REMAT_FIT_OPTIMIZER_COUNT; o++)
        free(sum[o].ms);
    for (int i = 0; i < n; i++)
        free(paths[i]);
    return status;
}

/*
 * bench_util.h — the timing harness the benchmarks share: clocks, medians and
 * minima, the per-round ratio, and round-robin sampling.
 *
 * Round-robin: every variant of a group is warmed up and calibrated (two runs;
 * a sample repeats the run `inner` times to last ~sample_ns), then each round
 * takes one sample of every variant in turn, so that a noisy neighbour slows
 * them alike. Samples are the thread's CPU time (CLOCK_THREAD_CPUTIME_ID):
 * time spent descheduled on a shared machine is not the code's.
 *
 *   static int run(void *ctx, int i, bool first) { ... run variant i once ... }
 *   bench_timing *t[2] = {&a.timing, &b.timing};
 *   if (bench_time_round_robin(2, t, run, &ctx, rounds, 2e6, false)) fail...;
 *   double ratio = bench_median(a.timing.samples, rounds) / bench_median(b.timing.samples, rounds);
 *   double paired = bench_paired_ratio(a.timing.samples, b.timing.samples, rounds);
 *
 * Header-only (static inline): each benchmark is one executable.
 */
#ifndef REMAT_BENCH_UTIL_H
#define REMAT_BENCH_UTIL_H

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- clocks ---- */

static inline double bench_clock_ns(clockid_t id)
{
    struct timespec t;
    clock_gettime(id, &t);
    return 1e9 * (double)t.tv_sec + (double)t.tv_nsec;
}

static inline double bench_clock_ms(clockid_t id)
{
    struct timespec t;
    clock_gettime(id, &t);
    return 1e3 * (double)t.tv_sec + 1e-6 * (double)t.tv_nsec;
}

/* the thread's CPU time */
static inline double bench_thread_ns(void) { return bench_clock_ns(CLOCK_THREAD_CPUTIME_ID); }
static inline double bench_wall_ns(void) { return bench_clock_ns(CLOCK_MONOTONIC); }

/* ---- statistics ---- */

static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* the median of v[0..n), v left as it is */
static inline double bench_median(const double *v, int n)
{
    double *s = malloc(sizeof *s * (size_t)n);
    memcpy(s, v, sizeof *s * (size_t)n);
    qsort(s, (size_t)n, sizeof *s, bench_cmp_double);
    double m = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
    free(s);
    return m;
}

static inline double bench_minimum(const double *v, int n)
{
    double m = v[0];
    for (int i = 1; i < n; i++)
        m = v[i] < m ? v[i] : m;
    return m;
}

/* the median over rounds of the per-round ratio a[r]/b[r] (a noisy round
 * slows both alike) */
static inline double bench_paired_ratio(const double *a, const double *b, int rounds)
{
    double *r = malloc(sizeof *r * (size_t)rounds);
    for (int i = 0; i < rounds; i++)
        r[i] = a[i] / b[i];
    double m = bench_median(r, rounds);
    free(r);
    return m;
}

/* ---- round-robin sampling ---- */

typedef struct {
    int inner;       /* runs per sample */
    double *samples; /* thread CPU ms per run, one per round */
    double *wall;    /* wall-clock ms per run, one per round (only when asked for) */
} bench_timing;

/* Runs variant i once; first: the first calibration run. Nonzero: failed. */
typedef int (*bench_run_fn)(void *ctx, int i, bool first);

/* Times variants 0..n-1 round-robin into t[i] (samples allocated here, and
 * wall when with_wall; the caller frees them). Nonzero when a run failed. */
static inline int bench_time_round_robin(int n, bench_timing *const *t, bench_run_fn run, void *ctx, int rounds,
                                         double sample_ns, bool with_wall)
{
    for (int i = 0; i < n; i++) { /* warm up and calibrate */
        double t0 = bench_thread_ns();
        if (run(ctx, i, true))
            return 1;
        double dt = bench_thread_ns() - t0;
        if (run(ctx, i, false))
            return 1;
        dt = fmin(dt, bench_thread_ns() - t0 - dt);
        t[i]->inner = dt >= sample_ns ? 1 : (int)ceil(sample_ns / fmax(dt, 1.0));
        t[i]->samples = malloc(sizeof *t[i]->samples * (size_t)rounds);
        if (with_wall)
            t[i]->wall = malloc(sizeof *t[i]->wall * (size_t)rounds);
    }
    for (int r = 0; r < rounds; r++)
        for (int i = 0; i < n; i++) {
            double w0 = with_wall ? bench_wall_ns() : 0, t0 = bench_thread_ns();
            for (int k = 0; k < t[i]->inner; k++)
                if (run(ctx, i, false))
                    return 1;
            t[i]->samples[r] = (bench_thread_ns() - t0) * 1e-6 / t[i]->inner;
            if (with_wall)
                t[i]->wall[r] = (bench_wall_ns() - w0) * 1e-6 / t[i]->inner;
        }
    return 0;
}

/* ---- reference times of another implementation (--jax-ms) ---- */

/* Parses "name=MS,name=MS,..." into ms[i] for the names[i] it gives (the
 * others keep their value); an unknown name or a non-positive time is an
 * error naming the token, on stderr as "prog: ...". Nonzero on error. */
static inline int bench_parse_named_ms(const char *prog, const char *s, int n, const char *const *names, double *ms)
{
    char *copy = strdup(s), *save = NULL;
    int rc = !copy;
    for (char *tok = copy ? strtok_r(copy, ",", &save) : NULL; tok && !rc; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        int found = 0;
        if (eq) {
            *eq = 0;
            for (int i = 0; i < n; i++)
                if (!strcmp(names[i], tok) && atof(eq + 1) > 0)
                    ms[i] = atof(eq + 1), found = 1;
            *eq = '=';
        }
        if (!found) {
            fprintf(stderr, "%s: --jax-ms: '%s' is not VARIANT=MS with a variant of this benchmark\n", prog, tok);
            rc = 1;
        }
    }
    free(copy);
    return rc;
}

#endif

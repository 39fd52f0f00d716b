/*
 * bench_ensemble.c — rows per second of remat_pfr_ensemble (the engine of
 * `remat pfr ensemble`) on the seed reactor against a hand-written C
 * forward-sensitivity loop (ensemble_hand.c), one thread.
 *
 * Both compute, for N parameter sets (k1, k2) drawn in [0.1, 2], the outlet
 * (A, B, C) after 1000 Euler steps over L = 10 and its 3 x 2 Jacobian, in
 * chunks of B sets (the lanes). Round-robin, thread CPU time, medians; the
 * results are checked to agree to 1e-10 first. One JSON object on stdout.
 *
 *   REMAT_NUM_THREADS=1 taskset -c 1 ./build/bench/bench_ensemble [--rows N] [--lanes B] [--smoke]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "ensemble_hand.h"
#include "remat/remat.h"

typedef struct {
    int64_t n, B, steps;
    double h;
    double *sets, *k1, *k2;            /* (n, 2), (n,), (n,) */
    double *out, *jac, *hout, *hjac;   /* (n, 3), (n, 6) remat's and the hand loop's */
    double *work;
    remat_pfr_ensemble *e;
} ctx_t;

static const double inlet[3] = {1, 0, 0};

static int run(void *p, int variant, bool first)
{
    (void)first;
    ctx_t *c = p;
    for (int64_t lo = 0; lo < c->n; lo += c->B) {
        int64_t k = c->n - lo < c->B ? c->n - lo : c->B;
        if (variant == 0) {
            if (remat_pfr_ensemble_run(c->e, k, c->sets + 2 * lo, c->out + 3 * lo, c->jac + 6 * lo) != REMAT_OK) {
                fprintf(stderr, "bench_ensemble: %s\n", remat_last_error());
                return 1;
            }
        } else {
            ensemble_hand_euler(k, c->steps, c->h, inlet, c->k1 + lo, c->k2 + lo, c->hout + 3 * lo, c->hjac + 6 * lo,
                                c->work);
        }
    }
    return 0;
}

static double max_rel(const double *a, const double *b, int64_t n)
{
    double worst = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs(a[i] - b[i]) / fmax(fabs(b[i]), 1e-3);
        worst = d > worst ? d : worst;
    }
    return worst;
}

int main(int argc, char **argv)
{
    setenv("REMAT_NUM_THREADS", "1", 0);
    ctx_t c = {.n = 65536, .B = 256, .steps = 1000, .h = 0.01};
    int rounds = 7;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--smoke"))
            c.n = 600, c.B = 64, c.steps = 100, c.h = 0.1, rounds = 1;
        else if (!strcmp(argv[i], "--rows") && i + 1 < argc)
            c.n = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--lanes") && i + 1 < argc)
            c.B = atoll(argv[++i]);
        else {
            fprintf(stderr, "usage: bench_ensemble [--rows N] [--lanes B] [--smoke]\n");
            return 2;
        }
    }
    if (c.n < 1 || c.B < 1) {
        fprintf(stderr, "bench_ensemble: --rows and --lanes must be >= 1\n");
        return 2;
    }
    size_t n = (size_t)c.n;
    c.sets = malloc(sizeof *c.sets * 2 * n);
    c.k1 = malloc(sizeof *c.k1 * n);
    c.k2 = malloc(sizeof *c.k2 * n);
    c.out = malloc(sizeof *c.out * 3 * n);
    c.hout = malloc(sizeof *c.hout * 3 * n);
    c.jac = malloc(sizeof *c.jac * 6 * n);
    c.hjac = malloc(sizeof *c.hjac * 6 * n);
    c.work = malloc(sizeof *c.work * 9 * (size_t)c.B);
    if (!c.sets || !c.k1 || !c.k2 || !c.out || !c.hout || !c.jac || !c.hjac || !c.work) {
        fprintf(stderr, "bench_ensemble: out of memory\n");
        return 1;
    }
    uint64_t s = 0x9e3779b97f4a7c15u;
    for (size_t i = 0; i < n; i++)
        for (int j = 0; j < 2; j++) {
            s = s * 6364136223846793005u + 1442695040888963407u;
            double u = (double)(s >> 11) * 0x1p-53;
            c.sets[2 * i + (size_t)j] = 0.1 + 1.9 * u;
        }
    for (size_t i = 0; i < n; i++)
        c.k1[i] = c.sets[2 * i], c.k2[i] = c.sets[2 * i + 1];

    remat_mechanism *m;
    if (remat_mechanism_parse_string(remat_pfr_seed()->mechanism, "seed", &m) != REMAT_OK) {
        fprintf(stderr, "bench_ensemble: %s\n", remat_last_error());
        return 1;
    }
    remat_pfr_options o = {.method = REMAT_ODE_EULER, .length = c.h * (double)c.steps, .steps = c.steps,
                           .inlet = inlet};
    double t0 = bench_wall_ns();
    if (remat_pfr_ensemble_new(m, &o, c.B, 2, (const int[]){0, 1}, (const double[]){1, 0.5}, &c.e) != REMAT_OK) {
        fprintf(stderr, "bench_ensemble: %s\n", remat_last_error());
        return 1;
    }
    double build_ms = (bench_wall_ns() - t0) * 1e-6;
    t0 = bench_wall_ns();
    if (run(&c, 0, true) || run(&c, 1, true))
        return 1;
    double first_ms = (bench_wall_ns() - t0) * 1e-6;
    double err_out = max_rel(c.out, c.hout, 3 * c.n), err_jac = max_rel(c.jac, c.hjac, 6 * c.n);
    if (!(err_out < 1e-10 && err_jac < 1e-10)) {
        fprintf(stderr, "bench_ensemble: remat and the hand loop differ: outlet %g, Jacobian %g (relative)\n",
                err_out, err_jac);
        return 1;
    }
    bench_timing tr = {0}, th = {0};
    bench_timing *t[2] = {&tr, &th};
    if (bench_time_round_robin(2, t, run, &c, rounds, 2e8, false))
        return 1;
    double mr = bench_median(tr.samples, rounds), mh = bench_median(th.samples, rounds);
    printf("{\"benchmark\": \"ensemble\", \"mechanism\": \"A->B->C\", \"method\": \"euler\", \"steps\": %lld, "
           "\"rows\": %lld, \"lanes\": %lld, \"jacobian\": \"3x2 forward\",\n"
           " \"build_ms\": %.1f, \"first_run_ms\": %.1f, \"rounds\": %d,\n"
           " \"remat_ms\": %.2f, \"hand_ms\": %.2f, \"remat_rows_per_s\": %.0f, \"hand_rows_per_s\": %.0f, "
           "\"remat_over_hand\": %.2f, \"paired_ratio\": %.2f,\n"
           " \"max_rel_diff\": {\"outlet\": %.2g, \"jacobian\": %.2g}}\n",
           (long long)c.steps, (long long)c.n, (long long)c.B, build_ms, first_ms, rounds, mr, mh,
           (double)c.n / mr * 1e3, (double)c.n / mh * 1e3, mr / mh, bench_paired_ratio(tr.samples, th.samples, rounds),
           err_out, err_jac);
    free(tr.samples);
    free(th.samples);
    remat_pfr_ensemble_free(c.e);
    remat_mechanism_free(m);
    free(c.sets), free(c.k1), free(c.k2), free(c.out), free(c.hout), free(c.jac), free(c.hjac), free(c.work);
    return 0;
}

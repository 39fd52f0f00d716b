/*
 * bench_elementwise.c — elementwise-bound gradients: seed 004 §6's chain.
 *
 *   f(x) = sum(layer^L(x)),  layer(x) = sin(x) + 0.1 x,  x = ones(N), f64
 *   L = 200, N = 500; the gradient of f w.r.t. x (jax.grad(f)(x))
 *
 * Variants: none (the layers inlined, no checkpoint) and checkpoint (each
 * layer remat_checkpoint'ed, jax.checkpoint's counterpart). Both gradients
 * must be bitwise equal (contract 3) and their norm must match the f64
 * reference to 1e-12 relative (the forward to the u10 functions' ulp).
 * bench/jax_chain.py times the same with jax.jit(jax.grad(f)); give its
 * CPU medians (its jax_ms_arg) with --jax-ms none=MS,checkpoint=MS to print
 * the ratios of this program's CPU medians to them.
 *
 * Timing: bench_util.h's round robin (the variants interleaved, a sample
 * repeats a run to ~20 ms), medians of thread CPU time (cpu_median_ms; on a
 * shared machine the time descheduled is not the code's) and of wall time.
 * Run it on one core:
 *
 *   ninja -C build bench/bench_elementwise
 *   taskset -c 1 ./build/bench/bench_elementwise [--layers L] [--n N] [--reps R] [--jax-ms none=1.2,checkpoint=1.5]
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <remat/remat.h>

#include "bench_util.h"

typedef struct {
    const char *name;
    bool checkpoint;
    remat_program *prog;
    remat_memory_plan plan;
    remat_stats stats;
    bench_timing timing;
    double *g;
    double jax_ms; /* 0: not given */
} variant;

typedef struct {
    variant *v;
    int n;
    double *x;
} ctx_t;

static remat_fn *build_layer(int n)
{
    remat_fn *f = remat_fn_new("layer");
    remat_val x = remat_arg(f, "x", REMAT_F64, 1, ((int64_t[]){n}));
    remat_fn_output(f, remat_add(f, remat_sin(f, x), remat_mul_scalar(f, x, 0.1)));
    return f;
}

static int prepare(variant *v, int layers, int n)
{
    remat_fn *layer = build_layer(n), *ck = v->checkpoint ? remat_checkpoint(layer, NULL) : NULL;
    remat_fn *f = remat_fn_new("chain"), *g = NULL;
    remat_val x = remat_arg(f, "x", REMAT_F64, 1, ((int64_t[]){n}));
    for (int l = 0; l < layers; l++)
        x = remat_call1(f, ck ? ck : layer, 1, &x);
    remat_fn_output(f, remat_sum_all(f, x));
    int rc = remat_fn_status(f) != REMAT_OK || remat_grad(f, 0, NULL, &g) != REMAT_OK ||
             remat_compile(g, remat_backend_cpu(), &v->prog) != REMAT_OK;
    if (!rc)
        remat_program_plan(v->prog, &v->plan);
    else
        fprintf(stderr, "bench_elementwise: %s: %s\n", v->name, remat_last_error());
    remat_fn_free(g), remat_fn_free(f), remat_fn_free(ck), remat_fn_free(layer);
    v->g = malloc(sizeof *v->g * (size_t)n);
    return rc;
}

static int run_variant(void *c, int i, bool first)
{
    (void)first;
    ctx_t *ctx = c;
    variant *v = &ctx->v[i];
    remat_tensor in = remat_tensor_f64(ctx->x, 1, (int64_t[]){ctx->n});
    remat_tensor out = remat_tensor_f64(v->g, 1, (int64_t[]){ctx->n});
    if (remat_run(v->prog, 1, &in, 1, &out, &v->stats) != REMAT_OK) {
        fprintf(stderr, "bench_elementwise: run %s: %s\n", v->name, remat_last_error());
        return 1;
    }
    return 0;
}

/* the gradient's reference: the same chain in long double with libm, each
 * element alone (all equal: x = ones) */
static long double reference_grad(int layers)
{
    long double x = 1.0L, d = 1.0L;
    for (int l = 0; l < layers; l++) {
        d *= cosl(x) + 0.1L;
        x = sinl(x) + 0.1L * x;
    }
    return d;
}

int main(int argc, char **argv)
{
    int layers = 200, n = 500, reps = 21;
    const char *jax = NULL;
    variant v[] = {{.name = "none"}, {.name = "checkpoint", .checkpoint = true}};
    const int nv = 2;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--layers") && i + 1 < argc)
            layers = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--n") && i + 1 < argc)
            n = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--jax-ms") && i + 1 < argc)
            jax = argv[++i];
        else if (!strcmp(argv[i], "--smoke"))
            layers = 8, n = 13, reps = 3;
        else {
            fprintf(stderr, "usage: %s [--smoke] [--layers L] [--n N] [--reps R] [--jax-ms none=MS,checkpoint=MS]\n",
                    argv[0]);
            return 2;
        }
    }
    if (layers < 1 || n < 1 || reps < 1)
        return fprintf(stderr, "bench_elementwise: layers, n and reps must be >= 1\n"), 2;
    if (jax) {
        const char *names[sizeof v / sizeof v[0]];
        double ms[sizeof v / sizeof v[0]] = {0};
        for (int i = 0; i < nv; i++)
            names[i] = v[i].name;
        if (bench_parse_named_ms("bench_elementwise", jax, nv, names, ms))
            return 2;
        for (int i = 0; i < nv; i++)
            v[i].jax_ms = ms[i];
    }
    double *x = malloc(sizeof *x * (size_t)n);
    for (int i = 0; i < n; i++)
        x[i] = 1.0;
    for (int i = 0; i < nv; i++)
        if (prepare(&v[i], layers, n))
            return 1;
    ctx_t ctx = {.v = v, .n = n, .x = x};
    bench_timing *t[2] = {&v[0].timing, &v[1].timing};
    if (bench_time_round_robin(nv, t, run_variant, &ctx, reps, 2e7, true))
        return 1;

    const long double ref = reference_grad(layers);
    double worst = 0;
    for (int i = 0; i < n; i++)
        worst = fmax(worst, (double)fabsl((v[0].g[i] - ref) / ref));
    const bool equal = !memcmp(v[0].g, v[1].g, sizeof *v[0].g * (size_t)n), accurate = worst <= 1e-12;
    printf("{\"bench\":\"elementwise\", \"workload\":\"seed 004 sec. 6: %d layers of sin(x) + 0.1 x, x = ones(%d), "
           "f64, grad\", \"reps\":%d,\n \"variants\":[",
           layers, n, reps);
    bool all_pass = true;
    for (int i = 0; i < nv; i++) {
        const double med = bench_median(v[i].timing.wall, reps);
        printf("%s\n  {\"variant\":\"%s\", \"median_ms\":%.4f, \"min_ms\":%.4f, \"cpu_median_ms\":%.4f, "
               "\"peak_bytes\":%zu, \"ops\":%lld",
               i ? "," : "", v[i].name, med, bench_minimum(v[i].timing.wall, reps),
               bench_median(v[i].timing.samples, reps), v[i].stats.peak_arena_bytes,
               (long long)v[i].stats.ops_executed);
        if (v[i].jax_ms > 0) {
            const double cpu = bench_median(v[i].timing.samples, reps);
            printf(", \"jax_cpu_median_ms\":%.4f, \"ratio_vs_jax\":%.3f, \"target\":1.0", v[i].jax_ms,
                   cpu / v[i].jax_ms);
            all_pass &= cpu <= v[i].jax_ms;
        }
        printf("}");
    }
    printf("],\n \"gradients_bitwise_equal\":%s, \"max_rel_error_vs_long_double\":%.3g", equal ? "true" : "false",
           worst);
    if (jax)
        printf(", \"all_within_target\":%s", all_pass ? "true" : "false");
    printf(", \"ok\":%s}\n", equal && accurate ? "true" : "false");
    for (int i = 0; i < nv; i++)
        free(v[i].g), free(v[i].timing.samples), free(v[i].timing.wall), remat_program_free(v[i].prog);
    free(x);
    return equal && accurate ? 0 : 1;
}

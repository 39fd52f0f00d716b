/*
 * bench_dispatch.c — per-op dispatch cost of a compiled program.
 *
 * A chain of `ops` scalar f64 ops, alternating x = x + a and x = x * b with
 * two shared scalar constants (a = 0.5, b = 0.5: the chain contracts to 0.5,
 * so values stay bounded), compiled once and run `reps` times; reported as
 * the median ns per executed op. The same for the gradient of that chain
 * (d x_n / d x_0: the backward of the muls; the adds pass the cotangent
 * through and the forward is dead code in a grad-only program). Each op is
 * one indirect call of a one-element kernel, so this measures the
 * interpreter loop, not arithmetic. One JSON object on stdout; --smoke runs
 * a 1000-op chain.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <remat/remat.h>

#include "bench_util.h"

static remat_fn *build_chain(int ops)
{
    remat_fn *f = remat_fn_new("chain");
    remat_val x = remat_arg(f, "x", REMAT_F64, 0, NULL);
    remat_val a = remat_scalar(f, REMAT_F64, 0.5), b = remat_scalar(f, REMAT_F64, 0.5);
    for (int i = 0; i < ops; i++)
        x = i % 2 ? remat_mul(f, x, b) : remat_add(f, x, a);
    remat_fn_output(f, x);
    return f;
}

typedef struct {
    double ns_per_op, min_ns_per_op, compile_ms;
    long long ops_executed;
    size_t arena_bytes;
    double value;
} result;

static int measure(const remat_fn *f, int reps, result *r)
{
    double t0 = bench_wall_ns();
    remat_program *p;
    if (remat_compile(f, remat_backend_cpu(), &p) != REMAT_OK) {
        fprintf(stderr, "bench_dispatch: compile: %s\n", remat_last_error());
        return 1;
    }
    r->compile_ms = (bench_wall_ns() - t0) * 1e-6;
    double x = 1.0;
    remat_tensor in = remat_tensor_f64(&x, 0, NULL), out = remat_tensor_f64(&r->value, 0, NULL);
    remat_stats st;
    double *ns = malloc(sizeof *ns * (size_t)reps);
    for (int rep = -1; rep < reps; rep++) { /* one warm-up run */
        double t1 = bench_wall_ns();
        if (remat_run(p, 1, &in, 1, &out, &st) != REMAT_OK) {
            fprintf(stderr, "bench_dispatch: run: %s\n", remat_last_error());
            return 1;
        }
        double t2 = bench_wall_ns();
        if (rep >= 0)
            ns[rep] = (t2 - t1) / (double)(st.ops_executed ? st.ops_executed : 1);
    }
    r->ops_executed = (long long)st.ops_executed;
    r->ns_per_op = bench_median(ns, reps);
    r->min_ns_per_op = bench_minimum(ns, reps);
    remat_memory_plan plan;
    remat_program_plan(p, &plan);
    r->arena_bytes = plan.arena_bytes;
    free(ns);
    remat_program_free(p);
    return 0;
}

int main(int argc, char **argv)
{
    int ops = 100000, reps = 51;
    bool smoke = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--smoke"))
            ops = 1000, reps = 5, smoke = true;
        else if (!strcmp(argv[i], "--ops") && i + 1 < argc)
            ops = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--smoke] [--ops N] [--reps N]\n", argv[0]);
            return 2;
        }
    }
    if (ops < 2 || reps < 1)
        return fprintf(stderr, "bench_dispatch: need ops >= 2, reps >= 1\n"), 2;

    remat_fn *f = build_chain(ops), *g = NULL;
    if (remat_fn_status(f) != REMAT_OK || remat_grad(f, 0, NULL, &g) != REMAT_OK) {
        fprintf(stderr, "bench_dispatch: build: %s\n", remat_last_error());
        return 1;
    }
    result fwd, bwd;
    if (measure(f, reps, &fwd) || measure(g, reps, &bwd))
        return 1;

    /* expected values: the chain run in plain C; the derivative is 0.5^(ops/2) */
    double x = 1.0;
    for (int i = 0; i < ops; i++)
        x = i % 2 ? x * 0.5 : x + 0.5;
    double dx = pow(0.5, (double)(ops / 2));
    bool ok = fwd.value == x && fabs(bwd.value - dx) <= 1e-12 * fabs(dx);

    printf("{\"bench\":\"dispatch\", \"ops\":%d, \"reps\":%d, \"target_ns\":10, "
           "\"ns_per_op_median\":%.3f, \"ns_per_op_min\":%.3f, \"ops_executed\":%lld, \"arena_bytes\":%zu, "
           "\"compile_ms\":%.2f,\n \"grad\":{\"ns_per_op_median\":%.3f, \"ns_per_op_min\":%.3f, "
           "\"ops_executed\":%lld, \"arena_bytes\":%zu, \"compile_ms\":%.2f}, \"smoke\":%s, \"ok\":%s}\n",
           ops, reps, fwd.ns_per_op, fwd.min_ns_per_op, fwd.ops_executed, fwd.arena_bytes, fwd.compile_ms,
           bwd.ns_per_op, bwd.min_ns_per_op, bwd.ops_executed, bwd.arena_bytes, bwd.compile_ms,
           smoke ? "true" : "false", ok ? "true" : "false");
    if (!ok)
        fprintf(stderr, "bench_dispatch: value %.17g (expected %.17g), derivative %.17g (expected %.17g)\n",
                fwd.value, x, bwd.value, dx);
    remat_fn_free(g);
    remat_fn_free(f);
    return ok ? 0 : 1;
}

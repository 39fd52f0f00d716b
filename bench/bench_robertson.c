/*
 * bench_robertson.c — the gradient of Robertson's stiff kinetics with
 * respect to its three rate constants: remat (Rodas5 steps + the scan's
 * checkpointed adjoint) against SUNDIALS CVODES (BDF + CVodeB), each at the
 * cheapest setting that reaches 1e-6 relative accuracy on the gradient.
 *
 *   taskset -c 1 env OPENBLAS_NUM_THREADS=1 ./build/bench/bench_robertson [--smoke]
 *
 * Problem: k = (0.04, 3e7, 1e4), y(0) = (1, 0, 0), L = A(T) + 1e4 B(T) at
 * T = 1e5 (examples/robertson/robertson.mech). Reference gradient: CVODES at
 * rtol 1e-12 (tests/test_models_robertson.c holds remat to it). Accuracy is
 * the worst relative error over the three components.
 *
 * remat: a fixed log-spaced grid (PER_DECADE intervals per decade from 1e-5
 * to 1e5, n equal Rodas5 steps in each; 2 per decade took the least time of
 * 1, 2 and 4), n the smallest of a ladder that meets 1e-6; the gradient
 * program compiled once (its compile time reported apart, as an optimiser
 * compiles once and runs many times: REMAT_JIT=always unless the
 * environment names a policy; "first_compile_ms" (wall) and "_cpu_ms"
 * (with the assembler and linker) are the first program's,
 * which pays gcc in a process that finds no disk cache entry (cold) and
 * reads the entry in the next (warm): run it twice with a fresh
 * REMAT_CACHE_DIR to see both). Three adjoints of the same steps:
 *   store-all      every step's tape held at once (keep_interval_stores),
 *   intervals      remat_ode_integrate's default: each interval a checkpoint
 *                  region keeping its input state, re-run just before it is
 *                  reversed; store-all within the interval,
 *   binomial:8     the same, each interval's scan reversed under binomial:8;
 * and adaptive Rodas5 (opt.adaptive, through the same output times, atol =
 * 1e-6 rtol, the loosest rtol of a decade ladder that meets 1e-6), its
 * loops reversed under remat_while's default online schedule.
 * CVODES: the loosest rtol of a ladder (atol scaled per component,
 * robertson_cvodes.h) that meets 1e-6, its adjoint keeping every step's
 * Hermite data (no forward re-run). All timed round-robin (bench_util.h),
 * thread CPU time, medians of the rounds. Memory per adjoint, from the
 * plan: residual_bytes, what the forward leaves for the backward (store-all:
 * all 21 interval stores), and peak_snapshot_bytes, the largest one scan's
 * store holds.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "bench_util.h"
#include "remat/remat.h"
#ifdef HAVE_CVODES
#include "robertson_cvodes.h"
#endif

#define PER_DECADE 2
#define N_OUT (10 * PER_DECADE + 1)
#define N_VARIANTS 4 /* remat adjoints; CVODES is variant N_VARIANTS */

static const char *const VARIANT[N_VARIANTS] = {"store-all", "intervals", "binomial:8", "adaptive"};
#define TARGET 1e-6

static const double K[3] = {0.04, 3e7, 1e4}, W[3] = {1.0, 1e4, 0.0};
static const char *MECH = "species A, B, C\nparam k1 = 0.04\nparam k2 = 3e7\nparam k3 = 1e4\n"
                          "A -> B : k1\n2 B -> B + C : k2\nB + C -> A + C : k3\n";

typedef struct {
    remat_program *grad[N_VARIANTS];
    double y0[3], k[3], g[3];
#ifdef HAVE_CVODES
    rob_cv *cv;
    double y_out[3 * N_OUT], g_cv[3];
#endif
    double t[N_OUT];
} ctx_t;

/* CPU time of the process and its children (gcc's assembler and linker), ms */
static double cpu_ms(void)
{
    struct rusage a, b;
    getrusage(RUSAGE_SELF, &a);
    getrusage(RUSAGE_CHILDREN, &b);
    return (double)(a.ru_utime.tv_sec + a.ru_stime.tv_sec + b.ru_utime.tv_sec + b.ru_stime.tv_sec) * 1e3 +
           (double)(a.ru_utime.tv_usec + a.ru_stime.tv_usec + b.ru_utime.tv_usec + b.ru_stime.tv_usec) * 1e-3;
}

static double rel_err(const double *g, const double *ref)
{
    double w = 0;
    for (int c = 0; c < 3; c++)
        w = fmax(w, fabs(g[c] - ref[c]) / fabs(ref[c]));
    return w;
}

/* the compiled gradient dL/dk of n Rodas5 steps per interval under adjoint
 * variant v; NULL on error */
static remat_program *build_grad(const remat_mechanism *m, const double *t, int64_t n, int v, double rtol,
                                 double *compile_ms, double *compile_cpu_ms)
{
    remat_ode_options opt = {.method = REMAT_ODE_RODAS5, .n_times = N_OUT, .times = t, .steps = n,
                             .keep_interval_stores = v == 0};
    if (v == 3)
        opt = (remat_ode_options){.method = REMAT_ODE_RODAS5, .n_times = N_OUT, .times = t, .adaptive = true,
                                  .rtol = rtol, .atol = 1e-6 * rtol};
    if (v == 2)
        opt.scan.schedule = (remat_schedule_spec){.kind = REMAT_SCHED_BINOMIAL, .snapshots = 8};
    remat_fn *f = remat_fn_new("robertson_loss"), *g = NULL;
    remat_val a = remat_arg(f, "y0", REMAT_F64, 1, (int64_t[]){3});
    remat_val p = remat_arg(f, "k", REMAT_F64, 1, (int64_t[]){3}), ys;
    remat_program *prog = NULL;
    if (remat_ode_integrate(f, m, &opt, a, p, &ys) != REMAT_OK)
        goto done;
    remat_val w = remat_const_data(f, REMAT_F64, 1, (int64_t[]){3}, W);
    remat_fn_output(f, remat_sum(f, remat_mul(f, remat_index(f, ys, N_OUT - 1), w), 1, (int[]){0}));
    if (remat_grad(f, 1, (int[]){1}, &g) != REMAT_OK)
        goto done;
    double t0 = bench_wall_ns(), c0 = cpu_ms();
    if (remat_compile(g, remat_backend_cpu(), &prog) != REMAT_OK)
        prog = NULL;
    *compile_ms = (bench_wall_ns() - t0) * 1e-6;
    *compile_cpu_ms = cpu_ms() - c0;
done:
    if (!prog)
        fprintf(stderr, "bench_robertson: %s\n", remat_last_error());
    remat_fn_free(g);
    remat_fn_free(f);
    return prog;
}

static int run_remat(ctx_t *c, int v)
{
    remat_tensor in[2] = {remat_tensor_f64(c->y0, 1, (int64_t[]){3}), remat_tensor_f64(c->k, 1, (int64_t[]){3})};
    remat_tensor out[1] = {remat_tensor_f64(c->g, 1, (int64_t[]){3})};
    return remat_run(c->grad[v], 2, in, 1, out, NULL) != REMAT_OK;
}

static int run_variant(void *vc, int i, bool first)
{
    (void)first;
    ctx_t *c = vc;
    if (i < N_VARIANTS)
        return run_remat(c, i);
#ifdef HAVE_CVODES
    return rob_cv_run(c->cv, c->k, N_OUT, c->t, c->y_out, W, c->g_cv) != 0;
#else
    return 1;
#endif
}

int main(int argc, char **argv)
{
    int smoke = argc > 1 && strcmp(argv[1], "--smoke") == 0;
    int rounds = smoke ? 1 : 15;
    setenv("REMAT_JIT", "always", 0); /* compiled loops, unless the caller names a policy */
    const char *jit = getenv("REMAT_JIT");
    ctx_t c = {.y0 = {1, 0, 0}};
    memcpy(c.k, K, sizeof c.k);
    for (int i = 0; i < N_OUT; i++)
        c.t[i] = pow(10.0, -5.0 + (double)i / PER_DECADE);
    remat_mechanism *m;
    if (remat_mechanism_parse_string(MECH, NULL, &m) != REMAT_OK) {
        fprintf(stderr, "bench_robertson: %s\n", remat_last_error());
        return 1;
    }
    printf("{\n  \"benchmark\": \"robertson_gradient\",\n  \"T\": 1e5,\n  \"loss\": \"A(T) + 1e4 B(T)\",\n");
    printf("  \"target_rel_error\": %g,\n  \"rounds\": %d,\n", TARGET, rounds);
#ifdef HAVE_CVODES
    double ref[3], y_ref[3 * N_OUT];
    rob_cv *cref = rob_cv_new(1e-12);
    if (!cref || rob_cv_run(cref, K, N_OUT, c.t, y_ref, W, ref)) {
        fprintf(stderr, "bench_robertson: the CVODES reference failed\n");
        return 1;
    }
    rob_cv_free(cref);
    printf("  \"sundials\": \"%s\",\n  \"reference\": {\"solver\": \"cvodes bdf rtol 1e-12\", \"grad\": "
           "[%.12g, %.12g, %.12g]},\n", rob_cv_version(), ref[0], ref[1], ref[2]);
    /* CVODES: the loosest rtol that meets the target */
    static const double rtols[] = {1e-5, 5e-6, 2e-6, 1e-6, 5e-7, 2e-7, 1e-7, 5e-8, 2e-8, 1e-8, 1e-9, 1e-10, 1e-11};
    double rtol = 0, cv_err = 0;
    long sf = 0, sb = 0;
    for (size_t i = 0; i < sizeof rtols / sizeof rtols[0] && !c.cv; i++) {
        rob_cv *cv = rob_cv_new(rtols[i]);
        double g[3];
        if (cv && !rob_cv_run(cv, K, N_OUT, c.t, c.y_out, W, g) && (cv_err = rel_err(g, ref)) <= TARGET) {
            c.cv = cv, rtol = rtols[i];
            rob_cv_steps(cv, &sf, &sb);
        } else {
            rob_cv_free(cv);
        }
    }
    /* remat: the fewest steps per interval that meet the target (the three
     * adjoints differentiate the same steps, to rounding) */
    static const int64_t ladder[] = {2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32};
    int64_t n = 0;
    double compile_ms[N_VARIANTS] = {0}, re_err = 0, g[N_VARIANTS][3], first_ms = -1, cpu, first_cpu = 0;
    for (size_t i = 0; i < sizeof ladder / sizeof ladder[0] && !n; i++) {
        remat_program *p = build_grad(m, c.t, ladder[i], 1, 0, &compile_ms[1], &cpu);
        if (!p)
            return 1;
        if (first_ms < 0)
            first_ms = compile_ms[1], first_cpu = cpu;
        c.grad[1] = p;
        if (run_remat(&c, 1) || (re_err = rel_err(c.g, ref)) > TARGET)
            remat_program_free(p), c.grad[1] = NULL;
        else
            n = ladder[i];
    }
    if (!c.cv || !n) {
        fprintf(stderr, "bench_robertson: %s reached %g\n", !c.cv ? "no CVODES rtol" : "no remat grid", TARGET);
        return 1;
    }
    static const double ad_rtols[] = {1e-5, 1e-6, 1e-7, 1e-8, 1e-9};
    double ad_rtol = 0, ad_err = 0;
    for (size_t i = 0; i < sizeof ad_rtols / sizeof ad_rtols[0] && !ad_rtol; i++) {
        remat_program *p = build_grad(m, c.t, 0, 3, ad_rtols[i], &compile_ms[3], &cpu);
        if (!p)
            return 1;
        c.grad[3] = p;
        if (run_remat(&c, 3) || (ad_err = rel_err(c.g, ref)) > TARGET)
            remat_program_free(p), c.grad[3] = NULL;
        else
            ad_rtol = ad_rtols[i];
    }
    if (!ad_rtol) {
        fprintf(stderr, "bench_robertson: no adaptive rtol reached %g\n", TARGET);
        return 1;
    }
    for (int v = 0; v < N_VARIANTS; v++) {
        if (!c.grad[v] && !(c.grad[v] = build_grad(m, c.t, n, v, 0, &compile_ms[v], &cpu)))
            return 1;
        if (run_remat(&c, v))
            return 1;
        memcpy(g[v], c.g, sizeof g[v]);
    }
    bench_timing tm[N_VARIANTS + 1] = {{0}};
    bench_timing *ts[N_VARIANTS + 1];
    for (int v = 0; v <= N_VARIANTS; v++)
        ts[v] = &tm[v];
    if (bench_time_round_robin(N_VARIANTS + 1, ts, run_variant, &c, rounds, smoke ? 1e5 : 2e7, false)) {
        fprintf(stderr, "bench_robertson: a timed run failed\n");
        return 1;
    }
    double mc = bench_median(tm[N_VARIANTS].samples, rounds);
    printf("  \"cvodes\": {\"method\": \"bdf-dense + CVodeB\", \"rtol\": %g, \"steps_forward\": %ld, "
           "\"steps_backward\": %ld, \"rel_error\": %.3g, \"median_ms\": %.4f},\n",
           rtol, sf, sb, cv_err, mc);
    printf("  \"remat\": {\"method\": \"rodas5\", \"jit\": \"%s\", \"first_compile_ms\": %.1f, \"first_compile_cpu_ms\": %.1f, \"intervals\": %d, "
           "\"steps_per_interval\": %lld, \"steps\": %lld, \"rel_error\": %.3g, \"adaptive_rtol\": %g, "
           "\"adaptive_rel_error\": %.3g,\n    \"adjoints\": [\n",
           jit, first_ms, first_cpu, N_OUT, (long long)n, (long long)(n * N_OUT), re_err, ad_rtol, ad_err);
    for (int v = 0; v < N_VARIANTS; v++) {
        remat_memory_plan plan;
        remat_program_plan(c.grad[v], &plan);
        double mr = bench_median(tm[v].samples, rounds);
        printf("      {\"adjoint\": \"%s\", \"grad_rel_to_intervals\": %.2g, \"peak_snapshot_bytes\": %zu, "
               "\"residual_bytes\": %zu, \"forward_evals\": %lld, \"compiled_loops\": %lld, \"compile_ms\": %.2f, \"median_ms\": %.4f, "
               "\"over_cvodes\": %.3f, \"paired_ratio\": %.3f}%s\n",
               VARIANT[v], rel_err(g[v], g[1]), plan.peak_snapshot_bytes, plan.residual_bytes, (long long)plan.forward_evals,
               (long long)plan.compiled_loops, compile_ms[v], mr, mr / mc,
               bench_paired_ratio(tm[v].samples, tm[N_VARIANTS].samples, rounds), v + 1 < N_VARIANTS ? "," : "");
    }
    printf("    ]}\n}\n");
    for (int v = 0; v <= N_VARIANTS; v++)
        free(tm[v].samples);
    rob_cv_free(c.cv);
    for (int v = 0; v < N_VARIANTS; v++)
        remat_program_free(c.grad[v]);
#else
    printf("  \"cvodes\": \"not built: SUNDIALS CVODES not found\"\n}\n");
#endif
    remat_mechanism_free(m);
    return 0;
}

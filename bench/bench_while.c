/*
 * bench_while.c — is the interpreted while-loop the bottleneck of an
 * adaptive integrator? A Tsit5 step of the seed's 3-species A -> B -> C
 * mechanism (remat_ode_step_body), N fixed steps of h = T/N, run as:
 *
 *   scan      remat_scan, compiled lane loops (REMAT_JIT=always unless set: the
 *             default policy would interpret a run this short at first)
 *   scan_int  remat_scan with REMAT_NO_JIT=1 at compile: the body interpreted
 *   while     remat_while (cond t < T - h/2, every step accepted): interpreted
 *
 * each for the forward pass alone and for d sum(y_N) / d k under online:10
 * (the while's default kind). Prints one JSON object: medians of
 * round-robin samples (thread CPU time) per step, and the while against
 * each scan variant.
 *
 *   taskset -c 1 env OPENBLAS_NUM_THREADS=1 ./build/bench/bench_while [--smoke]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "remat/remat.h"

enum { SCAN, SCAN_INT, WHILE, N_KIND };
static const char *const kind_name[N_KIND] = {"scan", "scan_int", "while"};

/* loss(y0 (3), k (2)) = sum(y_N) after n Tsit5 steps over [0, 1] */
static remat_fn *model(const remat_fn *step, int kind, int64_t n, const remat_schedule_spec *spec)
{
    const double h = 1.0 / (double)n;
    remat_fn *b = remat_fn_new("tsit5_carry_t");
    remat_val y = remat_arg(b, "y", REMAT_F64, 1, (int64_t[]){3}), t = remat_arg(b, "t", REMAT_F64, 0, NULL);
    remat_val k = remat_arg(b, "k", REMAT_F64, 1, (int64_t[]){2});
    remat_val hv = remat_scalar(b, REMAT_F64, h), y1;
    remat_call(b, step, 4, (remat_val[]){y, t, hv, k}, &y1);
    remat_fn_output(b, y1);
    remat_fn_output(b, remat_add(b, t, hv));
    if (kind == WHILE)
        remat_fn_output(b, remat_scalar(b, REMAT_F64, 1.0));
    remat_fn *f = remat_fn_new("loss");
    remat_val y0 = remat_arg(f, "y0", REMAT_F64, 1, (int64_t[]){3}), kk = remat_arg(f, "k", REMAT_F64, 1, (int64_t[]){2});
    remat_val init[2] = {y0, remat_scalar(f, REMAT_F64, 0.0)}, out[2];
    if (kind == WHILE) {
        remat_fn *c = remat_fn_new("t_below_end");
        remat_arg(c, "y", REMAT_F64, 1, (int64_t[]){3});
        remat_val ct = remat_arg(c, "t", REMAT_F64, 0, NULL);
        remat_arg(c, "k", REMAT_F64, 1, (int64_t[]){2});
        remat_fn_output(c, remat_lt(c, ct, remat_scalar(c, REMAT_F64, 1.0 - h / 2)));
        remat_while_options o = {.max_steps = n + 1, .schedule = spec};
        remat_while(f, c, b, 2, 1, init, 1, &kk, &o, out, NULL);
        remat_fn_free(c);
    } else {
        remat_scan_options o = {.schedule = *spec};
        remat_scan(f, b, n, 2, init, 0, NULL, 1, &kk, &o, out, NULL);
    }
    remat_fn_output(f, remat_sum_all(f, out[0]));
    remat_fn_free(b);
    return f;
}

typedef struct {
    remat_program *p[2][N_KIND]; /* [forward, gradient][kind] */
    remat_tensor in[2], out[2][2];
} ctx_t;

static int run(void *vc, int i, bool first)
{
    (void)first;
    ctx_t *c = vc;
    const int g = i / N_KIND;
    return remat_run(c->p[g][i % N_KIND], 2, c->in, 1, c->out[g], NULL) != REMAT_OK;
}

int main(int argc, char **argv)
{
    setenv("REMAT_JIT", "always", 0); /* "scan": the compiled loops, compiled before the clock starts */
    const int smoke = argc > 1 && strcmp(argv[1], "--smoke") == 0;
    const int64_t n = smoke ? 20 : 1000;
    const int rounds = smoke ? 1 : 9;
    remat_mechanism *m = NULL;
    if (remat_mechanism_parse_string(remat_pfr_seed()->mechanism, NULL, &m) != REMAT_OK) {
        fprintf(stderr, "bench_while: %s\n", remat_last_error());
        return 1;
    }
    remat_fn *step = remat_ode_step_body(m, REMAT_ODE_TSIT5, REMAT_F64);
    const remat_schedule_spec spec = {.kind = REMAT_SCHED_ONLINE, .snapshots = 10};
    ctx_t c = {0};
    double y0[3] = {1, 0, 0}, k[2] = {1.0, 0.5}, loss[2], dk[2];
    c.in[0] = remat_tensor_f64(y0, 1, (int64_t[]){3});
    c.in[1] = remat_tensor_f64(k, 1, (int64_t[]){2});
    c.out[0][0] = remat_tensor_f64(loss, 0, NULL);
    c.out[1][0] = remat_tensor_f64(dk, 1, (int64_t[]){2});
    double grads[N_KIND][2];
    for (int kind = 0; kind < N_KIND; kind++) {
        remat_fn *f = model(step, kind, n, &spec), *df = NULL;
        if (remat_fn_status(f) != REMAT_OK || remat_grad(f, 1, (int[]){1}, &df) != REMAT_OK) {
            fprintf(stderr, "bench_while: %s\n", remat_fn_status(f) ? remat_fn_error(f) : remat_last_error());
            return 1;
        }
        if (kind == SCAN_INT)
            setenv("REMAT_NO_JIT", "1", 1);
        if (remat_compile(f, remat_backend_cpu(), &c.p[0][kind]) != REMAT_OK ||
            remat_compile(df, remat_backend_cpu(), &c.p[1][kind]) != REMAT_OK) {
            fprintf(stderr, "bench_while: %s\n", remat_last_error());
            return 1;
        }
        unsetenv("REMAT_NO_JIT");
        if (run(&c, N_KIND + kind, true))
            return fprintf(stderr, "bench_while: %s\n", remat_last_error()), 1;
        memcpy(grads[kind], dk, sizeof dk);
        remat_fn_free(df);
        remat_fn_free(f);
    }
    bench_timing tm[2 * N_KIND] = {{0}};
    bench_timing *tp[2 * N_KIND];
    for (int i = 0; i < 2 * N_KIND; i++)
        tp[i] = &tm[i];
    if (bench_time_round_robin(2 * N_KIND, tp, run, &c, rounds, 2e6, false)) {
        fprintf(stderr, "bench_while: %s\n", remat_last_error());
        return 1;
    }
    printf("{\"bench\": \"while\", \"steps\": %lld, \"schedule\": \"online:10\", \"rounds\": %d,\n", (long long)n,
           rounds);
    printf(" \"gradients_bitwise_equal\": %s,\n",
           !memcmp(grads[SCAN], grads[WHILE], sizeof grads[0]) && !memcmp(grads[SCAN_INT], grads[WHILE], sizeof grads[0])
               ? "true" : "false");
    for (int g = 0; g < 2; g++) {
        printf(" \"%s_ns_per_step\": {", g ? "gradient" : "forward");
        double med[N_KIND];
        for (int kind = 0; kind < N_KIND; kind++) {
            med[kind] = bench_median(tm[g * N_KIND + kind].samples, rounds) * 1e6 / (double)n;
            printf("%s\"%s\": %.1f", kind ? ", " : "", kind_name[kind], med[kind]);
        }
        printf(", \"while_over_scan\": %.2f, \"while_over_scan_int\": %.2f}%s\n", med[WHILE] / med[SCAN],
               med[WHILE] / med[SCAN_INT], g ? "" : ",");
    }
    printf("}\n");
    for (int i = 0; i < 2 * N_KIND; i++)
        free(tm[i].samples);
    for (int g = 0; g < 2; g++)
        for (int kind = 0; kind < N_KIND; kind++)
            remat_program_free(c.p[g][kind]);
    remat_fn_free(step);
    remat_mechanism_free(m);
    return 0;
}

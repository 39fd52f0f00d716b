/*
 * bench_jacfwd.c — the Jacobian of a fit-shaped loop w.r.t. its few
 * parameters: remat_jacfwd (one JVP loop per parameter) against one VJP per
 * output (what reverse mode costs: a reverse pass per Jacobian row).
 *
 * The loop: a first-order chain of NS species, c' = c + dt (shift(k c) - k c),
 * T Euler steps, every step's state an output (T x NS measured cells),
 * differentiated w.r.t. the NS rate constants k. Prints one JSON object:
 * compile and run times (medians, the two variants interleaved per round)
 * and the largest difference between the two Jacobians.
 *
 *   taskset -c 1 env OPENBLAS_NUM_THREADS=1 ./build/bench/bench_jacfwd [--smoke]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "remat/remat.h"

#define NS 5

static remat_fn *chain(int64_t steps)
{
    const int64_t d[1] = {NS};
    remat_fn *body = remat_fn_new("step");
    remat_val c = remat_arg(body, "c", REMAT_F64, 1, d), k = remat_arg(body, "k", REMAT_F64, 1, d);
    remat_val kc = remat_mul(body, k, c);
    remat_val in = remat_pad(body, remat_slice(body, kc, (int64_t[]){0}, (int64_t[]){NS - 1}, NULL), (int64_t[]){1},
                             (int64_t[]){0}, NULL);
    remat_val c2 = remat_add(body, c, remat_mul_scalar(body, remat_sub(body, in, kc), 0.01));
    remat_fn_output(body, c2);
    remat_fn_output(body, c2);
    remat_fn *f = remat_fn_new("trajectory");
    remat_val c0 = remat_arg(f, "c0", REMAT_F64, 1, d), kk = remat_arg(f, "k", REMAT_F64, 1, d), co, ys;
    remat_scan(f, body, steps, 1, &c0, 0, NULL, 1, &kk, NULL, &co, &ys);
    remat_fn_output(f, ys);
    remat_fn_free(body);
    return f;
}

#define CHECK(x)                                                                                                       \
    do {                                                                                                               \
        if ((x) != REMAT_OK) {                                                                                         \
            fprintf(stderr, "bench_jacfwd: %s\n", remat_last_error());                                                \
            return 1;                                                                                                  \
        }                                                                                                              \
    } while (0)

int main(int argc, char **argv)
{
    int smoke = argc > 1 && strcmp(argv[1], "--smoke") == 0;
    const int64_t steps = smoke ? 10 : 200, ny = steps * NS, d[1] = {NS};
    const int rounds = smoke ? 1 : 9;
    remat_fn *f = chain(steps), *jf = NULL, *vj = NULL;
    remat_program *pj = NULL, *pv = NULL;
    double t0 = bench_wall_ns();
    CHECK(remat_jacfwd(f, 1, (int[]){1}, &jf));
    CHECK(remat_compile(jf, remat_backend_cpu(), &pj));
    double t1 = bench_wall_ns();
    CHECK(remat_vjp(f, 1, (int[]){1}, &vj));
    CHECK(remat_compile(vj, remat_backend_cpu(), &pv));
    double t2 = bench_wall_ns();
    double c0[NS] = {1, 0, 0, 0, 0}, k[NS] = {0.5, 1, 2, 0.1, 0.3}, row[NS];
    double *jac = calloc((size_t)(ny * NS), sizeof *jac), *jrev = calloc((size_t)(ny * NS), sizeof *jrev);
    double *ct = calloc((size_t)ny, sizeof *ct), *ysv = calloc((size_t)ny, sizeof *ysv);
    double *tf = calloc((size_t)rounds, sizeof *tf), *tr = calloc((size_t)rounds, sizeof *tr);
    if (!jac || !jrev || !ct || !ysv || !tf || !tr)
        return 1;
    remat_tensor in[3] = {remat_tensor_f64(c0, 1, d), remat_tensor_f64(k, 1, d),
                          remat_tensor_f64(ct, 2, (int64_t[]){steps, NS})};
    remat_tensor oj = remat_tensor_f64(jac, 3, (int64_t[]){steps, NS, NS});
    remat_tensor ov[2] = {remat_tensor_f64(ysv, 2, (int64_t[]){steps, NS}), remat_tensor_f64(row, 1, d)};
    for (int r = 0; r < rounds; r++) { /* interleaved: the machine's noise hits both */
        double a = bench_wall_ns();
        CHECK(remat_run(pj, 2, in, 1, &oj, NULL));
        double b = bench_wall_ns();
        for (int64_t e = 0; e < ny; e++) {
            memset(ct, 0, sizeof *ct * (size_t)ny);
            ct[e] = 1;
            CHECK(remat_run(pv, 3, in, 2, ov, NULL));
            memcpy(jrev + e * NS, row, sizeof row);
        }
        tf[r] = (b - a) * 1e-6;
        tr[r] = (bench_wall_ns() - b) * 1e-6;
    }
    double maxd = 0;
    for (int64_t i = 0; i < ny * NS; i++) {
        double dd = jac[i] > jrev[i] ? jac[i] - jrev[i] : jrev[i] - jac[i];
        maxd = dd > maxd ? dd : maxd;
    }
    printf("{\"bench\": \"jacfwd\", \"steps\": %lld, \"outputs\": %lld, \"parameters\": %d, \"rounds\": %d,\n"
           " \"jacfwd\": {\"build_compile_ms\": %.3f, \"run_ms_median\": %.4f},\n"
           " \"vjp_rows\": {\"build_compile_ms\": %.3f, \"run_ms_median\": %.4f, \"runs\": %lld},\n"
           " \"max_abs_diff\": %.3g}\n",
           (long long)steps, (long long)ny, NS, rounds, (t1 - t0) * 1e-6, bench_median(tf, rounds),
           (t2 - t1) * 1e-6, bench_median(tr, rounds), (long long)ny, maxd);
    int bad = !(maxd <= 1e-12);
    free(jac), free(jrev), free(ct), free(ysv), free(tf), free(tr);
    remat_program_free(pj);
    remat_program_free(pv);
    remat_fn_free(jf);
    remat_fn_free(vj);
    remat_fn_free(f);
    return bad;
}

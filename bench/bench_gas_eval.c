/*
 * bench_gas_eval.c — the cost of ONE evaluation of a gas mechanism's
 * right-hand side (remat_kinetics_rhs_fn: the vector lowering of
 * gas_lower.c) and of ONE closed-form Jacobian (remat_gas_jacobian, with
 * the right-hand side it returns beside it), each a compiled program run
 * on the inlet state: what an integrator pays per call (Rodas5: eight
 * right-hand sides and one Jacobian per step attempt; a BDF method: about
 * one right-hand side per Newton iteration and a Jacobian now and then).
 *
 *   ./build/bench/bench_gas_eval MECH COMPOSITION T0 [ROUNDS] [isothermal]
 *   OPENBLAS_NUM_THREADS=1 taskset -c 1 ./build/bench/bench_gas_eval data/mechanisms/gri30.yaml \
 *       CH4=1,O2=2,N2=7.52 1500 15
 *
 * One JSON document on stdout: per call, the median over ROUNDS of the
 * thread's CPU time (us) and the wall time (us), the two programs sampled
 * round-robin (bench_util.h), and each function's node count (the graph's
 * ops before compiling); exit status 1 when the two programs' right-hand
 * sides differ by more than 1e-12 of the largest (bench_smoke_gas_eval).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "remat/remat.h"

typedef struct {
    remat_program *prog[2];
    remat_tensor in[2][3], out[2][2];
    int nin[2], nout[2];
} ctx_t;

static int run(void *c, int i, bool first)
{
    (void)first;
    ctx_t *x = c;
    return remat_run(x->prog[i], x->nin[i], x->in[i], x->nout[i], x->out[i], NULL) != REMAT_OK;
}

static void die(const char *what)
{
    fprintf(stderr, "bench_gas_eval: %s: %s\n", what, remat_last_error());
    exit(1);
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: bench_gas_eval MECH COMPOSITION T0 [ROUNDS] [isothermal]\n");
        return 2;
    }
    int rounds = argc > 4 ? atoi(argv[4]) : 15;
    if (rounds < 1) {
        fprintf(stderr, "bench_gas_eval: ROUNDS must be >= 1\n");
        return 2;
    }
    int iso = argc > 5 && !strcmp(argv[5], "isothermal");
    remat_gas_options go = {.energy = iso ? REMAT_GAS_ISOTHERMAL : REMAT_GAS_ADIABATIC};
    remat_mechanism *m;
    if (remat_gas_read(argv[1], &go, &m) != REMAT_OK)
        die("reading");
    int64_t S = remat_mechanism_species_count(m), P = remat_mechanism_param_count(m);
    double *y = calloc((size_t)S, sizeof *y), *p = calloc((size_t)P, sizeof *p), t = 0;
    double *dy = calloc((size_t)S, sizeof *dy), *dy2 = calloc((size_t)S, sizeof *dy2);
    double *J = calloc((size_t)(S * S), sizeof *J);
    if (remat_gas_state(m, atof(argv[3]), argv[2], y) != REMAT_OK)
        die("composition");
    remat_mechanism_param_values(m, p);

    remat_fn *rf = remat_kinetics_rhs_fn(m, REMAT_F64);
    if (!rf)
        die("right-hand side");
    remat_fn *jf = remat_fn_new("gas_jacobian");
    remat_val jy = remat_arg(jf, "y", REMAT_F64, 1, &S), jp = remat_arg(jf, "params", REMAT_F64, 1, &P), jv, jd;
    if (remat_gas_jacobian(jf, m, jy, jp, &jv, &jd) != REMAT_OK)
        die("Jacobian");
    remat_fn_output(jf, jv);
    remat_fn_output(jf, jd);
    ctx_t c = {.nin = {3, 2}, .nout = {1, 2}};
    double ct = bench_wall_ns();
    if (remat_compile(rf, remat_backend_cpu(), &c.prog[0]) != REMAT_OK)
        die("compiling the right-hand side");
    double compile_rhs = (bench_wall_ns() - ct) * 1e-6;
    ct = bench_wall_ns();
    if (remat_compile(jf, remat_backend_cpu(), &c.prog[1]) != REMAT_OK)
        die("compiling the Jacobian");
    double compile_jac = (bench_wall_ns() - ct) * 1e-6;
    c.in[0][0] = remat_tensor_f64(&t, 0, NULL);
    c.in[0][1] = remat_tensor_f64(y, 1, &S);
    c.in[0][2] = remat_tensor_f64(p, 1, &P);
    c.out[0][0] = remat_tensor_f64(dy, 1, &S);
    c.in[1][0] = remat_tensor_f64(y, 1, &S);
    c.in[1][1] = remat_tensor_f64(p, 1, &P);
    c.out[1][0] = remat_tensor_f64(J, 2, ((int64_t[]){S, S}));
    c.out[1][1] = remat_tensor_f64(dy2, 1, &S);
    bench_timing tr = {0}, tj = {0};
    bench_timing *ts[2] = {&tr, &tj};
    if (bench_time_round_robin(2, ts, run, &c, rounds, 5e7, true))
        die("running");
    /* the two programs' right-hand sides agree (one lowering, two graphs) */
    double dmax = 0, scale = 0;
    for (int64_t i = 0; i < S; i++) {
        double d = dy[i] - dy2[i];
        dmax = d > dmax ? d : -d > dmax ? -d : dmax;
        scale = fabs(dy[i]) > scale ? fabs(dy[i]) : scale;
    }
    printf("{\"mechanism\": \"%s\", \"energy\": \"%s\", \"species\": %d, \"reactions\": %d, \"T0\": %s, "
           "\"rounds\": %d,\n",
           argv[1], iso ? "isothermal" : "adiabatic", remat_gas_species_count(m), remat_mechanism_reaction_count(m),
           argv[3], rounds);
    printf(" \"rhs\": {\"nodes\": %d, \"compile_ms\": %.3f, \"calls_per_sample\": %d, \"median_cpu_us\": %.3f, "
           "\"median_us\": %.3f},\n",
           remat_fn_num_nodes(rf), compile_rhs, tr.inner, 1e3 * bench_median(tr.samples, rounds),
           1e3 * bench_median(tr.wall, rounds));
    printf(" \"jacobian\": {\"nodes\": %d, \"compile_ms\": %.3f, \"calls_per_sample\": %d, \"median_cpu_us\": %.3f, "
           "\"median_us\": %.3f},\n",
           remat_fn_num_nodes(jf), compile_jac, tj.inner, 1e3 * bench_median(tj.samples, rounds),
           1e3 * bench_median(tj.wall, rounds));
    printf(" \"jacobian_over_rhs\": %.3f, \"rhs_difference_relative\": %.3g}\n",
           bench_median(tj.samples, rounds) / bench_median(tr.samples, rounds), scale > 0 ? dmax / scale : dmax);
    int bad = !(dmax <= 1e-12 * scale);
    if (bad)
        fprintf(stderr, "bench_gas_eval: the two programs' right-hand sides differ by %g of %g\n", dmax, scale);
    remat_program_free(c.prog[0]);
    remat_program_free(c.prog[1]);
    remat_fn_free(rf);
    remat_fn_free(jf);
    remat_mechanism_free(m);
    free(tr.samples), free(tr.wall), free(tj.samples), free(tj.wall);
    free(y), free(p), free(dy), free(dy2), free(J);
    return bad;
}

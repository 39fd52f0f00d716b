/*
 * simulate.c — seed 004, section 7: A -> B -> C in a plug-flow reactor,
 * integrated with 1000 explicit Euler steps, and the gradient of -C_B at the
 * outlet with respect to the rate constants, by reverse mode through the
 * integration under a binomial checkpoint schedule (10 snapshots instead of
 * 1000 stored states).
 *
 *   def objective(params):                      # the seed's JAX
 *       final_C, _ = simulate_pfr(C0, k1, k2, L=10.0, n_steps=1000)
 *       return -final_C[1]
 *   grad(objective)(jnp.array([1.0, 0.5]))      # [0.012349, 0.107305]
 *
 * Built step by step from the library's modules: a mechanism (text), its ODE
 * integrated as a scan (remat/ode.h), value_and_grad of the objective
 * (remat/ad.h), compiled and run (remat/exec.h). remat/pfr.h packages the
 * same (remat_pfr_outlet, remat_pfr_objective), and `remat pfr simulate`
 * runs it from the command line. Prints the seed's lines and exits non-zero
 * if a number is off.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <remat/remat.h>

static int failures;

/* the value printed as the seed prints it, and to 1e-10 of the f64 value */
static void check(const char *what, const char *fmt, double got, const char *printed, double exact)
{
    char buf[64];
    snprintf(buf, sizeof buf, fmt, got);
    if (strcmp(buf, printed) || !(fabs(got - exact) <= 1e-10 * fabs(exact) + 1e-15)) {
        fprintf(stderr, "FAIL %s: got %.17g (printed %s), the seed has %s (%.17g)\n", what, got, buf, printed, exact);
        failures++;
    }
}

static int die(const char *where)
{
    fprintf(stderr, "simulate: %s: %s\n", where, remat_last_error());
    return 1;
}

/* Runs a compiled program on f64 buffers (shapes from the program). */
static remat_status run(remat_program *p, double *const *in, double *const *out)
{
    remat_tensor ti[2], to[3];
    int ni = remat_program_num_inputs(p), no = remat_program_num_outputs(p);
    for (int i = 0; i < ni; i++) {
        ti[i] = remat_program_input_desc(p, i);
        ti[i].data = in[i];
    }
    for (int i = 0; i < no; i++) {
        to[i] = remat_program_output_desc(p, i);
        to[i].data = out[i];
    }
    return remat_run(p, ni, ti, no, to, NULL);
}

/* f(C0, k) = C(L), or -C_B(L) when objective: 1000 Euler steps of h = 0.01
 * over L = 10, one scan whose reverse pass keeps 10 snapshots */
static remat_fn *outlet_fn(const remat_mechanism *m, int objective)
{
    double L = 10.0;
    remat_ode_options opt = {
        .method = REMAT_ODE_EULER,
        .n_times = 1,
        .times = &L,
        .steps = 1000,
        .scan = {.schedule = {.kind = REMAT_SCHED_BINOMIAL, .snapshots = 10}},
    };
    remat_fn *f = remat_fn_new(objective ? "objective" : "outlet");
    remat_val C0 = remat_arg(f, "C0", REMAT_F64, 1, ((int64_t[]){3}));
    remat_val k = remat_arg(f, "k", REMAT_F64, 1, ((int64_t[]){2}));
    remat_val ys; /* f64[1,3]: the state at z = L */
    if (remat_ode_integrate(f, m, &opt, C0, k, &ys) != REMAT_OK) {
        remat_fn_free(f);
        return NULL;
    }
    remat_val C = remat_index(f, ys, 0);
    remat_fn_output(f, objective ? remat_neg(f, remat_index(f, C, 1)) : C);
    return f;
}

int main(void)
{
    /* the reaction network; 'indep z' names the axial coordinate */
    remat_mechanism *m;
    if (remat_mechanism_parse_string("indep z\n"
                                     "param k1 = 1.0\n"
                                     "param k2 = 0.5\n"
                                     "A -> B : k1      # rate k1*A\n"
                                     "B -> C : k2      # rate k2*B\n",
                                     "abc", &m) != REMAT_OK)
        return die("mechanism");

    /* outlet(C0, k) = C(L), and objective(C0, k) = -C_B(L) with its gradient
     * with respect to k (argument 1) */
    remat_fn *f = outlet_fn(m, 0), *obj = outlet_fn(m, 1), *vg;
    if (!f || !obj)
        return die("integrate");
    if (remat_value_and_grad(obj, 1, (int[]){1}, &vg) != REMAT_OK)
        return die("value_and_grad");

    remat_program *pf, *pg;
    if (remat_compile_env(f, &pf) != REMAT_OK || remat_compile_env(vg, &pg) != REMAT_OK)
        return die("compile");
    double c0[3] = {1.0, 0.0, 0.0}, kv[2] = {1.0, 0.5}, c[3], loss, g[2];
    if (run(pf, (double *[]){c0, kv}, (double *[]){c}) != REMAT_OK ||
        run(pg, (double *[]){c0, kv}, (double *[]){&loss, g}) != REMAT_OK)
        return die("run");

    printf("PFR Simulation Results:\n");
    printf("  Initial: A=%.3f, B=%.3f, C=%.3f\n", c0[0], c0[1], c0[2]);
    printf("  Final: A=%.6f, B=%.6f, C=%.6f\n", c[0], c[1], c[2]);
    printf("  Mass balance: %.6f (should be 1.0)\n", c[0] + c[1] + c[2]);
    printf("Gradients for PFR optimization (binomial checkpointing, 10 snapshots):\n");
    printf("  d(-C_B)/dk1 = %.6f\n", g[0]);
    printf("  d(-C_B)/dk2 = %.6f\n", g[1]);

    /* the seed's numbers; the full-precision ones re-derived in f64 */
    check("A", "%.6f", c[0], "0.000043", 4.317124741065819e-05);
    check("B", "%.6f", c[1], "0.013222", 0.013221594662842685);
    check("C", "%.6f", c[2], "0.986735", 0.9867352340897478);
    check("mass balance", "%.6f", c[0] + c[1] + c[2], "1.000000", 1.0);
    check("-C_B", "%.6f", loss, "-0.013222", -0.013221594662842685);
    check("d(-C_B)/dk1", "%.6f", g[0], "0.012349", 0.012349448250506132);
    check("d(-C_B)/dk2", "%.6f", g[1], "0.107305", 0.10730492281164114);

    /* a program reads the scan data of the function it was compiled from:
     * free programs before functions */
    remat_program_free(pf);
    remat_program_free(pg);
    remat_fn_free(vg);
    remat_fn_free(obj);
    remat_fn_free(f);
    remat_mechanism_free(m);
    if (failures)
        fprintf(stderr, "simulate: %d value(s) differ from the seed\n", failures);
    return failures ? 1 : 0;
}

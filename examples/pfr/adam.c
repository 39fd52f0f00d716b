/*
 * adam.c — seed 004, section 7: choose the rate constants of A -> B -> C that
 * maximize the intermediate B at the reactor outlet, with Adam.
 *
 *   optimizer = optax.adam(0.1)                  # the seed's JAX loop
 *   params = jnp.array([0.5, 0.3])
 *   for i in range(50):
 *       loss, grads = jax.value_and_grad(objective)(params)   # objective = -C_B(L)
 *       updates, opt_state = optimizer.update(grads, opt_state)
 *       params = optax.apply_updates(params, updates)
 *       params = jnp.maximum(params, 0.01)
 *
 * The same loop in C: the objective and its gradient are one compiled
 * value_and_grad program through 1000 Euler steps (a scan with binomial
 * checkpointing), and remat_adam (remat/optim.h) is optax.adam with the
 * max(params, 0.01) projection as a lower bound. Prints the seed's table
 * exactly as its Python prints it and exits non-zero if a row differs.
 * remat/pfr.h packages the loop (remat_pfr_adam); `remat pfr optimize` runs
 * it from the command line.
 */
#include <stdio.h>
#include <string.h>

#include <remat/remat.h>

static const char *const seed_rows[] = {
    /* iteration, k1 and k2 after the update, C_B before it */
    "0          0.4000     0.2000     0.107273  ", "10         0.6240     0.0100     0.917683  ",
    "20         0.8598     0.0100     0.915442  ", "30         0.9231     0.0100     0.914671  ",
    "40         0.9187     0.0100     0.914670  ", "49         0.8885     0.0100     0.914955  ",
};

static int die(const char *where)
{
    fprintf(stderr, "adam: %s: %s\n", where, remat_last_error());
    return 1;
}

/* objective(C0, k) = -C_B(L) after 1000 Euler steps of h = 0.01 */
static remat_fn *objective_fn(const remat_mechanism *m)
{
    double L = 10.0;
    remat_ode_options opt = {
        .method = REMAT_ODE_EULER,
        .n_times = 1,
        .times = &L,
        .steps = 1000,
        .scan = {.schedule = {.kind = REMAT_SCHED_BINOMIAL, .snapshots = 10}},
    };
    remat_fn *f = remat_fn_new("objective");
    remat_val C0 = remat_arg(f, "C0", REMAT_F64, 1, ((int64_t[]){3}));
    remat_val k = remat_arg(f, "k", REMAT_F64, 1, ((int64_t[]){2}));
    remat_val ys;
    if (remat_ode_integrate(f, m, &opt, C0, k, &ys) != REMAT_OK) {
        remat_fn_free(f);
        return NULL;
    }
    remat_fn_output(f, remat_neg(f, remat_index(f, remat_index(f, ys, 0), 1)));
    return f;
}

int main(void)
{
    remat_mechanism *m;
    if (remat_mechanism_parse_string("indep z\nparam k1 = 1.0\nparam k2 = 0.5\nA -> B : k1\nB -> C : k2\n", "abc",
                                     &m) != REMAT_OK)
        return die("mechanism");
    remat_fn *f = objective_fn(m), *vg;
    if (!f)
        return die("integrate");
    if (remat_value_and_grad(f, 1, (int[]){1}, &vg) != REMAT_OK) /* (loss, d loss / d k) */
        return die("value_and_grad");
    remat_program *p;
    if (remat_compile_env(vg, &p) != REMAT_OK)
        return die("compile");

    double C0[3] = {1.0, 0.0, 0.0}, params[2] = {0.5, 0.3}, loss, grads[2];
    remat_tensor in[2] = {remat_tensor_f64(C0, 1, (int64_t[]){3}), remat_tensor_f64(params, 1, (int64_t[]){2})};
    remat_tensor out[2] = {remat_tensor_f64(&loss, 0, NULL), remat_tensor_f64(grads, 1, (int64_t[]){2})};

    remat_adam_options o = remat_adam_optax(0.1); /* optax.adam(0.1) */
    o.lo = (double[]){0.01, 0.01};                /* params = jnp.maximum(params, 0.01) */
    remat_adam *adam;
    if (remat_adam_new(2, &o, &adam) != REMAT_OK)
        return die("adam");

    int failures = 0, row = 0;
    printf("Optimizing rate constants to maximize intermediate B:\n");
    printf("%-10s %-10s %-10s %-10s\n", "Iteration", "k1", "k2", "C_B");
    printf("----------------------------------------\n");
    for (int i = 0; i < 50; i++) {
        if (remat_run(p, 2, in, 2, out, NULL) != REMAT_OK) /* reads params in place */
            return die("run");
        if (remat_adam_update(adam, params, grads) != REMAT_OK)
            return die("adam update");
        if (i % 10 == 0 || i == 49) {
            char line[128];
            snprintf(line, sizeof line, "%-10d %-10.4f %-10.4f %-10.6f", i, params[0], params[1], -loss);
            printf("%s\n", line);
            if (strcmp(line, seed_rows[row++])) {
                fprintf(stderr, "FAIL iteration %d: the seed prints\n%s\n", i, seed_rows[row - 1]);
                failures++;
            }
        }
    }
    if (remat_run(p, 2, in, 2, out, NULL) != REMAT_OK)
        return die("run");
    char best[128];
    snprintf(best, sizeof best, "Optimal: k1=%.4f, k2=%.4f\nMaximum B concentration: %.6f", params[0], params[1],
             -loss);
    printf("\n%s\n", best);
    if (strcmp(best, "Optimal: k1=0.8885, k2=0.0100\nMaximum B concentration: 0.914998")) {
        fprintf(stderr, "FAIL optimum: the seed prints k1=0.8885, k2=0.0100, C_B=0.914998\n");
        failures++;
    }

    remat_adam_free(adam);
    remat_program_free(p); /* programs before the functions they were compiled from */
    remat_fn_free(vg);
    remat_fn_free(f);
    remat_mechanism_free(m);
    return failures ? 1 : 0;
}

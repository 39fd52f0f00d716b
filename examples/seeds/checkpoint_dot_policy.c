/*
 * checkpoint_dot_policy.c — seed 000: jax.checkpoint of a whole loss with the
 * dots_with_no_batch_dims_saveable policy.
 *
 *   def loss(w1, w2, x):
 *       hidden = jax.nn.relu(x @ w1)
 *       output = hidden @ w2
 *       return jnp.sum(output ** 2)
 *   checkpointed_loss = jax.checkpoint(
 *       loss, policy=jax.checkpoint_policies.dots_with_no_batch_dims_saveable)
 *
 * With identity weights and x = [[1, 1]] (float32) the loss is 2. The program
 * also prints the gradient (every entry 2) and the residuals the backward
 * keeps: the arguments and the two dot_general outputs; relu's output is
 * recomputed from the saved x @ w1. Exits non-zero if a value is off.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <remat/remat.h>

enum { N = 1, D = 2 };

static int failures;

/* f32 result against the expected value, relative tolerance 1e-6 */
static void check(const char *what, double got, double want)
{
    double err = fabs(got - want) / fmax(fabs(want), 1e-30);
    if (!(err <= 1e-6)) {
        fprintf(stderr, "FAIL %s: got %.17g, expected %.17g (rel. error %.3g)\n", what, got, want, err);
        failures++;
    }
}

static int die(const char *where)
{
    fprintf(stderr, "%s: %s\n", where, remat_last_error());
    return 1;
}

/* loss(w1, w2, x) = sum((relu(x @ w1) @ w2)^2) */
static remat_fn *build_loss(void)
{
    remat_fn *f = remat_fn_new("loss");
    remat_val w1 = remat_arg(f, "w1", REMAT_F32, 2, ((int64_t[]){D, D}));
    remat_val w2 = remat_arg(f, "w2", REMAT_F32, 2, ((int64_t[]){D, D}));
    remat_val x = remat_arg(f, "x", REMAT_F32, 2, ((int64_t[]){N, D}));
    remat_val hidden = remat_relu(f, remat_matmul(f, x, w1));
    remat_val output = remat_matmul(f, hidden, w2);
    remat_fn_output(f, remat_sum_all(f, remat_square(f, output)));
    return f;
}

int main(void)
{
    remat_fn *loss = build_loss();
    if (remat_fn_status(loss) != REMAT_OK)
        return fprintf(stderr, "build: %s\n", remat_fn_error(loss)), 1;
    remat_fn *ckpt = remat_checkpoint(loss, remat_dots_with_no_batch_dims_saveable);
    if (!ckpt)
        return die("checkpoint");

    float w1[D * D] = {1, 0, 0, 1}, w2[D * D] = {1, 0, 0, 1}, x[N * D] = {1, 1};
    remat_tensor in[3] = {
        remat_tensor_f32(w1, 2, (int64_t[]){D, D}),
        remat_tensor_f32(w2, 2, (int64_t[]){D, D}),
        remat_tensor_f32(x, 2, (int64_t[]){N, D}),
    };

    /* the loss itself */
    remat_program *prog;
    if (remat_compile(ckpt, remat_backend_cpu(), &prog) != REMAT_OK)
        return die("compile loss");
    float value;
    remat_tensor out = remat_tensor_f32(&value, 0, NULL);
    if (remat_run(prog, 3, in, 1, &out, NULL) != REMAT_OK)
        return die("run loss");
    printf("checkpoint_dot_policy(w1=I, w2=I, x=[[1, 1]]) = %.17g\n", (double)value);
    check("loss", value, 2.0);

    /* value and gradient w.r.t. all three arguments */
    remat_fn *vg;
    if (remat_value_and_grad(ckpt, 0, NULL, &vg) != REMAT_OK)
        return die("value_and_grad");
    remat_program *gprog;
    if (remat_compile(vg, remat_backend_cpu(), &gprog) != REMAT_OK)
        return die("compile grad");
    float v2, dw1[D * D], dw2[D * D], dx[N * D];
    remat_tensor outs[4] = {
        remat_tensor_f32(&v2, 0, NULL),
        remat_tensor_f32(dw1, 2, (int64_t[]){D, D}),
        remat_tensor_f32(dw2, 2, (int64_t[]){D, D}),
        remat_tensor_f32(dx, 2, (int64_t[]){N, D}),
    };
    remat_stats st;
    if (remat_run(gprog, 3, in, 4, outs, &st) != REMAT_OK)
        return die("run grad");
    check("value_and_grad value", v2, 2.0);
    /* out = [1, 1], d loss/d out = 2 out, so every entry of every gradient is 2 */
    const char *names[3] = {"d loss/d w1", "d loss/d w2", "d loss/d x"};
    const float *grads[3] = {dw1, dw2, dx};
    const int sizes[3] = {D * D, D * D, N * D};
    for (int a = 0; a < 3; a++) {
        printf("%s = [", names[a]);
        for (int i = 0; i < sizes[a]; i++) {
            printf("%s%.17g", i ? ", " : "", (double)grads[a][i]);
            check(names[a], grads[a][i], 2.0);
        }
        printf("]\n");
    }

    /* what the backward keeps (jax.ad_checkpoint.print_saved_residuals) */
    remat_residual_list *res;
    if (remat_saved_residuals(ckpt, 0, NULL, &res) != REMAT_OK)
        return die("saved_residuals");
    printf("saved residuals (%s, %zu bytes):\n", remat_policy_label(remat_dots_with_no_batch_dims_saveable),
           remat_residual_list_bytes(res));
    remat_residual_list_print(res, stdout);
    /* relu's output must be recomputed, never saved: the policy only permits dots */
    for (int i = 0; i < remat_residual_list_count(res); i++) {
        const remat_residual *e = remat_residual_list_get(res, i);
        if (e->kind == REMAT_RESIDUAL_OUTPUT && e->op != REMAT_OP_DOT_GENERAL) {
            fprintf(stderr, "FAIL residual %d is the output of %s, which the policy does not permit\n", i,
                    remat_op_name(e->op));
            failures++;
        }
    }
    printf("recomputed ops in the backward: %lld\n", (long long)st.recomputed_ops);

    remat_residual_list_free(res);
    remat_program_free(gprog);
    remat_program_free(prog);
    remat_fn_free(vg);
    remat_fn_free(ckpt);
    remat_fn_free(loss);
    if (failures)
        fprintf(stderr, "checkpoint_dot_policy: %d check(s) failed\n", failures);
    return failures ? 1 : 0;
}

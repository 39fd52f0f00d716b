/*
 * checkpointed_layer_loss.c — seed 001: jax.checkpoint of one helper (the
 * middle matmul) of a three-layer net.
 *
 *   def middle(y, w):
 *       return y @ w
 *   y1 = jax.nn.relu(x @ w1)
 *   y2 = jax.nn.relu(jax.checkpoint(middle)(y1, w2))
 *   y3 = y2 @ w3
 *   loss = jnp.sum(y3 ** 2)
 *
 * The second relu is outside the region. With identity weights and
 * x = [[1, 1]] (float32), y3 = [[1, 1]] and the loss is 2; every entry of
 * every gradient is 2. As the seed says, checkpointing one matmul saves
 * nothing (its VJP reads its operands, which are region inputs): the residual
 * report shows it. Exits non-zero if a value is off.
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

/* middle(y, w) = y @ w */
static remat_fn *build_middle(void)
{
    remat_fn *f = remat_fn_new("middle");
    remat_val y = remat_arg(f, "y", REMAT_F32, 2, ((int64_t[]){N, D}));
    remat_val w = remat_arg(f, "w", REMAT_F32, 2, ((int64_t[]){D, D}));
    remat_fn_output(f, remat_matmul(f, y, w));
    return f;
}

/* checkpointed_layer_loss(w1, w2, w3, x); `middle` is the checkpointed helper */
static remat_fn *build_loss(const remat_fn *middle)
{
    remat_fn *f = remat_fn_new("checkpointed_layer_loss");
    remat_val w1 = remat_arg(f, "w1", REMAT_F32, 2, ((int64_t[]){D, D}));
    remat_val w2 = remat_arg(f, "w2", REMAT_F32, 2, ((int64_t[]){D, D}));
    remat_val w3 = remat_arg(f, "w3", REMAT_F32, 2, ((int64_t[]){D, D}));
    remat_val x = remat_arg(f, "x", REMAT_F32, 2, ((int64_t[]){N, D}));
    remat_val y1 = remat_relu(f, remat_matmul(f, x, w1));
    remat_val y2 = remat_relu(f, remat_call1(f, middle, 2, ((remat_val[]){y1, w2})));
    remat_val y3 = remat_matmul(f, y2, w3);
    remat_fn_output(f, remat_sum_all(f, remat_square(f, y3)));
    return f;
}

int main(void)
{
    remat_fn *middle = build_middle();
    remat_fn *ckpt_middle = remat_checkpoint(middle, NULL); /* jax.checkpoint(middle): nothing_saveable */
    if (!ckpt_middle)
        return die("checkpoint");
    remat_fn *loss = build_loss(ckpt_middle);
    if (remat_fn_status(loss) != REMAT_OK)
        return fprintf(stderr, "build: %s\n", remat_fn_error(loss)), 1;

    float w[D * D] = {1, 0, 0, 1}, x[N * D] = {1, 1};
    remat_tensor tw = remat_tensor_f32(w, 2, (int64_t[]){D, D});
    remat_tensor in[4] = {tw, tw, tw, remat_tensor_f32(x, 2, (int64_t[]){N, D})};

    remat_program *prog;
    if (remat_compile(loss, remat_backend_cpu(), &prog) != REMAT_OK)
        return die("compile loss");
    float value;
    remat_tensor out = remat_tensor_f32(&value, 0, NULL);
    if (remat_run(prog, 4, in, 1, &out, NULL) != REMAT_OK)
        return die("run loss");
    printf("checkpointed_layer_loss(w1=w2=w3=I, x=[[1, 1]]) = %.17g\n", (double)value);
    check("loss", value, 2.0);

    remat_fn *vg;
    if (remat_value_and_grad(loss, 0, NULL, &vg) != REMAT_OK)
        return die("value_and_grad");
    remat_program *gprog;
    if (remat_compile(vg, remat_backend_cpu(), &gprog) != REMAT_OK)
        return die("compile grad");
    float v2, dw1[D * D], dw2[D * D], dw3[D * D], dx[N * D];
    remat_tensor outs[5] = {
        remat_tensor_f32(&v2, 0, NULL),
        remat_tensor_f32(dw1, 2, (int64_t[]){D, D}),
        remat_tensor_f32(dw2, 2, (int64_t[]){D, D}),
        remat_tensor_f32(dw3, 2, (int64_t[]){D, D}),
        remat_tensor_f32(dx, 2, (int64_t[]){N, D}),
    };
    remat_stats st;
    if (remat_run(gprog, 4, in, 5, outs, &st) != REMAT_OK)
        return die("run grad");
    check("value_and_grad value", v2, 2.0);
    const char *names[4] = {"d loss/d w1", "d loss/d w2", "d loss/d w3", "d loss/d x"};
    const float *grads[4] = {dw1, dw2, dw3, dx};
    const int sizes[4] = {D * D, D * D, D * D, N * D};
    for (int a = 0; a < 4; a++) {
        printf("%s = [", names[a]);
        for (int i = 0; i < sizes[a]; i++) {
            printf("%s%.17g", i ? ", " : "", (double)grads[a][i]);
            check(names[a], grads[a][i], 2.0);
        }
        printf("]\n");
    }

    remat_residual_list *res;
    if (remat_saved_residuals(loss, 0, NULL, &res) != REMAT_OK)
        return die("saved_residuals");
    printf("saved residuals (%zu bytes):\n", remat_residual_list_bytes(res));
    remat_residual_list_print(res, stdout);
    printf("recomputed ops in the backward: %lld\n", (long long)st.recomputed_ops);

    remat_residual_list_free(res);
    remat_program_free(gprog);
    remat_program_free(prog);
    remat_fn_free(vg);
    remat_fn_free(loss);
    remat_fn_free(ckpt_middle);
    remat_fn_free(middle);
    if (failures)
        fprintf(stderr, "checkpointed_layer_loss: %d check(s) failed\n", failures);
    return failures ? 1 : 0;
}

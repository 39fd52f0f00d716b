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
#include <stdio.h>

#include <remat/remat.h>

#include "example_util.h"

enum { N = 1, D = 2 };
static const double tol = 1e-6; /* relative, for f32 results */

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
        return example_die("checkpoint");
    remat_fn *loss = build_loss(ckpt_middle);
    if (example_build_failed(loss))
        return 1;

    float w[D * D] = {1, 0, 0, 1}, x[N * D] = {1, 1};
    remat_tensor tw = remat_tensor_f32(w, 2, (int64_t[]){D, D});
    remat_tensor in[4] = {tw, tw, tw, remat_tensor_f32(x, 2, (int64_t[]){N, D})};

    float value;
    remat_tensor out = remat_tensor_f32(&value, 0, NULL);
    if (example_run(loss, 4, in, 1, &out, NULL, NULL))
        return 1;
    printf("checkpointed_layer_loss(w1=w2=w3=I, x=[[1, 1]]) = %.17g\n", (double)value);
    example_check("loss", value, 2.0, tol);

    remat_fn *vg;
    if (remat_value_and_grad(loss, 0, NULL, &vg) != REMAT_OK)
        return example_die("value_and_grad");
    float v2, dw1[D * D], dw2[D * D], dw3[D * D], dx[N * D];
    remat_tensor outs[5] = {
        remat_tensor_f32(&v2, 0, NULL),
        remat_tensor_f32(dw1, 2, (int64_t[]){D, D}),
        remat_tensor_f32(dw2, 2, (int64_t[]){D, D}),
        remat_tensor_f32(dw3, 2, (int64_t[]){D, D}),
        remat_tensor_f32(dx, 2, (int64_t[]){N, D}),
    };
    remat_stats st;
    if (example_run(vg, 4, in, 5, outs, &st, NULL))
        return 1;
    example_check("value_and_grad value", v2, 2.0, tol);
    example_print_check_f32("d loss/d w1", dw1, D * D, 2.0, tol);
    example_print_check_f32("d loss/d w2", dw2, D * D, 2.0, tol);
    example_print_check_f32("d loss/d w3", dw3, D * D, 2.0, tol);
    example_print_check_f32("d loss/d x", dx, N * D, 2.0, tol);

    remat_residual_list *res;
    if (remat_saved_residuals(loss, 0, NULL, &res) != REMAT_OK)
        return example_die("saved_residuals");
    printf("saved residuals (%zu bytes):\n", remat_residual_list_bytes(res));
    remat_residual_list_print(res, stdout);
    printf("recomputed ops in the backward: %lld\n", (long long)st.recomputed_ops);

    remat_residual_list_free(res);
    remat_fn_free(vg);
    remat_fn_free(loss);
    remat_fn_free(ckpt_middle);
    remat_fn_free(middle);
    return example_finish("checkpointed_layer_loss");
}

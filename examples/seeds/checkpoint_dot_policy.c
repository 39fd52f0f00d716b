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
#include <stdio.h>

#include <remat/remat.h>

#include "example_util.h"

enum { N = 1, D = 2 };
static const double tol = 1e-6; /* relative, for f32 results */

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
    if (example_build_failed(loss))
        return 1;
    remat_fn *ckpt = remat_checkpoint(loss, remat_dots_with_no_batch_dims_saveable);
    if (!ckpt)
        return example_die("checkpoint");

    float w1[D * D] = {1, 0, 0, 1}, w2[D * D] = {1, 0, 0, 1}, x[N * D] = {1, 1};
    remat_tensor in[3] = {
        remat_tensor_f32(w1, 2, (int64_t[]){D, D}),
        remat_tensor_f32(w2, 2, (int64_t[]){D, D}),
        remat_tensor_f32(x, 2, (int64_t[]){N, D}),
    };

    /* the loss itself */
    float value;
    remat_tensor out = remat_tensor_f32(&value, 0, NULL);
    if (example_run(ckpt, 3, in, 1, &out, NULL, NULL))
        return 1;
    printf("checkpoint_dot_policy(w1=I, w2=I, x=[[1, 1]]) = %.17g\n", (double)value);
    example_check("loss", value, 2.0, tol);

    /* value and gradient w.r.t. all three arguments */
    remat_fn *vg;
    if (remat_value_and_grad(ckpt, 0, NULL, &vg) != REMAT_OK)
        return example_die("value_and_grad");
    float v2, dw1[D * D], dw2[D * D], dx[N * D];
    remat_tensor outs[4] = {
        remat_tensor_f32(&v2, 0, NULL),
        remat_tensor_f32(dw1, 2, (int64_t[]){D, D}),
        remat_tensor_f32(dw2, 2, (int64_t[]){D, D}),
        remat_tensor_f32(dx, 2, (int64_t[]){N, D}),
    };
    remat_stats st;
    if (example_run(vg, 3, in, 4, outs, &st, NULL))
        return 1;
    example_check("value_and_grad value", v2, 2.0, tol);
    /* out = [1, 1], d loss/d out = 2 out, so every entry of every gradient is 2 */
    example_print_check_f32("d loss/d w1", dw1, D * D, 2.0, tol);
    example_print_check_f32("d loss/d w2", dw2, D * D, 2.0, tol);
    example_print_check_f32("d loss/d x", dx, N * D, 2.0, tol);

    /* what the backward keeps (jax.ad_checkpoint.print_saved_residuals) */
    remat_residual_list *res;
    if (remat_saved_residuals(ckpt, 0, NULL, &res) != REMAT_OK)
        return example_die("saved_residuals");
    printf("saved residuals (%s, %zu bytes):\n", remat_policy_label(remat_dots_with_no_batch_dims_saveable),
           remat_residual_list_bytes(res));
    remat_residual_list_print(res, stdout);
    /* relu's output must be recomputed, never saved: the policy only permits dots */
    for (int i = 0; i < remat_residual_list_count(res); i++) {
        const remat_residual *e = remat_residual_list_get(res, i);
        if (e->kind == REMAT_RESIDUAL_OUTPUT && e->op != REMAT_OP_DOT_GENERAL)
            example_fail("residual %d is the output of %s, which the policy does not permit", i,
                         remat_op_name(e->op));
    }
    printf("recomputed ops in the backward: %lld\n", (long long)st.recomputed_ops);

    remat_residual_list_free(res);
    remat_fn_free(vg);
    remat_fn_free(ckpt);
    remat_fn_free(loss);
    return example_finish("checkpoint_dot_policy");
}

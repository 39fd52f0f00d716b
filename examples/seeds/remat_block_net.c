/*
 * remat_block_net.c — seed 003: checkpoint per block with a policy.
 *
 *   def block(x, w):
 *       return jnp.sin(jnp.sin(x @ w))
 *   def net(x, w):
 *       for _ in range(3):
 *           x = block(x, w)
 *       return x.sum()
 *   ckpt_block = jax.checkpoint(
 *       block, policy=jax.checkpoint_policies.dots_with_no_batch_dims_saveable)
 *   x, w = jnp.ones((4, 4)), jnp.eye(4) * 0.5
 *   jnp.allclose(jax.grad(net, 1)(x, w), jax.grad(net_remat, 1)(x, w))  # True
 *   print_saved_residuals(net, x, w)        # many sin/cos residuals
 *   print_saved_residuals(net_remat, x, w)  # dot_general outputs + inputs
 *
 * In float64 every entry of d net / d w is 2.487355543345714, with and
 * without the checkpoint (bitwise the same here). With the policy the
 * backward keeps only the arguments, the three dot_general outputs and the
 * two block outputs that feed the next block — the same list as JAX's
 * print_saved_residuals(net_remat) (tests/goldens/residuals.json,
 * block_net_remat). Exits non-zero if a value or that list is off.
 */
#include <stdio.h>
#include <string.h>

#include <remat/remat.h>

#include "example_util.h"

enum { S = 4, BLOCKS = 3 };
static const double expected_entry = 2.487355543345714;
static const double tol = 1e-10; /* relative, for f64 results */

/* block(x, w) = sin(sin(x @ w)) */
static remat_fn *build_block(void)
{
    remat_fn *f = remat_fn_new("block");
    remat_val x = remat_arg(f, "x", REMAT_F64, 2, ((int64_t[]){S, S}));
    remat_val w = remat_arg(f, "w", REMAT_F64, 2, ((int64_t[]){S, S}));
    remat_val h = remat_matmul(f, x, w);
    h = remat_sin(f, h); /* inner sin */
    h = remat_sin(f, h); /* outer sin */
    remat_fn_output(f, h);
    return f;
}

/* net(x, w) = sum(block(block(block(x, w), w), w)); blk is block itself or
 * its checkpointed version (a call of a plain function is inlined) */
static remat_fn *build_net(const char *name, const remat_fn *blk)
{
    remat_fn *f = remat_fn_new(name);
    remat_val x = remat_arg(f, "x", REMAT_F64, 2, ((int64_t[]){S, S}));
    remat_val w = remat_arg(f, "w", REMAT_F64, 2, ((int64_t[]){S, S}));
    for (int i = 0; i < BLOCKS; i++)
        x = remat_call1(f, blk, 2, ((remat_val[]){x, w}));
    remat_fn_output(f, remat_sum_all(f, x));
    return f;
}

/* d net / d w at x = ones, w = 0.5 I; also prints the residual report */
static int grad_w(const remat_fn *net, double *dw, remat_stats *st, remat_memory_plan *plan)
{
    remat_fn *g;
    if (remat_grad(net, 1, (int[]){1}, &g) != REMAT_OK)
        return example_die("grad");
    double x[S * S], w[S * S];
    for (int i = 0; i < S * S; i++) {
        x[i] = 1.0;
        w[i] = i % (S + 1) == 0 ? 0.5 : 0.0;
    }
    remat_tensor in[2] = {remat_tensor_f64(x, 2, (int64_t[]){S, S}), remat_tensor_f64(w, 2, (int64_t[]){S, S})};
    remat_tensor out = remat_tensor_f64(dw, 2, (int64_t[]){S, S});
    int rc = example_run(g, 2, in, 1, &out, st, plan);
    remat_fn_free(g);
    return rc;
}

static void print_residuals(const char *title, const remat_residual_list *r)
{
    printf("print_saved_residuals(%s): %d residuals, %zu bytes\n", title, remat_residual_list_count(r),
           remat_residual_list_bytes(r));
    remat_residual_list_print(r, stdout);
}

int main(void)
{
    remat_fn *block = build_block();
    remat_fn *ckpt_block = remat_checkpoint(block, remat_dots_with_no_batch_dims_saveable);
    if (!ckpt_block)
        return example_die("checkpoint");
    remat_fn *net = build_net("net", block);
    remat_fn *net_remat = build_net("net_remat", ckpt_block);
    if (example_build_failed(net) || example_build_failed(net_remat))
        return 1;

    double dw[S * S], dw_remat[S * S];
    remat_stats st, st_remat;
    remat_memory_plan plan, plan_remat;
    if (grad_w(net, dw, &st, &plan) || grad_w(net_remat, dw_remat, &st_remat, &plan_remat))
        return 1;
    printf("jax.grad(net, 1)(x, w)       = every entry");
    for (int i = 0; i < S * S; i++)
        example_check("grad(net)", dw[i], expected_entry, tol);
    printf(" %.17g\n", dw[0]);
    printf("jax.grad(net_remat, 1)(x, w) = every entry %.17g\n", dw_remat[0]);
    for (int i = 0; i < S * S; i++)
        example_check("grad(net_remat)", dw_remat[i], expected_entry, tol);
    int same = memcmp(dw, dw_remat, sizeof dw) == 0;
    printf("allclose: %s, bitwise equal: %s\n", example_failures ? "False" : "True", same ? "True" : "False");
    if (!same)
        example_fail("checkpointing changed the bits of the gradient");
    printf("without remat: residual bytes %zu, recomputed ops %lld\n", plan.residual_bytes,
           (long long)st.recomputed_ops);
    printf("with remat:    residual bytes %zu, recomputed ops %lld\n", plan_remat.residual_bytes,
           (long long)st_remat.recomputed_ops);

    /* print_saved_residuals differentiates w.r.t. all arguments, as JAX's does */
    remat_residual_list *r, *r_remat;
    if (remat_saved_residuals(net, 0, NULL, &r) != REMAT_OK ||
        remat_saved_residuals(net_remat, 0, NULL, &r_remat) != REMAT_OK)
        return example_die("saved_residuals");
    print_residuals("net, x, w", r);
    print_residuals("net_remat, x, w", r_remat);

    /* JAX 0.10.2 (goldens/residuals.json, block_net_remat): x, w, then
     * dot_general, sin, dot_general, sin, dot_general */
    static const remat_op want[] = {REMAT_OP_ARG,         REMAT_OP_ARG, REMAT_OP_DOT_GENERAL, REMAT_OP_SIN,
                                    REMAT_OP_DOT_GENERAL, REMAT_OP_SIN, REMAT_OP_DOT_GENERAL};
    const int n_want = (int)(sizeof want / sizeof want[0]);
    if (remat_residual_list_count(r_remat) != n_want) {
        example_fail("net_remat keeps %d residuals, JAX keeps %d", remat_residual_list_count(r_remat), n_want);
    } else {
        for (int i = 0; i < n_want; i++) {
            const remat_residual *e = remat_residual_list_get(r_remat, i);
            if (e->op != want[i])
                example_fail("net_remat residual %d is %s, JAX has %s", i, remat_op_name(e->op),
                             remat_op_name(want[i]));
        }
    }
    if (remat_residual_list_count(r_remat) >= remat_residual_list_count(r))
        example_fail("the checkpointed net keeps no fewer residuals than the plain one");

    remat_residual_list_free(r);
    remat_residual_list_free(r_remat);
    remat_fn_free(net);
    remat_fn_free(net_remat);
    remat_fn_free(ckpt_block);
    remat_fn_free(block);
    return example_finish("remat_block_net");
}

/*
 * deep_sin.c — seed 004, "the memory problem" and "checkpoint basics".
 *
 *   def deep_computation(x, n_layers=100):
 *       for _ in range(n_layers):
 *           x = jnp.sin(x) + 0.1 * x
 *       return x.sum()
 *   x = jnp.ones((1000,))
 *   jnp.linalg.norm(jax.grad(deep_computation)(x))   # 5.740764583505294e-09
 *
 * and the same with each layer wrapped in jax.checkpoint (same gradient,
 * difference 0). float64. The program prints the gradient norm of both, the
 * bytes the backward keeps (residuals) and the peak arena bytes. Exits
 * non-zero if a value is off.
 */
#include <stdio.h>
#include <string.h>

#include <remat/remat.h>

#include "example_util.h"

enum { N = 1000, LAYERS = 100 };
static const double expected_norm = 5.740764583505294e-09;
static const double tol = 1e-10; /* relative, for f64 results */

/* expensive_layer(x) = sin(x) + 0.1 * x */
static remat_fn *build_layer(void)
{
    remat_fn *f = remat_fn_new("expensive_layer");
    remat_val x = remat_arg(f, "x", REMAT_F64, 1, ((int64_t[]){N}));
    remat_fn_output(f, remat_add(f, remat_sin(f, x), remat_mul_scalar(f, x, 0.1)));
    return f;
}

/* deep(x) = sum(layer^100(x)) */
static remat_fn *build_deep(const char *name, const remat_fn *layer)
{
    remat_fn *f = remat_fn_new(name);
    remat_val x = remat_arg(f, "x", REMAT_F64, 1, ((int64_t[]){N}));
    for (int i = 0; i < LAYERS; i++)
        x = remat_call1(f, layer, 1, &x);
    remat_fn_output(f, remat_sum_all(f, x));
    return f;
}

int main(void)
{
    remat_fn *layer = build_layer();
    remat_fn *ckpt_layer = remat_checkpoint(layer, NULL);
    if (!ckpt_layer)
        return example_die("checkpoint");
    remat_fn *deep = build_deep("deep_no_checkpoint", layer);
    remat_fn *deep_cp = build_deep("deep_with_checkpoint", ckpt_layer);
    if (example_build_failed(deep) || example_build_failed(deep_cp))
        return 1;

    /* jax.grad(deep_computation)(jnp.ones((1000,))), with and without */
    static double g[N], g_cp[N];
    remat_memory_plan plan, plan_cp;
    remat_stats st, st_cp;
    if (example_grad_at_ones(deep, N, g, &st, &plan) || example_grad_at_ones(deep_cp, N, g_cp, &st_cp, &plan_cp))
        return 1;
    double n0 = example_norm2(g, N), n1 = example_norm2(g_cp, N);
    double diff[N];
    for (int i = 0; i < N; i++)
        diff[i] = g[i] - g_cp[i];
    printf("Gradient comparison (x = ones(%d), %d layers of sin(x) + 0.1 x):\n", N, LAYERS);
    printf("  Without checkpoint: norm = %.17g\n", n0);
    printf("  With checkpoint:    norm = %.17g\n", n1);
    printf("  Difference: %.2e\n", example_norm2(diff, N));
    example_check("norm without checkpoint", n0, expected_norm, tol);
    example_check("norm with checkpoint", n1, expected_norm, tol);
    if (memcmp(g, g_cp, sizeof g) != 0)
        example_fail("checkpointing changed the bits of the gradient");
    printf("  Without checkpoint: residual bytes %zu, arena bytes %zu, recomputed ops %lld\n", plan.residual_bytes,
           plan.arena_bytes, (long long)st.recomputed_ops);
    printf("  With checkpoint:    residual bytes %zu, arena bytes %zu, recomputed ops %lld\n",
           plan_cp.residual_bytes, plan_cp.arena_bytes, (long long)st_cp.recomputed_ops);
    /* The layer's backward reads only its input x (for cos x), and the input
     * of each layer is the output of the previous one, which the backward of
     * the previous layer's caller keeps anyway: per-layer checkpointing has
     * nothing to drop here, so residuals and arena are the same and nothing
     * is recomputed. (JAX saves cos x instead of x without the checkpoint,
     * hence its notebook's remark; hierarchical_tanh.c shows a real saving.) */
    if (plan_cp.arena_bytes > plan.arena_bytes)
        example_fail("per-layer checkpointing raised the peak arena bytes");

    remat_fn_free(deep);
    remat_fn_free(deep_cp);
    remat_fn_free(ckpt_layer);
    remat_fn_free(layer);
    return example_finish("deep_sin");
}

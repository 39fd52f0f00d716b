/*
 * heavy_computation.c — seed 004, "checkpointing policies".
 *
 *   def heavy_computation(x):
 *       W = jnp.eye(len(x)) * 0.9 + jnp.ones((len(x), len(x))) * 0.01
 *       x = jnp.sin(x)      # cheap
 *       x = W @ x           # expensive (matrix multiply)
 *       x = jnp.cos(x)      # cheap
 *       x = W.T @ x         # expensive
 *       return x
 *   loss(x) = sum(layer^5(x)), x = jnp.ones((50,)), float64
 *
 * The gradient norm is 5.9413659024 with no checkpoint and with the layer
 * checkpointed under everything_saveable, dots_saveable, a custom policy
 * that saves dot_general (remat_policy_new with a callback, as the seed's
 * custom_policy), and nothing_saveable (the default). The seed's prose labels
 * everything_saveable "recompute all"; it is the opposite: everything_saveable
 * permits saving everything (no recompute), nothing_saveable recomputes
 * everything. The table printed shows that trade-off: bytes the backward
 * keeps, peak arena bytes, and forward ops recomputed by the backward.
 * Gradients are bitwise identical across policies. Exits non-zero if a value
 * is off.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <remat/remat.h>

#include "example_util.h"

enum { N = 50, LAYERS = 5 };
/* printed by the seed with 10 decimals */
static const double expected_norm = 5.9413659024;
/* relative, for f64 results (the expected value itself is rounded to 1e-10
 * absolute, ~1.7e-11 relative) */
static const double tol = 1e-10;

/* the seed's custom_policy: save expensive operations (dot_general; remat has
 * no convolution), recompute cheap ones. Sees the op, never its data. */
static bool save_expensive(const remat_op_info *op, void *ctx)
{
    (void)ctx;
    return op->op == REMAT_OP_DOT_GENERAL;
}

/* heavy_computation(x) for x of shape (N,) */
static remat_fn *build_layer(void)
{
    static double W[N * N];
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            W[i * N + j] = (i == j ? 1.0 : 0.0) * 0.9 + 1.0 * 0.01;
    remat_fn *f = remat_fn_new("heavy_computation");
    remat_val x = remat_arg(f, "x", REMAT_F64, 1, ((int64_t[]){N}));
    remat_val w = remat_const_data(f, REMAT_F64, 2, ((int64_t[]){N, N}), W);
    x = remat_sin(f, x);                                      /* cheap */
    x = remat_matmul(f, w, x);                                /* expensive */
    x = remat_cos(f, x);                                      /* cheap */
    x = remat_matmul(f, remat_transpose(f, w, ((int[]){1, 0})), x); /* expensive */
    remat_fn_output(f, x);
    return f;
}

/* loss(x) = sum(layer^5(x)) */
static remat_fn *build_loss(const char *name, const remat_fn *layer)
{
    remat_fn *f = remat_fn_new(name);
    remat_val x = remat_arg(f, "x", REMAT_F64, 1, ((int64_t[]){N}));
    for (int i = 0; i < LAYERS; i++)
        x = remat_call1(f, layer, 1, &x);
    remat_fn_output(f, remat_sum_all(f, x));
    return f;
}

typedef struct {
    const char *label;
    const remat_policy *policy; /* NULL: no checkpoint */
    double grad[N];
    remat_memory_plan plan;
    remat_stats stats;
} variant;

static int run_variant(remat_fn *layer, variant *v)
{
    remat_fn *ck = NULL;
    if (v->policy && !(ck = remat_checkpoint(layer, v->policy)))
        return example_die("checkpoint");
    remat_fn *loss = build_loss(v->label, ck ? ck : layer);
    if (example_build_failed(loss))
        return 1;
    /* jax.grad(loss)(jnp.ones((50,))) */
    int rc = example_grad_at_ones(loss, N, v->grad, &v->stats, &v->plan);
    remat_fn_free(loss);
    remat_fn_free(ck);
    return rc;
}

int main(void)
{
    remat_policy *custom = remat_policy_new("custom_policy (dot_general)", save_expensive, NULL, NULL);
    if (!custom)
        return example_die("policy");
    variant v[] = {
        {.label = "No checkpoint", .policy = NULL},
        {.label = "everything_saveable", .policy = remat_everything_saveable},
        {.label = "dots_saveable", .policy = remat_dots_saveable},
        {.label = "custom_policy (dot_general)", .policy = custom},
        {.label = "nothing_saveable", .policy = remat_nothing_saveable},
    };
    const int nv = (int)(sizeof v / sizeof v[0]);
    remat_fn *layer = build_layer();
    if (example_build_failed(layer))
        return 1;

    printf("Gradient comparison with different policies (x = ones(%d), %d layers):\n", N, LAYERS);
    for (int i = 0; i < nv; i++) {
        if (run_variant(layer, &v[i]))
            return 1;
        double nrm = example_norm2(v[i].grad, N);
        printf("  %-28s norm = %.17g\n", v[i].label, nrm);
        example_check(v[i].label, nrm, expected_norm, tol);
        if (memcmp(v[i].grad, v[0].grad, sizeof v[0].grad) != 0)
            example_fail("%s: gradient differs in its bits from the unchecked one", v[i].label);
    }
    printf("\n  %-28s %14s %12s %16s %14s\n", "policy", "residual bytes", "arena bytes", "recomputed ops",
           "ops executed");
    for (int i = 0; i < nv; i++)
        printf("  %-28s %14zu %12zu %16lld %14lld\n", v[i].label, v[i].plan.residual_bytes, v[i].plan.arena_bytes,
               (long long)v[i].stats.recomputed_ops, (long long)v[i].stats.ops_executed);
    /* the ordering a user should see: everything_saveable recomputes nothing,
     * nothing_saveable recomputes the most and keeps the fewest bytes */
    if (v[1].stats.recomputed_ops != 0 || v[4].stats.recomputed_ops <= v[2].stats.recomputed_ops ||
        v[4].plan.residual_bytes > v[2].plan.residual_bytes)
        example_fail("the policies do not order memory and recomputation as expected");

    remat_fn_free(layer);
    remat_policy_free(custom);
    return example_finish("heavy_computation");
}

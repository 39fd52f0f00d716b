/*
 * hierarchical_tanh.c — seed 004, "nested and hierarchical checkpointing".
 *
 *   def single_layer(x):
 *       return jnp.tanh(x * 1.01 + 0.01)
 *   def make_block(n_layers):
 *       def block(x):
 *           for _ in range(n_layers):
 *               x = single_layer(x)
 *           return x
 *       return checkpoint(block)
 *   def deep_network_hierarchical(x, n_blocks=10, layers_per_block=10):
 *       checkpointed_block = make_block(layers_per_block)
 *       for _ in range(n_blocks):
 *           x = checkpointed_block(x)
 *       return x.sum()
 *   x = jnp.ones((100,))
 *   jnp.linalg.norm(grad(deep_network_hierarchical)(x))  # 1.0636023633295354e-05
 *
 * float64. Three variants with the same gradient (bitwise):
 *   - no checkpoint: the backward keeps all 100 tanh outputs;
 *   - flat: each block a checkpoint region (the seed's code): the backward
 *     keeps the 10 block inputs and recomputes one block at a time;
 *   - hierarchical: additionally every layer checkpointed again inside its
 *     block (nested regions): each layer is recomputed once by its block and
 *     once more by itself.
 * It prints the residual bytes, the planned peak arena bytes and the
 * recomputed ops of each. Exits non-zero if a value is off.
 */
#include <stdio.h>
#include <string.h>

#include <remat/remat.h>

#include "example_util.h"

enum { N = 100, BLOCKS = 10, LAYERS_PER_BLOCK = 10 };
static const double expected_norm = 1.0636023633295354e-05;
static const double tol = 1e-10; /* relative, for f64 results */

/* single_layer(x) = tanh(x * 1.01 + 0.01) */
static remat_fn *build_layer(void)
{
    remat_fn *f = remat_fn_new("single_layer");
    remat_val x = remat_arg(f, "x", REMAT_F64, 1, ((int64_t[]){N}));
    remat_fn_output(f, remat_tanh(f, remat_add_scalar(f, remat_mul_scalar(f, x, 1.01), 0.01)));
    return f;
}

/* block(x) = layer^n(x); `layer` plain (inlined) or checkpointed (nested region) */
static remat_fn *build_block(const remat_fn *layer)
{
    remat_fn *f = remat_fn_new("block");
    remat_val x = remat_arg(f, "x", REMAT_F64, 1, ((int64_t[]){N}));
    for (int i = 0; i < LAYERS_PER_BLOCK; i++)
        x = remat_call1(f, layer, 1, &x);
    remat_fn_output(f, x);
    return f;
}

/* net(x) = sum(block^10(x)) */
static remat_fn *build_net(const char *name, const remat_fn *block)
{
    remat_fn *f = remat_fn_new(name);
    remat_val x = remat_arg(f, "x", REMAT_F64, 1, ((int64_t[]){N}));
    for (int i = 0; i < BLOCKS; i++)
        x = remat_call1(f, block, 1, &x);
    remat_fn_output(f, remat_sum_all(f, x));
    return f;
}

typedef struct {
    const char *label;
    double grad[N];
    remat_memory_plan plan;
    remat_stats stats;
} variant;

/* grad(net)(jnp.ones((100,))); the arena peak measured must be the one planned */
static int run_variant(const remat_fn *net, variant *v)
{
    if (example_grad_at_ones(net, N, v->grad, &v->stats, &v->plan))
        return 1;
    if (v->stats.peak_arena_bytes != v->plan.arena_bytes)
        example_fail("%s: measured arena peak %zu, planned %zu", v->label, v->stats.peak_arena_bytes,
                     v->plan.arena_bytes);
    return 0;
}

int main(void)
{
    remat_fn *layer = build_layer();
    remat_fn *ckpt_layer = remat_checkpoint(layer, NULL);
    remat_fn *block = build_block(layer);              /* layers inlined */
    remat_fn *block_nested = build_block(ckpt_layer);  /* layers are regions */
    remat_fn *ckpt_block = remat_checkpoint(block, NULL);
    remat_fn *ckpt_block_nested = remat_checkpoint(block_nested, NULL);
    if (!ckpt_layer || !ckpt_block || !ckpt_block_nested)
        return example_die("checkpoint");
    remat_fn *nets[3] = {
        build_net("no_checkpoint", block),
        build_net("deep_network_hierarchical", ckpt_block),
        build_net("deep_network_nested", ckpt_block_nested),
    };
    variant v[3] = {
        {.label = "no checkpoint"},
        {.label = "flat (blocks checkpointed)"},
        {.label = "hierarchical (blocks + layers)"},
    };
    printf("Hierarchical checkpointing (x = ones(%d)):\n", N);
    printf("  Total depth: %d layers\n", BLOCKS * LAYERS_PER_BLOCK);
    printf("  Blocks: %d, Layers per block: %d\n", BLOCKS, LAYERS_PER_BLOCK);
    for (int i = 0; i < 3; i++) {
        if (example_build_failed(nets[i]) || run_variant(nets[i], &v[i]))
            return 1;
        double nrm = example_norm2(v[i].grad, N);
        printf("  %-31s gradient norm = %.17g\n", v[i].label, nrm);
        example_check(v[i].label, nrm, expected_norm, tol);
        if (memcmp(v[i].grad, v[0].grad, sizeof v[0].grad) != 0)
            example_fail("%s: gradient differs in its bits from the unchecked one", v[i].label);
    }
    printf("\n  %-31s %14s %12s %16s\n", "variant", "residual bytes", "arena bytes", "recomputed ops");
    for (int i = 0; i < 3; i++)
        printf("  %-31s %14zu %12zu %16lld\n", v[i].label, v[i].plan.residual_bytes, v[i].plan.arena_bytes,
               (long long)v[i].stats.recomputed_ops);
    if (v[1].plan.arena_bytes >= v[0].plan.arena_bytes || v[2].plan.arena_bytes >= v[0].plan.arena_bytes)
        example_fail("checkpointing the blocks did not lower the peak arena bytes");

    for (int i = 0; i < 3; i++)
        remat_fn_free(nets[i]);
    remat_fn_free(ckpt_block_nested);
    remat_fn_free(ckpt_block);
    remat_fn_free(block_nested);
    remat_fn_free(block);
    remat_fn_free(ckpt_layer);
    remat_fn_free(layer);
    return example_finish("hierarchical_tanh");
}

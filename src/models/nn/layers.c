/*
 * layers.c — the ops of Dense, LayerNorm and the activations, written in
 * the operation order Flax linen and jax.nn use, so f32 results agree with
 * a Flax run to rounding.
 */
#include <math.h>

#include "nn_impl.h"

#define DIV_SCALAR(f, a, s) remat_binary_scalar_at((f), REMAT_OP_DIV, (a), (s), REMAT_HERE)

/* x (..., K) @ kernel (K, F) + bias (F) */
remat_val nn_emit_dense(remat_fn *f, remat_val x, remat_val kernel, remat_val bias)
{
    remat_val y = remat_matmul(f, x, kernel);
    return bias == REMAT_NONE ? y : remat_add(f, y, bias);
}

/* x's shape with the last axis set to 1 (for keepdims-style broadcasting) */
static remat_val keepdims_last(remat_fn *f, remat_val reduced, const remat_shape *xs)
{
    int64_t dims[REMAT_MAX_RANK];
    for (int i = 0; i < xs->rank; i++)
        dims[i] = xs->dims[i];
    dims[xs->rank - 1] = 1;
    return remat_reshape(f, reduced, xs->rank, dims);
}

/* mean over the last axis, keepdims: jnp.mean = sum / n */
static remat_val mean_last(remat_fn *f, remat_val x, const remat_shape *xs)
{
    int axis = xs->rank - 1;
    remat_val s = remat_sum(f, x, 1, &axis);
    return keepdims_last(f, DIV_SCALAR(f, s, (double)xs->dims[axis]), xs);
}

/* flax.linen.LayerNorm (use_fast_variance): var = max(E[x^2] - E[x]^2, 0),
 * y = (x - mean) * (rsqrt(var + eps) * scale) + bias */
remat_val nn_emit_layer_norm(remat_fn *f, remat_val x, double eps, remat_val scale, remat_val bias)
{
    remat_shape xs = remat_val_shape(f, x);
    if (xs.rank < 1)
        return REMAT_NONE;
    remat_val mean = mean_last(f, x, &xs);
    remat_val mean2 = mean_last(f, remat_square(f, x), &xs);
    remat_val var = remat_sub(f, mean2, remat_square(f, mean));
    var = remat_max(f, var, remat_scalar(f, remat_val_dtype(f, x), 0.0));
    remat_val mul = remat_div(f, remat_scalar(f, remat_val_dtype(f, x), 1.0),
                              remat_sqrt(f, remat_add_scalar(f, var, eps)));
    mul = remat_mul(f, mul, scale);
    remat_val y = remat_mul(f, remat_sub(f, x, mean), mul);
    return remat_add(f, y, bias);
}

remat_val nn_emit_act(remat_fn *f, remat_val x, remat_nn_activation a)
{
    switch (a) {
    case REMAT_NN_RELU:
        return remat_relu(f, x);
    case REMAT_NN_TANH:
        return remat_tanh(f, x);
    case REMAT_NN_GELU: { /* jax.nn.gelu(approximate=True) */
        remat_val cube = remat_integer_pow(f, x, 3);
        remat_val inner = remat_add(f, x, remat_mul_scalar(f, cube, 0.044715));
        remat_val t = remat_tanh(f, remat_mul_scalar(f, inner, sqrt(2.0 / M_PI)));
        remat_val cdf = remat_mul_scalar(f, remat_add_scalar(f, t, 1.0), 0.5);
        return remat_mul(f, x, cdf);
    }
    case REMAT_NN_GELU_ERF: { /* x * (erf(x / sqrt 2) + 1) / 2 */
        remat_val e = remat_erf(f, DIV_SCALAR(f, x, sqrt(2.0)));
        return DIV_SCALAR(f, remat_mul(f, x, remat_add_scalar(f, e, 1.0)), 2.0);
    }
    case REMAT_NN_SILU: { /* x * logistic(x), logistic = 1 / (1 + exp(-x)) */
        remat_val one = remat_scalar(f, remat_val_dtype(f, x), 1.0);
        remat_val sig = remat_div(f, one, remat_add_scalar(f, remat_exp(f, remat_neg(f, x)), 1.0));
        return remat_mul(f, x, sig);
    }
    case REMAT_NN_IDENTITY:
    case REMAT_NN_ACTIVATION_COUNT:
        break;
    }
    return x;
}

/* optax.softmax_cross_entropy(logits, labels).mean() with jax.nn.log_softmax:
 * shifted = x - stop_gradient(max x); shifted - log(sum(exp(shifted))) */
remat_val remat_nn_softmax_cross_entropy(remat_fn *f, remat_val logits, remat_val labels)
{
    remat_shape xs = remat_val_shape(f, logits);
    if (xs.rank < 1)
        return REMAT_NONE;
    int axis = xs.rank - 1;
    remat_val m = keepdims_last(f, remat_stop_gradient(f, remat_reduce_max(f, logits, 1, &axis)), &xs);
    remat_val shifted = remat_sub(f, logits, m);
    remat_val lse = keepdims_last(f, remat_log(f, remat_sum(f, remat_exp(f, shifted), 1, &axis)), &xs);
    remat_val logp = remat_sub(f, shifted, lse);
    remat_val per = remat_neg(f, remat_sum(f, remat_mul(f, labels, logp), 1, &axis));
    int64_t rows = remat_shape_numel(&xs) / xs.dims[axis];
    return DIV_SCALAR(f, remat_sum_all(f, per), (double)rows);
}

remat_val remat_nn_mse(remat_fn *f, remat_val pred, remat_val target)
{
    remat_shape s = remat_val_shape(f, pred);
    if (s.rank < 0)
        return REMAT_NONE;
    remat_val d = remat_sub(f, pred, target);
    return DIV_SCALAR(f, remat_sum_all(f, remat_square(f, d)), (double)remat_shape_numel(&s));
}

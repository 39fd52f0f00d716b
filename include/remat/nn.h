/*
 * remat/nn.h — Flax-style network modules built into the graph IR.
 *
 * A module describes a computation with parameters; it holds no values.
 * remat_nn_init() walks it on an input shape, names every parameter the way
 * Flax linen names it ("Dense_0/kernel", "FFN_1/LayerNorm_0/scale") and
 * draws the initial values exactly as `model.init(jax.random.PRNGKey(seed), x)`
 * does (remat/random.h: threefry2x32, Flax's per-module RNG, lecun_normal).
 * remat_nn_apply() emits the module's ops into a remat_fn, reading the
 * parameters from values of that function, so every transform of the core
 * (reverse mode, checkpoint regions, scans, the residual report) applies.
 *
 * Seed 002 — Flax `nn.remat(MLP, policy=dots_with_no_batch_dims_saveable)`:
 *
 *   remat_nn_module *mlp = remat_nn_mlp(F, 3, REMAT_NN_RELU);  // Dense->relu->Dense->relu->Dense
 *   remat_nn_module *net = remat_nn_remat(mlp, remat_dots_with_no_batch_dims_saveable);
 *   remat_nn_params *p;
 *   remat_nn_init(net, remat_prng_key_from_seed(seed), REMAT_F32, 1, (int64_t[]){D}, &p);
 *   remat_fn *f = remat_fn_new("apply");
 *   remat_val x = remat_arg(f, "x", REMAT_F32, 1, (int64_t[]){D});
 *   remat_val *pv = calloc(remat_nn_params_count(p), sizeof *pv);
 *   remat_nn_params_args(f, p, pv);                 // one argument per parameter
 *   remat_val y;
 *   remat_nn_apply(net, f, x, pv, &y);
 *   remat_fn_output(f, y);
 *
 * Naming (Flax linen's compact naming): a module that owns a scope — Dense,
 * LayerNorm, a named block (remat_nn_block) — is called Class_k inside its
 * parent, k counting the parent's earlier children of that class; the root
 * has no name. Activations, sequences and residual connections own no scope
 * (as if written inline in the parent's __call__). remat_nn_remat(m) as a
 * child is named "Checkpoint" + m's class (Flax's nn.remat(Class)); at the
 * root it is transparent, so nn.remat(MLP) and MLP have the same parameters.
 *
 * Scan over layers: remat_nn_scan(block, L, opt) applies L copies of a
 * shape-preserving block as one remat_scan over parameters stacked along a
 * new leading axis (Flax nn.scan with variable_axes={'params': 0}); named
 * "Scan" + the block's class. Layer l starts from the values the unrolled
 * network's block Class_l would get, so a scanned and an unrolled network
 * compute the same function from the same seed. opt->schedule chooses which
 * layer inputs the backward keeps (store-all, per-step, binomial:S, ...); a
 * remat_nn_remat block inside becomes the scan's body policy.
 *
 * Modules are reference counted: constructors that take children take a
 * reference, the caller keeps (and frees) its own. _free(NULL) is a no-op.
 * Constructors return NULL on a bad argument, with remat_last_error() naming it.
 */
#ifndef REMAT_NN_H
#define REMAT_NN_H

#include "export.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "ad.h"
#include "random.h"
#include "scan.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct remat_nn_module remat_nn_module;
typedef struct remat_nn_params remat_nn_params;

/* Activations with jax.nn's formulas:
 *   relu        max(x, 0)
 *   gelu        x * 0.5 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))  (jax.nn.gelu, approximate=True, Flax's nn.gelu)
 *   gelu_erf    x (erf(x / sqrt 2) + 1) / 2                         (approximate=False)
 *   tanh, silu  x * sigmoid(x), identity */
typedef enum {
    REMAT_NN_RELU,
    REMAT_NN_GELU,
    REMAT_NN_GELU_ERF,
    REMAT_NN_TANH,
    REMAT_NN_SILU,
    REMAT_NN_IDENTITY,
    REMAT_NN_ACTIVATION_COUNT
} remat_nn_activation;

/* "relu", "gelu", "gelu_erf", "tanh", "silu", "identity"; parse returns
 * REMAT_ERR_VALUE naming the text when it is none of them. */
REMAT_API const char *remat_nn_activation_name(remat_nn_activation a);
REMAT_API remat_status remat_nn_activation_parse(const char *text, remat_nn_activation *out);

/* ---- layers ---- */
/* nn.Dense(features): y = x @ kernel + bias over x's last axis; kernel
 * (in, features) lecun_normal, bias (features) zeros. */
REMAT_API remat_nn_module *remat_nn_dense(int64_t features, bool use_bias);
/* nn.LayerNorm(epsilon) over the last axis, scale ones and bias zeros:
 * mean = mean(x), var = max(mean(x^2) - mean^2, 0) (Flax's fast variance),
 * y = (x - mean) * (rsqrt(var + eps) * scale) + bias. Flax's default eps is 1e-6. */
REMAT_API remat_nn_module *remat_nn_layer_norm(double epsilon);
REMAT_API remat_nn_module *remat_nn_act(remat_nn_activation a);

/* ---- composition ---- */
/* The modules one after another, inline in the enclosing scope. */
REMAT_API remat_nn_module *remat_nn_sequential(int n, remat_nn_module *const *mods);
/* x + inner(x) (inner must keep x's shape). */
REMAT_API remat_nn_module *remat_nn_residual(remat_nn_module *inner);
/* A named class owning a scope: `class_name`_k inside its parent. */
REMAT_API remat_nn_module *remat_nn_block(const char *class_name, remat_nn_module *body);
/* class MLP: depth Dense(features) layers with `act` between them (none after
 * the last): seed 002's MLP is remat_nn_mlp(F, 3, REMAT_NN_RELU). */
REMAT_API remat_nn_module *remat_nn_mlp(int64_t features, int depth, remat_nn_activation act);
/* class FFN: x + Dense(width)(act(Dense(hidden)(LayerNorm()(x)))) — the
 * transformer feed-forward block (hidden = 4 width, act gelu, usually). */
REMAT_API remat_nn_module *remat_nn_ffn(int64_t width, int64_t hidden, remat_nn_activation act);
/* class MLPBlock: x + act(Dense(width)(x)) — a residual ReLU block. */
REMAT_API remat_nn_module *remat_nn_mlp_block(int64_t width, remat_nn_activation act);

/* ---- transforms ---- */
/* nn.remat(module, policy): applying it is one checkpoint region with that
 * policy (NULL: nothing_saveable); parameters unchanged. */
REMAT_API remat_nn_module *remat_nn_remat(remat_nn_module *m, const remat_policy *policy);
/* L copies of a shape-preserving block as one scan over stacked parameters
 * (see the overview). opt may be NULL (store-all); opt->body_policy must be
 * NULL — wrap the block in remat_nn_remat instead. */
REMAT_API remat_nn_module *remat_nn_scan(remat_nn_module *block, int64_t length, const remat_scan_options *opt);

REMAT_API remat_nn_module *remat_nn_module_ref(remat_nn_module *m);
REMAT_API void remat_nn_module_free(remat_nn_module *m);
/* The class name ("Dense", "MLP", "CheckpointMLP", "ScanFFN", "Sequential"...).
 * The accessors below answer a NULL module or params with remat_last_error()
 * set and NULL, 0, -1 (find) or rank -1 (tensor, out_shape). */
REMAT_API const char *remat_nn_module_class(const remat_nn_module *m);

/* ---- parameters ---- */
/* Initialises m for an input of the given shape (rank >= 1, the last axis is
 * the features) in dtype dt (f32 as Flax; f64 values are the f32 draws
 * widened). Shape errors name the layer's path. */
REMAT_API remat_status remat_nn_init(const remat_nn_module *m, remat_prng_key key, remat_dtype dt, int rank,
                                     const int64_t *in_dims, remat_nn_params **out);
REMAT_API void remat_nn_params_free(remat_nn_params *p);
REMAT_API remat_status remat_nn_params_copy(const remat_nn_params *p, remat_nn_params **out);
REMAT_API int remat_nn_params_count(const remat_nn_params *p);
/* Parameter i's path ("Dense_0/kernel"), NULL for a bad index. */
REMAT_API const char *remat_nn_params_name(const remat_nn_params *p, int i);
/* Parameter i's values (owned by p, writable: optimisers update them in place). */
REMAT_API remat_tensor remat_nn_params_tensor(const remat_nn_params *p, int i);
/* Index of the parameter with that path, or -1. */
REMAT_API int remat_nn_params_find(const remat_nn_params *p, const char *name);
REMAT_API int64_t remat_nn_params_numel(const remat_nn_params *p);
REMAT_API size_t remat_nn_params_bytes(const remat_nn_params *p);
/* The shape of m's output for the shape p was initialised with. */
REMAT_API remat_shape remat_nn_params_out_shape(const remat_nn_params *p);
/* Declares one argument of f per parameter (named by its path, p's dtype and
 * shapes) and writes their values into vals (remat_nn_params_count entries). */
REMAT_API remat_status remat_nn_params_args(remat_fn *f, const remat_nn_params *p, remat_val *vals);

/* ---- weights files (safetensors) ---- */
/* Writes p to f as safetensors (huggingface's format, which
 * safetensors.numpy.load_file and safetensors.flax read): an 8-byte
 * little-endian header length, a JSON header naming each tensor by its Flax
 * path ("Dense_0/kernel", "ScanMLPBlock_0/Dense_0/kernel" stacked over
 * layers) with dtype F32 or F64, shape and data_offsets, and
 * __metadata__ {"format": "flax", "producer": "remat"}; then the values,
 * little-endian, in parameter order. Unflatten with
 * flax.traverse_util.unflatten_dict(d, sep="/") for Flax's params tree.
 * REMAT_ERR_IO when a write fails. */
REMAT_API remat_status remat_nn_params_save(const remat_nn_params *p, FILE *f);
/* Reads a safetensors file into p's values: its tensors must be exactly p's
 * parameters (by name, any order) with p's dtype and shapes. Errors name the
 * file and what is wrong (REMAT_ERR_IO: unreadable; REMAT_ERR_VALUE: not
 * safetensors, a header byte that is wrong, a tensor missing, extra, of
 * another dtype or shape, data cut short); p is unchanged unless it returns
 * REMAT_OK. The round trip is bitwise. */
REMAT_API remat_status remat_nn_params_load(remat_nn_params *p, const char *path);

/* ---- applying ---- */
/* Emits m applied to x into f; params holds one value per parameter of m in
 * remat_nn_params order (e.g. from remat_nn_params_args), shapes as
 * initialised. x may have other leading (batch) axes than at init. */
REMAT_API remat_status remat_nn_apply(const remat_nn_module *m, remat_fn *f, remat_val x, const remat_val *params,
                                      remat_val *y);

/* ---- losses (scalar means over the leading batch axis) ---- */
/* optax.softmax_cross_entropy(logits, labels).mean(): labels (B, C) one-hot
 * or probabilities; log-softmax shifted by the stop-gradient of the row max. */
REMAT_API remat_val remat_nn_softmax_cross_entropy(remat_fn *f, remat_val logits, remat_val labels);
/* mean((pred - target)^2) over every element (optax.l2_loss * 2, averaged). */
REMAT_API remat_val remat_nn_mse(remat_fn *f, remat_val pred, remat_val target);

#ifdef __cplusplus
}
#endif
#endif

/*
 * module.c — constructing network modules (remat/nn.h): leaves, containers,
 * the named blocks built from them, and the remat/scan transforms.
 */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "nn_impl.h"

static const char *const act_names[REMAT_NN_ACTIVATION_COUNT] = {
    [REMAT_NN_RELU] = "relu", [REMAT_NN_GELU] = "gelu",         [REMAT_NN_GELU_ERF] = "gelu_erf",
    [REMAT_NN_TANH] = "tanh", [REMAT_NN_SILU] = "silu",         [REMAT_NN_IDENTITY] = "identity",
};

const char *remat_nn_activation_name(remat_nn_activation a)
{
    return (unsigned)a < REMAT_NN_ACTIVATION_COUNT ? act_names[a] : "?";
}

remat_status remat_nn_activation_parse(const char *text, remat_nn_activation *out)
{
    if (!text || !out)
        return rmi_error(REMAT_ERR_NULL, "activation: text or output is NULL");
    for (int a = 0; a < REMAT_NN_ACTIVATION_COUNT; a++)
        if (strcmp(text, act_names[a]) == 0) {
            *out = (remat_nn_activation)a;
            return REMAT_OK;
        }
    return rmi_error(REMAT_ERR_VALUE,
                     "activation '%s' is not one of relu, gelu, gelu_erf, tanh, silu, identity", text);
}

static remat_nn_module *new_module(nn_kind kind, const char *cls, int n_children)
{
    remat_nn_module *m = rmi_calloc(1, sizeof *m);
    if (!m)
        goto fail;
    m->refs = 1;
    m->kind = kind;
    m->cls = rmi_strdup(cls);
    if (!m->cls)
        goto fail;
    if (n_children > 0) {
        m->children = rmi_calloc((size_t)n_children, sizeof *m->children);
        if (!m->children)
            goto fail;
    }
    return m;
fail:
    if (m)
        rmi_free(m->cls);
    rmi_free(m);
    rmi_error(REMAT_ERR_NOMEM, "nn: out of memory making a %s module", cls);
    return NULL;
}

remat_nn_module *remat_nn_module_ref(remat_nn_module *m)
{
    if (m)
        m->refs++;
    return m;
}

void remat_nn_module_free(remat_nn_module *m)
{
    if (!m || --m->refs > 0)
        return;
    for (int i = 0; i < m->n_children; i++)
        remat_nn_module_free(m->children[i]);
    rmi_free(m->children);
    remat_policy_free(m->policy);
    rmi_free(m->cls);
    rmi_free(m);
}

const char *remat_nn_module_class(const remat_nn_module *m)
{
    REMAT_NULL_RETURN(m, NULL);
    return m->cls;
}

static void adopt(remat_nn_module *m, int i, remat_nn_module *child)
{
    m->children[i] = remat_nn_module_ref(child);
    m->n_children = i + 1;
}

remat_nn_module *remat_nn_dense(int64_t features, bool use_bias)
{
    if (features <= 0) {
        rmi_error(REMAT_ERR_VALUE, "Dense: features %lld must be positive", (long long)features);
        return NULL;
    }
    remat_nn_module *m = new_module(NN_DENSE, "Dense", 0);
    if (m) {
        m->features = features;
        m->use_bias = use_bias;
    }
    return m;
}

remat_nn_module *remat_nn_layer_norm(double epsilon)
{
    if (!(epsilon >= 0 && epsilon < 1e300)) {
        rmi_error(REMAT_ERR_VALUE, "LayerNorm: epsilon %g must be finite and non-negative", epsilon);
        return NULL;
    }
    remat_nn_module *m = new_module(NN_LAYER_NORM, "LayerNorm", 0);
    if (m)
        m->epsilon = epsilon;
    return m;
}

remat_nn_module *remat_nn_act(remat_nn_activation a)
{
    if ((unsigned)a >= REMAT_NN_ACTIVATION_COUNT) {
        rmi_error(REMAT_ERR_VALUE, "activation: %d is not a remat_nn_activation", (int)a);
        return NULL;
    }
    remat_nn_module *m = new_module(NN_ACT, act_names[a], 0);
    if (m)
        m->act = a;
    return m;
}

remat_nn_module *remat_nn_sequential(int n, remat_nn_module *const *mods)
{
    if (n < 0 || (n > 0 && !mods)) {
        rmi_error(REMAT_ERR_NULL, "Sequential: %d modules given as %s", n, mods ? "an array" : "NULL");
        return NULL;
    }
    for (int i = 0; i < n; i++)
        if (!mods[i]) {
            rmi_error(REMAT_ERR_NULL, "Sequential: module %d is NULL", i);
            return NULL;
        }
    remat_nn_module *m = new_module(NN_SEQUENTIAL, "Sequential", n);
    for (int i = 0; m && i < n; i++)
        adopt(m, i, mods[i]);
    return m;
}

static remat_nn_module *wrap(nn_kind kind, const char *what, const char *cls, remat_nn_module *inner)
{
    if (!inner) {
        rmi_error(REMAT_ERR_NULL, "%s: module is NULL", what);
        return NULL;
    }
    remat_nn_module *m = new_module(kind, cls, 1);
    if (m)
        adopt(m, 0, inner);
    return m;
}

remat_nn_module *remat_nn_residual(remat_nn_module *inner)
{
    return wrap(NN_RESIDUAL, "residual", "Residual", inner);
}

remat_nn_module *remat_nn_block(const char *class_name, remat_nn_module *body)
{
    if (!class_name || !*class_name || strchr(class_name, '/')) {
        rmi_error(REMAT_ERR_VALUE, "block: class name '%s' must be non-empty and contain no '/'",
                  class_name ? class_name : "(null)");
        return NULL;
    }
    return wrap(NN_BLOCK, "block", class_name, body);
}

/* A named block around a sequence; the pieces are released (the block holds them). */
static remat_nn_module *block_of(const char *cls, int n, remat_nn_module **mods, bool residual)
{
    remat_nn_module *seq = NULL, *body = NULL, *blk = NULL;
    for (int i = 0; i < n; i++)
        if (!mods[i])
            goto done;
    seq = remat_nn_sequential(n, mods);
    body = residual ? remat_nn_residual(seq) : remat_nn_module_ref(seq);
    blk = body ? remat_nn_block(cls, body) : NULL;
done:
    for (int i = 0; i < n; i++)
        remat_nn_module_free(mods[i]);
    remat_nn_module_free(seq);
    remat_nn_module_free(body);
    return blk;
}

remat_nn_module *remat_nn_mlp(int64_t features, int depth, remat_nn_activation act)
{
    if (depth < 1 || depth > 100000 || features <= 0 || (unsigned)act >= REMAT_NN_ACTIVATION_COUNT) {
        rmi_error(REMAT_ERR_VALUE, "MLP: features %lld and depth %d must be positive (depth <= 100000)",
                  (long long)features, depth);
        return NULL;
    }
    int n = 2 * depth - 1;
    remat_nn_module **mods = rmi_calloc((size_t)n, sizeof *mods);
    if (!mods) {
        rmi_error(REMAT_ERR_NOMEM, "MLP: out of memory");
        return NULL;
    }
    for (int i = 0; i < n; i++)
        mods[i] = i % 2 == 0 ? remat_nn_dense(features, true) : remat_nn_act(act);
    remat_nn_module *m = block_of("MLP", n, mods, false);
    rmi_free(mods);
    return m;
}

remat_nn_module *remat_nn_ffn(int64_t width, int64_t hidden, remat_nn_activation act)
{
    if (width <= 0 || hidden <= 0) {
        rmi_error(REMAT_ERR_VALUE, "FFN: width %lld and hidden %lld must be positive", (long long)width,
                  (long long)hidden);
        return NULL;
    }
    remat_nn_module *mods[4] = {remat_nn_layer_norm(1e-6), remat_nn_dense(hidden, true), remat_nn_act(act),
                                remat_nn_dense(width, true)};
    return block_of("FFN", 4, mods, true);
}

remat_nn_module *remat_nn_mlp_block(int64_t width, remat_nn_activation act)
{
    if (width <= 0) {
        rmi_error(REMAT_ERR_VALUE, "MLPBlock: width %lld must be positive", (long long)width);
        return NULL;
    }
    remat_nn_module *mods[2] = {remat_nn_dense(width, true), remat_nn_act(act)};
    return block_of("MLPBlock", 2, mods, true);
}

remat_nn_module *remat_nn_remat(remat_nn_module *inner, const remat_policy *policy)
{
    if (!inner) {
        rmi_error(REMAT_ERR_NULL, "remat: module is NULL");
        return NULL;
    }
    char cls[256];
    snprintf(cls, sizeof cls, "Checkpoint%s", inner->cls);
    remat_nn_module *m = wrap(NN_REMAT, "remat", cls, inner);
    if (m)
        m->policy = remat_policy_ref(policy ? policy : remat_nothing_saveable);
    return m;
}

remat_nn_module *remat_nn_scan(remat_nn_module *block, int64_t length, const remat_scan_options *opt)
{
    if (!block) {
        rmi_error(REMAT_ERR_NULL, "scan over layers: block is NULL");
        return NULL;
    }
    if (length < 1 || length > 1000000) {
        rmi_error(REMAT_ERR_VALUE, "scan over layers: length %lld must lie in [1, 1000000]", (long long)length);
        return NULL;
    }
    if (opt && opt->body_policy) {
        rmi_error(REMAT_ERR_ARG, "scan over layers: give the policy with remat_nn_remat(block, policy), "
                                   "not in the options' body_policy");
        return NULL;
    }
    if (opt && opt->reverse) {
        rmi_error(REMAT_ERR_ARG, "scan over layers: reverse is not supported (layers run first to last)");
        return NULL;
    }
    char cls[256];
    snprintf(cls, sizeof cls, "Scan%s", block->cls);
    remat_nn_module *m = wrap(NN_SCAN, "scan over layers", cls, block);
    if (m) {
        m->length = length;
        if (opt)
            m->scan_opt = *opt;
    }
    return m;
}

int nn_module_param_count(const remat_nn_module *m)
{
    switch (m->kind) {
    case NN_DENSE:
        return m->use_bias ? 2 : 1;
    case NN_LAYER_NORM:
        return 2;
    case NN_ACT:
        return 0;
    case NN_SEQUENTIAL:
    case NN_RESIDUAL:
    case NN_BLOCK:
    case NN_REMAT:
    case NN_SCAN: {
        int n = 0;
        for (int i = 0; i < m->n_children; i++)
            n += nn_module_param_count(m->children[i]);
        return n;
    }
    }
    return 0;
}

bool nn_module_scoped(const remat_nn_module *m)
{
    switch (m->kind) {
    case NN_DENSE:
    case NN_LAYER_NORM:
    case NN_BLOCK:
    case NN_SCAN:
        return true;
    case NN_REMAT:
        /* nn.remat(Class) is a class of its own; nn.remat(Sequential-like inline code) is not */
        return nn_module_scoped(m->children[0]);
    case NN_ACT:
    case NN_SEQUENTIAL:
    case NN_RESIDUAL:
        return false;
    }
    return false;
}

/* mlp_net.c — the deep network of `remat mlp` and the scanned/unrolled parameter map (see mlp_cli.h). */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "mlp_cli.h"

const char mlp_net_options_help[] =
    "  --layers L         blocks between the input and output Dense layers\n"
    "  --width W          features of every block (the input projection is Dense(W))\n"
    "  --block K          mlp: x + act(Dense(W)(x)) (default activation relu)\n"
    "                     ffn: x + Dense(W)(act(Dense(4W)(LayerNorm(x)))) (default gelu)\n"
    "  --activation A     relu, gelu, gelu_erf, tanh, silu, identity\n";

int mlp_parse_block(const char *text, mlp_block_kind *out)
{
    if (!strcmp(text, "mlp"))
        *out = MLP_BLOCK_MLP;
    else if (!strcmp(text, "ffn"))
        *out = MLP_BLOCK_FFN;
    else {
        fprintf(stderr, "remat: --block: unknown block '%s' (expected mlp or ffn)\n", text);
        return 0;
    }
    return 1;
}

const char *mlp_block_name(mlp_block_kind b) { return b == MLP_BLOCK_FFN ? "ffn" : "mlp"; }

int mlp_parse_activation(const char *opt, const char *text, remat_nn_activation *out)
{
    if (remat_nn_activation_parse(text, out) != REMAT_OK) {
        fprintf(stderr, "remat: %s: unknown activation '%s' (expected relu, gelu, gelu_erf, tanh, silu or identity)\n",
                opt, text);
        return 0;
    }
    return 1;
}

int mlp_parse_policy(const char *opt, const char *text, const remat_policy **policy, int *has)
{
    if (!strcmp(text, "none")) {
        *policy = NULL, *has = 0;
        return 1;
    }
    const remat_policy *p = remat_policy_named(text); /* JAX's names and aliases */
    if (p) {
        *policy = p, *has = 1;
        return 1;
    }
    fprintf(stderr, "remat: %s: %s; or none\n", opt, remat_last_error());
    return 0;
}

remat_nn_module *mlp_net_make(const mlp_net_config *c)
{
    remat_nn_module *block = c->block == MLP_BLOCK_FFN ? remat_nn_ffn(c->width, 4 * c->width, c->act)
                                                       : remat_nn_mlp_block(c->width, c->act);
    if (block && c->has_policy) {
        remat_nn_module *r = remat_nn_remat(block, c->policy);
        remat_nn_module_free(block);
        block = r;
    }
    int n = (int)(c->scanned ? 3 : c->layers + 2);
    remat_nn_module **mods = calloc((size_t)n, sizeof *mods);
    remat_nn_module *net = NULL;
    if (block && mods) {
        mods[0] = remat_nn_dense(c->width, true);
        if (c->scanned) {
            remat_scan_options so = {.schedule = c->schedule};
            mods[1] = remat_nn_scan(block, c->layers, &so);
        } else
            for (int64_t l = 0; l < c->layers; l++)
                mods[1 + l] = remat_nn_module_ref(block);
        mods[n - 1] = remat_nn_dense(c->classes, true);
        int ok = 1;
        for (int i = 0; i < n; i++)
            ok &= mods[i] != NULL;
        if (ok)
            net = remat_nn_sequential(n, mods);
    }
    for (int i = 0; mods && i < n; i++)
        remat_nn_module_free(mods[i]);
    free(mods);
    remat_nn_module_free(block);
    return net;
}

remat_nn_module *mlp_net_new(const mlp_net_config *c)
{
    remat_nn_module *net = mlp_net_make(c);
    if (!net)
        fprintf(stderr, "remat: mlp: cannot build the network: %s\n", remat_last_error());
    return net;
}

/* "Class_l/rest": the layer l and where rest starts; 0 if the name has no such form. */
static int split_name(const char *name, int64_t *layer, const char **rest)
{
    const char *slash = strchr(name, '/');
    if (!slash)
        return 0;
    const char *u = slash;
    while (u > name && u[-1] >= '0' && u[-1] <= '9')
        u--;
    if (u == slash || u == name || u[-1] != '_')
        return 0;
    *layer = strtoll(u, NULL, 10);
    *rest = slash;
    return 1;
}

int mlp_param_map_new(const remat_nn_params *unrolled, const remat_nn_params *scanned, mlp_param_map **out)
{
    int n = remat_nn_params_count(unrolled), ns = remat_nn_params_count(scanned);
    mlp_param_map *map = calloc((size_t)(n ? n : 1), sizeof *map);
    if (!map) {
        fprintf(stderr, "remat: mlp: out of memory\n");
        return 0;
    }
    for (int i = 0; i < n; i++) {
        const char *name = remat_nn_params_name(unrolled, i), *rest;
        remat_tensor t = remat_nn_params_tensor(unrolled, i);
        int j = remat_nn_params_find(scanned, name);
        int64_t layer = -1;
        if (j < 0 && split_name(name, &layer, &rest)) /* a block's parameter: Scan<Class>_0<rest>, row layer */
            for (int k = 0; k < ns && j < 0; k++) {
                const char *sn = remat_nn_params_name(scanned, k), *ss = strchr(sn, '/');
                remat_tensor st = remat_nn_params_tensor(scanned, k);
                if (!strncmp(sn, "Scan", 4) && ss && !strcmp(ss, rest) && st.shape.rank == t.shape.rank + 1 &&
                    layer < st.shape.dims[0])
                    j = k;
            }
        if (j < 0) {
            fprintf(stderr, "remat: mlp: the scanned network has no parameter for '%s'\n", name);
            free(map);
            return 0;
        }
        map[i] = (mlp_param_map){j, j >= 0 && remat_nn_params_tensor(scanned, j).shape.rank > t.shape.rank ? layer : -1};
    }
    *out = map;
    return 1;
}

void mlp_params_copy_mapped(remat_nn_params *unrolled, const remat_nn_params *scanned, const mlp_param_map *map)
{
    for (int i = 0; i < remat_nn_params_count(unrolled); i++) {
        remat_tensor t = remat_nn_params_tensor(unrolled, i), s = remat_nn_params_tensor(scanned, map[i].src);
        size_t bytes = remat_tensor_bytes(&t);
        const char *src = (const char *)s.data + (map[i].layer >= 0 ? (size_t)map[i].layer * bytes : 0);
        memcpy(t.data, src, bytes);
    }
}

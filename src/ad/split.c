/* split.c — cut a reverse-mode function into forward and backward parts (see split.h). */
#include <stdlib.h>

#include "ad/split.h"
#include "core/assert.h"

static int is_bwd(const remat_node *n) { return (n->flags & REMAT_NODE_BWD) != 0; }

remat_status remat_split_vjp(const remat_fn *g, int n_args, int n_outs, remat_vjp_split *out)
{
    REMAT_ASSERT(g->n_args == n_args + n_outs && g->n_outs == n_outs + n_args);
    int32_t nn = g->n_nodes;
    uint8_t *live = remat_fn_live_mask(g), *need = calloc((size_t)nn + 1, 1), *is_res = malloc((size_t)nn + 1);
    int32_t *res_index = malloc(sizeof *res_index * ((size_t)nn + 1));
    remat_val *map = malloc(sizeof *map * ((size_t)nn + 1));
    REMAT_ASSERT(need && is_res && res_index && map);
    remat_fn_residual_mask(g, live, is_res);
    int n_res = 0;
    for (int32_t v = 0; v < nn; v++)
        res_index[v] = is_res[v] ? n_res++ : -1;
    free(is_res);

    /* forward part: what the primal outputs and the residuals need */
    remat_fn *fwd = remat_fn_new("fwd");
    for (int i = 0; i < n_outs; i++)
        need[g->outs[i]] = 1;
    for (int32_t v = 0; v < nn; v++)
        if (res_index[v] >= 0)
            need[v] = 1;
    for (int32_t v = nn - 1; v >= 0; v--)
        if (need[v])
            for (int k = 0; k < g->nodes[v].nin; k++)
                need[g->nodes[v].in[k]] = 1;
    for (int32_t v = 0; v < nn; v++) {
        map[v] = REMAT_NONE;
        const remat_node *n = &g->nodes[v];
        /* primal arguments always exist, in order, even when unused */
        if ((need[v] || (n->op == REMAT_OP_ARG && n->p.index < n_args)) && !is_bwd(n))
            map[v] = remat_fn_copy_node(fwd, g, v, map, 0);
    }
    for (int i = 0; i < n_outs; i++)
        remat_fn_output_at(fwd, map[g->outs[i]], g->nodes[g->outs[i]].loc);
    for (int32_t v = 0; v < nn; v++)
        if (res_index[v] >= 0)
            remat_fn_output_at(fwd, map[v], g->nodes[v].loc);

    /* backward part: residuals as arguments, then the cotangent arguments */
    remat_fn *bwd = remat_fn_new("bwd");
    for (int32_t v = 0; v < nn; v++)
        map[v] = REMAT_NONE;
    for (int32_t v = 0; v < nn; v++)
        if (res_index[v] >= 0) {
            const remat_node *n = &g->nodes[v];
            char name[32];
            snprintf(name, sizeof name, "res%d", res_index[v]);
            map[v] = remat_arg_at(bwd, name, (remat_dtype)n->dtype, n->shape.rank, n->shape.dims, n->loc);
        }
    for (int32_t v = 0; v < nn; v++) {
        const remat_node *n = &g->nodes[v];
        if (n->op == REMAT_OP_ARG && n->p.index >= n_args) {
            map[v] = remat_fn_copy_node(bwd, g, v, map, 0);
            continue;
        }
        if (!live[v] || !is_bwd(n) || map[v] != REMAT_NONE)
            continue;
        for (int k = 0; k < n->nin; k++) { /* constants read by the backward are copied */
            remat_val a = n->in[k];
            if (map[a] == REMAT_NONE) {
                REMAT_ASSERT(g->nodes[a].op == REMAT_OP_CONSTANT);
                map[a] = remat_fn_copy_node(bwd, g, a, map, 0);
            }
        }
        map[v] = remat_fn_copy_node(bwd, g, v, map, 0);
    }
    for (int i = 0; i < n_args; i++) {
        remat_val o = g->outs[n_outs + i];
        if (map[o] == REMAT_NONE) {
            REMAT_ASSERT(g->nodes[o].op == REMAT_OP_CONSTANT);
            map[o] = remat_fn_copy_node(bwd, g, o, map, 0);
        }
        remat_fn_output_at(bwd, map[o], g->nodes[o].loc);
    }
    free(live);
    free(need);
    free(res_index);
    free(map);
    REMAT_ASSERT(fwd->status == REMAT_OK && bwd->status == REMAT_OK);
    *out = (remat_vjp_split){.fwd = fwd, .bwd = bwd, .n_res = n_res};
    return REMAT_OK;
}

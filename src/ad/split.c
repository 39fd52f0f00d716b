/*
 * split.c — a loop body's reverse mode cut at its residuals (ad/hop.h).
 *
 * remat_vjp() builds forward and backward in one graph. A loop that stores
 * step "tapes" needs them apart: fwd(primal args) -> (primal outputs,
 * residuals...) and bwd(residuals..., cotangents...) -> (argument
 * cotangents...). The residuals are exactly those of the residual report.
 */
#include <stdlib.h>

#include "ad/graph_impl.h"
#include "core/alloc.h"
#include "core/assert.h"
#include "core/error.h"

typedef struct {
    remat_fn *fwd;
    remat_fn *bwd;
    int n_res;
} remat_vjp_split;

static int is_bwd(const remat_node *n) { return (n->flags & REMAT_NODE_BWD) != 0; }

/* g must come from remat_vjp(f, 0, NULL, ...) of an f with n_args
 * arguments and n_outs outputs. */
static remat_status split_vjp(const remat_fn *g, int n_args, int n_outs, remat_vjp_split *out)
{
    REMAT_ASSERT(g->n_args == n_args + n_outs && g->n_outs == n_outs + n_args);
    int32_t nn = g->n_nodes;
    uint8_t *live = rmi_fn_live_mask(g), *need = rmi_calloc((size_t)nn + 1, 1), *is_res = rmi_malloc((size_t)nn + 1);
    int32_t *res_index = rmi_malloc(sizeof *res_index * ((size_t)nn + 1));
    remat_val *map = rmi_malloc(sizeof *map * ((size_t)nn + 1));
    remat_fn *fwd = remat_fn_new("fwd"), *bwd = remat_fn_new("bwd");
    int n_res = 0, ok = live && need && is_res && res_index && map && fwd && bwd;
    if (!ok) {
        rmi_free(is_res);
        goto done;
    }
    rmi_fn_residual_mask(g, live, is_res);
    for (int32_t v = 0; v < nn; v++)
        res_index[v] = is_res[v] ? n_res++ : -1;
    rmi_free(is_res);

    /* forward part: what the primal outputs and the residuals need */
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
        if ((need[v] || (n->op == REMAT_OP_ARG && n->p.arg_pos < n_args)) && !is_bwd(n))
            map[v] = rmi_fn_copy_node(fwd, g, v, map, 0);
    }
    for (int i = 0; i < n_outs; i++)
        remat_fn_output_at(fwd, map[g->outs[i]], g->nodes[g->outs[i]].loc);
    for (int32_t v = 0; v < nn; v++)
        if (res_index[v] >= 0)
            remat_fn_output_at(fwd, map[v], g->nodes[v].loc);

    /* backward part: residuals as arguments, then the cotangent arguments
     * (a failed copy leaves REMAT_NONE in map: stop there) */
    for (int32_t v = 0; v < nn; v++)
        map[v] = REMAT_NONE;
    for (int32_t v = 0; v < nn; v++)
        if (res_index[v] >= 0) {
            const remat_node *n = &g->nodes[v];
            char name[32];
            snprintf(name, sizeof name, "res%d", res_index[v]);
            map[v] = remat_arg_at(bwd, name, (remat_dtype)n->dtype, n->shape.rank, n->shape.dims, n->loc);
        }
    for (int32_t v = 0; v < nn && bwd->status == REMAT_OK; v++) {
        const remat_node *n = &g->nodes[v];
        if (n->op == REMAT_OP_ARG && n->p.arg_pos >= n_args) {
            map[v] = rmi_fn_copy_node(bwd, g, v, map, 0);
            continue;
        }
        if (!live[v] || !is_bwd(n) || map[v] != REMAT_NONE)
            continue;
        for (int k = 0; k < n->nin; k++) { /* constants read by the backward are copied */
            remat_val a = n->in[k];
            if (map[a] == REMAT_NONE && bwd->status == REMAT_OK) {
                REMAT_ASSERT(g->nodes[a].op == REMAT_OP_CONSTANT);
                map[a] = rmi_fn_copy_node(bwd, g, a, map, 0);
            }
        }
        map[v] = rmi_fn_copy_node(bwd, g, v, map, 0);
    }
    for (int i = 0; i < n_args && bwd->status == REMAT_OK; i++) {
        remat_val o = g->outs[n_outs + i];
        if (map[o] == REMAT_NONE) {
            REMAT_ASSERT(g->nodes[o].op == REMAT_OP_CONSTANT);
            map[o] = rmi_fn_copy_node(bwd, g, o, map, 0);
        }
        remat_fn_output_at(bwd, map[o], g->nodes[o].loc);
    }
done:
    rmi_free(live);
    rmi_free(need);
    rmi_free(res_index);
    rmi_free(map);
    if (!ok || fwd->status != REMAT_OK || bwd->status != REMAT_OK) { /* copying fails only for memory */
        remat_fn_free(fwd);
        remat_fn_free(bwd);
        return rmi_error(REMAT_ERR_NOMEM, "vjp of loop body '%s': out of memory cutting it at its residuals",
                         g->name);
    }
    *out = (remat_vjp_split){.fwd = fwd, .bwd = bwd, .n_res = n_res};
    return REMAT_OK;
}

remat_status rmi_hop_body_vjp_build(const remat_fn *body, int first_untaped, remat_hop_body_vjp *out)
{
    *out = (remat_hop_body_vjp){0};
    remat_fn *vj = NULL;
    remat_status st = remat_vjp(body, 0, NULL, &vj);
    if (st != REMAT_OK)
        return st;
    remat_vjp_split sp = {0};
    st = split_vjp(vj, body->n_args, body->n_outs, &sp);
    remat_fn_free(vj);
    if (st != REMAT_OK)
        return st;
    int *res_arg = rmi_malloc(sizeof *res_arg * ((size_t)sp.n_res + 1));
    if (!res_arg) {
        remat_fn_free(sp.fwd);
        remat_fn_free(sp.bwd);
        return rmi_error(REMAT_ERR_NOMEM, "vjp of loop body '%s': out of memory", body->name);
    }
    remat_fn *fw = sp.fwd;
    int kept = body->n_outs;
    for (int k = 0; k < sp.n_res; k++) {
        remat_val o = fw->outs[body->n_outs + k], a = o;
        while (fw->nodes[a].op == REMAT_OP_RESHAPE || rmi_op_is_identity((remat_op)fw->nodes[a].op))
            a = fw->nodes[a].in[0];
        res_arg[k] = -1;
        if (fw->nodes[a].op == REMAT_OP_ARG && fw->nodes[a].p.arg_pos >= first_untaped) {
            res_arg[k] = (int)fw->nodes[a].p.arg_pos; /* the loop holds it: not taped */
            continue;
        }
        fw->outs[kept++] = o;
    }
    fw->n_outs = kept;
    *out = (remat_hop_body_vjp){.fwd = sp.fwd, .bwd = sp.bwd, .n_res = sp.n_res, .res_arg = res_arg};
    return REMAT_OK;
}

void rmi_hop_body_vjp_clear(remat_hop_body_vjp *v)
{
    if (!v)
        return;
    remat_fn_free(v->fwd);
    remat_fn_free(v->bwd);
    rmi_free(v->res_arg);
    *v = (remat_hop_body_vjp){0};
}

/*
 * order.c — the first pass: which nodes run, in what order, and which
 * outputs their instructions write directly.
 *
 * Execution order is node order. Reverse mode emits recomputation right
 * before the backward that reads it, so node order is what realises the
 * checkpointing memory savings; a re-ordering pass would undo them. Nodes no
 * output needs (live = false) get no storage and no instruction.
 */
#include <stdlib.h>

#include "core/alloc.h"
#include "exec/passes.h"

/* Residual bytes: forward values read by live backward nodes. */
static remat_status count_residuals(remat_compile_ctx *c, const uint8_t *live)
{
    const remat_graph_view *g = c->g;
    uint8_t *is_res = rmi_malloc((size_t)g->n_nodes + 1);
    if (!is_res)
        return rmi_compile_nomem("a residual mask");
    rmi_fn_residual_mask(g->fn, live, is_res);
    for (int32_t v = 0; v < g->n_nodes; v++)
        if (is_res[v]) {
            c->p->residual_bytes += rmi_node_bytes(&g->nodes[v]);
            if (g->nodes[v].op == REMAT_OP_ARG)
                c->p->residual_arg_bytes += rmi_node_bytes(&g->nodes[v]);
        }
    rmi_free(is_res);
    return REMAT_OK;
}

/* An output computed by an op is written straight into the caller's buffer,
 * and so is the op under an output that is a reshape/name of it (the alias
 * then resolves to the output too): a scan body's residuals are mostly such
 * aliases, and each copy would be one more pass over the step's tape. */
static void bind_outputs(remat_compile_ctx *c)
{
    const remat_graph_view *g = c->g;
    for (int j = 0; j < g->n_outs; j++) {
        remat_val v = g->outs[j];
        while (g->nodes[v].op == REMAT_OP_RESHAPE || rmi_op_is_identity((remat_op)g->nodes[v].op))
            v = g->nodes[v].in[0];
        const remat_node *n = &g->nodes[v];
        /* a HOP's result (a scan's stacked ys, its parameter gradients) too:
         * the HOP writes it into the caller's buffer (storage.c) */
        int hop_result = n->op == REMAT_OP_PROJ && g->nodes[n->in[0]].op == REMAT_OP_HOP;
        if (n->op != REMAT_OP_ARG && n->op != REMAT_OP_CONSTANT && (!rmi_node_is_alias(g, n) || hop_result) &&
            n->op != REMAT_OP_HOP && c->N[v].bind < 0)
            c->N[v].bind = j, c->direct[j] = 1;
        else
            c->n_copies++;
    }
}

remat_status rmi_pass_order(remat_compile_ctx *c)
{
    const remat_graph_view *g = c->g;
    uint8_t *live = rmi_fn_live_mask(g->fn);
    c->direct = rmi_calloc((size_t)g->n_outs + 1, 1);
    if (!live || !c->direct) {
        rmi_free(live);
        return rmi_compile_nomem("a liveness mask");
    }
    c->order = rmi_malloc(sizeof *c->order * ((size_t)g->n_nodes + 1));
    if (!c->order) {
        rmi_free(live);
        return rmi_compile_nomem("the execution order");
    }
    for (int32_t v = 0; v < g->n_nodes; v++)
        if (live[v]) {
            c->N[v].live = true;
            c->order[c->n_order++] = v;
        }
    remat_status st = count_residuals(c, live);
    rmi_free(live);
    if (st == REMAT_OK)
        bind_outputs(c);
    return st;
}

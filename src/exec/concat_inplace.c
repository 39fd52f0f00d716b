/*
 * concat_inplace.c — the in-place concatenate rewrite. A concatenate along
 * an axis whose leading axes are all 1 (rows of a (3,B) array, elements of a
 * (3,) vector) is its operands laid end to end. When each operand (through
 * reshapes and names) is the output of an instruction of its own, that
 * instruction writes straight into its slot of the concatenate's buffer
 * (storage.c) and the concatenate needs no instruction: no copy of the (3,B)
 * derivative a right-hand side assembles. Operands that are arguments,
 * constants, views, outputs, scan results or already placed elsewhere keep
 * the copy (the whole concatenate stays).
 */
#include "exec/passes.h"

enum { MAX_OPERANDS = 64 };

/* Whether u, an operand of a concatenate with earlier operands us[0..k-1]
 * (traced through reshapes and names), can write into its slot. */
static bool placeable(const remat_compile_ctx *c, remat_val u, const remat_val *us, int k)
{
    const remat_node *un = &c->g->nodes[u];
    const remat_cnode *U = &c->N[u];
    /* leaves and control ops (checkpoint, proj, hop) are no instruction that writes a buffer of its own */
    const remat_op_category cat = remat_op_category_of((remat_op)un->op);
    if (!U->live || cat == REMAT_OPCAT_LEAF || cat == REMAT_OPCAT_CONTROL || rmi_node_is_alias(c->g, un) ||
        U->bind >= 0 || U->place_in >= 0 || U->elided || U->absorbed || U->root != u || U->scalar)
        return false;
    for (int j = 0; j < k; j++)
        if (us[j] == u)
            return false;
    return true;
}

remat_status rmi_pass_concat_inplace(remat_compile_ctx *c)
{
    const remat_graph_view *g = c->g;
    remat_cnode *N = c->N;
    for (int32_t i = 0; i < c->n_order; i++) {
        int32_t v = c->order[i];
        const remat_node *n = &g->nodes[v];
        if (n->op != REMAT_OP_CONCATENATE || N[v].bind >= 0 || N[v].root != v || n->nin > MAX_OPERANDS)
            continue;
        int axis = (int)n->p.axis;
        bool ok = true;
        for (int d = 0; d < axis; d++)
            ok = ok && n->shape.dims[d] == 1;
        remat_val us[MAX_OPERANDS];
        for (int k = 0; k < n->nin && ok; k++) {
            remat_val u = n->in[k];
            while (g->nodes[u].op == REMAT_OP_RESHAPE || rmi_op_is_identity((remat_op)g->nodes[u].op))
                u = g->nodes[u].in[0];
            ok = placeable(c, u, us, k);
            us[k] = u;
        }
        if (!ok)
            continue;
        size_t off = 0;
        for (int k = 0; k < n->nin; k++) {
            N[us[k]].place_in = v;
            N[us[k]].place_off = off;
            off += rmi_node_bytes(&g->nodes[n->in[k]]);
        }
        N[v].elided = true;
    }
    return REMAT_OK;
}

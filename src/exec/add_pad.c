/*
 * add_pad.c — the add-of-a-pad rewrite. add(x, pad(g)), either order, whose
 * pad (zero interior, g one contiguous block of the output) is read by that
 * add alone becomes one backend instruction (lower.c, the backend's optional
 * lower_add_pad) that writes x + 0 outside g's region and x + g inside: the
 * bits of the pair, without the zero-filled padded array and its pass (the
 * VJP of a slice, added into an accumulated cotangent).
 */
#include <stdlib.h>

#include "core/alloc.h"
#include "exec/passes.h"

/* Whether pad node pn (of the add's shape) puts its operand, of shape gs, as
 * one contiguous run of the output (the slices that are views): a column of
 * a (B,3) array would be B runs of one element, slower in one pass than pad
 * and a fused add. */
static bool contiguous_pad(const remat_node *pn, const remat_shape *gs)
{
    const remat_pad_params *pad = pn->p.pad;
    int r = pn->shape.rank, j = 0;
    for (int i = 0; i < r; i++)
        if (pad->interior[i] != 0 || pad->low[i] < 0 || pad->high[i] < 0)
            return false;
    while (j < r && gs->dims[j] == 1)
        j++;
    for (int i = j + 1; i < r; i++)
        if (pad->low[i] != 0 || gs->dims[i] != pn->shape.dims[i])
            return false;
    return true;
}

remat_status rmi_pass_add_pad(remat_compile_ctx *c)
{
    const remat_graph_view *g = c->g;
    remat_cnode *N = c->N;
    int32_t pads = 0;
    for (int32_t i = 0; i < c->n_order; i++)
        pads += g->nodes[c->order[i]].op == REMAT_OP_PAD;
    if (pads == 0)
        return REMAT_OK;
    int32_t *readers = rmi_calloc((size_t)g->n_nodes + 1, sizeof *readers);
    if (!readers)
        return rmi_compile_nomem("the readers of each value");
    for (int32_t i = 0; i < c->n_order; i++) {
        const remat_node *n = &g->nodes[c->order[i]];
        for (int k = 0; k < n->nin; k++)
            readers[n->in[k]]++;
    }
    for (int i = 0; i < g->n_outs; i++)
        readers[g->outs[i]]++;
    for (int32_t i = 0; i < c->n_order; i++) {
        int32_t v = c->order[i];
        const remat_node *n = &g->nodes[v];
        if (n->op != REMAT_OP_ADD || n->nin != 2 || (n->dtype != REMAT_F32 && n->dtype != REMAT_F64))
            continue;
        for (int k = 1; k >= 0; k--) {
            remat_val q = n->in[k], x = n->in[1 - k];
            const remat_node *pn = &g->nodes[q];
            if (pn->op != REMAT_OP_PAD || readers[q] != 1 || N[q].absorbed || x == q || N[x].scalar ||
                pn->dtype != n->dtype || !remat_shape_equal(&pn->shape, &n->shape) ||
                !remat_shape_equal(&g->nodes[x].shape, &n->shape) ||
                !contiguous_pad(pn, &g->nodes[pn->in[0]].shape))
                continue;
            N[v].padadd = (int8_t)k;
            N[q].absorbed = true;
            break;
        }
    }
    rmi_free(readers);
    return REMAT_OK;
}

/* hop_vjp.c — the reverse-mode driver as a higher-order primitive's rules see it (ad/hop_vjp.h). */
#include "ad/hop_vjp.h"
#include "ad/vjp_impl.h"
#include "core/assert.h"

remat_fn *rmi_hop_vjp_fn(remat_hop_vjp *h) { return h->c->g; }

int rmi_hop_vjp_num_inputs(const remat_hop_vjp *h) { return rmi_flat_orig(h->c->fl, h->i)->nin; }

remat_val rmi_hop_vjp_input(remat_hop_vjp *h, int k)
{
    REMAT_ASSERT(k >= 0 && k < rmi_hop_vjp_num_inputs(h));
    return rmi_vjp_primal(h->c, h->c->fl->nodes[h->i].in[k]);
}

remat_val rmi_hop_vjp_forward(remat_hop_vjp *h, void **data)
{
    remat_val fwd = rmi_vjp_primal(h->c, h->i);
    if (data) {
        *data = NULL; /* fwd is REMAT_NONE when out of memory */
        if (fwd != REMAT_NONE) {
            const remat_node *n = rmi_fn_node(h->c->g, fwd);
            REMAT_ASSERT(n->op == REMAT_OP_HOP);
            *data = n->p.hop.data;
        }
    }
    return fwd;
}

remat_val rmi_hop_vjp_forward_output(remat_hop_vjp *h, int i)
{
    remat_fn *g = h->c->g;
    remat_val fwd = rmi_vjp_primal(h->c, h->i);
    if (fwd == REMAT_NONE)
        return REMAT_NONE;
    uint8_t flags = g->emit_flags;
    g->emit_flags = rmi_fn_node(g, fwd)->flags;
    remat_val o = rmi_hop_output(g, fwd, i);
    g->emit_flags = flags;
    return o;
}

void rmi_hop_vjp_add_ct(remat_hop_vjp *h, int k, remat_val ct)
{
    REMAT_ASSERT(k >= 0 && k < rmi_hop_vjp_num_inputs(h));
    rmi_vjp_add_ct(h->c, h->c->fl->nodes[h->i].in[k], ct);
}

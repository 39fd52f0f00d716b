/* graph_view.c — the compiler's read-only view of a function (graph_view.h). */
#include "ad/graph_impl.h"
#include "ad/graph_view.h"

remat_graph_view rmi_graph_view(const remat_fn *f)
{
    return (remat_graph_view){.fn = f, .nodes = f->nodes, .n_nodes = f->n_nodes, .args = f->args,
                              .n_args = f->n_args, .outs = f->outs, .n_outs = f->n_outs};
}

int rmi_hop_node_outputs(const remat_node *n) { return n->p.hop.rules->num_outputs(n->p.hop.data); }

void rmi_hop_node_output_desc(const remat_node *n, int i, remat_dtype *dt, remat_shape *shape)
{
    n->p.hop.rules->output_desc(n->p.hop.data, i, dt, shape);
}

remat_status rmi_hop_node_lower(const remat_node *n, struct remat_hop_lowering *L, struct remat_instr *ins)
{
    return n->p.hop.rules->lower(n->p.hop.data, L, ins);
}

/* hop.c — building higher-order primitive nodes (ad/hop.h). */
#include "ad/graph_impl.h"
#include "core/assert.h"

remat_val rmi_hop_add(remat_fn *f, const remat_hop_rules *rules, void *data, remat_dtype dt, const char *name,
                      int nin, const remat_val *ins, remat_loc loc)
{
    REMAT_ASSERT(rules && data);
    remat_shape scalar = {0};
    remat_node hop = {.op = REMAT_OP_HOP, .dtype = (uint8_t)dt, .shape = scalar, .loc = loc};
    hop.p.hop.rules = rules;
    hop.p.hop.data = data;
    hop.name = name ? rmi_fn_strdup(f, name) : NULL;
    remat_val h = (!name || hop.name) ? rmi_fn_add_node(f, &hop, nin, ins) : REMAT_NONE;
    if (h == REMAT_NONE && rules->release)
        rules->release(data);
    return h;
}

remat_val rmi_hop_output(remat_fn *f, remat_val h, int i)
{
    if (!rmi_fn_vals_ok(f, 1, &h))
        return REMAT_NONE;
    const remat_node *n = &f->nodes[h];
    REMAT_ASSERT(n->op == REMAT_OP_HOP && i >= 0 && i < n->p.hop.rules->num_outputs(n->p.hop.data));
    remat_node pr = {.op = REMAT_OP_PROJ, .loc = n->loc};
    remat_dtype dt;
    n->p.hop.rules->output_desc(n->p.hop.data, i, &dt, &pr.shape);
    pr.dtype = (uint8_t)dt;
    pr.p.output = i;
    return rmi_fn_add_node(f, &pr, 1, &h);
}

void *rmi_hop_data(const remat_fn *f, remat_val v, const remat_hop_rules *rules)
{
    if (!f || v < 0 || v >= f->n_nodes)
        return NULL;
    const remat_node *n = &f->nodes[v];
    return n->op == REMAT_OP_HOP && n->p.hop.rules == rules ? n->p.hop.data : NULL;
}

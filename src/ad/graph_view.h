/*
 * graph_view.h (internal) — what the compiler (src/exec) reads of a
 * remat_fn: its nodes, arguments and outputs as read-only arrays, and the
 * two analyses it asks of src/ad. The function's storage and the calls that
 * change it stay in ad/graph_impl.h, which src/exec does not include.
 */
#ifndef REMAT_AD_GRAPH_VIEW_H
#define REMAT_AD_GRAPH_VIEW_H

#include <stdint.h>

#include "ad/node.h"
#include "remat/graph.h"

typedef struct {
    const remat_fn *fn; /* the function viewed, for the calls below */
    const remat_node *nodes;
    int32_t n_nodes;
    const int32_t *args; /* node ids */
    int32_t n_args;
    const int32_t *outs; /* node ids */
    int32_t n_outs;
} remat_graph_view;

/* A view of f, valid while f lives unchanged (graph_view.c). */
remat_graph_view rmi_graph_view(const remat_fn *f);

/* A HOP node n (op REMAT_OP_HOP) as the compiler sees it, through its
 * rules (ad/hop.h): its output count, output i's dtype and shape, and its
 * lowering to an instruction (exec/hop.h remat_hop_lowering). */
struct remat_hop_lowering;
struct remat_instr;
int rmi_hop_node_outputs(const remat_node *n);
void rmi_hop_node_output_desc(const remat_node *n, int i, remat_dtype *dt, remat_shape *shape);
remat_status rmi_hop_node_lower(const remat_node *n, struct remat_hop_lowering *L, struct remat_instr *ins);

/* live[v] = 1 when v is needed to compute f's outputs (calloc'ed, caller
 * frees); NULL when out of memory. */
uint8_t *rmi_fn_live_mask(const remat_fn *f);
/* res[v] = 1 when v is a residual of a reverse-mode function: a forward
 * value (not a constant) read by a live backward node. Returns the count.
 * res is zeroed first and has room for every node. */
int rmi_fn_residual_mask(const remat_fn *f, const uint8_t *live, uint8_t *res);

#endif

/*
 * hop_vjp.h (internal) — what a higher-order primitive's reverse-mode rules
 * (remat_hop_rules.vjp_forward / vjp_backward, ad/hop.h) may do: read
 * primal values, add cotangents, emit nodes. The reverse-mode driver's
 * context (ad/vjp_impl.h) stays hidden behind remat_hop_vjp.
 *
 * In vjp_forward(c, data, ins): emit the differentiable form of the node
 * (e.g. a loop that also keeps a store of snapshots) into
 * rmi_hop_vjp_fn(c) over ins, and return it.
 *
 * In vjp_backward(c, data, out_cts):
 *   remat_val fwd = rmi_hop_vjp_forward(c, &fwd_data); // what vjp_forward made
 *   remat_val store = rmi_hop_vjp_forward_output(c, k); // one of its outputs
 *   remat_val x = rmi_hop_vjp_input(c, 1);              // primal input 1
 *   ... emit the backward into rmi_hop_vjp_fn(c) ...
 *   rmi_hop_vjp_add_ct(c, 0, ct_of_input_0);
 * Primal reads go through the driver, so a value a checkpoint policy did not
 * save is recomputed in the backward; the backward's nodes are flagged as
 * such by the driver.
 */
#ifndef REMAT_AD_HOP_VJP_H
#define REMAT_AD_HOP_VJP_H

#include "ad/hop.h"

/* The function being built; emit into it with the public constructors and
 * rmi_hop_add / rmi_hop_output. */
remat_fn *rmi_hop_vjp_fn(remat_hop_vjp *c);
/* The HOP node's input count. */
int rmi_hop_vjp_num_inputs(const remat_hop_vjp *c);
/* The primal value of input k as the backward sees it here. */
remat_val rmi_hop_vjp_input(remat_hop_vjp *c, int k);
/* The node vjp_forward returned, as the backward sees it (saved or
 * recomputed), with its data in *data (data may be NULL). REMAT_NONE and
 * *data = NULL when out of memory. */
remat_val rmi_hop_vjp_forward(remat_hop_vjp *c, void **data);
/* Output i of that node, emitted on the forward's side: a value the
 * backward reads from the forward (a store) is a residual, not backward work. */
remat_val rmi_hop_vjp_forward_output(remat_hop_vjp *c, int i);
/* Adds a cotangent contribution to input k (ignored when the input is not
 * differentiated or ct is REMAT_NONE). */
void rmi_hop_vjp_add_ct(remat_hop_vjp *c, int k, remat_val ct);

#endif

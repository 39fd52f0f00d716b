/*
 * graph_impl.h (internal to src/ad) — a remat_fn's storage and
 * the calls that change it.
 *
 * A function owns its nodes (one growable array, referenced by index) and a
 * bump arena for everything nodes point to (input lists, parameters, names,
 * constant data), freed at once. Op constructors only record op, inputs and
 * typed parameters after checking shapes; nothing is computed here. The node
 * layout itself is ad/node.h; what a higher-order primitive may call is
 * ad/hop.h and ad/hop_vjp.h, what the compiler reads ad/graph_view.h (other
 * modules include those, not this).
 */
#ifndef REMAT_AD_GRAPH_IMPL_H
#define REMAT_AD_GRAPH_IMPL_H

#include <stddef.h>

#include "ad/graph_view.h"
#include "ad/hop.h"
#include "ad/node.h"
#include "core/arena.h"
#include "remat/ad.h"
#include "remat/graph.h"

struct remat_fn {
    int refcount;
    char *name;
    remat_node *nodes;
    int32_t n_nodes, cap_nodes;
    int32_t *args, n_args, cap_args;
    int32_t *outs, n_outs, cap_outs;
    remat_arena arena;
    uint8_t emit_flags; /* OR-ed into every node added (transforms set it) */
    remat_status status;
    char *error;
};

/* Append a node (inputs copied into the arena). Returns its id, or
 * REMAT_NONE when out of memory (recorded on f) or when an input is
 * REMAT_NONE after an earlier failure recorded on f (propagated quietly).
 * Checks nothing else: constructors validate first. */
remat_val rmi_fn_add_node(remat_fn *f, const remat_node *proto, int nin, const remat_val *in);
/* A constructor called with a NULL function: sets remat_last_error() naming
 * the constructor (fn) and the caller's line; returns REMAT_NONE. */
remat_val rmi_fn_null(remat_loc loc, const char *fn);
/* Memory in f's arena; NULL when out of memory (REMAT_ERR_NOMEM recorded on
 * f): the caller returns REMAT_NONE. rmi_fn_strdup(f, NULL) is NULL too. */
void *rmi_fn_alloc(remat_fn *f, size_t bytes);
const char *rmi_fn_strdup(remat_fn *f, const char *s);

/* Fill an op_info view of node v (in_dtypes/in_shapes point into scratch
 * arrays of at least v's input count). */
void rmi_node_op_info(const remat_fn *f, remat_val v, remat_op_info *info, remat_dtype *in_dtypes,
                      remat_shape *in_shapes);

/* rmi_fn_live_mask, rmi_fn_residual_mask: ad/graph_view.h */

/* Copy a node of `src` into `dst` with inputs remapped through `map`; the
 * parameters are deep-copied into dst's arena. Keeps loc, name and
 * flags|add_flags. REMAT_NONE when out of memory (recorded on dst; a map
 * entry REMAT_NONE after such a failure propagates). */
remat_val rmi_fn_copy_node(remat_fn *dst, const remat_fn *src, remat_val v, const remat_val *map,
                           uint8_t add_flags);
/* The same with the new inputs given directly. */
remat_val rmi_fn_copy_node_with_inputs(remat_fn *dst, const remat_fn *src, remat_val v, const remat_val *ins,
                                       uint8_t add_flags);

#endif

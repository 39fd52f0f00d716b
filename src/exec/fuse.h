/*
 * fuse.h (internal) — grouping chains of elementwise ops into one instruction.
 *
 * A group is a set of elementwise ops of one dtype and one output shape whose
 * values, all but the last (the root), are read only by other members: not
 * outputs, not viewed or aliased, not read by any other instruction (so not
 * residuals either). The group runs as one instruction at the root's place;
 * its intermediates get no storage. On a backend with fuse_reduce the root
 * may also be a reduce_sum or reduce_max over trailing axes of the chain's
 * last value (remat_fused_op.red): the chain is then never stored either.
 * REMAT_NO_FUSION=1 in the environment at
 * compile time turns this off (tests compare the bits both ways).
 */
#ifndef REMAT_EXEC_FUSE_H
#define REMAT_EXEC_FUSE_H

#include <stdint.h>

#include "exec/passes.h"

/* The pass (passes.h, rmi_pass_fuse) sets root, gsize and gnext of every
 * record: a node's group root (itself when it is no member of another
 * node's group), a root's member count, the member lists. Adds that absorb a
 * pad stay out of every group. */

/* The micro-ops of the group of members[0..nm-1] (ascending node order, the
 * root last) into *F and uops[nm]; its external inputs into ext (at most
 * 3 * nm), their count into *n_ext. */
void rmi_fuse_describe(const remat_graph_view *g, const int32_t *members, int nm, const remat_cnode *N, remat_fused_op *F,
                       remat_fused_uop *uops, remat_val *ext, int *n_ext);

/* Compiles the fused group F of n elements (outputs: with a reduction the
 * chain has n * red_len) into one native loop where the
 * rule of fuse_jit.c says it pays, setting F->compiled (NULL: interpreted).
 * REMAT_ERR_NOMEM when out of memory; any other failure interprets. */
remat_status rmi_fuse_compile(remat_compile_ctx *c, remat_fused_op *F, int64_t n);

#endif

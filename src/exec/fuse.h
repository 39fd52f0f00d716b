/*
 * fuse.h (internal) — grouping chains of elementwise ops into one instruction.
 *
 * A group is a set of elementwise ops of one dtype and one output shape whose
 * values, all but the last (the root), are read only by other members: not
 * outputs, not viewed or aliased, not read by any other instruction (so not
 * residuals either). The group runs as one instruction at the root's place;
 * its intermediates get no storage. REMAT_NO_FUSION=1 in the environment at
 * compile time turns this off (tests compare the bits both ways).
 */
#ifndef REMAT_EXEC_FUSE_H
#define REMAT_EXEC_FUSE_H

#include <stdint.h>

#include "ad/graph_impl.h"
#include "backend/backend_impl.h"

/* root[v] for every node: the root of v's group, v itself when v is no
 * member of another node's group; size[v]: members of the group rooted at v
 * (1 when unfused). Nodes with exclude[v] set (exclude may be NULL) stay
 * out of every group. */
void remat_fuse_groups(const remat_fn *g, const uint8_t *live, const uint8_t *scalar, const uint8_t *exclude,
                       int32_t *root, int32_t *size);

/* The micro-ops of the group of members[0..nm-1] (ascending node order, the
 * root last) into *F and uops[nm]; its external inputs into ext (at most
 * 3 * nm), their count into *n_ext. */
void remat_fuse_describe(const remat_fn *g, const int32_t *members, int nm, const uint8_t *scalar, remat_fused_op *F,
                         remat_fused_uop *uops, remat_val *ext, int *n_ext);

#endif

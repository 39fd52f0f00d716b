/*
 * flatten.h (internal) — a function with its calls inlined, as one list.
 *
 * Checkpoint regions (CALL nodes) become region instances over a contiguous
 * range of flat nodes; regions nest properly. Reverse mode and the compiler
 * both work on this view. Top-level arguments are flat nodes too (in order).
 */
#ifndef REMAT_AD_FLATTEN_H
#define REMAT_AD_FLATTEN_H

#include "ad/graph_impl.h"
#include "core/arena.h"

typedef struct {
    const remat_fn *fn;  /* function holding the original node */
    remat_val v;         /* its id there */
    int32_t region;      /* innermost region instance, -1 for none */
    const int32_t *in;   /* flat ids of the inputs (fn's node nin of them) */
} remat_flat_node;

typedef struct {
    const remat_policy *policy;
    int32_t parent; /* enclosing region, -1 for none */
    int32_t depth;  /* 1 for an outermost region */
    int32_t first, last; /* flat node range, inclusive */
} remat_flat_region;

typedef struct {
    remat_flat_node *nodes;
    int32_t n, cap;
    remat_flat_region *regions;
    int32_t n_regions, cap_regions;
    int32_t *args; /* flat ids of the top-level arguments */
    int32_t n_args;
    int32_t *outs; /* flat ids of the outputs */
    int32_t n_outs;
    remat_arena arena;
} remat_flat;

static inline const remat_node *rmi_flat_orig(const remat_flat *fl, int32_t i)
{
    return rmi_fn_node(fl->nodes[i].fn, fl->nodes[i].v);
}

/* REMAT_OK, or REMAT_ERR_NOMEM with remat_last_error() set and *out empty. */
remat_status rmi_flatten(const remat_fn *f, remat_flat *out);
void rmi_flat_free(remat_flat *fl);

#endif

/*
 * vjp_impl.h (internal) — state shared by the reverse-mode driver (vjp.c)
 * and the VJP rules (vjp_rules.c).
 *
 * The driver emits the forward of every flat node, then walks the flat list
 * backwards. A rule reads primal values through rmi_vjp_primal(), which
 * decides per checkpoint region whether the value is a saved residual (the
 * forward's node) or must be recomputed in the backward (emitted lazily, once
 * per region instance, right before its first use). Rules emit cotangent
 * contributions with rmi_vjp_add_ct(): the first contribution sets, later
 * ones add, always in the same order, so gradients do not depend on policies.
 */
#ifndef REMAT_AD_VJP_IMPL_H
#define REMAT_AD_VJP_IMPL_H

#include "ad/flatten.h"
#include "ad/hop_vjp.h"

typedef struct remat_rctx remat_rctx;

typedef struct remat_vjp_ctx_s {
    const remat_flat *fl;
    remat_fn *g;          /* the function being built */
    remat_val *fwd;       /* flat id -> forward value in g */
    remat_val *ct;        /* flat id -> cotangent in g (REMAT_NONE: none yet) */
    uint8_t *active;      /* flat id -> depends on a differentiated argument */
    uint8_t *fwd_read;    /* flat id -> the backward reads its forward value */
    uint64_t *keep_known, *keep_cache; /* flat id -> per region depth: policy asked / permits */
    remat_rctx *cur;      /* innermost open recompute context */
    int32_t node;         /* flat node whose rule is running */
    remat_val **hop_ct;   /* flat id of a HOP -> cotangents of its outputs */
    remat_val *off;       /* flat id -> its offload node in the forward (REMAT_NONE: not offloaded) */
    remat_val *reload;    /* flat id -> its reload in the backward, once made */
    remat_status status;
} remat_vjp_ctx;

/* A higher-order node's rules see the context through this (ad/hop_vjp.h). */
struct remat_hop_vjp {
    remat_vjp_ctx *c;
    int32_t i; /* the flat HOP node */
};

/* The primal value of flat node i as seen by the backward at this point. */
remat_val rmi_vjp_primal(remat_vjp_ctx *c, int32_t i);
/* Adds a cotangent contribution to flat node i (ignored if i is inactive). */
void rmi_vjp_add_ct(remat_vjp_ctx *c, int32_t i, remat_val contribution);

/* Emits flat node i with the given inputs in the current emission (forward
 * or recompute): active higher-order nodes take their differentiable form. */
remat_val rmi_vjp_emit_primal(remat_vjp_ctx *c, int32_t i, const remat_val *ins);

/* Emits the VJP of flat node i given its output cotangent ct. */
remat_status rmi_vjp_rule(remat_vjp_ctx *c, int32_t i, remat_val ct);

#endif

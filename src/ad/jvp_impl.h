/*
 * jvp_impl.h (internal) — state shared by the forward-mode driver (jvp.c)
 * and the JVP rules (jvp_rules.c).
 *
 * The driver walks f's nodes in order and emits, for each, its primal copy
 * and (when some input has a tangent) its tangent. A tangent of REMAT_NONE is
 * a symbolic zero: nothing is emitted for it, and rules skip the terms it
 * would contribute, so the non-differentiable parts of f (compares,
 * stop_gradient, constants, arguments not differentiated) cost nothing.
 */
#ifndef REMAT_AD_JVP_IMPL_H
#define REMAT_AD_JVP_IMPL_H

#include "ad/graph_impl.h"

typedef struct {
    const remat_fn *f;
    remat_fn *g;      /* the function being built */
    remat_val *p;     /* f node -> its primal value in g */
    remat_val *t;     /* f node -> its tangent in g; REMAT_NONE: zero */
    remat_val **outs; /* CHECKPOINT / HOP node of f -> (primal outs..., tangent outs...) in g */
} remat_jvp_ctx;

/* Emits the tangent of f's node v (some input has one) into c->t[v]; for a
 * CHECKPOINT or HOP node, fills c->outs[v] instead. */
remat_status rmi_jvp_rule(remat_jvp_ctx *c, remat_val v);

#endif

/*
 * node.h (internal) — the graph IR as a reader sees it: one node's layout and
 * read-only access to a function's nodes.
 *
 * For code that translates a graph into something else (the compiler in
 * src/exec, a higher-order primitive translating its body into lane
 * programs): it may read every field, and walk a function with the public
 * remat_fn_num_nodes / remat_fn_arg / remat_fn_out; it changes nothing.
 * Building and changing functions is ad/hop.h (for a higher-order
 * primitive) or ad/graph_impl.h (inside src/ad).
 */
#ifndef REMAT_AD_NODE_H
#define REMAT_AD_NODE_H

#include <stdint.h>

#include "remat/ad.h"
#include "remat/graph.h"

/* node flags, set by transforms */
enum {
    REMAT_NODE_BWD = 1u << 0,       /* emitted by reverse mode (backward part) */
    REMAT_NODE_RECOMPUTE = 1u << 1, /* a forward op re-run in the backward */
    /* an offloaded residual (a policy's REMAT_POLICY_OFFLOAD): a name node
     * (its name the memory kind) of the forward value, which the compiler
     * writes to the slow tier, and a name node of that in the backward,
     * which reads it back; without its pair, each is a plain name */
    REMAT_NODE_OFFLOAD = 1u << 2,
    REMAT_NODE_RELOAD = 1u << 3,
};

typedef struct remat_call_params {
    remat_fn *callee;            /* retained */
    const remat_policy *policy;  /* retained */
} remat_call_params;

/* Higher-order primitives carry a rule table supplied by their module (ad/hop.h). */
typedef struct remat_hop_rules remat_hop_rules;

typedef struct remat_node {
    uint16_t op;
    uint8_t dtype;
    uint8_t flags;
    int32_t nin;
    const int32_t *in;
    remat_shape shape;
    union { /* the member named by the op's parameter kind (remat_op_param) */
        double fill;                    /* FILL: a splat constant's value */
        double exponent;                /* EXPONENT: pow */
        int64_t arg_pos;                /* ARG_POS: argument position */
        int64_t output;                 /* OUTPUT: proj's output index */
        int64_t axis;                   /* AXIS: concatenate */
        int64_t int_exponent;           /* INT_EXPONENT: integer_pow */
        uint32_t axes_mask;             /* AXES: reduced axes */
        const int *perm;                /* PERM: transpose (output dim k is input dim perm[k]) */
        const int *bdims;               /* BDIMS: broadcast_in_dim, one per input dim */
        const remat_dot_dims *dot;
        int64_t solve_transpose;        /* SOLVE: 1 solves A^T x = b, 0 A x = b */
        const remat_slice_params *slice;
        const remat_pad_params *pad;
        const remat_call_params *call;
        const remat_custom_op *custom;
        struct {
            const remat_hop_rules *rules;
            void *data;
        } hop;
    } p;
    const void *data; /* CONSTANT: row-major values, NULL for a splat */
    const char *name; /* ARG name; NAME tag; CUSTOM op name */
    int32_t aux;      /* CUSTOM_VJP: the input whose cotangent it computes */
    remat_loc loc;
} remat_node;

/* Node v of f (v a value of f: the caller checked). */
const remat_node *rmi_fn_node(const remat_fn *f, remat_val v);

/* Ops whose value is their one input's (name, stop_gradient): the compiler
 * aliases them like a reshape, and chains of aliases are looked through. */
static inline int rmi_op_is_identity(remat_op op)
{
    return remat_op_category_of(op) == REMAT_OPCAT_IDENTITY;
}

/* A new function with every call inlined (checkpoint regions dissolved),
 * in the same order; NULL when out of memory. A translator that does not
 * care about regions reads this instead of following CHECKPOINT nodes. */
remat_fn *rmi_fn_inline_calls(const remat_fn *f);

#endif

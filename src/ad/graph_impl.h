/*
 * graph_impl.h (internal) — the node layout of a remat_fn.
 *
 * A function owns its nodes (one growable array, referenced by index) and a
 * bump arena for everything nodes point to (input lists, parameters, names,
 * constant data), freed at once. Op constructors only record op, inputs and
 * typed parameters after checking shapes; nothing is computed here.
 */
#ifndef REMAT_AD_GRAPH_IMPL_H
#define REMAT_AD_GRAPH_IMPL_H

#include <stddef.h>

#include "core/arena.h"
#include "remat/ad.h"
#include "remat/graph.h"

/* node flags, set by transforms */
enum {
    REMAT_NODE_BWD = 1u << 0,       /* emitted by reverse mode (backward part) */
    REMAT_NODE_RECOMPUTE = 1u << 1, /* a forward op re-run in the backward */
};

typedef struct remat_call_params {
    remat_fn *callee;            /* retained */
    const remat_policy *policy;  /* retained */
} remat_call_params;

/* Higher-order primitives (scan) carry a rule table supplied by their module,
 * so the AD core and the compiler need not know them. */
typedef struct remat_hop_rules remat_hop_rules;
struct remat_vjp_ctx_s;     /* ad/vjp_impl.h */
struct remat_hop_lowering;  /* exec/hop.h */
struct remat_instr;
struct remat_hop_rules {
    const char *name;
    void *(*retain)(void *data); /* a copied node shares data */
    void (*release)(void *data);
    /* outputs (reached through PROJ nodes) */
    int (*num_outputs)(const void *data);
    void (*output_desc)(const void *data, int i, remat_dtype *dt, remat_shape *shape);
    /* reverse mode: emit the forward that keeps what the backward needs
     * (returns the new node), and later the backward given the output
     * cotangents (REMAT_NONE where none) */
    remat_val (*vjp_forward)(struct remat_vjp_ctx_s *c, int32_t i, const remat_val *ins);
    remat_status (*vjp_backward)(struct remat_vjp_ctx_s *c, int32_t i, const remat_val *out_cts);
    /* compile: make the instruction */
    remat_status (*lower)(void *data, struct remat_hop_lowering *L, struct remat_instr *ins);
    /* residual report: describe output i when the backward reads it (may be NULL) */
    void (*describe_output)(const void *data, int i, remat_residual *e);
};

typedef struct remat_node {
    uint16_t op;
    uint8_t dtype;
    uint8_t flags;
    int32_t nin;
    const int32_t *in;
    remat_shape shape;
    union {
        double scalar;                  /* CONSTANT splat value; POW exponent */
        int64_t index;                  /* ARG position; PROJ index; CONCAT axis;
                                           INTEGER_POW exponent */
        uint32_t axes_mask;             /* SUM, REDUCE_MAX: reduced axes */
        const int *perm;                /* TRANSPOSE perm; BROADCAST bdims (rank of input) */
        const remat_dot_dims *dot;
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

static inline const remat_node *remat_fn_node(const remat_fn *f, remat_val v)
{
    return &f->nodes[v];
}

/* Append a node (inputs copied into the arena). Returns its id. Checks
 * nothing: constructors validate first. */
remat_val remat_fn_add_node(remat_fn *f, const remat_node *proto, int nin, const remat_val *in);
/* Records a build error for op at loc (first one wins) and returns REMAT_NONE. */
remat_val remat_fn_fail(remat_fn *f, remat_status st, remat_loc loc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* True when every value is valid; used to propagate REMAT_NONE quietly. */
int remat_fn_vals_ok(const remat_fn *f, int n, const remat_val *v);
/* A constructor called with a NULL function: sets remat_last_error() naming
 * the constructor (fn) and the caller's line; returns REMAT_NONE. */
remat_val remat_fn_null(remat_loc loc, const char *fn);
/* "f32[3,4]" for v */
const char *remat_fn_fmt_val(const remat_fn *f, remat_val v, char *buf, size_t len);
void *remat_fn_alloc(remat_fn *f, size_t bytes);
const char *remat_fn_strdup(remat_fn *f, const char *s);

/* Elementwise ops over operands of one shape, computed element by element
 * in one dtype: unary, binary, compares, select, integer_pow, pow (not
 * convert_element_type, which changes dtype). */
int remat_op_is_elementwise(remat_op op);

/* Ops whose value is their one input's (name, stop_gradient): the compiler
 * aliases them like a reshape, and chains of aliases are looked through. */
static inline int remat_op_is_identity(remat_op op)
{
    return op == REMAT_OP_NAME || op == REMAT_OP_STOP_GRADIENT;
}

/* Fill an op_info view of node v (in_dtypes/in_shapes point into scratch
 * arrays of at least v's input count). */
void remat_node_op_info(const remat_fn *f, remat_val v, remat_op_info *info, remat_dtype *in_dtypes,
                        remat_shape *in_shapes);

/* live[v] = 1 when v is needed to compute f's outputs (calloc'ed, caller frees). */
uint8_t *remat_fn_live_mask(const remat_fn *f);
/* res[v] = 1 when v is a residual of a reverse-mode function: a forward
 * value (not a constant) read by a live backward node. Returns the count.
 * res is zeroed first and has room for every node. */
int remat_fn_residual_mask(const remat_fn *f, const uint8_t *live, uint8_t *res);

/* Copy a node of `src` into `dst` with inputs remapped through `map`; the
 * parameters are deep-copied into dst's arena. Keeps loc, name and flags|add_flags. */
remat_val remat_fn_copy_node(remat_fn *dst, const remat_fn *src, remat_val v, const remat_val *map,
                             uint8_t add_flags);
/* The same with the new inputs given directly. */
remat_val remat_fn_copy_node_with_inputs(remat_fn *dst, const remat_fn *src, remat_val v, const remat_val *ins,
                                         uint8_t add_flags);

#endif

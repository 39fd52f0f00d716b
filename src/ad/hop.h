/*
 * hop.h (internal) — the door for a higher-order primitive (scan; later a
 * while-loop or an adaptive stepper) into the graph core.
 *
 * A higher-order primitive (HOP) is one REMAT_OP_HOP node whose behaviour is
 * a rule table supplied by its own module, plus one PROJ node per output; the
 * AD core and the compiler call the table and know nothing else of it. Its
 * module includes this header (building nodes, the body's cut VJP),
 * ad/hop_vjp.h (its reverse-mode rules) and, to read a body's nodes,
 * ad/node.h — never ad/graph_impl.h or another *_impl.h of src/ad.
 *
 *   remat_val h = rmi_hop_add(f, &my_rules, data, REMAT_F32, "my_loop", nin, ins, loc);
 *   for (int i = 0; i < n_out; i++)
 *       outs[i] = rmi_hop_output(f, h, i);   // REMAT_NONE after a failure
 */
#ifndef REMAT_AD_HOP_H
#define REMAT_AD_HOP_H

#include <stddef.h>

#include "ad/node.h"

typedef struct remat_hop_vjp remat_hop_vjp; /* ad/hop_vjp.h */
struct remat_hop_lowering;                  /* exec/hop.h */
struct remat_instr;

struct remat_hop_rules {
    const char *name;
    void *(*retain)(void *data); /* a copied node shares data */
    void (*release)(void *data);
    /* outputs (reached through PROJ nodes) */
    int (*num_outputs)(const void *data);
    void (*output_desc)(const void *data, int i, remat_dtype *dt, remat_shape *shape);
    /* reverse mode (ad/hop_vjp.h): emit the forward that keeps what the
     * backward needs (returns the new node, REMAT_NONE on failure), and later
     * the backward given the output cotangents (REMAT_NONE where none) */
    remat_val (*vjp_forward)(remat_hop_vjp *c, void *data, const remat_val *ins);
    remat_status (*vjp_backward)(remat_hop_vjp *c, void *data, const remat_val *out_cts);
    /* forward mode (ad/jvp.c; may be NULL: no forward mode): emit into g the
     * node's JVP given its primal inputs ins and their tangents tans
     * (REMAT_NONE: a symbolic zero); write the primal outputs to
     * outs[0..n_out) and their tangents to outs[n_out..2 n_out) (REMAT_NONE
     * for a zero tangent). A failure returns its status with
     * remat_last_error() set. */
    remat_status (*jvp)(remat_fn *g, void *data, const remat_val *ins, const remat_val *tans, remat_val *outs,
                        remat_loc loc);
    /* compile: make the instruction */
    remat_status (*lower)(void *data, struct remat_hop_lowering *L, struct remat_instr *ins);
    /* residual report: describe output i when the backward reads it (may be NULL) */
    void (*describe_output)(const void *data, int i, remat_residual *e);
};

/* ---- building ---- */

/* Records a build error for op at loc (first one wins) and returns REMAT_NONE. */
remat_val rmi_fn_fail(remat_fn *f, remat_status st, remat_loc loc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* True when every value is valid; used to propagate REMAT_NONE quietly. */
int rmi_fn_vals_ok(const remat_fn *f, int n, const remat_val *v);
/* "f32[3,4]" for v */
const char *rmi_fn_fmt_val(const remat_fn *f, remat_val v, char *buf, size_t len);

/* Appends a HOP node with the given rules and data over nin inputs (valid
 * values of f); dt is the node's own dtype (printing only: its values are
 * the outputs). The node takes over one reference to data; when it cannot
 * be added (out of memory: recorded on f, REMAT_NONE returned) data is
 * released through rules->release. name may be NULL. */
remat_val rmi_hop_add(remat_fn *f, const remat_hop_rules *rules, void *data, remat_dtype dt, const char *name,
                      int nin, const remat_val *ins, remat_loc loc);
/* Output i of HOP node h: a PROJ node of the dtype and shape its rules give,
 * at h's location. REMAT_NONE (quietly) when h is REMAT_NONE. */
remat_val rmi_hop_output(remat_fn *f, remat_val h, int i);
/* The data of node v when it is a HOP with these rules, else NULL. */
void *rmi_hop_data(const remat_fn *f, remat_val v, const remat_hop_rules *rules);

/* ---- the body's reverse mode, for a loop that tapes steps ---- */

/* A body's VJP cut at its residuals (ad/split.c): fwd(args) -> (outs...,
 * taped residuals...) and bwd(residuals..., cts of outs...) -> (cts of
 * args...). A residual that is (through reshapes and identities) the body's
 * argument a >= first_untaped — a per-step input or a loop-invariant, which
 * the loop holds anyway — is not an output of fwd: res_arg[j] = a. Taped
 * residuals have res_arg[j] = -1 and are fwd's outputs after the body's, in
 * order of j. */
typedef struct {
    remat_fn *fwd, *bwd;
    int n_res;
    int *res_arg; /* n_res entries */
} remat_hop_body_vjp;

/* REMAT_OK, or a status with remat_last_error() set (REMAT_ERR_NOMEM among
 * them); *out is all NULL on failure. */
remat_status rmi_hop_body_vjp_build(const remat_fn *body, int first_untaped, remat_hop_body_vjp *out);
void rmi_hop_body_vjp_clear(remat_hop_body_vjp *v);

#endif

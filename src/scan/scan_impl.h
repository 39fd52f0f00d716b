/*
 * scan_impl.h (internal) — the scan node's data, shared by its constructor,
 * its VJP rules and its runtime.
 *
 * One primitive, three forms (all HOP nodes with scan_rules):
 *   PRIMAL  (init..., xs..., consts...)                 -> (carry..., ys...)
 *   FWD     same inputs                                  -> (carry..., ys..., store)
 *   BWD     (store, xs..., consts..., ct_carry..., ct_ys...) -> (ct_init..., ct_xs..., ct_consts...)
 * The store is one buffer holding the schedule's carry snapshots and step
 * tapes; it is the scan's residual, so the memory planner and the residual
 * report see it like any other value.
 */
#ifndef REMAT_SCAN_IMPL_H
#define REMAT_SCAN_IMPL_H

#include "ad/hop.h"
#include "lanes/lanes.h"
#include "remat/scan.h"

typedef enum { SCAN_PRIMAL, SCAN_FWD, SCAN_BWD } scan_kind;

/* scan_desc and scan_body_vjp (a loop body's values and cut VJP): lanes/lanes.h */

/* The cut VJP of body with its tape layout: fwd's outputs from first_res on
 * are the taped residuals (after carry' and y_t for a scan, after carry' and
 * the accepted flag for a while loop). what names the loop kind in the
 * out-of-memory message; other failures keep the builder's message. */
remat_status rmi_scan_body_vjp_new(const remat_fn *body, int n_carry, int first_res, const char *what,
                                   scan_body_vjp **out);
/* Drops one reference (NULL: nothing). */
void rmi_scan_body_vjp_release(scan_body_vjp *v);

typedef struct remat_scan_data {
    int refcount;
    scan_kind kind;
    remat_fn *body; /* the body as differentiated (a checkpoint region when a policy is given) */
    int64_t length;
    int n_carry, n_xs, n_consts, n_ys;
    bool reverse;
    int unroll; /* >= 1 (remat_scan_options.unroll) */
    remat_schedule_spec sched;
    scan_desc *in;  /* per step: carries, x_t, consts */
    scan_desc *out; /* per step: carries, y_t */
    scan_body_vjp *vjp; /* FWD/BWD; on PRIMAL a cache for its derivatives */
    /* the store (FWD/BWD) */
    size_t carry_bytes; /* all carries of one step, each 16-byte aligned (rmi_scan_align) */
    int64_t max_slots, peak_snapshots, peak_tapes;
    /* two-tier: the slots in the store (RAM) and the slow tier's extent in
     * slots (its highest slot written + 1, past the RAM ones); 0 otherwise */
    int64_t ram_slots, slow_extent;
    size_t store_bytes;
    remat_loc loc;
} remat_scan_data;

extern const remat_hop_rules rmi_scan_rules;

/* A new node data of another form sharing body, shapes and VJP. */
remat_scan_data *rmi_scan_data_derive(remat_scan_data *d, scan_kind kind);
void rmi_scan_data_release(void *vd);
/* Output i of a node form: dtype and full (stacked) shape. */
void rmi_scan_output_desc(const void *vd, int i, remat_dtype *dt, remat_shape *shape);
int rmi_scan_num_outputs(const void *vd);
size_t rmi_scan_align(size_t bytes);

/* rules, in scan_vjp.c and scan_runtime.c */
remat_val rmi_scan_vjp_forward(remat_hop_vjp *c, void *data, const remat_val *ins);
remat_status rmi_scan_vjp_backward(remat_hop_vjp *c, void *data, const remat_val *out_cts);
/* forward mode (scan_jvp.c): a scan over the body's JVP */
remat_status rmi_scan_jvp(remat_fn *g, void *data, const remat_val *ins, const remat_val *tans, remat_val *outs,
                          remat_loc loc);
remat_status rmi_scan_lower(void *data, struct remat_hop_lowering *L, struct remat_instr *ins);

#endif

/*
 * scan_rt.h (internal) — a lowered scan node's runtime state, shared by the
 * interpreted executor (scan_runtime.c) and the compiled-loop one
 * (scan_exec_lanes.c).
 */
#ifndef REMAT_SCAN_RT_H
#define REMAT_SCAN_RT_H

#include "exec/hop.h"
#include "scan/scan_impl.h"
#include "scan/scan_lanes.h"

typedef struct {
    const remat_scan_data *d;
    remat_program *p_primal, *p_fwd, *p_bwd;
    remat_exec_counters *counters;
    void **outs;
    size_t *carry_off, *x_step, *y_step, *k_bytes; /* per carry / x / y / const */
    char *cur, *next, *ct_cur, *ct_next, *tmp_tape, *dummy_y, *ct_k_tmp;
    size_t *k_off;
    int64_t *slot_step, *tape_step;
    /* The argument arrays of the bodies, one pair for the primal/forward
     * bodies (carry, x_t, consts -> carry', y_t, residuals) and one for the
     * backward body (residuals, ct_carry', ct_y -> ct_carry, ct_x, ct_consts),
     * so that what does not change from step to step (the consts and their
     * cotangents) is written once per node execution, not once per step. */
    const void **fin, **bin;
    void **fout, **bout;
    int nc, nx, nk, ny, nres;
    /* Residuals the backward body reads: res_taped[0..n_taped) come from the
     * tape (the forward body writes them there, in that order); res_x lists
     * (residual, x index) pairs read from xs at the step. The ones that are a
     * const are bound once per node execution. Loop-invariant values are
     * never copied per step (scan_impl.h, scan_body_vjp.res_arg). */
    int *res_taped, n_taped;
    int *res_x, n_res_x;
    bool reverse;
    int64_t length;
    /* compiled loops (scan_lanes.h), when the body has them: then the carry
     * and its cotangent are updated in place in cur / ct_cur */
    scan_lanes lanes;
    int64_t *span_step, *span_count; /* kept tapes as spans (scan_exec_lanes.c) */
    char **lb_ptr;      /* the kernels' buffer table (scan_lanes.h) */
    int64_t *lb_stride; /* bytes per step of each */
} scan_rt;

/* Schedule bookkeeping while actions run: the current carry index, live
 * snapshot slots and kept tapes (with their peaks). */
typedef struct {
    int64_t c, live_slots, tapes, peak_slots, peak_tapes;
    int revealed;
} sched_state;

/* The step a loop index k evaluates (a reverse scan runs t = n-1 .. 0). */
static inline int64_t remat_scan_rt_step(const scan_rt *r, int64_t k) { return r->reverse ? r->length - 1 - k : k; }

/* scan_runtime.c */
void remat_scan_rt_copy_carry_in(scan_rt *r, char *dst, const void *const *src);
void remat_scan_rt_copy_carry_out(scan_rt *r, void *const *dst, const char *src);
void remat_scan_rt_note_peak(scan_rt *r, int64_t slots, int64_t tapes);
char *remat_scan_rt_slot(scan_rt *r, char *store, int slot);
char *remat_scan_rt_tape(scan_rt *r, char *store, int64_t j);
/* Applies one forward-phase action; execute = 0 only tracks (the backward's replay). */
void remat_scan_rt_forward_action(scan_rt *r, sched_state *s, const remat_action *a, int execute,
                                  const void *const *xs, void *const *ys);

/* scan_exec_lanes.c: the node's kernels when it runs compiled loops */
void remat_scan_k_primal_lanes(const remat_instr *I);
void remat_scan_k_fwd_lanes(const remat_instr *I);
void remat_scan_k_bwd_lanes(const remat_instr *I);

#endif

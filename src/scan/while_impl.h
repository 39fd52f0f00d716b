/*
 * while_impl.h (internal) — the while node's data (remat/loop.h), shared by
 * its constructor, its VJP and JVP rules and its runtime. It lives with
 * scan: a while-loop is a scan whose length is learnt as it runs, and both
 * replay their schedule through the one loop of scan_replay.h.
 *
 * One primitive, three forms (HOP nodes with rmi_while_rules):
 *   PRIMAL (init..., consts...)               -> (carry..., n_iter)
 *   FWD    same inputs                         -> (carry..., n_iter, store)
 *   BWD    (store, consts..., ct_diff...)      -> (ct_init_diff..., ct_consts...)
 * The store holds the iteration count, one `accepted` bit per iteration and
 * the schedule's snapshots (all carries) and tapes, sized for max_steps.
 * A two-tier schedule's slow snapshots live in a file per run instead
 * (loop_slow.c), sized when the counting pass has told the length.
 */
#ifndef REMAT_WHILE_IMPL_H
#define REMAT_WHILE_IMPL_H

#include "remat/loop.h"
#include "scan/scan_impl.h"

typedef enum { WHILE_PRIMAL, WHILE_FWD, WHILE_BWD } while_kind;

typedef struct remat_while_data {
    int refcount;
    while_kind kind;
    /* cond(carry..., consts...) -> flag; body(carry..., consts...) ->
     * (carry'..., accepted), wrapped so that control carries and the flag
     * pass through stop_gradient (and in a checkpoint region when a
     * body_policy was given): what is evaluated and differentiated */
    remat_fn *cond, *body;
    const char *user_body; /* the caller's body's name (messages) */
    int n_carry, n_diff, n_consts;
    int64_t max_steps;
    remat_schedule_spec sched; /* with a budget: the one it picked */
    int64_t budget;            /* remat_while_options.memory_budget */
    scan_desc *in;      /* carries..., consts... */
    remat_dtype cond_dt, acc_dt; /* the flags' dtypes (rank 0) */
    scan_body_vjp *vjp; /* FWD/BWD; on PRIMAL a cache for its derivatives */
    /* the store (FWD/BWD): header, bits, slot_cap snapshots, tape_cap tapes */
    size_t carry_bytes;
    int64_t slot_cap, tape_cap;
    int64_t slow_cap; /* two-tier: the slow tier's slots within max_steps (0: none) */
    size_t bits_off, slots_off, tapes_off, store_bytes;
    remat_loc loc;
    char label[160]; /* "while(cond 'c', body 'b') at file:line" */
} remat_while_data;

extern const remat_hop_rules rmi_while_rules;

remat_while_data *rmi_while_data_derive(remat_while_data *d, while_kind kind);
void rmi_while_data_release(void *vd);
void rmi_while_output_desc(const void *vd, int i, remat_dtype *dt, remat_shape *shape);
/* the store's layout for d->sched within d->max_steps (d->vjp built) */
void rmi_while_size_store(remat_while_data *d);

/* while_vjp.c: the body's cut VJP into d->vjp (message set on failure);
 * the schedule for d->budget into d->sched (d->vjp built) */
remat_status rmi_while_body_vjp(remat_while_data *d);
remat_status rmi_while_budget_schedule(remat_while_data *d);
remat_val rmi_while_vjp_forward(remat_hop_vjp *c, void *data, const remat_val *ins);
remat_status rmi_while_vjp_backward(remat_hop_vjp *c, void *data, const remat_val *out_cts);
remat_status rmi_while_jvp(remat_fn *g, void *data, const remat_val *ins, const remat_val *tans, remat_val *outs,
                           remat_loc loc);
remat_status rmi_while_lower(void *data, struct remat_hop_lowering *L, struct remat_instr *ins);

#endif

/*
 * loop_exec.c — the interpreted executor of every loop node (loop_rt.h):
 * each step of an op is one execution of a body sub-program — the loop
 * kind's plain step for ADVANCE, the VJP's forward half for TAPE and
 * RECOMPUTE (writing a tape), its backward half for REVERSE and RECOMPUTE.
 * Carries ping-pong between cur and next; snapshots and restores are the
 * backend's mem_copy. A step the kind says has no tape (a rejected while
 * iteration) is advanced plainly and skipped in reverse: absent from the
 * adjoint.
 */
#include <stdarg.h>
#include <stdio.h>

#include "core/assert.h"
#include "scan/loop_rt.h"

void rmi_loop_bind(loop_core *c, const void *const *ks, bool ct)
{
    for (int i = 0; i < c->nk; i++)
        c->fin[c->k_in0 + i] = ks[i];
    const int *arg = c->vjp ? c->vjp->res_arg : NULL;
    for (int j = 0; j < c->nres; j++)
        if (arg[j] >= c->k_in0)
            c->bin[j] = ks[arg[j] - c->k_in0];
    if (!ct)
        return;
    c->reversed = 0;
    for (int i = 0; i < c->nk; i++) { /* the backward body writes a step's share, the add accumulates it */
        const scan_desc *k = &c->k_desc[i];
        c->bout[c->k_out0 + i] = c->ct_k_tmp + c->k_off[i];
        c->be->iface.mem_fill(c->cx, c->ct_k_acc[0] + c->k_off[i], k->dt, -0.0, (size_t)remat_shape_numel(&k->shape));
    }
}

void rmi_loop_finish(loop_core *c, void *const *ct_ks)
{
    for (int i = 0; ct_ks && i < c->nk; i++) {
        const scan_desc *k = &c->k_desc[i];
        if (c->reversed == 0) /* nothing reversed: a plain zero, not the -0.0 start */
            c->be->iface.mem_fill(c->cx, ct_ks[i], k->dt, 0.0, (size_t)remat_shape_numel(&k->shape));
        else
            c->be->iface.mem_copy(c->cx, ct_ks[i], c->ct_k_acc[0] + c->k_off[i], rmi_loop_rt_bytes(k));
    }
}

void rmi_loop_copy_in(loop_core *c, char *dst, const void *const *src, int n)
{
    for (int i = 0; i < n; i++)
        c->be->iface.mem_copy(c->cx, dst + c->carry_off[i], src[i], rmi_loop_rt_bytes(&c->carry_desc[i]));
}

void rmi_loop_copy_out(loop_core *c, void *const *dst, const char *src, int n)
{
    for (int i = 0; i < n; i++)
        c->be->iface.mem_copy(c->cx, dst[i], src + c->carry_off[i], rmi_loop_rt_bytes(&c->carry_desc[i]));
}

/* with the slow tier's extent written (the backward node's, which has the
 * forward's) */
void rmi_loop_stats_run(const void *self, remat_stats *st)
{
    const loop_core *c = self;
    rmi_loop_rt_report_run(c->evals, c->peak_bytes, st);
    if (c->slow_on && c->slow_bwd)
        st->tier_bytes += (size_t)c->slow_hi * c->carry_bytes;
}

void rmi_loop_stats_begin(const remat_exec_ctx *cx, void *self)
{
    (void)cx;
    loop_core *c = self;
    c->evals = 0;
    c->peak_bytes = 0;
    atomic_store_explicit(&c->rep->status, REMAT_OK, memory_order_relaxed);
    c->rep->message[0] = 0;
    if (c->slow_on && !c->slow_bwd) /* no store of an earlier run is read again */
        rmi_loop_slow_sweep(c);
}

void rmi_loop_stats_release(void *self)
{
    const loop_core *c = self;
    if (c->slow_on && !c->slow_bwd)
        rmi_loop_slow_sweep(c);
}

remat_status rmi_loop_stats_status(const void *self)
{
    return (remat_status)atomic_load_explicit(&((const loop_core *)self)->rep->status, memory_order_relaxed);
}

const char *rmi_loop_stats_error(const void *self)
{
    const loop_report *rep = ((const loop_core *)self)->rep;
    return rep->message[0] ? rep->message : NULL;
}

void rmi_loop_fail(loop_core *c, remat_status st, const char *fmt, ...)
{
    int ok = REMAT_OK;
    if (st == REMAT_OK || !atomic_compare_exchange_strong_explicit(&c->rep->status, &ok, (int)st,
                                                                    memory_order_relaxed, memory_order_relaxed))
        return;
    if (!fmt)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->rep->message, sizeof c->rep->message, fmt, ap);
    va_end(ap);
}

static bool taped(const loop_core *c, int64_t k) { return !c->kind->taped || c->kind->taped(c, k); }

/* step k from cur with its tape into tp (an untaped step: plainly) */
static void tape_one(loop_core *c, int64_t k, char *tp)
{
    if (!taped(c, k)) {
        c->kind->advance(c, k);
        return;
    }
    c->kind->step_io(c, k);
    rmi_loop_rt_tape_out(c->fout + c->res_out0, tp, c->vjp->res_off, c->res_taped, c->n_taped);
    rmi_program_exec(c->cx, c->p_fwd, c->fin, c->fout);
    if (c->kind->stepped)
        c->kind->stepped(c, k);
    rmi_loop_rt_swap(&c->cur, &c->next);
    c->evals++;
}

/* backward of step k from its tape; ct_cur holds the carry's cotangent
 * after it */
static void reverse_one(loop_core *c, int64_t k, const char *tp)
{
    if (!taped(c, k))
        return;
    rmi_loop_rt_tape_in(c->bin, tp, c->vjp->res_off, c->res_taped, c->n_taped);
    c->kind->reverse_io(c, k);
    rmi_program_exec(c->cx, c->p_bwd, c->bin, c->bout);
    rmi_loop_rt_add_ct_ks(c->cx, c->k_add, c->nk, c->ct_k_acc, c->ct_k_tmp, c->k_off); /* in step order n-1 .. 0 */
    rmi_loop_rt_swap(&c->ct_cur, &c->ct_next);
    c->reversed++;
}

/* ---- the ops ---- */

static void x_advance(void *x, int64_t step, int64_t n)
{
    loop_core *c = x;
    const int64_t grouped = c->kind->advance_group ? c->kind->advance_group(c, step, n) : 0;
    for (int64_t q = grouped; q < n; q++)
        c->kind->advance(c, step + q);
}

void rmi_loop_snapshot(void *x, int slot)
{
    loop_core *c = x;
    if (c->slow_on && slot >= c->slow0) {
        rmi_loop_slow_io(c, slot, true);
        return;
    }
    c->be->iface.mem_copy(c->cx, rmi_loop_slot(c, slot), c->cur, c->carry_bytes);
}

void rmi_loop_restore(void *x, int slot)
{
    loop_core *c = x;
    if (c->kind->restored)
        c->kind->restored(c);
    if (c->slow_on && slot >= c->slow0) {
        rmi_loop_slow_io(c, slot, false);
        return;
    }
    c->be->iface.mem_copy(c->cx, c->cur, rmi_loop_slot(c, slot), c->carry_bytes);
}

static void x_shot_advance(void *x, int64_t step, int64_t n, int slot, int dslot)
{
    loop_core *c = x;
    for (int64_t q = 0; q < n; q++) {
        rmi_loop_snapshot(x, (int)(slot + q * dslot));
        c->kind->advance(c, step + q);
    }
}

static void x_tape(void *x, int64_t step, int64_t n, int64_t tape)
{
    for (int64_t q = 0; q < n; q++)
        tape_one(x, step + q, rmi_loop_tape(x, tape + q));
}

static void x_reverse(void *x, int64_t step, int64_t n, int64_t tape)
{
    for (int64_t q = 0; q < n; q++)
        reverse_one(x, step - q, rmi_loop_tape(x, tape - q));
}

static void x_recompute(void *x, int64_t step, int64_t n, int slot, int dslot)
{
    loop_core *c = x;
    REMAT_ASSERT(slot >= 0 || n == 1);
    for (int64_t q = 0; q < n; q++) {
        if (slot >= 0)
            rmi_loop_restore(x, (int)(slot + q * dslot));
        if (!taped(c, step - q)) /* absent from the reverse pass */
            continue;
        tape_one(c, step - q, c->tmp_tape);
        reverse_one(c, step - q, c->tmp_tape);
    }
}

static const scan_executor interp = {
    .advance = x_advance, .snapshot = rmi_loop_snapshot, .restore = rmi_loop_restore,
    .shot_advance = x_shot_advance, .tape = x_tape, .reverse = x_reverse, .recompute = x_recompute,
};

void rmi_loop_run(void *x, const scan_xop *ops, int64_t n) { scan_walk(&interp, x, ops, n); }

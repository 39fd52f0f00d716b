/*
 * scan_exec_interp.c — the interpreted executor: each step of an op is one
 * execution of a body sub-program (rmi_program_exec): the primal body for
 * ADVANCE, the VJP's forward half for TAPE and RECOMPUTE (writing a tape),
 * its backward half for REVERSE and RECOMPUTE. Carries ping-pong between
 * cur and next; snapshots and restores are the backend's mem_copy.
 */
#include "core/assert.h"
#include "scan/loop_rt.h"
#include "scan/scan_rt.h"

/* Once per node execution: the consts the bodies read, and where the
 * pass-through residuals go (forward) and are read from (backward). */
static void bind_consts(scan_rt *r, const void *const *ks)
{
    for (int i = 0; i < r->nk; i++)
        r->fin[r->nc + r->nx + i] = ks[i];
    const int *arg = r->d->vjp ? r->d->vjp->res_arg : NULL;
    for (int j = 0; j < r->nres; j++)
        if (arg[j] >= r->nc + r->nx)
            r->bin[j] = ks[arg[j] - r->nc - r->nx];
}

static void bind(scan_rt *r, const void *const *ks, void *const *ct_ks)
{
    bind_consts(r, ks);
    if (!ct_ks)
        return;
    for (int i = 0; i < r->nk; i++) { /* the backward body writes a step's share, the add accumulates it */
        const remat_dtype dt = r->d->in[r->nc + r->nx + i].dt;
        r->bout[r->nc + r->nx + i] = r->ct_k_tmp + r->k_off[i];
        r->be->iface.mem_fill(r->ct_k_acc[0] + r->k_off[i], dt, r->length ? -0.0 : 0.0,
                              r->k_bytes[i] / remat_dtype_size(dt));
    }
}

static void finish(scan_rt *r, void *const *ct_ks)
{
    for (int i = 0; ct_ks && i < r->nk; i++)
        r->be->iface.mem_copy(ct_ks[i], r->ct_k_acc[0] + r->k_off[i], r->k_bytes[i]);
}

/* carry and x_t of step k (the consts are bound already) */
static void set_step_inputs(scan_rt *r, int64_t k, const char *carry)
{
    const void **in = r->fin;
    for (int i = 0; i < r->nc; i++)
        in[i] = carry + r->carry_off[i];
    if (r->nx > 0) {
        const int64_t t = rmi_scan_rt_step(r, k);
        for (int i = 0; i < r->nx; i++)
            in[r->nc + i] = (const char *)r->xs[i] + (size_t)t * r->x_step[i];
    }
}

/* outputs of the primal/forward bodies: next carry, y_t (into ys or a dummy) */
static void set_step_outputs(scan_rt *r, int64_t k, char *next)
{
    void **out = r->fout;
    for (int i = 0; i < r->nc; i++)
        out[i] = next + r->carry_off[i];
    if (r->ny > 0) {
        const int64_t t = rmi_scan_rt_step(r, k);
        size_t dy = 0;
        for (int i = 0; i < r->ny; i++) {
            out[r->nc + i] = r->ys ? (char *)r->ys[i] + (size_t)t * r->y_step[i] : r->dummy_y + dy;
            dy += rmi_scan_align(r->y_step[i]);
        }
    }
}

static void advance_one(scan_rt *r, int64_t k)
{
    set_step_inputs(r, k, r->cur);
    set_step_outputs(r, k, r->next);
    rmi_program_exec(r->p_primal, r->fin, r->fout);
    rmi_loop_rt_swap(&r->cur, &r->next);
    r->evals++;
}

static void tape_one(scan_rt *r, int64_t k, char *tp)
{
    set_step_inputs(r, k, r->cur);
    set_step_outputs(r, k, r->next);
    rmi_loop_rt_tape_out(r->fout + r->nc + r->ny, tp, r->d->vjp->res_off, r->res_taped, r->n_taped);
    rmi_program_exec(r->p_fwd, r->fin, r->fout);
    rmi_loop_rt_swap(&r->cur, &r->next);
    r->evals++;
}

/* backward of step k from its tape; ct_cur holds d carry_{k+1} */
static void reverse_one(scan_rt *r, int64_t k, const char *tp)
{
    const int nc = r->nc, nx = r->nx, ny = r->ny, nres = r->nres;
    const void **in = r->bin;
    void **out = r->bout;
    rmi_loop_rt_tape_in(in, tp, r->d->vjp->res_off, r->res_taped, r->n_taped);
    for (int i = 0; i < nc; i++)
        in[nres + i] = r->ct_cur + r->carry_off[i];
    for (int i = 0; i < nc; i++)
        out[i] = r->ct_next + r->carry_off[i];
    if (nx > 0 || ny > 0) {
        const int64_t t = rmi_scan_rt_step(r, k);
        for (int q = 0; q < r->n_res_x; q++) {
            const int j = r->res_x[2 * q], i = r->res_x[2 * q + 1];
            in[j] = (const char *)r->xs[i] + (size_t)t * r->x_step[i];
        }
        for (int i = 0; i < ny; i++)
            in[nres + nc + i] = (const char *)r->ct_ys[i] + (size_t)t * r->y_step[i];
        for (int i = 0; i < nx; i++)
            out[nc + i] = (char *)r->ct_xs[i] + (size_t)t * r->x_step[i];
    }
    rmi_program_exec(r->p_bwd, in, out);
    rmi_loop_rt_add_ct_ks(r->k_add, r->nk, r->ct_k_acc, r->ct_k_tmp, r->k_off); /* in step order n-1 .. 0 */
    rmi_loop_rt_swap(&r->ct_cur, &r->ct_next);
}

/* ---- the ops ---- */

static void x_advance(void *x, int64_t step, int64_t n)
{
    for (int64_t q = 0; q < n; q++)
        advance_one(x, step + q);
}

static void x_snapshot(void *x, int slot)
{
    scan_rt *r = x;
    r->be->iface.mem_copy(rmi_scan_rt_slot(r, slot), r->cur, r->d->carry_bytes);
}

static void x_restore(void *x, int slot)
{
    scan_rt *r = x;
    r->be->iface.mem_copy(r->cur, rmi_scan_rt_slot(r, slot), r->d->carry_bytes);
}

static void x_shot_advance(void *x, int64_t step, int64_t n, int slot, int dslot)
{
    for (int64_t q = 0; q < n; q++) {
        x_snapshot(x, (int)(slot + q * dslot));
        advance_one(x, step + q);
    }
}

static void x_tape(void *x, int64_t step, int64_t n, int64_t tape)
{
    for (int64_t q = 0; q < n; q++)
        tape_one(x, step + q, rmi_scan_rt_tape(x, tape + q));
}

static void x_reverse(void *x, int64_t step, int64_t n, int64_t tape)
{
    for (int64_t q = 0; q < n; q++)
        reverse_one(x, step - q, rmi_scan_rt_tape(x, tape - q));
}

static void x_recompute(void *x, int64_t step, int64_t n, int slot, int dslot)
{
    scan_rt *r = x;
    REMAT_ASSERT(slot >= 0 || n == 1);
    for (int64_t q = 0; q < n; q++) {
        if (slot >= 0)
            x_restore(x, (int)(slot + q * dslot));
        tape_one(r, step - q, r->tmp_tape);
        reverse_one(r, step - q, r->tmp_tape);
    }
}

static const scan_executor interp = {
    .advance = x_advance, .snapshot = x_snapshot, .restore = x_restore, .shot_advance = x_shot_advance,
    .tape = x_tape, .reverse = x_reverse, .recompute = x_recompute,
};

static void run(void *x, const scan_xop *ops, int64_t n) { scan_walk(&interp, x, ops, n); }

const scan_rt_exec rmi_scan_exec_interp = {.bind = bind, .run = run, .finish = finish,
                                             .carry_in = rmi_scan_rt_copy_carry_in,
                                             .carry_out = rmi_scan_rt_copy_carry_out};

/*
 * while_exec_lanes.c — the compiled executor of a while node (while_rt.h,
 * while_lanes): the ops of scan_replay.h as calls of compiled loops, the
 * interpreted executor's (loop_exec.c) bits, evaluation counts and bits
 * of `accepted`:
 *
 *   ADVANCE       step over the run: consecutive iterations in one call;
 *                 those not evaluated yet record their flags (a chunk of
 *                 WHILE_LANES_CHUNK per call) and end the call where cond
 *                 fails (EXIT)
 *   SHOT_ADVANCE  step's ADVANCE_SHOT over iterations evaluated before
 *   TAPE          body's TAPE over each run of accepted iterations (a
 *                 rejected one is advanced, without a tape; one evaluated
 *                 first records its flag)
 *   REVERSE       body's REVERSE over each run of accepted iterations
 *   RECOMPUTE     body's RECOMPUTE over each run of accepted iterations
 *   SHOT/RESTORE  the backend's mem_copy (the core's)
 *
 * TAPE's runs, REVERSE and RECOMPUTE are the compiled executor both loops
 * share (loop_exec_lanes.c) on the body's one-lane view (while_lanes.view),
 * whose kind says which iterations have a tape (the accepted ones).
 *
 * The carry lives in cur, updated in place (next holds the lookahead of
 * the online forward, as in the interpreter); the cotangents in ct_cur and
 * ct_k_acc[0], accumulated in place in iteration order n-1 .. 0.
 */
#include "core/assert.h"
#include "scan/loop_lanes_ops.h"
#include "scan/loop_rt.h"
#include "scan/while_rt.h"

/* the carries at c, in the body's view or the step's */
static void carry_at(while_rt *r, bool body, int kind, const char *c, int64_t stride)
{
    loop_lanes_view *b = body ? &r->wl.view : &r->wl.step_view;
    for (int i = 0; i < r->c.nc; i++)
        rmi_loop_lanes_set(b, kind, i, c + r->c.carry_off[i], stride);
}

/* how many of iterations k, k-1, .. (at most n) are accepted, in a row */
static int64_t accepted_back(const loop_lanes_view *b, int64_t k, int64_t n)
{
    const while_rt *r = (const while_rt *)b->c;
    int64_t c = 0;
    while (c < n && k - c < r->known && rmi_while_rt_bit(r, k - c))
        c++;
    return c;
}

/* a while loop's body view: no per-step buffers, the accepted iterations taped */
static const loop_lanes_kind while_lanes_kind = {.taped_back = accepted_back};

void rmi_while_lanes_bind(while_rt *r)
{
    while_lanes *W = &r->wl;
    W->view = (loop_lanes_view){.c = &r->c, .kind = &while_lanes_kind, .S = &W->body, .ptr = W->bp,
                                .stride = W->bs, .lane0 = 0, .lanes = 1,
                                .slots = r->c.store + r->c.slots_off, .tapes = r->c.store + r->c.tapes_off};
    W->step_view = W->view;
    W->step_view.S = &W->step, W->step_view.ptr = W->sp, W->step_view.stride = W->ss, W->step_view.plain = r->p_body;
    loop_lanes_view *b = &W->view, *s = &W->step_view;
    for (int i = 0; i < r->c.nk; i++) {
        rmi_loop_lanes_set(s, LB_K, i, r->c.fin[r->c.nc + i], 0);
        if (r->d->kind != WHILE_PRIMAL)
            rmi_loop_lanes_set(b, LB_K, i, r->c.fin[r->c.nc + i], 0);
    }
    rmi_loop_lanes_set(s, LB_Y, 1, W->keep, 0);
    W->sp[W->exit_buf] = W->exit_cell, W->ss[W->exit_buf] = 0;
    if (r->d->kind == WHILE_PRIMAL)
        return;
    rmi_loop_lanes_set(b, LB_Y, 0, W->dummy, 0);
    rmi_loop_lanes_set(b, LB_CTY, 0, W->zero, 0); /* the flag's: stop_gradient */
    if (r->d->kind != WHILE_BWD)
        return;
    carry_at(r, true, LB_CT, r->c.ct_cur, 0);
    for (int i = 0; i < r->c.nk; i++)
        rmi_loop_lanes_set(b, LB_CTK, i, r->c.ct_k_acc[0] + r->c.k_off[i], 0);
}

/* the flags of the c iterations from k a call recorded, into the bits */
static void record(while_rt *r, int64_t k, int64_t c)
{
    double f64[WHILE_LANES_CHUNK];
    float f32[WHILE_LANES_CHUNK];
    const bool d64 = r->d->acc_dt == REMAT_F64;
    rmi_while_rt_to_host(r, d64 ? (void *)f64 : (void *)f32, r->wl.flags, (size_t)c * (d64 ? 8 : 4));
    for (int64_t q = 0; q < c; q++)
        rmi_while_rt_set_bit(r, k + q, d64 ? f64[q] != 0 : f32[q] != 0);
}

/* Iterations k .. k+n-1 from `carry` in place, recording the flags of those
 * not evaluated yet. Returns the iterations run: fewer than n when cond
 * failed after the last of them (*ended). */
static int64_t steps(while_rt *r, char *carry, int64_t k, int64_t n, bool *ended)
{
    while_lanes *W = &r->wl;
    const size_t fb = remat_dtype_size(r->d->acc_dt);
    int64_t done = 0;
    *ended = false;
    carry_at(r, false, LB_CARRY, carry, 0);
    while (done < n && !*ended) {
        const int64_t at = k + done, rec = at >= r->known;
        const int64_t c = rec ? (n - done < WHILE_LANES_CHUNK ? n - done : WHILE_LANES_CHUNK)
                              : (n - done < r->known - at ? n - done : r->known - at);
        rmi_loop_lanes_set(&W->step_view, LB_Y, 0, rec ? W->flags : W->dummy, rec ? (int64_t)fb : 0);
        const double unset = -1;
        rmi_while_rt_from_host(r, W->exit_cell, &unset, sizeof unset);
        rmi_loop_lanes_call(&W->step_view, LKI_ADVANCE, c);
        double e;
        rmi_while_rt_to_host(r, &e, W->exit_cell, sizeof e);
        const int64_t ran = e > 0 ? (int64_t)e : c;
        *ended = e > 0;
        if (rec)
            record(r, at, ran);
        done += ran;
    }
    rmi_loop_lanes_count(&W->step_view, r->p_body, done, true);
    return done;
}

int64_t rmi_while_lanes_iterate(while_rt *r)
{
    if (!rmi_while_rt_cond(r, r->c.cur))
        return 0;
    bool ended;
    const int64_t n = steps(r, r->c.cur, 0, r->d->max_steps, &ended);
    rmi_program_add_runs(r->p_cond, n); /* the interpreter's cond after each iteration */
    return ended ? n : -1;
}

bool rmi_while_lanes_ahead(while_rt *r, int64_t c)
{
    bool ended;
    r->c.be->iface.mem_copy(r->c.cx, r->c.next, r->c.cur, r->d->carry_bytes);
    steps(r, r->c.next, c, 1, &ended);
    rmi_program_add_runs(r->p_cond, 1);
    r->pending = c;
    return !ended;
}

/* ---- the ops ---- */

static void x_advance(void *x, int64_t step, int64_t n)
{
    while_rt *r = x;
    bool ended;
    if (n > 0 && r->pending == step) { /* the lookahead's carry */
        rmi_loop_rt_swap(&r->c.cur, &r->c.next);
        step++, n--;
    }
    r->pending = -1;
    if (n > 0)
        steps(r, r->c.cur, step, n, &ended);
}

static void x_shot_advance(void *x, int64_t step, int64_t n, int slot, int dslot)
{
    while_rt *r = x;
    while_lanes *W = &r->wl;
    while (n > 0) {
        if (r->pending == step || step >= r->known) {
            rmi_loop_lanes_snapshot(&W->view, slot);
            x_advance(r, step, 1);
            step++, n--, slot += dslot;
            continue;
        }
        r->pending = -1;
        const int64_t c = n < r->known - step ? n : r->known - step;
        carry_at(r, false, LB_CARRY, r->c.cur, 0);
        rmi_loop_lanes_set(&W->step_view, LB_Y, 0, W->dummy, 0);
        rmi_loop_lanes_shot_advance_k(&while_lanes_kind, &W->step_view, step, c, slot, dslot);
        step += c, n -= c, slot += (int)(c * dslot);
    }
}

/* how many of iterations k, k+1, .. (at most n) are accepted, in a row */
static int64_t accepted_run(const while_rt *r, int64_t k, int64_t n)
{
    int64_t c = 0;
    while (c < n && k + c < r->known && rmi_while_rt_bit(r, k + c))
        c++;
    return c;
}

/* body's TAPE of iteration k, first evaluated: the flag recorded, and the
 * n_diff carries put back when it is rejected (the interpreter's select) */
static void tape_first(while_rt *r, int64_t k, char *tp)
{
    while_lanes *W = &r->wl;
    const scan_body_vjp *V = r->d->vjp;
    r->c.be->iface.mem_copy(r->c.cx, r->c.next, r->c.cur, r->d->carry_bytes);
    carry_at(r, true, LB_CARRY, r->c.cur, 0);
    for (int t = 0; t < r->c.n_taped; t++)
        rmi_loop_lanes_set(&W->view, LB_TAPE, t, tp + V->res_off[r->c.res_taped[t]], 0);
    rmi_loop_lanes_set(&W->view, LB_Y, 0, W->flags, 0);
    rmi_loop_lanes_call(&W->view, LKI_TAPE, 1);
    rmi_loop_lanes_set(&W->view, LB_Y, 0, W->dummy, 0);
    record(r, k, 1);
    if (!rmi_while_rt_bit(r, k))
        for (int i = 0; i < r->nd; i++)
            r->c.be->iface.mem_copy(r->c.cx, r->c.cur + r->c.carry_off[i], r->c.next + r->c.carry_off[i],
                                    rmi_loop_rt_bytes(&r->d->in[i]));
    rmi_loop_lanes_count(&W->view, r->c.p_fwd, 1, true);
}

static void x_tape(void *x, int64_t step, int64_t n, int64_t tape)
{
    while_rt *r = x;
    for (int64_t q = 0, c; q < n; q += c) {
        const int64_t k = step + q;
        c = 1;
        if (k < r->known && !rmi_while_rt_bit(r, k)) { /* rejected: no tape */
            x_advance(r, k, 1);
            continue;
        }
        r->pending = -1;
        if (k >= r->known) {
            tape_first(r, k, rmi_while_rt_tape(r, tape + q));
            continue;
        }
        c = accepted_run(r, k, n - q);
        carry_at(r, true, LB_CARRY, r->c.cur, 0);
        rmi_loop_lanes_tape_k(&while_lanes_kind, &r->wl.view, k, c, tape + q);
    }
}

static void x_recompute(void *x, int64_t step, int64_t n, int slot, int dslot)
{
    while_rt *r = x;
    if (slot >= 0)
        r->pending = -1;
    rmi_loop_lanes_recompute_k(&while_lanes_kind, &r->wl.view, step, n, slot, dslot);
}

static void x_reverse(void *x, int64_t step, int64_t n, int64_t tape)
{
    rmi_loop_lanes_reverse_k(&while_lanes_kind, &((while_rt *)x)->wl.view, step, n, tape);
}

static void x_snapshot(void *x, int slot) { rmi_loop_lanes_snapshot(&((while_rt *)x)->wl.view, slot); }

static void x_restore(void *x, int slot) { rmi_loop_lanes_restore(&((while_rt *)x)->wl.view, slot); }

static const scan_executor lanes = {
    .advance = x_advance, .snapshot = x_snapshot, .restore = x_restore, .shot_advance = x_shot_advance,
    .tape = x_tape, .reverse = x_reverse, .recompute = x_recompute,
};

void rmi_while_lanes_run(void *x, const scan_xop *ops, int64_t n) { scan_walk(&lanes, x, ops, n); }

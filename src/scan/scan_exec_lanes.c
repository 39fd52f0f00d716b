/*
 * scan_exec_lanes.c — the compiled executor: the body runs as native loops
 * (scan_lanes.h), and each op is one kernel call over its steps:
 *
 *   ADVANCE       advance over n steps
 *   SHOT_ADVANCE  advance_shot over n steps, snapshots at a stride of dslot
 *   TAPE          tape over n steps, tapes at a stride of one tape
 *   REVERSE       reverse over n steps, walking the tapes down
 *   RECOMPUTE     recompute over n steps from snapshots at a stride of dslot
 *   SHOT/RESTORE  the backend's mem_copy
 *
 * The carry and its cotangent live in place in r->cur / r->ct_cur; the
 * consts' cotangents accumulate in place in the node's outputs. Evaluation
 * counts and the sub-programs' run counts (behind ops_executed) are what the
 * interpreted executor reports, so stats and bits are the same.
 */
#include "core/assert.h"
#include "scan/scan_rt.h"

/* ---- the buffer table ---- */

static inline void set(scan_rt *r, int kind, int i, const void *p, int64_t stride)
{
    const int b = r->lanes.base[kind] + i;
    r->lb_ptr[b] = p ? (char *)p + r->lane0 * r->lanes.lane_bytes[b] : NULL;
    r->lb_stride[b] = stride;
}

/* x_t / y_t (and their cotangents) of step k, moving by `dk` steps per call
 * step (+1 forward, -1 reversing) */
static inline void set_steps(scan_rt *r, int64_t k, int dk, bool rev)
{
    if (r->nx == 0 && r->ny == 0)
        return;
    const int64_t t = remat_scan_rt_step(r, k), dt = r->reverse ? -dk : dk;
    for (int i = 0; i < r->nx; i++) {
        const int64_t xb = (int64_t)r->x_step[i];
        set(r, LB_X, i, (const char *)r->xs[i] + t * xb, dt * xb);
        if (rev)
            set(r, LB_CTX, i, (char *)r->ct_xs[i] + t * xb, dt * xb);
    }
    for (int i = 0; i < r->ny; i++) {
        const int64_t yb = (int64_t)r->y_step[i];
        if (rev)
            set(r, LB_CTY, i, (const char *)r->ct_ys[i] + t * yb, dt * yb);
        if (r->ys && !rev)
            set(r, LB_Y, i, (char *)r->ys[i] + t * yb, dt * yb);
        else /* not wanted: every step writes the same scratch */
            set(r, LB_Y, i, r->dummy_y, 0);
    }
}

static inline void set_shot(scan_rt *r, const char *slot, int64_t stride)
{
    for (int i = 0; i < r->nc; i++)
        set(r, LB_SHOT, i, slot + r->carry_off[i], stride);
}

static inline void set_tape(scan_rt *r, const char *tp, int64_t stride)
{
    const scan_body_vjp *V = r->d->vjp;
    for (int t = 0; t < r->n_taped; t++)
        set(r, LB_TAPE, t, tp + V->res_off[r->res_taped[t]], stride);
}

static inline void call(scan_rt *r, int kernel, int64_t count)
{
    const remat_lane_fn fn = r->kfn[kernel];
    REMAT_ASSERT(fn && count > 0);
    fn(r->lb_ptr, r->lb_stride, count);
}

/* evaluations and the sub-programs' runs, once for all lane blocks */
static inline void count_runs(scan_rt *r, remat_program *p, int64_t n, bool eval)
{
    if (r->lane0 != 0)
        return;
    r->evals += eval ? n : 0;
    remat_program_add_runs(p, n);
}

/* dst := src for the carries' lanes of the current block (all lanes when
 * not blocked): rows of lanes, row by row */
static void copy_carry_lanes(scan_rt *r, char *dst, const char *src)
{
    if (r->lanes.block == 0) {
        r->be->iface.mem_copy(dst, src, r->d->carry_bytes);
        return;
    }
    for (int i = 0; i < r->nc; i++) {
        const int64_t lb = r->lanes.lane_bytes[r->lanes.base[LB_CARRY] + i], row = r->lanes.m * lb;
        const int64_t rows = (int64_t)remat_shape_numel(&r->d->in[i].shape) *
                             (int64_t)remat_dtype_size(r->d->in[i].dt) / row;
        const size_t at = r->carry_off[i] + (size_t)(r->lane0 * lb);
        for (int64_t q = 0; q < rows; q++)
            r->be->iface.mem_copy(dst + at + (size_t)(q * row), src + at + (size_t)(q * row),
                                  (size_t)(r->lanes.block * lb));
    }
}

/* ---- the ops ---- */

static void x_advance(void *x, int64_t step, int64_t n)
{
    scan_rt *r = x;
    set_steps(r, step, 1, false);
    call(r, LKI_ADVANCE, n);
    count_runs(r, r->p_primal, n, true);
}

static void x_snapshot(void *x, int slot)
{
    scan_rt *r = x;
    copy_carry_lanes(r, remat_scan_rt_slot(r, slot), r->cur);
}

static void x_restore(void *x, int slot)
{
    scan_rt *r = x;
    copy_carry_lanes(r, r->cur, remat_scan_rt_slot(r, slot));
}

static void x_shot_advance(void *x, int64_t step, int64_t n, int slot, int dslot)
{
    scan_rt *r = x;
    set_steps(r, step, 1, false);
    set_shot(r, remat_scan_rt_slot(r, slot), dslot * (int64_t)r->d->carry_bytes);
    call(r, LKI_ADVANCE_SHOT, n);
    count_runs(r, r->p_primal, n, true);
}

static void x_tape(void *x, int64_t step, int64_t n, int64_t tape)
{
    scan_rt *r = x;
    set_steps(r, step, 1, false);
    set_tape(r, remat_scan_rt_tape(r, tape), (int64_t)r->d->vjp->tape_bytes);
    call(r, LKI_TAPE, n);
    count_runs(r, r->p_fwd, n, true);
}

static void x_reverse(void *x, int64_t step, int64_t n, int64_t tape)
{
    scan_rt *r = x;
    set_steps(r, step, -1, true);
    set_tape(r, remat_scan_rt_tape(r, tape), -(int64_t)r->d->vjp->tape_bytes);
    call(r, LKI_REVERSE, n);
    count_runs(r, r->p_bwd, n, false);
}

static void x_recompute(void *x, int64_t step, int64_t n, int slot, int dslot)
{
    scan_rt *r = x;
    REMAT_ASSERT(slot >= 0 || n == 1);
    set_steps(r, step, -1, true);
    if (slot >= 0)
        set_shot(r, remat_scan_rt_slot(r, slot), dslot * (int64_t)r->d->carry_bytes);
    else
        set_shot(r, r->cur, 0);
    call(r, LKI_RECOMPUTE, n);
    count_runs(r, r->p_fwd, n, true);
    count_runs(r, r->p_bwd, n, false);
}

static const scan_executor lanes = {
    .advance = x_advance, .snapshot = x_snapshot, .restore = x_restore, .shot_advance = x_shot_advance,
    .tape = x_tape, .reverse = x_reverse, .recompute = x_recompute,
};

static void run(void *x, const scan_xop *ops, int64_t n) { scan_walk(&lanes, x, ops, n); }

/* the buffers that stay put, for the current lane block */
static void bind_block(scan_rt *r, const void *const *ks, void *const *ct_ks)
{
    for (int i = 0; i < r->nc; i++) {
        set(r, LB_CARRY, i, r->cur + r->carry_off[i], 0);
        set(r, LB_CT, i, r->ct_cur + r->carry_off[i], 0);
    }
    for (int i = 0; i < r->nk; i++) {
        set(r, LB_K, i, ks[i], 0);
        set(r, LB_CTK, i, ct_ks ? ct_ks[i] : NULL, 0);
    }
}

/* once per node execution */
static void bind(scan_rt *r, const void *const *ks, void *const *ct_ks)
{
    bind_block(r, ks, ct_ks);
    for (int i = 0; i < r->nk; i++) {
        if (ct_ks) { /* -0.0: the accumulation then gives the interpreter's bits (scan_rt.h) */
            const remat_dtype dt = r->d->in[r->nc + r->nx + i].dt;
            r->be->iface.mem_fill(ct_ks[i], dt, r->length ? -0.0 : 0.0, r->k_bytes[i] / remat_dtype_size(dt));
        }
    }
}

static void finish(scan_rt *r, void *const *ct_ks) { (void)r, (void)ct_ks; }

const scan_rt_exec remat_scan_exec_lanes = {.bind = bind, .bind_block = bind_block, .run = run, .finish = finish};

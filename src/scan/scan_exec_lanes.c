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
 *
 * The ops act on a scan_lane_block: a table of all lanes, or of one lane
 * range (the kernels take their lane count at run time). Ranges own
 * disjoint lanes of every buffer (the store, the carry, the xs, ys and the
 * consts' cotangents alike), so a run over many lane-steps is split into
 * ranges on the thread pool (run), and lane blocks run there too
 * (run_blocks); a range's bits do not depend on the thread running it.
 */
#include "core/assert.h"
#include "core/pool.h"
#include "remat/exec.h"
#include "scan/scan_rt.h"

/* ---- the buffer table ---- */

static inline void set(scan_lane_block *b, int kind, int i, const void *p, int64_t stride)
{
    const int q = b->r->lanes.base[kind] + i;
    b->ptr[q] = p ? (char *)p + b->lane0 * b->r->lanes.lane_bytes[q] : NULL;
    b->stride[q] = stride;
}

/* x_t / y_t (and their cotangents) of step k, moving by `dk` steps per call
 * step (+1 forward, -1 reversing) */
static inline void set_steps(scan_lane_block *b, int64_t k, int dk, bool rev)
{
    const scan_rt *r = b->r;
    if (r->nx == 0 && r->ny == 0)
        return;
    const int64_t t = remat_scan_rt_step(r, k), dt = r->reverse ? -dk : dk;
    for (int i = 0; i < r->nx; i++) {
        const int64_t xb = (int64_t)r->x_step[i];
        set(b, LB_X, i, (const char *)r->xs[i] + t * xb, dt * xb);
        if (rev)
            set(b, LB_CTX, i, (char *)r->ct_xs[i] + t * xb, dt * xb);
    }
    for (int i = 0; i < r->ny; i++) {
        const int64_t yb = (int64_t)r->y_step[i];
        if (rev)
            set(b, LB_CTY, i, (const char *)r->ct_ys[i] + t * yb, dt * yb);
        if (r->ys && !rev)
            set(b, LB_Y, i, (char *)r->ys[i] + t * yb, dt * yb);
        else /* not wanted: every step writes the same scratch */
            set(b, LB_Y, i, r->dummy_y, 0);
    }
}

static inline void set_shot(scan_lane_block *b, const char *slot, int64_t stride)
{
    for (int i = 0; i < b->r->nc; i++)
        set(b, LB_SHOT, i, slot + b->r->carry_off[i], stride);
}

static inline void set_tape(scan_lane_block *b, const char *tp, int64_t stride)
{
    const scan_rt *r = b->r;
    const scan_body_vjp *V = r->d->vjp;
    for (int t = 0; t < r->n_taped; t++)
        set(b, LB_TAPE, t, tp + V->res_off[r->res_taped[t]], stride);
}

static inline void call(scan_lane_block *b, int kernel, int64_t count)
{
    const remat_lane_fn fn = b->r->lanes.fn[kernel];
    REMAT_ASSERT(fn && count > 0 && b->lanes > 0);
    fn(b->ptr, b->stride, count, b->lanes);
}

/* evaluations and the sub-programs' runs, once for all lane ranges (the
 * range at lane 0 counts: one thread) */
static inline void count_runs(scan_lane_block *b, remat_program *p, int64_t n, bool eval)
{
    if (b->lane0 != 0)
        return;
    b->r->evals += eval ? n : 0;
    remat_program_add_runs(p, n);
}

/* dst := src for the carries' lanes of the range (all lanes: one copy):
 * rows of lanes, row by row */
static void copy_carry_lanes(scan_lane_block *b, char *dst, const char *src)
{
    const scan_rt *r = b->r;
    if (b->lanes == r->lanes.m) {
        r->be->iface.mem_copy(dst, src, r->d->carry_bytes);
        return;
    }
    for (int i = 0; i < r->nc; i++) {
        const int64_t lb = r->lanes.lane_bytes[r->lanes.base[LB_CARRY] + i], row = r->lanes.m * lb;
        const int64_t rows = (int64_t)remat_shape_numel(&r->d->in[i].shape) *
                             (int64_t)remat_dtype_size(r->d->in[i].dt) / row;
        const size_t at = r->carry_off[i] + (size_t)(b->lane0 * lb);
        for (int64_t q = 0; q < rows; q++)
            r->be->iface.mem_copy(dst + at + (size_t)(q * row), src + at + (size_t)(q * row),
                                  (size_t)(b->lanes * lb));
    }
}

/* ---- the ops ---- */

static void x_advance(void *x, int64_t step, int64_t n)
{
    scan_lane_block *b = x;
    set_steps(b, step, 1, false);
    call(b, LKI_ADVANCE, n);
    count_runs(b, b->r->p_primal, n, true);
}

static void x_snapshot(void *x, int slot)
{
    scan_lane_block *b = x;
    copy_carry_lanes(b, remat_scan_rt_slot(b->r, slot), b->r->cur);
}

static void x_restore(void *x, int slot)
{
    scan_lane_block *b = x;
    copy_carry_lanes(b, b->r->cur, remat_scan_rt_slot(b->r, slot));
}

static void x_shot_advance(void *x, int64_t step, int64_t n, int slot, int dslot)
{
    scan_lane_block *b = x;
    set_steps(b, step, 1, false);
    set_shot(b, remat_scan_rt_slot(b->r, slot), dslot * (int64_t)b->r->d->carry_bytes);
    call(b, LKI_ADVANCE_SHOT, n);
    count_runs(b, b->r->p_primal, n, true);
}

static void x_tape(void *x, int64_t step, int64_t n, int64_t tape)
{
    scan_lane_block *b = x;
    set_steps(b, step, 1, false);
    set_tape(b, remat_scan_rt_tape(b->r, tape), (int64_t)b->r->d->vjp->tape_bytes);
    call(b, LKI_TAPE, n);
    count_runs(b, b->r->p_fwd, n, true);
}

static void x_reverse(void *x, int64_t step, int64_t n, int64_t tape)
{
    scan_lane_block *b = x;
    set_steps(b, step, -1, true);
    set_tape(b, remat_scan_rt_tape(b->r, tape), -(int64_t)b->r->d->vjp->tape_bytes);
    call(b, LKI_REVERSE, n);
    count_runs(b, b->r->p_bwd, n, false);
}

static void x_recompute(void *x, int64_t step, int64_t n, int slot, int dslot)
{
    scan_lane_block *b = x;
    REMAT_ASSERT(slot >= 0 || n == 1);
    set_steps(b, step, -1, true);
    if (slot >= 0)
        set_shot(b, remat_scan_rt_slot(b->r, slot), dslot * (int64_t)b->r->d->carry_bytes);
    else
        set_shot(b, b->r->cur, 0);
    call(b, LKI_RECOMPUTE, n);
    count_runs(b, b->r->p_fwd, n, true);
    count_runs(b, b->r->p_bwd, n, false);
}

static const scan_executor lanes = {
    .advance = x_advance, .snapshot = x_snapshot, .restore = x_restore, .shot_advance = x_shot_advance,
    .tape = x_tape, .reverse = x_reverse, .recompute = x_recompute,
};

static void run_on(void *b, const scan_xop *ops, int64_t n) { scan_walk(&lanes, b, ops, n); }

/* the buffers that stay put, for the range's lanes */
static void bind_range(scan_lane_block *b)
{
    const scan_rt *r = b->r;
    for (int i = 0; i < r->nc; i++) {
        set(b, LB_CARRY, i, r->cur + r->carry_off[i], 0);
        set(b, LB_CT, i, r->ct_cur + r->carry_off[i], 0);
    }
    for (int i = 0; i < r->nk; i++) {
        set(b, LB_K, i, r->ks[i], 0);
        set(b, LB_CTK, i, r->ct_ks ? r->ct_ks[i] : NULL, 0);
    }
}

/* the table of range `at` (one per concurrent range: `at` is the first
 * unit of a pool range, and pool ranges are disjoint) over lanes [lo, hi) */
static scan_lane_block *range_table(scan_rt *r, int64_t at, int64_t lo, int64_t hi)
{
    REMAT_ASSERT(at < r->n_ranges && lo < hi && hi <= r->lanes.m);
    scan_lane_block *b = &r->ranges[at];
    b->lane0 = lo, b->lanes = hi - lo;
    bind_range(b);
    return b;
}

/* ---- runs split into lane ranges ---- */

/* lane-steps below which a split run costs more in hand-offs than it gains
 * (a wake-up is microseconds; a lane-step a few nanoseconds) */
#define SPLIT_MIN_LANE_STEPS ((int64_t)1 << 16)

typedef struct {
    scan_rt *r;
    const scan_xop *ops;
    int64_t n;
} split_ctx;

/* units [begin, end) of split_lanes lanes: the ops over their lanes */
static void run_split(void *ctx, int64_t begin, int64_t end)
{
    const split_ctx *c = ctx;
    scan_rt *r = c->r;
    const int64_t u = r->split_lanes, hi = end * u < r->lanes.m ? end * u : r->lanes.m;
    run_on(range_table(r, begin, begin * u, hi), c->ops, c->n);
}

static bool split_pays(const scan_rt *r, const scan_xop *ops, int64_t n)
{
    if (!r->lanes.split || r->split_lanes == 0 || remat_num_threads() < 2)
        return false;
    scan_evals e = {0};
    remat_scan_ops_count(ops, n, &e);
    return (e.plain + e.record + e.reverse) * r->lanes.m >= SPLIT_MIN_LANE_STEPS;
}

/* all lanes: on the pool in lane ranges when that pays, else one call per op */
static void run(void *x, const scan_xop *ops, int64_t n)
{
    scan_rt *r = x;
    if (split_pays(r, ops, n)) {
        split_ctx c = {.r = r, .ops = ops, .n = n};
        remat_parallel_for((r->lanes.m + r->split_lanes - 1) / r->split_lanes, 1, run_split, &c);
    } else {
        run_on(&r->lb, ops, n);
    }
}

/* once per node execution */
static void bind(scan_rt *r, const void *const *ks, void *const *ct_ks)
{
    r->ks = ks, r->ct_ks = ct_ks;
    bind_range(&r->lb);
    for (int i = 0; i < r->nk; i++) {
        if (ct_ks) { /* -0.0: the accumulation then gives the interpreter's bits (scan_rt.h) */
            const remat_dtype dt = r->d->in[r->nc + r->nx + i].dt;
            r->be->iface.mem_fill(ct_ks[i], dt, r->length ? -0.0 : 0.0, r->k_bytes[i] / remat_dtype_size(dt));
        }
    }
}

/* ---- lane blocks ---- */

/* blocks [begin, end): each one's forward phase, then its reverse, back to
 * back, so that its share of the store stays in cache */
static void run_block_range(void *ctx, int64_t begin, int64_t end)
{
    scan_rt *r = ctx;
    const int64_t w = r->lanes.block, m = r->lanes.m;
    for (int64_t j = begin; j < end; j++) {
        scan_lane_block *b = range_table(r, begin, j * w, (j + 1) * w < m ? (j + 1) * w : m);
        remat_status st = remat_scan_rt_run_phase(r, SCAN_PHASE_FORWARD, run_on, b);
        if (st == REMAT_OK)
            st = remat_scan_rt_run_phase(r, SCAN_PHASE_REVERSE, run_on, b);
        remat_scan_rt_fail(r, st);
    }
}

static void run_blocks(scan_rt *r)
{
    const int64_t n = (r->lanes.m + r->lanes.block - 1) / r->lanes.block;
    if (r->lanes.split)
        remat_parallel_for(n, 1, run_block_range, r);
    else
        run_block_range(r, 0, n);
}

static void finish(scan_rt *r, void *const *ct_ks) { (void)r, (void)ct_ks; }

const scan_rt_exec remat_scan_exec_lanes = {.bind = bind, .run = run, .run_blocks = run_blocks, .finish = finish};

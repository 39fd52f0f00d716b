/*
 * scan_exec_lanes.c — a scan's compiled loops (lanes/lanes.h): the ops are
 * the compiled executor both loops share (loop_exec_lanes.c,
 * rmi_loop_lanes_run: one kernel call per op over its steps) on the
 * scan's lane views, whose kind sets a step's x_t and y_t (and their
 * cotangents). This file binds the views, splits runs over lane ranges on
 * threads and runs lane blocks, and packs carries in and out.
 *
 * The carry and its cotangent live in place in r->c.cur / r->c.ct_cur; the
 * consts' cotangents accumulate in place in the loop core's sum
 * (ct_k_acc[0], as the while loop's: rmi_loop_bind starts it at -0.0 and
 * rmi_loop_finish copies it out). Evaluation
 * counts and the sub-programs' run counts (behind ops_executed) are what the
 * interpreted executor reports, so stats and bits are the same.
 *
 * The ops act on a loop_lanes_view (loop_lanes.h): a table of all lanes,
 * or of one lane range (the kernels take their lane count at run time). Ranges own
 * disjoint lanes of every buffer (the store, the carry, the xs, ys and the
 * consts' cotangents alike), so a run over many lane-steps is split into
 * ranges on the thread pool (run), and lane blocks run there too
 * (run_blocks); a range's bits do not depend on the thread running it.
 */
#include "core/assert.h"
#include "core/pool.h"
#include "remat/exec.h"
#include "scan/loop_lanes.h"
#include "scan/scan_rt.h"

/* the scan whose view b is */
static inline scan_rt *rt(const loop_lanes_view *b) { return (scan_rt *)b->c; }

/* x_t / y_t (and their cotangents) of step k, moving by `dk` steps per call
 * step (+1 forward, -1 reversing) */
static inline void set_steps(loop_lanes_view *b, int64_t k, int dk, bool rev)
{
    const scan_rt *r = rt(b);
    if (r->nx == 0 && r->ny == 0)
        return;
    const int64_t t = rmi_scan_rt_step(r, k), dt = r->reverse ? -dk : dk;
    for (int i = 0; i < r->nx; i++) {
        const int64_t xb = (int64_t)r->x_step[i];
        rmi_loop_lanes_set(b, LB_X, i, (const char *)r->xs[i] + t * xb, dt * xb);
        if (rev)
            rmi_loop_lanes_set(b, LB_CTX, i, (char *)r->ct_xs[i] + t * xb, dt * xb);
    }
    for (int i = 0; i < r->ny; i++) {
        const int64_t yb = (int64_t)r->y_step[i];
        if (rev)
            rmi_loop_lanes_set(b, LB_CTY, i, (const char *)r->ct_ys[i] + t * yb, dt * yb);
        if (r->ys && !rev)
            rmi_loop_lanes_set(b, LB_Y, i, (char *)r->ys[i] + t * yb, dt * yb);
        else /* not wanted: every step writes the same scratch */
            rmi_loop_lanes_set(b, LB_Y, i, r->dummy_y, 0);
    }
}

const loop_lanes_kind rmi_scan_lanes_kind = {.steps = set_steps};
static const loop_lanes_kind no_steps = {0}; /* a scan without xs and ys: nothing per step */

static void run_on(void *b, const scan_xop *ops, int64_t n) { rmi_loop_lanes_run(b, ops, n); }

/* the buffers that stay put, for the range's lanes, and the store: the
 * node's unless the range is a block in a worker's store (run_blocks) */
static void bind_range(loop_lanes_view *b, char *worker_store)
{
    const scan_rt *r = rt(b);
    const remat_scan_data *d = r->d;
    b->group = worker_store ? r->lanes.m / r->lanes.block : 0;
    b->slots = worker_store ? worker_store : r->c.store;
    b->plain = r->p_primal;
    b->kind = r->nx == 0 && r->ny == 0 ? &no_steps : &rmi_scan_lanes_kind;
    if (d->vjp && b->slots)
        b->tapes = b->slots + (size_t)(b->group ? (d->max_slots + b->group - 1) / b->group : d->max_slots) *
                                  d->carry_bytes;
    for (int i = 0; i < r->c.nc; i++) {
        rmi_loop_lanes_set(b, LB_CARRY, i, r->c.cur + r->c.carry_off[i], 0);
        rmi_loop_lanes_set(b, LB_CT, i, r->c.ct_cur + r->c.carry_off[i], 0);
    }
    for (int i = 0; i < r->c.nk; i++) {
        rmi_loop_lanes_set(b, LB_K, i, r->ks[i], 0);
        rmi_loop_lanes_set(b, LB_CTK, i, r->ct_ks ? r->c.ct_k_acc[0] + r->c.k_off[i] : NULL, 0);
    }
}

/* the table of range `at` (one per concurrent range: `at` is the first
 * unit of a pool range, and pool ranges are disjoint) over lanes [lo, hi) */
static loop_lanes_view *range_table(scan_rt *r, int64_t at, int64_t lo, int64_t hi, char *worker_store)
{
    REMAT_ASSERT(at < r->n_ranges && lo < hi && hi <= r->lanes.m);
    loop_lanes_view *b = rmi_scan_rt_range(r, at);
    b->lane0 = lo, b->lanes = hi - lo;
    bind_range(b, worker_store);
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
    run_on(range_table(r, begin, begin * u, hi, NULL), c->ops, c->n);
}

/* the run's lane-steps when it is long enough to split, else 0 */
static int64_t split_work(const scan_rt *r, const scan_xop *ops, int64_t n)
{
    if (!r->lanes.split || r->split_lanes == 0 || remat_num_threads() < 2)
        return 0;
    scan_evals e = {0};
    rmi_scan_ops_count(ops, n, &e);
    const int64_t work = (e.plain + e.record + e.reverse) * r->lanes.m;
    return work >= SPLIT_MIN_LANE_STEPS ? work : 0;
}

/* all lanes: on the pool in lane ranges when that pays (long enough, and
 * faster split on this machine now: the node's split_site), else one call
 * per op */
static void run(void *x, const scan_xop *ops, int64_t n)
{
    scan_rt *r = x;
    const int64_t work = split_work(r, ops, n);
    if (work > 0) {
        split_ctx c = {.r = r, .ops = ops, .n = n};
        rmi_parallel_for_site(&r->split_site, (r->lanes.m + r->split_lanes - 1) / r->split_lanes,
                              1, run_split, &c);
    } else {
        run_on(&r->lb, ops, n);
    }
}

/* once per node execution, after the core's */
static void bind(scan_rt *r) { bind_range(&r->lb, NULL); }

/* ---- lane blocks ----
 *
 * Each block runs its forward phase, then its reverse, back to back, so
 * that its store stays in cache. With a worker's store (scan_rt.h), a pool
 * range is a set of workers, each with its store (the node's store cut
 * into worker_bytes pieces: the blocks touch no other part of it) and
 * claiming blocks until none are left; which worker runs a block changes
 * no bits (a block writes every item of the store before reading it).
 * Otherwise (shared stores: blocks on the caller; or more threads than
 * workers' stores fit in the node's), blocks use the node's store, each at
 * its lanes. */

typedef struct {
    scan_rt *r;
    atomic_llong next; /* the next block to claim */
} blocks_ctx;

static void run_block(scan_rt *r, int64_t at, int64_t j, char *worker_store)
{
    const int64_t w = r->lanes.block, m = r->lanes.m;
    loop_lanes_view *b = range_table(r, at, j * w, (j + 1) * w < m ? (j + 1) * w : m, worker_store);
    remat_status st = rmi_scan_rt_run_phase(r, SCAN_PHASE_FORWARD, run_on, b);
    if (st == REMAT_OK)
        st = rmi_scan_rt_run_phase(r, SCAN_PHASE_REVERSE, run_on, b);
    rmi_scan_rt_fail(r, st);
}

/* workers [begin, end) */
static void run_workers(void *ctx, int64_t begin, int64_t end)
{
    blocks_ctx *c = ctx;
    scan_rt *r = c->r;
    const int64_t nb = (r->lanes.m + r->lanes.block - 1) / r->lanes.block;
    for (int64_t k = begin; k < end; k++)
        for (int64_t j; (j = atomic_fetch_add_explicit(&c->next, 1, memory_order_relaxed)) < nb;)
            run_block(r, k, j, r->c.store + (size_t)k * r->worker_bytes);
}

/* blocks [begin, end) in the node's store */
static void run_block_range(void *ctx, int64_t begin, int64_t end)
{
    for (int64_t j = begin; j < end; j++)
        run_block(ctx, begin, j, NULL);
}

static void run_blocks(scan_rt *r)
{
    const int64_t nb = (r->lanes.m + r->lanes.block - 1) / r->lanes.block;
    const int64_t threads = r->lanes.split ? remat_num_threads() : 1, nw = threads < nb ? threads : nb;
    if (r->worker_bytes > 0 && nw <= r->max_workers) {
        blocks_ctx c = {.r = r};
        atomic_init(&c.next, 0);
        rmi_parallel_for_site(&r->block_site, nw, 1, run_workers, &c); /* one thread: worker 0 takes all */
    } else if (r->lanes.split) { /* more threads than workers' stores fit */
        rmi_parallel_for_site(&r->block_site, nb, 1, run_block_range, r);
    } else {
        run_block_range(r, 0, nb);
    }
}

/* packed carries: the caller's tensors (SHOT) to and from buf (CARRY), all
 * lanes, through the full table (bind sets its CARRY again) */
static void move_carry(scan_rt *r, char *buf, const void *const *t, int kernel)
{
    loop_lanes_view *b = &r->lb;
    for (int i = 0; i < r->c.nc; i++) {
        rmi_loop_lanes_set(b, LB_CARRY, i, buf + r->c.carry_off[i], 0);
        rmi_loop_lanes_set(b, LB_SHOT, i, t[i], 0);
    }
    rmi_loop_lanes_call(b, kernel, 1);
}

static void carry_in(scan_rt *r, char *dst, const void *const *src)
{
    if (r->lanes.packed)
        move_carry(r, dst, src, LKI_PACK);
    else
        rmi_scan_rt_copy_carry_in(r, dst, src);
}

static void carry_out(scan_rt *r, void *const *dst, const char *src)
{
    if (r->lanes.packed)
        move_carry(r, (char *)src, (const void *const *)dst, LKI_UNPACK);
    else
        rmi_scan_rt_copy_carry_out(r, dst, src);
}

const scan_rt_exec rmi_scan_exec_lanes = {.bind = bind, .run = run, .run_blocks = run_blocks,
                                            .carry_in = carry_in, .carry_out = carry_out};

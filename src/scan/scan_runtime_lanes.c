/*
 * scan_runtime_lanes.c — a lowered scan node's compiled lanes: the kernels
 * (lanes/lanes.h), how its lanes are cut for cache and for threads (lane
 * blocks, split units, a worker's store; scan_exec_lanes.c runs them), and
 * one buffer table per range that may run at once. Cuts are for the
 * host's cache and threads, only on a backend that asks for them.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>


#include "lanes/lanes.h"
#include "scan/scan_rt.h"
#include "scan/scan_tier.h"

/* Lanes per block for a checkpointed scan over m independent lanes:
 * the options' scan_block_lanes = N (2 <= N < m; REMAT_SCAN_BLOCK_NONE:
 * never; remat_compile_options, REMAT_SCAN_BLOCK by default), else,
 * for a store over SCAN_BLOCK_MIN_STORE, the most lanes (a multiple of 8,
 * at least SCAN_BLOCK_MIN_LANES, at most m/2; the last block may be
 * shorter) whose share of the store fits in SCAN_BLOCK_STORE (most of the
 * 1 MiB L2 of this machine's cores: a block's store is packed in its
 * worker's, scan_exec_lanes.c); 0: not blocked. Fewer lanes make each
 * kernel call too short to pay its loop overheads. Blocks cost one more
 * pass over the steps (the forward node's): with interleaved lanes a step
 * is dearer (its loops vectorise worse), and that pass costs more than the
 * cache saves unless the schedule recomputes steps anyway. (Interleaved
 * carries are packed, lanes/lanes.h, and count as contiguous.) */
#define SCAN_BLOCK_MIN_STORE ((size_t)4 << 20)
#define SCAN_BLOCK_STORE ((size_t)768 << 10)
#define SCAN_BLOCK_MIN_LANES 32
static int64_t block_of(const scan_rt *r, const remat_scan_data *d)
{
    const int64_t m = r->lanes.m;
    const int64_t v = r->opts->scan_block_lanes; /* remat_compile_options */
    if (v != 0)
        return v >= 2 && v < m ? v : 0;
    const scan_evals *f = &r->plan.cost[SCAN_PHASE_FORWARD].evals, *b = &r->plan.cost[SCAN_PHASE_REVERSE].evals;
    const bool recomputes = f->plain + f->record + b->plain + b->record > d->length;
    if ((!r->lanes.contiguous && !recomputes) || d->store_bytes < SCAN_BLOCK_MIN_STORE || m < 2 * SCAN_BLOCK_MIN_LANES)
        return 0;
    const size_t per_lane = d->store_bytes / (size_t)m + 1;
    int64_t w = (int64_t)(SCAN_BLOCK_STORE / per_lane) / 8 * 8;
    w = w > SCAN_BLOCK_MIN_LANES ? w : SCAN_BLOCK_MIN_LANES;
    return w < m / 2 ? w : m / 2 / 8 * 8;
}

/* A run split over threads takes units of SPLIT_LANES lanes or more (whole
 * cache lines of f64 lanes, so that two threads write no line together),
 * at most SPLIT_UNITS of them (the pool hands out ranges of units). */
#define SPLIT_LANES 8
#define LINE 64 /* bytes in a cache line */
#define SPLIT_UNITS 64
static int64_t split_lanes(int64_t m)
{
    const int64_t u = (m + SPLIT_UNITS - 1) / SPLIT_UNITS;
    return m >= 2 * SPLIT_LANES ? (u + SPLIT_LANES - 1) / SPLIT_LANES * SPLIT_LANES : 0;
}

scan_lane_cuts rmi_scan_rt_lane_cuts(const remat_backend *be, const scan_rt *r, const remat_scan_data *d,
                                     bool blocks)
{
    scan_lane_cuts c = {0, 0};
    if (!be->iface.host_lane_cuts) /* a device's lanes: every run one call over all lanes */
        return c;
    c.block = blocks && r->lanes.ranges ? block_of(r, d) : 0;
    c.split_lanes = r->lanes.split ? split_lanes(r->lanes.m) : 0;
    return c;
}

/* A lane block's store in its worker's (scan_exec_lanes.c): the items of
 * one block packed m / block side by side, the node's store cut into as
 * many as fit. Only where blocks may run at once (a block that stores an
 * element all lanes share would collide with its neighbours' items). */
static void worker_store(scan_rt *r, const remat_scan_data *d)
{
    r->worker_bytes = 0, r->max_workers = 0;
    if (r->lanes.block == 0 || !r->lanes.split || !d->vjp)
        return;
    const int64_t g = r->lanes.m / r->lanes.block;
    const size_t bytes = (size_t)((d->max_slots + g - 1) / g) * d->carry_bytes +
                         (size_t)((d->peak_tapes + g - 1) / g) * d->vjp->tape_bytes;
    const size_t aligned = (bytes + 63) / 64 * 64;
    if (aligned == 0 || aligned > d->store_bytes)
        return;
    r->worker_bytes = aligned;
    r->max_workers = (int64_t)(d->store_bytes / aligned);
}

/* Compiled loops for the body when it has them (lanes/lanes.h) and they pay
 * (scan_tier.h), lane-blocked when `blocks` allows, the lanes are
 * independent and the loops are compiled now. Out of memory for them the
 * loops are interpreted (the same bits). False also for a node that starts
 * interpreted and may switch later (r->tier_wait: its programs and tables
 * are kept; never blocked, as its forward and backward nodes may switch at
 * different runs). */
/* The translation's inputs (lanes/lanes.h): what rmi_lanes_build reads. */
static lanes_key scan_key(const remat_scan_data *d, const remat_backend *be, unsigned want)
{
    lanes_key k = {.ok = true};
    const int64_t head[8] = {1 /* a scan */, (int64_t)(uintptr_t)be, want, d->length == 0, d->n_carry, d->n_xs,
                             d->n_consts, d->n_ys};
    rmi_lanes_key_put(&k, head, sizeof head);
    rmi_lanes_key_descs(&k, d->in, d->n_carry + d->n_xs + d->n_consts);
    rmi_lanes_key_descs(&k, d->out, d->n_carry + d->n_ys);
    rmi_lanes_key_fn(&k, d->body);
    rmi_lanes_key_vjp(&k, d->vjp);
    return k;
}

typedef struct {
    const remat_scan_data *d;
    remat_hop_lowering *L;
    unsigned want;
} scan_translation;

static bool translate(void *ctx, lanes_memo_val *out)
{
    const scan_translation *t = ctx;
    const remat_scan_data *d = t->d;
    const lanes_loop loop = {.body = d->body, .vjp = d->vjp, .length = d->length, .n_carry = d->n_carry,
                             .n_xs = d->n_xs, .n_consts = d->n_consts, .n_ys = d->n_ys, .in = d->in, .out = d->out};
    out->n_views = 1;
    return rmi_lanes_build(&loop, t->L->be, t->want, &out->view[0], t->L->alloc, t->L->ctx);
}

/* rmi_lanes_build, or the process's kept translation of the same body
 * (lanes/lanes.h) */
static int lanes_build(const remat_scan_data *d, remat_hop_lowering *L, unsigned want, scan_lanes *out)
{
    if (!L->be->iface.compile_lanes || !L->be->iface.can_compile_lanes())
        return 0;
    lanes_key k = scan_key(d, L->be, want);
    lanes_memo_val v;
    lanes_memo_entry *e;
    if (!rmi_lanes_translate_kept(&k, translate, &(scan_translation){d, L, want}, &v, &e))
        return 0;
    *out = v.view[0];
    out->memo = e;
    return 1;
}

bool rmi_scan_rt_use_lanes(scan_rt *r, const remat_scan_data *d, remat_hop_lowering *L, unsigned want, bool blocks)
{
    if (rmi_scan_jit_mode(r->opts) == SCAN_JIT_NEVER || !lanes_build(d, L, want, &r->lanes))
        return false;
    const bool now = rmi_scan_tier_lower(r);
    if (!now && !r->tier_wait) {
        memset(&r->lanes, 0, sizeof r->lanes);
        return false;
    }
    const scan_lane_cuts cuts = rmi_scan_rt_lane_cuts(L->be, r, d, now && blocks);
    r->lanes.block = cuts.block;
    r->split_lanes = cuts.split_lanes;
    /* a buffer table for all lanes and one per range that may run at once:
     * a block, or a unit of a split run */
    const int n = r->lanes.base[LB_KINDS];
    const int64_t m = r->lanes.m;
    const int64_t units = r->split_lanes ? (m + r->split_lanes - 1) / r->split_lanes : 0,
                  nb = r->lanes.block > 0 ? (m + r->lanes.block - 1) / r->lanes.block : 0;
    r->n_ranges = units > nb ? units : nb;
    worker_store(r, d);
    /* Ranges running at once rewrite their tables at every kernel call, so
     * each table (and each range's view) starts a cache line of
     * its own: two threads' tables sharing a line made it bounce between
     * the cores at every call. */
    const size_t table = ((sizeof(char *) + sizeof(int64_t)) * (size_t)(n + 1) + LINE - 1) / LINE * LINE,
                 entry = (sizeof(loop_lanes_view) + LINE - 1) / LINE * LINE;
    char *mem = L->alloc(L->ctx, (size_t)(r->n_ranges + 1) * (entry + table) + LINE);
    r->ranges = NULL;
    if (mem) {
        char *at = (char *)(((uintptr_t)mem + LINE - 1) / LINE * LINE);
        r->ranges = (loop_lanes_view *)at;
        r->range_bytes = entry;
        char *tables = at + (size_t)r->n_ranges * entry;
        for (int64_t j = 0; j <= r->n_ranges; j++) {
            loop_lanes_view *b = j < r->n_ranges ? rmi_scan_rt_range(r, j) : &r->lb;
            *b = (loop_lanes_view){.c = &r->c, .kind = &rmi_scan_lanes_kind, .S = &r->lanes, .lane0 = 0, .lanes = m};
            b->ptr = (char **)(tables + (size_t)j * table);
            b->stride = (int64_t *)(b->ptr + n + 1);
        }
    }
    if (!r->ranges) { /* out of memory for the tables: interpreted (the same bits) */
        memset(&r->lanes, 0, sizeof r->lanes);
        r->tier_wait = false;
        return false;
    }
    return now;
}

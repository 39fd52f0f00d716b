/*
 * scan_rt.h (internal) — a lowered scan node's runtime state: the loop core
 * (loop_rt.h) and what is the scan's own, shared by the node's kernels
 * (scan_runtime.c) and its two executors: the core's interpreter (its scan
 * kind in scan_exec_interp.c) and compiled lanes (scan_exec_lanes.c). Both
 * execute the ops of the node's plan (scan_replay.h).
 *
 * Every buffer the body reads or writes — the carries, snapshots and tapes
 * in the store, the cotangent accumulators — is the backend's memory, moved
 * with its mem_copy / mem_fill and its kernels only (backend_impl.h).
 */
#ifndef REMAT_SCAN_RT_H
#define REMAT_SCAN_RT_H

#include <stdatomic.h>

#include "core/pool.h"
#include "exec/hop.h"
#include "scan/scan_impl.h"
#include "lanes/lanes.h"
#include "scan/loop_lanes.h"
#include "scan/loop_rt.h"
#include "scan/scan_replay.h"

typedef struct scan_rt scan_rt;

/* An executor as a node's kernels drive it: the consts and their
 * cotangents are the loop core's for both (rmi_loop_bind and
 * rmi_loop_finish: the cotangents summed in ct_k_acc[0] from -0.0, every
 * step adding, ct = ct + c, and -0.0 + c == c); bind (NULL: none) once per
 * node execution after the core's (r->ks, r->ct_ks set), run the ops. */
typedef struct {
    void (*bind)(scan_rt *r);
    void (*run)(void *r, const scan_xop *ops, int64_t n);
    /* lanes with blocks only: the whole schedule (both phases) block by
     * block, on the thread pool when the lanes allow (lanes/lanes.h) */
    void (*run_blocks)(scan_rt *r);
    /* a carry (or its cotangent) from the caller's tensors into the
     * executor's buffer dst, and back (compiled lanes may pack it:
     * lanes/lanes.h) */
    void (*carry_in)(scan_rt *r, char *dst, const void *const *src);
    void (*carry_out)(scan_rt *r, void *const *dst, const char *src);
} scan_rt_exec;

struct scan_rt {
    loop_core c; /* first: the interpreted executor's (loop_rt.h) */
    const remat_scan_data *d;
    const remat_compile_options *opts; /* the root program's (hop.h counters) */
    const scan_rt_exec *exec;
    scan_plan plan;
    remat_program *p_primal;
    /* interpreted with unroll > 1: `unroll` bodies chained as one
     * sub-program (carries, x_t step-major, consts -> carries, y_t
     * step-major), its argument arrays and a y_t sink of unroll steps;
     * NULL: one body at a time */
    remat_program *p_unrolled;
    int unroll;
    const void **u_in;
    void **u_out;
    char *u_dummy_y;
    size_t *x_step, *y_step; /* per x / y */
    const void **carry_at; /* per carry: scratch for pointers into the store */
    int nx, ny;
    bool reverse;
    int64_t length;

    /* per node execution: the node's inputs and outputs */
    const void *const *ks; /* the consts, and their cotangents (backward) */
    void *const *ct_ks;
    const void *const *xs, *const *ct_ys;
    void *const *ys, *const *ct_xs; /* ys NULL: y_t not wanted (a recomputation) */

    char *dummy_y; /* backend memory: y_t nobody reads */
    /* res_x lists (residual, x index) pairs the backward body reads from xs
     * at the step */
    int *res_x, n_res_x;

    /* compiled lanes (lanes/lanes.h): the kernels, the view of all lanes
     * (loop_lanes.h), and, when lane ranges may run, n_ranges views for
     * them: a cache block, or a share of a run split over threads, each
     * with its own table so that ranges can run on several threads at once
     * (a block keeps its snapshots and tapes in its worker's store) */
    scan_lanes lanes;
    loop_lanes_view lb, *ranges; /* ranges: a cache line or more apart (rmi_scan_rt_range) */
    int64_t n_ranges;
    size_t range_bytes;
    int64_t split_lanes; /* lanes per unit of a run split over threads (0: never split) */
    /* lane blocks: one worker's store (0: blocks use the node's store) and
     * how many fit in the node's store */
    size_t worker_bytes;
    int64_t max_workers;
    /* whether splitting a run over lane ranges, or the blocks over
     * workers, pays on this machine now (core/pool.h) */
    remat_pool_site split_site, block_site;

    /* tiers (scan_tier.h): interpreted while waiting, compiled once the
     * interpreted work of the runs of every node with the same body (its
     * account, tier_pool; tier_run_ns a run) has reached the compile's cost;
     * tier_spent_ns: the node's own account when the process's table is full */
    bool tier_wait;
    double tier_run_ns, tier_cost_ns, tier_spent_ns;
    struct scan_tier_pool *tier_pool;
};

/* The step a loop index k evaluates (a reverse scan runs t = n-1 .. 0). */
static inline int64_t rmi_scan_rt_step(const scan_rt *r, int64_t k) { return r->reverse ? r->length - 1 - k : k; }

/* the table of lane range j (each starts a cache line: ranges on different
 * threads rewrite theirs at every kernel call) */
static inline loop_lanes_view *rmi_scan_rt_range(const scan_rt *r, int64_t j)
{
    return (loop_lanes_view *)((char *)r->ranges + (size_t)j * r->range_bytes);
}

static inline char *rmi_scan_rt_slot(const scan_rt *r, int64_t slot) { return rmi_loop_slot(&r->c, slot); }

static inline char *rmi_scan_rt_tape(const scan_rt *r, int64_t j) { return rmi_loop_tape(&r->c, j); }

/* One phase's ops for executor state x: the plan's, or the schedule replayed
 * again (a plan too long to keep); REMAT_ERR_NOMEM, nothing run, when the
 * replay cannot allocate the schedule's state. */
static inline remat_status rmi_scan_rt_run_phase(const scan_rt *r, int phase,
                                                 void (*run)(void *x, const scan_xop *ops, int64_t n), void *x)
{
    if (!r->plan.kept)
        return rmi_scan_plan_stream(r->d, phase, run, x);
    run(x, r->plan.ops[phase], r->plan.n_ops[phase]);
    return REMAT_OK;
}

/* A phase that could not run is reported by remat_run (hop.h, run_status). */
static inline void rmi_scan_rt_fail(scan_rt *r, remat_status st) { rmi_loop_fail(&r->c, st, NULL); }

/* scan_runtime_lanes.c: how r's compiled lanes (r->lanes, r->plan set) are
 * cut on backend be: lanes per cache block (0: not blocked; only when
 * `blocks` allows) and per unit of a run split over threads (0: never
 * split). Both 0 unless the backend cuts lane runs for the host
 * (remat_backend_iface.host_lane_cuts), whatever REMAT_SCAN_BLOCK says. */
typedef struct {
    int64_t block;
    int64_t split_lanes;
} scan_lane_cuts;
scan_lane_cuts rmi_scan_rt_lane_cuts(const remat_backend *be, const scan_rt *r, const remat_scan_data *d,
                                     bool blocks);

/* scan_runtime_lanes.c: compiled loops for the body when it has them,
 * lane-blocked when `blocks` allows and the lanes are independent; false:
 * interpret it (no loops, or out of memory for them: the same bits). */
bool rmi_scan_rt_use_lanes(scan_rt *r, const remat_scan_data *d, remat_hop_lowering *L, unsigned want, bool blocks);

/* scan_runtime.c: the carries between the caller's tensors and a buffer
 * of them at carry_off, as they are (byte copies through the backend) */
void rmi_scan_rt_copy_carry_in(scan_rt *r, char *dst, const void *const *src);
void rmi_scan_rt_copy_carry_out(scan_rt *r, void *const *dst, const char *src);

/* the executors, and the scan's loop kind of the interpreted one (loop_rt.h) */
extern const loop_kind rmi_scan_loop_kind;
extern const scan_rt_exec rmi_scan_exec_interp;
extern const scan_rt_exec rmi_scan_exec_lanes;
extern const loop_lanes_kind rmi_scan_lanes_kind; /* a step's x_t and y_t; every step taped */

#endif

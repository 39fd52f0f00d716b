/*
 * while_runtime.c — a while node's instruction kernels and its lowering.
 *
 *   PRIMAL  iterate while cond: the body, the select, nothing kept
 *   FWD     the schedule's forward phase. Online learns the length as it
 *           goes: before each of the schedule's runs the replay asks, and
 *           the next iteration is evaluated ahead (into `next`) with the
 *           cond on its result, so the length is revealed while the carry
 *           is n-1 as online needs; the schedule's own advance then takes
 *           that carry. Other kinds first count the iterations (a plain
 *           pass, whose evaluations count), then replay with the length.
 *           A two-tier schedule is one of those: its slow snapshots go to
 *           a file made for the run once the length is counted, reserved
 *           in full for the slots the schedule writes at that length
 *           (loop_slow.c; host memory on a device backend), its handle
 *           and extent in the store's header.
 *   BWD     its reverse phase, the forward's bookkeeping replayed with the
 *           length from the store (online's forward actions do not depend
 *           on when the length was revealed: remat/schedule.h)
 *
 * Running past max_steps stops the node: remat_run returns REMAT_ERR_VALUE
 * naming the loop (exec/hop.h, run_status and run_error).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/assert.h"
#include "core/error.h"
#include "scan/loop_rt.h"
#include "scan/loop_slow.h"
#include "scan/while_rt.h"

static void too_many(while_rt *r)
{
    r->status = REMAT_ERR_VALUE;
    snprintf(r->message, sizeof r->message, "%s ran past max_steps = %lld iterations (cond still true)",
             r->d->label, (long long)r->d->max_steps);
}

static void write_n_iter(while_rt *r, void *dst)
{
    const double n = (double)r->n;
    rmi_while_rt_from_host(r, dst, &n, sizeof n);
}

/* Iterates from cur while cond holds: the iteration count, or -1 past
 * max_steps (recorded). */
static int64_t iterate(while_rt *r)
{
    int64_t k = 0;
    for (; rmi_while_rt_cond(r, r->c.cur); k++) {
        if (k == r->d->max_steps)
            return -1;
        rmi_while_rt_step(r, k);
    }
    return k;
}

/* the consts bound, for the executor the node runs with now (tiers) */
static void bind(while_rt *r, const void *const *ks, bool backward)
{
    rmi_while_lanes_tier_run(r);
    rmi_loop_bind(&r->c, ks, backward);
    if (r->wl.on)
        rmi_while_lanes_bind(r);
}

static int64_t run_to_end(while_rt *r)
{
    const int64_t n = r->wl.on ? rmi_while_lanes_iterate(r) : iterate(r);
    if (n < 0)
        too_many(r);
    return n;
}

static void k_while_primal(const remat_exec_ctx *cx, const remat_instr *I)
{
    while_rt *r = (while_rt *)I->aux;
    r->c.cx = cx;
    rmi_loop_copy_in(&r->c, r->c.cur, I->in, r->c.nc);
    bind(r, I->in + r->c.nc, false);
    r->pending = -1;
    r->known = 0;
    r->n = run_to_end(r);
    rmi_while_lanes_tier_done(r);
    if (r->n < 0)
        return;
    rmi_loop_copy_out(&r->c, r->c.outs, r->c.cur, r->c.nc);
    write_n_iter(r, r->c.outs[r->c.nc]);
}

/* the replay's question (scan_replay.h): at carry c, is c+1 the length? */
static int64_t reveal(void *x, int64_t c)
{
    while_rt *r = x;
    if (c == 0 && r->known == 0 && r->pending < 0 && !rmi_while_rt_cond(r, r->c.cur))
        return 0;
    if (r->pending == c)
        return -1; /* asked again at the same carry: evaluated already */
    bool keep;
    if (r->wl.on) {
        keep = rmi_while_lanes_ahead(r, c);
    } else {
        rmi_while_rt_eval(r, c);
        r->pending = c;
        keep = rmi_while_rt_cond(r, r->c.next);
    }
    if (!keep)
        return c + 1;
    if (c + 1 == r->d->max_steps) {
        too_many(r);
        return SCAN_REPLAY_STOP;
    }
    return -1;
}

static scan_replay_dims dims(const while_rt *r, int64_t n)
{
    /* two-tier: slots S .. S+D-1 are the slow tier's, past the store's */
    const int64_t slots = r->d->slow_cap > 0 ? r->d->sched.snapshots + r->d->slow_cap : r->d->slot_cap;
    return (scan_replay_dims){.sched = r->d->sched, .length = n, .max_slots = slots, .peak_tapes = r->d->tape_cap};
}

/* ---- the slow tier (two-tier schedules): header words 2 and 3 ---- */

#define WHILE_NO_FILE (-2) /* the descriptor when the run's length writes no slow slot */

/* the tier's failure as the run's status; label: prefix the message with
 * the loop's (a write or read names only the kind, the file's opening the
 * loop already) */
static void slow_fail(while_rt *r, bool label)
{
    if (r->status == REMAT_OK) {
        r->status = REMAT_ERR_IO;
        snprintf(r->message, sizeof r->message, "%s%s%s", label ? r->d->label : "", label ? ": " : "",
                 remat_last_error());
    }
    r->c.slow_failed = true;
}

static void slow_header(while_rt *r, int64_t fd, int64_t hi)
{
    const int64_t w[2] = {fd, hi};
    rmi_while_rt_from_host(r, r->c.store + 16, w, sizeof w);
}

/* the slow slots the schedule writes at length n (the file's extent),
 * kept for the last length */
static remat_status slow_extent(while_rt *r, int64_t n, int64_t *ext)
{
    if (r->slow_len == n) {
        *ext = r->slow_extent;
        return REMAT_OK;
    }
    remat_status st = rmi_loop_slow_extent(&r->d->sched, n, ext);
    if (st == REMAT_OK)
        r->slow_len = n, r->slow_extent = *ext;
    return st;
}

/* a new file for this run's slow snapshots at length r->n, reserved in
 * full before the first step; false (status set) when it cannot be */
static bool slow_open(while_rt *r)
{
    int64_t ext = 0;
    remat_status st = slow_extent(r, r->n, &ext);
    r->c.slow_hi = 0;
    r->c.slow_failed = false;
    if (st != REMAT_OK) { /* the schedule at this length (its table too large, out of memory) */
        r->status = st;
        snprintf(r->message, sizeof r->message, "%s, %lld iterations: %s", r->d->label, (long long)r->n,
                 remat_last_error());
        r->c.slow_fd = -1;
        slow_header(r, -1, 0);
        return false;
    }
    if (ext == 0) { /* this length needs no slow slot: no file */
        r->c.slow_fd = WHILE_NO_FILE;
        slow_header(r, WHILE_NO_FILE, 0);
        return true;
    }
    rmi_loop_slow_begin(&r->c, (size_t)ext * r->d->carry_bytes, r->opts->tier_dir, r->opts->tier_max_bytes,
                        r->d->label);
    slow_header(r, r->c.slow_fd, 0);
    if (r->c.slow_fd < 0) {
        slow_fail(r, false);
        return false;
    }
    return true;
}

/* the run's file goes with its descriptor (the backward's, or the
 * forward's when it stopped) */
static void slow_close(while_rt *r)
{
    rmi_loop_slow_end(&r->c);
    slow_header(r, -1, r->c.slow_hi);
}

static void note_peak(while_rt *r, const int64_t peak[2])
{
    r->c.peak_bytes = rmi_loop_rt_store_bytes(&r->c, peak[0], peak[1]);
}

/* the executor the node runs with now, recording into r->kept */
static void run_ops(void *x, const scan_xop *ops, int64_t n)
{
    while_rt *r = x;
    while_ops_cache *K = &r->kept;
    if (K->recording && !K->overflow) {
        if (K->n + n <= K->cap) {
            memcpy(K->ops + K->n, ops, sizeof *ops * (size_t)n);
            K->n += n;
        } else {
            K->overflow = true;
        }
    }
    if (r->wl.on)
        rmi_while_lanes_run(r, ops, n);
    else
        rmi_loop_run(r, ops, n);
}

/* One phase at a known length r->n: the kept ops when they are for it,
 * else the schedule replayed (and kept when they fit). */
static remat_status run_phase(while_rt *r, int phase, int64_t peak[2])
{
    while_ops_cache *K = &r->kept;
    if (K->len >= 0 && K->len == r->n) {
        run_ops(r, K->ops, K->n);
        peak[0] = K->peak[0], peak[1] = K->peak[1];
        return REMAT_OK;
    }
    scan_replay_dims dm = dims(r, r->n);
    *K = (while_ops_cache){.ops = K->ops, .cap = K->cap, .len = -1, .recording = K->cap > 0};
    remat_status st = rmi_scan_replay_stream(&dm, phase, NULL, run_ops, r, NULL, peak);
    if (st == REMAT_OK && K->recording && !K->overflow) {
        K->len = r->n;
        K->peak[0] = peak[0], K->peak[1] = peak[1];
    }
    K->recording = false;
    return st;
}

static void k_while_fwd(const remat_exec_ctx *cx, const remat_instr *I)
{
    while_rt *r = (while_rt *)I->aux;
    r->c.cx = cx;
    const remat_while_data *d = r->d;
    r->c.store = r->c.outs[r->c.nc + 1];
    int64_t head[2] = {-1, 0}; /* until the forward is done: the backward must not run */
    rmi_while_rt_from_host(r, r->c.store, head, sizeof head);
    if (r->c.slow_on)
        slow_header(r, -1, 0);
    rmi_loop_copy_in(&r->c, r->c.cur, I->in, r->c.nc);
    bind(r, I->in + r->c.nc, false);
    r->pending = -1;
    r->known = 0;
    r->n = -1;
    if (d->sched.kind != REMAT_SCHED_ONLINE) { /* the length first */
        if ((r->n = run_to_end(r)) < 0) {
            rmi_while_lanes_tier_done(r);
            return;
        }
        rmi_loop_copy_in(&r->c, r->c.cur, I->in, r->c.nc);
        if (r->c.slow_on && !slow_open(r)) {
            rmi_while_lanes_tier_done(r);
            return;
        }
    }
    int64_t peak[2] = {0, 0};
    remat_status st;
    if (r->n >= 0) {
        st = run_phase(r, SCAN_PHASE_FORWARD, peak);
    } else { /* online: the length revealed as the loop runs */
        scan_replay_dims dm = dims(r, r->n);
        st = rmi_scan_replay_stream(&dm, SCAN_PHASE_FORWARD, reveal, run_ops, r, &r->n, peak);
    }
    rmi_while_lanes_tier_done(r);
    if (r->c.slow_on && (st != REMAT_OK || r->c.slow_failed)) { /* no backward: the file goes now */
        if (r->c.slow_failed)
            slow_fail(r, true);
        slow_close(r);
    }
    if (st != REMAT_OK) {
        if (r->status == REMAT_OK)
            r->status = st;
        return;
    }
    if (r->c.slow_failed)
        return;
    if (r->c.slow_on)
        slow_header(r, r->c.slow_fd, r->c.slow_hi);
    note_peak(r, peak);
    head[0] = r->n;
    rmi_while_rt_from_host(r, r->c.store, head, sizeof head);
    if (r->n > 0)
        rmi_while_rt_from_host(r, r->c.store + d->bits_off, r->bits, (size_t)(r->n + 7) / 8);
    rmi_loop_copy_out(&r->c, r->c.outs, r->c.cur, r->c.nc);
    write_n_iter(r, r->c.outs[r->c.nc]);
}

static void k_while_bwd(const remat_exec_ctx *cx, const remat_instr *I)
{
    while_rt *r = (while_rt *)I->aux;
    r->c.cx = cx;
    const remat_while_data *d = r->d;
    const int nd = r->nd, nk = r->c.nk;
    r->c.store = (char *)I->in[0];
    int64_t head[2];
    rmi_while_rt_to_host(r, head, r->c.store, sizeof head);
    if (r->c.slow_on) { /* the forward node's file */
        int64_t w[2];
        rmi_while_rt_to_host(r, w, r->c.store + 16, sizeof w);
        r->c.slow_fd = w[0], r->c.slow_hi = w[1], r->c.slow_failed = false;
        if (head[0] >= 0 && r->c.slow_fd == -1) { /* run twice from one forward: the file is gone */
            r->status = REMAT_ERR_IO;
            snprintf(r->message, sizeof r->message, "%s: the slow snapshot tier's file is closed", d->label);
            return;
        }
    }
    if (head[0] < 0) { /* the forward stopped (its status is reported); nothing to reverse */
        if (r->status == REMAT_OK)
            r->status = REMAT_ERR_VALUE;
        return;
    }
    r->n = r->known = head[0];
    if (r->n > 0)
        rmi_while_rt_to_host(r, r->bits, r->c.store + d->bits_off, (size_t)(r->n + 7) / 8);
    r->pending = -1;
    /* the control carries' cotangents are zero (stop_gradient); the compiled
     * loops keep every carry's in place */
    r->c.be->iface.mem_fill(r->c.cx, r->c.ct_cur, REMAT_F64, 0.0, d->carry_bytes / sizeof(double));
    rmi_loop_copy_in(&r->c, r->c.ct_cur, I->in + 1 + nk, nd);
    bind(r, I->in + 1, true);
    int64_t peak[2] = {0, 0};
    remat_status st = run_phase(r, SCAN_PHASE_REVERSE, peak);
    rmi_while_lanes_tier_done(r);
    if (r->c.slow_on) {
        if (r->c.slow_failed)
            slow_fail(r, true);
        slow_close(r);
        if (r->c.slow_failed)
            return;
    }
    if (st != REMAT_OK) {
        r->status = st;
        return;
    }
    note_peak(r, peak);
    rmi_loop_finish(&r->c, r->c.outs + nd);
    rmi_loop_copy_out(&r->c, r->c.outs, r->c.ct_cur, nd);
}

/* ---- stats (exec/hop.h) ---- */

static void stats_begin(const remat_exec_ctx *cx, void *self)
{
    (void)cx;
    while_rt *r = self;
    r->c.evals = 0;
    r->c.peak_bytes = 0;
    r->status = REMAT_OK;
    r->message[0] = 0;
}

static remat_status stats_status(const void *self) { return ((const while_rt *)self)->status; }

/* the loop core's counts, and the slow tier's extent written (the
 * backward node's, which has the forward's) */
static void stats_run(const void *self, remat_stats *st)
{
    const while_rt *r = self;
    rmi_loop_stats_run(&r->c, st);
    if (r->c.slow_on && r->d->kind == WHILE_BWD)
        st->tier_bytes += (size_t)r->c.slow_hi * r->d->carry_bytes;
}

static const char *stats_error(const void *self)
{
    const while_rt *r = self;
    return r->message[0] ? r->message : NULL;
}

/* The length is not known before a run: the plan shows the store's
 * capacity within max_steps (and the slow tier's: min(D, max_steps)
 * slots), and no evaluations. */
static void stats_plan(const void *self, remat_memory_plan *plan)
{
    const while_rt *r = self;
    const remat_while_data *d = r->d;
    if (r->wl.on)
        plan->compiled_loops++;
    else if (r->wl.wait)
        plan->deferred_loops++;
    if (d->kind == WHILE_PRIMAL)
        return;
    rmi_loop_rt_plan_store(plan, &r->c, d->slot_cap, d->tape_cap);
    if (d->kind == WHILE_FWD)
        plan->tier_bytes += (size_t)d->slow_cap * d->carry_bytes;
}

void rmi_while_rt_kernels(const remat_while_data *d, remat_kernel_fn *fn, remat_hop_stats *hook)
{
    *fn = d->kind == WHILE_PRIMAL ? k_while_primal : d->kind == WHILE_FWD ? k_while_fwd : k_while_bwd;
    *hook = (remat_hop_stats){.begin_run = stats_begin, .report_run = stats_run, .report_plan = stats_plan,
                              .run_status = stats_status, .run_error = stats_error};
}

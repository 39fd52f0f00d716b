/*
 * scan_replay.c — replays a checkpoint schedule into executor ops
 * (scan_replay.h): the bookkeeping of slots and kept tapes, the run shapes
 * that become one op, and the plan a node keeps (its ops: scan_xops.c).
 *
 * Every schedule reverses steps n-1 .. 0 in order, each exactly once, and
 * the ops keep that order, so the closed-over cotangents accumulate in the
 * same order under every schedule and executor: bitwise equal gradients.
 */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/assert.h"
#include "core/error.h"
#include "scan/scan_replay.h"

enum { REPLAY_CHUNK = 1024 }; /* ops handed to the sink at a time */

typedef struct replay replay;
struct replay {
    scan_replay_dims d; /* length -1: unknown until reveal() gives it */
    int64_t (*reveal)(void *x, int64_t c);
    void *rx;
    int64_t c;      /* the current carry's index (-1: undefined after a recompute) */
    int64_t expect; /* the next step to reverse: n-1 down to 0 */
    int64_t live_slots, tapes, peak_slots, peak_tapes;
    int64_t *slot_step; /* [max_slots] the carry index each slot holds */
    int64_t *span_step, *span_count, n_spans; /* kept tapes as spans of steps, LIFO */
    int phase;
    bool merge; /* merge each op into the one before it when they form one */
    /* the sink: ops of the current phase, REPLAY_CHUNK at most; full() makes room */
    scan_xop *buf;
    int64_t n, cap;
    void (*full)(replay *R);
    void *ctx;
};

static void emit(replay *R, scan_xop op)
{
    if (R->n == R->cap)
        R->full(R);
    if (R->merge)
        rmi_scan_ops_push(R->buf, &R->n, op);
    else
        R->buf[R->n++] = op;
}

/* ---- bookkeeping ---- */

static void note_peaks(replay *R, int64_t tapes)
{
    if (R->live_slots > R->peak_slots)
        R->peak_slots = R->live_slots;
    if (tapes > R->peak_tapes)
        R->peak_tapes = tapes;
}

static void tapes_push(replay *R, int64_t step, int64_t n)
{
    REMAT_ASSERT(R->tapes + n <= R->d.peak_tapes);
    const int64_t t = R->n_spans - 1;
    if (t >= 0 && R->span_step[t] + R->span_count[t] == step) {
        R->span_count[t] += n;
    } else {
        R->span_step[R->n_spans] = step;
        R->span_count[R->n_spans++] = n;
    }
    R->tapes += n;
    note_peaks(R, R->tapes);
}

/* how many kept tapes end at `step`, consecutive (0: step has no kept tape) */
static int64_t kept_ending_at(const replay *R, int64_t step)
{
    const int64_t t = R->n_spans - 1;
    return t >= 0 && R->span_step[t] + R->span_count[t] - 1 == step ? R->span_count[t] : 0;
}

static void tapes_pop(replay *R, int64_t n)
{
    const int64_t t = R->n_spans - 1;
    REMAT_ASSERT(t >= 0 && n <= R->span_count[t]);
    if ((R->span_count[t] -= n) == 0)
        R->n_spans--;
    R->tapes -= n;
}

static void take_shot(replay *R, int64_t slot, int64_t step)
{
    REMAT_ASSERT(slot >= 0 && slot < R->d.max_slots);
    R->slot_step[slot] = step;
    R->live_slots += !rmi_scan_slot_slow(&R->d.sched, slot); /* RAM slots: the store's */
    note_peaks(R, R->tapes);
}

/* ---- actions and runs ---- */

static void unit(replay *R, const remat_action *a)
{
    switch (a->kind) {
    case REMAT_ACT_ADVANCE:
        REMAT_ASSERT(a->step >= R->c && (R->d.length < 0 || a->step <= R->d.length));
        if (a->step > R->c)
            emit(R, (scan_xop){.kind = XOP_ADVANCE, .step = R->c, .count = a->step - R->c});
        R->c = a->step;
        break;
    case REMAT_ACT_TAKESHOT:
        take_shot(R, a->slot, R->c);
        emit(R, (scan_xop){.kind = XOP_SHOT, .slot = a->slot});
        break;
    case REMAT_ACT_FREE: R->live_slots -= !rmi_scan_slot_slow(&R->d.sched, a->slot); break;
    case REMAT_ACT_RESTORE:
        REMAT_ASSERT(a->slot >= 0 && a->slot < R->d.max_slots);
        emit(R, (scan_xop){.kind = XOP_RESTORE, .slot = a->slot});
        R->c = R->slot_step[a->slot];
        break;
    case REMAT_ACT_TAPE:
        REMAT_ASSERT(a->step == R->c);
        emit(R, (scan_xop){.kind = XOP_TAPE, .step = R->c, .count = 1, .tape = R->tapes});
        tapes_push(R, R->c++, 1);
        break;
    case REMAT_ACT_REVERSE:
        REMAT_ASSERT(R->phase == SCAN_PHASE_REVERSE && a->step == R->expect);
        if (kept_ending_at(R, a->step) > 0) {
            emit(R, (scan_xop){.kind = XOP_REVERSE, .step = a->step, .count = 1, .tape = R->tapes - 1});
            tapes_pop(R, 1);
        } else { /* recorded and reversed at once: its tape counts while it lives */
            REMAT_ASSERT(R->c == a->step);
            emit(R, (scan_xop){.kind = XOP_RECOMPUTE, .step = a->step, .count = 1, .slot = -1});
            note_peaks(R, R->tapes + 1);
            R->c = -1;
        }
        R->expect--;
        break;
    default: REMAT_UNREACHABLE("scan: schedule action out of place");
    }
}

static bool is_pattern(const remat_action_run *run, int n, remat_action_kind a, remat_action_kind b,
                       remat_action_kind c)
{
    const remat_action *p = run->pat;
    return run->n == n && run->count > 1 && p[0].kind == a && (n < 2 || p[1].kind == b) && (n < 3 || p[2].kind == c);
}

/* The run shapes that are one op without looking at their actions one by
 * one (store-all's n TAPEs, per-step's snapshots); anything else goes
 * action by action, and merging gives the same ops. */
static void emit_run(replay *R, const remat_action_run *run)
{
    const remat_action *p = run->pat;
    const int64_t n = run->count, c = R->c;
    if (is_pattern(run, 1, REMAT_ACT_ADVANCE, 0, 0) && run->dstep == 1 && p[0].step == c + 1) {
        emit(R, (scan_xop){.kind = XOP_ADVANCE, .step = c, .count = n});
        R->c += n;
        return;
    }
    if (is_pattern(run, 1, REMAT_ACT_TAPE, 0, 0) && run->dstep == 1 && p[0].step == c) {
        emit(R, (scan_xop){.kind = XOP_TAPE, .step = c, .count = n, .tape = R->tapes});
        tapes_push(R, c, n);
        R->c += n;
        return;
    }
    if (is_pattern(run, 1, REMAT_ACT_REVERSE, 0, 0) && run->dstep == -1 && p[0].step == R->expect &&
        kept_ending_at(R, p[0].step) >= n) {
        emit(R, (scan_xop){.kind = XOP_REVERSE, .step = p[0].step, .count = n, .tape = R->tapes - 1});
        tapes_pop(R, n);
        R->expect -= n;
        return;
    }
    if (is_pattern(run, 2, REMAT_ACT_TAKESHOT, REMAT_ACT_ADVANCE, 0) && run->dstep == 1 && p[0].step == c &&
        p[1].step == c + 1) {
        for (int64_t q = 0; q < n; q++)
            take_shot(R, p[0].slot + q * run->dslot, c + q);
        emit(R, (scan_xop){.kind = XOP_SHOT_ADVANCE, .step = c, .count = n, .slot = p[0].slot, .dslot = run->dslot});
        R->c += n;
        return;
    }
    for (int64_t q = 0; q < n; q++)
        for (int i = 0; i < run->n; i++) {
            const remat_action a = remat_action_run_at(run, q, i);
            unit(R, &a);
        }
}

/* ---- the replay loop ---- */

static scan_replay_dims dims_of(const remat_scan_data *d)
{
    return (scan_replay_dims){.sched = d->sched, .length = d->length, .max_slots = d->max_slots,
                              .peak_tapes = d->peak_tapes};
}

static remat_status replay_open(replay *R, const scan_replay_dims *d, remat_schedule **sch)
{
    *R = (replay){.d = *d, .expect = d->length - 1};
    R->slot_step = rmi_malloc(sizeof *R->slot_step * (size_t)(d->max_slots + 1));
    R->span_step = rmi_malloc(sizeof *R->span_step * (size_t)(d->peak_tapes + 1));
    R->span_count = rmi_malloc(sizeof *R->span_count * (size_t)(d->peak_tapes + 1));
    /* the sink's chunk, 40 KB: on the heap, not on a stack that may be 32 KB in all */
    R->buf = rmi_malloc(sizeof *R->buf * REPLAY_CHUNK), R->cap = REPLAY_CHUNK;
    *sch = NULL;
    if (!R->slot_step || !R->span_step || !R->span_count || !R->buf)
        return rmi_error(REMAT_ERR_NOMEM, "scan: out of memory for the schedule's bookkeeping");
    remat_status st = remat_schedule_new(&d->sched, d->length, sch);
    if (st == REMAT_OK && d->length >= 0) /* known: revealing it at once is allowed (schedule.h) */
        remat_schedule_set_length(*sch, d->length);
    return st;
}

/* A length not known yet: flush the ops so far (the executor is then at
 * carry R->c) and ask. False: the executor stopped the replay. */
static bool ask_length(replay *R)
{
    R->full(R);
    const int64_t n = R->reveal(R->rx, R->c);
    if (n == SCAN_REPLAY_STOP)
        return false;
    if (n >= 0) {
        REMAT_ASSERT(n <= R->c + 1);
        R->d.length = n;
        R->expect = n - 1;
    }
    return true;
}

static void replay_close(replay *R, remat_schedule *sch)
{
    remat_schedule_free(sch);
    rmi_free(R->slot_step);
    rmi_free(R->span_step);
    rmi_free(R->span_count);
    rmi_free(R->buf);
}

/* Replays up to the end of `last` phase; end_phase(R) is called at the end
 * of each phase, with that phase's ops (the rest) in the sink. False: the
 * executor stopped it (reveal). */
static bool replay_run(replay *R, remat_schedule *sch, int last, void (*end_phase)(replay *R))
{
    remat_action_run run;
    for (;;) {
        if (R->d.length < 0) {
            if (!ask_length(R))
                return false;
            if (R->d.length >= 0)
                remat_schedule_set_length(sch, R->d.length);
        }
        remat_schedule_next_run(sch, &run);
        const remat_action_kind k = run.pat[0].kind;
        if (k == REMAT_ACT_END_FORWARD || k == REMAT_ACT_DONE) {
            REMAT_ASSERT(k == REMAT_ACT_DONE ? R->expect == -1 && R->phase == SCAN_PHASE_REVERSE
                                             : R->c == R->d.length && R->phase == SCAN_PHASE_FORWARD);
            end_phase(R);
            if (R->phase++ == last)
                return true;
            continue;
        }
        emit_run(R, &run);
    }
}

/* ---- the plan kept at lowering ---- */

typedef struct {
    scan_plan *plan;
    scan_xop *raw[2]; /* unmerged ops per phase, malloc'd */
    int64_t n_raw[2];
    int64_t max_ops;
} plan_ctx;

static void plan_full(replay *R)
{
    plan_ctx *P = R->ctx;
    scan_evals *ev = &P->plan->cost[R->phase].evals;
    if (R->n > 0 && R->n == R->cap) { /* count what is there, keep it if the plan stays small */
        rmi_scan_ops_count(R->buf, R->n, ev);
        int64_t total = P->n_raw[0] + P->n_raw[1] + R->n;
        scan_xop *q = P->plan->kept && total <= P->max_ops
                          ? rmi_realloc(P->raw[R->phase], sizeof *q * (size_t)(P->n_raw[R->phase] + R->n))
                          : NULL;
        if (q) {
            memcpy(q + P->n_raw[R->phase], R->buf, sizeof *q * (size_t)R->n);
            P->raw[R->phase] = q;
            P->n_raw[R->phase] += R->n;
        } else {
            P->plan->kept = false;
        }
        R->n = 0;
    }
}

static void plan_end_phase(replay *R)
{
    plan_ctx *P = R->ctx;
    R->cap = R->n; /* flush the rest through plan_full */
    if (R->n > 0)
        plan_full(R);
    R->cap = REPLAY_CHUNK;
    scan_phase_cost *c = &P->plan->cost[R->phase];
    c->peak_slots = R->peak_slots;
    c->peak_tapes = R->peak_tapes;
}

remat_status rmi_scan_plan_build(const remat_scan_data *d, scan_plan *plan, int64_t max_ops,
                                 void *(*alloc)(void *ctx, size_t bytes),
                                 void *ctx)
{
    *plan = (scan_plan){.kept = true};
    replay R;
    remat_schedule *sch;
    plan_ctx P = {.plan = plan, .max_ops = max_ops == 0 ? SCAN_PLAN_MAX_OPS : max_ops < 0 ? 0 : max_ops};
    const scan_replay_dims dm = dims_of(d);
    remat_status st = replay_open(&R, &dm, &sch);
    if (st == REMAT_OK) {
        R.full = plan_full, R.ctx = &P;
        replay_run(&R, sch, SCAN_PHASE_REVERSE, plan_end_phase);
        if (plan->kept)
            st = rmi_scan_ops_drop_dead_shots(P.raw, P.n_raw, d->max_slots);
    }
    /* the ops merged, with the schedule's slots or renamed (scan_slots.c),
     * whichever gives fewer */
    scan_xop *renamed[2] = {NULL, NULL};
    int64_t n_renamed[2] = {0, 0}, n_merged[2] = {0, 0};
    /* a two-tier schedule's slot numbers say the tier: kept */
    const bool rename = d->sched.kind != REMAT_SCHED_TWO_TIER;
    if (st == REMAT_OK && plan->kept && rename)
        st = rmi_scan_ops_rename_slots(P.raw, P.n_raw, d->max_slots, renamed, n_renamed);
    for (int ph = 0; ph < 2 && st == REMAT_OK && plan->kept; ph++)
        for (int64_t i = 0; i < P.n_raw[ph]; i++) /* in place: an op merges into one before it */
            if (P.raw[ph][i].kind >= 0)
                rmi_scan_ops_push(P.raw[ph], &n_merged[ph], P.raw[ph][i]);
    const bool use_renamed = rename && n_renamed[0] + n_renamed[1] < n_merged[0] + n_merged[1];
    for (int ph = 0; ph < 2 && st == REMAT_OK && plan->kept; ph++) {
        const int64_t n = use_renamed ? n_renamed[ph] : n_merged[ph];
        scan_xop *ops = alloc(ctx, sizeof *ops * (size_t)(n + 1));
        if (!ops) {
            st = rmi_error(REMAT_ERR_NOMEM, "scan: out of memory for the schedule's plan");
            break;
        }
        if (n > 0)
            memcpy(ops, use_renamed ? renamed[ph] : P.raw[ph], sizeof *ops * (size_t)n);
        plan->ops[ph] = ops;
        plan->n_ops[ph] = n;
    }
    rmi_free(renamed[0]);
    rmi_free(renamed[1]);
    rmi_free(P.raw[0]);
    rmi_free(P.raw[1]);
    replay_close(&R, sch);
    return st;
}

/* ---- streaming ---- */

typedef struct {
    int phase;
    void (*run)(void *x, const scan_xop *ops, int64_t n);
    void *x;
} stream_ctx;

static void stream_full(replay *R)
{
    const stream_ctx *S = R->ctx;
    if (R->phase == S->phase && R->n > 0)
        S->run(S->x, R->buf, R->n);
    R->n = 0;
}

remat_status rmi_scan_replay_stream(const scan_replay_dims *d, int phase, int64_t (*reveal)(void *x, int64_t c),
                                    void (*run)(void *x, const scan_xop *ops, int64_t n), void *x,
                                    int64_t *length, int64_t peak[2])
{
    replay R;
    remat_schedule *sch;
    stream_ctx S = {.phase = phase, .run = run, .x = x};
    REMAT_ASSERT(d->length >= 0 || (reveal && phase == SCAN_PHASE_FORWARD));
    remat_status st = replay_open(&R, d, &sch);
    if (st == REMAT_OK) {
        R.full = stream_full, R.ctx = &S, R.merge = true;
        R.reveal = reveal, R.rx = x;
        if (!replay_run(&R, sch, phase, stream_full))
            st = SCAN_REPLAY_STOPPED;
        if (length)
            *length = R.d.length;
        if (peak)
            peak[0] = R.peak_slots, peak[1] = R.peak_tapes;
    }
    replay_close(&R, sch);
    return st;
}

remat_status rmi_scan_plan_stream(const remat_scan_data *d, int phase,
                                  void (*run)(void *x, const scan_xop *ops, int64_t n), void *x)
{
    /* a plan was built for this node at lowering, so this fails only for
     * memory */
    const scan_replay_dims dm = dims_of(d);
    return rmi_scan_replay_stream(&dm, phase, NULL, run, x, NULL, NULL);
}

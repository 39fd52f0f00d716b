/*
 * scan_exec_lanes.c — runs a scan node whose body was compiled into native
 * loops (scan_lanes.h): the schedule is consumed in runs
 * (remat_schedule_next_run), and each run the loops know is one call:
 *
 *   [TAPE k] x n                       tape kernel over n steps
 *   [REVERSE k] x n, tapes kept        reverse kernel over n steps
 *   [TAKESHOT s, ADVANCE k+1] x n      advance_shot over n steps (per-step)
 *   [RESTORE s, REVERSE k, FREE s] x n recompute over n steps (per-step)
 *   ADVANCE to, [ADVANCE k+1] x n      advance over the steps
 *   [FREE s, TAKESHOT s, ADVANCE] x n  (online moving a snapshot along)
 *                                      advance, snapshot, advance
 *
 * Anything else is expanded into single actions, each run the same way with
 * a count of 1, so every schedule works and only the speed differs. The
 * carry and its cotangent live in place in r->cur / r->ct_cur; snapshots,
 * tapes and the counters (forward evaluations, peak snapshot bytes, the
 * sub-programs' run counts behind ops_executed) are what the interpreted
 * executor (scan_runtime.c) keeps, so stats and bits are the same.
 */
#include <string.h>

#include "core/assert.h"
#include "scan/scan_rt.h"

/* ---- the buffer table ---- */

static void set(scan_rt *r, int kind, int i, const void *p, int64_t stride)
{
    r->lb_ptr[r->lanes.base[kind] + i] = (char *)p;
    r->lb_stride[r->lanes.base[kind] + i] = stride;
}


/* x_t / y_t (and their cotangents) of step k, moving by `dk` steps per call
 * step (+1 forward, -1 reversing) */
static void set_steps(scan_rt *r, int64_t k, int dk, const void *const *xs, void *const *ys, const void *const *ct_ys,
                      void *const *ct_xs)
{
    const int64_t t = remat_scan_rt_step(r, k), dt = r->reverse ? -dk : dk;
    for (int i = 0; i < r->nx; i++) {
        const int64_t xb = (int64_t)r->x_step[i];
        set(r, LB_X, i, (const char *)xs[i] + t * xb, dt * xb);
        if (ct_xs)
            set(r, LB_CTX, i, (char *)ct_xs[i] + t * xb, dt * xb);
    }
    for (int i = 0; i < r->ny; i++) {
        const int64_t yb = (int64_t)r->y_step[i];
        if (ys)
            set(r, LB_Y, i, (char *)ys[i] + t * yb, dt * yb);
        else /* not wanted: every step writes the same scratch */
            set(r, LB_Y, i, r->dummy_y, 0);
        if (ct_ys)
            set(r, LB_CTY, i, (const char *)ct_ys[i] + t * yb, dt * yb);
    }
}

static void set_shot(scan_rt *r, const char *slot, int64_t stride)
{
    for (int i = 0; i < r->nc; i++)
        set(r, LB_SHOT, i, slot + r->carry_off[i], stride);
}

static void set_tape(scan_rt *r, const char *tp, int64_t stride)
{
    const scan_body_vjp *V = r->d->vjp;
    for (int t = 0; t < r->n_taped; t++)
        set(r, LB_TAPE, t, tp + V->res_off[r->res_taped[t]], stride);
}

static void call(scan_rt *r, remat_lane_fn fn, int64_t count)
{
    REMAT_ASSERT(fn && count >= 0);
    if (count > 0)
        fn(r->lb_ptr, r->lb_stride, count);
}

/* once per node execution */
static void bind(scan_rt *r, const void *const *ks, void *const *ct_ks)
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

/* ---- executing actions ---- */

typedef struct {
    scan_rt *r;
    sched_state s;
    char *store;
    const void *const *xs, *const *ct_ys;
    void *const *ys, *const *ct_xs;
    int64_t expect; /* the next step to reverse: n-1 down to 0, each once */
    int64_t n_spans; /* kept tapes as spans of consecutive steps (r->span_*), LIFO */
} exec;

/* Kept tapes are tracked as spans, not step by step: a store-all forward
 * keeps n tapes in one span, so the bookkeeping is O(runs), not O(steps). */
static void tapes_push(exec *e, int64_t step, int64_t n)
{
    scan_rt *r = e->r;
    REMAT_ASSERT(e->s.tapes + n <= r->d->peak_tapes);
    const int64_t t = e->n_spans - 1;
    if (t >= 0 && r->span_step[t] + r->span_count[t] == step) {
        r->span_count[t] += n;
    } else {
        REMAT_ASSERT(e->n_spans <= r->d->peak_tapes);
        r->span_step[e->n_spans] = step;
        r->span_count[e->n_spans++] = n;
    }
    e->s.tapes += n;
    if (e->s.tapes > e->s.peak_tapes)
        e->s.peak_tapes = e->s.tapes;
}

/* how many kept tapes end at `step`, consecutive (0: step has no kept tape) */
static int64_t kept_ending_at(const exec *e, int64_t step)
{
    const int64_t t = e->n_spans - 1;
    return t >= 0 && e->r->span_step[t] + e->r->span_count[t] - 1 == step ? e->r->span_count[t] : 0;
}

static void tapes_pop(exec *e, int64_t n)
{
    scan_rt *r = e->r;
    const int64_t t = e->n_spans - 1;
    REMAT_ASSERT(t >= 0 && n <= r->span_count[t]);
    if ((r->span_count[t] -= n) == 0)
        e->n_spans--;
    e->s.tapes -= n;
}

static void count_evals(scan_rt *r, remat_program *p, int64_t n)
{
    r->counters->forward_evals += n;
    remat_program_add_runs(p, n);
}

static void advance_to(exec *e, int64_t to)
{
    scan_rt *r = e->r;
    REMAT_ASSERT(to >= e->s.c && to <= r->length);
    set_steps(r, e->s.c, 1, e->xs, e->ys, NULL, NULL);
    call(r, r->lanes.advance, to - e->s.c);
    count_evals(r, r->p_primal, to - e->s.c);
    e->s.c = to;
}

/* n steps from c taped into tapes s.tapes.. (TAPE k, k+1, ...) */
static void tape_run(exec *e, int64_t step, int64_t n)
{
    scan_rt *r = e->r;
    REMAT_ASSERT(step == e->s.c && e->s.tapes + n <= r->d->peak_tapes);
    set_steps(r, step, 1, e->xs, e->ys, NULL, NULL);
    set_tape(r, remat_scan_rt_tape(r, e->store, e->s.tapes), (int64_t)r->d->vjp->tape_bytes);
    call(r, r->lanes.tape, n);
    count_evals(r, r->p_fwd, n);
    tapes_push(e, step, n);
    e->s.c += n;
}

/* steps step, step-1, ... (n of them) reversed from kept tapes */
static void reverse_run(exec *e, int64_t step, int64_t n)
{
    scan_rt *r = e->r;
    REMAT_ASSERT(step == e->expect && n <= kept_ending_at(e, step));
    e->expect -= n;
    set_steps(r, step, -1, e->xs, NULL, e->ct_ys, e->ct_xs);
    set_tape(r, remat_scan_rt_tape(r, e->store, e->s.tapes - 1), -(int64_t)r->d->vjp->tape_bytes);
    call(r, r->lanes.reverse, n);
    remat_program_add_runs(r->p_bwd, n);
    tapes_pop(e, n);
}

/* steps step, step-1, ... (n) each recomputed from a snapshot at `carry`
 * (moving by `stride` bytes per step) and reversed at once */
static void recompute_run(exec *e, int64_t step, int64_t n, const char *carry, int64_t stride)
{
    scan_rt *r = e->r;
    REMAT_ASSERT(step == e->expect);
    e->expect -= n;
    set_steps(r, step, -1, e->xs, NULL, e->ct_ys, e->ct_xs);
    set_shot(r, carry, stride);
    call(r, r->lanes.recompute, n);
    count_evals(r, r->p_fwd, n);
    remat_program_add_runs(r->p_bwd, n);
    e->s.c = -1;
}

static int tape_kept(const exec *e, int64_t step)
{
    return kept_ending_at(e, step) > 0;
}

/* one action; forward = the forward phase (tracking as the interpreter does) */
static void unit(exec *e, const remat_action *a)
{
    scan_rt *r = e->r;
    const remat_scan_data *d = r->d;
    switch (a->kind) {
    case REMAT_ACT_ADVANCE: advance_to(e, a->step); break;
    case REMAT_ACT_TAPE: tape_run(e, a->step, 1); break;
    case REMAT_ACT_TAKESHOT:
        memcpy(remat_scan_rt_slot(r, e->store, a->slot), r->cur, d->carry_bytes);
        remat_scan_rt_forward_action(r, &e->s, a, 0, NULL, NULL);
        break;
    case REMAT_ACT_FREE: remat_scan_rt_forward_action(r, &e->s, a, 0, NULL, NULL); break;
    case REMAT_ACT_RESTORE:
        REMAT_ASSERT(a->slot >= 0 && a->slot < d->max_slots);
        memcpy(r->cur, remat_scan_rt_slot(r, e->store, a->slot), d->carry_bytes);
        e->s.c = r->slot_step[a->slot];
        break;
    case REMAT_ACT_REVERSE:
        if (tape_kept(e, a->step)) {
            reverse_run(e, a->step, 1);
        } else {
            REMAT_ASSERT(e->s.c == a->step);
            recompute_run(e, a->step, 1, r->cur, 0);
        }
        break;
    default: REMAT_UNREACHABLE("scan: schedule action out of place");
    }
}

static void expand(exec *e, const remat_action_run *run)
{
    for (int64_t q = 0; q < run->count; q++)
        for (int i = 0; i < run->n; i++) {
            const remat_action a = remat_action_run_at(run, q, i);
            unit(e, &a);
        }
}

/* The run shapes the loops execute in one go. */
typedef enum {
    RUN_OTHER,        /* action by action */
    RUN_SINGLE,       /* one action */
    RUN_ADVANCE,      /* [ADVANCE c+1] x n: advance to c+n */
    RUN_MOVING_SHOT,  /* [FREE c-1 slot s, TAKESHOT c slot s, ADVANCE c+1] x n, slot kept
                         (online moving its newest snapshot along): slot s ends at c+n-1 */
    RUN_TAPE,         /* [TAPE c] x n */
    RUN_REVERSE_KEPT, /* [REVERSE k] x n (dstep -1), all n tapes kept */
    RUN_SHOT_ADVANCE, /* [TAKESHOT c slot s, ADVANCE c+K] x n (dstep K >= 1: per-step, periodic) */
    RUN_RECOMPUTE,    /* [RESTORE k slot s, REVERSE k, FREE k slot s] x n (dstep -1), no tape kept */
} run_shape;

static int is_kind(const remat_action_run *run, remat_action_kind a, remat_action_kind b, remat_action_kind c)
{
    const remat_action *p = run->pat;
    return p[0].kind == a && (run->n < 2 || p[1].kind == b) && (run->n < 3 || p[2].kind == c);
}

static run_shape classify(const exec *e, const remat_action_run *run)
{
    const scan_rt *r = e->r;
    const remat_action *p = run->pat;
    const int64_t n = run->count, c = e->s.c;
    if (n == 1 && run->n == 1)
        return RUN_SINGLE;
    switch (run->n) {
    case 1:
        if (is_kind(run, REMAT_ACT_ADVANCE, 0, 0) && run->dstep == 1 && p[0].step == c + 1)
            return RUN_ADVANCE;
        if (is_kind(run, REMAT_ACT_TAPE, 0, 0) && run->dstep == 1 && p[0].step == c)
            return RUN_TAPE;
        if (is_kind(run, REMAT_ACT_REVERSE, 0, 0) && run->dstep == -1 && kept_ending_at(e, p[0].step) >= n)
            return RUN_REVERSE_KEPT;
        return RUN_OTHER;
    case 2:
        if (is_kind(run, REMAT_ACT_TAKESHOT, REMAT_ACT_ADVANCE, 0) && run->dstep >= 1 && p[0].step == c &&
            p[1].step == c + run->dstep)
            return RUN_SHOT_ADVANCE;
        return RUN_OTHER;
    default:
        if (is_kind(run, REMAT_ACT_FREE, REMAT_ACT_TAKESHOT, REMAT_ACT_ADVANCE) && run->dstep == 1 &&
            run->dslot == 0 && p[0].slot == p[1].slot && p[1].step == c && p[0].step == c - 1 &&
            p[2].step == c + 1 && r->slot_step[p[0].slot] == p[0].step)
            return RUN_MOVING_SHOT;
        if (is_kind(run, REMAT_ACT_RESTORE, REMAT_ACT_REVERSE, REMAT_ACT_FREE) && run->dstep == -1 &&
            p[1].step == p[0].step && p[2].slot == p[0].slot &&
            (e->n_spans == 0 || r->span_step[e->n_spans - 1] + r->span_count[e->n_spans - 1] - 1 < p[0].step - n + 1))
            return RUN_RECOMPUTE; /* tapes are LIFO: the top span is the latest */
        return RUN_OTHER;
    }
}

/* slot_step for the n snapshots a RUN_SHOT_ADVANCE takes */
static void note_shots(exec *e, const remat_action_run *run)
{
    scan_rt *r = e->r;
    for (int64_t q = 0; q < run->count; q++) {
        const int64_t slot = run->pat[0].slot + q * run->dslot;
        REMAT_ASSERT(slot >= 0 && slot < r->d->max_slots);
        r->slot_step[slot] = run->pat[0].step + q * run->dstep;
    }
    e->s.live_slots += run->count;
    if (e->s.live_slots > e->s.peak_slots)
        e->s.peak_slots = e->s.live_slots;
}

static void execute(exec *e, const remat_action_run *run)
{
    scan_rt *r = e->r;
    const remat_scan_data *d = r->d;
    const remat_action *p = run->pat;
    const int64_t n = run->count;
    switch (classify(e, run)) {
    case RUN_SINGLE: unit(e, &p[0]); return;
    case RUN_ADVANCE: advance_to(e, e->s.c + n); return;
    case RUN_MOVING_SHOT:
        advance_to(e, e->s.c + n - 1);
        memcpy(remat_scan_rt_slot(r, e->store, p[1].slot), r->cur, d->carry_bytes);
        r->slot_step[p[1].slot] = e->s.c;
        advance_to(e, e->s.c + 1);
        return;
    case RUN_TAPE: tape_run(e, p[0].step, n); return;
    case RUN_REVERSE_KEPT: reverse_run(e, p[0].step, n); return;
    case RUN_SHOT_ADVANCE:
        if (run->dstep == 1) { /* per-step: snapshots written by the loop itself */
            note_shots(e, run);
            set_steps(r, e->s.c, 1, e->xs, e->ys, NULL, NULL);
            set_shot(r, remat_scan_rt_slot(r, e->store, p[0].slot), run->dslot * (int64_t)d->carry_bytes);
            call(r, r->lanes.advance_shot, n);
            count_evals(r, r->p_primal, n);
            e->s.c += n;
        } else { /* periodic: a snapshot, then K steps */
            const int64_t c0 = e->s.c;
            note_shots(e, run);
            for (int64_t q = 0; q < n; q++) {
                e->s.c = c0 + q * run->dstep;
                memcpy(remat_scan_rt_slot(r, e->store, (int)(p[0].slot + q * run->dslot)), r->cur, d->carry_bytes);
                advance_to(e, e->s.c + run->dstep);
            }
        }
        return;
    case RUN_RECOMPUTE:
        for (int64_t q = 0; q < n; q++) /* each snapshot holds the carry of its step */
            REMAT_ASSERT(r->slot_step[p[0].slot + q * run->dslot] == p[0].step - q);
        recompute_run(e, p[1].step, n, remat_scan_rt_slot(r, e->store, p[0].slot),
                      run->dslot * (int64_t)d->carry_bytes);
        e->s.live_slots -= n;
        return;
    case RUN_OTHER: expand(e, run); return;
    }
}

/* The forward phase's bookkeeping without executing it (the backward node
 * replays it to learn which slot holds which carry and which tapes exist). */
static void track(exec *e, const remat_action_run *run)
{
    scan_rt *r = e->r;
    const remat_action *p = run->pat;
    const int64_t n = run->count;
    switch (classify(e, run)) {
    case RUN_ADVANCE: e->s.c += n; return;
    case RUN_MOVING_SHOT:
        r->slot_step[p[1].slot] = e->s.c + n - 1;
        e->s.c += n;
        return;
    case RUN_TAPE:
        tapes_push(e, p[0].step, n);
        e->s.c += n;
        return;
    case RUN_SHOT_ADVANCE:
        note_shots(e, run);
        e->s.c += n * run->dstep;
        REMAT_ASSERT(e->s.c <= r->length);
        return;
    default: break;
    }
    for (int64_t q = 0; q < n; q++)
        for (int i = 0; i < run->n; i++) {
            remat_action a = remat_action_run_at(run, q, i);
            if (a.kind == REMAT_ACT_TAPE) { /* kept as spans here (the interpreter's array is not used) */
                REMAT_ASSERT(a.step == e->s.c);
                tapes_push(e, a.step, 1);
                e->s.c++;
            } else {
                remat_scan_rt_forward_action(r, &e->s, &a, 0, NULL, NULL);
            }
        }
}

static remat_schedule *open_schedule(const scan_rt *r)
{
    remat_schedule *sch = NULL;
    REMAT_ASSERT(remat_schedule_new(&r->d->sched, r->d->length, &sch) == REMAT_OK);
    /* the length is known: revealing it at once is allowed (schedule.h) */
    remat_schedule_set_length(sch, r->d->length);
    return sch;
}

/* ---- the instruction kernels ---- */

void remat_scan_k_primal_lanes(const remat_instr *I)
{
    scan_rt *r = (scan_rt *)I->aux;
    const remat_scan_data *d = r->d;
    const void *const *init = I->in, *const *xs = I->in + d->n_carry, *const *ks = I->in + d->n_carry + d->n_xs;
    remat_scan_rt_copy_carry_in(r, r->cur, init);
    bind(r, ks, NULL);
    exec e = {.r = r, .xs = xs, .ys = r->outs + d->n_carry};
    advance_to(&e, d->length);
    remat_scan_rt_copy_carry_out(r, r->outs, r->cur);
}

void remat_scan_k_fwd_lanes(const remat_instr *I)
{
    scan_rt *r = (scan_rt *)I->aux;
    const remat_scan_data *d = r->d;
    const void *const *init = I->in, *const *xs = I->in + d->n_carry, *const *ks = I->in + d->n_carry + d->n_xs;
    exec e = {.r = r, .xs = xs, .ys = r->outs + d->n_carry, .store = r->outs[d->n_carry + d->n_ys]};
    remat_schedule *sch = open_schedule(r);
    remat_scan_rt_copy_carry_in(r, r->cur, init);
    bind(r, ks, NULL);
    remat_action_run run;
    for (;;) {
        remat_schedule_next_run(sch, &run);
        if (run.pat[0].kind == REMAT_ACT_END_FORWARD)
            break;
        execute(&e, &run);
    }
    REMAT_ASSERT(e.s.c == d->length);
    remat_scan_rt_copy_carry_out(r, r->outs, r->cur);
    remat_scan_rt_note_peak(r, e.s.peak_slots, e.s.peak_tapes);
    remat_schedule_free(sch);
}

void remat_scan_k_bwd_lanes(const remat_instr *I)
{
    scan_rt *r = (scan_rt *)I->aux;
    const remat_scan_data *d = r->d;
    const int nc = d->n_carry, nx = d->n_xs, nk = d->n_consts;
    const void *const *xs = I->in + 1, *const *ks = I->in + 1 + nx;
    const void *const *ct_carry = I->in + 1 + nx + nk, *const *ct_ys = I->in + 1 + nx + nk + nc;
    void *const *outs = r->outs;
    exec e = {.r = r, .xs = xs, .ct_ys = ct_ys, .ct_xs = outs + nc, .store = (char *)I->in[0], .expect = d->length - 1};
    remat_schedule *sch = open_schedule(r);
    remat_action_run run;
    for (;;) { /* replay the forward phase */
        remat_schedule_next_run(sch, &run);
        if (run.pat[0].kind == REMAT_ACT_END_FORWARD)
            break;
        track(&e, &run);
    }
    remat_scan_rt_copy_carry_in(r, r->ct_cur, ct_carry);
    bind(r, ks, outs + nc + nx);
    for (int i = 0; i < nk; i++) { /* -0.0: the accumulation then gives the interpreter's bits (scan_lanes.h) */
        const size_t n = r->k_bytes[i] / remat_dtype_size(d->in[nc + nx + i].dt);
        if (d->in[nc + nx + i].dt == REMAT_F64)
            for (size_t q = 0; q < n; q++)
                ((double *)outs[nc + nx + i])[q] = d->length ? -0.0 : 0.0;
        else
            for (size_t q = 0; q < n; q++)
                ((float *)outs[nc + nx + i])[q] = d->length ? -0.0f : 0.0f;
    }
    for (;;) {
        remat_schedule_next_run(sch, &run);
        if (run.pat[0].kind == REMAT_ACT_DONE)
            break;
        execute(&e, &run);
    }
    REMAT_ASSERT(e.expect == -1);
    remat_scan_rt_copy_carry_out(r, outs, r->ct_cur);
    remat_scan_rt_note_peak(r, e.s.peak_slots, e.s.peak_tapes);
    remat_schedule_free(sch);
}

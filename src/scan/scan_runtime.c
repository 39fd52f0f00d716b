/*
 * scan_runtime.c — executes scan nodes: the plain loop, and the two halves of
 * a checkpointed reverse pass that run a schedule's actions (remat/schedule.h)
 * against a store of carry snapshots and step tapes.
 *
 * The forward half runs the actions up to END_FORWARD; the backward half
 * replays those (integers only) to learn which slot holds which carry, then
 * executes the rest. Every schedule reverses steps n-1..0 in order and
 * accumulates the closed-over cotangents in that order, so gradients are
 * bitwise identical across schedules.
 *
 * Host memory is touched directly (copies and the cotangent accumulation):
 * the CPU backend's arena is host memory.
 */
#include <stdlib.h>
#include <string.h>

#include "core/assert.h"
#include "exec/hop.h"
#include "scan/scan_rt.h"


static size_t bytes_of(const scan_desc *s)
{
    return (size_t)remat_shape_numel(&s->shape) * remat_dtype_size(s->dt);
}


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

/* Where the backward body writes the consts' cotangents: straight into the
 * node's outputs for the first step reversed, then into a buffer that is
 * added to them. */
static void bind_ct_consts(scan_rt *r, void *const *outs, int first)
{
    for (int i = 0; i < r->nk; i++)
        r->bout[r->nc + r->nx + i] = first ? outs[r->nc + r->nx + i] : r->ct_k_tmp + r->k_off[i];
}

/* carry and x_t of step k (the consts are bound already) */
static void set_step_inputs(scan_rt *r, int64_t k, const char *carry, const void *const *xs)
{
    const void **in = r->fin;
    const int nc = r->nc, nx = r->nx;
    for (int i = 0; i < nc; i++)
        in[i] = carry + r->carry_off[i];
    if (nx > 0) {
        const int64_t t = remat_scan_rt_step(r, k);
        for (int i = 0; i < nx; i++)
            in[nc + i] = (const char *)xs[i] + (size_t)t * r->x_step[i];
    }
}

/* outputs of the primal/forward bodies: next carry, y_t (into ys or a dummy) */
static void set_step_outputs(scan_rt *r, int64_t k, char *next, void *const *ys)
{
    void **out = r->fout;
    const int nc = r->nc, ny = r->ny;
    for (int i = 0; i < nc; i++)
        out[i] = next + r->carry_off[i];
    if (ny > 0) {
        const int64_t t = remat_scan_rt_step(r, k);
        size_t dy = 0;
        for (int i = 0; i < ny; i++) {
            out[nc + i] = ys ? (char *)ys[i] + (size_t)t * r->y_step[i] : r->dummy_y + dy;
            dy += remat_scan_align(r->y_step[i]);
        }
    }
}

static void swap(char **a, char **b)
{
    char *t = *a;
    *a = *b;
    *b = t;
}

static void advance(scan_rt *r, int64_t k, const void *const *xs, void *const *ys)
{
    set_step_inputs(r, k, r->cur, xs);
    set_step_outputs(r, k, r->next, ys);
    remat_program_exec(r->p_primal, r->fin, r->fout);
    swap(&r->cur, &r->next);
    r->counters->forward_evals++;
}

static void tape(scan_rt *r, int64_t k, const void *const *xs, void *const *ys, char *tp)
{
    set_step_inputs(r, k, r->cur, xs);
    set_step_outputs(r, k, r->next, ys);
    void **res = r->fout + r->nc + r->ny;
    const size_t *off = r->d->vjp->res_off;
    for (int t = 0; t < r->n_taped; t++)
        res[t] = tp + off[r->res_taped[t]];
    remat_program_exec(r->p_fwd, r->fin, r->fout);
    swap(&r->cur, &r->next);
    r->counters->forward_evals++;
}

static void accumulate(remat_dtype dt, size_t bytes, void *dst, const void *src)
{
    if (dt == REMAT_F64) {
        double *a = dst;
        const double *b = src;
        for (size_t i = 0; i < bytes / sizeof(double); i++)
            a[i] += b[i];
    } else {
        float *a = dst;
        const float *b = src;
        for (size_t i = 0; i < bytes / sizeof(float); i++)
            a[i] += b[i];
    }
}

/* backward of step k from its tape; ct_cur holds d carry_{k+1}. The consts'
 * cotangents go where bind_ct_consts() said (first: the outputs). */
static void reverse_step(scan_rt *r, int64_t k, const char *tp, const void *const *xs, const void *const *ct_ys,
                         void *const *outs, int first)
{
    const int nc = r->nc, nx = r->nx, nk = r->nk, ny = r->ny, nres = r->nres;
    const size_t *off = r->d->vjp->res_off;
    const void **in = r->bin;
    void **out = r->bout;
    for (int t = 0; t < r->n_taped; t++) {
        const int j = r->res_taped[t];
        in[j] = tp + off[j];
    }
    for (int i = 0; i < nc; i++)
        in[nres + i] = r->ct_cur + r->carry_off[i];
    for (int i = 0; i < nc; i++)
        out[i] = r->ct_next + r->carry_off[i];
    if (nx > 0 || ny > 0) {
        const int64_t t = remat_scan_rt_step(r, k);
        for (int q = 0; q < r->n_res_x; q++) {
            const int j = r->res_x[2 * q], i = r->res_x[2 * q + 1];
            in[j] = (const char *)xs[i] + (size_t)t * r->x_step[i];
        }
        for (int i = 0; i < ny; i++)
            in[nres + nc + i] = (const char *)ct_ys[i] + (size_t)t * r->y_step[i];
        for (int i = 0; i < nx; i++)
            out[nc + i] = (char *)outs[nc + i] + (size_t)t * r->x_step[i];
    }
    remat_program_exec(r->p_bwd, in, out);
    if (!first) /* first contribution sets, later ones add — in step order n-1..0 */
        for (int i = 0; i < nk; i++)
            accumulate(r->d->in[nc + nx + i].dt, r->k_bytes[i], outs[nc + nx + i], r->ct_k_tmp + r->k_off[i]);
    swap(&r->ct_cur, &r->ct_next);
}

void remat_scan_rt_copy_carry_in(scan_rt *r, char *dst, const void *const *src)
{
    for (int i = 0; i < r->d->n_carry; i++)
        memcpy(dst + r->carry_off[i], src[i], bytes_of(&r->d->in[i]));
}

void remat_scan_rt_copy_carry_out(scan_rt *r, void *const *dst, const char *src)
{
    for (int i = 0; i < r->d->n_carry; i++)
        memcpy(dst[i], src + r->carry_off[i], bytes_of(&r->d->in[i]));
}

void remat_scan_rt_note_peak(scan_rt *r, int64_t slots, int64_t tapes)
{
    size_t b = (size_t)slots * r->d->carry_bytes + (size_t)tapes * (r->d->vjp ? r->d->vjp->tape_bytes : 0);
    if (b > r->counters->peak_snapshot_bytes)
        r->counters->peak_snapshot_bytes = b;
}

/* ---- the three instruction kernels ---- */
static void k_scan_primal(const remat_instr *I)
{
    scan_rt *r = (scan_rt *)I->aux;
    const remat_scan_data *d = r->d;
    const void *const *init = I->in, *const *xs = I->in + d->n_carry, *const *ks = I->in + d->n_carry + d->n_xs;
    remat_scan_rt_copy_carry_in(r, r->cur, init);
    bind_consts(r, ks);
    for (int64_t k = 0; k < d->length; k++)
        advance(r, k, xs, r->outs + d->n_carry);
    remat_scan_rt_copy_carry_out(r, r->outs, r->cur);
}


void remat_scan_rt_forward_action(scan_rt *r, sched_state *s, const remat_action *a, int execute, const void *const *xs,
                           void *const *ys)
{
    const remat_scan_data *d = r->d;
    switch (a->kind) {
    case REMAT_ACT_ADVANCE:
        REMAT_ASSERT(a->step >= s->c && a->step <= d->length);
        if (execute)
            for (int64_t k = s->c; k < a->step; k++)
                advance(r, k, xs, ys);
        s->c = a->step;
        break;
    case REMAT_ACT_TAKESHOT:
        REMAT_ASSERT(a->slot >= 0 && a->slot < d->max_slots);
        r->slot_step[a->slot] = s->c;
        s->live_slots++;
        if (s->live_slots > s->peak_slots)
            s->peak_slots = s->live_slots;
        break;
    case REMAT_ACT_FREE:
        s->live_slots--;
        break;
    case REMAT_ACT_TAPE:
        REMAT_ASSERT(a->step == s->c && s->tapes < d->peak_tapes);
        r->tape_step[s->tapes] = a->step;
        s->tapes++;
        if (s->tapes > s->peak_tapes)
            s->peak_tapes = s->tapes;
        s->c++;
        break;
    default:
        REMAT_UNREACHABLE("scan: schedule action out of place in the forward phase");
    }
}

char *remat_scan_rt_slot(scan_rt *r, char *store, int slot) { return store + (size_t)slot * r->d->carry_bytes; }
char *remat_scan_rt_tape(scan_rt *r, char *store, int64_t j)
{
    return store + (size_t)r->d->max_slots * r->d->carry_bytes + (size_t)j * r->d->vjp->tape_bytes;
}

static void next_action(scan_rt *r, remat_schedule *sch, sched_state *s, remat_action *a)
{
    if (!s->revealed && s->c >= r->d->length - 1) { /* online: the next step is the last */
        remat_schedule_set_length(sch, r->d->length);
        s->revealed = 1;
    }
    remat_schedule_next(sch, a);
}

static void k_scan_fwd(const remat_instr *I)
{
    scan_rt *r = (scan_rt *)I->aux;
    const remat_scan_data *d = r->d;
    const void *const *init = I->in, *const *xs = I->in + d->n_carry, *const *ks = I->in + d->n_carry + d->n_xs;
    void *const *ys = r->outs + d->n_carry;
    char *store = r->outs[d->n_carry + d->n_ys];
    remat_schedule *sch = NULL;
    REMAT_ASSERT(remat_schedule_new(&d->sched, d->length, &sch) == REMAT_OK);
    sched_state s = {0};
    remat_scan_rt_copy_carry_in(r, r->cur, init);
    bind_consts(r, ks);
    remat_action a;
    for (;;) {
        next_action(r, sch, &s, &a);
        if (a.kind == REMAT_ACT_END_FORWARD)
            break;
        if (a.kind == REMAT_ACT_TAKESHOT)
            memcpy(remat_scan_rt_slot(r, store, a.slot), r->cur, d->carry_bytes);
        if (a.kind == REMAT_ACT_TAPE)
            tape(r, a.step, xs, ys, remat_scan_rt_tape(r, store, s.tapes));
        remat_scan_rt_forward_action(r, &s, &a, 1, xs, ys);
    }
    REMAT_ASSERT(s.c == d->length);
    remat_scan_rt_copy_carry_out(r, r->outs, r->cur);
    remat_scan_rt_note_peak(r, s.peak_slots, s.peak_tapes);
    remat_schedule_free(sch);
}

static void k_scan_bwd(const remat_instr *I)
{
    scan_rt *r = (scan_rt *)I->aux;
    const remat_scan_data *d = r->d;
    int nc = d->n_carry, nx = d->n_xs, nk = d->n_consts;
    char *store = (char *)I->in[0];
    const void *const *xs = I->in + 1, *const *ks = I->in + 1 + nx;
    const void *const *ct_carry = I->in + 1 + nx + nk, *const *ct_ys = I->in + 1 + nx + nk + nc;
    void *const *outs = r->outs;
    remat_schedule *sch = NULL;
    REMAT_ASSERT(remat_schedule_new(&d->sched, d->length, &sch) == REMAT_OK);
    sched_state s = {0};
    remat_action a;
    for (;;) { /* replay the forward phase: which slot holds which carry, which tapes exist */
        next_action(r, sch, &s, &a);
        if (a.kind == REMAT_ACT_END_FORWARD)
            break;
        remat_scan_rt_forward_action(r, &s, &a, 0, xs, NULL);
    }
    remat_scan_rt_copy_carry_in(r, r->ct_cur, ct_carry);
    bind_consts(r, ks);
    bind_ct_consts(r, outs, 1);
    if (d->length == 0)
        for (int i = 0; i < nk; i++)
            memset(outs[nc + nx + i], 0, r->k_bytes[i]);
    int first = 1;
    int64_t expect = d->length - 1;
    for (;;) {
        remat_schedule_next(sch, &a);
        if (a.kind == REMAT_ACT_DONE)
            break;
        switch (a.kind) {
        case REMAT_ACT_ADVANCE:
        case REMAT_ACT_TAPE:
            if (a.kind == REMAT_ACT_TAPE)
                tape(r, a.step, xs, NULL, remat_scan_rt_tape(r, store, s.tapes));
            remat_scan_rt_forward_action(r, &s, &a, 1, xs, NULL);
            break;
        case REMAT_ACT_TAKESHOT:
            memcpy(remat_scan_rt_slot(r, store, a.slot), r->cur, d->carry_bytes);
            remat_scan_rt_forward_action(r, &s, &a, 0, xs, NULL);
            break;
        case REMAT_ACT_FREE:
            remat_scan_rt_forward_action(r, &s, &a, 0, xs, NULL);
            break;
        case REMAT_ACT_RESTORE:
            REMAT_ASSERT(a.slot >= 0 && a.slot < d->max_slots);
            memcpy(r->cur, remat_scan_rt_slot(r, store, a.slot), d->carry_bytes);
            s.c = r->slot_step[a.slot];
            break;
        case REMAT_ACT_REVERSE: {
            REMAT_ASSERT(a.step == expect);
            const char *tp;
            if (s.tapes > 0 && r->tape_step[s.tapes - 1] == a.step) {
                tp = remat_scan_rt_tape(r, store, --s.tapes);
            } else {
                REMAT_ASSERT(s.c == a.step);
                tape(r, a.step, xs, NULL, r->tmp_tape);
                tp = r->tmp_tape;
                s.c = -1;
            }
            reverse_step(r, a.step, tp, xs, ct_ys, outs, first);
            if (first) {
                first = 0;
                bind_ct_consts(r, outs, 0);
            }
            expect--;
            break;
        }
        default:
            REMAT_UNREACHABLE("scan: unexpected action in the reverse phase");
        }
    }
    REMAT_ASSERT(expect == -1);
    remat_scan_rt_copy_carry_out(r, outs, r->ct_cur);
    remat_scan_rt_note_peak(r, s.peak_slots, s.peak_tapes);
    remat_schedule_free(sch);
}

/* Which body programs this node's share of the actions runs: the plain body
 * (an ADVANCE over at least one step) and the recording one (a TAPE, or a
 * REVERSE without a kept tape). Found by replaying the schedule on integers,
 * as k_scan_bwd does. A program that never runs is not compiled: it would hold
 * an arena nobody touches, and the memory plan would count it although the
 * run's high-water mark cannot (remat/exec.h: peak_arena_bytes == the plan).
 * E.g. store-all never advances, periodic never advances in the reverse
 * phase, and a length-0 scan runs no body at all. */
static void programs_used(scan_rt *r, bool *plain, bool *record)
{
    const remat_scan_data *d = r->d;
    *plain = *record = false;
    if (d->length == 0)
        return;
    remat_schedule *sch = NULL;
    REMAT_ASSERT(remat_schedule_new(&d->sched, d->length, &sch) == REMAT_OK);
    sched_state s = {0};
    remat_action a;
    bool forward = true, mine = d->kind == SCAN_FWD;
    for (;;) {
        if (forward)
            next_action(r, sch, &s, &a);
        else
            remat_schedule_next(sch, &a);
        if (a.kind == REMAT_ACT_DONE)
            break;
        switch (a.kind) {
        case REMAT_ACT_END_FORWARD:
            forward = false;
            mine = d->kind == SCAN_BWD;
            break;
        case REMAT_ACT_ADVANCE:
            *plain |= mine && a.step > s.c;
            remat_scan_rt_forward_action(r, &s, &a, 0, NULL, NULL);
            break;
        case REMAT_ACT_TAPE:
            *record |= mine;
            remat_scan_rt_forward_action(r, &s, &a, 0, NULL, NULL);
            break;
        case REMAT_ACT_TAKESHOT:
        case REMAT_ACT_FREE:
            remat_scan_rt_forward_action(r, &s, &a, 0, NULL, NULL);
            break;
        case REMAT_ACT_RESTORE:
            s.c = r->slot_step[a.slot];
            break;
        case REMAT_ACT_REVERSE:
            if (s.tapes > 0 && r->tape_step[s.tapes - 1] == a.step) {
                s.tapes--;
            } else {
                *record |= mine;
                s.c = -1;
            }
            break;
        default:
            REMAT_UNREACHABLE("scan: unexpected schedule action");
        }
        if (!forward && !mine)
            break; /* the forward node's share ends at END_FORWARD */
    }
    remat_schedule_free(sch);
}

/* The node's data as the kernels read it, copied into the program's memory:
 * the data belongs to the function's node, and a program must keep working
 * after that function is freed (remat/exec.h asks nothing else of callers).
 * The body functions are only needed here, while lowering, so the copy
 * drops them. */
static const remat_scan_data *keep_data(const remat_scan_data *d, remat_hop_lowering *L)
{
    const int nin = d->n_carry + d->n_xs + d->n_consts, nout = d->n_carry + d->n_ys;
    remat_scan_data *c = L->alloc(L->ctx, sizeof *c);
    *c = *d;
    c->refcount = 0;
    c->body = NULL;
    c->in = L->alloc(L->ctx, sizeof *c->in * (size_t)(nin + 1));
    memcpy(c->in, d->in, sizeof *c->in * (size_t)nin);
    c->out = L->alloc(L->ctx, sizeof *c->out * (size_t)(nout + 1));
    memcpy(c->out, d->out, sizeof *c->out * (size_t)nout);
    if (d->vjp) {
        scan_body_vjp *v = L->alloc(L->ctx, sizeof *v);
        *v = *d->vjp;
        v->refcount = 0;
        v->fwd = v->bwd = NULL;
        v->res_off = L->alloc(L->ctx, sizeof *v->res_off * (size_t)(v->n_res + 1));
        memcpy(v->res_off, d->vjp->res_off, sizeof *v->res_off * (size_t)v->n_res);
        v->res_arg = L->alloc(L->ctx, sizeof *v->res_arg * (size_t)(v->n_res + 1));
        memcpy(v->res_arg, d->vjp->res_arg, sizeof *v->res_arg * (size_t)v->n_res);
        c->vjp = v;
    }
    return c;
}

/* Compiled loops for the body when it has them (scan_lanes.h): the
 * sub-programs then only count ops, and their arenas are released. */
static bool use_lanes(scan_rt *r, const remat_scan_data *d, remat_hop_lowering *L, unsigned want)
{
    if (!remat_scan_lanes_build(d, L->be, want, &r->lanes))
        return false;
    const int n = r->lanes.base[LB_KINDS];
    r->lb_ptr = L->alloc(L->ctx, sizeof *r->lb_ptr * (size_t)(n + 1));
    r->lb_stride = L->alloc(L->ctx, sizeof *r->lb_stride * (size_t)(n + 1));
    r->span_step = L->alloc(L->ctx, sizeof *r->span_step * (size_t)(d->peak_tapes + 1));
    r->span_count = L->alloc(L->ctx, sizeof *r->span_count * (size_t)(d->peak_tapes + 1));
    remat_program *subs[3] = {r->p_primal, r->p_fwd, r->p_bwd};
    for (int i = 0; i < 3; i++)
        if (subs[i])
            remat_program_run_elsewhere(subs[i]);
    L->counters->compiled_loops++;
    return true;
}

remat_status remat_scan_lower(void *data, remat_hop_lowering *L, remat_instr *ins)
{
    remat_scan_data *d = data;
    scan_rt *r = L->alloc(L->ctx, sizeof *r);
    r->d = keep_data(d, L);
    r->counters = L->counters;
    r->outs = L->outs;
    int nc = d->n_carry, nx = d->n_xs, nk = d->n_consts, ny = d->n_ys;
    r->carry_off = L->alloc(L->ctx, sizeof(size_t) * (size_t)(nc + 1));
    r->x_step = L->alloc(L->ctx, sizeof(size_t) * (size_t)(nx + 1));
    r->y_step = L->alloc(L->ctx, sizeof(size_t) * (size_t)(ny + 1));
    r->k_bytes = L->alloc(L->ctx, sizeof(size_t) * (size_t)(nk + 1));
    r->k_off = L->alloc(L->ctx, sizeof(size_t) * (size_t)(nk + 1));
    size_t off = 0, ysum = 0, ksum = 0;
    for (int i = 0; i < nc; i++) {
        r->carry_off[i] = off;
        off += remat_scan_align(bytes_of(&d->in[i]));
    }
    for (int i = 0; i < nx; i++)
        r->x_step[i] = bytes_of(&d->in[nc + i]);
    for (int i = 0; i < ny; i++) {
        r->y_step[i] = bytes_of(&d->out[nc + i]);
        ysum += remat_scan_align(r->y_step[i]);
    }
    for (int i = 0; i < nk; i++) {
        r->k_bytes[i] = bytes_of(&d->in[nc + nx + i]);
        r->k_off[i] = ksum;
        ksum += remat_scan_align(r->k_bytes[i]);
    }
    size_t cb = d->carry_bytes ? d->carry_bytes : 64;
    r->cur = L->alloc(L->ctx, cb);
    r->next = L->alloc(L->ctx, cb);
    r->ct_cur = L->alloc(L->ctx, cb);
    r->ct_next = L->alloc(L->ctx, cb);
    r->dummy_y = L->alloc(L->ctx, ysum ? ysum : 64);
    r->ct_k_tmp = L->alloc(L->ctx, ksum ? ksum : 64);
    r->nc = nc, r->nx = nx, r->nk = nk, r->ny = ny, r->nres = d->vjp ? d->vjp->n_res : 0;
    r->reverse = d->reverse;
    r->length = d->length;
    size_t maxp = (size_t)(nc + nx + nk + ny + r->nres + 1);
    r->res_taped = L->alloc(L->ctx, sizeof *r->res_taped * (size_t)(r->nres + 1));
    r->res_x = L->alloc(L->ctx, sizeof *r->res_x * 2 * (size_t)(r->nres + 1));
    r->n_taped = r->n_res_x = 0;
    for (int j = 0; j < r->nres; j++) {
        const int a = d->vjp->res_arg[j];
        if (a < 0)
            r->res_taped[r->n_taped++] = j;
        else if (a < nc + nx) {
            r->res_x[2 * r->n_res_x] = j;
            r->res_x[2 * r->n_res_x + 1] = a - nc;
            r->n_res_x++;
        }
    }
    r->fin = L->alloc(L->ctx, sizeof *r->fin * maxp);
    r->bin = L->alloc(L->ctx, sizeof *r->bin * maxp);
    r->fout = L->alloc(L->ctx, sizeof *r->fout * maxp);
    r->bout = L->alloc(L->ctx, sizeof *r->bout * maxp);

    remat_status st = REMAT_OK;
    if (d->kind == SCAN_PRIMAL) {
        if (d->length > 0)
            st = remat_compile_sub(d->body, L->be, L->counters, &r->p_primal);
        ins->fn = k_scan_primal;
        ins->aux = r;
        if (st == REMAT_OK && use_lanes(r, d, L, LK_ADVANCE))
            ins->fn = remat_scan_k_primal_lanes;
        return st;
    }
    size_t pred = (size_t)d->peak_snapshots * d->carry_bytes + (size_t)d->peak_tapes * d->vjp->tape_bytes;
    if (pred >= L->counters->pred_snapshot_bytes) {
        L->counters->pred_snapshot_bytes = pred;
        L->counters->carry_bytes = d->carry_bytes;
        L->counters->tape_bytes = d->vjp->tape_bytes;
    }
    r->slot_step = L->alloc(L->ctx, sizeof(int64_t) * (size_t)(d->max_slots + 1));
    r->tape_step = L->alloc(L->ctx, sizeof(int64_t) * (size_t)(d->peak_tapes + 1));
    r->tmp_tape = L->alloc(L->ctx, d->vjp->tape_bytes ? d->vjp->tape_bytes : 64);
    bool plain, record;
    programs_used(r, &plain, &record);
    if (plain)
        st = remat_compile_sub(d->body, L->be, L->counters, &r->p_primal);
    if (st == REMAT_OK && record)
        st = remat_compile_sub(d->vjp->fwd, L->be, L->counters, &r->p_fwd);
    if (st == REMAT_OK && d->kind == SCAN_BWD && d->length > 0)
        st = remat_compile_sub(d->vjp->bwd, L->be, L->counters, &r->p_bwd);
    if (st != REMAT_OK)
        return st;
    ins->fn = d->kind == SCAN_FWD ? k_scan_fwd : k_scan_bwd;
    ins->aux = r;
    /* Every kernel of the body is compiled with the forward node's, in one
     * compilation (libgccjit's cost is mostly per compilation): the backward
     * node then finds its own in the backend's cache. */
    const unsigned all = LK_ADVANCE | LK_ADVANCE_SHOT | LK_TAPE | LK_REVERSE | LK_RECOMPUTE;
    if (use_lanes(r, d, L, all))
        ins->fn = d->kind == SCAN_FWD ? remat_scan_k_fwd_lanes : remat_scan_k_bwd_lanes;
    return REMAT_OK;
}

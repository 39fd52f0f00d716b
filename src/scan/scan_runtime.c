/*
 * scan_runtime.c — a scan node's instruction kernels and its lowering.
 *
 * Lowering replays the node's schedule once into a plan of executor ops
 * (scan_replay.h), compiles the body sub-programs the plan runs (a program
 * that never runs is not compiled: it would hold an arena nobody touches,
 * and the memory plan would count it although the run's high-water mark
 * cannot), and picks the executor: compiled lanes when the body has them
 * (lanes/lanes.h), else interpreted. The kernels then only move the carry in
 * and out and hand the plan's ops for their phase to the executor:
 *
 *   PRIMAL  ADVANCE over all steps
 *   FWD     the schedule's forward phase (up to END_FORWARD)
 *   BWD     its reverse phase, the bookkeeping of the forward phase replayed
 *
 * Every schedule reverses steps n-1..0 in order and accumulates the
 * closed-over cotangents in that order, so gradients are bitwise identical
 * across schedules and executors.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "exec/hop.h"
#include "scan/loop_rt.h"
#include "scan/loop_slow.h"
#include "scan/scan_rt.h"
#include "scan/scan_tier.h"

void rmi_scan_rt_copy_carry_in(scan_rt *r, char *dst, const void *const *src)
{
    rmi_loop_copy_in(&r->c, dst, src, r->c.nc);
}

void rmi_scan_rt_copy_carry_out(scan_rt *r, void *const *dst, const char *src)
{
    rmi_loop_copy_out(&r->c, dst, src, r->c.nc);
}

/* the store a phase holds at its peak (the reverse's includes the forward's) */
static void note_peak(scan_rt *r, int phase)
{
    const scan_phase_cost *c = &r->plan.cost[phase];
    r->c.peak_bytes = rmi_loop_rt_store_bytes(&r->c, c->peak_slots, c->peak_tapes);
}

/* the plan's ops for one phase, or the schedule replayed again (which can
 * run out of memory: recorded for remat_run, the phase not run) */
static void run_phase(scan_rt *r, int phase)
{
    rmi_scan_rt_fail(r, rmi_scan_rt_run_phase(r, phase, r->exec->run, r));
    note_peak(r, phase);
}

/* ---- the three instruction kernels ---- */

/* the consts and, backward (ct_ks), their cotangents' sums: the loop
 * core's (rmi_loop_bind, rmi_loop_finish), then the executor's views */
static void bind(scan_rt *r, const void *const *ks, void *const *ct_ks)
{
    r->ks = ks, r->ct_ks = ct_ks;
    rmi_loop_bind(&r->c, ks, ct_ks != NULL);
    if (r->exec->bind)
        r->exec->bind(r);
}

static void k_scan_primal(const remat_exec_ctx *cx, const remat_instr *I)
{
    scan_rt *r = (scan_rt *)I->aux;
    r->c.cx = cx;
    rmi_scan_tier_run(r);
    const void *const *init = I->in, *const *ks = I->in + r->c.nc + r->nx;
    r->xs = I->in + r->c.nc;
    r->ys = r->c.outs + r->c.nc;
    r->exec->carry_in(r, r->c.cur, init);
    bind(r, ks, NULL);
    if (r->length > 0) {
        const scan_xop all = {.kind = XOP_ADVANCE, .step = 0, .count = r->length};
        r->exec->run(r, &all, 1);
    }
    r->exec->carry_out(r, r->c.outs, r->c.cur);
}

static void k_scan_fwd(const remat_exec_ctx *cx, const remat_instr *I)
{
    scan_rt *r = (scan_rt *)I->aux;
    r->c.cx = cx;
    rmi_scan_tier_run(r);
    const void *const *init = I->in, *const *ks = I->in + r->c.nc + r->nx;
    r->xs = I->in + r->c.nc;
    r->ys = r->c.outs + r->c.nc;
    r->c.store = r->c.outs[r->c.nc + r->ny];
    if (r->c.slow_on) { /* a new store for this run's slow snapshots, reserved in full (loop_slow.c) */
        char what[64 + 512];
        snprintf(what, sizeof what, "scan at %s:%d", r->d->loc.file ? r->d->loc.file : "?", r->d->loc.line);
        if (!rmi_loop_slow_start(&r->c, r->d->slow_extent, r->opts, what))
            return;
    }
    r->exec->carry_in(r, r->c.cur, init);
    bind(r, ks, NULL);
    if (r->lanes.block > 0) { /* the backward runs the schedule; it starts from carry 0, kept in the store */
        rmi_scan_rt_copy_carry_in(r, r->c.store, init);
        const scan_xop all = {.kind = XOP_ADVANCE, .step = 0, .count = r->length};
        r->exec->run(r, &all, 1); /* carry 0 is within the schedule's peak (lower_checkpointed) */
    } else {
        run_phase(r, SCAN_PHASE_FORWARD);
    }
    r->exec->carry_out(r, r->c.outs, r->c.cur);
    if (r->c.slow_on) {
        rmi_loop_slow_put(&r->c, r->c.slow_fd, r->c.slow_hi);
        if (r->c.slow_failed)
            rmi_loop_slow_fail(&r->c, REMAT_ERR_IO, NULL);
    }
}

static void k_scan_bwd(const remat_exec_ctx *cx, const remat_instr *I)
{
    scan_rt *r = (scan_rt *)I->aux;
    r->c.cx = cx;
    rmi_scan_tier_run(r);
    const int nc = r->c.nc, nx = r->nx, nk = r->c.nk;
    const void *const *ks = I->in + 1 + nx, *const *ct_carry = I->in + 1 + nx + nk;
    void *const *ct_ks = r->c.outs + nc + nx;
    r->c.store = (char *)I->in[0];
    r->xs = I->in + 1;
    r->ct_ys = I->in + 1 + nx + nk + nc;
    r->ys = NULL;
    r->ct_xs = r->c.outs + nc;
    if (r->c.slow_on) { /* the forward node's store */
        rmi_loop_slow_get(&r->c);
        if (r->c.slow_fd < 0) {
            rmi_loop_slow_fail(&r->c, REMAT_ERR_IO, NULL);
            return;
        }
    }
    r->exec->carry_in(r, r->c.ct_cur, ct_carry);
    bind(r, ks, ct_ks);
    if (r->lanes.block > 0) {
        /* The whole schedule, block after block (on threads when they
         * allow), from carry 0: the forward node left it at the start of
         * the store, which the blocks' stores then overwrite. A block holds
         * its lanes' share of the schedule's peak store, in its worker's
         * store (scan_exec_lanes.c); the peak reported is the schedule's. */
        for (int i = 0; i < nc; i++)
            r->carry_at[i] = r->c.store + r->c.carry_off[i];
        r->exec->carry_in(r, r->c.cur, r->carry_at);
        r->exec->run_blocks(r);
        note_peak(r, SCAN_PHASE_REVERSE);
    } else {
        run_phase(r, SCAN_PHASE_REVERSE);
    }
    rmi_loop_finish(&r->c, ct_ks);
    r->exec->carry_out(r, r->c.outs, r->c.ct_cur);
    if (r->c.slow_on) { /* the run's store goes (a file with its descriptor) */
        rmi_loop_slow_stop(&r->c);
        if (r->c.slow_failed)
            rmi_loop_slow_fail(&r->c, REMAT_ERR_IO, NULL);
    }
}

/* The evaluations a checkpointed node's share runs: its phase of the
 * schedule; lane-blocked, the forward node's primal pass and the whole
 * schedule in the backward. */
static scan_evals node_evals(const scan_rt *r)
{
    const scan_evals *f = &r->plan.cost[SCAN_PHASE_FORWARD].evals, *b = &r->plan.cost[SCAN_PHASE_REVERSE].evals;
    if (r->lanes.block > 0)
        return r->d->kind == SCAN_FWD ? (scan_evals){.plain = r->length}
                                      : (scan_evals){.plain = f->plain + b->plain, .record = f->record + b->record,
                                                     .reverse = f->reverse + b->reverse};
    return *(r->d->kind == SCAN_FWD ? f : b);
}

/* ---- stats (exec/hop.h) ---- */

/* the largest predicted store among the program's scans, and its sizes */
static void stats_plan(const void *self, remat_memory_plan *plan)
{
    const scan_rt *r = self;
    const remat_scan_data *d = r->d;
    if (r->exec == &rmi_scan_exec_lanes)
        plan->compiled_loops++;
    else if (r->tier_wait)
        plan->deferred_loops++;
    if (r->exec != &rmi_scan_exec_lanes && r->p_unrolled)
        plan->unrolled_loops++;
    if (d->kind == SCAN_PRIMAL) {
        plan->forward_evals += r->c.nested ? 0 : d->length;
        return;
    }
    if (d->kind == SCAN_FWD)
        plan->tier_bytes += (size_t)d->slow_extent * d->carry_bytes;
    const scan_evals e = node_evals(r);
    plan->forward_evals += r->c.nested ? 0 : e.plain + e.record;
    if (r->lanes.block > plan->scan_block_lanes) {
        plan->scan_block_lanes = r->lanes.block;
        plan->scan_block_store_bytes = r->worker_bytes;
    }
    rmi_loop_rt_plan_store(plan, &r->c, d->peak_snapshots, d->peak_tapes);
}

/* ---- lowering ---- */

/* The node's data as the kernels read it, copied into the program's memory:
 * the data belongs to the function's node, and a program must keep working
 * after that function is freed (remat/exec.h asks nothing else of callers).
 * The body functions are only needed here, while lowering, so the copy
 * drops them. NULL when out of memory (what was taken stays the program's). */
static const remat_scan_data *keep_data(const remat_scan_data *d, remat_hop_lowering *L)
{
    const int nin = d->n_carry + d->n_xs + d->n_consts, nout = d->n_carry + d->n_ys;
    remat_scan_data *c = L->alloc(L->ctx, sizeof *c);
    if (!c)
        return NULL;
    *c = *d;
    c->refcount = 0;
    c->body = NULL;
    c->in = L->alloc(L->ctx, sizeof *c->in * (size_t)(nin + 1));
    c->out = L->alloc(L->ctx, sizeof *c->out * (size_t)(nout + 1));
    if (!c->in || !c->out)
        return NULL;
    memcpy(c->in, d->in, sizeof *c->in * (size_t)nin);
    memcpy(c->out, d->out, sizeof *c->out * (size_t)nout);
    if (d->vjp && !(c->vjp = rmi_loop_rt_keep_vjp(d->vjp, L)))
        return NULL;
    return c;
}

/* the sub-programs then only count ops, and their arenas are released */
static void run_elsewhere(scan_rt *r)
{
    remat_program *subs[4] = {r->p_primal, r->c.p_fwd, r->c.p_bwd, r->p_unrolled};
    for (int i = 0; i < 4; i++)
        if (subs[i])
            rmi_program_run_elsewhere(subs[i]);
}

/* the loop core's layout, argument arrays and buffers (the cotangents'
 * too: the lane tables name them in every form), the scan's steps of x_t,
 * y_t and the consts, and which residuals the backward body reads from xs */
static remat_status layout(scan_rt *r, const remat_scan_data *d, remat_hop_lowering *L)
{
    const int nc = d->n_carry, nx = d->n_xs, ny = d->n_ys;
    const loop_core_spec spec = {.carries = d->in, .consts = d->in + nc + nx, .vjp = d->vjp, .n_step_args = nx + ny,
                                 .cotangents = true, .what = "scan", .carry_bytes = d->carry_bytes};
    size_t ksum, ysum = 0;
    remat_status st = rmi_loop_lower_core(&r->c, &spec, L, &ksum);
    if (st != REMAT_OK)
        return st;
    r->carry_at = L->alloc(L->ctx, sizeof *r->carry_at * (size_t)(nc + 1));
    r->x_step = L->alloc(L->ctx, sizeof(size_t) * (size_t)(nx + 1));
    r->y_step = L->alloc(L->ctx, sizeof(size_t) * (size_t)(ny + 1));
    r->res_x = L->alloc(L->ctx, sizeof *r->res_x * 2 * (size_t)(r->c.nres + 1));
    if (!r->carry_at || !r->x_step || !r->y_step || !r->res_x)
        return rmi_error(REMAT_ERR_NOMEM, "scan: out of memory lowering the loop");
    for (int i = 0; i < nx; i++)
        r->x_step[i] = rmi_loop_rt_bytes(&d->in[nc + i]);
    for (int i = 0; i < ny; i++) {
        r->y_step[i] = rmi_loop_rt_bytes(&d->out[nc + i]);
        ysum += rmi_scan_align(r->y_step[i]);
    }
    r->n_res_x = 0;
    for (int j = 0; j < r->c.nres; j++) {
        const int a = d->vjp->res_arg[j];
        if (a >= 0 && a < nc + nx) {
            r->res_x[2 * r->n_res_x] = j;
            r->res_x[2 * r->n_res_x + 1] = a - nc;
            r->n_res_x++;
        }
    }
    r->dummy_y = L->mem(L->ctx, ysum ? ysum : 64);
    if (!r->dummy_y)
        return rmi_error(REMAT_ERR_NOMEM, "scan: out of memory for the loop's carries");
    return REMAT_OK;
}

/* `u` bodies chained: (carries, x_t of u steps step-major, consts) ->
 * (carries, y_t of u steps step-major); each body a call as the plain
 * step's, so the same ops in the same order. NULL when out of memory. */
static remat_fn *unrolled_body(const remat_scan_data *d, int u)
{
    const int nc = d->n_carry, nx = d->n_xs, nk = d->n_consts, ny = d->n_ys;
    remat_fn *f = remat_fn_new("scan_unrolled");
    remat_val *v = rmi_malloc(sizeof *v * (size_t)(nc + u * nx + nk + u * ny + nc + nx + nk + nc + ny + 1));
    if (!f || !v) {
        remat_fn_free(f);
        rmi_free(v);
        return NULL;
    }
    remat_val *in = v, *ys = in + nc + u * nx + nk, *args = ys + u * ny, *outs = args + nc + nx + nk;
    for (int i = 0; i < nc + u * nx + nk; i++) {
        const scan_desc *w = i < nc ? &d->in[i] : i < nc + u * nx ? &d->in[nc + (i - nc) % nx] : &d->in[i - (u - 1) * nx];
        in[i] = remat_arg_at(f, i < nc ? "carry" : i < nc + u * nx ? "x" : "const", w->dt, w->shape.rank, w->shape.dims,
                             d->loc);
    }
    memcpy(args, in, sizeof *args * (size_t)nc);
    memcpy(args + nc + nx, in + nc + u * nx, sizeof *args * (size_t)nk);
    remat_status st = REMAT_OK;
    for (int j = 0; j < u && st == REMAT_OK; j++) {
        if (nx)
            memcpy(args + nc, in + nc + j * nx, sizeof *args * (size_t)nx);
        st = remat_call_at(f, d->body, nc + nx + nk, args, outs, d->loc);
        memcpy(args, outs, sizeof *args * (size_t)nc);
        if (ny)
            memcpy(ys + j * ny, outs + nc, sizeof *ys * (size_t)ny);
    }
    for (int i = 0; i < nc && st == REMAT_OK; i++)
        remat_fn_output_at(f, args[i], d->loc);
    for (int i = 0; i < u * ny && st == REMAT_OK; i++)
        remat_fn_output_at(f, ys[i], d->loc);
    rmi_free(v);
    if (st != REMAT_OK || remat_fn_status(f) != REMAT_OK) {
        remat_fn_free(f);
        return NULL;
    }
    return f;
}

/* the interpreter's unrolled plain step (remat_scan_options.unroll) */
static remat_status lower_unrolled(scan_rt *r, const remat_scan_data *d, remat_hop_lowering *L)
{
    const int u = d->unroll, nc = d->n_carry, nx = d->n_xs, nk = d->n_consts, ny = d->n_ys;
    if (u <= 1 || d->length < u)
        return REMAT_OK;
    size_t ysum = 0;
    for (int i = 0; i < ny; i++)
        ysum += rmi_scan_align(r->y_step[i]);
    r->unroll = u;
    r->u_in = L->alloc(L->ctx, sizeof *r->u_in * (size_t)(nc + u * nx + nk + 1));
    r->u_out = L->alloc(L->ctx, sizeof *r->u_out * (size_t)(nc + u * ny + 1));
    r->u_dummy_y = L->mem(L->ctx, ysum ? ysum * (size_t)u : 64);
    remat_fn *f = r->u_in && r->u_out && r->u_dummy_y ? unrolled_body(d, u) : NULL;
    if (!f)
        return rmi_error(REMAT_ERR_NOMEM, "scan: out of memory unrolling the loop's body %d times", u);
    remat_status st = rmi_loop_compile_sub(f, true, L, &r->p_unrolled);
    remat_fn_free(f);
    return st;
}

static remat_status lower_primal(scan_rt *r, const remat_scan_data *d, remat_hop_lowering *L, remat_instr *ins)
{
    remat_status st = REMAT_OK;
    const bool lanes = d->length > 0 && rmi_scan_rt_use_lanes(r, d, L, LK_ADVANCE, false);
    if (d->length > 0) /* shared with the root's loops of the same body unless run elsewhere */
        st = rmi_loop_compile_sub(d->body, !lanes, L, &r->p_primal);
    if (st == REMAT_OK && !lanes)
        st = lower_unrolled(r, d, L);
    ins->fn = k_scan_primal;
    if (st == REMAT_OK && lanes) {
        run_elsewhere(r);
        r->exec = &rmi_scan_exec_lanes;
    }
    return st;
}

static remat_status lower_checkpointed(scan_rt *r, const remat_scan_data *d, remat_hop_lowering *L,
                                       remat_instr *ins)
{
    remat_status st = rmi_scan_plan_build(d, &r->plan, r->opts->scan_plan_max_ops, L->alloc, L->ctx);
    if (st != REMAT_OK)
        return st;
    /* Every kernel of the body is compiled with the forward node's, in one
     * compilation (libgccjit's cost is mostly per compilation): the backward
     * node then finds its own in the backend's cache. Both nodes decide on
     * lane blocks alike (the same data, environment and store). A scan in
     * another's body runs once per outer step, and carry 0 in its store
     * would not survive until its backward: never blocked. Nor when carry 0
     * would hold more of the store than the schedule's peak. */
    const unsigned all = LK_ADVANCE | LK_ADVANCE_SHOT | LK_TAPE | LK_REVERSE | LK_RECOMPUTE;
    const size_t peak = rmi_loop_rt_store_bytes(&r->c, d->peak_snapshots, d->peak_tapes);
    if (d->slow_extent > 0) { /* the slow tier: interpreted, a file or a device's host memory (loop_slow.c) */
        r->c.slow_on = true;
        r->c.slow0 = d->sched.snapshots;
        r->c.slow_fd = -1;
    }
    const bool lanes = !r->c.slow_on && rmi_scan_rt_use_lanes(r, d, L, all, !r->c.nested && peak >= d->carry_bytes);
    const scan_evals ev = node_evals(r);
    /* the sub-programs: shared with the root's loops of the same bodies
     * (loop_lower.c) unless the compiled loops run them elsewhere */
    if (ev.plain > 0)
        st = rmi_loop_compile_sub(d->body, !lanes, L, &r->p_primal);
    if (st == REMAT_OK && ev.plain > 0 && !lanes)
        st = lower_unrolled(r, d, L);
    if (st == REMAT_OK && ev.record > 0)
        st = rmi_loop_compile_sub(d->vjp->fwd, !lanes, L, &r->c.p_fwd);
    if (st == REMAT_OK && ev.reverse > 0)
        st = rmi_loop_compile_sub(d->vjp->bwd, !lanes, L, &r->c.p_bwd);
    if (st == REMAT_OK && d->kind == SCAN_BWD) /* the backend's add for each const's cotangent (interpreted) */
        st = rmi_loop_rt_lower_k_adds(d->in + r->c.nc + r->nx, r->c.nk, "scan", L, &r->c.k_add);
    if (st != REMAT_OK)
        return st;
    ins->fn = d->kind == SCAN_FWD ? k_scan_fwd : k_scan_bwd;
    if (lanes) {
        run_elsewhere(r);
        r->exec = &rmi_scan_exec_lanes;
    }
    return REMAT_OK;
}

remat_status rmi_scan_lower(void *data, remat_hop_lowering *L, remat_instr *ins)
{
    remat_scan_data *d = data;
    scan_rt *r = L->alloc(L->ctx, sizeof *r);
    if (!r)
        return rmi_error(REMAT_ERR_NOMEM, "scan: out of memory lowering the loop");
    *r = (scan_rt){.d = keep_data(d, L), .opts = &L->counters->opts, .c = {.be = L->be, .outs = L->outs, .nested = L->nested},
                    .exec = &rmi_scan_exec_interp};
    r->c.nc = d->n_carry, r->nx = d->n_xs, r->c.nk = d->n_consts, r->ny = d->n_ys;
    r->c.nres = d->vjp ? d->vjp->n_res : 0;
    r->reverse = d->reverse;
    r->length = d->length;
    if (!r->d)
        return rmi_error(REMAT_ERR_NOMEM, "scan: out of memory lowering the loop");
    /* the loop core (loop_rt.h): the consts after the carries and x_t, the
     * taped residuals after carry' and y_t, every store item of the node's */
    r->c.kind = &rmi_scan_loop_kind;
    r->c.k_in0 = r->c.k_out0 = r->c.nc + r->nx;
    r->c.res_out0 = r->c.nc + r->ny;
    r->c.carry_desc = r->d->in;
    r->c.k_desc = &r->d->in[r->c.nc + r->nx];
    r->c.vjp = r->d->vjp;
    r->c.carry_bytes = r->d->carry_bytes;
    r->c.tapes_off = (size_t)r->d->ram_slots * r->d->carry_bytes;
    r->c.slow_words = d->slow_extent > 0 ? d->store_bytes - 16 : 0; /* scan_vjp.c's size_store */
    r->c.slow_bwd = d->kind == SCAN_BWD;
    remat_status st = layout(r, d, L);
    if (st == REMAT_OK)
        st = d->kind == SCAN_PRIMAL ? lower_primal(r, d, L, ins) : lower_checkpointed(r, d, L, ins);
    if (st != REMAT_OK)
        return st;
    ins->aux = r;
    const remat_hop_stats hook = {.begin_run = rmi_loop_stats_begin, .report_run = rmi_loop_stats_run,
                                  .report_plan = stats_plan, .run_status = rmi_loop_stats_status,
                                  .run_error = rmi_loop_stats_error, .release = rmi_loop_stats_release, .self = r};
    return rmi_hop_stats_add(L->counters, &hook);
}

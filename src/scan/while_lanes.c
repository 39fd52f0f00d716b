/*
 * while_lanes.c — a while node's compiled lane loops (while_rt.h,
 * while_lanes): the loop's step and body as scans for the scan's lane
 * translator, the EXIT that ends a step run when cond fails, and when to
 * compile (the tier policy of scan_tier.h: REMAT_JIT=always|never|auto).
 *
 * The length of a while loop is not known when it is lowered, so "auto"
 * cannot weigh one run's work against the compile as a scan does: code at
 * hand (this process's or the disk's cache) is taken at once; otherwise
 * the node is interpreted, timing its runs (an interpreted iteration costs
 * several times a scan step's per-instruction share: the cond program, the
 * flag read back, the select), and compiles at the start of the run after
 * their time passed the compile's estimate (rent or buy, as a scan that
 * waits).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/lane_io.h"
#include "core/alloc.h"
#include "core/assert.h"
#include "core/config.h"
#include "lanes/lanes.h"
#include "scan/scan_tier.h"
#include "scan/while_rt.h"

/* step(carry..., consts...) -> (carry'..., accepted, keep): an iteration as
 * the loop takes it (the select the interpreter does by copying back the
 * n_diff carries, then cond on the result). NULL when it cannot be built. */
static remat_fn *step_fn(const remat_while_data *d)
{
    const int nc = d->n_carry, nd = d->n_diff, na = nc + d->n_consts;
    remat_fn *w = remat_fn_new("while_step");
    remat_val *a = rmi_malloc(sizeof *a * (size_t)(na + 1)), *o = rmi_malloc(sizeof *o * (size_t)(nc + 2));
    remat_val *c = rmi_malloc(sizeof *c * (size_t)(na + 1)), keep = REMAT_NONE;
    bool ok = w && a && o && c;
    for (int i = 0; ok && i < na; i++) {
        const remat_node *n = rmi_fn_node(d->body, remat_fn_arg(d->body, i));
        a[i] = remat_arg(w, n->name, (remat_dtype)n->dtype, n->shape.rank, n->shape.dims);
    }
    ok = ok && remat_call(w, d->body, na, a, o) == REMAT_OK;
    for (int i = 0; ok && i < na; i++)
        c[i] = i < nd ? remat_select(w, o[nc], o[i], a[i]) : i < nc ? o[i] : a[i];
    ok = ok && remat_call(w, d->cond, na, c, &keep) == REMAT_OK;
    for (int i = 0; ok && i < nc; i++)
        remat_fn_output(w, c[i]);
    if (ok) {
        remat_fn_output(w, o[nc]);
        remat_fn_output(w, keep);
    }
    ok = ok && remat_fn_status(w) == REMAT_OK;
    rmi_free(a), rmi_free(o), rmi_free(c);
    if (!ok) {
        remat_fn_free(w);
        return NULL;
    }
    return w;
}

/* the loop as a scan without xs: body, carries and consts, ys the flags */
static lanes_loop as_scan(const remat_while_data *d, remat_fn *body, scan_body_vjp *vjp, scan_desc *out, int n_ys)
{
    const int nc = d->n_carry;
    memcpy(out, d->in, sizeof *out * (size_t)nc);
    out[nc] = (scan_desc){.dt = d->acc_dt};
    out[nc + 1] = (scan_desc){.dt = d->cond_dt};
    return (lanes_loop){.body = body, .length = d->max_steps, .n_carry = nc, .n_consts = d->n_consts, .n_ys = n_ys,
                        .in = d->in, .out = out, .vjp = vjp};
}

/* Ends the step's ADVANCE with an EXIT on keep (Y 1) into a buffer of its
 * own, after the scan's; false when out of memory. */
static bool add_exit(while_lanes *W, remat_hop_lowering *L)
{
    remat_lane_program *p = rmi_tier_prog(&W->step, LKI_ADVANCE);
    const int keep_buf = W->step.base[LB_Y] + 1;
    int32_t keep = -1;
    for (int i = 0; i < p->n_ins; i++)
        if (p->ins[i].kind == REMAT_LANE_STORE && p->ins[i].buf == keep_buf)
            keep = p->ins[i].a;
    REMAT_ASSERT(keep >= 0);
    remat_lane_ins *ins = L->alloc(L->ctx, sizeof *ins * (size_t)(p->n_ins + 1));
    remat_lane_buf *bufs = L->alloc(L->ctx, sizeof *bufs * (size_t)(p->n_bufs + 1));
    if (!ins || !bufs)
        return false;
    memcpy(ins, p->ins, sizeof *ins * (size_t)p->n_ins);
    memcpy(bufs, p->bufs, sizeof *bufs * (size_t)p->n_bufs);
    W->exit_buf = p->n_bufs;
    bufs[W->exit_buf] = (remat_lane_buf){.dt = REMAT_F64};
    ins[p->n_ins] = (remat_lane_ins){.kind = REMAT_LANE_EXIT, .dt = REMAT_F64, .a = keep, .b = -1, .c = -1,
                                     .buf = W->exit_buf};
    p->ins = ins, p->bufs = bufs;
    p->n_ins++, p->n_bufs++;
    W->step.n_ins++;
    return true;
}

/* Translates the views (step always, body for FWD/BWD); false when the
 * loop has no lane form with one lane, or out of memory. */
static bool translate(while_lanes *W, const remat_while_data *d, remat_hop_lowering *L)
{
    const int nc = d->n_carry;
    scan_desc *out = L->alloc(L->ctx, sizeof *out * (size_t)(nc + 2));
    remat_fn *step = out ? step_fn(d) : NULL;
    if (!step)
        return false;
    lanes_loop s = as_scan(d, step, NULL, out, 2);
    bool ok = rmi_lanes_build(&s, L->be, LK_ADVANCE | LK_ADVANCE_SHOT, &W->step, L->alloc, L->ctx) &&
              W->step.m == 1;
    remat_fn_free(step);
    if (ok && d->kind != WHILE_PRIMAL) {
        scan_desc *bout = L->alloc(L->ctx, sizeof *bout * (size_t)(nc + 2));
        lanes_loop b = bout ? as_scan(d, d->body, d->vjp, bout, 1) : (lanes_loop){0};
        ok = bout && rmi_lanes_build(&b, L->be, LK_TAPE | LK_REVERSE | LK_RECOMPUTE, &W->body, L->alloc,
                                          L->ctx) &&
             W->body.m == 1;
    }
    return ok && add_exit(W, L);
}

/* The translation's inputs (lanes/lanes.h): what translate reads of d. */
static lanes_key while_key(const remat_while_data *d, const remat_backend *be)
{
    lanes_key k = {.ok = true};
    const int64_t head[9] = {2 /* a while loop */, (int64_t)(uintptr_t)be, d->kind != WHILE_PRIMAL,
                             d->max_steps == 0, d->n_carry, d->n_diff, d->n_consts, d->acc_dt, d->cond_dt};
    rmi_lanes_key_put(&k, head, sizeof head);
    rmi_lanes_key_descs(&k, d->in, d->n_carry + d->n_consts);
    rmi_lanes_key_fn(&k, d->body);
    rmi_lanes_key_fn(&k, d->cond);
    rmi_lanes_key_vjp(&k, d->kind != WHILE_PRIMAL ? d->vjp : NULL);
    return k;
}

/* every program of the two views, step's first */
static int all_programs(const while_lanes *W, const remat_lane_program **pp)
{
    int n = 0;
    for (int i = 0; i < W->step.n_progs; i++)
        pp[n++] = &W->step.progs[i];
    for (int i = 0; i < W->body.n_progs; i++)
        pp[n++] = &W->body.progs[i];
    return n;
}

typedef struct {
    while_lanes *W;
    const remat_while_data *d;
    remat_hop_lowering *L;
} while_translation;

static bool translate_views(void *ctx, lanes_memo_val *out)
{
    const while_translation *t = ctx;
    while_lanes *W = t->W;
    if (!translate(W, t->d, t->L))
        return false;
    const remat_lane_program *pp[2 * LKI_COUNT];
    W->pool_key = rmi_lane_programs_hash(all_programs(W, pp), pp);
    *out = (lanes_memo_val){.view = {W->step, W->body}, .n_views = t->d->kind != WHILE_PRIMAL ? 2 : 1,
                            .exit_buf = W->exit_buf, .pool_key = W->pool_key};
    return true;
}

/* translate, or take the process's kept translation of the same loop */
static bool translate_shared(while_lanes *W, const remat_while_data *d, remat_hop_lowering *L)
{
    lanes_key k = while_key(d, L->be);
    lanes_memo_val v;
    if (!rmi_lanes_translate_kept(&k, translate_views, &(while_translation){W, d, L}, &v, &W->memo))
        return false;
    W->step = v.view[0];
    if (v.n_views > 1)
        W->body = v.view[1];
    W->exit_buf = v.exit_buf;
    W->pool_key = v.pool_key;
    return true;
}

/* The code of every program, in one compilation (or from the caches). */
static bool get_code(while_lanes *W, remat_backend *be, const char *cache_dir, bool compile)
{
    scan_lanes *const views[2] = {&W->step, &W->body};
    return rmi_lanes_get_views(views, 2, W->memo, be, cache_dir, compile) == REMAT_OK;
}

static void say(const while_rt *r, const char *what)
{
    rmi_tier_say("%s (%s, %lld instructions): %.3g ms interpreted so far, compiling ~%.3g ms: %s", r->d->label,
                 r->d->kind == WHILE_PRIMAL ? "primal" : r->d->kind == WHILE_FWD ? "forward" : "backward",
                 (long long)(r->wl.step.n_ins + r->wl.body.n_ins), r->wl.spent_ns / 1e6, r->wl.cost_ns / 1e6, what);
}

/* the buffers the kernels use besides the store and the node's own */
static bool lane_buffers(while_lanes *W, remat_hop_lowering *L)
{
    const int ns = W->exit_buf + 1, nb = W->body.base[LB_KINDS];
    W->sp = L->alloc(L->ctx, sizeof *W->sp * (size_t)(ns + 1));
    W->ss = L->alloc(L->ctx, sizeof *W->ss * (size_t)(ns + 1));
    W->bp = L->alloc(L->ctx, sizeof *W->bp * (size_t)(nb + 1));
    W->bs = L->alloc(L->ctx, sizeof *W->bs * (size_t)(nb + 1));
    W->flags = L->mem(L->ctx, sizeof(double) * WHILE_LANES_CHUNK);
    W->keep = L->mem(L->ctx, 16);
    W->exit_cell = L->mem(L->ctx, 16);
    W->dummy = L->mem(L->ctx, 16);
    W->zero = L->mem(L->ctx, 16);
    if (!W->sp || !W->ss || !W->bp || !W->bs || !W->flags || !W->keep || !W->exit_cell || !W->dummy || !W->zero)
        return false;
    memset(W->sp, 0, sizeof *W->sp * (size_t)ns), memset(W->ss, 0, sizeof *W->ss * (size_t)ns);
    memset(W->bp, 0, sizeof *W->bp * (size_t)(nb + 1)), memset(W->bs, 0, sizeof *W->bs * (size_t)(nb + 1));
    L->be->iface.mem_fill(&L->counters->compile_cx, W->zero, REMAT_F64, 0.0,
                          2); /* at lowering: the compile's context */
    return true;
}

remat_status rmi_while_lanes_lower(while_rt *r, const remat_while_data *d, remat_hop_lowering *L)
{
    while_lanes *W = &r->wl;
    *W = (while_lanes){0};
    const scan_jit_mode mode = rmi_scan_jit_mode(&L->counters->opts);
    if (mode == SCAN_JIT_NEVER || !L->be->iface.compile_lanes || !L->be->iface.can_compile_lanes())
        return REMAT_OK;
    if (!translate_shared(W, d, L) || !lane_buffers(W, L)) {
        *W = (while_lanes){0};
        return REMAT_OK; /* no lane form, or out of memory for it: interpreted, the same bits */
    }
    const remat_lane_program *pp[2 * LKI_COUNT];
    const int n = all_programs(W, pp);
    rmi_lane_dump(n, pp); /* REMAT_DUMP_LANES: with the EXIT */
    /* gcc's cost is the backend's model (scan_tier.c weighs scans by it) */
    const bool weigh = L->be->iface.load_lanes && L->be->iface.lanes_compile_ns;
    W->cost_ns = weigh ? L->be->iface.lanes_compile_ns(n, pp) : 0;
    if (mode == SCAN_JIT_ALWAYS || !weigh) {
        W->on = get_code(W, L->be, rmi_lane_cache_dir(&L->counters->opts), true);
        say(r, W->on ? "compiled" : "compiling failed, interpreted");
    } else if (get_code(W, L->be, rmi_lane_cache_dir(&L->counters->opts), false)) {
        W->on = true;
        say(r, "loaded from the cache");
    } else {
        W->wait = true;
        W->pool = rmi_tier_pool_for(W->pool_key);
        say(r, "interpreted until its body's runs have done that much work");
    }
    return REMAT_OK;
}

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

void rmi_while_lanes_tier_run(while_rt *r)
{
    while_lanes *W = &r->wl;
    if (!W->wait)
        return;
    if ((W->pool ? rmi_tier_pool_add(W->pool, 0) : W->spent_ns) < W->cost_ns) {
        W->start_ns = now_ns();
        return;
    }
    W->wait = false;
    W->on = get_code(W, r->c.be, rmi_lane_cache_dir(r->opts), true);
    say(r, W->on ? "compiled now" : "compiling failed, interpreted");
}

void rmi_while_lanes_tier_done(while_rt *r)
{
    if (!r->wl.wait)
        return;
    const double ns = now_ns() - r->wl.start_ns;
    if (r->wl.pool)
        rmi_tier_pool_add(r->wl.pool, ns);
    else
        r->wl.spent_ns += ns;
}

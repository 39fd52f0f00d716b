/*
 * translate.c — translates a loop body (a scan's, or a while loop's seen as
 * a scan) and its VJP halves into lane programs (backend/lane.h), one kernel
 * per loop action, and has the backend compile them (lanes.h). The builder
 * is builder.c, the ops emit.c (builder_impl.h).
 *
 * The lane axis. With m > 1, a value's lane axis is the one axis of size m
 * in its shape (none: the value is the same for every lane; two: the body
 * does not fit). A value is then a set of entries — its elements with the
 * lane coordinate removed, in row-major order — each a scalar register per
 * lane. Structural ops (reshape, slice, concatenate, pad, broadcast,
 * transpose) only route entries, checked to keep every lane on its own
 * lane; elementwise ops become one scalar op per entry. With m = 1 every
 * element is an entry (small states: an ODE right-hand side). Candidates for
 * m are the sizes of the carries' axes, largest first, then 1.
 *
 * Sums: within a lane, as chains of adds in the CPU kernel's order; across
 * the lanes (the lane axis first among the summed axes, e.g. the cotangent
 * of a constant the whole batch shares), as a per-step sum the loop adds to
 * lane after lane, whose result only instructions after the lanes may read
 * (backend/lane.h) — a body that feeds such a sum back into the lanes (a
 * batch mean) is not translated. Maxima (reduce_max) within a lane only,
 * in the CPU kernel's order and with its IEEE maximum (+0 above -0, NaN
 * propagates): as the adaptive controller's NaN test needs.
 *
 * lu and linear_solve of n <= 8 are unrolled (solve.c), one
 * system per batch entry, the lane axis a batch axis of the operands.
 *
 * Not translated (the body is interpreted instead): dot_general, custom ops,
 * nested scans, non-splat constants along the lane axis, empty values, the
 * case above, and programs over LANES_MAX_INS instructions.
 */
#include <stdlib.h>
#include <string.h>

#include "ad/node.h"
#include "core/alloc.h"
#include "core/arena.h"
#include "core/assert.h"
#include "backend/lane_io.h"
#include "lanes/builder_impl.h"
#include "lanes/lanes.h"
#include "lanes/lanes_impl.h"

/* ---- the kernels ---- */

typedef struct {
    const lanes_loop *d;
    int nc, nx, nk, ny, nt;
    int base[LB_KINDS + 1];
    bool packed; /* CARRY and CT with the lane axis last (lanes.h) */
} layout;

static int buf_of(const layout *L, int kind, int i) { return L->base[kind] + i; }

/* the body's argument values: carries from `carry_kind` (-1: none), x_t, consts */
static void body_args(lb *b, const layout *L, int carry_kind, lval **args)
{
    const lanes_loop *d = L->d;
    for (int i = 0; i < L->nc && carry_kind >= 0; i++)
        args[i] = rmi_lb_load(b, buf_of(L, carry_kind, i), d->in[i].dt, &d->in[i].shape);
    for (int i = 0; i < L->nx; i++)
        args[L->nc + i] = rmi_lb_load(b, buf_of(L, LB_X, i), d->in[L->nc + i].dt, &d->in[L->nc + i].shape);
    for (int i = 0; i < L->nk; i++)
        args[L->nc + L->nx + i] =
            rmi_lb_load(b, buf_of(L, LB_K, i), d->in[L->nc + L->nx + i].dt, &d->in[L->nc + L->nx + i].shape);
}

/* the backward half, given the residual values; accumulates CTK */
static void emit_backward(lb *b, const layout *L, lval **res)
{
    const lanes_loop *d = L->d;
    const scan_body_vjp *V = d->vjp;
    const int nres = V->n_res, nc = L->nc, nx = L->nx, nk = L->nk, ny = L->ny;
    lval **args = rmi_calloc((size_t)(nres + nc + ny + 1), sizeof *args);
    lval **outs = rmi_calloc((size_t)(nc + nx + nk + 1), sizeof *outs);
    lval **acc = rmi_calloc((size_t)(nk + 1), sizeof *acc);
    if (!args || !outs || !acc)
        b->ok = 0;
    for (int j = 0; b->ok && j < nres; j++)
        args[j] = res[j];
    for (int i = 0; b->ok && i < nc; i++)
        args[nres + i] = rmi_lb_load(b, buf_of(L, LB_CT, i), d->in[i].dt, &d->in[i].shape);
    for (int i = 0; b->ok && i < ny; i++)
        args[nres + nc + i] = rmi_lb_load(b, buf_of(L, LB_CTY, i), d->out[nc + i].dt, &d->out[nc + i].shape);
    for (int i = 0; b->ok && i < nk; i++)
        acc[i] = rmi_lb_load(b, buf_of(L, LB_CTK, i), d->in[nc + nx + i].dt, &d->in[nc + nx + i].shape);
    if (b->ok)
        rmi_lb_emit_fn(b, V->bwd, args, outs);
    for (int i = 0; b->ok && i < nc; i++)
        rmi_lb_store(b, buf_of(L, LB_CT, i), outs[i]);
    for (int i = 0; b->ok && i < nx; i++)
        rmi_lb_store(b, buf_of(L, LB_CTX, i), outs[nc + i]);
    for (int i = 0; b->ok && i < nk; i++) {
        const lval *c = outs[nc + nx + i];
        lval *s = rmi_lb_new_val(b, c->dt, &c->shape);
        if (!s || !acc[i] || c->lane != acc[i]->lane) {
            b->ok = 0;
            break;
        }
        for (int64_t e = 0; e < s->n; e++)
            s->reg[e] = rmi_lb_op3(b, REMAT_OP_ADD, s->dt, acc[i]->reg[e], c->reg[e], -1, 0.0);
        rmi_lb_store(b, buf_of(L, LB_CTK, i), s);
    }
    rmi_free(args), rmi_free(outs), rmi_free(acc);
}

/* residual values for the backward: taped ones from `tape_vals` (tape order),
 * x_t and consts from their arguments */
static void residuals(const layout *L, lval **args, lval **tape_vals, lval **res)
{
    const scan_body_vjp *V = L->d->vjp;
    for (int j = 0, t = 0; j < V->n_res; j++)
        res[j] = V->res_arg[j] < 0 ? tape_vals[t++] : args[V->res_arg[j]];
}

static void emit_kernel(lb *b, const layout *L, unsigned which)
{
    const lanes_loop *d = L->d;
    const int nc = L->nc, ny = L->ny, nin = nc + L->nx + L->nk;
    const int nres = d->vjp ? d->vjp->n_res : 0;
    lval **args = rmi_calloc((size_t)nin + 1, sizeof *args);
    lval **outs = rmi_calloc((size_t)(nc + ny + nres) + 1, sizeof *outs);
    lval **res = rmi_calloc((size_t)nres + 1, sizeof *res);
    if (!args || !outs || !res) {
        b->ok = 0;
        goto out;
    }
    switch (which) {
    case LK_ADVANCE:
    case LK_ADVANCE_SHOT:
        body_args(b, L, LB_CARRY, args);
        if (which == LK_ADVANCE_SHOT)
            for (int i = 0; i < nc; i++)
                rmi_lb_store(b, buf_of(L, LB_SHOT, i), args[i]);
        if (b->ok)
            rmi_lb_emit_fn(b, d->body, args, outs);
        for (int i = 0; b->ok && i < nc + ny; i++)
            rmi_lb_store(b, i < nc ? buf_of(L, LB_CARRY, i) : buf_of(L, LB_Y, i - nc), outs[i]);
        break;
    case LK_TAPE:
        body_args(b, L, LB_CARRY, args);
        if (b->ok)
            rmi_lb_emit_fn(b, d->vjp->fwd, args, outs);
        for (int i = 0; b->ok && i < nc + ny; i++)
            rmi_lb_store(b, i < nc ? buf_of(L, LB_CARRY, i) : buf_of(L, LB_Y, i - nc), outs[i]);
        for (int t = 0; b->ok && t < L->nt; t++)
            rmi_lb_store(b, buf_of(L, LB_TAPE, t), outs[nc + ny + t]);
        break;
    case LK_REVERSE: {
        body_args(b, L, -1, args); /* x_t and consts: residuals that are not taped */
        lval **tv = outs;           /* the tape entries */
        for (int t = 0; b->ok && t < L->nt; t++) {
            const remat_node *o = rmi_fn_node(d->vjp->fwd, remat_fn_out(d->vjp->fwd, nc + ny + t));
            tv[t] = rmi_lb_load(b, buf_of(L, LB_TAPE, t), (remat_dtype)o->dtype, &o->shape);
        }
        residuals(L, args, tv, res);
        if (b->ok)
            emit_backward(b, L, res);
        break;
    }
    case LK_RECOMPUTE:
        body_args(b, L, LB_SHOT, args);
        if (b->ok)
            rmi_lb_emit_fn(b, d->vjp->fwd, args, outs);
        if (b->ok) {
            residuals(L, args, outs + nc + ny, res);
            emit_backward(b, L, res);
        }
        break;
    case LK_PACK:   /* SHOT (the caller's layout) -> CARRY (packed) */
    case LK_UNPACK: /* CARRY -> SHOT */
        for (int i = 0; b->ok && i < nc; i++) {
            const int from = which == LK_PACK ? LB_SHOT : LB_CARRY, to = which == LK_PACK ? LB_CARRY : LB_SHOT;
            rmi_lb_store(b, buf_of(L, to, i), rmi_lb_load(b, buf_of(L, from, i), d->in[i].dt, &d->in[i].shape));
        }
        break;
    default: REMAT_UNREACHABLE("scan lanes: unknown kernel");
    }
out:
    rmi_free(args), rmi_free(outs), rmi_free(res);
}

static void lb_reset(lb *b, int64_t m)
{
    b->n = b->n_st = 0;
    b->m = m;
    b->ok = 1;
    rmi_arena_clear(&b->mem);
}

/* Packed carries: the element at coordinates c (lane coordinate 0) of a
 * CARRY or CT buffer moves from its place in the carry's shape to (c's
 * index among the entries) * m, the lanes following at stride 1, a
 * structure of arrays whatever the caller's layout. */
static void pack_offsets(const layout *L, int64_t m, remat_lane_ins *ins, int n)
{
    for (int i = 0; i < n; i++) {
        remat_lane_ins *I = &ins[i];
        int c = -1;
        if (I->kind == REMAT_LANE_LOAD || I->kind == REMAT_LANE_STORE) {
            if (I->buf >= L->base[LB_CARRY] && I->buf < L->base[LB_CARRY] + L->nc)
                c = I->buf - L->base[LB_CARRY];
            else if (I->buf >= L->base[LB_CT] && I->buf < L->base[LB_CT] + L->nc)
                c = I->buf - L->base[LB_CT];
        }
        if (c < 0)
            continue;
        const remat_shape *s = &L->d->in[c].shape;
        int ok = 1;
        const int lane = rmi_lb_lane_axis(s, m, &ok);
        REMAT_ASSERT(lane >= 0 && I->lstride == rmi_lb_lane_stride(s, lane)); /* carries are on the lanes */
        int64_t co[REMAT_MAX_RANK], f = I->off;
        for (int k = s->rank - 1; k >= 0; k--)
            co[k] = f % s->dims[k], f /= s->dims[k];
        I->off = rmi_lb_coords_entry(s, lane, co) * m;
        I->lstride = 1;
    }
}

/* Translates one kernel into a program of its own (instructions copied out
 * of the builder, which the next kernel reuses). 0 when it does not fit. */
static int translate_kernel(lb *b, const layout *L, unsigned which, remat_lane_program *p)
{
    lb_reset(b, b->m);
    emit_kernel(b, L, which);
    for (int i = 0; b->ok && i < b->n_st; i++) /* the stores come last */
        rmi_lb_push(b, b->st[i]);
    remat_lane_ins *ins = b->ok ? rmi_malloc(sizeof *ins * (size_t)b->n) : NULL;
    if (!ins)
        return 0;
    memcpy(ins, b->ins, sizeof *ins * (size_t)b->n);
    if (L->packed)
        pack_offsets(L, b->m, ins, b->n);
    *p = (remat_lane_program){.m = b->m, .n_ins = b->n, .ins = ins, .n_bufs = b->n_bufs, .bufs = b->bufs};
    return 1;
}

/* Every carry must be on the lanes (a carry without one would be updated by
 * every lane); with m = 1 there is nothing to check. */
static int carries_on_lanes(const lanes_loop *d, int64_t m)
{
    for (int i = 0; m > 1 && i < d->n_carry; i++) {
        int ok = 1;
        if (rmi_lb_lane_axis(&d->in[i].shape, m, &ok) < 0 || !ok)
            return 0;
    }
    return 1;
}

int rmi_lanes_build(const lanes_loop *d, remat_backend *be, unsigned want, scan_lanes *out,
                         void *(*alloc)(void *ctx, size_t bytes), void *ctx)
{
    memset(out, 0, sizeof *out);
    if (!be->iface.compile_lanes || !be->iface.can_compile_lanes() || !want || d->length == 0)
        return 0;
    if ((want & (LK_TAPE | LK_REVERSE | LK_RECOMPUTE)) && !d->vjp)
        return 0;
    layout L = {.d = d, .nc = d->n_carry, .nx = d->n_xs, .nk = d->n_consts, .ny = d->n_ys};
    const int nres = d->vjp ? d->vjp->n_res : 0;
    for (int j = 0; j < nres; j++)
        L.nt += d->vjp->res_arg[j] < 0;
    const int count[LB_KINDS] = {[LB_CARRY] = L.nc, [LB_X] = L.nx, [LB_K] = L.nk, [LB_Y] = L.ny, [LB_SHOT] = L.nc,
                                 [LB_TAPE] = L.nt, [LB_CT] = L.nc, [LB_CTY] = L.ny, [LB_CTX] = L.nx, [LB_CTK] = L.nk};
    for (int k = 0; k < LB_KINDS; k++)
        L.base[k + 1] = L.base[k] + count[k];
    lb b = {.n_bufs = L.base[LB_KINDS]};
    b.bufs = rmi_calloc((size_t)b.n_bufs + 1, sizeof *b.bufs);
    int ok = b.bufs != NULL;
    for (int k = 0; ok && k < LB_KINDS; k++)
        for (int i = 0; i < count[k]; i++) {
            remat_lane_buf *B = &b.bufs[L.base[k] + i];
            const int nc = L.nc, nx = L.nx;
            switch (k) {
            case LB_CARRY: case LB_SHOT: case LB_CT: B->dt = (uint8_t)d->in[i].dt; break;
            case LB_X: case LB_CTX: B->dt = (uint8_t)d->in[nc + i].dt; break;
            case LB_K: case LB_CTK: B->dt = (uint8_t)d->in[nc + nx + i].dt; break;
            case LB_Y: case LB_CTY: B->dt = (uint8_t)d->out[nc + i].dt; break;
            case LB_TAPE:
                B->dt = rmi_fn_node(d->vjp->fwd, remat_fn_out(d->vjp->fwd, nc + L.ny + i))->dtype;
                break;
            }
            B->state = k == LB_CARRY || k == LB_CT || k == LB_CTK;
        }
    int64_t cand[2 * REMAT_MAX_RANK * 4 + 1];
    const int64_t nm = ok ? rmi_lanes_candidates(d, cand) : 0;
    ok = 0;
    for (int64_t q = 0; q < nm && !ok; q++) {
        if (!carries_on_lanes(d, cand[q]))
            continue;
        b.m = cand[q];
        /* interleaved carries ((B,3)) are packed, so that the kernels
         * vectorise as for (3,B); PACK / UNPACK move them */
        L.packed = false;
        for (int i = 0; b.m > 1 && i < L.nc; i++) {
            int okl = 1;
            L.packed |= rmi_lb_lane_stride(&d->in[i].shape, rmi_lb_lane_axis(&d->in[i].shape, b.m, &okl)) != 1;
        }
        const unsigned kernels = want | (L.packed ? LK_PACK | LK_UNPACK : 0);
        scan_lanes S = {.m = b.m, .packed = L.packed};
        remat_lane_program progs[LKI_COUNT];
        const remat_lane_program *pp[LKI_COUNT];
        int n = 0, fits = 1;
        for (int k = 0; fits && k < LKI_COUNT; k++)
            if (kernels & (1u << k)) {
                fits = translate_kernel(&b, &L, 1u << k, &progs[n]);
                pp[n] = &progs[n];
                n += fits;
            }
        int64_t *lane_bytes = fits ? alloc(ctx, sizeof *lane_bytes * (size_t)(b.n_bufs + 1)) : NULL;
        if (lane_bytes)
            memset(lane_bytes, 0, sizeof *lane_bytes * (size_t)(b.n_bufs + 1));
        bool shared = true;
        if (fits && lane_bytes && b.m > 1 && rmi_lanes_strides(pp, n, b.bufs, b.n_bufs, lane_bytes, &shared)) {
            S.contiguous = true;
            for (int i = 0; i < L.nc; i++)
                S.contiguous &= lane_bytes[L.base[LB_CARRY] + i] == (int64_t)remat_dtype_size(d->in[i].dt);
            S.ranges = true;
            S.split = !shared;
        }
        if (fits && lane_bytes)
            rmi_lane_dump(n, pp);
        /* the programs, kept in the program's memory: compiled now, or later
         * by a node that starts interpreted (scan_tier.c) */
        remat_lane_program *kp = fits && lane_bytes ? alloc(ctx, sizeof *kp * (size_t)(n + 1)) : NULL;
        remat_lane_buf *kb = kp ? alloc(ctx, sizeof *kb * (size_t)(b.n_bufs + 1)) : NULL;
        if (kb)
            memcpy(kb, b.bufs, sizeof *kb * (size_t)b.n_bufs);
        for (int i = 0; kb && i < n; i++) {
            remat_lane_ins *ins = alloc(ctx, sizeof *ins * (size_t)(progs[i].n_ins + 1));
            if (!ins) {
                kb = NULL;
                break;
            }
            memcpy(ins, progs[i].ins, sizeof *ins * (size_t)progs[i].n_ins);
            kp[i] = progs[i];
            kp[i].ins = ins, kp[i].bufs = kb;
            S.n_ins += progs[i].n_ins;
        }
        if (kb) {
            const remat_lane_program *kpp[LKI_COUNT];
            for (int i = 0; i < n; i++)
                kpp[i] = &kp[i];
            S.pool_key = rmi_lane_programs_hash(n, kpp);
            S.progs = kp, S.n_progs = n, S.want = kernels;
            memcpy(S.base, L.base, sizeof S.base);
            S.lane_bytes = lane_bytes;
            *out = S;
            ok = 1;
        } else if (fits) {
            q = nm; /* out of memory: interpreted */
        }
        for (int i = 0; i < n; i++)
            rmi_free((void *)progs[i].ins);
    }
    rmi_free(b.ins), rmi_free(b.st), rmi_free(b.bufs), rmi_free(b.flags);
    rmi_arena_clear(&b.mem);
    return ok;
}

remat_status rmi_lanes_get_views(scan_lanes *const *views, int n_views, struct lanes_memo_entry *memo,
                                 remat_backend *be, const char *cache_dir, bool compile)
{
    const remat_lane_program *pp[2 * LKI_COUNT];
    remat_lane_fn got[2 * LKI_COUNT];
    int n = 0;
    REMAT_ASSERT(n_views <= 2);
    for (int v = 0; v < n_views; v++) {
        REMAT_ASSERT(views[v]->n_progs <= LKI_COUNT);
        for (int i = 0; i < views[v]->n_progs; i++)
            pp[n++] = &views[v]->progs[i];
    }
    remat_status st = REMAT_ERR_UNSUPPORTED;
    if (memo && rmi_lanes_memo_code(memo, n, got)) /* another node of the body got it */
        st = REMAT_OK;
    else if (compile)
        st = be->iface.compile_lanes(be, n, pp, got, cache_dir); /* one compilation */
    else if (be->iface.load_lanes)
        st = be->iface.load_lanes(n, pp, got, cache_dir);
    if (st != REMAT_OK)
        return st;
    if (memo)
        rmi_lanes_memo_set_code(memo, n, got);
    for (int v = 0, i = 0; v < n_views; v++)
        for (int k = 0; k < LKI_COUNT; k++)
            if (views[v]->want & (1u << k))
                views[v]->fn[k] = got[i++];
    return REMAT_OK;
}

remat_status rmi_lanes_get(scan_lanes *S, remat_backend *be, const char *cache_dir, bool compile)
{
    REMAT_ASSERT(S->progs);
    return rmi_lanes_get_views(&S, 1, S->memo, be, cache_dir, compile);
}

/* while_lower.c — lowering a while node: its data kept in the program, the
 * runtime's buffers, the body's sub-programs, the stats hook. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "lanes/lanes.h"
#include "scan/loop_rt.h"
#include "scan/while_rt.h"

/* The node's data as the kernels read it, copied into the program's memory
 * (the program outlives the function); NULL when out of memory. */
static const remat_while_data *keep_data(const remat_while_data *d, remat_hop_lowering *L)
{
    const int nin = d->n_carry + d->n_consts;
    remat_while_data *c = L->alloc(L->ctx, sizeof *c);
    if (!c)
        return NULL;
    *c = *d;
    c->refcount = 0;
    c->cond = c->body = NULL;
    c->in = L->alloc(L->ctx, sizeof *c->in * (size_t)(nin + 1));
    if (!c->in)
        return NULL;
    memcpy(c->in, d->in, sizeof *c->in * (size_t)nin);
    if (d->vjp && !(c->vjp = rmi_loop_rt_keep_vjp(d->vjp, L)))
        return NULL;
    return c;
}

/* offsets, argument arrays, residual sources; false when out of memory */
static bool layout(while_rt *r, const remat_while_data *d, remat_hop_lowering *L, size_t *ksum)
{
    const int nc = r->c.nc, nk = r->c.nk, nres = r->c.nres;
    r->c.carry_off = L->alloc(L->ctx, sizeof(size_t) * (size_t)(nc + 1));
    r->c.k_off = L->alloc(L->ctx, sizeof(size_t) * (size_t)(nk + 1));
    r->c.fin = L->alloc(L->ctx, sizeof *r->c.fin * (size_t)(nc + nk + 1));
    r->c.fout = L->alloc(L->ctx, sizeof *r->c.fout * (size_t)(nc + nres + 2));
    r->c.bin = L->alloc(L->ctx, sizeof *r->c.bin * (size_t)(nres + nc + 2));
    r->c.bout = L->alloc(L->ctx, sizeof *r->c.bout * (size_t)(nc + nk + 1));
    r->c.res_taped = L->alloc(L->ctx, sizeof *r->c.res_taped * (size_t)(nres + 1));
    r->bits = L->alloc(L->ctx, (size_t)(d->max_steps + 7) / 8 + 1);
    if (!r->c.carry_off || !r->c.k_off || !r->c.fin || !r->c.fout || !r->c.bin || !r->c.bout || !r->c.res_taped || !r->bits)
        return false;
    size_t off = 0;
    for (int i = 0; i < nc; i++) {
        r->c.carry_off[i] = off;
        off += rmi_scan_align(rmi_loop_rt_bytes(&d->in[i]));
    }
    *ksum = 0;
    for (int i = 0; i < nk; i++) {
        r->c.k_off[i] = *ksum;
        *ksum += rmi_scan_align(rmi_loop_rt_bytes(&d->in[nc + i]));
    }
    r->c.n_taped = 0;
    for (int j = 0; j < nres; j++)
        if (d->vjp->res_arg[j] < 0)
            r->c.res_taped[r->c.n_taped++] = j;
    return true;
}

static remat_status alloc_buffers(while_rt *r, const remat_while_data *d, remat_hop_lowering *L, size_t ksum)
{
    const size_t cb = d->carry_bytes + 16, kb = ksum ? ksum : 16;
    const size_t tb = d->vjp && d->vjp->tape_bytes ? d->vjp->tape_bytes : 16;
    r->c.cur = L->mem(L->ctx, cb);
    r->c.next = L->mem(L->ctx, cb);
    r->flag = L->mem(L->ctx, 16);
    if (!r->c.cur || !r->c.next || !r->flag)
        return rmi_error(REMAT_ERR_NOMEM, "%s: out of memory for the loop's carries", d->label);
    if (d->kind == WHILE_BWD) {
        r->c.ct_cur = L->mem(L->ctx, cb);
        r->c.ct_next = L->mem(L->ctx, cb);
        r->ct_dummy = L->mem(L->ctx, cb);
        r->zeros = L->mem(L->ctx, cb);
        r->c.tmp_tape = L->mem(L->ctx, tb);
        r->c.ct_k_tmp = L->mem(L->ctx, kb);
        r->c.ct_k_acc[0] = L->mem(L->ctx, kb);
        r->c.ct_k_acc[1] = L->mem(L->ctx, kb);
        if (!r->c.ct_cur || !r->c.ct_next || !r->ct_dummy || !r->zeros || !r->c.tmp_tape || !r->c.ct_k_tmp ||
            !r->c.ct_k_acc[0] || !r->c.ct_k_acc[1])
            return rmi_error(REMAT_ERR_NOMEM, "%s: out of memory for the loop's cotangents", d->label);
        r->c.be->iface.mem_fill(r->zeros, REMAT_F64, 0.0, cb / sizeof(double));
    }
    return REMAT_OK;
}

/* fn's sub-program, shared with the root's other loops of the same
 * function (a fit's intervals and experiments: one body, thousands of
 * nodes): the root runs one loop at a time, a loop one body evaluation at
 * a time, and a while loop's sub-programs are never run elsewhere (exec/hop.h).
 * The key is fn's content with the flags (lanes/lanes.h); a function with a
 * custom op or a nested loop (state of its own) gets a program of its own. */
static remat_status compile_sub(const remat_fn *fn, remat_hop_lowering *L, remat_program **out)
{
    lanes_key k = {.ok = true, .flags = true};
    rmi_lanes_key_fn(&k, fn);
    const remat_status st = k.ok && !k.opaque
                                ? rmi_compile_sub_shared(fn, k.p, k.len, L->be, L->counters, out)
                                : rmi_compile_sub(fn, L->be, L->counters, out);
    rmi_lanes_key_free(&k);
    return st;
}

/* the sub-programs a form runs: cond (primal, forward), the body (all: the
 * backward advances from snapshots), the VJP's halves (checkpointed forms) */
static remat_status compile_subs(while_rt *r, const remat_while_data *d, remat_hop_lowering *L)
{
    remat_status st = REMAT_OK;
    if (d->kind != WHILE_BWD)
        st = compile_sub(d->cond, L, &r->p_cond);
    if (st == REMAT_OK)
        st = compile_sub(d->body, L, &r->p_body);
    if (st == REMAT_OK && d->kind != WHILE_PRIMAL)
        st = compile_sub(d->vjp->fwd, L, &r->c.p_fwd);
    if (st == REMAT_OK && d->kind == WHILE_BWD)
        st = compile_sub(d->vjp->bwd, L, &r->c.p_bwd);
    if (st == REMAT_OK && d->kind == WHILE_BWD) /* the backend's add for each const's cotangent */
        st = rmi_loop_rt_lower_k_adds(d->in + r->c.nc, r->c.nk, d->label, L, &r->c.k_add);
    return st;
}

/* Room for a phase's ops: the schedule's runs over max_steps merge into a
 * few ops per iteration at most (online:10 reverses 1000 iterations in
 * 1990), up to WHILE_KEPT_MAX_OPS (~640 kB). */
#define WHILE_KEPT_MAX_OPS 16384
static while_ops_cache keep_ops(const remat_while_data *d, remat_hop_lowering *L)
{
    const int64_t cap = d->max_steps < WHILE_KEPT_MAX_OPS / 4 ? 4 * d->max_steps + 64 : WHILE_KEPT_MAX_OPS;
    scan_xop *ops = L->alloc(L->ctx, sizeof *ops * (size_t)cap);
    return (while_ops_cache){.ops = ops, .cap = ops ? cap : 0, .len = -1};
}

remat_status rmi_while_lower(void *data, remat_hop_lowering *L, remat_instr *ins)
{
    remat_while_data *d = data;
    while_rt *r = L->alloc(L->ctx, sizeof *r);
    if (!r)
        return rmi_error(REMAT_ERR_NOMEM, "%s: out of memory lowering the loop", d->label);
    *r = (while_rt){.d = keep_data(d, L), .opts = &L->counters->opts, .c = {.be = L->be, .outs = L->outs, .nested = L->nested,
                    .nc = d->n_carry, .nk = d->n_consts, .nres = d->vjp ? d->vjp->n_res : 0}, .pending = -1, .nd = d->n_diff};
    size_t ksum;
    if (!r->d || !layout(r, d, L, &ksum))
        return rmi_error(REMAT_ERR_NOMEM, "%s: out of memory lowering the loop", d->label);
    /* the loop core (loop_rt.h): the consts after the carries, the taped
     * residuals after carry' and the accepted flag */
    r->c.kind = &rmi_while_loop_kind;
    r->c.k_in0 = r->c.k_out0 = r->c.nc;
    r->c.res_out0 = r->c.nc + 1;
    r->c.k_desc = &r->d->in[r->c.nc];
    r->c.vjp = r->d->vjp;
    r->c.carry_bytes = r->d->carry_bytes;
    r->c.slots_off = r->d->slots_off;
    r->c.tapes_off = r->d->tapes_off;
    remat_status st = alloc_buffers(r, d, L, ksum);
    if (st == REMAT_OK)
        st = compile_subs(r, d, L);
    if (st == REMAT_OK)
        st = rmi_while_lanes_lower(r, d, L);
    if (st == REMAT_OK && d->kind != WHILE_PRIMAL) /* ops kept per length (while_rt.h); none when out of memory */
        r->kept = keep_ops(d, L);
    if (st != REMAT_OK)
        return st;
    remat_hop_stats hook;
    rmi_while_rt_kernels(d, &ins->fn, &hook);
    ins->aux = r;
    hook.self = r;
    return rmi_hop_stats_add(L->counters, &hook);
}

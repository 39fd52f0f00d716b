/* while_lower.c — lowering a while node: its data kept in the program, the
 * runtime's buffers, the body's sub-programs, the stats hook. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
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

/* the loop core's layout and buffers, the bits, and the backward's zero
 * cotangents of the control carries and the flag */
static remat_status alloc_buffers(while_rt *r, const remat_while_data *d, remat_hop_lowering *L)
{
    const int nc = r->c.nc;
    const loop_core_spec spec = {.carries = d->in, .consts = d->in + nc, .vjp = d->vjp, .n_step_args = 1,
                                 .cotangents = d->kind == WHILE_BWD, .what = d->label,
                                 .carry_bytes = d->carry_bytes};
    size_t ksum;
    remat_status st = rmi_loop_lower_core(&r->c, &spec, L, &ksum);
    if (st != REMAT_OK)
        return st;
    const size_t cb = d->carry_bytes + 16;
    r->bits = L->alloc(L->ctx, (size_t)(d->max_steps + 7) / 8 + 1);
    r->flag = L->mem(L->ctx, 16);
    if (!r->bits || !r->flag)
        return rmi_error(REMAT_ERR_NOMEM, "%s: out of memory for the loop's carries", d->label);
    if (d->kind == WHILE_BWD) {
        r->ct_dummy = L->mem(L->ctx, cb);
        r->zeros = L->mem(L->ctx, cb);
        if (!r->ct_dummy || !r->zeros)
            return rmi_error(REMAT_ERR_NOMEM, "%s: out of memory for the loop's cotangents", d->label);
        r->c.be->iface.mem_fill(&L->counters->compile_cx, r->zeros, REMAT_F64, 0.0, cb / sizeof(double));
    }
    return REMAT_OK;
}

/* the sub-programs a form runs: cond (primal, forward), the body (all: the
 * backward advances from snapshots), the VJP's halves (checkpointed forms) */
static remat_status compile_subs(while_rt *r, const remat_while_data *d, remat_hop_lowering *L)
{
    remat_status st = REMAT_OK;
    if (d->kind != WHILE_BWD)
        st = rmi_loop_compile_sub(d->cond, true, L, &r->p_cond);
    if (st == REMAT_OK)
        st = rmi_loop_compile_sub(d->body, true, L, &r->p_body);
    if (st == REMAT_OK && d->kind != WHILE_PRIMAL)
        st = rmi_loop_compile_sub(d->vjp->fwd, true, L, &r->c.p_fwd);
    if (st == REMAT_OK && d->kind == WHILE_BWD)
        st = rmi_loop_compile_sub(d->vjp->bwd, true, L, &r->c.p_bwd);
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
    if (!r->d)
        return rmi_error(REMAT_ERR_NOMEM, "%s: out of memory lowering the loop", d->label);
    /* the loop core (loop_rt.h): the consts after the carries, the taped
     * residuals after carry' and the accepted flag */
    r->c.kind = &rmi_while_loop_kind;
    r->c.k_in0 = r->c.k_out0 = r->c.nc;
    r->c.res_out0 = r->c.nc + 1;
    r->c.carry_desc = r->d->in;
    r->c.k_desc = &r->d->in[r->c.nc];
    r->c.vjp = r->d->vjp;
    r->c.carry_bytes = r->d->carry_bytes;
    r->c.slots_off = r->d->slots_off;
    r->c.tapes_off = r->d->tapes_off;
    if (d->slow_cap > 0) { /* the slow tier: interpreted, a file or host memory (loop_slow.c), as for scans */
        if (L->nested) /* a forward whose store the enclosing schedule drops would leave its file open */
            return rmi_error(REMAT_ERR_UNSUPPORTED,
                             "%s: a two-tier schedule in another loop's body: the slow tier's store lives from the "
                             "forward node to the backward, which an enclosing loop's schedule may never run",
                             d->label);
        r->c.slow_on = true;
        r->c.slow0 = d->sched.snapshots;
        r->c.slow_fd = -1;
        r->c.slow_words = 16; /* after the header's length (while_runtime.c) */
        r->c.slow_bwd = d->kind == WHILE_BWD;
        r->slow_len = -1;
    }
    remat_status st = alloc_buffers(r, d, L);
    if (st == REMAT_OK)
        st = compile_subs(r, d, L);
    if (st == REMAT_OK && !r->c.slow_on)
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

/* loop_lower.c — lowering a loop core: what a scan node and a while node share (loop_rt.h). */
#include <string.h>

#include "core/assert.h"
#include "core/error.h"
#include "lanes/lanes.h"
#include "scan/loop_rt.h"

scan_body_vjp *rmi_loop_rt_keep_vjp(const scan_body_vjp *v, remat_hop_lowering *L)
{
    scan_body_vjp *c = L->alloc(L->ctx, sizeof *c);
    if (!c)
        return NULL;
    *c = *v;
    c->refcount = 0;
    c->fwd = c->bwd = NULL;
    c->res_off = L->alloc(L->ctx, sizeof *c->res_off * (size_t)(c->n_res + 1));
    c->res_arg = L->alloc(L->ctx, sizeof *c->res_arg * (size_t)(c->n_res + 1));
    if (!c->res_off || !c->res_arg)
        return NULL;
    memcpy(c->res_off, v->res_off, sizeof *c->res_off * (size_t)c->n_res);
    memcpy(c->res_arg, v->res_arg, sizeof *c->res_arg * (size_t)c->n_res);
    return c;
}

remat_status rmi_loop_rt_lower_k_adds(const scan_desc *ks, int nk, const char *what, remat_hop_lowering *L,
                                      remat_instr **out)
{
    remat_instr *add = L->alloc(L->ctx, sizeof *add * (size_t)(nk + 1));
    *out = add;
    if (!add)
        return rmi_error(REMAT_ERR_NOMEM, "%s: out of memory lowering the loop", what);
    for (int i = 0; i < nk; i++) {
        const scan_desc *k = &ks[i];
        const remat_dtype dts[2] = {k->dt, k->dt};
        const remat_shape shs[2] = {k->shape, k->shape};
        remat_exec_op op = {.op = REMAT_OP_ADD, .dtype = k->dt, .shape = k->shape, .nin = 2, .in_dtypes = dts,
                            .in_shapes = shs};
        remat_instr *A = &add[i];
        *A = (remat_instr){.in = A->in_inline, .n = (size_t)remat_shape_numel(&k->shape)};
        REMAT_ASSERT(L->be->iface.scratch_bytes(&op) == 0);
        remat_status st = L->be->iface.lower(&op, A, L->alloc, L->ctx);
        if (st != REMAT_OK)
            return st;
    }
    return REMAT_OK;
}

remat_status rmi_loop_lower_core(loop_core *c, const loop_core_spec *s, remat_hop_lowering *L, size_t *ksum)
{
    const int nc = c->nc, nk = c->nk, nres = c->nres;
    const size_t nargs = (size_t)(nc + nk + nres + s->n_step_args + 2);
    c->carry_off = L->alloc(L->ctx, sizeof(size_t) * (size_t)(nc + 1));
    c->k_off = L->alloc(L->ctx, sizeof(size_t) * (size_t)(nk + 1));
    c->fin = L->alloc(L->ctx, sizeof *c->fin * nargs);
    c->fout = L->alloc(L->ctx, sizeof *c->fout * nargs);
    c->bin = L->alloc(L->ctx, sizeof *c->bin * nargs);
    c->bout = L->alloc(L->ctx, sizeof *c->bout * nargs);
    c->res_taped = L->alloc(L->ctx, sizeof *c->res_taped * (size_t)(nres + 1));
    c->rep = L->alloc(L->ctx, sizeof *c->rep);
    if (!c->carry_off || !c->k_off || !c->fin || !c->fout || !c->bin || !c->bout || !c->res_taped || !c->rep)
        return rmi_error(REMAT_ERR_NOMEM, "%s: out of memory lowering the loop", s->what);
    atomic_init(&c->rep->status, REMAT_OK);
    c->rep->message[0] = 0;
    size_t off = 0;
    for (int i = 0; i < nc; i++) {
        c->carry_off[i] = off;
        off += rmi_scan_align(rmi_loop_rt_bytes(&s->carries[i]));
    }
    *ksum = 0;
    for (int i = 0; i < nk; i++) {
        c->k_off[i] = *ksum;
        *ksum += rmi_scan_align(rmi_loop_rt_bytes(&s->consts[i]));
    }
    c->n_taped = 0;
    for (int j = 0; j < nres; j++)
        if (s->vjp->res_arg[j] < 0)
            c->res_taped[c->n_taped++] = j;
    const size_t cb = s->carry_bytes + 16, kb = *ksum ? *ksum : 16;
    const size_t tb = s->vjp && s->vjp->tape_bytes ? s->vjp->tape_bytes : 16;
    c->cur = L->mem(L->ctx, cb);
    c->next = L->mem(L->ctx, cb);
    if (!c->cur || !c->next)
        return rmi_error(REMAT_ERR_NOMEM, "%s: out of memory for the loop's carries", s->what);
    /* zeros: the padding between carries is never written, and a snapshot
     * copies the whole carry (the slow tier's file gets no heap garbage) */
    L->be->iface.mem_fill(&L->counters->compile_cx, c->cur, REMAT_F64, 0.0, cb / sizeof(double));
    L->be->iface.mem_fill(&L->counters->compile_cx, c->next, REMAT_F64, 0.0, cb / sizeof(double));
    if (!s->cotangents)
        return REMAT_OK;
    c->ct_cur = L->mem(L->ctx, cb);
    c->ct_next = L->mem(L->ctx, cb);
    c->tmp_tape = L->mem(L->ctx, tb);
    c->ct_k_tmp = L->mem(L->ctx, kb);
    c->ct_k_acc[0] = L->mem(L->ctx, kb);
    c->ct_k_acc[1] = L->mem(L->ctx, kb);
    if (!c->ct_cur || !c->ct_next || !c->tmp_tape || !c->ct_k_tmp || !c->ct_k_acc[0] || !c->ct_k_acc[1])
        return rmi_error(REMAT_ERR_NOMEM, "%s: out of memory for the loop's cotangents", s->what);
    return REMAT_OK;
}

/* The root runs one loop at a time, a loop one body evaluation at a time:
 * loops of one body (a fit's intervals and experiments, thousands of
 * nodes) share its sub-program. The key is fn's content with the flags
 * (lanes/lanes.h). */
remat_status rmi_loop_compile_sub(const remat_fn *fn, bool shared, remat_hop_lowering *L, remat_program **out)
{
    if (!shared)
        return rmi_compile_sub(fn, L->be, L->counters, out);
    lanes_key k = {.ok = true, .flags = true};
    rmi_lanes_key_fn(&k, fn);
    const remat_status st = k.ok && !k.opaque
                                ? rmi_compile_sub_shared(fn, k.p, k.len, L->be, L->counters, out)
                                : rmi_compile_sub(fn, L->be, L->counters, out);
    rmi_lanes_key_free(&k);
    return st;
}

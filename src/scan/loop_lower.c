/* loop_lower.c — what lowering a scan node and a while node share (loop_rt.h). */
#include <string.h>

#include "core/assert.h"
#include "core/error.h"
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

/*
 * custom.c — the CPU lowering of a caller's op (remat_custom_op, remat/graph.h):
 * the instruction hands the caller's forward or VJP the buffers as tensors.
 */
#include "backend/cpu/custom.h"
#include "core/error.h"

typedef struct {
    const remat_custom_op *op;
    int nin, which; /* which < 0: forward */
    remat_tensor *ins;   /* nin (+ out, dout for the VJP), data filled per call */
    remat_tensor out;
} custom_params;

static void k_custom(const remat_exec_ctx *cx, const remat_instr *I)
{
    const custom_params *P = I->aux;
    for (int k = 0; k < P->nin; k++)
        P->ins[k].data = (void *)I->in[k];
    remat_tensor out = P->out;
    out.data = I->out;
    if (P->which < 0) {
        P->op->forward(P->nin, P->ins, &out, P->op->ctx);
    } else {
        P->ins[P->nin].data = (void *)I->in[P->nin];
        P->ins[P->nin + 1].data = (void *)I->in[P->nin + 1];
        P->op->vjp(P->which, P->nin, P->ins, &P->ins[P->nin], &P->ins[P->nin + 1], &out, P->op->ctx);
    }
}

static remat_status nomem(remat_op op)
{
    return rmi_error(REMAT_ERR_NOMEM, "cpu backend: out of memory lowering '%s'", remat_op_name(op));
}

remat_status rmi_cpu_lower_custom(const remat_exec_op *op, remat_instr *ins, void *(*alloc)(void *, size_t),
                                  void *ctx)
{
    int vjp = op->op == REMAT_OP_CUSTOM_VJP;
    int nin = vjp ? op->nin - 2 : op->nin;
    custom_params *C = alloc(ctx, sizeof *C);
    if (!C)
        return nomem(op->op);
    C->op = op->p.custom;
    C->nin = nin;
    C->which = vjp ? op->aux : -1;
    C->ins = alloc(ctx, sizeof *C->ins * (size_t)(op->nin + 1));
    if (!C->ins)
        return nomem(op->op);
    for (int k = 0; k < op->nin; k++)
        C->ins[k] = (remat_tensor){.dtype = op->in_dtypes[k], .shape = op->in_shapes[k]};
    C->out = (remat_tensor){.dtype = op->dtype, .shape = op->shape};
    ins->fn = k_custom;
    ins->aux = C;
    return REMAT_OK;
}

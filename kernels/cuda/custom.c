/*
 * custom.c — a caller's op (remat_custom_op) on the CUDA backend: its forward
 * and VJP are the caller's C functions over host memory, so the instruction
 * copies its inputs to host buffers, calls the function, and copies the
 * output back (synchronising the stream each way). remat_stats.host_ops
 * counts these ops so that a slow GPU run says why.
 */
#include "core/error.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/cuda_kernels.h"

typedef struct {
    const remat_custom_op *op;
    int nin, total, which; /* which < 0: forward; total: nin (+ out, dout for the VJP) */
    remat_tensor *ins;     /* total host tensors, data = host buffers */
    remat_tensor out;      /* data = a host buffer */
} cuda_custom;

static void k_custom(const remat_instr *I)
{
    const cuda_custom *P = I->aux;
    for (int k = 0; k < P->total; k++)
        remat_cuda_copy_out(P->ins[k].data, I->in[k], remat_tensor_bytes(&P->ins[k]));
    remat_tensor out = P->out;
    if (P->which < 0)
        P->op->forward(P->nin, P->ins, &out, P->op->ctx);
    else
        P->op->vjp(P->which, P->nin, P->ins, &P->ins[P->nin], &P->ins[P->nin + 1], &out, P->op->ctx);
    remat_cuda_copy_in(I->out, P->out.data, remat_tensor_bytes(&P->out));
}

static remat_status nomem(remat_op op)
{
    return remat_error(REMAT_ERR_NOMEM, "cuda backend: out of memory lowering '%s'", remat_op_name(op));
}

remat_status remat_cuda_lower_custom(const remat_exec_op *op, remat_instr *ins, void *(*alloc)(void *, size_t),
                                     void *ctx)
{
    const int vjp = op->op == REMAT_OP_CUSTOM_VJP;
    cuda_custom *C = alloc(ctx, sizeof *C);
    if (!C)
        return nomem(op->op);
    C->op = op->p.custom;
    C->total = op->nin;
    C->nin = vjp ? op->nin - 2 : op->nin;
    C->which = vjp ? op->aux : -1;
    C->ins = alloc(ctx, sizeof *C->ins * (size_t)(op->nin + 1));
    if (!C->ins)
        return nomem(op->op);
    for (int k = 0; k < op->nin; k++) {
        C->ins[k] = (remat_tensor){.dtype = op->in_dtypes[k], .shape = op->in_shapes[k]};
        if (!(C->ins[k].data = alloc(ctx, remat_tensor_bytes(&C->ins[k]) + 1)))
            return nomem(op->op);
    }
    C->out = (remat_tensor){.dtype = op->dtype, .shape = op->shape};
    if (!(C->out.data = alloc(ctx, remat_tensor_bytes(&C->out) + 1)))
        return nomem(op->op);
    ins->fn = k_custom;
    ins->aux = C;
    return REMAT_OK;
}

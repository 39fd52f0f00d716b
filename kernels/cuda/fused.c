/*
 * fused.c — the CUDA lowering of a fused elementwise group (one kernel runs
 * every micro-op of the group on its element: elementwise.cu k_fused) and
 * of add(x, pad(g)) (structural.cu k_add_pad).
 */
#include <string.h>

#include "core/assert.h"
#include "core/error.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/cuda_kernels.h"

static void k_fused(const remat_exec_ctx *cx, const remat_instr *I)
{
    rmi_cuda_fused_run(cx->state, I->aux, I->n, I->out, I->in);
}

static void k_add_pad(const remat_exec_ctx *cx, const remat_instr *I)
{
    rmi_cuda_add_pad(cx->state, I->aux, I->out, I->in[0], I->in[1]);
}

/* the launch form carries the shared micro-op kind (backend_impl.h) as is */
_Static_assert((int)REMAT_CUDA_UOP_UNARY == (int)REMAT_UOP_UNARY &&
                   (int)REMAT_CUDA_UOP_INTEGER_POW == (int)REMAT_UOP_INTEGER_POW &&
                   (int)REMAT_CUDA_UOP_POW == (int)REMAT_UOP_POW &&
                   (int)REMAT_CUDA_UOP_SELECT == (int)REMAT_UOP_SELECT &&
                   (int)REMAT_CUDA_UOP_BINARY == (int)REMAT_UOP_BINARY,
               "remat_cuda_uop_kind out of step with remat_fused_uop_kind");

_Static_assert(REMAT_CUDA_FUSED_MAX_UOPS >= REMAT_FUSED_MAX_UOPS && REMAT_CUDA_FUSED_MAX_REGS >= REMAT_FUSED_MAX_REGS &&
                   REMAT_CUDA_FUSED_MAX_IN >= REMAT_FUSED_MAX_IN,
               "the CUDA fused kernel holds the largest group compile makes");

remat_status rmi_cuda_lower_fused(const remat_fused_op *op, remat_instr *ins, void *(*alloc)(void *, size_t),
                                  void *ctx)
{
    if (op->dtype != REMAT_F32 && op->dtype != REMAT_F64)
        return rmi_error(REMAT_ERR_UNSUPPORTED, "cuda backend: a fused group of dtype %d", (int)op->dtype);
    REMAT_ASSERT(op->n_regs <= REMAT_CUDA_FUSED_MAX_REGS && op->n_uops >= 1 && op->n_uops <= REMAT_CUDA_FUSED_MAX_UOPS);
    REMAT_ASSERT(op->nin >= 0 && op->nin <= REMAT_CUDA_FUSED_MAX_IN);
    remat_cuda_fused *F = alloc(ctx, sizeof *F);
    if (!F)
        return rmi_error(REMAT_ERR_NOMEM, "cuda backend: out of memory lowering a fused group of %d ops",
                         op->n_uops);
    memset(F, 0, sizeof *F);
    *F = (remat_cuda_fused){.f64 = op->dtype == REMAT_F64, .nin = op->nin, .n_uops = op->n_uops};
    for (int k = 0; k < op->nin; k++)
        if (rmi_fused_mask_has(op->scalar_in, k))
            F->scalar_in[k / 64] |= (uint64_t)1 << (k % 64);
    for (int k = 0; k < op->n_uops; k++) {
        const remat_fused_uop *u = &op->uops[k];
        const int kind = rmi_fused_uop_kind_of(u->op);
        if (kind < 0)
            return rmi_error(REMAT_ERR_UNSUPPORTED, "cuda backend: '%s' in a fused group is not elementwise",
                             remat_op_name(u->op));
        F->uops[k] = (remat_cuda_uop){.op = (int32_t)u->op, .kind = (int8_t)kind, .dst = u->dst,
                                      .src = {u->src[0], u->src[1], u->src[2]},
                                      .int_exponent = u->int_exponent, .exponent = u->exponent};
    }
    ins->fn = k_fused;
    ins->aux = F;
    return REMAT_OK;
}

static remat_status nomem(remat_op op)
{
    return rmi_error(REMAT_ERR_NOMEM, "cuda backend: out of memory lowering '%s'", remat_op_name(op));
}

remat_status rmi_cuda_lower_add_pad(remat_dtype dt, const remat_shape *out_shape, const remat_shape *g_shape,
                                    const remat_pad_params *pad, int pad_first, remat_instr *ins,
                                    void *(*alloc)(void *, size_t), void *ctx)
{
    REMAT_ASSERT(out_shape->rank == g_shape->rank && (dt == REMAT_F32 || dt == REMAT_F64));
    remat_cuda_add_pad_desc *D = alloc(ctx, sizeof *D);
    if (!D)
        return nomem(REMAT_OP_ADD);
    memset(D, 0, sizeof *D);
    D->f64 = dt == REMAT_F64;
    D->pad_first = pad_first != 0;
    D->rank = out_shape->rank;
    D->n = remat_shape_numel(out_shape);
    for (int i = 0; i < out_shape->rank; i++) {
        REMAT_ASSERT(pad->interior[i] == 0 && pad->low[i] >= 0 &&
                     out_shape->dims[i] == pad->low[i] + g_shape->dims[i] + pad->high[i]);
        D->dims[i] = out_shape->dims[i];
        D->gdims[i] = g_shape->dims[i];
        D->lo[i] = pad->low[i];
    }
    ins->fn = k_add_pad;
    ins->aux = D;
    return REMAT_OK;
}

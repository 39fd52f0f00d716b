/* split.c — large elementwise instructions across the thread pool (split.h). */
#include <stdint.h>

#include "backend/cpu/split.h"
#include "core/pool.h"
#include "remat/op.h"

typedef struct {
    remat_kernel_fn fn; /* the kernel and parameters cpu_lower chose */
    const void *aux;
    int nin;
    uint32_t scalar_mask;
    uint8_t out_size, in_size[4];
    remat_pool_site site; /* whether splitting pays (core/pool.h; the program's memory, written by runs) */
} split_params;

typedef struct {
    const remat_exec_ctx *cx;
    const remat_instr *I;
} split_call;

/* out[b:e] = kernel(in[b:e]...), through a copy of the instruction */
static void split_range(void *ctx, int64_t b, int64_t e)
{
    const split_call *call = ctx;
    const remat_instr *I = call->I;
    const split_params *S = I->aux;
    remat_instr sub = *I;
    sub.fn = S->fn, sub.aux = S->aux, sub.n = (size_t)(e - b);
    sub.out = (char *)I->out + (size_t)b * S->out_size;
    for (int k = 0; k < S->nin; k++)
        sub.in_inline[k] = (S->scalar_mask >> k) & 1u ? I->in[k] : (const char *)I->in[k] + (size_t)b * S->in_size[k];
    sub.in = sub.in_inline;
    S->fn(call->cx, &sub);
}

static void k_split(const remat_exec_ctx *cx, const remat_instr *I)
{
    split_params *S = (split_params *)I->aux; /* writable: the program's memory */
    split_call call = {cx, I};
    rmi_parallel_for_site(&S->site, (int64_t)I->n, REMAT_CPU_SPLIT_GRAIN, split_range, &call);
}

remat_status rmi_cpu_split_large(const remat_exec_op *op, remat_instr *ins, void *(*alloc)(void *, size_t),
                                 void *ctx)
{
    if (!remat_op_is_elementwise(op->op) || ins->n < 2 * (size_t)REMAT_CPU_SPLIT_GRAIN || op->nin > 4 ||
        ins->scratch)
        return REMAT_OK;
    split_params *S = alloc(ctx, sizeof *S);
    if (!S)
        return REMAT_OK; /* unsplit is as correct */
    *S = (split_params){.fn = ins->fn, .aux = ins->aux, .nin = op->nin, .scalar_mask = op->scalar_mask,
                        .out_size = (uint8_t)remat_dtype_size(op->dtype)};
    for (int k = 0; k < op->nin && k < 4; k++)
        S->in_size[k] = (uint8_t)remat_dtype_size(op->in_dtypes[k]);
    ins->fn = k_split;
    ins->aux = S;
    return REMAT_OK;
}

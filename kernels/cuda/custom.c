/*
 * custom.c — ops the CUDA backend runs on the host: a caller's op
 * (remat_custom_op), whose forward and VJP are the caller's C functions over
 * host memory, and lu and linear_solve, on the CPU's kernels until a cuSOLVER path
 * exists. The instruction copies its inputs to host buffers, runs, and
 * copies the output back (synchronising the stream each way).
 * remat_stats.host_ops counts these ops so that a slow GPU run says why.
 */
#include "backend/linalg.h"
#include "core/error.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/cuda_kernels.h"

typedef struct {
    const remat_custom_op *op;
    int nin, total, which; /* which < 0: forward; total: nin (+ out, dout for the VJP) */
    remat_tensor *ins;     /* total host tensors, data = host buffers */
    remat_tensor out;      /* data = a host buffer */
} cuda_custom;

static void k_custom(const remat_exec_ctx *cx, const remat_instr *I)
{
    const cuda_custom *P = I->aux;
    for (int k = 0; k < P->total; k++)
        rmi_cuda_copy_out(cx->state, P->ins[k].data, I->in[k], remat_tensor_bytes(&P->ins[k]));
    remat_tensor out = P->out;
    if (P->which < 0)
        P->op->forward(P->nin, P->ins, &out, P->op->ctx);
    else
        P->op->vjp(P->which, P->nin, P->ins, &P->ins[P->nin], &P->ins[P->nin + 1], &out, P->op->ctx);
    rmi_cuda_copy_in(cx->state, I->out, P->out.data, remat_tensor_bytes(&P->out));
}

static remat_status nomem(remat_op op)
{
    return rmi_error(REMAT_ERR_NOMEM, "cuda backend: out of memory lowering '%s'", remat_op_name(op));
}

remat_status rmi_cuda_lower_custom(const remat_exec_op *op, remat_instr *ins, void *(*alloc)(void *, size_t),
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

bool rmi_cuda_on_host(remat_op op)
{
    return op == REMAT_OP_CUSTOM || op == REMAT_OP_CUSTOM_VJP || op == REMAT_OP_LU || op == REMAT_OP_LINEAR_SOLVE;
}

/* lu: A (batch, n, n) -> out, the packed factorisation (remat/op.h);
 * linear_solve: (A, lu(A), b) -> out (batch, n, k) or (batch, n), from the
 * factorisation and b (A is there for the derivative, not read) */
typedef struct {
    remat_dtype dt;
    int lu, transpose;
    int64_t batch, n, k;
    size_t a_bytes, b_bytes, out_bytes; /* a: A (lu) or the factorisation (linear_solve) */
    void *a, *b, *out, *scratch;        /* host */
} cuda_solve;

static void solve_dims(const remat_exec_op *op, int64_t *batch, int64_t *n, int64_t *k)
{
    const remat_shape *a = &op->in_shapes[0];
    *n = a->dims[a->rank - 1];
    *batch = 1;
    for (int i = 0; i < a->rank - 2; i++)
        *batch *= a->dims[i];
    *k = op->shape.rank == a->rank ? op->shape.dims[a->rank - 1] : 1;
}

size_t rmi_cuda_solve_scratch(const remat_exec_op *op)
{
    int64_t batch, n, k;
    solve_dims(op, &batch, &n, &k);
    return op->op == REMAT_OP_LU ? rmi_host_lu_scratch(n) : rmi_host_linear_solve_scratch(op->dtype, n, k);
}

static void k_solve(const remat_exec_ctx *cx, const remat_instr *I)
{
    const cuda_solve *S = I->aux;
    if (S->lu) {
        rmi_cuda_copy_out(cx->state, S->a, I->in[0], S->a_bytes);
        rmi_host_lu(S->dt, S->out, S->a, S->batch, S->n, S->scratch);
    } else {
        rmi_cuda_copy_out(cx->state, S->a, I->in[1], S->a_bytes);
        rmi_cuda_copy_out(cx->state, S->b, I->in[2], S->b_bytes);
        rmi_host_linear_solve(S->dt, S->out, S->a, S->b, S->batch, S->n, S->k, S->transpose, S->scratch);
    }
    rmi_cuda_copy_in(cx->state, I->out, S->out, S->out_bytes);
}

remat_status rmi_cuda_lower_solve(const remat_exec_op *op, remat_instr *ins, void *(*alloc)(void *, size_t),
                                  void *ctx)
{
    cuda_solve *S = alloc(ctx, sizeof *S);
    if (!S)
        return nomem(op->op);
    const int lu = op->op == REMAT_OP_LU;
    *S = (cuda_solve){.dt = op->dtype, .lu = lu, .transpose = !lu && op->p.solve_transpose};
    solve_dims(op, &S->batch, &S->n, &S->k);
    const remat_tensor a = {.dtype = op->in_dtypes[lu ? 0 : 1], .shape = op->in_shapes[lu ? 0 : 1]};
    const remat_tensor b = {.dtype = op->in_dtypes[lu ? 0 : 2], .shape = op->in_shapes[lu ? 0 : 2]};
    const remat_tensor out = {.dtype = op->dtype, .shape = op->shape};
    S->a_bytes = remat_tensor_bytes(&a);
    S->b_bytes = lu ? 0 : remat_tensor_bytes(&b);
    S->out_bytes = remat_tensor_bytes(&out);
    S->a = alloc(ctx, S->a_bytes + 1);
    S->b = alloc(ctx, S->b_bytes + 1);
    S->out = alloc(ctx, S->out_bytes + 1);
    S->scratch = alloc(ctx, rmi_cuda_solve_scratch(op) + 1);
    if (!S->a || !S->b || !S->out || !S->scratch)
        return nomem(op->op);
    ins->fn = k_solve;
    ins->aux = S;
    return REMAT_OK;
}

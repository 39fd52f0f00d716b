/*
 * cuda_kernels.h (internal) — the CUDA kernels as C functions, one group per
 * .cu file, for backend.c (the vtable) and the tests.
 *
 * Every function here that launches or copies acts on the state it is
 * given (rmi_cuda_state: a device, a stream on it, an error record): no
 * thread-current binding. Launches are asynchronous, and a failed launch or
 * copy is remembered in the state (the first one) until rmi_cuda_finish()
 * reports it, which is how a void kernel adapter (remat_instr.fn, handed the
 * state in its remat_exec_ctx) reports an error. Element
 * counts are size_t; n = 0 launches nothing. Pointers are device memory
 * unless named host_*. Shapes in comments are row-major.
 */
#ifndef REMAT_CUDA_KERNELS_H
#define REMAT_CUDA_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- memory.cu: devices, streams, memory, errors ---- */
/* devices present; 0 with `why` filled (cudaGetDeviceCount's error) when none */
int rmi_cuda_device_count(char *why, size_t why_len);
/* A state (remat_exec_ctx.state of this backend): a stream on `device`
 * (blocking: it orders with the legacy default stream), the first error
 * since the last finish, and a cuBLAS handle made at its first gemm. Used
 * by one thread at a time. NULL with `why` filled when it cannot be made. */
typedef struct rmi_cuda_state rmi_cuda_state;
rmi_cuda_state *rmi_cuda_state_new(int device, char *why, size_t why_len);
void rmi_cuda_state_free(rmi_cuda_state *cs);
int rmi_cuda_state_device(const rmi_cuda_state *cs);
/* on `device` (made current for the call); NULL when out of memory */
void *rmi_cuda_malloc(int device, size_t bytes);
void rmi_cuda_free(int device, void *p);
/* pinned host memory (cudaHostAlloc, portable); NULL when out of memory */
void *rmi_cuda_host_alloc(int device, size_t bytes);
void rmi_cuda_host_free(int device, void *p);
/* the same through cs's kept blocks (pinned.h): a block given back stays
 * allocated for cs's next run, freed with cs */
void *rmi_cuda_state_host_alloc(rmi_cuda_state *cs, size_t bytes);
void rmi_cuda_state_host_free(rmi_cuda_state *cs, void *p);
/* device to device, queued; either side may be host memory (then done on return) */
void rmi_cuda_memcpy(rmi_cuda_state *cs, void *dst, const void *src, size_t bytes);
void rmi_cuda_memset0(rmi_cuda_state *cs, void *dst, size_t bytes);                  /* queued */
/* n elements (f64 or f32) := value, converted as the CPU converts (-0.0 stays) */
void rmi_cuda_fill(rmi_cuda_state *cs, void *dst, int f64, double value, size_t n);
void rmi_cuda_copy_in(rmi_cuda_state *cs, void *dst, const void *host_src, size_t bytes);  /* done on return */
void rmi_cuda_copy_out(rmi_cuda_state *cs, void *host_dst, const void *src, size_t bytes); /* done on return */
/* waits for cs's stream; 0, or -1 with msg = the first error since
 * the last finish (what failed, where, cudaGetErrorString) */
int rmi_cuda_finish(rmi_cuda_state *cs, char *msg, size_t msg_len);
/* cs's device made current, its stream as a void * (cudaStream_t) for C
 * callers: the lane kernels (lanes.c) launch on it */
void *rmi_cuda_state_stream(rmi_cuda_state *cs);
/* keeps a failure (a cudaError_t) of `what` in cs for finish, as the
 * kernels here do: for launches made in C (lanes.c) */
void rmi_cuda_state_note(rmi_cuda_state *cs, int cuda_error, const char *what);

/* ---- elementwise.cu (same arithmetic as src/backend/cpu/elementwise.c) ---- */
/* op: a remat_op of category UNARY (parameter kind NONE) */
void rmi_cuda_unary(rmi_cuda_state *cs, int f64, int op, size_t n, void *out, const void *a);
/* op: BINARY or COMPARE; a_scalar / b_scalar: that operand is one element */
void rmi_cuda_binary(rmi_cuda_state *cs, int f64, int op, size_t n, void *out, const void *a, int a_scalar,
                     const void *b, int b_scalar);
void rmi_cuda_select(rmi_cuda_state *cs, int f64, size_t n, void *out, const void *pred, const void *t, int t_scalar,
                     const void *f, int f_scalar);
void rmi_cuda_integer_pow(rmi_cuda_state *cs, int f64, size_t n, void *out, const void *a, int k);
void rmi_cuda_pow(rmi_cuda_state *cs, int f64, size_t n, void *out, const void *a, double p);
void rmi_cuda_convert(rmi_cuda_state *cs, size_t n, int out_f64, void *out, int in_f64, const void *in);

/* A fused group (backend_impl.h remat_fused_op) in launch form: the micro-ops
 * by value, so a launch is one kernel whatever the group. */
/* inputs: at most 3 operands per micro-op */
enum { REMAT_CUDA_FUSED_MAX_UOPS = 24, REMAT_CUDA_FUSED_MAX_REGS = 23, REMAT_CUDA_FUSED_MAX_IN = 72 };
typedef struct {
    int32_t op;           /* remat_op */
    int8_t kind;          /* remat_cuda_uop_kind */
    int16_t dst, src[3];  /* as remat_fused_uop: register >= 0, input -1 - k, INT16_MIN none */
    int32_t int_exponent;
    double exponent;
} remat_cuda_uop;
typedef enum { REMAT_CUDA_UOP_UNARY, REMAT_CUDA_UOP_INTEGER_POW, REMAT_CUDA_UOP_POW, REMAT_CUDA_UOP_SELECT,
               REMAT_CUDA_UOP_BINARY } remat_cuda_uop_kind;
typedef struct {
    int f64, nin, n_uops;
    uint64_t scalar_in[(REMAT_CUDA_FUSED_MAX_IN + 63) / 64]; /* bit k % 64 of word k / 64: input k is one element */
    remat_cuda_uop uops[REMAT_CUDA_FUSED_MAX_UOPS];
} remat_cuda_fused;
void rmi_cuda_fused_run(rmi_cuda_state *cs, const remat_cuda_fused *F, size_t n, void *out, const void *const *in);

/* ---- reduce.cu: one thread per output, its inputs in ascending row-major
 * order from +0 (sum) or -inf (max), the CPU's order: same bits for sums ---- */
typedef struct {
    int rank;           /* of the input */
    int64_t dims[8];    /* input dims */
    uint8_t reduce[8];  /* 1: axis reduced */
} remat_cuda_reduce_desc;
void rmi_cuda_reduce(rmi_cuda_state *cs, int f64, int is_max, void *out, const void *in,
                     const remat_cuda_reduce_desc *d);

/* ---- structural.cu ---- */
/* dst[doff + sum k_i ds_i] = src[soff + sum k_i ss_i] for k < dims (rank
 * dims, in elements of esize 4 or 8) after zeroing zero_bytes of dst: the
 * shared copy plan (remat_copy_plan, backend/layout.h) in a form nvcc
 * compiles without the backend headers */
typedef struct {
    int rank, esize;
    int64_t doff, soff, n;   /* n = prod dims */
    size_t zero_bytes;
    int64_t dims[8], ds[8], ss[8];
} remat_cuda_copy_desc;
void rmi_cuda_copy(rmi_cuda_state *cs, const remat_cuda_copy_desc *d, void *out, const void *in);
/* in (outer, chunk) into columns [col, col + chunk) of out (outer, row) */
void rmi_cuda_concat_one(rmi_cuda_state *cs, int esize, int64_t outer, int64_t row, int64_t col, int64_t chunk,
                         void *out, const void *in);
/* add(x, pad(g)), zero interior: out (dims) = x + 0 outside g (gdims at lo),
 * x + g inside (g + x when pad_first) */
typedef struct {
    int f64, pad_first, rank;
    int64_t n;
    int64_t dims[8], gdims[8], lo[8];
} remat_cuda_add_pad_desc;
void rmi_cuda_add_pad(rmi_cuda_state *cs, const remat_cuda_add_pad_desc *d, void *out, const void *x, const void *g);

/* ---- dot.cu: C (B,M,N) = op(A) op(B) row-major, batched and strided, on
 * cuBLAS (the CPU's cblas row-major call, as column-major C^T = B^T A^T) ---- */
void rmi_cuda_gemm(rmi_cuda_state *cs, int f64, int a_trans, int b_trans, int64_t nb, int m, int n, int k,
                   const void *a, int lda, const void *b, int ldb, void *c);

#ifdef __cplusplus
}
#endif
#endif

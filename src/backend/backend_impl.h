/*
 * backend_impl.h (internal) — the backend vtable and the instruction format.
 *
 * A backend sees one op at a time (remat_exec_op: primitive, dtypes, shapes,
 * parameters — no graph) and lowers it to an instruction: a kernel function
 * pointer plus resolved buffer pointers and a parameter block. Running a
 * program is then a loop of indirect calls, a few nanoseconds per op.
 */
#ifndef REMAT_BACKEND_IMPL_H
#define REMAT_BACKEND_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/lane.h"
#include "core/assert.h"
#include "remat/exec.h"
#include "remat/graph.h"

typedef struct remat_instr remat_instr;

/* What a run (or a compile) hands every kernel adapter and memory entry:
 * the backend and its state for this use (program_new's: CUDA its device's
 * stream, error record and cuBLAS handle; NULL for the CPU, and for a
 * device backend's mem_alloc / mem_free, which need only the device). No
 * entry keeps thread-current state: two programs, or two backends, may be
 * used from one thread in any interleaving. A kernel adapter that calls
 * another (a fused group's fallback, a HOP's sub-programs) passes its cx on. */
typedef struct remat_exec_ctx {
    remat_backend *be;
    void *state;
} remat_exec_ctx;

/* A kernel adapter: runs one instruction in cx. */
typedef void (*remat_kernel_fn)(const remat_exec_ctx *cx, const remat_instr *ins);

struct remat_instr {
    remat_kernel_fn fn;
    void *out;
    const void **in;      /* nin pointers (in_inline when nin <= 4) */
    size_t n;             /* output elements */
    const void *aux;      /* lowered parameters, backend-defined */
    void *scratch;        /* scratch_bytes() of arena memory, or NULL */
    size_t arena_end;     /* end offset in the arena of out/scratch (measured peak) */
    const void *in_inline[4];
};

/* One op as a backend sees it. */
typedef struct {
    remat_op op;
    remat_dtype dtype;
    remat_shape shape;
    int nin;
    const remat_dtype *in_dtypes;
    const remat_shape *in_shapes;
    union { /* the member named by the op's parameter kind (remat_op_param) */
        double exponent;      /* pow */
        int64_t int_exponent; /* integer_pow */
        int64_t axis;         /* concatenate */
        uint32_t axes_mask;   /* reductions */
        const int *perm;      /* transpose */
        const int *bdims;     /* broadcast_in_dim */
        const remat_dot_dims *dot;
        int64_t solve_transpose; /* linear_solve: 1 solves A^T x = b */
        const remat_slice_params *slice;
        const remat_pad_params *pad;
        const remat_custom_op *custom;
    } p;
    int32_t aux;
    /* bit k: input k is a splat constant stored as ONE element, to be read as
     * a scalar broadcast to the output shape. Set only on binary elementwise
     * ops (at most one of the two inputs) and on select's on_true/on_false. */
    uint32_t scalar_mask;
    /* NULL, or per input the row-major values of an input that is a constant
     * (NULL for the others); set on dot_general only (the CPU's sparse products) */
    const void *const *in_data;
} remat_exec_op;

/* A fused group of elementwise ops (compile.c / fuse.c): micro-ops in
 * execution order over the instruction's n elements, all of one dtype. An
 * operand src >= 0 is a register (an intermediate of the group, never stored
 * in the arena), src < 0 is external input -1 - src (ins->in[-1 - src]), read
 * as one element when bit (-1 - src) of scalar_in is set. The last micro-op
 * writes ins->out; each earlier one writes register dst. A backend must give
 * the same bits as lowering the ops one by one. */
/* the most registers and micro-ops compile puts in one group, and so the most
 * external inputs (three operands a micro-op) */
#define REMAT_FUSED_MAX_REGS 23
#define REMAT_FUSED_MAX_UOPS 24
#define REMAT_FUSED_MAX_IN (3 * REMAT_FUSED_MAX_UOPS)

/* A set of external inputs of a group, bit k for input k < REMAT_FUSED_MAX_IN
 * (one 32-bit word held only 32: shifting by more was undefined). */
typedef struct {
    uint64_t w[(REMAT_FUSED_MAX_IN + 63) / 64];
} remat_fused_mask;
static inline bool rmi_fused_mask_has(remat_fused_mask m, int k)
{
    return k >= 0 && k < REMAT_FUSED_MAX_IN && ((m.w[k / 64] >> (k % 64)) & 1u);
}
static inline void rmi_fused_mask_set(remat_fused_mask *m, int k)
{
    REMAT_ASSERT(k >= 0 && k < REMAT_FUSED_MAX_IN);
    m->w[k / 64] |= (uint64_t)1 << (k % 64);
}

typedef struct {
    remat_op op;
    int16_t dst;
    int16_t src[3];
    int32_t int_exponent; /* integer_pow */
    double exponent;      /* pow */
} remat_fused_uop;

typedef struct {
    remat_dtype dtype;
    int nin;            /* external inputs */
    remat_fused_mask scalar_in; /* bit k: external input k is one element */
    int n_regs;
    int n_uops;
    const remat_fused_uop *uops;
    /* Broadcasts read in place (fuse.c): the group's n elements seen as a
     * grid of `lanes` columns (0: no broadcast), element i in row i / lanes
     * and column i % lanes. Bit k of row_in: external input k holds one
     * element per column (a bias row: element i reads in[i % lanes]); of
     * col_in: one per row (element i reads in[i / lanes]). Such an input is
     * read only by a micro-op of op REMAT_OP_BROADCAST (kind
     * REMAT_UOP_BCAST), which loads those elements into its register: no
     * (n)-element copy of the vector exists. */
    remat_fused_mask row_in, col_in;
    int64_t lanes;
    /* Optional (NULL: the backend runs the micro-ops): the group compiled
     * into one loop by the backend's compile_lanes (exec/fuse_jit.c), a lane
     * program of one lane per element: buffer k < nin is ins->in[k] (lane
     * stride 0 where scalar_in says so, else 1), buffer nin is ins->out
     * (stride 1); run with count 1 over any range of lanes, buffers moved to
     * its first lane. Same bits as the micro-ops. With lanes > 0 the program
     * has `lanes` lanes (a row input lane stride 1, a column input 0) and
     * runs one step per grid row: over any range of rows, count = rows,
     * step strides lanes elements (full inputs, output), 0 (row, scalar
     * inputs) or 1 element (column inputs). */
    remat_lane_fn compiled;
    /* A group that ends in a reduction (fuse.c; only for a backend with
     * fuse_reduce): red_len > 0 reduced elements per output, red the
     * reduction (REMAT_OP_SUM or REMAT_OP_REDUCE_MAX). The micro-ops (and
     * compiled) then compute the reduction's operand, a chain over
     * ins->n * red_len elements that is never stored: output o of ins->n is
     * the reduction of chain elements [o * red_len, (o + 1) * red_len), each
     * output started at the kernel's initial value and combined with those
     * elements one at a time in ascending order, exactly as the backend's
     * own reduce kernel does (the reduced axes are the operand's trailing
     * ones), so the bits are the unfused ones. */
    remat_op red;
    int64_t red_len;
} remat_fused_op;

/* What a micro-op runs, from its op's row of the table (fused_uop.c): a
 * backend decides it once per micro-op at lowering and switches on it in its
 * loop. rmi_fused_uop_kind_of returns -1 for an op that is not a micro-op
 * (not elementwise). */
typedef enum { REMAT_UOP_UNARY, REMAT_UOP_INTEGER_POW, REMAT_UOP_POW, REMAT_UOP_SELECT, REMAT_UOP_BINARY,
               REMAT_UOP_BCAST /* broadcast_in_dim of a row_in/col_in input */ } remat_fused_uop_kind;
int rmi_fused_uop_kind_of(remat_op op);

typedef struct {
    const char *name;
    bool (*supports_op)(const remat_exec_op *op);
    size_t (*scratch_bytes)(const remat_exec_op *op);
    /* Sets ins->fn and ins->aux; aux memory comes from alloc(ctx, bytes),
     * which lives as long as the program and returns NULL when out of memory
     * (lower then returns REMAT_ERR_NOMEM). */
    remat_status (*lower)(const remat_exec_op *op, remat_instr *ins, void *(*alloc)(void *ctx, size_t bytes),
                          void *ctx);
    /* Optional (NULL: no fusion): lowers a fused group, as lower does one op. */
    remat_status (*lower_fused)(const remat_fused_op *op, remat_instr *ins, void *(*alloc)(void *ctx, size_t bytes),
                                void *ctx);
    /* Whether lower_fused takes groups that end in a reduction over trailing
     * axes (remat_fused_op.red_len; false: reductions stay unfused). */
    bool fuse_reduce;
    /* Optional (NULL: compile emits pad then add): add(x, pad(g)) of f32/f64
     * with zero interior as one instruction, ins->in[0] = x, ins->in[1] = g,
     * out (out_shape) never overlapping either; pad_first: the add was
     * add(pad(g), x). Must give the bits of the two ops (x + 0 outside g). */
    remat_status (*lower_add_pad)(remat_dtype dt, const remat_shape *out_shape, const remat_shape *g_shape,
                                  const remat_pad_params *pad, int pad_first, remat_instr *ins,
                                  void *(*alloc)(void *ctx, size_t bytes), void *ctx);
    /* Optional (NULL: loop bodies are interpreted op by op): compiles n lane
     * programs (backend/lane.h) into native loops, out[i] running p[i]. Identical
     * programs may share code; the functions stay valid for the life of the process.
     * cache_dir: the disk cache of compiled code to use (the compile's
     * options, exec/hop.h rmi_lane_cache_dir); NULL: none. be: the backend
     * object the code will run on (CUDA: its device decides the
     * architecture, never the thread's current device). */
    remat_status (*compile_lanes)(const remat_backend *be, int n, const remat_lane_program *const *p,
                                  remat_lane_fn *out, const char *cache_dir);
    /* With compile_lanes: whether compiling can work now (not failed
     * before), asked before translating. Whether the compile wants it is
     * its options' (remat_compile_options.jit). */
    bool (*can_compile_lanes)(void);
    /* Optional (NULL: never cached): what compile_lanes would give when the
     * code is at hand without compiling (cached in this process, or on disk
     * from an earlier one), else REMAT_ERR_UNSUPPORTED with no message. Lets
     * a caller that would not compile for a short run (src/lanes/tier.c) still
     * take code that costs next to nothing to get. */
    remat_status (*load_lanes)(int n, const remat_lane_program *const *p, remat_lane_fn *out, const char *cache_dir);
    /* Optional, with load_lanes (NULL: a caller cannot weigh compiling, and
     * compiles): the predicted CPU time of compile_lanes for p when nothing
     * is cached, in ns (CPU: cpu/jit_cost.h), which src/lanes/tier.c weighs
     * against the interpreted work compiling would save. */
    double (*lanes_compile_ns)(int n, const remat_lane_program *const *p);
    /* Whether compiled lane runs are cut for the host (scan_runtime_lanes.c):
     * blocked so that a block's store fits a core's cache, and split into
     * lane ranges on the thread pool. The CPU sets it; a backend whose lanes
     * run elsewhere (CUDA: a thread per lane, a launch per run on the
     * program's stream) leaves it false, and each run covers all lanes. */
    bool host_lane_cuts;
    /* Optional (NULL: the caller calls fn itself): runs a lane function
     * compile_lanes gave, as fn(bufs, strides, count, lanes) would, in cx
     * (CUDA: launched on cx's stream). Loop runtimes call lane code through
     * it (rmi_lanes_call, lane.h). */
    void (*run_lanes)(const remat_exec_ctx *cx, remat_lane_fn fn, char *const *bufs, const int64_t *strides,
                      int64_t count, int64_t lanes);
    /* Device memory for the arena, constants and loop stores (CPU: aligned
     * malloc). Memory from mem_alloc is only read and written by kernels and
     * the two entries below, so that it may live on a device. */
    void *(*mem_alloc)(const remat_exec_ctx *cx, size_t bytes);
    void (*mem_free)(const remat_exec_ctx *cx, void *p);
    /* dst := src, bytes of device memory (a snapshot taken or restored, a
     * carry moved in or out of a loop); the ranges do not overlap. */
    void (*mem_copy)(const remat_exec_ctx *cx, void *dst, const void *src, size_t bytes);
    /* n elements of dtype dt at dst := value (converted to dt; -0.0 stays -0.0). */
    void (*mem_fill)(const remat_exec_ctx *cx, void *dst, remat_dtype dt, double value, size_t n);
    /* The entries below are optional, all NULL for a backend whose memory
     * is host memory (the CPU): the program then reads and writes caller
     * buffers in place and has no state of its own.
     * copy_in / copy_out: host memory -> backend memory and back, done
     * (synchronised) when they return; a failure is kept for finish(). */
    void (*copy_in)(const remat_exec_ctx *cx, void *dst, const void *host_src, size_t bytes);
    void (*copy_out)(const remat_exec_ctx *cx, void *host_dst, const void *src, size_t bytes);
    /* Optional, with copy_in (NULL: plain malloc'ed host memory): host
     * memory that copy_in / copy_out move fastest (CUDA: pinned,
     * cudaHostAlloc), for the slow tier of offloaded residuals
     * (exec/offload.c) and two-tier loops (scan/loop_slow.c). NULL when out
     * of memory, nothing kept for finish(); host_free(cx, NULL) does nothing.
     * cx->state may be NULL; a block is given back with the state it was
     * taken with, which may keep it for its next run instead of freeing it
     * (CUDA: kernels/cuda/pinned.h; freed with the state). */
    void *(*host_alloc)(const remat_exec_ctx *cx, size_t bytes);
    void (*host_free)(const remat_exec_ctx *cx, void *p);
    /* A state for remat_exec_ctx.state (CUDA: a stream on be's device, its
     * error record): a root program's, made at its first run, or a
     * short-lived one (a compile's uploads, remat_backend_upload). NULL when
     * it cannot be made (message set). With program_new set, every entry but
     * mem_alloc / mem_free needs a cx with a state. */
    void *(*program_new)(remat_backend *be);
    void (*program_free)(void *state);
    /* Waits for what cx queued on its stream: REMAT_OK, or the first device
     * error since cx's last finish (message set). */
    remat_status (*finish)(const remat_exec_ctx *cx);
    /* Optional: ops this backend runs on the host through copies (CUDA:
     * custom ops, linear_solve), counted in remat_stats.host_ops. */
    bool (*on_host)(remat_op op);
} remat_backend_iface;

struct remat_backend {
    remat_backend_iface iface;
    void *context;
};

/* fn(bufs, strides, count, lanes) in cx: through the backend's run_lanes
 * when it has one (CUDA: on cx's stream), else called directly. */
static inline void rmi_lanes_call(const remat_exec_ctx *cx, remat_lane_fn fn, char *const *bufs,
                                  const int64_t *strides, int64_t count, int64_t lanes)
{
    if (cx->be->iface.run_lanes)
        cx->be->iface.run_lanes(cx, fn, bufs, strides, count, lanes);
    else
        fn(bufs, strides, count, lanes);
}

/* A short-lived context on be (exec_ctx.c): with a state from program_new
 * when be has one (a compile's uploads, remat_backend_upload). REMAT_OK, or
 * the error with cx->state NULL. */
remat_status rmi_exec_ctx_open(remat_backend *be, remat_exec_ctx *cx);
/* Waits for cx's work (finish) and frees its state: finish's status. */
remat_status rmi_exec_ctx_close(remat_exec_ctx *cx);

/* ---- static memory planning (pure: sizes and lifetimes in, offsets out) ---- */
typedef struct {
    size_t size;      /* bytes (rounded up to the alignment by the planner) */
    int32_t first;    /* instruction that writes it */
    int32_t last;     /* last instruction that reads it (>= first) */
    size_t offset;    /* out: offset in the arena */
} remat_plan_buf;

/* Assigns offsets so that buffers whose lifetimes overlap never overlap in
 * memory and sets *arena to the arena size. Greedy first-fit in execution
 * order. REMAT_ERR_NOMEM (offsets unset) when its working memory, two arrays
 * of n, cannot be allocated. */
remat_status rmi_plan_offsets(remat_plan_buf *bufs, int32_t n, size_t align, size_t *arena);

#endif

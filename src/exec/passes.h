/*
 * passes.h (internal) — compiling a function is a pipeline of passes over one
 * record per node (remat_cnode). compile.c drives it, in this order:
 *
 *   order.c           live nodes (dead code gets nothing), the forward values
 *                     the backward reads (residual bytes), and which outputs
 *                     their computing instruction writes directly; execution
 *                     order is node order
 *   storage.c         splat constants kept as one element (rmi_pass_splat)
 *   add_pad.c         rewrite: add(x, pad(g)) as one instruction
 *   fuse.c            rewrite: groups of elementwise ops as one instruction
 *   concat_inplace.c  rewrite: operands written into their concatenate's buffer
 *   storage.c         storage class of each value, instruction numbering,
 *                     arena buffers and their lifetimes (rmi_pass_storage)
 *   lower.c           the op each instruction hands the backend: support and
 *                     scratch (rmi_pass_ops)
 *   out_scratch.c     buffers held in output buffers before their first write
 *                     (root programs; rmi_pass_out_scratch)
 *   storage.c         the static arena plan, arena and constant pool
 *                     (rmi_pass_plan)
 *   lower.c           instructions, copies into outputs, run-time patches
 *                     (rmi_pass_lower)
 *
 * Each pass fills its fields of the records and reads those of the passes
 * before it. A pass returns REMAT_OK or an error it has recorded
 * (rmi_error); the driver frees everything on either path.
 */
#ifndef REMAT_EXEC_PASSES_H
#define REMAT_EXEC_PASSES_H

#include <stdbool.h>
#include <stdint.h>

#include "ad/graph_view.h"
#include "backend/backend_impl.h"
#include "exec/program_impl.h"

enum { ST_NONE, ST_ARENA, ST_CONST, ST_INPUT, ST_OUTPUT, ST_TIER /* offload.c: bytes into the slow tier */ };

typedef struct rmi_offload_store rmi_offload_store;

/* Where a value lives. */
typedef struct {
    uint8_t kind;  /* ST_* */
    int32_t index; /* ST_INPUT/ST_OUTPUT: which; ST_ARENA: planner buffer */
    size_t view;   /* bytes into that storage: a constant's place in the
                      pool, a view's into its operand, a slot's into its
                      concatenate */
} remat_storage;

/* Everything the passes decide about one node, by the pass that decides it
 * (fields of one size together: every pass sweeps the records, so they are
 * kept to one cache line). */
typedef struct {
    bool live;     /* order.c: needed for an output */
    bool scalar;   /* storage.c, splat: a splat constant kept as one element */
    bool absorbed; /* add_pad.c: a pad absorbed by its add: no instruction, no storage */
    bool elided;   /* concat_inplace.c: a concatenate whose operands all write into it
                      (its storage is set by the first of them) */
    int8_t padadd; /* add_pad.c: an add absorbing the pad that is its operand padadd, else -1 */
    int32_t bind;  /* order.c: the caller output its instruction writes, or -1 */
    /* fuse.c (without fusion: root = self, gsize = 1, gnext = self) */
    int32_t root;  /* the root of its fused group */
    int32_t gsize; /* members of the group it roots */
    int32_t gnext; /* the root: its group's first member; a member: the next
                      one (node order, the root last) */
    int32_t place_in;      /* concat_inplace.c: the concatenate whose buffer it writes into, or -1 */
    int32_t instr;         /* storage.c: its instruction, or -1 */
    size_t place_off;      /* concat_inplace.c: bytes into that buffer */
    remat_storage st;      /* storage.c: where its value lives */
    remat_storage *hop_st; /* storage.c: a HOP's storage of each output (owned) */
} remat_cnode;

/* What the backend is handed for one instruction (lower.c, rmi_pass_ops). */
typedef struct {
    remat_exec_op op;
    int32_t scratch_buf; /* planner buffer of its scratch, or -1 */
} remat_cinstr;

/* The pipeline's state: the records and what is per program. */
typedef struct {
    const remat_graph_view *g; /* the function compiled (ad/graph_view.h) */
    remat_backend *be;
    remat_program *p;
    remat_cnode *N;       /* one per node */
    int32_t *order;       /* order.c: the live nodes in execution order, which
                             every later pass walks instead of all nodes */
    int32_t n_order;
    uint8_t *direct;      /* per output: written by its instruction, no copy */
    int n_copies;         /* outputs copied at the end instead */
    int32_t n_instr;      /* instructions before the copies */
    remat_cinstr *ops;    /* per instruction (before the copies) */
    remat_plan_buf *bufs; /* arena buffers for the planner */
    int32_t n_bufs, cap_bufs;
    size_t const_bytes;
    size_t tier_bytes;          /* offload.c: the offloaded residuals' extent in the tier */
    uint8_t *tier;              /* offload.c: per node, an OFFLOAD node that goes to the tier (NULL: none) */
    rmi_offload_store *offload; /* offload.c: the program's store, made at the first one lowered */
} remat_compile_ctx;

/* Arena buffers are aligned to this in the plan. */
enum { REMAT_ARENA_ALIGN = 64 };

/* Memory that lives as long as the program (its remat_arena), NULL when out
 * of memory. */
void *rmi_prog_alloc(remat_program *p, size_t bytes);
/* The same as the `alloc` of the backends' lower entries and of HOP rules
 * (NULL when out of memory; they return REMAT_ERR_NOMEM). */
void *rmi_prog_alloc_backend(void *ctx, size_t bytes);
/* Backend memory (iface.mem_alloc) freed with the program, for HOP
 * instructions (hop.h `mem`); NULL when out of memory. */
void *rmi_prog_mem(void *ctx, size_t bytes);
/* Records REMAT_ERR_NOMEM naming what could not be allocated. */
remat_status rmi_compile_nomem(const char *what);

/* A new arena buffer of `size` bytes written first by instruction `first`;
 * -1 when out of memory (recorded). */
int32_t rmi_compile_add_buf(remat_compile_ctx *c, size_t size, int32_t first);

size_t rmi_node_bytes(const remat_node *n);
/* Whether n's value is its operand's storage (reshape, name, view slice, projection). */
bool rmi_node_is_alias(const remat_graph_view *g, const remat_node *n);

/* offload.c: which OFFLOAD nodes go to the tier (c->tier), their storage,
 * and the instructions of OFFLOAD and RELOAD nodes (last: the program's
 * last such instruction) */
remat_status rmi_offload_mark(remat_compile_ctx *c, uint8_t **tier);
remat_status rmi_offload_storage(remat_compile_ctx *c, int32_t v);
remat_status rmi_offload_lower(remat_compile_ctx *c, int32_t v, remat_instr *I, bool last);

remat_status rmi_pass_order(remat_compile_ctx *c);
remat_status rmi_pass_splat(remat_compile_ctx *c);
remat_status rmi_pass_add_pad(remat_compile_ctx *c);
remat_status rmi_pass_fuse(remat_compile_ctx *c);
remat_status rmi_pass_concat_inplace(remat_compile_ctx *c);
remat_status rmi_pass_storage(remat_compile_ctx *c);
remat_status rmi_pass_ops(remat_compile_ctx *c);
remat_status rmi_pass_out_scratch(remat_compile_ctx *c);
remat_status rmi_pass_plan(remat_compile_ctx *c);
remat_status rmi_pass_lower(remat_compile_ctx *c);
/* REMAT_PLAN_DUMP=1: the plan's buffers and what is live at its peak on
 * stderr (plan_dump.c, a debugging aid). */
void rmi_plan_dump(const remat_compile_ctx *c, size_t arena_bytes);

#endif

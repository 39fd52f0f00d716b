/* program_impl.h (internal) — a compiled program: instructions over one arena. */
#ifndef REMAT_EXEC_PROGRAM_IMPL_H
#define REMAT_EXEC_PROGRAM_IMPL_H

#include "backend/backend_impl.h"
#include "core/arena.h"
#include "exec/hop.h"

/* An instruction pointer slot that must point at caller memory, set per run. */
typedef struct {
    const void **slot;
    int16_t is_output;
    int32_t index;
    size_t off; /* bytes into the caller's buffer (a view of it) */
} remat_patch;

struct remat_program {
    remat_backend *be;
    remat_instr *instrs;
    int32_t n_instrs;
    int32_t n_copies; /* trailing instructions that copy into outputs */
    int32_t n_fused;  /* ops run inside another's fused instruction (counted as ops, not instructions) */
    int32_t n_fused_compiled; /* fused instructions running a compiled loop (fuse_jit.c) */
    int32_t n_fused_reductions; /* fused instructions ending in a reduction (fuse.c: its chain never stored) */
    void *arena, *consts;
    size_t arena_bytes, const_bytes, residual_bytes, residual_arg_bytes;
    int n_in, n_out;
    remat_tensor *in_desc, *out_desc;
    const char **in_names;
    remat_patch *patches; /* those reading inputs first, then those of outputs */
    int32_t n_patches, n_in_patches;
    int64_t op_counts[REMAT_OP_COUNT];
    int64_t recompute_instrs;
    int64_t runs;                    /* sub-programs: executions since the root's run began */
    size_t hw_max;                   /* sub-programs: arena high-water mark over those runs */
    bool elsewhere;                  /* sub-programs: evaluated by a compiled loop instead */
    remat_exec_counters *counters;   /* the root's */
    remat_exec_counters own_counters; /* used when this is the root */
    void **dev_blocks;               /* backend memory HOP instructions asked for (hop.h mem) */
    int n_dev_blocks, cap_dev_blocks;
    /* backends with copy_in (backend_impl.h): the root's state (its stream)
     * and its staging block for caller host buffers, made at the first run
     * that needs them: inputs then outputs, each REMAT_ARENA_ALIGN-aligned */
    void *be_state;
    void *io;
    size_t io_bytes;
    remat_arena mem; /* parameter blocks, names, descriptors */
};

#endif

/*
 * hop.h (internal) — what the compiler offers higher-order primitives (scan):
 * compiling their bodies into sub-programs that run without per-call checks,
 * and counters that a run reports in remat_stats.
 */
#ifndef REMAT_EXEC_HOP_H
#define REMAT_EXEC_HOP_H

#include "backend/backend_impl.h"

typedef struct remat_exec_counters {
    int64_t forward_evals;       /* loop body evaluations */
    size_t peak_snapshot_bytes;  /* snapshots + tapes held at once (max over loops) */
    size_t pred_snapshot_bytes;  /* the schedules' prediction of the same, set at compile */
    size_t carry_bytes, tape_bytes; /* of the scan with the largest prediction */
    int64_t compiled_loops;      /* scan nodes lowered to native loops (remat_memory_plan) */
    remat_program **subs;        /* every sub-program compiled under the root */
    int n_subs, cap_subs;
} remat_exec_counters;

typedef struct remat_hop_lowering {
    remat_backend *be;
    int nin;
    const remat_dtype *in_dtypes;
    const remat_shape *in_shapes;
    int nout;
    void **outs; /* resolved output buffers (arena) */
    void *(*alloc)(void *ctx, size_t bytes); /* lives as long as the program */
    void *ctx;
    remat_exec_counters *counters;
} remat_hop_lowering;

/* Compiles fn as a sub-program of the program owning `counters` (which frees it). */
remat_status remat_compile_sub(const remat_fn *fn, remat_backend *be, remat_exec_counters *counters,
                               remat_program **out);
/* Runs a program on raw pointers: no checks, no stats (the caller checked). */
void remat_program_exec(remat_program *p, const void *const *in, void *const *out);
/* The sub-program's evaluations happen elsewhere (a compiled loop,
 * backend/lane.h): its arena is released and no longer counted in memory
 * plans, and it must not be executed again; its op counts still feed
 * remat_stats through remat_program_add_runs(). */
void remat_program_run_elsewhere(remat_program *p);
/* Counts n evaluations done elsewhere (remat_stats.ops_executed, op_counts). */
void remat_program_add_runs(remat_program *p, int64_t n);
/* Highest arena offset a sub-program touches (its arena is separate). */
size_t remat_program_arena_bytes(const remat_program *p);

#endif

/*
 * hop.h (internal) — what the compiler offers higher-order primitives (scan):
 * compiling their bodies into sub-programs that run without per-call checks,
 * device memory that lives as long as the program, and a per-HOP stats hook
 * through which a primitive reports what only it knows (loop evaluations,
 * snapshot stores) into remat_stats and remat_memory_plan.
 */
#ifndef REMAT_EXEC_HOP_H
#define REMAT_EXEC_HOP_H

#include "backend/backend_impl.h"

/* A HOP instruction's statistics. The root program calls begin_run before
 * each of its runs (with the run's context: its host_alloc blocks are the
 * state's, kept between runs), report_run after one that asked for remat_stats, and
 * report_plan from remat_program_plan, in lowering order; each adds its own
 * share to what the earlier ones wrote (a sum, a max, ...). run_status
 * (optional) after every run: how the instruction's executions since
 * begin_run went. Kernels cannot return a status; one that could not do its
 * work (out of memory: a scan whose plan was not kept replays its schedule,
 * which allocates) records it there, writes nothing it cannot vouch for, and
 * remat_run returns it (message already set) instead of REMAT_OK. */
typedef struct {
    void (*begin_run)(const remat_exec_ctx *cx, void *self);
    void (*report_run)(const void *self, remat_stats *stats);
    void (*report_plan)(const void *self, remat_memory_plan *plan);
    remat_status (*run_status)(const void *self);
    /* optional: the message for a run_status other than REMAT_OK (NULL:
     * remat_run says which status) */
    const char *(*run_error)(const void *self);
    /* optional: the program is being freed (what a run cut short left
     * held, released) */
    void (*release)(void *self);
    void *self;
} remat_hop_stats;

typedef struct remat_exec_sub_key remat_exec_sub_key;

typedef struct remat_exec_counters {
    remat_program **subs;        /* every sub-program compiled under the root */
    int n_subs, cap_subs;
    remat_exec_sub_key *keyed;   /* the shared ones by key (rmi_compile_sub_shared) */
    int n_keyed, cap_keyed;
    remat_hop_stats *hooks;      /* every HOP instruction's stats, under the root */
    int n_hooks, cap_hooks;
    /* how the root was compiled: its sub-programs and HOP instructions take
     * every compile-time knob from here. cache_dir is resolved (the default
     * directory filled in, in the root's memory): NULL only with no_cache. */
    remat_compile_options opts;
    /* the root compile's context (backend_impl.h remat_exec_ctx, with a
     * short-lived state on a device backend): its sub-programs' and HOP
     * rules' uploads and fills at compile time. Closed (state NULL, be
     * kept) when the root's compile ends. */
    remat_exec_ctx compile_cx;
} remat_exec_counters;

/* The disk cache of compiled loops a compile with o uses (the backend's
 * compile_lanes/load_lanes); NULL: none. */
static inline const char *rmi_lane_cache_dir(const remat_compile_options *o)
{
    return o->no_cache ? NULL : o->cache_dir;
}

typedef struct remat_hop_lowering {
    remat_backend *be;
    int nin;
    const remat_dtype *in_dtypes;
    const remat_shape *in_shapes;
    int nout;
    void **outs; /* resolved output buffers (arena) */
    void *(*alloc)(void *ctx, size_t bytes); /* host memory, lives as long as the program; NULL when out of memory */
    /* The backend's memory (iface.mem_alloc), freed with the program: what
     * the instruction's kernels read and write (its carries, scratch). NULL
     * when out of memory. */
    void *(*mem)(void *ctx, size_t bytes);
    void *ctx;
    remat_exec_counters *counters;
    bool nested; /* inside a sub-program: runs once per evaluation of an enclosing body */
} remat_hop_lowering;

/* Registers a HOP instruction's stats hook with the root (REMAT_ERR_NOMEM). */
remat_status rmi_hop_stats_add(remat_exec_counters *counters, const remat_hop_stats *hook);
/* Compiles fn as a sub-program of the program owning `counters` (which frees it). */
remat_status rmi_compile_sub(const remat_fn *fn, remat_backend *be, remat_exec_counters *counters,
                             remat_program **out);
/* rmi_compile_sub, or the sub-program compiled earlier under the same
 * root with the same key (key_len bytes: the caller's word that equal keys
 * mean functions the compiler cannot tell apart, node by node). For loop
 * bodies whose executions never overlap (the root runs its instructions one
 * at a time, and a body's executions end before the next starts) and that
 * are never run elsewhere (rmi_program_run_elsewhere): one arena serves
 * them all, and their runs add up in the one program's counts. */
remat_status rmi_compile_sub_shared(const remat_fn *fn, const void *key, size_t key_len, remat_backend *be,
                                    remat_exec_counters *counters, remat_program **out);
/* Runs a program on raw pointers in cx (the running instruction's context,
 * passed on): no checks, no stats (the caller checked). */
void rmi_program_exec(const remat_exec_ctx *cx, remat_program *p, const void *const *in, void *const *out);
/* The sub-program's evaluations happen elsewhere (a compiled loop,
 * backend/lane.h): its arena is released and no longer counted in memory
 * plans, and it must not be executed again; its op counts still feed
 * remat_stats through rmi_program_add_runs(). */
void rmi_program_run_elsewhere(remat_program *p);
/* Counts n evaluations done elsewhere (remat_stats.ops_executed, op_counts). */
void rmi_program_add_runs(remat_program *p, int64_t n);

#endif

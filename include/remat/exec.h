/*
 * remat/exec.h — compiling a function for a backend and running it.
 *
 * remat_compile() fixes an execution order (the order nodes were built in,
 * which reverse mode chooses so that recomputation happens late), drops what
 * the outputs do not need, and plans every intermediate buffer into one arena
 * (liveness + offsets), so the peak memory is known before the run:
 *
 *   remat_program *p;
 *   remat_compile(grad_fn, remat_backend_cpu(), &p);
 *   remat_memory_plan plan;
 *   remat_program_plan(p, &plan);             // plan.arena_bytes: predicted peak
 *   remat_tensor in[2] = {tw, tx}, out[1] = {tdw};
 *   remat_stats st;
 *   if (remat_run(p, 2, in, 1, out, &st) != REMAT_OK) puts(remat_last_error());
 *   // st.peak_arena_bytes == plan.arena_bytes
 *
 * On the CPU inputs are read in place (not copied); a device backend copies
 * them in and the outputs out (remat_run_device: no copies). Inputs must not
 * overlap the outputs.
 * Same program, same inputs: same bits.
 *
 * Threads. Building, differentiating, compiling and running are safe from
 * several threads at once as long as each object (remat_fn, remat_program,
 * and the models' handles built on them) is used by one thread at a time; a
 * program owns its arena, so one program runs on one thread at a time, while
 * distinct programs (even of the same function) run concurrently and give
 * the bits a single thread would. What the threads share is process-wide and
 * locked: the CPU backend object (read-only), the cache of compiled loops
 * (remat_memory_plan.compiled_loops; one compilation at a time, its code kept
 * for the life of the process and reused by every thread), and GSL's error
 * handler, which the fitters turn off while any fit runs. The last error
 * message is per thread (remat/status.h). Environment variables (REMAT_NO_JIT,
 * REMAT_NO_FUSION, ...) are read at compile time by remat_compile: do not
 * change them while other threads compile, or pass remat_compile_options
 * (remat_compile_opts). tests/test_threads.c checks all of this under
 * ThreadSanitizer.
 */
#ifndef REMAT_EXEC_H
#define REMAT_EXEC_H

#include "export.h"

#include <stddef.h>

#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct remat_backend remat_backend;
typedef struct remat_program remat_program;

/* The CPU backend (loops + OpenBLAS). A process-wide object; never freed. */
REMAT_API remat_backend *remat_backend_cpu(void);
/* The CUDA backend on device `device` (kernels/cuda: elementwise, reductions
 * and structural kernels, dot_general on cuBLAS). A program's arena and
 * constants live in device memory, planned as on the CPU; each program runs
 * on a stream of its own. remat_run copies the caller's host buffers in and
 * out; remat_run_device takes buffers already on the device. Custom ops and
 * linear_solve run on the host through copies (remat_stats.host_ops). One object per device
 * for the process; never freed. NULL, with remat_last_error() saying why,
 * when remat was built without CUDA ("remat was built without CUDA") or the
 * device is not there ("no CUDA device: ..."). */
REMAT_API remat_backend *remat_backend_cuda(int device);
/* "cpu", "cuda" (device 0) or "cuda:N": the backend; NULL or "" is the CPU.
 * Anything else is NULL with REMAT_ERR_ARG's message naming it; an
 * unavailable CUDA is NULL with remat_backend_cuda's message. The CLI, the
 * examples and the tests take the name from REMAT_BACKEND or --backend. */
REMAT_API remat_backend *remat_backend_from_name(const char *name);
/* *out := the backend REMAT_BACKEND names (the CPU when unset), which the
 * models (PFR reactor, networks' training, fitting) and the remat tool
 * compile for. An unavailable backend is its error (*out NULL). */
REMAT_API remat_status remat_backend_from_env(remat_backend **out);
/* remat_compile for that backend */
REMAT_API remat_status remat_compile_env(const remat_fn *fn, remat_program **out);
REMAT_API const char *remat_backend_name(const remat_backend *be); /* NULL: "(null)" */

/* Memory of the backend (CUDA: device memory; CPU: aligned host memory), for
 * buffers a training loop keeps on the device between runs (remat_run_device).
 * alloc: NULL when out of memory or be is NULL (message set); free(NULL) is a
 * no-op. upload copies host -> backend memory, download backend -> host,
 * both done when they return. */
REMAT_API void *remat_backend_alloc(remat_backend *be, size_t bytes);
REMAT_API void remat_backend_free(remat_backend *be, void *p);
REMAT_API remat_status remat_backend_upload(remat_backend *be, void *dst, const void *host_src, size_t bytes);
REMAT_API remat_status remat_backend_download(remat_backend *be, void *host_dst, const void *src, size_t bytes);

typedef struct {
    size_t arena_bytes;     /* predicted peak of intermediate buffers */
    size_t residual_bytes;  /* forward values the backward reads (arguments included) */
    size_t constant_bytes;
    int64_t instructions;           /* primitive ops (a fused elementwise group counts its members) */
    int64_t recompute_instructions; /* forward ops re-run by the backward */
    size_t peak_snapshot_bytes;     /* scan carry snapshots + step tapes the schedule will
                                       hold at once (largest over the program's scans) */
    size_t scan_carry_bytes;        /* of that scan: one carry snapshot */
    size_t scan_tape_bytes;         /* of that scan: one step tape (residuals of one step) */
    int64_t compiled_loops;         /* scan nodes whose body runs as native loops (libgccjit)
                                       rather than op by op: same results, less time. Only
                                       where it pays (REMAT_JIT, remat/scan.h): a short loop
                                       stays interpreted; asked again after runs, it may
                                       have grown. REMAT_NO_JIT=1 (or the option
                                       jit = REMAT_JIT_NEVER) turns it off. */
    int64_t deferred_loops;         /* scan nodes interpreted for now that compile at the
                                       start of the run that brings their runs' interpreted
                                       work past the compile's cost (REMAT_JIT=auto) */
    int64_t forward_evals;          /* scan body evaluations a run does (stats.forward_evals),
                                       counted by replaying the schedules at compile; a scan
                                       nested in another's body is not counted here. A
                                       lane-blocked scan does one more pass over its steps
                                       (its forward node's) than its schedule predicts. */
    int64_t scan_block_lanes;       /* lanes per block of a scan run lane block by lane block
                                       (the largest; 0: none): forward and reverse of one block
                                       run back to back, so a block's share of the store,
                                       peak_snapshot_bytes * block / lanes, is what is hot */
    size_t scan_block_store_bytes;  /* of that scan: the store one thread running its blocks
                                       holds (its blocks reuse it; 0: blocks run in the
                                       schedule's store). The arena still reserves
                                       peak_snapshot_bytes; the blocks touch one such store
                                       per thread running them. */
    int64_t unrolled_loops;         /* interpreted scan nodes that run remat_scan_options.unroll
                                       (> 1) bodies as one sub-program per iteration of their
                                       plain loop (compiled loops ignore unroll) */
    size_t residual_arg_bytes;      /* of residual_bytes: the program's arguments (a network's
                                       weights and batch); the rest is what the forward made */
    size_t tier_bytes;              /* the slow snapshot tier of two-tier scans: the file each
                                       run reserves (the highest slow slot the schedule
                                       writes, times the carry), summed over the scans */
    size_t offload_bytes;           /* residuals an offload policy (remat_policy_decide's
                                       REMAT_POLICY_OFFLOAD) keeps in the slow tier instead
                                       of the arena: the file each run reserves (each value
                                       64-byte aligned); residual_bytes counts them too */
} remat_memory_plan;

typedef struct {
    size_t peak_arena_bytes;      /* measured high-water mark of the arena */
    size_t residual_bytes;        /* forward values the backward read */
    size_t peak_snapshot_bytes;   /* scan carry snapshots (and step tapes) held at once */
    int64_t ops_executed;         /* primitive ops, fused ones included (as plan.instructions) */
    int64_t recomputed_ops;       /* forward ops executed again by the backward */
    int64_t forward_evals;        /* scan body evaluations */
    int64_t op_counts[REMAT_OP_COUNT];
    int64_t host_ops;             /* ops a device backend ran on the host through copies
                                     (CUDA: custom ops, whose kernels are the caller's C
                                     functions, and linear_solve); 0 on the CPU */
    double seconds;
    size_t tier_bytes;            /* the slow snapshot tier: the extent of its files written
                                     (remat_memory_plan.tier_bytes, measured) */
    size_t offload_bytes;         /* offloaded residuals: the extent of the tier file written
                                     (remat_memory_plan.offload_bytes, measured) */
} remat_stats;

/* Threads the CPU backend may use inside one run (the calling thread
 * included): large elementwise groups are split across them, with the bits
 * of one thread. The default is REMAT_NUM_THREADS from the environment, else
 * the CPUs this process may run on; n = 0 restores the CPU count, n outside
 * 0..256 is REMAT_ERR_ARG. Process-wide; takes effect at the next run. A run
 * finding the workers busy with another thread's run computes on its own
 * thread. BLAS calls use OpenBLAS's own threads (OPENBLAS_NUM_THREADS). */
REMAT_API remat_status remat_set_num_threads(int n);
REMAT_API int remat_num_threads(void);

/* remat_compile_opts(fn, be, NULL, out): every compile-time knob from the
 * environment (remat_compile_options). */
REMAT_API remat_status remat_compile(const remat_fn *fn, remat_backend *be, remat_program **out);

/* How to compile, per call. Written with designated initializers; a field
 * left zero is the library's default (not the environment's):
 *
 *   remat_compile_options o = {.jit = REMAT_JIT_NEVER, .no_fusion = true};
 *   remat_compile_opts(fn, NULL, &o, &p);   // the CPU: o.backend is NULL
 *
 * remat_compile_options_default() is that all-zero value. A NULL options
 * pointer is the environment's options, read in one place (src/core/config.c),
 * which is what remat_compile does:
 *
 *   variable                 field              meaning
 *   REMAT_JIT                jit                auto | always | never (anything else: auto, said once)
 *   REMAT_NO_JIT=1           jit                never (wins over REMAT_JIT)
 *   REMAT_CACHE_DIR          cache_dir          where compiled loops are kept across processes
 *   REMAT_NO_CACHE=1         no_cache           no disk cache
 *   XDG_CACHE_HOME, HOME     (cache_dir NULL)   the default: $XDG_CACHE_HOME/remat, else ~/.cache/remat
 *   REMAT_NUM_THREADS        (num_threads)      the pool's threads at its start, read once; from_env
 *                                               leaves num_threads 0 (a compile does not undo
 *                                               remat_set_num_threads)
 *   REMAT_SCAN_BLOCK         scan_block_lanes   lanes per block (invalid or < 2: not blocked)
 *   REMAT_SCAN_PLAN_MAX_OPS  scan_plan_max_ops  largest scan plan kept (0: none)
 *   REMAT_NO_FUSION=1        no_fusion          no elementwise fusion
 *   REMAT_NO_INPLACE=1       no_inplace         no in-place concatenate / add of a pad / intermediates
 *                                               in output buffers
 *   REMAT_BACKEND            backend            cpu | cuda | cuda:N (remat_backend_from_name)
 *   REMAT_TIER_DIR           tier_dir           the slow snapshot tier's directory
 *
 * "=1": any value but "" and "0". Debugging aids stay environment-only, read
 * where they act: REMAT_JIT_DEBUG, REMAT_JIT_DUMP, REMAT_CACHE_DEBUG,
 * REMAT_DUMP_LANES, REMAT_GCCJIT_LIB, REMAT_NVRTC, REMAT_PLAN_DUMP (every
 * arena buffer of each compiled program and what is live at its peak, on
 * stderr) (docs/DESIGN.md). Same
 * function, same inputs: the same bits under any options. */
typedef enum {
    REMAT_JIT_AUTO = 0, /* compile a loop's body where the cost model says it pays */
    REMAT_JIT_ALWAYS,   /* compile every loop body that has a lane form */
    REMAT_JIT_NEVER,    /* interpret op by op */
    REMAT_JIT_MODE_COUNT
} remat_jit_mode;

#define REMAT_SCAN_BLOCK_NONE ((int64_t)-1)  /* scan_block_lanes: never blocked */
#define REMAT_SCAN_PLAN_NONE ((int64_t)-1)   /* scan_plan_max_ops: keep no plan (streamed) */

typedef struct {
    remat_jit_mode jit;
    /* Directory of the disk cache of compiled loops (made 0700 if missing);
     * NULL: the default ($XDG_CACHE_HOME/remat, else $HOME/.cache/remat);
     * "" is REMAT_ERR_VALUE (no_cache says none). Copied by the compile. */
    const char *cache_dir;
    bool no_cache;            /* no disk cache: compile in this process only */
    int num_threads;          /* 0: as remat_set_num_threads left it; else that (1..256),
                                 process-wide, as remat_set_num_threads(num_threads) */
    int64_t scan_block_lanes; /* 0: the cost model chooses; REMAT_SCAN_BLOCK_NONE: not
                                 blocked; n >= 2: blocks of n lanes (1, or n >= the lanes:
                                 not blocked) */
    int64_t scan_plan_max_ops; /* 0: the default (1 << 18); REMAT_SCAN_PLAN_NONE: keep no
                                  plan, stream it; n: keep plans of up to n ops */
    bool no_fusion;           /* no elementwise fusion */
    bool no_inplace;          /* no in-place concatenate, no add of a pad in one instruction,
                                 no intermediates held in a root program's output buffers
                                 before their first write (which keeps them out of the arena) */
    /* Used when the be argument is NULL: "cpu", "cuda", "cuda:N"; NULL or "": the CPU. */
    const char *backend;
    /* The slow snapshot tier of two-tier schedules (remat/schedule.h) on the
     * CPU: a directory where each run of such a scan makes one file (created
     * and unlinked at once, so nothing is left behind, reserved in full
     * before the first step so a full disk fails at the start with
     * REMAT_ERR_IO naming the directory). NULL: $TMPDIR, else /tmp; "" is
     * REMAT_ERR_VALUE. Copied by the compile. Residuals an offload policy
     * offloads (remat/ad.h, REMAT_POLICY_OFFLOAD) live here too: one file
     * per run of the program, made and reserved the same way before its
     * first instruction. On a device backend both tiers are host memory
     * instead (CUDA: pinned), allocated per run; no directory is used. */
    const char *tier_dir;
    /* The most bytes that tier may take (0: no limit), per file: a file
     * larger fails as a full disk would (REMAT_ERR_IO at the run's start);
     * on a device backend a two-tier loop's host memory alike. */
    int64_t tier_max_bytes;
} remat_compile_options;

REMAT_API remat_compile_options remat_compile_options_default(void);
/* *opts := the environment's options (the table above); NULL opts is
 * REMAT_ERR_NULL. cache_dir and backend point into the environment: valid
 * until it changes (remat_compile_opts copies what it keeps). */
REMAT_API remat_status remat_compile_options_from_env(remat_compile_options *opts);
/* Compiles fn with opts (NULL: remat_compile_options_from_env). be NULL:
 * opts->backend. A field out of its range is REMAT_ERR_VALUE naming it
 * (nothing compiled, *out NULL). */
REMAT_API remat_status remat_compile_opts(const remat_fn *fn, remat_backend *be, const remat_compile_options *opts,
                                          remat_program **out);
REMAT_API void remat_program_free(remat_program *p); /* NULL is a no-op */
/* A NULL program: plan untouched, 0 inputs and outputs (remat_last_error() set). */
REMAT_API void remat_program_plan(const remat_program *p, remat_memory_plan *plan);
REMAT_API int remat_program_num_inputs(const remat_program *p);
REMAT_API int remat_program_num_outputs(const remat_program *p);
/* Shape and dtype of input/output i (for allocating buffers); data is NULL.
 * For a NULL program or a bad index: dtype REMAT_DTYPE_COUNT, rank -1, and
 * remat_last_error() says why. */
REMAT_API remat_tensor remat_program_input_desc(const remat_program *p, int i);
REMAT_API remat_tensor remat_program_output_desc(const remat_program *p, int i);

/* Runs the program. Inputs and outputs are checked against the function's
 * signature (count, dtype, shape, non-NULL data) before anything is written,
 * and no output may share memory with an input or another output
 * (REMAT_ERR_ARG naming both); stats may be NULL. */
REMAT_API remat_status remat_run(remat_program *p, int n_in, const remat_tensor *inputs, int n_out,
                                 remat_tensor *outputs, remat_stats *stats);
/* The same with every tensor's data in the program's backend memory
 * (remat_backend_alloc of the backend it was compiled for): nothing is
 * copied, outputs are written in place. On the CPU this is remat_run. */
REMAT_API remat_status remat_run_device(remat_program *p, int n_in, const remat_tensor *inputs, int n_out,
                                        remat_tensor *outputs, remat_stats *stats);

#ifdef __cplusplus
}
#endif
#endif

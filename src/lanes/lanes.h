/*
 * lanes/lanes.h (internal) — the lane translator and the compile policy of
 * loop bodies: the one header other folders include from src/lanes (the
 * loop runtimes of src/scan). What it holds:
 *   - a loop body as the translator reads it (lanes_loop, with the value
 *     descriptors and the body's cut VJP that the loop nodes share);
 *   - the translation into lane programs and their code (rmi_lanes_build,
 *     rmi_lanes_get; translate.c, layout.c, solve.c);
 *   - one translation per body for the process (the memo; memo.c);
 *   - when a body is compiled: the jit mode and the process's account of
 *     interpreted work per body (the tier policy; tier.c).
 *
 * A loop's body compiled into native loops.
 *
 * When every op of the body (and of its VJP halves) is elementwise along one
 * axis of size m that all carries share — a batch of independent problems —
 * or the body is small enough to unroll (m = 1), the body is translated into
 * lane programs (backend/lane.h) and the backend compiles each into one loop
 * over steps: the runtime then executes a whole run of schedule actions
 * (TAPE 0..n-1, say) as one call instead of n interpreted body evaluations.
 *
 * Every kernel reads and writes through one table of buffers (index base[kind]
 * + i for the i-th value of a kind) whose pointers and per-step strides the
 * runtime sets per call:
 *
 *   CARRY  nc  the current carry, updated in place (state)
 *   X      nx  x_t                      Y    ny  y_t
 *   K      nk  the consts               SHOT nc  a carry snapshot
 *   TAPE   nt  the taped residuals of a step, in tape order
 *   CT     nc  the carry's cotangent, updated in place (state)
 *   CTY    ny  ct of y_t                CTX  nx  ct of x_t
 *   CTK    nk  the consts' cotangents, accumulated in place (state)
 *
 * Kernels (NULL when the node's share of the schedule never needs them):
 *   advance       CARRY, X, K -> CARRY, Y            (the primal body)
 *   advance_shot  the same, first copying the carry into SHOT
 *   tape          CARRY, X, K -> CARRY, Y, TAPE      (the VJP's forward half)
 *   reverse       TAPE, X, K, CT, CTY -> CT, CTX, CTK += (the backward half)
 *   recompute     SHOT, X, K, CT, CTY -> CT, CTX, CTK += (forward into
 *                 registers, then backward: a step reversed without a tape)
 *   pack          SHOT -> CARRY; unpack CARRY -> SHOT   (packed carries only)
 *
 * Packed carries. A carry whose lanes are interleaved ((B,3): lane j at
 * element 3j) vectorises badly (every step shuffles), so the CARRY and CT
 * buffers of such a scan hold it with the lane axis last ((3,B)), for the
 * kernels alone: the store's snapshots, the tapes and the node's inputs
 * and outputs keep the caller's layout (the interpreted executor's, which
 * the other node of the scan may be running), and the runtime moves a
 * carry in and out with pack / unpack (scan_exec_lanes.c).
 *
 * The consts' cotangents are accumulated as ctk = ctk + c in step order, so
 * starting them at -0.0 gives the interpreter's bits (its first step writes
 * c, later ones add; -0.0 + c == c for every c).
 *
 * Lane ranges. Kernels take their lane count at run time (backend/lane.h):
 * run with every buffer moved by lo * lane_bytes[buffer] and lanes = hi - lo,
 * they do lanes lo .. hi-1 of the full-size buffers, bit for bit what a run
 * over all m lanes does for those lanes, when no kernel sums across lanes
 * (`ranges`). Then the scan's checkpointed nodes may run a schedule block by
 * block (`block` lanes each, scan_runtime_lanes.c), so that one block's snapshots
 * and tapes stay in cache, and any run may be split into lane ranges on the
 * thread pool (`split`: the ranges touch disjoint lanes of every buffer),
 * unless some kernel stores an element every lane writes.
 */
#ifndef REMAT_LANES_H
#define REMAT_LANES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/backend_impl.h"
#include "backend/lane.h"
#include "remat/exec.h"
#include "remat/graph.h"

/* One value of a loop's step (a carry, x_t, y_t or const). */
typedef struct {
    remat_dtype dt;
    remat_shape shape;
} scan_desc;

/* A loop body's VJP cut at its residuals, built once and shared (src/scan
 * builds it: rmi_scan_body_vjp_new). */
typedef struct {
    int refcount;
    remat_fn *fwd; /* (carry, x_t, consts) -> (carry', y_t, residuals...) */
    remat_fn *bwd; /* (residuals..., ct_carry', ct_y_t) -> (ct_carry, ct_x_t, ct_consts) */
    int n_res;
    /* Residuals that are the step's x_t or a const (loop-invariant, or in xs
     * already) are not taped: res_arg[j] is that body argument, and fwd does
     * not output them; the others (res_arg[j] = -1) are fwd's outputs after
     * carry' and y_t, in order, each at res_off[j] in a tape. */
    int *res_arg;
    size_t *res_off;   /* offset of each taped residual in a tape */
    size_t tape_bytes; /* one step's tape */
} scan_body_vjp;

/* A loop body as the translator reads it: a scan's step (a while loop's
 * is given as a scan of max_steps steps, src/scan/while_lanes.c). */
typedef struct {
    const remat_fn *body;
    const scan_body_vjp *vjp; /* NULL: the primal kernels only */
    int64_t length;           /* 0: nothing to translate */
    int n_carry, n_xs, n_consts, n_ys;
    const scan_desc *in;  /* carries, x_t, consts */
    const scan_desc *out; /* carries, y_t */
} lanes_loop;

enum { LB_CARRY, LB_X, LB_K, LB_Y, LB_SHOT, LB_TAPE, LB_CT, LB_CTY, LB_CTX, LB_CTK, LB_KINDS };

enum { LKI_ADVANCE, LKI_ADVANCE_SHOT, LKI_TAPE, LKI_REVERSE, LKI_RECOMPUTE, LKI_PACK, LKI_UNPACK, LKI_COUNT };

typedef struct {
    int base[LB_KINDS + 1]; /* base[LB_KINDS] = the table's size */
    remat_lane_fn fn[LKI_COUNT];      /* lanes 0 .. lanes-1 from the buffers' pointers */
    int64_t m, block;                 /* block: lanes per lane block (scan_runtime_lanes.c; 0: none) */
    bool ranges;                      /* the lanes are independent: a run over any lane range is exact */
    bool split;                       /* ranges may run at once: no kernel stores an element all lanes share */
    bool contiguous;                  /* lane j+1 of every carry is the element after lane j's (SoA) */
    bool packed;                      /* CARRY and CT packed (below); PACK / UNPACK compiled */
    int64_t *lane_bytes;              /* [base[LB_KINDS]] per buffer (0: the same for every lane) */
    /* the translated programs, one per bit of want in LKI order: compiled at
     * lowering, or later by a node that starts interpreted (scan_tier.h) */
    const remat_lane_program *progs;
    int n_progs;
    unsigned want;
    int64_t n_ins; /* their instructions (what compiling them costs) */
    uint64_t pool_key; /* their hash: the tier account's key (scan_tier.h) */
    /* the process's kept translation these programs are (the memo below),
     * which also keeps their code once a node got it; NULL: the node's own */
    struct lanes_memo_entry *memo;
} scan_lanes;

/* Translates the kernels `want` asks for (bits 1 << LKI_*) for the lane
 * count m found, and says whether the lanes are independent (`ranges`,
 * `split`) and laid out contiguously. Returns 1 with *out filled but no code
 * yet (fn: rmi_lanes_get; programs and lane_bytes from alloc(ctx)),
 * or 0 when the body does not fit (an op without a lane form, no consistent
 * lane axis, too large), the backend cannot compile, or out of memory: the
 * caller interprets the body instead. */
enum { LK_ADVANCE = 1, LK_ADVANCE_SHOT = 2, LK_TAPE = 4, LK_REVERSE = 8, LK_RECOMPUTE = 16, LK_PACK = 32, LK_UNPACK = 64 };
int rmi_lanes_build(const lanes_loop *d, remat_backend *be, unsigned want, scan_lanes *out,
                         void *(*alloc)(void *ctx, size_t bytes), void *ctx);

/* The code of S's programs (S->fn): compiled (compile_lanes, all in one
 * compilation), or without `compile` only when the backend has it at hand
 * (load_lanes; REMAT_ERR_UNSUPPORTED otherwise). Nothing changes on failure. */
remat_status rmi_lanes_get(scan_lanes *S, remat_backend *be, const char *cache_dir, bool compile);
/* The same for n_views (1 or 2) translations of one loop, in one
 * compilation, their programs view after view; memo: the kept translation
 * they are (NULL: none). */
remat_status rmi_lanes_get_views(scan_lanes *const *views, int n_views, struct lanes_memo_entry *memo,
                                 remat_backend *be, const char *cache_dir, bool compile);

/* ---- one translation per loop body (memo.c) ----
 *
 * Translating a loop body into lane programs (above) reads only the
 * body's graphs (and its VJP halves'), the loop's value descriptors and the
 * backend, and costs ~1 ms of graph rewriting per node; a fit builds the
 * same body again for each experiment and each output interval (64
 * experiments: 2944 loop nodes, a handful of bodies). So the translation's
 * inputs are written out as bytes (the key: every field the translator
 * reads, the graphs node by node with their constants, in order) and the
 * translated programs kept under that key: a node whose key is already there
 * takes the programs (read-only, shared) instead of translating. Lookups
 * compare whole keys, never a hash alone. Also kept per entry, once known:
 * the code the backend gave for the programs (backend_impl.h: functions
 * valid for the life of the process), so that later nodes ask no cache.
 *
 * Only translations that succeeded are kept (a failure may be out of
 * memory, which the next node should not inherit). Entries live for the
 * process, up to LANES_MEMO_MAX_BYTES of keys and programs; past that, nodes
 * translate on their own as before. Thread-safe (one lock; translating runs
 * outside it, two threads translating one body at once both translate and
 * the first kept wins).
 */

/* The key under construction: bytes, and whether every write fitted in
 * memory (when not, the node translates on its own). With `flags` the
 * nodes' flags are written too (the compiler counts recomputed ops by
 * them; the translator does not read them). `opaque`: a custom op or a
 * higher-order primitive was met, which the key names by pointer only. */
typedef struct {
    unsigned char *p;
    size_t len, cap;
    bool ok, flags, opaque;
} lanes_key;

void rmi_lanes_key_put(lanes_key *k, const void *v, size_t n);
/* f's content as the translator reads it (rmi_fn_inline_calls dissolves
 * calls: a callee is written in place of its pointer). */
void rmi_lanes_key_fn(lanes_key *k, const remat_fn *f);
void rmi_lanes_key_descs(lanes_key *k, const scan_desc *d, int n);
void rmi_lanes_key_vjp(lanes_key *k, const scan_body_vjp *v);
void rmi_lanes_key_free(lanes_key *k);

/* What a translation produced: one view (a scan) or two (a while loop's
 * step and body), the while loop's EXIT buffer, the tier account's key. */
typedef struct {
    scan_lanes view[2];
    int n_views;
    int exit_buf;
    uint64_t pool_key;
} lanes_memo_val;

typedef struct lanes_memo_entry lanes_memo_entry;

/* The entry of key k, its value in *out (the views' programs and lane
 * strides point into the memo; fn[] zero), or NULL. */
lanes_memo_entry *rmi_lanes_memo_find(const lanes_key *k, lanes_memo_val *out);
/* Keeps a deep copy of v under k and returns its entry (the existing one
 * when another thread kept it first), or NULL when full or out of memory. */
lanes_memo_entry *rmi_lanes_memo_add(const lanes_key *k, const lanes_memo_val *v);

/* The code of the entry's n programs (every view's, in view then kernel
 * order): true with fn filled when a node already got it. */
bool rmi_lanes_memo_code(lanes_memo_entry *e, int n, remat_lane_fn *fn);
void rmi_lanes_memo_set_code(lanes_memo_entry *e, int n, const remat_lane_fn *fn);

/* A loop body's translation for the process: the one kept under key k
 * (its views into *out), or made by translate(ctx, out) (false: none, the
 * body is interpreted) and kept. Returns whether there is one; *memo: its
 * entry (NULL when it could not be kept: the table full, out of memory).
 * Counts a translation made; frees the key. */
bool rmi_lanes_translate_kept(lanes_key *k, bool (*translate)(void *ctx, lanes_memo_val *out), void *ctx,
                              lanes_memo_val *out, lanes_memo_entry **memo);

/* Counts since the process started (tests): bodies translated, nodes that
 * took a kept translation instead, nodes that took its code. */
typedef struct {
    int64_t translated, reused, code_reused;
} remat_lanes_memo_stats;
void rmi_lanes_memo_stats_get(remat_lanes_memo_stats *s);
void rmi_lanes_memo_count_translation(void);

/* ---- when a body is compiled (tier.c) ----
 *
 * A loop whose body has lane programs (above) is compiled at
 * lowering when one run's predicted interpreted work exceeds what compiling
 * costs, or its code is at hand (this process's or the disk's cache) and
 * the run is worth loading it for; otherwise it starts interpreted and
 * counts the work its runs do, and compiles at the start of the run that
 * brings that work past the compile's cost (a rent-or-buy rule: never more
 * than twice the better of the two choices made in hindsight). Interpreted
 * and compiled loops give the same bits and use the same store, so the
 * switch between runs is invisible but in time.
 *
 * The policy's pieces every loop runtime uses: the jit mode, the process's
 * account of interpreted work per body, and the decision a waiting node
 * takes at a run (rmi_lanes_tier_account). What one run of a loop costs
 * interpreted is the runtime's to say (src/scan: scan_tier.c, while_lanes.c).
 */
typedef enum { SCAN_JIT_AUTO, SCAN_JIT_ALWAYS, SCAN_JIT_NEVER } scan_jit_mode;

/* The compile's jit option (remat_compile_options.jit; from REMAT_JIT and
 * REMAT_NO_JIT when the caller gave none, core/config.c). */
scan_jit_mode rmi_scan_jit_mode(const remat_compile_options *o);

/* The interpreter's cost model (tier.c): ns per lane instruction of an
 * interpreted step with m lanes, and what taking code from a cache costs. */
double rmi_lanes_interp_ns_per_ins(int64_t m);
#define LANES_LOAD_NS 0.3e6

/* The process's account of interpreted work per body (a set of lane
 * programs): loop nodes with the same programs add their runs' work to one
 * total, so a body many nodes run (a fit's experiments, each with its own
 * loops) compiles once their work together pays for it. rmi_tier_pool_for:
 * NULL when the table is full (the node keeps its own count).
 * rmi_tier_pool_add returns the new total. Thread-safe. */
struct scan_tier_pool;
/* the account of programs whose rmi_lane_programs_hash is key (computed
 * once, when they are translated) */
struct scan_tier_pool *rmi_tier_pool_for(uint64_t key);
uint64_t rmi_lane_programs_hash(int n, const remat_lane_program *const *pp);
double rmi_tier_pool_add(struct scan_tier_pool *p, double ns);
/* the body's code is in this process's cache (at_hand), or compiling it
 * failed (its nodes stay interpreted); p NULL: nothing */
void rmi_tier_pool_settle(struct scan_tier_pool *p, bool at_hand, bool failed);
/* a node of kind bit `kind` (the caller's numbering, below 32) waits on p */
void rmi_tier_pool_mark(struct scan_tier_pool *p, int kind);

/* What a waiting node does at a run: take the code, compile it, look in
 * the disk cache, or go on interpreting. rmi_lanes_tier_account adds the
 * run's run_ns to p (NULL: to *own_ns) — half of it when both kinds of
 * `pair` (a mask of two kind bits, 0: none) wait on p, which each count
 * the whole schedule — and decides against cost_ns. */
typedef enum { T_WAIT, T_TAKE, T_COMPILE, T_LOAD, T_GIVE_UP } tier_step;
tier_step rmi_lanes_tier_account(struct scan_tier_pool *p, double *own_ns, double run_ns, unsigned pair,
                                 double cost_ns);

#endif

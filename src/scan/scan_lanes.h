/*
 * scan_lanes.h (internal) — a scan's body compiled into native loops.
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
#ifndef REMAT_SCAN_LANES_H
#define REMAT_SCAN_LANES_H

#include "backend/backend_impl.h"
#include "scan/scan_impl.h"

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
    /* the process's kept translation these programs are (lanes_memo.h),
     * which also keeps their code once a node got it; NULL: the node's own */
    struct lanes_memo_entry *memo;
} scan_lanes;

/* Translates the kernels `want` asks for (bits 1 << LKI_*) for the lane
 * count m found, and says whether the lanes are independent (`ranges`,
 * `split`) and laid out contiguously. Returns 1 with *out filled but no code
 * yet (fn: rmi_scan_lanes_get; programs and lane_bytes from alloc(ctx)),
 * or 0 when the body does not fit (an op without a lane form, no consistent
 * lane axis, too large), the backend cannot compile, or out of memory: the
 * caller interprets the body instead. */
enum { LK_ADVANCE = 1, LK_ADVANCE_SHOT = 2, LK_TAPE = 4, LK_REVERSE = 8, LK_RECOMPUTE = 16, LK_PACK = 32, LK_UNPACK = 64 };
int rmi_scan_lanes_build(const remat_scan_data *d, remat_backend *be, unsigned want, scan_lanes *out,
                         void *(*alloc)(void *ctx, size_t bytes), void *ctx);

/* The code of S's programs (S->fn): compiled (compile_lanes, all in one
 * compilation), or without `compile` only when the backend has it at hand
 * (load_lanes; REMAT_ERR_UNSUPPORTED otherwise). Nothing changes on failure. */
remat_status rmi_scan_lanes_get(scan_lanes *S, remat_backend *be, const char *cache_dir, bool compile);

/* scan_lanes_layout.c: the lane counts to try for d's carries (distinct axis
 * extents above 1, largest first, then 1) in c, which holds at least
 * 2 * REMAT_MAX_RANK * 4 + 1; returns their count. */
int64_t rmi_scan_lanes_candidates(const remat_scan_data *d, int64_t *c);
/* Each buffer's bytes from one lane to the next in programs p (1), or 0 when
 * lanes are not independent at one stride; *shared: a store every lane writes. */
int rmi_scan_lanes_strides(const remat_lane_program *const *p, int n, const remat_lane_buf *bufs, int n_bufs,
                           int64_t *lane_bytes, bool *shared);

#endif

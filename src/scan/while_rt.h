/*
 * while_rt.h (internal) — a lowered while node's runtime state: the loop
 * core (loop_rt.h) and what is the while loop's own, shared by its kernels
 * (while_runtime.c), its loop kind of the interpreted executor
 * (while_exec.c; loop_exec.c executes the ops of scan_replay.h with one
 * iteration per step of the schedule) and its compiled lanes.
 *
 * An iteration evaluates the body into `next`; when it is not accepted the
 * differentiated carries are copied back from `cur` (the select), so that
 * `next` is the next carry either way. Whether each iteration was accepted
 * is one bit of `bits`, set when it is first evaluated (every iteration is
 * evaluated once, in order, in the forward phase, before any other use):
 * a rejected iteration is then advanced without a tape and skipped by the
 * reverse pass. The carries, snapshots, tapes and cotangents live in the
 * backend's memory; the bits and the iteration count are host data, copied
 * into the store's head (backend memory) at the end of the forward node,
 * and each flag is read back to the host after its evaluation.
 */
#ifndef REMAT_WHILE_RT_H
#define REMAT_WHILE_RT_H

#include "exec/hop.h"
#include "lanes/lanes.h"
#include "scan/loop_lanes.h"
#include "scan/loop_rt.h"
#include "scan/scan_replay.h"
#include "scan/while_impl.h"

/* Compiled lane loops of a while node (while_lanes.c, run by
 * while_exec_lanes.c): the loop seen as two scans, translated by the
 * scan's lane translator (lanes/lanes.h), with one lane (m = 1):
 *   step  step(carry..., consts...) -> (carry'..., accepted, keep): the
 *         body, the select of the n_diff carries by accepted, and cond on
 *         the result. ADVANCE ends with an EXIT on keep (backend/lane.h):
 *         one call iterates while cond holds, up to its count; ADVANCE_SHOT
 *         snapshots first (no exit).
 *   body  the body with its cut VJP (FWD/BWD): TAPE, REVERSE, RECOMPUTE of
 *         accepted iterations, a scan step's kernels over a one-y scan (the
 *         flag, whose cotangent is zero).
 * Every buffer is set per call in ptr/stride (one table per view). */
typedef struct {
    scan_lanes step, body;
    char **sp, **bp;
    int64_t *ss, *bs;
    /* the views (loop_lanes.h) of body's table bp/bs (the shared TAPE,
     * REVERSE, RECOMPUTE) and step's sp/ss, one lane each */
    loop_lanes_view view, step_view;
    int exit_buf;   /* the step table's EXIT cell (after the scan's buffers) */
    char *flags;    /* WHILE_LANES_CHUNK accepted flags, one per step of a call */
    char *keep, *exit_cell, *dummy, *zero;
    bool on;        /* compiled, and used */
    /* tiers (scan_tier.h): interpreted while the runs' time stays below
     * the compile's estimate */
    bool wait;
    double cost_ns, spent_ns, start_ns;
    struct scan_tier_pool *pool; /* the body's account, shared with nodes of the same programs */
    uint64_t pool_key;           /* its key: the hash of step's and body's programs */
    struct lanes_memo_entry *memo; /* the process's kept translation (lanes/lanes.h), or NULL */
} while_lanes;

#define WHILE_LANES_CHUNK 256

/* A phase's ops kept for the length it last ran (the length from the
 * store, or the counting pass's): a run of the same length runs them
 * again instead of replaying the schedule (a fit's runs mostly repeat
 * their length). Capacity fixed at lowering (program memory); a phase
 * with more ops is replayed at every run. */
typedef struct {
    scan_xop *ops;
    int64_t cap, n, len; /* len -1: nothing kept */
    int64_t peak[2];
    bool recording, overflow;
} while_ops_cache;

typedef struct while_rt {
    loop_core c; /* first: the interpreted executor's (loop_rt.h) */
    const remat_while_data *d;
    const remat_compile_options *opts; /* the root program's (hop.h counters) */
    remat_program *p_cond, *p_body;
    int nd;

    /* per node execution */
    int64_t n;         /* iterations (-1: not known yet) */
    int64_t known;     /* bits[0 .. known) are set */
    int64_t pending;   /* lookahead: `next` holds carry pending+1, evaluated from cur (-1: none) */
    uint8_t *bits;     /* host: accepted, one bit per iteration, max_steps of them */

    /* backend memory */
    char *ct_dummy, *zeros, *flag;

    while_lanes wl;
    while_ops_cache kept; /* FWD: the forward phase (known length), BWD: the reverse */
    /* two-tier (FWD): the slow slots the schedule writes at length slow_len */
    int64_t slow_len, slow_extent;

} while_rt;

/* Host memory to the backend's and back: copy_in / copy_out where the
 * backend has them (a device), else its memory is the host's. */
static inline void rmi_while_rt_to_host(const while_rt *r, void *host, const void *src, size_t bytes)
{
    if (r->c.be->iface.copy_out)
        r->c.be->iface.copy_out(r->c.cx, host, src, bytes);
    else
        r->c.be->iface.mem_copy(r->c.cx, host, src, bytes);
}

static inline void rmi_while_rt_from_host(const while_rt *r, void *dst, const void *host, size_t bytes)
{
    if (r->c.be->iface.copy_in)
        r->c.be->iface.copy_in(r->c.cx, dst, host, bytes);
    else
        r->c.be->iface.mem_copy(r->c.cx, dst, host, bytes);
}

static inline bool rmi_while_rt_bit(const while_rt *r, int64_t k) { return (r->bits[k >> 3] >> (k & 7)) & 1; }

/* iteration k's bit, once evaluated (both executors) */
static inline void rmi_while_rt_set_bit(while_rt *r, int64_t k, bool acc)
{
    if (acc)
        r->bits[k >> 3] |= (uint8_t)(1u << (k & 7));
    else
        r->bits[k >> 3] &= (uint8_t)~(1u << (k & 7));
    if (k >= r->known)
        r->known = k + 1;
}

static inline char *rmi_while_rt_slot(const while_rt *r, int64_t slot) { return rmi_loop_slot(&r->c, slot); }

static inline char *rmi_while_rt_tape(const while_rt *r, int64_t j) { return rmi_loop_tape(&r->c, j); }

/* while_exec.c: the loop kind of the interpreted executor (loop_rt.h);
 * evaluate the cond on a carry, one plain iteration from cur */
extern const loop_kind rmi_while_loop_kind;
bool rmi_while_rt_cond(while_rt *r, const char *carry);
void rmi_while_rt_eval(while_rt *r, int64_t k); /* into next, no swap */
void rmi_while_rt_step(while_rt *r, int64_t k); /* cur := next carry (the lookahead when pending) */
/* while_lanes.c: the compiled loops at lowering (r->wl; off when the body
 * has none or the tier policy waits; out of memory: interpreted, the same
 * bits); at a kernel's entry, the tier's switch; at its end, the run's work */
remat_status rmi_while_lanes_lower(while_rt *r, const remat_while_data *d, remat_hop_lowering *L);
void rmi_while_lanes_tier_run(while_rt *r);
void rmi_while_lanes_tier_done(while_rt *r);
/* while_exec_lanes.c: the compiled executor. bind: the consts (and the
 * cotangents' buffers) into the tables after rmi_while_rt_bind; iterate:
 * from cur while cond holds (the count, or -1 past max_steps); ahead:
 * iteration c from cur into next (pending), whether cond holds after it */
void rmi_while_lanes_bind(while_rt *r);
int64_t rmi_while_lanes_iterate(while_rt *r);
bool rmi_while_lanes_ahead(while_rt *r, int64_t c);
void rmi_while_lanes_run(void *r, const scan_xop *ops, int64_t n);

/* while_runtime.c: the kernel of d's form and its stats hook (self unset) */
void rmi_while_rt_kernels(const remat_while_data *d, remat_kernel_fn *fn, remat_hop_stats *hook);

#endif

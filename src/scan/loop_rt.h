/*
 * loop_rt.h (internal) — the one loop core under both loop nodes, scan
 * (scan_runtime*.c, its loop kind in scan_exec_interp.c) and while
 * (while_lower.c, while_runtime.c, its loop kind in while_exec.c): the
 * core's state and its interpreted executor (loop_exec.c), its lowering
 * and content-shared sub-programs (loop_lower.c), the backward node of the
 * VJP rules (loop_vjp.c), the JVP wrapper of a body (loop_jvp.c), and the
 * inline helpers both use (the taped residuals into and out of a tape, the
 * consts' cotangents added with one backend add per const, the runs and
 * stores reported to the memory plan). What differs (a scan's xs, ys and
 * fixed length; a while loop's cond, flags and rejected iterations) is the
 * loop kind's hooks and each node's own files.
 */
#ifndef REMAT_LOOP_RT_H
#define REMAT_LOOP_RT_H

#include <stdatomic.h>

#include "exec/hop.h"
#include "scan/scan_impl.h"
#include "scan/scan_replay.h"

/* ---- one loop core ----
 *
 * What every loop node's runtime holds, whatever the loop (the first member
 * `c` of scan_rt and while_rt): the programs of the body's cut VJP, the
 * store, the carry and its cotangent in backend memory, the bodies'
 * argument arrays, the consts' cotangents. A scan is the loop with a known
 * length, x_t and y_t and every step taped; a while loop learns its length
 * as it runs and tapes only accepted iterations. What differs is a
 * loop_kind's hooks; the interpreted executor (loop_exec.c: the ops of
 * scan_replay.h, snapshots, tapes, reverses, recomputations, the consts'
 * cotangents) is one. */
typedef struct loop_core loop_core;

/* A root run's outcome (remat_hop_stats' run_status and run_error):
 * REMAT_OK, or the run's first failure (set from any thread of the pool: a
 * scan's lane blocks) with its message ("": remat_run names the status). */
typedef struct {
    atomic_int status;
    char message[768];
} loop_report;

typedef struct {
    /* step k from cur: next := carry k+1, then cur and next swap (plain, no tape) */
    void (*advance)(loop_core *c, int64_t k);
    /* optional: advance steps k, k+1, ... of a plain run of n by whole
     * groups (a scan's unroll) and return how many it did (the executor
     * advances the rest one at a time); NULL: none */
    int64_t (*advance_group)(loop_core *c, int64_t k, int64_t n);
    /* the forward half's arguments for step k: fin from cur, fout into next
     * (the taped residuals' outputs the core adds after res_out0) */
    void (*step_io)(loop_core *c, int64_t k);
    /* after the forward half wrote next (NULL: nothing) */
    void (*stepped)(loop_core *c, int64_t k);
    /* the backward half's arguments for step k besides its tape and the
     * consts' shares: the carry's cotangent from ct_cur into ct_next, x_t,
     * ct_y_t, ct_x_t */
    void (*reverse_io)(loop_core *c, int64_t k);
    /* whether step k has a tape and a reverse (NULL: every step) */
    bool (*taped)(const loop_core *c, int64_t k);
    /* after a restore (NULL: nothing) */
    void (*restored)(loop_core *c);
    const char *name; /* the loop in the slow tier's messages */
} loop_kind;

struct loop_core {
    const loop_kind *kind;
    remat_backend *be;
    /* the running instruction's context (backend_impl.h), set by its kernel
     * adapter at each run (a program runs on one thread at a time): the
     * sub-programs, memory entries and lane calls of the run use it */
    const remat_exec_ctx *cx;
    remat_program *p_fwd, *p_bwd;
    void **outs;
    size_t *carry_off, *k_off; /* per carry / const */
    int nc, nk, nres;
    /* where the consts are among the bodies' arguments (fin: after the
     * carries, and x_t for a scan) and the backward half's outputs (bout),
     * and the forward half's first taped residual output (after carry' and
     * y_t for a scan, carry' and the flag for a while loop) */
    int k_in0, k_out0, res_out0;
    const scan_desc *carry_desc, *k_desc; /* the carries', the consts' */
    const scan_body_vjp *vjp;
    /* the store: snapshots of carry_bytes at slots_off, tapes at tapes_off */
    size_t carry_bytes, slots_off, tapes_off;
    /* the slow tier (two-tier loops, interpreted, loop_slow.c): slots from
     * slow0 on are carries in the run's slow store slow_fd, a file's
     * descriptor on a host backend, the address of host memory on a device
     * one (< 0: none); slow_hi the extent written; slow_failed once a write
     * or read failed (the run's status says so) */
    bool slow_on, slow_failed;
    int64_t slow0;
    int64_t slow_fd;
    int64_t slow_hi;

    /* per node execution */
    char *store;
    int64_t reversed; /* steps reversed (backward) */

    /* backend memory: the current carry and its cotangent (the compiled
     * loops update them in place; the interpreter swaps with next), a
     * recomputed step's tape, the consts' cotangents */
    char *cur, *next, *ct_cur, *ct_next, *tmp_tape, *ct_k_tmp, *ct_k_acc[2];

    /* interpreted: the bodies' argument arrays (what does not change from
     * step to step, the consts and their cotangents, is written once per
     * node execution) */
    const void **fin, **bin;
    void **fout, **bout;
    /* Residuals the backward body reads from the tape: res_taped[0..n_taped)
     * (the forward body writes them there, in that order); the ones that
     * are a const are bound once per node execution (res_arg) */
    int *res_taped, n_taped;
    remat_instr *k_add; /* per const: ct_k_acc[1] = ct_k_acc[0] + ct_k_tmp */

    bool nested; /* in a sub-program (remat_hop_lowering) */
    /* stats of the last root run (remat_hop_stats) */
    int64_t evals;
    size_t peak_bytes;
    loop_report *rep; /* the last root run's outcome (rmi_loop_fail), in the program's memory */
    /* the slow tier's handle and extent travel from the forward node to the
     * backward in two words of the store at slow_words (a scan: its last 16
     * bytes; a while loop: after its header); the backward node reports the
     * extent written (slow_bwd) */
    size_t slow_words;
    bool slow_bwd;
};

static inline char *rmi_loop_slot(const loop_core *c, int64_t slot)
{
    return c->store + c->slots_off + (size_t)slot * c->carry_bytes;
}

static inline char *rmi_loop_tape(const loop_core *c, int64_t j)
{
    return c->store + c->tapes_off + (size_t)j * c->vjp->tape_bytes;
}

/* loop_exec.c: the interpreted executor. bind: the consts into the bodies'
 * arguments, and, backward (ct true), the consts' cotangents started at
 * -0.0 in ct_k_acc[0] (every reversed step adds: -0.0 + c == c, so the
 * first share's bits are kept, -0.0 included); finish: the consts'
 * cotangents into ct_ks, a plain +0.0 when no step was reversed (a loop of
 * no steps, or of only rejected iterations). Both are every executor's:
 * the compiled reverse kernels add into ct_k_acc[0] in place, in the same
 * order. run: the ops, x a loop_core. */
void rmi_loop_bind(loop_core *c, const void *const *ks, bool ct);
void rmi_loop_finish(loop_core *c, void *const *ct_ks);
void rmi_loop_run(void *x, const scan_xop *ops, int64_t n);
void rmi_loop_snapshot(void *x, int slot);
/* carries 0 .. n from the caller's tensors into a buffer of them at
 * carry_off, and back, as they are (byte copies through the backend) */
void rmi_loop_copy_in(loop_core *c, char *dst, const void *const *src, int n);
void rmi_loop_copy_out(loop_core *c, void *const *dst, const char *src, int n);
/* the stats hooks both nodes report with (remat_hop_stats; self: a
 * runtime that starts with its loop core): a run's evaluations and peak
 * store into the run's stats */
void rmi_loop_stats_run(const void *self, remat_stats *st);
/* ... and a run's outcome: begin_run (the counts zeroed, the report
 * REMAT_OK, the slow stores a run cut short left swept), release (those
 * swept), run_status, run_error */
void rmi_loop_stats_begin(const remat_exec_ctx *cx, void *self);
void rmi_loop_stats_release(void *self);
remat_status rmi_loop_stats_status(const void *self);
const char *rmi_loop_stats_error(const void *self);
/* The run's failure st (st != REMAT_OK) when it is its first (later ones
 * are dropped), its message printf-style (fmt NULL: none, remat_run names
 * the status); from any thread. */
void rmi_loop_fail(loop_core *c, remat_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void rmi_loop_restore(void *x, int slot);
/* A slow slot's carry written from cur (write) or read into it, at
 * (slot - slow0) carries into slow_fd (loop_slow.c); a failure sets
 * slow_failed with the message. */
void rmi_loop_slow_io(loop_core *c, int slot, bool write);
/* The run's slow store of `bytes` (slow_hi and slow_failed reset), its
 * handle in slow_fd: a file (core/tier_file.h) on a host backend; on a
 * device backend host memory from its host_alloc (rmi_malloc without one)
 * in c->cx, over max_bytes (> 0) failing as a full disk. REMAT_ERR_IO (the
 * file, tier_max_bytes) or REMAT_ERR_NOMEM (host memory), slow_fd -1, with
 * the message naming `what`. */
remat_status rmi_loop_slow_begin(loop_core *c, size_t bytes, const char *dir, int64_t max_bytes, const char *what);
/* The run's slow store closed or freed (in c->cx), slow_fd -1. */
void rmi_loop_slow_end(loop_core *c);
/* The slow stores c began that no rmi_loop_slow_end ended (a run cut
 * short: their backward never ran) closed or freed: at a run's start, and
 * when the program goes (rmi_loop_stats_begin, rmi_loop_stats_release). */
void rmi_loop_slow_sweep(const loop_core *c);
/* The forward node's: the run's slow store of `slots` carries begun
 * (rmi_loop_slow_begin, in the options' tier_dir within tier_max_bytes)
 * and its handle in the store's words; false, the run's status (that of
 * rmi_loop_slow_begin) and message set, when it cannot be. */
bool rmi_loop_slow_start(loop_core *c, int64_t slots, const remat_compile_options *o, const char *what);
/* The run's slow store ended (rmi_loop_slow_end), -1 and the extent
 * written in the store's words. */
void rmi_loop_slow_stop(loop_core *c);
/* The store's words, handle and extent, written (backend memory), and read
 * back into slow_fd and slow_hi (slow_failed reset): the backward node's. */
void rmi_loop_slow_put(loop_core *c, int64_t h, int64_t hi);
void rmi_loop_slow_get(loop_core *c);
/* The tier's failure (slow_failed set) as the run's status st, its message
 * the tier's (remat_last_error), after `label: ` unless label is NULL. */
void rmi_loop_slow_fail(loop_core *c, remat_status st, const char *label);

static inline void rmi_loop_rt_swap(char **a, char **b)
{
    char *t = *a;
    *a = *b;
    *b = t;
}

/* one step's bytes of a carry, x_t, y_t or const */
static inline size_t rmi_loop_rt_bytes(const scan_desc *s)
{
    return (size_t)remat_shape_numel(&s->shape) * remat_dtype_size(s->dt);
}

/* The forward half's taped residuals into tape tp: its outputs res[0..n)
 * are residuals taped[0..n), at off[taped[t]] in a tape. */
static inline void rmi_loop_rt_tape_out(void **res, char *tp, const size_t *off, const int *taped, int n)
{
    for (int t = 0; t < n; t++)
        res[t] = tp + off[taped[t]];
}

/* The backward half's inputs of those residuals, from tape tp. */
static inline void rmi_loop_rt_tape_in(const void **in, const char *tp, const size_t *off, const int *taped, int n)
{
    for (int t = 0; t < n; t++) {
        const int j = taped[t];
        in[j] = tp + off[j];
    }
}

/* After a reversed step wrote each const's share at tmp + k_off[i]:
 * acc[1] = acc[0] + share with add[i], then acc[0] is the sum. Steps are
 * reversed last to first under every schedule, so the sum's order (and its
 * bits) does not depend on the schedule. */
static inline void rmi_loop_rt_add_ct_ks(const remat_exec_ctx *cx, remat_instr *add, int nk, char *acc[2], char *tmp,
                                         const size_t *k_off)
{
    for (int i = 0; i < nk; i++) {
        remat_instr *A = &add[i];
        A->in[0] = acc[0] + k_off[i];
        A->in[1] = tmp + k_off[i];
        A->out = acc[1] + k_off[i];
        A->fn(cx, A);
    }
    if (nk > 0)
        rmi_loop_rt_swap(&acc[0], &acc[1]);
}

/* a run's evaluations and peak store into the run's stats (remat_hop_stats.report_run) */
static inline void rmi_loop_rt_report_run(int64_t evals, size_t peak_bytes, remat_stats *st)
{
    st->forward_evals += evals;
    if (peak_bytes > st->peak_snapshot_bytes)
        st->peak_snapshot_bytes = peak_bytes;
}

/* the bytes of `slots` snapshots and `tapes` tapes of c's store */
static inline size_t rmi_loop_rt_store_bytes(const loop_core *c, int64_t slots, int64_t tapes)
{
    return (size_t)slots * c->carry_bytes + (size_t)tapes * c->vjp->tape_bytes;
}

/* a node's store of `slots` snapshots and `tapes` tapes into the plan when
 * it is the largest so far (ties: the later node), with its carry's and
 * tape's sizes */
static inline void rmi_loop_rt_plan_store(remat_memory_plan *plan, const loop_core *c, int64_t slots, int64_t tapes)
{
    const size_t bytes = rmi_loop_rt_store_bytes(c, slots, tapes);
    if (bytes >= plan->peak_snapshot_bytes) {
        plan->peak_snapshot_bytes = bytes;
        plan->scan_carry_bytes = c->carry_bytes;
        plan->scan_tape_bytes = c->vjp->tape_bytes;
    }
}

/* loop_vjp.c: the backward node of a loop's VJP, after the forward node
 * (rmi_hop_vjp_forward) and the backward form's data (bwd_data; NULL: out
 * of memory) were had. Its inputs: the forward's output store_out (the
 * store), the primal inputs in0 .. in0+n_in, the cotangents of outputs
 * 0 .. n_ct (zeros of out_desc(data, k) where none flows). Its outputs
 * 0 .. n_a are the cotangents of primal inputs 0 .. n_a, the next n_b those
 * of inputs b_in0 .. b_in0+n_b. */
typedef struct {
    const remat_hop_rules *rules;
    void *bwd_data;
    remat_dtype dt;         /* the backward node's first output's */
    const char *name, *what; /* the node's name, and the loop's in messages */
    int store_out, in0, n_in, n_ct, n_a, n_b, b_in0;
    void (*out_desc)(const void *data, int k, remat_dtype *dt, remat_shape *sh);
    const void *data;
    remat_loc loc;
} loop_bwd_spec;
remat_status rmi_loop_vjp_backward(remat_hop_vjp *c, const remat_val *out_cts, const loop_bwd_spec *s);

/* loop_jvp.c: W, f's JVP (jvp) or f itself (tangent arguments unused),
 * with its arguments in the order in[0 .. n_in): a primal slot {i, false}
 * is f's argument i, a tangent slot {i, true} the tangent of argument
 * wrt[i] (named t_<name>); its outputs out[0 .. n_out): f's output i, or
 * its tangent. NULL (*st why, the message set) when out of memory or f has
 * no JVP; otherwise *st REMAT_OK and W may still hold a failed build
 * (remat_fn_status: the caller reports it). */
typedef struct {
    int i;
    bool tangent;
} loop_slot;
remat_fn *rmi_loop_jvp_fn(const remat_fn *f, bool jvp, const char *prefix, int n_wrt, const int *wrt,
                          const loop_slot *in, int n_in, const loop_slot *out, int n_out, remat_status *st);

/* loop_lower.c */
/* What lowering a loop core needs of its node: its carries' and consts'
 * descriptors, the body's cut VJP (NULL: primal), how many bodies'
 * arguments besides carries, consts and residuals (x_t and y_t; a while's
 * flag), whether the cotangent buffers are needed, what names the loop in
 * messages, and the bytes of one carry snapshot. */
typedef struct {
    const scan_desc *carries, *consts;
    const scan_body_vjp *vjp;
    int n_step_args;
    bool cotangents;
    const char *what;
    size_t carry_bytes;
} loop_core_spec;
/* c's layout (carry_off, k_off, res_taped), argument arrays and backend
 * buffers, from c->nc, c->nk, c->nres set; *ksum: the consts' bytes.
 * REMAT_ERR_NOMEM with a message naming s->what. */
remat_status rmi_loop_lower_core(loop_core *c, const loop_core_spec *s, remat_hop_lowering *L, size_t *ksum);
/* fn's sub-program; shared: the one of the root's other loops of the same
 * content (rmi_compile_sub_shared: only for a program never run elsewhere,
 * whose executions never overlap), unless fn holds a custom op or a nested
 * loop (state of its own) */
remat_status rmi_loop_compile_sub(const remat_fn *fn, bool shared, remat_hop_lowering *L, remat_program **out);
/* A copy of v in the program's memory (the program outlives the function
 * that holds v), without its functions (only lowering reads them); NULL
 * when out of memory. */
scan_body_vjp *rmi_loop_rt_keep_vjp(const scan_body_vjp *v, remat_hop_lowering *L);
/* The backend's add for each of the nk consts ks[0..nk) into *out (nk + 1
 * instructions, in the program's memory); out of memory: a message naming
 * `what` (the loop kind or its label). */
remat_status rmi_loop_rt_lower_k_adds(const scan_desc *ks, int nk, const char *what, remat_hop_lowering *L,
                                      remat_instr **out);

#endif

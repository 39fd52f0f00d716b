/*
 * loop_exec_lanes.c — the compiled executor's ops both loop nodes share
 * (loop_lanes.h), each one kernel call per run of steps:
 *
 *   ADVANCE    advance over n steps
 *   SHOT_ADVANCE  advance_shot over n steps, snapshots at a stride of dslot
 *   TAPE       tape over n steps, tapes at a stride of one tape
 *   REVERSE    reverse over each run of taped steps, walking the tapes down
 *   RECOMPUTE  recompute over each run of taped steps, from snapshots at a
 *              stride of dslot (or from the current carry)
 *   SHOT/RESTORE  the view's lanes between the current carry and a slot
 *
 * A call stays within one row group of a worker's store. Evaluation counts
 * and the sub-programs' runs (behind ops_executed) are the interpreted
 * executor's (loop_exec.c), so stats and bits are the same.
 */
#include "scan/loop_lanes.h"

/* item k's memory in area `first` (items of `bytes`), and its first lane */
static inline char *item(const loop_lanes_view *b, char *first, size_t bytes, int64_t k, int64_t *lane)
{
    if (b->group == 0) {
        *lane = b->lane0;
        return first + (size_t)k * bytes;
    }
    *lane = k % b->group * b->S->block;
    return first + (size_t)(k / b->group) * bytes;
}

/* the step stride of buffer q over items k, k+d, .. */
static inline int64_t item_stride(const loop_lanes_view *b, int q, size_t bytes, int64_t d)
{
    return b->group == 0 ? d * (int64_t)bytes : d * b->S->block * b->S->lane_bytes[q];
}

/* how many of n items k, k+d, k+2d, .. lie in k's group */
static inline int64_t run_len(const loop_lanes_view *b, int64_t k, int64_t d, int64_t n)
{
    if (b->group == 0 || d == 0)
        return n;
    const int64_t in = k % b->group, c = d > 0 ? (b->group - 1 - in) / d + 1 : in / -d + 1;
    return c < n ? c : n;
}

/* the snapshot buffers at slot, dslot apart; returns the steps one call may take */
static inline int64_t set_shot(loop_lanes_view *b, int64_t slot, int64_t dslot, int64_t n)
{
    const loop_core *c = b->c;
    int64_t lane;
    const char *p = item(b, b->slots, c->carry_bytes, slot, &lane);
    for (int i = 0; i < c->nc; i++) {
        const int q = b->S->base[LB_SHOT] + i;
        rmi_loop_lanes_set_at(b, q, p + c->carry_off[i], lane,
                              item_stride(b, q, c->carry_bytes, dslot));
    }
    return run_len(b, slot, dslot, n);
}

/* the tape buffers at tape, d (+1, -1) apart; returns the steps one call may take */
static inline int64_t set_tape(loop_lanes_view *b, int64_t tape, int64_t d, int64_t n)
{
    const loop_core *c = b->c;
    const scan_body_vjp *V = c->vjp;
    int64_t lane;
    const char *p = item(b, b->tapes, V->tape_bytes, tape, &lane);
    for (int t = 0; t < c->n_taped; t++) {
        const int q = b->S->base[LB_TAPE] + t;
        rmi_loop_lanes_set_at(b, q, p + V->res_off[c->res_taped[t]], lane,
                              item_stride(b, q, V->tape_bytes, d));
    }
    return run_len(b, tape, d, n);
}

static inline void steps(loop_lanes_view *b, int64_t k, int dk, bool rev)
{
    if (b->kind->steps)
        b->kind->steps(b, k, dk, rev);
}

/* how many of steps k, k-1, .. (at most n) have a tape, in a row */
static inline int64_t taped_back(const loop_lanes_view *b, int64_t k, int64_t n)
{
    return b->kind->taped_back ? b->kind->taped_back(b, k, n) : n;
}

/* n steps reversed (the range at lane 0 counts) */
static inline void count_reversed(loop_lanes_view *b, int64_t n)
{
    if (b->lane0 == 0)
        b->c->reversed += n;
    rmi_loop_lanes_count(b, b->c->p_bwd, n, false);
}

static SCAN_ALWAYS_INLINE void x_advance(void *x, int64_t step, int64_t n)
{
    loop_lanes_view *b = x;
    steps(b, step, 1, false);
    rmi_loop_lanes_call(b, LKI_ADVANCE, n);
    rmi_loop_lanes_count(b, b->plain, n, true);
}

static SCAN_ALWAYS_INLINE void x_shot_advance(void *x, int64_t step, int64_t n, int slot, int dslot)
{
    loop_lanes_view *b = x;
    for (int64_t c; n > 0; step += c, slot += (int)(c * dslot), n -= c) {
        c = set_shot(b, slot, dslot, n);
        steps(b, step, 1, false);
        rmi_loop_lanes_call(b, LKI_ADVANCE_SHOT, c);
        rmi_loop_lanes_count(b, b->plain, c, true);
    }
}

static SCAN_ALWAYS_INLINE void x_tape(void *x, int64_t step, int64_t n, int64_t tape)
{
    loop_lanes_view *b = x;
    for (int64_t q = 0, c; q < n; q += c) {
        c = set_tape(b, tape + q, 1, n - q);
        steps(b, step + q, 1, false);
        rmi_loop_lanes_call(b, LKI_TAPE, c);
        rmi_loop_lanes_count(b, b->c->p_fwd, c, true);
    }
}

static SCAN_ALWAYS_INLINE void x_reverse(void *x, int64_t step, int64_t n, int64_t tape)
{
    loop_lanes_view *b = x;
    for (int64_t q = 0, c; q < n; q += c) {
        c = taped_back(b, step - q, n - q);
        if (c == 0) { /* untaped: absent from the reverse pass */
            c = 1;
            continue;
        }
        c = set_tape(b, tape - q, -1, c);
        steps(b, step - q, -1, true);
        rmi_loop_lanes_call(b, LKI_REVERSE, c);
        count_reversed(b, c);
    }
}

static SCAN_ALWAYS_INLINE void x_recompute(void *x, int64_t step, int64_t n, int slot, int dslot)
{
    loop_lanes_view *b = x;
    REMAT_ASSERT(slot >= 0 || n == 1);
    for (int64_t q = 0, c; q < n; q += c) {
        c = taped_back(b, step - q, n - q);
        if (c == 0) {
            c = 1;
            continue;
        }
        if (slot >= 0) {
            c = set_shot(b, slot + q * dslot, dslot, c);
        } else { /* from the current carry (packed: unpacked into next, the view's lanes) */
            const loop_core *L = b->c;
            const char *from = b->S->packed ? L->next : L->cur;
            for (int i = 0; i < L->nc; i++)
                rmi_loop_lanes_set(b, LB_SHOT, i, from + L->carry_off[i], 0);
            if (b->S->packed)
                rmi_loop_lanes_call(b, LKI_UNPACK, 1);
        }
        steps(b, step - q, -1, true);
        rmi_loop_lanes_call(b, LKI_RECOMPUTE, c);
        rmi_loop_lanes_count(b, b->c->p_fwd, c, true);
        count_reversed(b, c);
    }
}

/* The carries' lanes of the view between the current carry and slot
 * (to_slot: snapshot, else restore): packed, through PACK / UNPACK; all
 * lanes of the node's store in one copy; else rows of lanes, row by row. */
static void copy_slot(loop_lanes_view *b, int64_t slot, bool to_slot)
{
    const loop_core *c = b->c;
    const scan_lanes *S = b->S;
    if (S->packed) { /* the slot in the caller's layout, the carry packed */
        set_shot(b, slot, 0, 1);
        rmi_loop_lanes_call(b, to_slot ? LKI_UNPACK : LKI_PACK, 1);
        return;
    }
    int64_t lane;
    char *s = item(b, b->slots, c->carry_bytes, slot, &lane);
    if (b->lanes == S->m && b->group == 0) {
        c->be->iface.mem_copy(to_slot ? s : c->cur, to_slot ? c->cur : s, c->carry_bytes);
        return;
    }
    for (int i = 0; i < c->nc; i++) {
        const int64_t lb = S->lane_bytes[S->base[LB_CARRY] + i], row = S->m * lb;
        const int64_t rows = (int64_t)rmi_loop_rt_bytes(&c->carry_desc[i]) / row;
        char *cc = c->cur + c->carry_off[i] + b->lane0 * lb, *t = s + c->carry_off[i] + lane * lb;
        for (int64_t q = 0; q < rows; q++)
            c->be->iface.mem_copy(to_slot ? t + q * row : cc + q * row, to_slot ? cc + q * row : t + q * row,
                                  (size_t)(b->lanes * lb));
    }
}

static void x_snapshot(void *x, int slot) { copy_slot(x, slot, true); }

static void x_restore(void *x, int slot)
{
    loop_lanes_view *b = x;
    if (b->c->kind->restored)
        b->c->kind->restored(b->c);
    copy_slot(b, slot, false);
}

/* the ops one by one (the while loop's wrappers), each the inlined op */
void rmi_loop_lanes_advance(void *x, int64_t step, int64_t n) { x_advance(x, step, n); }
void rmi_loop_lanes_shot_advance(void *x, int64_t step, int64_t n, int slot, int dslot)
{
    x_shot_advance(x, step, n, slot, dslot);
}
void rmi_loop_lanes_tape(void *x, int64_t step, int64_t n, int64_t tape) { x_tape(x, step, n, tape); }
void rmi_loop_lanes_reverse(void *x, int64_t step, int64_t n, int64_t tape) { x_reverse(x, step, n, tape); }
void rmi_loop_lanes_recompute(void *x, int64_t step, int64_t n, int slot, int dslot)
{
    x_recompute(x, step, n, slot, dslot);
}
void rmi_loop_lanes_snapshot(void *x, int slot) { x_snapshot(x, slot); }
void rmi_loop_lanes_restore(void *x, int slot) { x_restore(x, slot); }

static const scan_executor lanes = {
    .advance = x_advance, .snapshot = x_snapshot, .restore = x_restore, .shot_advance = x_shot_advance,
    .tape = x_tape, .reverse = x_reverse, .recompute = x_recompute,
};

/* scan_walk instantiated here, where the ops are: direct calls, inlined */
void rmi_loop_lanes_run(void *x, const scan_xop *ops, int64_t n) { scan_walk(&lanes, x, ops, n); }

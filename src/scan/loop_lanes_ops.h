/*
 * loop_lanes_ops.h (internal) — the compiled executor's ops on a lane view
 * (loop_lanes.h) as inline bodies: loop_exec_lanes.c instantiates them for
 * every view (rmi_loop_lanes_run), a node that wraps some of them (the
 * while loop) for its own kind, K a constant there, so that its hooks are
 * direct calls. Each op is one kernel call per run of steps, within one
 * row group of a worker's store; evaluation counts and the sub-programs'
 * runs are the interpreted executor's (loop_exec.c).
 */
#ifndef REMAT_LOOP_LANES_OPS_H
#define REMAT_LOOP_LANES_OPS_H

#include "scan/loop_lanes.h"
#include "scan/scan_replay.h"

/* item k's memory in area `first` (items of `bytes`), and its first lane */
static inline char *rmi_loop_lanes_item(const loop_lanes_view *b, char *first, size_t bytes, int64_t k, int64_t *lane)
{
    if (b->group == 0) {
        *lane = b->lane0;
        return first + (size_t)k * bytes;
    }
    *lane = k % b->group * b->S->block;
    return first + (size_t)(k / b->group) * bytes;
}

/* the step stride of buffer q over items k, k+d, .. */
static inline int64_t rmi_loop_lanes_item_stride(const loop_lanes_view *b, int q, size_t bytes, int64_t d)
{
    return b->group == 0 ? d * (int64_t)bytes : d * b->S->block * b->S->lane_bytes[q];
}

/* how many of n items k, k+d, k+2d, .. lie in k's group */
static inline int64_t rmi_loop_lanes_run_len(const loop_lanes_view *b, int64_t k, int64_t d, int64_t n)
{
    if (b->group == 0 || d == 0)
        return n;
    const int64_t in = k % b->group, c = d > 0 ? (b->group - 1 - in) / d + 1 : in / -d + 1;
    return c < n ? c : n;
}

/* the snapshot buffers at slot, dslot apart; returns the steps one call may take */
static inline int64_t rmi_loop_lanes_set_shot(loop_lanes_view *b, int64_t slot, int64_t dslot, int64_t n)
{
    const loop_core *c = b->c;
    int64_t lane;
    const char *p = rmi_loop_lanes_item(b, b->slots, c->carry_bytes, slot, &lane);
    for (int i = 0; i < c->nc; i++) {
        const int q = b->S->base[LB_SHOT] + i;
        rmi_loop_lanes_set_at(b, q, p + c->carry_off[i], lane,
                              rmi_loop_lanes_item_stride(b, q, c->carry_bytes, dslot));
    }
    return rmi_loop_lanes_run_len(b, slot, dslot, n);
}

/* the tape buffers at tape, d (+1, -1) apart; returns the steps one call may take */
static inline int64_t rmi_loop_lanes_set_tape(loop_lanes_view *b, int64_t tape, int64_t d, int64_t n)
{
    const loop_core *c = b->c;
    const scan_body_vjp *V = c->vjp;
    int64_t lane;
    const char *p = rmi_loop_lanes_item(b, b->tapes, V->tape_bytes, tape, &lane);
    for (int t = 0; t < c->n_taped; t++) {
        const int q = b->S->base[LB_TAPE] + t;
        rmi_loop_lanes_set_at(b, q, p + V->res_off[c->res_taped[t]], lane,
                              rmi_loop_lanes_item_stride(b, q, V->tape_bytes, d));
    }
    return rmi_loop_lanes_run_len(b, tape, d, n);
}

static SCAN_ALWAYS_INLINE void rmi_loop_lanes_steps(const loop_lanes_kind *K, loop_lanes_view *b, int64_t k, int dk,
                                                    bool rev)
{
    if (K->steps)
        K->steps(b, k, dk, rev);
}

/* how many of steps k, k-1, .. (at most n) have a tape, in a row */
static SCAN_ALWAYS_INLINE int64_t rmi_loop_lanes_taped_back(const loop_lanes_kind *K, const loop_lanes_view *b,
                                                            int64_t k, int64_t n)
{
    return K->taped_back ? K->taped_back(b, k, n) : n;
}

/* n steps reversed (the range at lane 0 counts) */
static inline void rmi_loop_lanes_count_reversed(loop_lanes_view *b, int64_t n)
{
    if (b->lane0 == 0)
        b->c->reversed += n;
    rmi_loop_lanes_count(b, b->c->p_bwd, n, false);
}

static SCAN_ALWAYS_INLINE void rmi_loop_lanes_advance_k(const loop_lanes_kind *K, void *x, int64_t step, int64_t n)
{
    loop_lanes_view *b = x;
    rmi_loop_lanes_steps(K, b, step, 1, false);
    rmi_loop_lanes_call(b, LKI_ADVANCE, n);
    rmi_loop_lanes_count(b, b->plain, n, true);
}

static SCAN_ALWAYS_INLINE void rmi_loop_lanes_shot_advance_k(const loop_lanes_kind *K, void *x, int64_t step, int64_t n,
                                                          int slot, int dslot)
{
    loop_lanes_view *b = x;
    for (int64_t c; n > 0; step += c, slot += (int)(c * dslot), n -= c) {
        c = rmi_loop_lanes_set_shot(b, slot, dslot, n);
        rmi_loop_lanes_steps(K, b, step, 1, false);
        rmi_loop_lanes_call(b, LKI_ADVANCE_SHOT, c);
        rmi_loop_lanes_count(b, b->plain, c, true);
    }
}

static SCAN_ALWAYS_INLINE void rmi_loop_lanes_tape_k(const loop_lanes_kind *K, void *x, int64_t step, int64_t n,
                                                  int64_t tape)
{
    loop_lanes_view *b = x;
    for (int64_t q = 0, c; q < n; q += c) {
        c = rmi_loop_lanes_set_tape(b, tape + q, 1, n - q);
        rmi_loop_lanes_steps(K, b, step + q, 1, false);
        rmi_loop_lanes_call(b, LKI_TAPE, c);
        rmi_loop_lanes_count(b, b->c->p_fwd, c, true);
    }
}

static SCAN_ALWAYS_INLINE void rmi_loop_lanes_reverse_k(const loop_lanes_kind *K, void *x, int64_t step, int64_t n,
                                                     int64_t tape)
{
    loop_lanes_view *b = x;
    for (int64_t q = 0, c; q < n; q += c) {
        c = rmi_loop_lanes_taped_back(K, b, step - q, n - q);
        if (c == 0) { /* untaped: absent from the reverse pass */
            c = 1;
            continue;
        }
        c = rmi_loop_lanes_set_tape(b, tape - q, -1, c);
        rmi_loop_lanes_steps(K, b, step - q, -1, true);
        rmi_loop_lanes_call(b, LKI_REVERSE, c);
        rmi_loop_lanes_count_reversed(b, c);
    }
}

static SCAN_ALWAYS_INLINE void rmi_loop_lanes_recompute_k(const loop_lanes_kind *K, void *x, int64_t step, int64_t n,
                                                       int slot, int dslot)
{
    loop_lanes_view *b = x;
    REMAT_ASSERT(slot >= 0 || n == 1);
    for (int64_t q = 0, c; q < n; q += c) {
        c = rmi_loop_lanes_taped_back(K, b, step - q, n - q);
        if (c == 0) {
            c = 1;
            continue;
        }
        if (slot >= 0) {
            c = rmi_loop_lanes_set_shot(b, slot + q * dslot, dslot, c);
        } else { /* from the current carry (packed: unpacked into next, the view's lanes) */
            const loop_core *L = b->c;
            const char *from = b->S->packed ? L->next : L->cur;
            for (int i = 0; i < L->nc; i++)
                rmi_loop_lanes_set(b, LB_SHOT, i, from + L->carry_off[i], 0);
            if (b->S->packed)
                rmi_loop_lanes_call(b, LKI_UNPACK, 1);
        }
        rmi_loop_lanes_steps(K, b, step - q, -1, true);
        rmi_loop_lanes_call(b, LKI_RECOMPUTE, c);
        rmi_loop_lanes_count(b, b->c->p_fwd, c, true);
        rmi_loop_lanes_count_reversed(b, c);
    }
}

#endif

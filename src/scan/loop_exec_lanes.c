/*
 * loop_exec_lanes.c — the compiled executor both loop nodes share
 * (loop_lanes.h): the ops of loop_lanes_ops.h on a view of any kind,
 * SHOT and RESTORE (the view's lanes between the current carry and a
 * slot), and the walk of a plan's ops over them (rmi_loop_lanes_run).
 */
#include "scan/loop_lanes_ops.h"

/* the ops of a view of any kind */
static void x_advance(void *x, int64_t step, int64_t n)
{
    rmi_loop_lanes_advance_k(((loop_lanes_view *)x)->kind, x, step, n);
}

static void x_shot_advance(void *x, int64_t step, int64_t n, int slot, int dslot)
{
    rmi_loop_lanes_shot_advance_k(((loop_lanes_view *)x)->kind, x, step, n, slot, dslot);
}

static void x_tape(void *x, int64_t step, int64_t n, int64_t tape)
{
    rmi_loop_lanes_tape_k(((loop_lanes_view *)x)->kind, x, step, n, tape);
}

static void x_reverse(void *x, int64_t step, int64_t n, int64_t tape)
{
    rmi_loop_lanes_reverse_k(((loop_lanes_view *)x)->kind, x, step, n, tape);
}

static void x_recompute(void *x, int64_t step, int64_t n, int slot, int dslot)
{
    rmi_loop_lanes_recompute_k(((loop_lanes_view *)x)->kind, x, step, n, slot, dslot);
}

/* The carries' lanes of the view between the current carry and slot
 * (to_slot: snapshot, else restore): packed, through PACK / UNPACK; all
 * lanes of the node's store in one copy; else rows of lanes, row by row. */
static void copy_slot(loop_lanes_view *b, int64_t slot, bool to_slot)
{
    const loop_core *c = b->c;
    const scan_lanes *S = b->S;
    if (S->packed) { /* the slot in the caller's layout, the carry packed */
        rmi_loop_lanes_set_shot(b, slot, 0, 1);
        rmi_loop_lanes_call(b, to_slot ? LKI_UNPACK : LKI_PACK, 1);
        return;
    }
    int64_t lane;
    char *s = rmi_loop_lanes_item(b, b->slots, c->carry_bytes, slot, &lane);
    if (b->lanes == S->m && b->group == 0) {
        c->be->iface.mem_copy(c->cx, to_slot ? s : c->cur, to_slot ? c->cur : s, c->carry_bytes);
        return;
    }
    for (int i = 0; i < c->nc; i++) {
        const int64_t lb = S->lane_bytes[S->base[LB_CARRY] + i], row = S->m * lb;
        const int64_t rows = (int64_t)rmi_loop_rt_bytes(&c->carry_desc[i]) / row;
        char *cc = c->cur + c->carry_off[i] + b->lane0 * lb, *t = s + c->carry_off[i] + lane * lb;
        for (int64_t q = 0; q < rows; q++)
            c->be->iface.mem_copy(c->cx, to_slot ? t + q * row : cc + q * row, to_slot ? cc + q * row : t + q * row,
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

/* the ops one by one (the while loop's wrappers) */
void rmi_loop_lanes_snapshot(void *x, int slot) { x_snapshot(x, slot); }
void rmi_loop_lanes_restore(void *x, int slot) { x_restore(x, slot); }

static const scan_executor lanes = {
    .advance = x_advance, .snapshot = x_snapshot, .restore = x_restore, .shot_advance = x_shot_advance,
    .tape = x_tape, .reverse = x_reverse, .recompute = x_recompute,
};

/* scan_walk instantiated here, where the ops are: direct calls, inlined */
void rmi_loop_lanes_run(void *x, const scan_xop *ops, int64_t n) { scan_walk(&lanes, x, ops, n); }

/*
 * loop_lanes.h (internal) — the compiled executor's half both loop nodes
 * share (loop_exec_lanes.c): a loop's body runs as compiled lane loops
 * (lanes/lanes.h), one kernel call per op over its steps. A lane view is
 * one buffer table of a loop core's kernels over the lanes lane0 ..
 * lane0+lanes-1 (every pointer moved to lane0) and where its snapshots and
 * tapes are: a scan's table of all lanes, of a lane range or of a lane
 * block (scan_exec_lanes.c), a while loop's one lane of its body
 * (while_exec_lanes.c). The ops are one (a scan replays with
 * rmi_loop_lanes_run); what
 * differs is a loop_lanes_kind's hooks (a step's own buffers: a scan's x_t
 * and y_t; which steps have a tape: a while loop's accepted iterations)
 * and how each node binds, threads and blocks its views; a while loop
 * wraps them on its runtime with its own ADVANCE (its EXIT and flags) and
 * the first evaluation of an iteration.
 *
 * The store: snapshot slot k at slots + k * carry_bytes, tape j at tapes +
 * j * tape_bytes, every view at its own lanes (group 0). In a worker's
 * store (a scan's lane block, group G > 0) item k (a slot or a tape) is in
 * row group k / G, at the virtual lanes (k % G) * w .. of that group (w =
 * the block's lanes, G * w <= m): the block's items are packed side by
 * side into full-width carries and tapes, and consecutive items are w
 * lanes apart. A kernel call then stays within one group (run_len).
 */
#ifndef REMAT_LOOP_LANES_H
#define REMAT_LOOP_LANES_H

#include "core/assert.h"
#include "lanes/lanes.h"
#include "scan/loop_rt.h"

typedef struct loop_lanes_view loop_lanes_view;

typedef struct {
    /* the buffers of steps k, k+dk, .. besides the carry and the store (a
     * scan's x_t, y_t and, reversing, their cotangents); NULL: none */
    void (*steps)(loop_lanes_view *b, int64_t k, int dk, bool rev);
    /* how many of steps k, k-1, .. (at most n) have a tape, in a row; 0:
     * step k has none (absent from the reverse pass). NULL: every step */
    int64_t (*taped_back)(const loop_lanes_view *b, int64_t k, int64_t n);
} loop_lanes_kind;

struct loop_lanes_view {
    loop_core *c;
    const loop_lanes_kind *kind;
    const scan_lanes *S; /* the kernels and their buffers' places */
    char **ptr;
    int64_t *stride;
    int64_t lane0, lanes;
    char *slots, *tapes; /* the first snapshot and the first tape */
    int64_t group;       /* 0, or a worker's store's items per row group (S->block lanes apart) */
    remat_program *plain; /* the sub-program a plain step stands for (counts only) */
};

/* buffer q at p, moved to lane `lane` */
static inline void rmi_loop_lanes_set_at(loop_lanes_view *b, int q, const void *p, int64_t lane, int64_t stride)
{
    b->ptr[q] = p ? (char *)p + lane * b->S->lane_bytes[q] : NULL;
    b->stride[q] = stride;
}

/* buffer i of a kind (LB_*) at p, the view's lanes */
static inline void rmi_loop_lanes_set(loop_lanes_view *b, int kind, int i, const void *p, int64_t stride)
{
    rmi_loop_lanes_set_at(b, b->S->base[kind] + i, p, b->lane0, stride);
}

static inline void rmi_loop_lanes_call(loop_lanes_view *b, int kernel, int64_t count)
{
    const remat_lane_fn fn = b->S->fn[kernel];
    REMAT_ASSERT(fn && count > 0 && b->lanes > 0);
    rmi_lanes_call(b->c->cx, fn, b->ptr, b->stride, count, b->lanes);
}

/* evaluations and the sub-programs' runs, once for all lane ranges (the
 * range at lane 0 counts: one thread) */
static inline void rmi_loop_lanes_count(loop_lanes_view *b, remat_program *p, int64_t n, bool eval)
{
    if (b->lane0 != 0)
        return;
    b->c->evals += eval ? n : 0;
    rmi_program_add_runs(p, n);
}

/* loop_exec_lanes.c: a plan's ops on view x (any kind; the ops' bodies
 * are loop_lanes_ops.h's), and snapshot, restore: the view's lanes of the
 * carry into slot and back (restore tells the loop kind:
 * loop_kind.restored). */
void rmi_loop_lanes_snapshot(void *x, int slot);
void rmi_loop_lanes_restore(void *x, int slot);
void rmi_loop_lanes_run(void *x, const scan_xop *ops, int64_t n);

#endif

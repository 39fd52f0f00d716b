/*
 * plan_dump.c — REMAT_PLAN_DUMP=1 (a debugging aid, read where it acts):
 * after the arena plan, every buffer of a compiled program on stderr (its
 * value's op, forward/backward, bytes, first and last instruction, offset),
 * then the buffers live at the plan's peak summed by op and kind: what
 * dominates the arena.
 */
#include <stdio.h>
#include <stdlib.h>

#include "core/alloc.h"
#include "exec/passes.h"

static const char *kind_of(uint8_t flags)
{
    return flags & REMAT_NODE_RECOMPUTE ? "recompute" : flags & REMAT_NODE_BWD ? "backward" : "forward";
}

void rmi_plan_dump(const remat_compile_ctx *c, size_t arena_bytes)
{
    const char *e = getenv("REMAT_PLAN_DUMP");
    if (!e || !*e || (e[0] == '0' && !e[1]) || c->n_bufs == 0)
        return;
    const remat_graph_view *g = c->g;
    int32_t *owner = rmi_malloc(sizeof *owner * (size_t)c->n_bufs);
    if (!owner)
        return;
    for (int32_t b = 0; b < c->n_bufs; b++)
        owner[b] = -1;
    for (int32_t i = 0; i < c->n_order; i++) {
        int32_t v = c->order[i];
        const remat_storage *s = &c->N[v].st;
        if (c->N[v].instr >= 0 && s->kind == ST_ARENA && owner[s->index] < 0)
            owner[s->index] = v;
    }
    /* the peak: the instruction where the live buffers' bytes are largest */
    int32_t peak_at = 0;
    size_t peak = 0;
    for (int32_t t = 0; t <= c->n_instr; t++) {
        size_t live = 0;
        for (int32_t b = 0; b < c->n_bufs; b++)
            if (c->bufs[b].first <= t && c->bufs[b].last >= t)
                live += c->bufs[b].size;
        if (live > peak)
            peak = live, peak_at = t;
    }
    fprintf(stderr, "plan of '%s': %d buffers, arena %zu bytes, live bytes peak %zu at instruction %d\n", remat_fn_name(g->fn),
            (int)c->n_bufs, arena_bytes, peak, (int)peak_at);
    for (int32_t b = 0; b < c->n_bufs; b++) {
        const remat_plan_buf *B = &c->bufs[b];
        int32_t v = owner[b];
        const remat_node *n = v >= 0 ? &g->nodes[v] : NULL;
        fprintf(stderr, "  buf %d: %zu bytes [%d, %d] at %zu: %s%%%d %s (%s:%d)%s\n", (int)b, B->size, (int)B->first,
                (int)B->last, B->offset, n ? kind_of(n->flags) : "", (int)v,
                n ? remat_op_name((remat_op)n->op) : "(higher-order op output)", n ? n->loc.file : "",
                n ? n->loc.line : 0, B->first <= peak_at && B->last >= peak_at ? " LIVE-AT-PEAK" : "");
    }
    /* live at the peak, by op and kind */
    fprintf(stderr, "live at the peak by op:\n");
    for (int op = 0; op < REMAT_OP_COUNT; op++)
        for (uint8_t k = 0; k < 3; k++) {
            size_t bytes = 0;
            int cnt = 0;
            for (int32_t b = 0; b < c->n_bufs; b++) {
                const remat_plan_buf *B = &c->bufs[b];
                int32_t v = owner[b];
                if (v < 0 || g->nodes[v].op != op || !(B->first <= peak_at && B->last >= peak_at))
                    continue;
                uint8_t f = g->nodes[v].flags;
                uint8_t kk = f & REMAT_NODE_RECOMPUTE ? 2 : f & REMAT_NODE_BWD ? 1 : 0;
                if (kk == k)
                    bytes += B->size, cnt++;
            }
            if (cnt)
                fprintf(stderr, "  %-20s %-9s %4d buffers %12zu bytes\n", remat_op_name((remat_op)op),
                        k == 2 ? "recompute" : k == 1 ? "backward" : "forward", cnt, bytes);
        }
    rmi_free(owner);
}

/*
 * lower.c — the backend's side of compiling: the op each instruction hands
 * the backend (whether it supports it, what scratch it needs), then the
 * instructions themselves with their buffers resolved, the copies into
 * outputs that no instruction writes, and the patches that point
 * instructions at the caller's buffers at each run.
 */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/assert.h"
#include "core/error.h"
#include "exec/exec_op.h"
#include "exec/fuse.h"
#include "exec/passes.h"

static remat_status build_exec_op(remat_compile_ctx *c, remat_val v, remat_exec_op *op)
{
    const remat_graph_view *g = c->g;
    const remat_node *n = &g->nodes[v];
    remat_dtype *dts = rmi_prog_alloc(c->p, sizeof *dts * (size_t)(n->nin + 1));
    remat_shape *shs = rmi_prog_alloc(c->p, sizeof *shs * (size_t)(n->nin + 1));
    if (!dts || !shs)
        return rmi_compile_nomem("an op's operand descriptions");
    for (int k = 0; k < n->nin; k++) {
        dts[k] = (remat_dtype)g->nodes[n->in[k]].dtype;
        shs[k] = g->nodes[n->in[k]].shape;
    }
    memset(op, 0, sizeof *op);
    for (int k = 0; k < n->nin && k < 32; k++)
        if (c->N[n->in[k]].scalar)
            op->scalar_mask |= 1u << k;
    op->op = (remat_op)n->op;
    op->dtype = (remat_dtype)n->dtype;
    op->shape = n->shape;
    op->nin = n->nin;
    op->in_dtypes = dts;
    op->in_shapes = shs;
    op->aux = n->aux;
    if (n->op == REMAT_OP_DOT_GENERAL) { /* the constants' values, for a backend's sparse products */
        const void **data = NULL;
        for (int k = 0; k < n->nin; k++) {
            const remat_node *in = &g->nodes[n->in[k]];
            if (in->op != REMAT_OP_CONSTANT || !in->data)
                continue;
            if (!data && !(data = rmi_prog_alloc(c->p, sizeof *data * (size_t)n->nin)))
                return rmi_compile_nomem("an op's operand descriptions");
            data[k] = in->data;
        }
        op->in_data = data;
    }
    rmi_exec_op_params(n, op);
    return REMAT_OK;
}

/* The op of every instruction (ops[instr]), checked against the backend;
 * scratch buffers live for their one instruction. */
remat_status rmi_pass_ops(remat_compile_ctx *c)
{
    const remat_graph_view *g = c->g;
    remat_backend *be = c->be;
    c->ops = rmi_calloc((size_t)c->n_instr + 1, sizeof *c->ops);
    if (!c->ops)
        return rmi_compile_nomem("the op list");
    for (int32_t i = 0; i < c->n_order; i++) {
        int32_t v = c->order[i];
        remat_cnode *R = &c->N[v];
        if (R->instr < 0)
            continue;
        remat_exec_op *op = &c->ops[R->instr].op;
        c->ops[R->instr].scratch_buf = -1;
        remat_status st = build_exec_op(c, v, op);
        if (st != REMAT_OK)
            return st;
        if (g->nodes[v].op == REMAT_OP_HOP || g->nodes[v].op == REMAT_OP_NAME) /* a name with an
                                                                                   instruction: offload.c's */
            continue;
        if (!be->iface.supports_op(op)) {
            const remat_node *n = &g->nodes[v];
            return rmi_error(REMAT_ERR_UNSUPPORTED, "compile: backend '%s' does not support %s at %s:%d",
                             be->iface.name, remat_op_name((remat_op)n->op), n->loc.file, n->loc.line);
        }
        size_t sb = be->iface.scratch_bytes(op);
        if (sb == 0)
            continue;
        c->ops[R->instr].scratch_buf = rmi_compile_add_buf(c, sb, R->instr);
        if (c->ops[R->instr].scratch_buf < 0)
            return REMAT_ERR_NOMEM;
    }
    return REMAT_OK;
}

/* Points *slot at storage s (arena/consts now, caller memory via a patch). */
static void resolve(remat_compile_ctx *c, const void **slot, const remat_storage *s)
{
    remat_program *p = c->p;
    switch (s->kind) {
    case ST_ARENA:
        *slot = (char *)p->arena + c->bufs[s->index].offset + s->view;
        break;
    case ST_CONST:
        *slot = (char *)p->consts + s->view;
        break;
    case ST_INPUT:
    case ST_OUTPUT:
        *slot = NULL;
        p->patches[p->n_patches++] = (remat_patch){slot, s->kind == ST_OUTPUT, s->index, s->view};
        break;
    default:
        REMAT_UNREACHABLE("compile: value without storage");
    }
}

/* The end of planner buffer b in the arena, aligned. */
static size_t buf_end(const remat_compile_ctx *c, int32_t b)
{
    const remat_plan_buf *pb = &c->bufs[b];
    return pb->offset + (pb->size + REMAT_ARENA_ALIGN - 1) / REMAT_ARENA_ALIGN * REMAT_ARENA_ALIGN;
}

/* I->in for nin operands: inline up to four, else from the program. */
static remat_status alloc_inputs(remat_program *p, remat_instr *I, int nin)
{
    I->in = nin <= 4 ? I->in_inline : rmi_prog_alloc(p, sizeof *I->in * (size_t)nin);
    return I->in ? REMAT_OK : rmi_compile_nomem("an instruction's operand list");
}

static void count_op(remat_program *p, const remat_node *n)
{
    p->op_counts[n->op]++;
    if (n->flags & REMAT_NODE_RECOMPUTE)
        p->recompute_instrs++;
}

static remat_status lower_hop(remat_compile_ctx *c, remat_val v, const remat_exec_op *op, remat_instr *I)
{
    const remat_node *n = &c->g->nodes[v];
    const remat_storage *hop_st = c->N[v].hop_st;
    remat_program *p = c->p;
    int no = rmi_hop_node_outputs(n);
    if (alloc_inputs(p, I, n->nin) != REMAT_OK)
        return REMAT_ERR_NOMEM;
    for (int k = 0; k < n->nin; k++)
        resolve(c, &I->in[k], &c->N[n->in[k]].st);
    void **outs = rmi_prog_alloc(p, sizeof *outs * (size_t)(no + 1));
    if (!outs)
        return rmi_compile_nomem("a higher-order op's output list");
    for (int i = 0; i < no; i++) {
        if (hop_st[i].kind == ST_OUTPUT) { /* the caller's buffer, patched in at each run */
            resolve(c, (const void **)&outs[i], &hop_st[i]);
            continue;
        }
        outs[i] = (char *)p->arena + c->bufs[hop_st[i].index].offset;
        size_t end = buf_end(c, hop_st[i].index);
        if (end > I->arena_end)
            I->arena_end = end;
    }
    remat_hop_lowering L = {
        .be = c->be, .nin = n->nin, .in_dtypes = op->in_dtypes, .in_shapes = op->in_shapes,
        .nout = no, .outs = outs, .alloc = rmi_prog_alloc_backend, .mem = rmi_prog_mem, .ctx = p,
        .counters = p->counters, .nested = p->counters != &p->own_counters,
    };
    p->op_counts[REMAT_OP_HOP]++;
    return rmi_hop_node_lower(n, &L, I);
}

/* One instruction for the group rooted at v: its members' micro-ops, its
 * external inputs, the root's output. The members count as the primitive
 * ops they are (op_counts, recomputed ops, n_fused for the totals). */
static remat_status lower_fused(remat_compile_ctx *c, remat_val v, remat_instr *I)
{
    remat_program *p = c->p;
    const remat_cnode *N = c->N;
    int32_t members[REMAT_FUSED_MAX_UOPS];
    int nm = 0;
    for (int32_t m = N[v].gnext; m != v; m = N[m].gnext)
        members[nm++] = m;
    members[nm++] = v;
    REMAT_ASSERT(nm == N[v].gsize);
    remat_fused_uop uops[REMAT_FUSED_MAX_UOPS];
    remat_val ext[3 * REMAT_FUSED_MAX_UOPS];
    int n_ext = 0;
    remat_fused_op F;
    rmi_fuse_describe(c->g, members, nm, N, &F, uops, ext, &n_ext);
    if (alloc_inputs(p, I, n_ext) != REMAT_OK)
        return REMAT_ERR_NOMEM;
    for (int k = 0; k < n_ext; k++)
        resolve(c, &I->in[k], &N[ext[k]].st);
    resolve(c, (const void **)&I->out, &N[v].st);
    if (N[v].st.kind == ST_ARENA)
        I->arena_end = buf_end(c, N[v].st.index);
    for (int k = 0; k < nm; k++)
        count_op(p, &c->g->nodes[members[k]]);
    p->n_fused += nm - 1;
    p->n_fused_reductions += F.red_len > 0;
    const remat_status st = rmi_fuse_compile(c, &F, (int64_t)I->n);
    if (st != REMAT_OK)
        return st;
    return c->be->iface.lower_fused(&F, I, rmi_prog_alloc_backend, p);
}

/* add(x, pad(g)) as one instruction (add_pad.c); counted as the two ops */
static remat_status lower_add_pad(remat_compile_ctx *c, remat_val v, remat_instr *I)
{
    remat_program *p = c->p;
    const remat_node *n = &c->g->nodes[v];
    int k = c->N[v].padadd;
    const remat_node *pn = &c->g->nodes[n->in[k]];
    remat_val x = n->in[1 - k], gv = pn->in[0];
    I->in = I->in_inline;
    resolve(c, &I->in[0], &c->N[x].st);
    resolve(c, &I->in[1], &c->N[gv].st);
    resolve(c, (const void **)&I->out, &c->N[v].st);
    if (c->N[v].st.kind == ST_ARENA)
        I->arena_end = buf_end(c, c->N[v].st.index);
    count_op(p, n);
    count_op(p, pn);
    p->n_fused++;
    return c->be->iface.lower_add_pad((remat_dtype)n->dtype, &n->shape, &c->g->nodes[gv].shape, pn->p.pad, k == 0, I,
                                      rmi_prog_alloc_backend, p);
}

/* An op of its own: operands, output, scratch. */
static remat_status lower_op(remat_compile_ctx *c, remat_val v, const remat_cinstr *ci, remat_instr *I)
{
    remat_program *p = c->p;
    const remat_node *n = &c->g->nodes[v];
    const remat_cnode *R = &c->N[v];
    if (alloc_inputs(p, I, n->nin) != REMAT_OK)
        return REMAT_ERR_NOMEM;
    for (int k = 0; k < n->nin; k++)
        resolve(c, &I->in[k], &c->N[n->in[k]].st);
    resolve(c, (const void **)&I->out, &R->st);
    if (R->st.kind == ST_ARENA)
        I->arena_end = buf_end(c, R->st.index);
    if (ci->scratch_buf >= 0) {
        I->scratch = (char *)p->arena + c->bufs[ci->scratch_buf].offset;
        size_t end = buf_end(c, ci->scratch_buf);
        if (end > I->arena_end)
            I->arena_end = end;
    }
    remat_status st = c->be->iface.lower(&ci->op, I, rmi_prog_alloc_backend, p);
    count_op(p, n);
    return st;
}

/* Trailing copies into outputs that are arguments, constants, aliases or
 * repeats. */
static remat_status lower_copies(remat_compile_ctx *c)
{
    const remat_graph_view *g = c->g;
    int32_t ci = c->n_instr;
    for (int j = 0; j < g->n_outs; j++) {
        remat_val v = g->outs[j];
        if (c->direct[j])
            continue;
        remat_instr *I = &c->p->instrs[ci++];
        I->in = I->in_inline;
        resolve(c, &I->in[0], &c->N[v].st);
        remat_storage out = {.kind = ST_OUTPUT, .index = j};
        resolve(c, (const void **)&I->out, &out);
        I->n = (size_t)remat_shape_numel(&g->nodes[v].shape);
        remat_exec_op cp = {.op = REMAT_OP_RESHAPE, .dtype = (remat_dtype)g->nodes[v].dtype,
                            .shape = g->nodes[v].shape, .nin = 1};
        remat_status st = c->be->iface.lower(&cp, I, rmi_prog_alloc_backend, c->p);
        if (st != REMAT_OK)
            return st;
    }
    return REMAT_OK;
}

/* The patches of inputs first, then those of outputs (stable): a loop body
 * re-patches every step, and this way neither loop tests a patch's kind. */
static remat_status sort_patches(remat_program *p)
{
    remat_patch *sorted = rmi_malloc(sizeof *sorted * ((size_t)p->n_patches + 1));
    if (!sorted)
        return rmi_compile_nomem("the patch list");
    int32_t n_sorted = 0;
    for (int out = 0; out < 2; out++) {
        for (int32_t i = 0; i < p->n_patches; i++)
            if (p->patches[i].is_output == out)
                sorted[n_sorted++] = p->patches[i];
        if (out == 0)
            p->n_in_patches = n_sorted;
    }
    memcpy(p->patches, sorted, sizeof *sorted * (size_t)p->n_patches);
    rmi_free(sorted);
    return REMAT_OK;
}

/* The instruction array and room for the patches: at most every input of
 * every instruction (a fused group's: its members') plus its output. */
static remat_status alloc_instrs(remat_compile_ctx *c)
{
    const remat_graph_view *g = c->g;
    remat_program *p = c->p;
    int32_t total = c->n_instr + c->n_copies;
    size_t max_patches = (size_t)total * 2;
    for (int32_t i = 0; i < c->n_order; i++) {
        int32_t v = c->order[i];
        const remat_cnode *R = &c->N[v];
        if (R->instr < 0 && R->root == v)
            continue;
        max_patches += (size_t)g->nodes[v].nin;
        if (R->hop_st)
            max_patches += (size_t)rmi_hop_node_outputs(&g->nodes[v]);
    }
    p->instrs = rmi_calloc((size_t)(total ? total : 1), sizeof *p->instrs);
    p->patches = rmi_calloc(max_patches + 1, sizeof *p->patches);
    if (!p->instrs || !p->patches)
        return rmi_compile_nomem("the instruction list");
    p->n_instrs = total;
    p->n_copies = c->n_copies;
    return REMAT_OK;
}

/* An OFFLOAD node's write (its operand) or a RELOAD node's read (into its
 * buffer), offload.c */
static remat_status lower_tier(remat_compile_ctx *c, remat_val v, remat_instr *I, bool last)
{
    const remat_node *n = &c->g->nodes[v];
    const remat_cnode *R = &c->N[v];
    I->in = I->in_inline;
    I->n = (size_t)remat_shape_numel(&n->shape);
    if (n->flags & REMAT_NODE_OFFLOAD) {
        resolve(c, &I->in[0], &c->N[n->in[0]].st);
    } else {
        resolve(c, (const void **)&I->out, &R->st);
        if (R->st.kind == ST_ARENA)
            I->arena_end = buf_end(c, R->st.index);
    }
    count_op(c->p, n);
    return rmi_offload_lower(c, v, I, last);
}

remat_status rmi_pass_lower(remat_compile_ctx *c)
{
    const remat_graph_view *g = c->g;
    remat_program *p = c->p;
    remat_status st = alloc_instrs(c);
    int32_t last_tier = -1; /* the last instruction that reads or writes the tier */
    for (int32_t i = 0; i < c->n_order; i++)
        if (g->nodes[c->order[i]].op == REMAT_OP_NAME && c->N[c->order[i]].instr >= 0)
            last_tier = c->N[c->order[i]].instr;
    for (int32_t i = 0; i < c->n_order && st == REMAT_OK; i++) {
        int32_t v = c->order[i];
        const remat_cnode *R = &c->N[v];
        const remat_node *n = &g->nodes[v];
        if (R->elided) { /* its operands wrote their slots: the op ran inside their instructions */
            count_op(p, n);
            p->n_fused++;
            continue;
        }
        if (R->instr < 0)
            continue;
        remat_instr *I = &p->instrs[R->instr];
        if (n->op == REMAT_OP_NAME) {
            st = lower_tier(c, v, I, R->instr == last_tier);
            continue;
        }
        if (n->op == REMAT_OP_HOP) {
            st = lower_hop(c, v, &c->ops[R->instr].op, I);
            continue;
        }
        I->n = (size_t)remat_shape_numel(&n->shape);
        if (R->gsize > 1)
            st = lower_fused(c, v, I);
        else if (R->padadd >= 0)
            st = lower_add_pad(c, v, I);
        else
            st = lower_op(c, v, &c->ops[R->instr], I);
    }
    if (st == REMAT_OK)
        st = lower_copies(c);
    if (st == REMAT_OK)
        st = sort_patches(p);
    return st;
}

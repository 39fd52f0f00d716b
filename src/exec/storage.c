/*
 * storage.c — where each value lives: the arena (planned statically), the
 * constant pool, the caller's input or output buffers, or another value's
 * storage (an alias: reshape, name, projection, a slice that is a view).
 * Three passes: splat constants (before the rewrites, which read them), the
 * storage of every value with instruction numbering and buffer lifetimes,
 * and the arena plan.
 */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/assert.h"
#include "core/error.h"
#include "exec/passes.h"

size_t rmi_node_bytes(const remat_node *n)
{
    return (size_t)remat_shape_numel(&n->shape) * remat_dtype_size((remat_dtype)n->dtype);
}

/* A slice that is one contiguous run of its operand (leading axes of size
 * one, then a range of one axis, then whole trailing axes), such as a row of
 * a (3, B) state or an element of a (3,) vector: its value is a view into
 * the operand's buffer, no copy. */
static bool is_view_slice(const remat_node *n, const remat_node *in)
{
    if (n->op != REMAT_OP_SLICE)
        return false;
    const remat_slice_params *p = n->p.slice;
    int r = in->shape.rank, j = 0;
    while (j < r && n->shape.dims[j] == 1)
        j++;
    if (j == r)
        return true; /* a single element */
    if (p->stride[j] != 1)
        return false;
    for (int i = j + 1; i < r; i++)
        if (p->start[i] != 0 || n->shape.dims[i] != in->shape.dims[i])
            return false;
    return true;
}

static size_t slice_view_offset(const remat_node *in, const remat_node *n)
{
    const remat_slice_params *p = n->p.slice;
    size_t off = 0, row = 1;
    for (int i = in->shape.rank - 1; i >= 0; i--) {
        off += (size_t)p->start[i] * row;
        row *= (size_t)in->shape.dims[i];
    }
    return off * remat_dtype_size((remat_dtype)n->dtype);
}

bool rmi_node_is_alias(const remat_graph_view *g, const remat_node *n)
{
    return n->op == REMAT_OP_RESHAPE || rmi_op_is_identity((remat_op)n->op) || n->op == REMAT_OP_PROJ ||
           (n->op == REMAT_OP_SLICE && is_view_slice(n, &g->nodes[n->in[0]]));
}

/* Splat constants (one value filled into a shape, as reverse mode makes for
 * relu's zeros) read only as an operand of binary elementwise ops or as
 * select's branches are stored as one element and read as a scalar: no
 * megabytes of zeros in the constant pool, no streaming them per op. */
remat_status rmi_pass_splat(remat_compile_ctx *c)
{
    const remat_graph_view *g = c->g;
    remat_cnode *N = c->N;
    int32_t candidates = 0;
    for (int32_t i = 0; i < c->n_order; i++) {
        int32_t v = c->order[i];
        const remat_node *n = &g->nodes[v];
        if (n->op == REMAT_OP_CONSTANT && !n->data && remat_shape_numel(&n->shape) > 1)
            N[v].scalar = true, candidates++;
    }
    if (candidates == 0)
        return REMAT_OK;
    for (int i = 0; i < g->n_outs; i++)
        N[g->outs[i]].scalar = false;
    for (int32_t i = 0; i < c->n_order; i++) {
        const remat_node *n = &g->nodes[c->order[i]];
        for (int k = 0; k < n->nin; k++) {
            remat_val a = n->in[k];
            if (!N[a].scalar)
                continue;
            bool ok = (remat_op_is_binary((remat_op)n->op) && !N[n->in[1 - k]].scalar) ||
                      (n->op == REMAT_OP_SELECT && k > 0);
            if (!ok)
                N[a].scalar = false;
        }
    }
    /* a binary op whose other operand was just demoted is still fine; one
     * whose operands both stayed scalar cannot happen (checked above) */
    return REMAT_OK;
}

int32_t rmi_compile_add_buf(remat_compile_ctx *c, size_t size, int32_t first)
{
    if (c->n_bufs == c->cap_bufs) {
        int32_t cap = c->cap_bufs ? 2 * c->cap_bufs : 64;
        remat_plan_buf *b = rmi_realloc(c->bufs, sizeof *b * (size_t)cap);
        if (!b) {
            rmi_compile_nomem("the arena plan");
            return -1;
        }
        c->bufs = b;
        c->cap_bufs = cap;
    }
    c->bufs[c->n_bufs] = (remat_plan_buf){.size = size, .first = first, .last = first};
    return c->n_bufs++;
}

/* The caller output that HOP v's result i is written into, or -1: the first
 * output bound (directly, through reshapes and names) to a projection of it;
 * any later one bound to the same result becomes a copy. */
static int hop_output_of(remat_compile_ctx *c, int32_t v, int i)
{
    const remat_graph_view *g = c->g;
    int found = -1;
    for (int j = 0; j < g->n_outs; j++) {
        remat_val u = g->outs[j];
        while (g->nodes[u].op == REMAT_OP_RESHAPE || rmi_op_is_identity((remat_op)g->nodes[u].op))
            u = g->nodes[u].in[0];
        const remat_node *n = &g->nodes[u];
        if (!c->direct[j] || n->op != REMAT_OP_PROJ || n->in[0] != v || n->p.output != i || c->N[u].bind != j)
            continue;
        if (found < 0) {
            found = j;
        } else {
            c->direct[j] = 0;
            c->n_copies++;
        }
    }
    return found;
}

/* A HOP is one instruction; each of its outputs goes to a caller output
 * (hop_output_of) or an arena buffer of its own. */
static remat_status hop_storage(remat_compile_ctx *c, int32_t v)
{
    const remat_node *n = &c->g->nodes[v];
    int no = rmi_hop_node_outputs(n);
    remat_cnode *R = &c->N[v];
    R->instr = c->n_instr++;
    R->hop_st = rmi_calloc((size_t)no + 1, sizeof *R->hop_st);
    if (!R->hop_st)
        return rmi_compile_nomem("the storage of a higher-order op's outputs");
    for (int i = 0; i < no; i++) {
        remat_dtype dt;
        remat_shape sh;
        rmi_hop_node_output_desc(n, i, &dt, &sh);
        size_t bytes = (size_t)remat_shape_numel(&sh) * remat_dtype_size(dt);
        int out = hop_output_of(c, v, i);
        if (out >= 0) {
            R->hop_st[i] = (remat_storage){.kind = ST_OUTPUT, .index = out};
            continue;
        }
        int32_t b = rmi_compile_add_buf(c, bytes, R->instr);
        if (b < 0)
            return REMAT_ERR_NOMEM;
        R->hop_st[i] = (remat_storage){.kind = ST_ARENA, .index = b};
    }
    return REMAT_OK;
}

/* The storage of an op with an instruction of its own: its slot of an
 * in-place concatenate (whose buffer is live from the first operand's
 * write), the caller output bound to it, or a new arena buffer. */
static remat_status op_storage(remat_compile_ctx *c, int32_t v)
{
    remat_cnode *R = &c->N[v];
    R->instr = c->n_instr++;
    if (R->place_in >= 0) {
        remat_cnode *C = &c->N[R->place_in];
        if (C->st.kind == ST_NONE) {
            int32_t b = rmi_compile_add_buf(c, rmi_node_bytes(&c->g->nodes[R->place_in]), R->instr);
            if (b < 0)
                return REMAT_ERR_NOMEM;
            C->st = (remat_storage){.kind = ST_ARENA, .index = b};
        }
        R->st = (remat_storage){.kind = ST_ARENA, .index = C->st.index, .view = R->place_off};
    } else if (R->bind >= 0) {
        R->st = (remat_storage){.kind = ST_OUTPUT, .index = R->bind};
    } else {
        int32_t b = rmi_compile_add_buf(c, rmi_node_bytes(&c->g->nodes[v]), R->instr);
        if (b < 0)
            return REMAT_ERR_NOMEM;
        R->st = (remat_storage){.kind = ST_ARENA, .index = b};
    }
    return REMAT_OK;
}

/* Each arena buffer lives to its last reader: aliases read their root, a
 * fused group's members read at the group's instruction, an output copied
 * at the end at its copy. */
static void lifetimes(remat_compile_ctx *c)
{
    const remat_graph_view *g = c->g;
    const remat_cnode *N = c->N;
    for (int32_t i = 0; i < c->n_order; i++) {
        int32_t v = c->order[i];
        int32_t at = N[v].instr >= 0 ? N[v].instr : N[v].root != v ? N[N[v].root].instr : -1;
        if (at < 0)
            continue;
        const remat_node *n = &g->nodes[v];
        for (int k = 0; k < n->nin; k++) {
            remat_val a = n->in[k];
            if (k == N[v].padadd) /* the absorbed pad: the add reads its operand */
                a = g->nodes[a].in[0];
            const remat_storage *s = &N[a].st;
            if (s->kind == ST_ARENA && c->bufs[s->index].last < at)
                c->bufs[s->index].last = at;
        }
    }
    int32_t ci = c->n_instr;
    for (int j = 0; j < g->n_outs; j++) {
        if (c->direct[j])
            continue;
        const remat_storage *s = &N[g->outs[j]].st;
        if (s->kind == ST_ARENA && c->bufs[s->index].last < ci)
            c->bufs[s->index].last = ci;
        ci++;
    }
}

remat_status rmi_pass_storage(remat_compile_ctx *c)
{
    const remat_graph_view *g = c->g;
    remat_cnode *N = c->N;
    remat_status st0 = rmi_offload_mark(c, &c->tier);
    if (st0 != REMAT_OK)
        return st0;
    for (int32_t i = 0; i < c->n_order; i++) {
        int32_t v = c->order[i];
        const remat_node *n = &g->nodes[v];
        remat_status st = REMAT_OK;
        if (c->tier && c->tier[v]) {
            st = rmi_offload_storage(c, v);
        } else if (c->tier && (n->flags & REMAT_NODE_RELOAD) && c->tier[n->in[0]]) {
            st = op_storage(c, v); /* read back into a buffer of its own */
        } else if (n->op == REMAT_OP_ARG) {
            N[v].st = (remat_storage){.kind = ST_INPUT, .index = (int32_t)n->p.arg_pos};
        } else if (n->op == REMAT_OP_CONSTANT) {
            N[v].st = (remat_storage){.kind = ST_CONST, .view = c->const_bytes};
            size_t bytes = N[v].scalar ? remat_dtype_size((remat_dtype)n->dtype) : rmi_node_bytes(n);
            c->const_bytes += (bytes + REMAT_ARENA_ALIGN - 1) / REMAT_ARENA_ALIGN * REMAT_ARENA_ALIGN;
        } else if (n->op == REMAT_OP_PROJ) {
            REMAT_ASSERT(N[n->in[0]].hop_st);
            N[v].st = N[n->in[0]].hop_st[n->p.output];
        } else if (rmi_node_is_alias(g, n)) {
            N[v].st = N[n->in[0]].st;
            if (n->op == REMAT_OP_SLICE)
                N[v].st.view += slice_view_offset(&g->nodes[n->in[0]], n);
        } else if (n->op == REMAT_OP_HOP) {
            st = hop_storage(c, v);
        } else if (n->op == REMAT_OP_CHECKPOINT) {
            return rmi_error(REMAT_ERR_UNSUPPORTED, "compile: %s node at %s:%d cannot be compiled here",
                             remat_op_name((remat_op)n->op), n->loc.file, n->loc.line);
        } else if (N[v].root != v || N[v].absorbed) {
            continue; /* a fused group's intermediate, an absorbed pad: no instruction, no storage */
        } else if (N[v].elided) {
            /* its operands wrote their slots: the op ran inside their instructions */
            REMAT_ASSERT(N[v].st.kind == ST_ARENA);
        } else {
            st = op_storage(c, v);
        }
        if (st != REMAT_OK)
            return st;
    }
    lifetimes(c);
    return REMAT_OK;
}

static void fill_constant(void *dst, const remat_node *n, bool one)
{
    size_t cnt = one ? 1 : (size_t)remat_shape_numel(&n->shape);
    if (n->data) {
        memcpy(dst, n->data, rmi_node_bytes(n));
    } else if (n->dtype == REMAT_F64) {
        for (size_t i = 0; i < cnt; i++)
            ((double *)dst)[i] = n->p.fill;
    } else {
        for (size_t i = 0; i < cnt; i++)
            ((float *)dst)[i] = (float)n->p.fill;
    }
}

/* Offsets for every arena buffer (backend/plan.c), then the arena and the
 * constant pool, filled. */
remat_status rmi_pass_plan(remat_compile_ctx *c)
{
    remat_program *p = c->p;
    remat_backend *be = c->be;
    remat_status st = rmi_plan_offsets(c->bufs, c->n_bufs, REMAT_ARENA_ALIGN, &p->arena_bytes);
    if (st != REMAT_OK)
        return st;
    rmi_plan_dump(c, p->arena_bytes);
    p->const_bytes = c->const_bytes;
    const remat_exec_ctx *cx = &p->counters->compile_cx;
    p->arena = be->iface.mem_alloc(cx, p->arena_bytes);
    if (!p->arena)
        return rmi_error(REMAT_ERR_NOMEM, "compile: out of memory for the arena of %zu bytes", p->arena_bytes);
    p->consts = be->iface.mem_alloc(cx, c->const_bytes);
    if (!p->consts)
        return rmi_error(REMAT_ERR_NOMEM, "compile: out of memory for the constant pool of %zu bytes",
                         c->const_bytes);
    /* a device backend's pool is filled on the host and uploaded once */
    char *pool = be->iface.copy_in ? rmi_malloc(c->const_bytes ? c->const_bytes : 1) : p->consts;
    if (!pool)
        return rmi_compile_nomem("the constant pool");
    for (int32_t i = 0; i < c->n_order; i++) {
        int32_t v = c->order[i];
        if (c->g->nodes[v].op == REMAT_OP_CONSTANT)
            fill_constant(pool + c->N[v].st.view, &c->g->nodes[v], c->N[v].scalar);
    }
    if (pool != p->consts) {
        if (c->const_bytes)
            be->iface.copy_in(cx, p->consts, pool, c->const_bytes);
        rmi_free(pool);
    }
    return REMAT_OK;
}

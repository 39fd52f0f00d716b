/*
 * compile.c — from a function to a program: order, dead-code removal,
 * storage (arena / constant / caller input / caller output / alias), static
 * arena plan, and lowering of each op by the backend.
 *
 * Execution order is node order. Reverse mode emits recomputation right
 * before the backward that reads it, so node order is what realises the
 * checkpointing memory savings; a re-ordering pass would undo them.
 */
#include <stdlib.h>
#include <string.h>

#include "ad/flatten.h"
#include "ad/graph_impl.h"
#include "core/assert.h"
#include "core/error.h"
#include "exec/exec_op.h"
#include "exec/fuse.h"
#include "exec/program_impl.h"

enum { ST_NONE, ST_ARENA, ST_CONST, ST_INPUT, ST_OUTPUT };

typedef struct {
    uint8_t kind;
    int32_t index;  /* ST_INPUT/ST_OUTPUT: which; ST_ARENA: planner buffer */
    size_t offset;  /* ST_CONST: in the pool; ST_ARENA: after planning */
    size_t view;    /* bytes into that storage (a contiguous slice is a view) */
} storage;

typedef struct {
    const remat_fn *g;
    remat_program *p;
    storage *st;        /* per node */
    int32_t *instr_of;  /* per node: its instruction, -1 for none */
    remat_plan_buf *bufs;
    int32_t n_bufs, cap_bufs;
    storage **hop_st;   /* per HOP node: storage of each output */
    uint8_t *scalar;    /* per node: a splat constant kept as one element */
    int32_t *root;      /* per node: the root of its fused group (fuse.h) */
    int32_t *gsize;     /* per node: members of the group it roots */
    int32_t *gnext;     /* per node: the next member of its group (see compile_fn) */
    int8_t *padadd;     /* per node: an add whose operand padadd[v] is a pad it absorbs, else -1 */
    uint8_t *absorbed;  /* per node: a pad absorbed by its add: no instruction, no storage */
    int32_t *place_in;  /* per node: the concatenate whose buffer it is written into, else -1 */
    size_t *place_off;  /* per node: bytes into that buffer */
    uint8_t *elided;    /* per node: a concatenate all of whose operands write into it */
} builder;

static void *prog_alloc(void *ctx, size_t bytes)
{
    remat_program *p = ctx;
    void *m = remat_arena_alloc(&p->mem, bytes ? bytes : 1);
    REMAT_ASSERT(m);
    return m;
}

/* Backend memory for a HOP instruction, freed with the program (hop.h). */
static void *prog_mem(void *ctx, size_t bytes)
{
    remat_program *p = ctx;
    if (p->n_dev_blocks == p->cap_dev_blocks) {
        int nc = p->cap_dev_blocks ? 2 * p->cap_dev_blocks : 8;
        void **q = realloc(p->dev_blocks, sizeof *q * (size_t)nc);
        if (!q)
            return NULL;
        p->dev_blocks = q, p->cap_dev_blocks = nc;
    }
    void *m = p->be->iface.mem_alloc(bytes ? bytes : 64);
    if (m)
        p->dev_blocks[p->n_dev_blocks++] = m;
    return m;
}

/* A slice that is one contiguous run of its operand (leading axes of size
 * one, then a range of one axis, then whole trailing axes), such as a row of
 * a (3, B) state or an element of a (3,) vector: its value is a view into
 * the operand's buffer, no copy. */
static int is_view_slice(const remat_node *n, const remat_node *in)
{
    if (n->op != REMAT_OP_SLICE)
        return 0;
    const remat_slice_params *p = n->p.slice;
    int r = in->shape.rank, j = 0;
    while (j < r && n->shape.dims[j] == 1)
        j++;
    if (j == r)
        return 1; /* a single element */
    if (p->stride[j] != 1)
        return 0;
    for (int i = j + 1; i < r; i++)
        if (p->start[i] != 0 || n->shape.dims[i] != in->shape.dims[i])
            return 0;
    return 1;
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

static int is_alias(const remat_fn *g, const remat_node *n)
{
    return n->op == REMAT_OP_RESHAPE || remat_op_is_identity((remat_op)n->op) || n->op == REMAT_OP_PROJ ||
           (n->op == REMAT_OP_SLICE && is_view_slice(n, &g->nodes[n->in[0]]));
}

static size_t node_bytes(const remat_node *n)
{
    return (size_t)remat_shape_numel(&n->shape) * remat_dtype_size((remat_dtype)n->dtype);
}

static void fill_constant(void *dst, const remat_node *n, int one)
{
    size_t cnt = one ? 1 : (size_t)remat_shape_numel(&n->shape);
    if (n->data) {
        memcpy(dst, n->data, node_bytes(n));
    } else if (n->dtype == REMAT_F64) {
        for (size_t i = 0; i < cnt; i++)
            ((double *)dst)[i] = n->p.fill;
    } else {
        for (size_t i = 0; i < cnt; i++)
            ((float *)dst)[i] = (float)n->p.fill;
    }
}

/* Splat constants (one value filled into a shape, as reverse mode makes for
 * relu's zeros) read only as an operand of binary elementwise ops or as
 * select's branches are stored as one element and read as a scalar: no
 * megabytes of zeros in the constant pool, no streaming them per op. */
static void find_scalar_constants(builder *b, const uint8_t *live)
{
    const remat_fn *g = b->g;
    for (int32_t v = 0; v < g->n_nodes; v++) {
        const remat_node *n = &g->nodes[v];
        b->scalar[v] = live[v] && n->op == REMAT_OP_CONSTANT && !n->data && remat_shape_numel(&n->shape) > 1;
    }
    for (int i = 0; i < g->n_outs; i++)
        b->scalar[g->outs[i]] = 0;
    for (int32_t v = 0; v < g->n_nodes; v++) {
        const remat_node *n = &g->nodes[v];
        if (!live[v])
            continue;
        for (int k = 0; k < n->nin; k++) {
            remat_val c = n->in[k];
            if (!b->scalar[c])
                continue;
            int ok = (remat_op_is_binary((remat_op)n->op) && !b->scalar[n->in[1 - k]]) ||
                     (n->op == REMAT_OP_SELECT && k > 0);
            if (!ok)
                b->scalar[c] = 0;
        }
    }
    /* a binary op whose other operand was just demoted is still fine; one
     * whose operands both stayed scalar cannot happen (checked above) */
}

static void build_exec_op(builder *b, remat_val v, remat_exec_op *op)
{
    const remat_node *n = remat_fn_node(b->g, v);
    remat_dtype *dts = prog_alloc(b->p, sizeof *dts * (size_t)(n->nin + 1));
    remat_shape *shs = prog_alloc(b->p, sizeof *shs * (size_t)(n->nin + 1));
    for (int k = 0; k < n->nin; k++) {
        dts[k] = (remat_dtype)b->g->nodes[n->in[k]].dtype;
        shs[k] = b->g->nodes[n->in[k]].shape;
    }
    memset(op, 0, sizeof *op);
    for (int k = 0; k < n->nin && k < 32; k++)
        if (b->scalar[n->in[k]])
            op->scalar_mask |= 1u << k;
    op->op = (remat_op)n->op;
    op->dtype = (remat_dtype)n->dtype;
    op->shape = n->shape;
    op->nin = n->nin;
    op->in_dtypes = dts;
    op->in_shapes = shs;
    op->aux = n->aux;
    remat_exec_op_params(n, op);
}

/* Points *slot at storage s (arena/consts now, caller memory via a patch). */
static void resolve(builder *b, const void **slot, const storage *s)
{
    remat_program *p = b->p;
    switch (s->kind) {
    case ST_ARENA:
        *slot = (char *)p->arena + b->bufs[s->index].offset + s->view;
        break;
    case ST_CONST:
        *slot = (char *)p->consts + s->offset + s->view;
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

static remat_status lower_hop(builder *b, remat_backend *be, remat_val v, const remat_exec_op *op, remat_instr *I)
{
    const remat_node *n = &b->g->nodes[v];
    remat_program *p = b->p;
    const remat_hop_rules *hr = n->p.hop.rules;
    int no = hr->num_outputs(n->p.hop.data);
    I->in = n->nin <= 4 ? I->in_inline : prog_alloc(p, sizeof *I->in * (size_t)n->nin);
    for (int k = 0; k < n->nin; k++)
        resolve(b, &I->in[k], &b->st[n->in[k]]);
    void **outs = prog_alloc(p, sizeof *outs * (size_t)(no + 1));
    for (int i = 0; i < no; i++) {
        if (b->hop_st[v][i].kind == ST_OUTPUT) { /* the caller's buffer, patched in at each run */
            resolve(b, (const void **)&outs[i], &b->hop_st[v][i]);
            continue;
        }
        const remat_plan_buf *pb = &b->bufs[b->hop_st[v][i].index];
        outs[i] = (char *)p->arena + pb->offset;
        size_t end = pb->offset + (pb->size + 63) / 64 * 64;
        if (end > I->arena_end)
            I->arena_end = end;
    }
    remat_hop_lowering L = {
        .be = be, .nin = n->nin, .in_dtypes = op->in_dtypes, .in_shapes = op->in_shapes,
        .nout = no, .outs = outs, .alloc = prog_alloc, .mem = prog_mem, .ctx = p, .counters = p->counters,
        .nested = p->counters != &p->own_counters,
    };
    p->op_counts[REMAT_OP_HOP]++;
    return hr->lower(n->p.hop.data, &L, I);
}

/* REMAT_NO_FUSION=1 (any value but "" or "0") at compile: every op its own
 * instruction, for comparing the bits of fused and unfused programs */
static int fusion_disabled(void)
{
    const char *e = getenv("REMAT_NO_FUSION");
    return e && *e && strcmp(e, "0") != 0;
}

/* One instruction for the group rooted at v: its members' micro-ops, its
 * external inputs, the root's output. The members count as the primitive
 * ops they are (op_counts, recomputed ops, n_fused for the totals). */
static remat_status lower_fused(builder *b, remat_backend *be, remat_val v, remat_instr *I)
{
    remat_program *p = b->p;
    int32_t members[REMAT_FUSED_MAX_UOPS];
    int nm = 0;
    for (int32_t m = b->gnext[v]; m != v; m = b->gnext[m])
        members[nm++] = m;
    members[nm++] = v;
    REMAT_ASSERT(nm == b->gsize[v]);
    remat_fused_uop uops[REMAT_FUSED_MAX_UOPS];
    remat_val ext[3 * REMAT_FUSED_MAX_UOPS];
    int n_ext = 0;
    remat_fused_op F;
    remat_fuse_describe(b->g, members, nm, b->scalar, &F, uops, ext, &n_ext);
    I->in = n_ext <= 4 ? I->in_inline : prog_alloc(p, sizeof *I->in * (size_t)n_ext);
    for (int k = 0; k < n_ext; k++)
        resolve(b, &I->in[k], &b->st[ext[k]]);
    resolve(b, (const void **)&I->out, &b->st[v]);
    for (int k = 0; k < nm; k++) {
        const remat_node *n = &b->g->nodes[members[k]];
        p->op_counts[n->op]++;
        if (n->flags & REMAT_NODE_RECOMPUTE)
            p->recompute_instrs++;
    }
    p->n_fused += nm - 1;
    return be->iface.lower_fused(&F, I, prog_alloc, p);
}

/* REMAT_NO_INPLACE=1 (any value but "" or "0") at compile: no in-place
 * concatenate, no add of a pad absorbed into one instruction, for comparing
 * the bits of the two programs */
static int inplace_disabled(void)
{
    const char *e = getenv("REMAT_NO_INPLACE");
    return e && *e && strcmp(e, "0") != 0;
}

/* add(x, pad(g)), either order, whose pad (zero interior, g one contiguous
 * block of the output) is read by that add alone: one backend instruction writes x + 0 outside g's region and x + g
 * inside, the bits of the pair, without the zero-filled padded array and
 * its pass (the VJP of a slice, added into an accumulated cotangent). */
static void find_add_pads(builder *b, const uint8_t *live)
{
    const remat_fn *g = b->g;
    int32_t nn = g->n_nodes;
    int32_t *readers = calloc((size_t)nn + 1, sizeof *readers);
    REMAT_ASSERT(readers);
    for (int32_t v = 0; v < nn; v++)
        if (live[v])
            for (int k = 0; k < g->nodes[v].nin; k++)
                readers[g->nodes[v].in[k]]++;
    for (int i = 0; i < g->n_outs; i++)
        readers[g->outs[i]]++;
    for (int32_t v = 0; v < nn; v++) {
        const remat_node *n = &g->nodes[v];
        if (!live[v] || n->op != REMAT_OP_ADD || n->nin != 2 || (n->dtype != REMAT_F32 && n->dtype != REMAT_F64))
            continue;
        for (int k = 1; k >= 0; k--) {
            remat_val q = n->in[k], x = n->in[1 - k];
            const remat_node *pn = &g->nodes[q];
            if (pn->op != REMAT_OP_PAD || readers[q] != 1 || b->absorbed[q] || x == q || b->scalar[x] ||
                pn->dtype != n->dtype || !remat_shape_equal(&pn->shape, &n->shape) ||
                !remat_shape_equal(&g->nodes[x].shape, &n->shape))
                continue;
            /* g must land as one contiguous run of the output (the slices
             * that are views): a column of a (B,3) array would be B runs of
             * one element, slower in one pass than pad and a fused add */
            const remat_shape *gs = &g->nodes[pn->in[0]].shape;
            int ok = 1, r = pn->shape.rank, j = 0;
            for (int i = 0; i < r; i++)
                ok = ok && pn->p.pad->interior[i] == 0 && pn->p.pad->low[i] >= 0 && pn->p.pad->high[i] >= 0;
            while (j < r && gs->dims[j] == 1)
                j++;
            for (int i = j + 1; i < r; i++)
                ok = ok && pn->p.pad->low[i] == 0 && gs->dims[i] == pn->shape.dims[i];
            if (!ok)
                continue;
            b->padadd[v] = (int8_t)k;
            b->absorbed[q] = 1;
            break;
        }
    }
    free(readers);
}

/* A concatenate along an axis whose leading axes are all 1 (rows of a (3,B)
 * array, elements of a (3,) vector) is its operands laid end to end. When
 * each operand (through reshapes and names) is the output of an instruction
 * of its own, that instruction writes straight into its slot of the
 * concatenate's buffer and the concatenate needs no instruction: no copy of
 * the (3,B) derivative a right-hand side assembles. Operands that are
 * arguments, constants, views, outputs, scan results or already placed
 * elsewhere keep the copy (the whole concatenate stays). */
static void find_inplace_concats(builder *b, const uint8_t *live, const int32_t *bind)
{
    const remat_fn *g = b->g;
    for (int32_t c = 0; c < g->n_nodes; c++) {
        const remat_node *n = &g->nodes[c];
        if (!live[c] || n->op != REMAT_OP_CONCATENATE || bind[c] >= 0 || b->root[c] != c)
            continue;
        int axis = (int)n->p.axis, ok = 1;
        for (int i = 0; i < axis; i++)
            ok = ok && n->shape.dims[i] == 1;
        remat_val us[64];
        if (!ok || n->nin > 64)
            continue;
        for (int k = 0; k < n->nin && ok; k++) {
            remat_val u = n->in[k];
            while (g->nodes[u].op == REMAT_OP_RESHAPE || remat_op_is_identity((remat_op)g->nodes[u].op))
                u = g->nodes[u].in[0];
            const remat_node *un = &g->nodes[u];
            ok = live[u] && un->op != REMAT_OP_ARG && un->op != REMAT_OP_CONSTANT && un->op != REMAT_OP_HOP &&
                 un->op != REMAT_OP_PROJ && un->op != REMAT_OP_CHECKPOINT && !is_alias(g, un) && bind[u] < 0 &&
                 b->place_in[u] < 0 && !b->elided[u] && !b->absorbed[u] && b->root[u] == u && !b->scalar[u];
            for (int j = 0; j < k && ok; j++)
                ok = us[j] != u;
            us[k] = u;
        }
        if (!ok)
            continue;
        size_t off = 0;
        for (int k = 0; k < n->nin; k++) {
            b->place_in[us[k]] = c;
            b->place_off[us[k]] = off;
            off += node_bytes(&g->nodes[n->in[k]]);
        }
        b->elided[c] = 1;
    }
}

/* add(x, pad(g)) as one instruction (find_add_pads); counted as the two ops */
static remat_status lower_add_pad(builder *b, remat_backend *be, remat_val v, remat_instr *I)
{
    remat_program *p = b->p;
    const remat_node *n = &b->g->nodes[v];
    int k = b->padadd[v];
    const remat_node *pn = &b->g->nodes[n->in[k]];
    remat_val x = n->in[1 - k], gv = pn->in[0];
    I->in = I->in_inline;
    resolve(b, &I->in[0], &b->st[x]);
    resolve(b, &I->in[1], &b->st[gv]);
    resolve(b, (const void **)&I->out, &b->st[v]);
    if (b->st[v].kind == ST_ARENA) {
        const remat_plan_buf *pb = &b->bufs[b->st[v].index];
        I->arena_end = pb->offset + (pb->size + 63) / 64 * 64;
    }
    p->op_counts[REMAT_OP_ADD]++;
    p->op_counts[REMAT_OP_PAD]++;
    p->n_fused++;
    p->recompute_instrs += !!(n->flags & REMAT_NODE_RECOMPUTE) + !!(pn->flags & REMAT_NODE_RECOMPUTE);
    return be->iface.lower_add_pad((remat_dtype)n->dtype, &n->shape, &b->g->nodes[gv].shape, pn->p.pad, k == 0, I,
                                   prog_alloc, p);
}

/* The caller output that HOP v's result i is written into, or -1: the first
 * output bound (directly, through reshapes and names) to a projection of it;
 * any later one bound to the same result becomes a copy. */
static int hop_output_of(const remat_fn *g, int32_t v, int i, const int32_t *bind, uint8_t *direct, int *n_copies)
{
    int found = -1;
    for (int j = 0; j < g->n_outs; j++) {
        remat_val u = g->outs[j];
        while (g->nodes[u].op == REMAT_OP_RESHAPE || remat_op_is_identity((remat_op)g->nodes[u].op))
            u = g->nodes[u].in[0];
        const remat_node *n = &g->nodes[u];
        if (!direct[j] || n->op != REMAT_OP_PROJ || n->in[0] != v || n->p.output != i || bind[u] != j)
            continue;
        if (found < 0) {
            found = j;
        } else {
            direct[j] = 0;
            (*n_copies)++;
        }
    }
    return found;
}

static int32_t add_buf(builder *b, size_t size, int32_t first)
{
    if (b->n_bufs == b->cap_bufs) {
        b->cap_bufs = b->cap_bufs ? 2 * b->cap_bufs : 64;
        b->bufs = realloc(b->bufs, sizeof *b->bufs * (size_t)b->cap_bufs);
        REMAT_ASSERT(b->bufs);
    }
    b->bufs[b->n_bufs] = (remat_plan_buf){.size = size, .first = first, .last = first};
    return b->n_bufs++;
}

static remat_status compile_fn(const remat_fn *g, remat_backend *be, remat_program *p)
{
    int32_t nn = g->n_nodes;
    builder b = {.g = g, .p = p};
    uint8_t *live = remat_fn_live_mask(g);
    int32_t *bind = malloc(sizeof *bind * ((size_t)nn + 1));
    b.st = calloc((size_t)nn + 1, sizeof *b.st);
    b.instr_of = malloc(sizeof *b.instr_of * ((size_t)nn + 1));
    b.hop_st = calloc((size_t)nn + 1, sizeof *b.hop_st);
    b.scalar = calloc((size_t)nn + 1, 1);
    b.root = malloc(sizeof *b.root * ((size_t)nn + 1));
    b.gsize = malloc(sizeof *b.gsize * ((size_t)nn + 1));
    b.gnext = malloc(sizeof *b.gnext * ((size_t)nn + 1));
    b.padadd = malloc((size_t)nn + 1);
    b.absorbed = calloc((size_t)nn + 1, 1);
    b.place_in = malloc(sizeof *b.place_in * ((size_t)nn + 1));
    b.place_off = calloc((size_t)nn + 1, sizeof *b.place_off);
    b.elided = calloc((size_t)nn + 1, 1);
    int32_t *concat_buf = malloc(sizeof *concat_buf * ((size_t)nn + 1));
    REMAT_ASSERT(live && bind && b.st && b.instr_of && b.hop_st && b.scalar && b.root && b.gsize && b.gnext);
    REMAT_ASSERT(b.padadd && b.absorbed && b.place_in && b.place_off && b.elided && concat_buf);
    for (int32_t v = 0; v < nn; v++)
        b.padadd[v] = -1, b.place_in[v] = -1, concat_buf[v] = -1;
    remat_status status = REMAT_OK;

    for (int32_t v = 0; v < nn; v++)
        bind[v] = -1, b.instr_of[v] = -1;
    /* an output computed by an op is written straight into the caller's buffer,
     * and so is the op under an output that is a reshape/name of it (the alias
     * then resolves to the output too): a scan body's residuals are mostly
     * such aliases, and each copy would be one more pass over the step's tape */
    int n_copies = 0;
    uint8_t *direct = calloc((size_t)g->n_outs + 1, 1);
    REMAT_ASSERT(direct);
    for (int j = 0; j < g->n_outs; j++) {
        remat_val v = g->outs[j];
        while (g->nodes[v].op == REMAT_OP_RESHAPE || remat_op_is_identity((remat_op)g->nodes[v].op))
            v = g->nodes[v].in[0];
        const remat_node *n = &g->nodes[v];
        /* a HOP's result (a scan's stacked ys, its parameter gradients) too:
         * the HOP writes it into the caller's buffer (see the HOP storage below) */
        int hop_result = n->op == REMAT_OP_PROJ && g->nodes[n->in[0]].op == REMAT_OP_HOP;
        if (n->op != REMAT_OP_ARG && n->op != REMAT_OP_CONSTANT && (!is_alias(g, n) || hop_result) &&
            n->op != REMAT_OP_HOP && bind[v] < 0)
            bind[v] = j, direct[j] = 1;
        else
            n_copies++;
    }

    find_scalar_constants(&b, live);
    int inplace = !inplace_disabled();
    if (inplace && be->iface.lower_add_pad)
        find_add_pads(&b, live);
    if (be->iface.lower_fused && !fusion_disabled()) {
        /* an add that absorbs a pad is its own instruction */
        uint8_t *exclude = calloc((size_t)nn + 1, 1);
        REMAT_ASSERT(exclude);
        for (int32_t v = 0; v < nn; v++)
            exclude[v] = b.padadd[v] >= 0;
        remat_fuse_groups(g, live, b.scalar, exclude, b.root, b.gsize);
        free(exclude);
    } else {
        for (int32_t v = 0; v < nn; v++)
            b.root[v] = v, b.gsize[v] = 1;
    }
    /* each group's members in node order, the root last: gnext[R] is the
     * first member of R's group, gnext[v] the member after v */
    for (int32_t v = 0; v < nn; v++)
        b.gnext[v] = v;
    for (int32_t v = nn - 1; v >= 0; v--)
        if (b.root[v] != v) {
            int32_t R = b.root[v];
            b.gnext[v] = b.gnext[R];
            b.gnext[R] = v;
        }
    if (inplace)
        find_inplace_concats(&b, live, bind);

    /* storage and instruction numbering */
    size_t const_bytes = 0;
    int32_t n_instr = 0;
    for (int32_t v = 0; v < nn; v++) {
        const remat_node *n = &g->nodes[v];
        if (!live[v])
            continue;
        if (n->op == REMAT_OP_ARG) {
            b.st[v] = (storage){.kind = ST_INPUT, .index = (int32_t)n->p.arg_pos, .offset = 0};
        } else if (n->op == REMAT_OP_CONSTANT) {
            b.st[v] = (storage){.kind = ST_CONST, .index = 0, .offset = const_bytes};
            const_bytes += ((b.scalar[v] ? remat_dtype_size((remat_dtype)n->dtype) : node_bytes(n)) + 63) / 64 * 64;
        } else if (n->op == REMAT_OP_PROJ) {
            REMAT_ASSERT(b.hop_st[n->in[0]]);
            b.st[v] = b.hop_st[n->in[0]][n->p.output];
        } else if (is_alias(g, n)) {
            b.st[v] = b.st[n->in[0]];
            if (n->op == REMAT_OP_SLICE)
                b.st[v].view += slice_view_offset(&g->nodes[n->in[0]], n);
        } else if (n->op == REMAT_OP_HOP) {
            b.instr_of[v] = n_instr++;
            const remat_hop_rules *hr = n->p.hop.rules;
            int no = hr->num_outputs(n->p.hop.data);
            b.hop_st[v] = calloc((size_t)no + 1, sizeof *b.hop_st[v]);
            REMAT_ASSERT(b.hop_st[v]);
            for (int i = 0; i < no; i++) {
                remat_dtype dt;
                remat_shape sh;
                hr->output_desc(n->p.hop.data, i, &dt, &sh);
                size_t bytes = (size_t)remat_shape_numel(&sh) * remat_dtype_size(dt);
                int out = hop_output_of(g, v, i, bind, direct, &n_copies);
                b.hop_st[v][i] = out >= 0 ? (storage){.kind = ST_OUTPUT, .index = out}
                                          : (storage){.kind = ST_ARENA, .index = add_buf(&b, bytes, b.instr_of[v])};
            }
        } else if (n->op == REMAT_OP_CHECKPOINT) {
            status = remat_error(REMAT_ERR_UNSUPPORTED, "compile: %s node at %s:%d cannot be compiled here",
                                 remat_op_name((remat_op)n->op), n->loc.file, n->loc.line);
            goto done;
        } else if (b.root[v] != v || b.absorbed[v]) {
            continue; /* a fused group's intermediate, an absorbed pad: no instruction, no storage */
        } else if (b.elided[v]) {
            /* its operands wrote their slots: the op ran inside their instructions */
            REMAT_ASSERT(concat_buf[v] >= 0);
            b.st[v] = (storage){.kind = ST_ARENA, .index = concat_buf[v]};
            p->op_counts[n->op]++;
            p->n_fused++;
            if (n->flags & REMAT_NODE_RECOMPUTE)
                p->recompute_instrs++;
        } else {
            b.instr_of[v] = n_instr++;
            if (b.place_in[v] >= 0) {
                int32_t c = b.place_in[v];
                if (concat_buf[c] < 0) /* live from its first operand's write */
                    concat_buf[c] = add_buf(&b, node_bytes(&g->nodes[c]), b.instr_of[v]);
                b.st[v] = (storage){.kind = ST_ARENA, .index = concat_buf[c], .view = b.place_off[v]};
            } else if (bind[v] >= 0)
                b.st[v] = (storage){.kind = ST_OUTPUT, .index = bind[v], .offset = 0};
            else
                b.st[v] = (storage){.kind = ST_ARENA, .index = add_buf(&b, node_bytes(n), b.instr_of[v])};
        }
    }
    int32_t total = n_instr + n_copies;
    p->instrs = calloc((size_t)(total ? total : 1), sizeof *p->instrs);
    /* at most: every input of every instruction plus its output */
    size_t max_patches = (size_t)total * 2;
    for (int32_t v = 0; v < nn; v++)
        if (b.instr_of[v] >= 0 || b.root[v] != v)
            max_patches += (size_t)g->nodes[v].nin + (b.hop_st[v] ? (size_t)g->nodes[v].p.hop.rules->num_outputs(
                                                                         g->nodes[v].p.hop.data)
                                                                   : 0);
    p->patches = calloc(max_patches + 1, sizeof *p->patches);
    REMAT_ASSERT(p->instrs && p->patches);
    p->n_instrs = total;
    p->n_copies = n_copies;

    /* lifetimes: the last reader of each arena buffer (aliases read their
     * root; a fused group's members read at the group's instruction) */
    for (int32_t v = 0; v < nn; v++) {
        int32_t at = b.instr_of[v] >= 0 ? b.instr_of[v] : b.root[v] != v ? b.instr_of[b.root[v]] : -1;
        if (at < 0)
            continue;
        const remat_node *n = &g->nodes[v];
        for (int k = 0; k < n->nin; k++) {
            remat_val a = n->in[k];
            if (k == b.padadd[v]) /* the absorbed pad: the add reads its operand */
                a = g->nodes[a].in[0];
            const storage *s = &b.st[a];
            if (s->kind == ST_ARENA && b.bufs[s->index].last < at)
                b.bufs[s->index].last = at;
        }
    }
    int32_t ci = n_instr;
    for (int j = 0; j < g->n_outs; j++) {
        remat_val v = g->outs[j];
        if (direct[j])
            continue;
        const storage *s = &b.st[v];
        if (s->kind == ST_ARENA && b.bufs[s->index].last < ci)
            b.bufs[s->index].last = ci;
        ci++;
    }
    /* scratch buffers live for their one instruction */
    int32_t *scratch_buf = malloc(sizeof *scratch_buf * ((size_t)nn + 1));
    REMAT_ASSERT(scratch_buf);
    remat_exec_op *ops = calloc((size_t)nn + 1, sizeof *ops);
    REMAT_ASSERT(ops);
    for (int32_t v = 0; v < nn; v++) {
        scratch_buf[v] = -1;
        if (b.instr_of[v] < 0)
            continue;
        build_exec_op(&b, v, &ops[v]);
        if (g->nodes[v].op == REMAT_OP_HOP)
            continue;
        if (!be->iface.supports_op(&ops[v])) {
            const remat_node *n = &g->nodes[v];
            status = remat_error(REMAT_ERR_UNSUPPORTED, "compile: backend '%s' does not support %s at %s:%d",
                                 be->iface.name, remat_op_name((remat_op)n->op), n->loc.file, n->loc.line);
            free(scratch_buf);
            free(ops);
            goto done;
        }
        size_t sb = be->iface.scratch_bytes(&ops[v]);
        if (sb > 0)
            scratch_buf[v] = add_buf(&b, sb, b.instr_of[v]);
    }

    const size_t align = 64;
    p->arena_bytes = remat_plan_offsets(b.bufs, b.n_bufs, align);
    p->const_bytes = const_bytes;
    p->arena = be->iface.mem_alloc(p->arena_bytes);
    p->consts = be->iface.mem_alloc(const_bytes);
    if (!p->arena || !p->consts) {
        status = remat_error(REMAT_ERR_NOMEM, "compile: cannot allocate an arena of %zu bytes", p->arena_bytes);
        free(scratch_buf);
        free(ops);
        goto done;
    }
    for (int32_t v = 0; v < nn; v++)
        if (live[v] && g->nodes[v].op == REMAT_OP_CONSTANT)
            fill_constant((char *)p->consts + b.st[v].offset, &g->nodes[v], b.scalar[v]);

    /* lower */
    for (int32_t v = 0; v < nn && status == REMAT_OK; v++) {
        if (b.instr_of[v] < 0)
            continue;
        const remat_node *n = &g->nodes[v];
        remat_instr *I = &p->instrs[b.instr_of[v]];
        if (n->op == REMAT_OP_HOP) {
            status = lower_hop(&b, be, v, &ops[v], I);
            continue;
        }
        I->n = (size_t)remat_shape_numel(&n->shape);
        if (b.gsize[v] > 1) {
            status = lower_fused(&b, be, v, I);
            if (b.st[v].kind == ST_ARENA) {
                const remat_plan_buf *pb = &b.bufs[b.st[v].index];
                I->arena_end = pb->offset + (pb->size + align - 1) / align * align;
            }
            continue;
        }
        if (b.padadd[v] >= 0) {
            status = lower_add_pad(&b, be, v, I);
            continue;
        }
        I->in = n->nin <= 4 ? I->in_inline : prog_alloc(p, sizeof *I->in * (size_t)n->nin);
        for (int k = 0; k < n->nin; k++)
            resolve(&b, &I->in[k], &b.st[n->in[k]]);
        resolve(&b, (const void **)&I->out, &b.st[v]);
        if (b.st[v].kind == ST_ARENA) {
            const remat_plan_buf *pb = &b.bufs[b.st[v].index];
            I->arena_end = pb->offset + (pb->size + align - 1) / align * align;
        }
        if (scratch_buf[v] >= 0) {
            const remat_plan_buf *pb = &b.bufs[scratch_buf[v]];
            I->scratch = (char *)p->arena + pb->offset;
            size_t end = pb->offset + (pb->size + align - 1) / align * align;
            if (end > I->arena_end)
                I->arena_end = end;
        }
        status = be->iface.lower(&ops[v], I, prog_alloc, p);
        p->op_counts[n->op]++;
        if (n->flags & REMAT_NODE_RECOMPUTE)
            p->recompute_instrs++;
    }
    free(scratch_buf);
    free(ops);
    if (status != REMAT_OK)
        goto done;

    /* trailing copies into outputs that are arguments, constants, aliases or repeats */
    ci = n_instr;
    for (int j = 0; j < g->n_outs; j++) {
        remat_val v = g->outs[j];
        if (direct[j])
            continue;
        remat_instr *I = &p->instrs[ci++];
        I->in = I->in_inline;
        resolve(&b, &I->in[0], &b.st[v]);
        storage out = {.kind = ST_OUTPUT, .index = j};
        resolve(&b, (const void **)&I->out, &out);
        I->n = (size_t)remat_shape_numel(&g->nodes[v].shape);
        remat_exec_op cp = {.op = REMAT_OP_RESHAPE, .dtype = (remat_dtype)g->nodes[v].dtype,
                            .shape = g->nodes[v].shape, .nin = 1};
        status = be->iface.lower(&cp, I, prog_alloc, p);
        if (status != REMAT_OK)
            goto done;
    }

    /* the patches of inputs first, then those of outputs (stable): a loop body
     * re-patches every step, and this way neither loop tests a patch's kind */
    remat_patch *sorted = malloc(sizeof *sorted * ((size_t)p->n_patches + 1));
    REMAT_ASSERT(sorted);
    int32_t n_sorted = 0;
    for (int out = 0; out < 2; out++) {
        for (int32_t i = 0; i < p->n_patches; i++)
            if (p->patches[i].is_output == out)
                sorted[n_sorted++] = p->patches[i];
        if (out == 0)
            p->n_in_patches = n_sorted;
    }
    memcpy(p->patches, sorted, sizeof *sorted * (size_t)p->n_patches);
    free(sorted);

    /* residual bytes: forward values read by live backward nodes */
    uint8_t *is_res = malloc((size_t)nn + 1);
    REMAT_ASSERT(is_res);
    remat_fn_residual_mask(g, live, is_res);
    for (int32_t v = 0; v < nn; v++)
        if (is_res[v])
            p->residual_bytes += node_bytes(&g->nodes[v]);
    free(is_res);

done:
    for (int32_t v = 0; v < nn; v++)
        free(b.hop_st[v]);
    free(b.hop_st);
    free(b.scalar);
    free(b.root);
    free(b.gsize);
    free(b.gnext);
    free(b.padadd);
    free(b.absorbed);
    free(b.place_in);
    free(b.place_off);
    free(b.elided);
    free(concat_buf);
    free(live);
    free(direct);
    free(bind);
    free(b.st);
    free(b.instr_of);
    free(b.bufs);
    return status;
}

static int has_calls(const remat_fn *f)
{
    for (int32_t v = 0; v < f->n_nodes; v++)
        if (f->nodes[v].op == REMAT_OP_CHECKPOINT)
            return 1;
    return 0;
}

static remat_status compile_common(const remat_fn *fn, remat_backend *be, remat_exec_counters *counters,
                                   remat_program **out)
{
    if (!out)
        return remat_error(REMAT_ERR_NULL, "compile: output pointer is NULL");
    *out = NULL;
    if (!fn || !be)
        return remat_error(REMAT_ERR_NULL, "compile: %s is NULL", fn ? "backend" : "function");
    if (fn->status != REMAT_OK)
        return remat_error(fn->status, "compile of '%s', which has a build error: %s", fn->name, remat_fn_error(fn));
    if (fn->n_outs == 0)
        return remat_error(REMAT_ERR_ARG, "compile of '%s': it has no outputs", fn->name);
    remat_fn *inl = NULL;
    if (has_calls(fn) && !(inl = remat_fn_inline_calls(fn)))
        return REMAT_ERR_NOMEM; /* remat_last_error() says so */
    const remat_fn *g = inl ? inl : fn;
    remat_program *p = calloc(1, sizeof *p);
    REMAT_ASSERT(p);
    p->be = be;
    p->counters = counters ? counters : &p->own_counters;
    p->n_in = g->n_args;
    p->n_out = g->n_outs;
    p->in_desc = prog_alloc(p, sizeof *p->in_desc * (size_t)(g->n_args + 1));
    p->in_names = prog_alloc(p, sizeof *p->in_names * (size_t)(g->n_args + 1));
    p->out_desc = prog_alloc(p, sizeof *p->out_desc * (size_t)(g->n_outs + 1));
    for (int i = 0; i < g->n_args; i++) {
        const remat_node *a = &g->nodes[g->args[i]];
        p->in_desc[i] = (remat_tensor){.dtype = (remat_dtype)a->dtype, .shape = a->shape};
        char *nm = prog_alloc(p, strlen(a->name) + 1);
        strcpy(nm, a->name);
        p->in_names[i] = nm;
    }
    for (int i = 0; i < g->n_outs; i++) {
        const remat_node *o = &g->nodes[g->outs[i]];
        p->out_desc[i] = (remat_tensor){.dtype = (remat_dtype)o->dtype, .shape = o->shape};
    }
    remat_status st = compile_fn(g, be, p);
    remat_fn_free(inl);
    if (st != REMAT_OK) {
        remat_program_free(p);
        return st;
    }
    *out = p;
    return REMAT_OK;
}

remat_status remat_compile(const remat_fn *fn, remat_backend *be, remat_program **out)
{
    return compile_common(fn, be, NULL, out);
}

remat_status remat_compile_sub(const remat_fn *fn, remat_backend *be, remat_exec_counters *counters,
                               remat_program **out)
{
    remat_status st = compile_common(fn, be, counters, out);
    if (st != REMAT_OK)
        return st;
    if (counters->n_subs == counters->cap_subs) {
        counters->cap_subs = counters->cap_subs ? 2 * counters->cap_subs : 8;
        counters->subs = realloc(counters->subs, sizeof *counters->subs * (size_t)counters->cap_subs);
        REMAT_ASSERT(counters->subs);
    }
    counters->subs[counters->n_subs++] = *out;
    return REMAT_OK;
}

remat_status remat_hop_stats_add(remat_exec_counters *counters, const remat_hop_stats *hook)
{
    if (counters->n_hooks == counters->cap_hooks) {
        int nc = counters->cap_hooks ? 2 * counters->cap_hooks : 8;
        remat_hop_stats *q = realloc(counters->hooks, sizeof *q * (size_t)nc);
        if (!q)
            return remat_error(REMAT_ERR_NOMEM, "compile: cannot record a loop's statistics");
        counters->hooks = q, counters->cap_hooks = nc;
    }
    counters->hooks[counters->n_hooks++] = *hook;
    return REMAT_OK;
}

void remat_program_free(remat_program *p)
{
    if (!p)
        return;
    for (int i = 0; i < p->own_counters.n_subs; i++)
        remat_program_free(p->own_counters.subs[i]);
    free(p->own_counters.subs);
    free(p->own_counters.hooks);
    for (int i = 0; i < p->n_dev_blocks; i++)
        p->be->iface.mem_free(p->dev_blocks[i]);
    free(p->dev_blocks);
    if (p->arena)
        p->be->iface.mem_free(p->arena);
    if (p->consts)
        p->be->iface.mem_free(p->consts);
    free(p->instrs);
    free(p->patches);
    remat_arena_clear(&p->mem);
    free(p);
}

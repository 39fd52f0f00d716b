/*
 * fuse.c — elementwise fusion: which ops run as one blocked instruction.
 *
 * A chain such as an Euler update, y + h * (k1 * a - k2 * b), is a handful of
 * elementwise ops over a (B,) row; unfused, every op streams its operands and
 * result through memory. Fused, the backend evaluates the chain block by
 * block with the intermediates in registers (cpu/fused.c), and only the
 * group's inputs and its one output touch memory.
 */
#include <stdlib.h>

#include "core/alloc.h"
#include "core/assert.h"
#include "exec/exec_op.h"
#include "exec/fuse.h"
#include "exec/passes.h"

/* Below this many elements a fused instruction saves no memory traffic
 * worth its per-micro-op dispatch (ODE right-hand sides of 1..3 elements),
 * and those ops keep their per-element adapters (not measured faster fused). */
enum { FUSE_MIN_ELEMENTS = 16 };

static int fusable(const remat_graph_view *g, const remat_cnode *N, remat_val v)
{
    const remat_node *n = &g->nodes[v];
    if (!remat_op_is_elementwise((remat_op)n->op) || (n->dtype != REMAT_F32 && n->dtype != REMAT_F64) || n->nin > 3 ||
        remat_shape_numel(&n->shape) < FUSE_MIN_ELEMENTS)
        return 0;
    for (int k = 0; k < n->nin; k++) {
        const remat_node *a = &g->nodes[n->in[k]];
        if (a->dtype != n->dtype || (!N[n->in[k]].scalar && !remat_shape_equal(&a->shape, &n->shape)))
            return 0;
    }
    return 1;
}

/* A broadcast_in_dim a group may read in place: its operand's non-1 dims
 * are the output's trailing non-1 dims (a row, such as a bias: element i
 * reads operand element i % numel(operand)) or its leading ones (a column:
 * element i reads i / (n / numel(operand))). Returns the grid width (lanes,
 * remat_fused_op) it needs, *col set for a column; 0 when it is neither. */
static int64_t bcast_lanes(const remat_graph_view *g, const remat_cnode *N, remat_val v, bool *col)
{
    const remat_node *n = &g->nodes[v];
    if (n->op != REMAT_OP_BROADCAST || (n->dtype != REMAT_F32 && n->dtype != REMAT_F64) ||
        remat_shape_numel(&n->shape) < FUSE_MIN_ELEMENTS || N[n->in[0]].scalar)
        return 0;
    const remat_node *a = &g->nodes[n->in[0]];
    if (a->dtype != n->dtype)
        return 0;
    uint32_t covered = 0;
    for (int i = 0; i < a->shape.rank; i++)
        if (a->shape.dims[i] != 1)
            covered |= 1u << n->p.bdims[i];
    int first = -1, prev = -1, changes = 0;
    for (int k = 0; k < n->shape.rank; k++) {
        if (n->shape.dims[k] == 1)
            continue;
        const int cov = (int)((covered >> k) & 1u);
        if (first < 0)
            first = cov;
        else if (cov != prev)
            changes++;
        prev = cov;
    }
    if (changes != 1) /* all or none of the output, or interleaved */
        return 0;
    const int64_t mid = remat_shape_numel(&a->shape), total = remat_shape_numel(&n->shape);
    *col = first == 1;
    return first == 1 ? total / mid : mid;
}

/* A reduction a group may end in (remat_fused_op.red): reduce_sum or
 * reduce_max of f32/f64 over trailing axes (size-1 axes aside) of an operand
 * of at least FUSE_MIN_ELEMENTS, the layout in which output o reduces
 * operand elements [o * R, (o + 1) * R) in the kernel's ascending order.
 * Returns R (at least 2), 0 when it is no such reduction. */
static int64_t red_len(const remat_graph_view *g, const remat_cnode *N, remat_val v)
{
    const remat_node *n = &g->nodes[v];
    if ((n->op != REMAT_OP_SUM && n->op != REMAT_OP_REDUCE_MAX) || (n->dtype != REMAT_F32 && n->dtype != REMAT_F64) ||
        n->nin != 1 || N[n->in[0]].scalar)
        return 0;
    const remat_node *a = &g->nodes[n->in[0]];
    if (a->dtype != n->dtype || remat_shape_numel(&a->shape) < FUSE_MIN_ELEMENTS)
        return 0;
    int64_t R = 1;
    bool reducing = false;
    for (int k = 0; k < a->shape.rank; k++) {
        if (a->shape.dims[k] == 1)
            continue;
        if ((n->p.axes_mask >> k) & 1u) {
            reducing = true;
            R *= a->shape.dims[k];
        } else if (reducing) {
            return 0; /* a kept axis after a reduced one */
        }
    }
    return R >= 2 ? R : 0;
}

/* Each group's members in node order, the root last: gnext[R] is the first
 * member of R's group, gnext[v] the member after v. */
static void link_members(const remat_compile_ctx *c, remat_cnode *N)
{
    for (int32_t i = c->n_order - 1; i >= 0; i--) {
        int32_t v = c->order[i];
        if (N[v].root != v) {
            int32_t R = N[v].root;
            N[v].gnext = N[R].gnext;
            N[R].gnext = v;
        }
    }
}

/* Every record starts as a group of one (root = self, gsize = 1, gnext =
 * self). An add that absorbs a pad (add_pad.c) is its own instruction. */
remat_status rmi_pass_fuse(remat_compile_ctx *c)
{
    const remat_graph_view *g = c->g;
    remat_cnode *N = c->N;
    int32_t nn = g->n_nodes;
    /* REMAT_NO_BCAST_FUSION=1: every broadcast materialised, as before this
     * rewrite (for measuring what it saves: docs/DESIGN.md, "Compiled fusion") */
    const char *nb = getenv("REMAT_NO_BCAST_FUSION");
    const bool no_bcast = nb && nb[0] == '1';
    /* REMAT_NO_REDUCE_FUSION=1: every reduction its own instruction and its
     * operand materialised, as before groups could end in one (measuring) */
    const char *nr = getenv("REMAT_NO_REDUCE_FUSION");
    const bool no_red = nr && nr[0] == '1';
    /* readers of each node (CSR), outputs marked as a reader -1 */
    int32_t *start = rmi_calloc((size_t)nn + 2, sizeof *start);
    uint8_t *ok = rmi_calloc((size_t)nn + 1, 1);
    /* bl[v]: a broadcast's grid width (bcast_lanes); gl[R]: group R's, once
     * a broadcast joined it (every broadcast of a group shares one grid) */
    int64_t *bl = rmi_calloc((size_t)nn + 1, sizeof *bl), *gl = rmi_calloc((size_t)nn + 1, sizeof *gl);
    int32_t *gin = rmi_calloc((size_t)nn + 1, sizeof *gin); /* operand slots of group R's members */
    /* rl[v]: a reduction's red_len when the backend fuses reductions: it
     * may root a group (its operand's chain), never join one */
    int64_t *rl = rmi_calloc((size_t)nn + 1, sizeof *rl);
    if (!start || !ok || !bl || !gl || !gin || !rl) {
        rmi_free(rl);
        rmi_free(gin);
        rmi_free(start);
        rmi_free(ok);
        rmi_free(bl);
        rmi_free(gl);
        return rmi_compile_nomem("fusion's reader lists");
    }
    for (int32_t i = 0; i < c->n_order; i++) {
        int32_t v = c->order[i];
        bool col;
        ok[v] = N[v].padadd < 0 && fusable(g, N, v);
        bl[v] = N[v].padadd < 0 && !no_bcast ? bcast_lanes(g, N, v, &col) : 0;
        rl[v] = N[v].padadd < 0 && c->be->iface.fuse_reduce && !no_red ? red_len(g, N, v) : 0;
        gin[v] = g->nodes[v].nin;
        for (int k = 0; k < g->nodes[v].nin; k++)
            start[g->nodes[v].in[k] + 1]++;
    }
    for (int i = 0; i < g->n_outs; i++)
        start[g->outs[i] + 1]++;
    for (int32_t v = 0; v < nn; v++)
        start[v + 1] += start[v];
    int32_t *fill = rmi_malloc(sizeof *fill * ((size_t)nn + 1));
    int32_t *rd = rmi_malloc(sizeof *rd * ((size_t)start[nn] + 1));
    if (!fill || !rd) {
        rmi_free(rl);
        rmi_free(gin);
        rmi_free(start);
        rmi_free(ok);
        rmi_free(bl);
        rmi_free(gl);
        rmi_free(fill);
        rmi_free(rd);
        return rmi_compile_nomem("fusion's reader lists");
    }
    for (int32_t v = 0; v < nn; v++)
        fill[v] = start[v];
    for (int32_t i = 0; i < c->n_order; i++) {
        int32_t v = c->order[i];
        for (int k = 0; k < g->nodes[v].nin; k++)
            rd[fill[g->nodes[v].in[k]]++] = v;
    }
    for (int i = 0; i < g->n_outs; i++)
        rd[fill[g->outs[i]]++] = -1;

    /* readers come after their operands, so going backwards each reader's
     * group is settled when its operand is considered. A broadcast joins the
     * group of its readers (never the reverse: its operand has another
     * shape), which then reads the vector in place. */
    for (int32_t j = c->n_order - 1; j >= 0; j--) {
        int32_t v = c->order[j];
        if ((!ok[v] && !bl[v]) || start[v] == start[v + 1])
            continue;
        int32_t R = -1;
        for (int32_t i = start[v]; i < start[v + 1]; i++) {
            int32_t r = rd[i];
            if (r < 0 || (!ok[r] && !rl[r]) || (R >= 0 && N[r].root != R)) {
                R = -1;
                break;
            }
            R = N[r].root;
        }
        for (int32_t i = start[v]; R >= 0 && !ok[v] && i < start[v + 1]; i++)
            if (rl[rd[i]])
                R = -1; /* a reduction's operand is a micro-op of its own, not a broadcast read in place */
        if (R >= 0 && bl[v] && gl[R] && gl[R] != bl[v])
            R = -1; /* another grid than the group's other broadcasts */
        /* a group with a broadcast keeps its operand slots (an upper
         * bound) within 32, as when remat_fused_op's masks were one word
         * (rmi_fuse_describe asserts it; the masks now hold all
         * REMAT_FUSED_MAX_IN inputs, so this only keeps such groups as
         * they were measured) */
        if (R >= 0 && (bl[v] || gl[R]) && gin[R] + g->nodes[v].nin > 32)
            R = -1;
        if (R >= 0 && N[R].gsize < REMAT_FUSED_MAX_UOPS) {
            N[v].root = R;
            N[R].gsize++;
            gin[R] += g->nodes[v].nin;
            if (bl[v])
                gl[R] = bl[v];
        }
    }
    rmi_free(start);
    rmi_free(ok);
    rmi_free(bl);
    rmi_free(gl);
    rmi_free(fill);
    rmi_free(rd);
    rmi_free(gin);
    rmi_free(rl);
    link_members(c, N);
    return REMAT_OK;
}

void rmi_fuse_describe(const remat_graph_view *g, const int32_t *members, int nm, const remat_cnode *N, remat_fused_op *F,
                       remat_fused_uop *uops, remat_val *ext, int *n_ext)
{
    REMAT_ASSERT(nm >= 1 && nm <= REMAT_FUSED_MAX_UOPS);
    const remat_node *root = &g->nodes[members[nm - 1]];
    if (nm > 1 && (root->op == REMAT_OP_SUM || root->op == REMAT_OP_REDUCE_MAX)) {
        /* a group ending in a reduction: the chain's micro-ops, then the
         * reduction over red_len of its elements per output */
        rmi_fuse_describe(g, members, nm - 1, N, F, uops, ext, n_ext);
        F->red = (remat_op)root->op;
        F->red_len = red_len(g, N, members[nm - 1]);
        REMAT_ASSERT(F->red_len > 0 && g->nodes[members[nm - 2]].op != REMAT_OP_BROADCAST);
        return;
    }
    int last_use[REMAT_FUSED_MAX_UOPS], reg[REMAT_FUSED_MAX_UOPS];
    int ne = 0;
    remat_fused_mask scalar_in = {{0}}, row_in = {{0}}, col_in = {{0}};
    int64_t lanes = 0;
    for (int k = 0; k < nm; k++)
        last_use[k] = -1;
    /* operands: an earlier member (its index >= 0) or an external input */
    for (int k = 0; k < nm; k++) {
        const remat_node *n = &g->nodes[members[k]];
        uops[k] = (remat_fused_uop){.op = (remat_op)n->op, .dst = -1, .src = {INT16_MIN, INT16_MIN, INT16_MIN}};
        bool col = false;
        const int64_t bl = n->op == REMAT_OP_BROADCAST ? bcast_lanes(g, N, members[k], &col) : 0;
        if (n->op == REMAT_OP_BROADCAST) {
            /* its operand is an input of its own (per mode), read in place */
            REMAT_ASSERT(bl > 0 && (lanes == 0 || lanes == bl) && k < nm - 1);
            lanes = bl;
            REMAT_ASSERT(ne < 32);
            ext[ne] = n->in[0];
            rmi_fused_mask_set(col ? &col_in : &row_in, ne);
            uops[k].src[0] = (int16_t)(-1 - ne++);
            continue;
        }
        rmi_fused_uop_params(n, &uops[k]);
        for (int j = 0; j < n->nin; j++) {
            remat_val a = n->in[j];
            int m = -1;
            for (int i = 0; i < k; i++)
                if (members[i] == a)
                    m = i;
            if (m >= 0) {
                uops[k].src[j] = (int16_t)m; /* renamed to a register below */
                last_use[m] = k;
                continue;
            }
            int e = 0;
            while (e < ne && (ext[e] != a || rmi_fused_mask_has(row_in, e) || rmi_fused_mask_has(col_in, e)))
                e++;
            if (e == ne) {
                ext[ne++] = a;
                if (N[a].scalar)
                    rmi_fused_mask_set(&scalar_in, e);
            }
            uops[k].src[j] = (int16_t)(-1 - e);
        }
    }
    /* registers: a member's value is held from its micro-op to its last
     * reader; the destination is taken before the operands are released, so
     * it never aliases one of them (the kernels' operands are restrict) */
    int busy[REMAT_FUSED_MAX_REGS] = {0}, n_regs = 0;
    for (int k = 0; k < nm; k++) {
        for (int j = 0; j < 3; j++)
            if (uops[k].src[j] >= 0 && uops[k].src[j] != INT16_MIN)
                uops[k].src[j] = (int16_t)reg[uops[k].src[j]];
        if (k < nm - 1) {
            REMAT_ASSERT(last_use[k] > k); /* every non-root member is read in the group */
            int r = 0;
            while (busy[r])
                r++;
            REMAT_ASSERT(r < REMAT_FUSED_MAX_REGS);
            busy[r] = 1;
            reg[k] = r;
            uops[k].dst = (int16_t)r;
            if (r + 1 > n_regs)
                n_regs = r + 1;
        }
        for (int i = 0; i < k; i++)
            if (last_use[i] == k)
                busy[reg[i]] = 0;
    }
    *F = (remat_fused_op){.dtype = (remat_dtype)g->nodes[members[nm - 1]].dtype, .nin = ne, .scalar_in = scalar_in,
                          .n_regs = n_regs, .n_uops = nm, .uops = uops, .row_in = row_in, .col_in = col_in,
                          .lanes = lanes};
    *n_ext = ne;
}

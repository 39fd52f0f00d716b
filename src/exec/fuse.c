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
    /* readers of each node (CSR), outputs marked as a reader -1 */
    int32_t *start = rmi_calloc((size_t)nn + 2, sizeof *start);
    uint8_t *ok = rmi_calloc((size_t)nn + 1, 1);
    if (!start || !ok) {
        rmi_free(start);
        rmi_free(ok);
        return rmi_compile_nomem("fusion's reader lists");
    }
    for (int32_t i = 0; i < c->n_order; i++) {
        int32_t v = c->order[i];
        ok[v] = N[v].padadd < 0 && fusable(g, N, v);
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
        rmi_free(start);
        rmi_free(ok);
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
     * group is settled when its operand is considered */
    for (int32_t j = c->n_order - 1; j >= 0; j--) {
        int32_t v = c->order[j];
        if (!ok[v] || start[v] == start[v + 1])
            continue;
        int32_t R = -1;
        for (int32_t i = start[v]; i < start[v + 1]; i++) {
            int32_t r = rd[i];
            if (r < 0 || !ok[r] || (R >= 0 && N[r].root != R)) {
                R = -1;
                break;
            }
            R = N[r].root;
        }
        if (R >= 0 && N[R].gsize < REMAT_FUSED_MAX_UOPS) {
            N[v].root = R;
            N[R].gsize++;
        }
    }
    rmi_free(start);
    rmi_free(ok);
    rmi_free(fill);
    rmi_free(rd);
    link_members(c, N);
    return REMAT_OK;
}

void rmi_fuse_describe(const remat_graph_view *g, const int32_t *members, int nm, const remat_cnode *N, remat_fused_op *F,
                       remat_fused_uop *uops, remat_val *ext, int *n_ext)
{
    REMAT_ASSERT(nm >= 1 && nm <= REMAT_FUSED_MAX_UOPS);
    int last_use[REMAT_FUSED_MAX_UOPS], reg[REMAT_FUSED_MAX_UOPS];
    int ne = 0;
    uint32_t scalar_in = 0;
    for (int k = 0; k < nm; k++)
        last_use[k] = -1;
    /* operands: an earlier member (its index >= 0) or an external input */
    for (int k = 0; k < nm; k++) {
        const remat_node *n = &g->nodes[members[k]];
        uops[k] = (remat_fused_uop){.op = (remat_op)n->op, .dst = -1, .src = {INT16_MIN, INT16_MIN, INT16_MIN}};
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
            while (e < ne && ext[e] != a)
                e++;
            if (e == ne) {
                ext[ne++] = a;
                if (N[a].scalar)
                    scalar_in |= 1u << e;
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
                          .n_regs = n_regs, .n_uops = nm, .uops = uops};
    *n_ext = ne;
}

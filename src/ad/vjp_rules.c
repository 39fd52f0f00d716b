/*
 * vjp_rules.c — the VJP rule of every primitive, one switch that emits graph
 * ops (ggml style). The formulas follow JAX's (lax.py JVP/transpose rules) so
 * values match jax.grad to rounding: e.g. max splits ties 0.5/0.5, relu'(0)=0.
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ad/ops_internal.h"
#include "ad/vjp_impl.h"
#include "core/alloc.h"
#include "core/assert.h"
#include "core/error.h"
#include "core/exhaustive.h"

typedef struct {
    remat_vjp_ctx *c;
    remat_fn *g;
    const remat_node *n; /* the primal node */
    const int32_t *in;   /* flat ids of its inputs */
    remat_loc loc;
    remat_dtype dt;
} rule;

static remat_val X(rule *r, int k) { return rmi_vjp_primal(r->c, r->in[k]); }
static remat_val Y(rule *r) { return rmi_vjp_primal(r->c, r->c->node); }
static int act(rule *r, int k) { return r->c->active[r->in[k]]; }
static void give(rule *r, int k, remat_val v) { rmi_vjp_add_ct(r->c, r->in[k], v); }
static const remat_node *in_node(rule *r, int k) { return rmi_flat_orig(r->c->fl, r->in[k]); }

static remat_val un(rule *r, remat_op op, remat_val a) { return remat_unary_at(r->g, op, a, r->loc); }
static remat_val bin(rule *r, remat_op op, remat_val a, remat_val b) { return remat_binary_at(r->g, op, a, b, r->loc); }
static remat_val cst(rule *r, const remat_shape *s, double v)
{
    return remat_const_fill_at(r->g, r->dt, s->rank, s->dims, v, r->loc);
}
static remat_val zeros_like_in(rule *r, int k)
{
    const remat_node *n = in_node(r, k);
    return remat_const_fill_at(r->g, (remat_dtype)n->dtype, n->shape.rank, n->shape.dims, 0.0, r->loc);
}

/* JAX's _balanced_eq(x, z, y): 1 where x == z alone, 0.5 where both x and y equal z, else 0 */
static remat_val balanced_eq(rule *r, remat_val x, remat_val z, remat_val y)
{
    const remat_shape *s = &r->n->shape;
    remat_val inner = remat_select_at(r->g, bin(r, REMAT_OP_EQ, y, z), cst(r, s, 0.5), cst(r, s, 1.0), r->loc);
    return remat_select_at(r->g, bin(r, REMAT_OP_EQ, x, z), inner, cst(r, s, 0.0), r->loc);
}

static int remaining(int rank, uint32_t used, int *out)
{
    int n = 0;
    for (int i = 0; i < rank; i++)
        if (!(used & (1u << i)))
            out[n++] = i;
    return n;
}

static uint32_t mask_of(int n, const int *v)
{
    uint32_t m = 0;
    for (int i = 0; i < n; i++)
        m |= 1u << v[i];
    return m;
}

/* JAX's _dot_general_transpose_lhs: cotangent of x in dot_general(x, y, d),
 * given g laid out as (batch, x kept, y kept) — or (batch, y kept, x kept)
 * when swap_ans. When the final transpose would only swap the two free
 * groups, the operands are swapped instead, so no transpose is materialised
 * (the backward products of a matmul are then two plain gemms). */
static remat_val dot_transpose_lhs(rule *r, remat_val g, remat_val y, const remat_shape *xs, const remat_shape *ys,
                                   const remat_dot_dims *d, int swap_ans)
{
    int x_kept[REMAT_MAX_RANK], y_kept[REMAT_MAX_RANK];
    int nxk = remaining(xs->rank, mask_of(d->n_contract, d->lhs_contract) | mask_of(d->n_batch, d->lhs_batch), x_kept);
    int nyk = remaining(ys->rank, mask_of(d->n_contract, d->rhs_contract) | mask_of(d->n_batch, d->rhs_batch), y_kept);
    int nb = d->n_batch;
    remat_dot_dims dd = {.n_contract = nyk, .n_batch = nb};
    for (int i = 0; i < nb; i++) {
        dd.lhs_batch[i] = i;
        dd.rhs_batch[i] = d->rhs_batch[i];
    }
    int ans_y0 = swap_ans ? nb : nb + nxk;
    for (int i = 0; i < nyk; i++) {
        dd.lhs_contract[i] = ans_y0 + i;
        dd.rhs_contract[i] = y_kept[i];
    }
    /* result of dot_general(g, y, dd): (batch, x kept, x contract sorted by y contract) */
    int order[REMAT_MAX_RANK], no = 0; /* x dim held by each result dim */
    for (int i = 0; i < nb; i++)
        order[no++] = d->lhs_batch[i];
    for (int i = 0; i < nxk; i++)
        order[no++] = x_kept[i];
    int idx[REMAT_MAX_RANK];
    for (int i = 0; i < d->n_contract; i++)
        idx[i] = i;
    for (int i = 1; i < d->n_contract; i++) /* argsort of y_contract (insertion sort) */
        for (int j = i; j > 0 && d->rhs_contract[idx[j]] < d->rhs_contract[idx[j - 1]]; j--) {
            int t = idx[j];
            idx[j] = idx[j - 1];
            idx[j - 1] = t;
        }
    for (int i = 0; i < d->n_contract; i++)
        order[no++] = d->lhs_contract[idx[i]];
    int perm[REMAT_MAX_RANK]; /* out_axes = argsort(order) */
    for (int i = 0; i < no; i++)
        perm[order[i]] = i;
    int ident = 1, swapped = 1, nc = d->n_contract;
    for (int i = 0; i < no; i++)
        ident &= perm[i] == i;
    /* the swap case: x = (batch, contract-part, kept-part) in order */
    for (int i = 0; i < nb && swapped; i++)
        swapped = perm[i] == i;
    for (int i = 0; i < nc && swapped; i++)
        swapped = perm[nb + i] == nb + nxk + i;
    for (int i = 0; i < nxk && swapped; i++)
        swapped = perm[nb + nc + i] == nb + i;
    if (!ident && swapped && nb == 0) {
        remat_dot_dims sd = dd;
        for (int i = 0; i < nyk; i++) {
            sd.lhs_contract[i] = dd.rhs_contract[i];
            sd.rhs_contract[i] = dd.lhs_contract[i];
        }
        return remat_dot_general_at(r->g, y, g, &sd, r->loc);
    }
    remat_val res = remat_dot_general_at(r->g, g, y, &dd, r->loc);
    return ident ? res : remat_transpose_at(r->g, res, perm, r->loc);
}

static void rule_dot(rule *r, remat_val g)
{
    const remat_dot_dims *d = r->n->p.dot;
    const remat_shape *xs = &in_node(r, 0)->shape, *ys = &in_node(r, 1)->shape;
    if (act(r, 0))
        give(r, 0, dot_transpose_lhs(r, g, X(r, 1), xs, ys, d, 0));
    if (act(r, 1)) {
        remat_dot_dims sw = {.n_contract = d->n_contract, .n_batch = d->n_batch};
        memcpy(sw.lhs_contract, d->rhs_contract, sizeof sw.lhs_contract);
        memcpy(sw.rhs_contract, d->lhs_contract, sizeof sw.rhs_contract);
        memcpy(sw.lhs_batch, d->rhs_batch, sizeof sw.lhs_batch);
        memcpy(sw.rhs_batch, d->lhs_batch, sizeof sw.rhs_batch);
        give(r, 1, dot_transpose_lhs(r, g, X(r, 0), ys, xs, &sw, 1));
    }
}

/* broadcast_in_dim's cotangent: sum over new and expanded dims, reshape back */
static remat_val unbroadcast(rule *r, remat_val g, const remat_shape *in, const int *bdims)
{
    const remat_shape *out = &r->n->shape;
    uint32_t keep = 0, expanded = 0;
    for (int i = 0; i < in->rank; i++) {
        keep |= 1u << bdims[i];
        if (in->dims[i] == 1 && out->dims[bdims[i]] != 1)
            expanded |= 1u << bdims[i];
    }
    int axes[REMAT_MAX_RANK], na = 0;
    for (int i = 0; i < out->rank; i++)
        if (!(keep & (1u << i)) || (expanded & (1u << i)))
            axes[na++] = i;
    remat_val s = remat_sum_at(r->g, g, na, axes, r->loc);
    return remat_reshape_at(r->g, s, in->rank, in->dims, r->loc);
}

static void rule_slice(rule *r, remat_val g)
{
    const remat_slice_params *p = r->n->p.slice;
    const remat_shape *in = &in_node(r, 0)->shape, *out = &r->n->shape;
    if (remat_shape_numel(out) == 0) {
        give(r, 0, zeros_like_in(r, 0));
        return;
    }
    int64_t lo[REMAT_MAX_RANK], hi[REMAT_MAX_RANK], interior[REMAT_MAX_RANK];
    for (int i = 0; i < in->rank; i++) {
        lo[i] = p->start[i];
        hi[i] = in->dims[i] - (p->start[i] + (out->dims[i] - 1) * p->stride[i] + 1);
        interior[i] = p->stride[i] - 1;
    }
    give(r, 0, remat_pad_at(r->g, g, lo, hi, interior, r->loc));
}

static void rule_pad(rule *r, remat_val g)
{
    const remat_pad_params *p = r->n->p.pad;
    const remat_shape *in = &in_node(r, 0)->shape;
    if (remat_shape_numel(in) == 0)
        return; /* nothing to receive */
    int64_t start[REMAT_MAX_RANK], limit[REMAT_MAX_RANK], stride[REMAT_MAX_RANK];
    for (int i = 0; i < in->rank; i++) {
        start[i] = p->low[i];
        stride[i] = p->interior[i] + 1;
        limit[i] = p->low[i] + (in->dims[i] - 1) * stride[i] + 1;
    }
    give(r, 0, remat_slice_at(r->g, g, start, limit, stride, r->loc));
}

static void rule_concat(rule *r, remat_val g)
{
    int axis = (int)r->n->p.axis;
    const remat_shape *out = &r->n->shape;
    int64_t start[REMAT_MAX_RANK] = {0}, limit[REMAT_MAX_RANK];
    for (int i = 0; i < out->rank; i++)
        limit[i] = out->dims[i];
    int64_t off = 0;
    for (int k = 0; k < r->n->nin; k++) {
        int64_t len = in_node(r, k)->shape.dims[axis];
        start[axis] = off;
        limit[axis] = off + len;
        if (act(r, k))
            give(r, k, remat_slice_at(r->g, g, start, limit, NULL, r->loc));
        off += len;
    }
}

/* JAX's _reduce_chooser_jvp_rule, transposed: with loc = (x == bcast(max))
 * and counts = reduce_sum(loc), x gets bcast(g / counts) * loc, so tied
 * positions share the cotangent equally and a NaN max (no position equal,
 * counts 0) gives NaN everywhere in its run, as JAX. */
static remat_val rule_reduce_max(rule *r, remat_val g)
{
    const remat_shape *in = &in_node(r, 0)->shape;
    uint32_t mask = r->n->p.axes_mask;
    int bd[REMAT_MAX_RANK], nb = 0, axes[REMAT_MAX_RANK], na = 0;
    for (int k = 0; k < in->rank; k++) {
        if (mask & (1u << k))
            axes[na++] = k;
        else
            bd[nb++] = k;
    }
    remat_val ybig = remat_broadcast_in_dim_at(r->g, Y(r), in->rank, in->dims, bd, r->loc);
    remat_val loc = bin(r, REMAT_OP_EQ, X(r, 0), ybig);
    remat_val counts = remat_sum_at(r->g, loc, na, axes, r->loc);
    remat_val share = remat_broadcast_in_dim_at(r->g, bin(r, REMAT_OP_DIV, g, counts), in->rank, in->dims, bd, r->loc);
    return bin(r, REMAT_OP_MUL, share, loc);
}

static remat_status rule_custom(rule *r, remat_val g)
{
    const remat_custom_op *op = r->n->p.custom;
    if (!op->vjp)
        return rmi_error(REMAT_ERR_UNSUPPORTED, "%s:%d: custom op '%s' has no VJP function", r->loc.file,
                         r->loc.line, op->name ? op->name : "?");
    int nin = r->n->nin;
    remat_val *ins = rmi_malloc(sizeof *ins * (size_t)(nin + 2));
    if (!ins)
        return rmi_error(REMAT_ERR_NOMEM, "%s:%d: out of memory differentiating custom op '%s'", r->loc.file,
                         r->loc.line, op->name ? op->name : "?");
    for (int k = 0; k < nin; k++)
        ins[k] = X(r, k);
    ins[nin] = Y(r);
    ins[nin + 1] = g;
    for (int k = 0; k < nin; k++) {
        if (!act(r, k))
            continue;
        const remat_node *a = in_node(r, k);
        remat_node proto = rmi_proto(REMAT_OP_CUSTOM_VJP, (remat_dtype)a->dtype, &a->shape, r->loc);
        proto.p.custom = op;
        proto.aux = k; /* which input this node is the cotangent of */
        proto.name = r->n->name;
        give(r, k, rmi_fn_add_node(r->g, &proto, nin + 2, ins));
    }
    rmi_free(ins);
    return REMAT_OK;
}

/* One case per op (core/exhaustive.h): an op added to REMAT_OP_LIST does not
 * compile here until it has its rule or is declared without a derivative. */
REMAT_EXHAUSTIVE_BEGIN
remat_status rmi_vjp_rule(remat_vjp_ctx *c, int32_t i, remat_val g)
{
    const remat_flat_node *fn = &c->fl->nodes[i];
    rule R = {.c = c, .g = c->g, .n = rmi_fn_node(fn->fn, fn->v), .in = fn->in};
    rule *r = &R;
    r->loc = r->n->loc;
    r->dt = (remat_dtype)r->n->dtype;
    const remat_shape *s = &r->n->shape;
    uint8_t saved = c->g->emit_flags;
    c->g->emit_flags = REMAT_NODE_BWD;
    remat_status st = REMAT_OK;
    switch ((remat_op)r->n->op) {
    case REMAT_OP_ADD:
        give(r, 0, g);
        give(r, 1, g);
        break;
    case REMAT_OP_SUB:
        give(r, 0, g);
        if (act(r, 1))
            give(r, 1, un(r, REMAT_OP_NEG, g));
        break;
    case REMAT_OP_MUL:
        if (act(r, 0))
            give(r, 0, bin(r, REMAT_OP_MUL, g, X(r, 1)));
        if (act(r, 1))
            give(r, 1, bin(r, REMAT_OP_MUL, X(r, 0), g));
        break;
    case REMAT_OP_DIV:
        if (act(r, 0))
            give(r, 0, bin(r, REMAT_OP_DIV, g, X(r, 1)));
        if (act(r, 1)) /* -g * x * y^-2 */
            give(r, 1, bin(r, REMAT_OP_MUL, bin(r, REMAT_OP_MUL, un(r, REMAT_OP_NEG, g), X(r, 0)),
                           remat_integer_pow_at(r->g, X(r, 1), -2, r->loc)));
        break;
    case REMAT_OP_MAX:
    case REMAT_OP_MIN:
        if (act(r, 0))
            give(r, 0, bin(r, REMAT_OP_MUL, g, balanced_eq(r, X(r, 0), Y(r), X(r, 1))));
        if (act(r, 1))
            give(r, 1, bin(r, REMAT_OP_MUL, g, balanced_eq(r, X(r, 1), Y(r), X(r, 0))));
        break;
    case REMAT_OP_NEG:
        give(r, 0, un(r, REMAT_OP_NEG, g));
        break;
    case REMAT_OP_EXP:
        give(r, 0, bin(r, REMAT_OP_MUL, g, Y(r)));
        break;
    case REMAT_OP_LOG:
        give(r, 0, bin(r, REMAT_OP_DIV, g, X(r, 0)));
        break;
    case REMAT_OP_SIN:
        give(r, 0, bin(r, REMAT_OP_MUL, g, un(r, REMAT_OP_COS, X(r, 0))));
        break;
    case REMAT_OP_COS:
        give(r, 0, bin(r, REMAT_OP_MUL, un(r, REMAT_OP_NEG, g), un(r, REMAT_OP_SIN, X(r, 0))));
        break;
    case REMAT_OP_TANH: { /* (g + g*y) * (1 - y) */
        remat_val y = Y(r);
        remat_val one_m = bin(r, REMAT_OP_SUB, cst(r, s, 1.0), y);
        give(r, 0, bin(r, REMAT_OP_MUL, bin(r, REMAT_OP_ADD, g, bin(r, REMAT_OP_MUL, g, y)), one_m));
        break;
    }
    case REMAT_OP_RELU: /* relu(x) > 0 iff x > 0 (NaN and -0 included): reading the
                           output, which the next layer keeps anyway, saves a recompute */
        give(r, 0, remat_select_at(r->g, bin(r, REMAT_OP_GT, Y(r), cst(r, s, 0.0)), g, cst(r, s, 0.0), r->loc));
        break;
    case REMAT_OP_SQUARE:
        give(r, 0, bin(r, REMAT_OP_MUL, g, bin(r, REMAT_OP_MUL, cst(r, s, 2.0), X(r, 0))));
        break;
    case REMAT_OP_SQRT:
        give(r, 0, bin(r, REMAT_OP_DIV, g, bin(r, REMAT_OP_MUL, cst(r, s, 2.0), Y(r))));
        break;
    case REMAT_OP_ERF: { /* JAX's jvp c * (g * exp(-x^2)), transposed: (c * g) * exp(-x^2) */
        remat_val e = un(r, REMAT_OP_EXP, un(r, REMAT_OP_NEG, un(r, REMAT_OP_SQUARE, X(r, 0))));
        give(r, 0, bin(r, REMAT_OP_MUL, bin(r, REMAT_OP_MUL, cst(r, s, 2.0 / sqrt(M_PI)), g), e));
        break;
    }
    case REMAT_OP_LOG1P: /* JAX's jvp g / (x + 1) */
        give(r, 0, bin(r, REMAT_OP_DIV, g, bin(r, REMAT_OP_ADD, X(r, 0), cst(r, s, 1.0))));
        break;
    case REMAT_OP_EXPM1: /* JAX's jvp g * (y + 1) */
        give(r, 0, bin(r, REMAT_OP_MUL, g, bin(r, REMAT_OP_ADD, Y(r), cst(r, s, 1.0))));
        break;
    case REMAT_OP_LOGISTIC: /* JAX's jvp g * (y * (1 - y)) */
        give(r, 0, bin(r, REMAT_OP_MUL, g, bin(r, REMAT_OP_MUL, Y(r), bin(r, REMAT_OP_SUB, cst(r, s, 1.0), Y(r)))));
        break;
    case REMAT_OP_ERF_INV: /* JAX's jvp sqrt(pi)/2 * (g * exp(y^2)), transposed: (c * g) * exp(y^2) */
        give(r, 0, bin(r, REMAT_OP_MUL, bin(r, REMAT_OP_MUL, cst(r, s, sqrt(M_PI) / 2.0), g),
                       un(r, REMAT_OP_EXP, un(r, REMAT_OP_SQUARE, Y(r)))));
        break;
    case REMAT_OP_INTEGER_POW: {
        int k = (int)r->n->p.int_exponent;
        if (k == 0)
            give(r, 0, zeros_like_in(r, 0));
        else if (k == 1)
            give(r, 0, g);
        else {
            /* x^(k-1); at k = INT_MIN, k - 1 overflows int: x^k * x^-1 */
            remat_val xk = k == 2        ? X(r, 0)
                           : k == INT_MIN ? bin(r, REMAT_OP_MUL, remat_integer_pow_at(r->g, X(r, 0), k, r->loc),
                                                remat_integer_pow_at(r->g, X(r, 0), -1, r->loc))
                                          : remat_integer_pow_at(r->g, X(r, 0), k - 1, r->loc);
            give(r, 0, bin(r, REMAT_OP_MUL, g, bin(r, REMAT_OP_MUL, cst(r, s, (double)k), xk)));
        }
        break;
    }
    case REMAT_OP_POW: {
        double p = r->n->p.exponent;
        remat_val xp = remat_pow_at(r->g, X(r, 0), p - 1.0, r->loc);
        give(r, 0, bin(r, REMAT_OP_MUL, g, bin(r, REMAT_OP_MUL, cst(r, s, p), xp)));
        break;
    }
    case REMAT_OP_SELECT:
        if (act(r, 1))
            give(r, 1, remat_select_at(r->g, X(r, 0), g, cst(r, s, 0.0), r->loc));
        if (act(r, 2))
            give(r, 2, remat_select_at(r->g, X(r, 0), cst(r, s, 0.0), g, r->loc));
        break;
    case REMAT_OP_CONVERT:
        give(r, 0, remat_convert_at(r->g, g, (remat_dtype)in_node(r, 0)->dtype, r->loc));
        break;
    case REMAT_OP_SUM: {
        const remat_shape *in = &in_node(r, 0)->shape;
        int bd[REMAT_MAX_RANK], nb = 0;
        for (int k = 0; k < in->rank; k++)
            if (!(r->n->p.axes_mask & (1u << k)))
                bd[nb++] = k;
        give(r, 0, remat_broadcast_in_dim_at(r->g, g, in->rank, in->dims, bd, r->loc));
        break;
    }
    case REMAT_OP_REDUCE_MAX:
        give(r, 0, rule_reduce_max(r, g));
        break;
    case REMAT_OP_BROADCAST:
        give(r, 0, unbroadcast(r, g, &in_node(r, 0)->shape, r->n->p.bdims));
        break;
    case REMAT_OP_RESHAPE: {
        const remat_shape *in = &in_node(r, 0)->shape;
        give(r, 0, remat_reshape_at(r->g, g, in->rank, in->dims, r->loc));
        break;
    }
    case REMAT_OP_TRANSPOSE: {
        int inv[REMAT_MAX_RANK];
        for (int k = 0; k < s->rank; k++)
            inv[r->n->p.perm[k]] = k;
        give(r, 0, remat_transpose_at(r->g, g, inv, r->loc));
        break;
    }
    case REMAT_OP_SLICE:
        rule_slice(r, g);
        break;
    case REMAT_OP_PAD:
        rule_pad(r, g);
        break;
    case REMAT_OP_CONCATENATE:
        rule_concat(r, g);
        break;
    case REMAT_OP_DOT_GENERAL:
        rule_dot(r, g);
        break;
    case REMAT_OP_LINEAR_SOLVE: { /* (A, lu(A), b): b_bar = solve(A^T, g) with the same lu; A_bar = -b_bar x^T (-x b_bar^T when transposed) */
        const int t = (int)r->n->p.solve_transpose, ar = in_node(r, 0)->shape.rank;
        remat_val bbar = rmi_linear_solve_t_at(r->g, X(r, 0), X(r, 1), g, !t, r->loc);
        if (act(r, 0))
            give(r, 0, t ? rmi_linear_solve_neg_outer(r->g, Y(r), bbar, ar, r->loc)
                         : rmi_linear_solve_neg_outer(r->g, bbar, Y(r), ar, r->loc));
        if (act(r, 2))
            give(r, 2, bbar);
        break; /* lu (input 1) is never active: its derivative is this rule's */
    }
    case REMAT_OP_NAME:
        give(r, 0, g);
        break;
    case REMAT_OP_CUSTOM:
        st = rule_custom(r, g);
        break;
    case REMAT_OP_GT: case REMAT_OP_GE: case REMAT_OP_LT: case REMAT_OP_LE: case REMAT_OP_EQ: case REMAT_OP_NE:
    case REMAT_OP_STOP_GRADIENT:
    case REMAT_OP_LU:
        break; /* no derivative (vjp.c never makes these active) */
    case REMAT_OP_CUSTOM_VJP:
        st = rmi_error(REMAT_ERR_UNSUPPORTED, "%s:%d: the VJP of custom op '%s' is not itself differentiable",
                       r->loc.file, r->loc.line, r->n->name ? r->n->name : "?");
        break;
    case REMAT_OP_PROJ: { /* an output of a higher-order node: collect it for that node's rule */
        int32_t h = r->in[0];
        const remat_node *hn = in_node(r, 0);
        REMAT_ASSERT(hn->op == REMAT_OP_HOP);
        if (!c->hop_ct[h]) {
            int no = hn->p.hop.rules->num_outputs(hn->p.hop.data);
            c->hop_ct[h] = rmi_malloc(sizeof **c->hop_ct * (size_t)(no ? no : 1));
            if (!c->hop_ct[h]) {
                st = rmi_error(REMAT_ERR_NOMEM, "%s:%d: out of memory differentiating %s", r->loc.file,
                               r->loc.line, hn->p.hop.rules->name);
                break;
            }
            for (int k = 0; k < no; k++)
                c->hop_ct[h][k] = REMAT_NONE;
        }
        remat_val *slot = &c->hop_ct[h][r->n->p.output];
        *slot = *slot == REMAT_NONE ? g : bin(r, REMAT_OP_ADD, *slot, g);
        break;
    }
    case REMAT_OP_HOP: {
        const remat_hop_rules *hr = r->n->p.hop.rules;
        remat_hop_vjp h = {c, i};
        if (!hr->vjp_backward)
            st = rmi_error(REMAT_ERR_UNSUPPORTED, "%s:%d: %s has no reverse mode", r->loc.file, r->loc.line, hr->name);
        else
            st = hr->vjp_backward(&h, r->n->p.hop.data, c->hop_ct[i]);
        break;
    }
    case REMAT_OP_CONSTANT:
    case REMAT_OP_ARG:
    case REMAT_OP_CHECKPOINT:
    case REMAT_OP_COUNT:
        REMAT_UNREACHABLE("vjp_rule: node kind never reaches the rules");
    }
    c->g->emit_flags = saved;
    return st;
}
REMAT_EXHAUSTIVE_END

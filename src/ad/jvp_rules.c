/*
 * jvp_rules.c — the JVP rule of every primitive, one switch that emits graph
 * ops. The formulas are JAX's (lax.py defjvp rules), term by term and in
 * input order, so values match jax.jvp to rounding: max splits ties
 * 0.5/0.5, relu'(0) = 0, reduce_max shares among tied maxima. A zero
 * tangent (REMAT_NONE) is symbolic: its terms are not emitted.
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>

#include "ad/jvp_impl.h"
#include "ad/ops_internal.h"
#include "core/alloc.h"
#include "core/assert.h"
#include "core/error.h"
#include "core/exhaustive.h"

typedef struct {
    remat_jvp_ctx *c;
    remat_fn *g;
    const remat_node *n; /* the primal node, in f */
    remat_val v;         /* its id in f */
    remat_loc loc;
    remat_dtype dt;
} rule;

static remat_val X(rule *r, int k) { return r->c->p[r->n->in[k]]; }
static remat_val Y(rule *r) { return r->c->p[r->v]; }
static remat_val T(rule *r, int k) { return r->c->t[r->n->in[k]]; }
static const remat_node *in_node(rule *r, int k) { return rmi_fn_node(r->c->f, r->n->in[k]); }
static remat_val un(rule *r, remat_op op, remat_val a) { return remat_unary_at(r->g, op, a, r->loc); }
static remat_val bin(rule *r, remat_op op, remat_val a, remat_val b) { return remat_binary_at(r->g, op, a, b, r->loc); }
static remat_val cst(rule *r, double v)
{
    return remat_const_fill_at(r->g, r->dt, r->n->shape.rank, r->n->shape.dims, v, r->loc);
}
/* The tangent of input k, a materialised zero where it is symbolic. */
static remat_val T0(rule *r, int k)
{
    if (T(r, k) != REMAT_NONE)
        return T(r, k);
    const remat_node *a = in_node(r, k);
    return remat_const_fill_at(r->g, (remat_dtype)a->dtype, a->shape.rank, a->shape.dims, 0.0, r->loc);
}
/* JAX's add_tangents: a zero term is dropped */
static remat_val tadd(rule *r, remat_val a, remat_val b)
{
    return a == REMAT_NONE ? b : b == REMAT_NONE ? a : bin(r, REMAT_OP_ADD, a, b);
}
/* op(tangent, other) or op(other, tangent), skipped for a zero tangent */
static remat_val term(rule *r, remat_op op, remat_val a, remat_val b)
{
    return a == REMAT_NONE || b == REMAT_NONE ? REMAT_NONE : bin(r, op, a, b);
}

/* JAX's _balanced_eq(x, z, y): 1 where x == z alone, 0.5 where both x and y equal z, else 0 */
static remat_val balanced_eq(rule *r, remat_val x, remat_val z, remat_val y)
{
    remat_val inner = remat_select_at(r->g, bin(r, REMAT_OP_EQ, y, z), cst(r, 0.5), cst(r, 1.0), r->loc);
    return remat_select_at(r->g, bin(r, REMAT_OP_EQ, x, z), inner, cst(r, 0.0), r->loc);
}

static int axes_of(uint32_t mask, int rank, int *axes, int *kept)
{
    int na = 0, nk = 0;
    for (int k = 0; k < rank; k++) {
        if (mask & (1u << k))
            axes[na++] = k;
        else
            kept[nk++] = k;
    }
    return na;
}

/* JAX's _reduce_chooser_jvp_rule: loc = (x == bcast(max)), the tangent is
 * sum(t * loc) / sum(loc): tied maxima share it, a NaN max gives NaN. */
static remat_val rule_reduce_max(rule *r)
{
    const remat_shape *in = &in_node(r, 0)->shape;
    int axes[REMAT_MAX_RANK], kept[REMAT_MAX_RANK];
    int na = axes_of(r->n->p.axes_mask, in->rank, axes, kept);
    remat_val ybig = remat_broadcast_in_dim_at(r->g, Y(r), in->rank, in->dims, kept, r->loc);
    remat_val loc = bin(r, REMAT_OP_EQ, X(r, 0), ybig);
    remat_val counts = remat_sum_at(r->g, loc, na, axes, r->loc);
    return bin(r, REMAT_OP_DIV, remat_sum_at(r->g, bin(r, REMAT_OP_MUL, T(r, 0), loc), na, axes, r->loc), counts);
}

static remat_val rule_integer_pow(rule *r)
{
    int k = (int)r->n->p.int_exponent;
    if (k == 0)
        return REMAT_NONE; /* JAX: zeros */
    if (k == 1)
        return T(r, 0);
    /* x^(k-1); at k = INT_MIN, k - 1 overflows int: x^k * x^-1 (as the VJP) */
    remat_val xk = k == 2        ? X(r, 0)
                   : k == INT_MIN ? bin(r, REMAT_OP_MUL, remat_integer_pow_at(r->g, X(r, 0), k, r->loc),
                                        remat_integer_pow_at(r->g, X(r, 0), -1, r->loc))
                                  : remat_integer_pow_at(r->g, X(r, 0), k - 1, r->loc);
    return bin(r, REMAT_OP_MUL, T(r, 0), bin(r, REMAT_OP_MUL, cst(r, (double)k), xk));
}

/* A checkpoint region with a tangent on some input: a region (same policy)
 * over the JVP of the body w.r.t. those inputs. */
static remat_status rule_call(rule *r)
{
    const remat_call_params *cp = r->n->p.call;
    const remat_fn *body = cp->callee;
    int nin = r->n->nin, no = remat_fn_num_outputs(body), nw = 0;
    int *wrt = rmi_malloc(sizeof *wrt * (size_t)nin);
    remat_val *ins = rmi_malloc(sizeof *ins * (size_t)(2 * nin));
    remat_val *outs = rmi_malloc(sizeof *outs * (size_t)(2 * no));
    remat_fn *jb = NULL, *region = NULL;
    remat_status st = REMAT_ERR_NOMEM;
    if (!wrt || !ins || !outs)
        goto done;
    for (int k = 0; k < nin; k++) {
        ins[k] = X(r, k);
        if (T(r, k) != REMAT_NONE) {
            ins[nin + nw] = T(r, k);
            wrt[nw++] = k;
        }
    }
    if ((st = remat_jvp(body, nw, wrt, &jb)) != REMAT_OK)
        goto done;
    if (!(region = remat_checkpoint(jb, cp->policy))) { /* jb was built without error: out of memory */
        st = REMAT_ERR_NOMEM;
        goto done;
    }
    st = remat_call_at(r->g, region, nin + nw, ins, outs, r->loc);
    if (st == REMAT_OK) {
        r->c->outs[r->v] = outs;
        outs = NULL;
    }
done:
    remat_fn_free(region);
    remat_fn_free(jb);
    rmi_free(wrt);
    rmi_free(ins);
    rmi_free(outs);
    return st;
}

static remat_status rule_hop(rule *r)
{
    const remat_hop_rules *hr = r->n->p.hop.rules;
    if (!hr->jvp)
        return rmi_error(REMAT_ERR_UNSUPPORTED, "%s:%d: %s has no forward mode", r->loc.file, r->loc.line,
                         hr->name);
    int nin = r->n->nin, no = hr->num_outputs(r->n->p.hop.data);
    remat_val *ins = rmi_malloc(sizeof *ins * (size_t)(2 * (nin ? nin : 1)));
    remat_val *outs = rmi_malloc(sizeof *outs * (size_t)(2 * (no ? no : 1)));
    if (!ins || !outs) {
        rmi_free(ins);
        rmi_free(outs);
        return rmi_error(REMAT_ERR_NOMEM, "%s:%d: out of memory in the forward mode of %s", r->loc.file,
                         r->loc.line, hr->name);
    }
    for (int k = 0; k < nin; k++) {
        ins[k] = X(r, k);
        ins[nin + k] = T(r, k);
    }
    remat_status st = hr->jvp(r->g, r->n->p.hop.data, ins, ins + nin, outs, r->loc);
    rmi_free(ins);
    if (st == REMAT_OK)
        r->c->outs[r->v] = outs;
    else
        rmi_free(outs);
    return st;
}

/* One case per op (core/exhaustive.h): an op added to REMAT_OP_LIST does not
 * compile here until it has its rule or is declared without a derivative. */
REMAT_EXHAUSTIVE_BEGIN
remat_status rmi_jvp_rule(remat_jvp_ctx *c, remat_val v)
{
    rule R = {.c = c, .g = c->g, .n = rmi_fn_node(c->f, v), .v = v};
    rule *r = &R;
    r->loc = r->n->loc;
    r->dt = (remat_dtype)r->n->dtype;
    remat_val t = REMAT_NONE;
    remat_status st = REMAT_OK;
    switch ((remat_op)r->n->op) {
    case REMAT_OP_ADD:
        t = tadd(r, T(r, 0), T(r, 1));
        break;
    case REMAT_OP_SUB:
        t = T(r, 1) == REMAT_NONE ? T(r, 0)
            : T(r, 0) == REMAT_NONE ? un(r, REMAT_OP_NEG, T(r, 1))
                                    : bin(r, REMAT_OP_SUB, T(r, 0), T(r, 1));
        break;
    case REMAT_OP_MUL:
        t = tadd(r, term(r, REMAT_OP_MUL, T(r, 0), X(r, 1)), term(r, REMAT_OP_MUL, X(r, 0), T(r, 1)));
        break;
    case REMAT_OP_DIV: { /* t0 / y  +  (-t1 * x) * y^-2 */
        remat_val b = REMAT_NONE;
        if (T(r, 1) != REMAT_NONE)
            b = bin(r, REMAT_OP_MUL, bin(r, REMAT_OP_MUL, un(r, REMAT_OP_NEG, T(r, 1)), X(r, 0)),
                    remat_integer_pow_at(r->g, X(r, 1), -2, r->loc));
        t = tadd(r, term(r, REMAT_OP_DIV, T(r, 0), X(r, 1)), b);
        break;
    }
    case REMAT_OP_MAX:
    case REMAT_OP_MIN: {
        remat_val a = T(r, 0) == REMAT_NONE ? REMAT_NONE : balanced_eq(r, X(r, 0), Y(r), X(r, 1));
        remat_val b = T(r, 1) == REMAT_NONE ? REMAT_NONE : balanced_eq(r, X(r, 1), Y(r), X(r, 0));
        t = tadd(r, term(r, REMAT_OP_MUL, T(r, 0), a), term(r, REMAT_OP_MUL, T(r, 1), b));
        break;
    }
    case REMAT_OP_NEG:
        t = un(r, REMAT_OP_NEG, T(r, 0));
        break;
    case REMAT_OP_EXP:
        t = bin(r, REMAT_OP_MUL, T(r, 0), Y(r));
        break;
    case REMAT_OP_LOG:
        t = bin(r, REMAT_OP_DIV, T(r, 0), X(r, 0));
        break;
    case REMAT_OP_SIN:
        t = bin(r, REMAT_OP_MUL, T(r, 0), un(r, REMAT_OP_COS, X(r, 0)));
        break;
    case REMAT_OP_COS:
        t = bin(r, REMAT_OP_MUL, un(r, REMAT_OP_NEG, T(r, 0)), un(r, REMAT_OP_SIN, X(r, 0)));
        break;
    case REMAT_OP_TANH: /* (t + t*y) * (1 - y) */
        t = bin(r, REMAT_OP_MUL, bin(r, REMAT_OP_ADD, T(r, 0), bin(r, REMAT_OP_MUL, T(r, 0), Y(r))),
                bin(r, REMAT_OP_SUB, cst(r, 1.0), Y(r)));
        break;
    case REMAT_OP_RELU: /* jax.nn.relu's custom JVP: select(x > 0, t, 0); relu(x) > 0 iff x > 0 */
        t = remat_select_at(r->g, bin(r, REMAT_OP_GT, Y(r), cst(r, 0.0)), T(r, 0), cst(r, 0.0), r->loc);
        break;
    case REMAT_OP_SQUARE:
        t = bin(r, REMAT_OP_MUL, T(r, 0), bin(r, REMAT_OP_MUL, cst(r, 2.0), X(r, 0)));
        break;
    case REMAT_OP_SQRT:
        t = bin(r, REMAT_OP_DIV, T(r, 0), bin(r, REMAT_OP_MUL, cst(r, 2.0), Y(r)));
        break;
    case REMAT_OP_ERF: { /* 2/sqrt(pi) * (t * exp(-x^2)) */
        remat_val e = un(r, REMAT_OP_EXP, un(r, REMAT_OP_NEG, un(r, REMAT_OP_SQUARE, X(r, 0))));
        t = bin(r, REMAT_OP_MUL, cst(r, 2.0 / sqrt(M_PI)), bin(r, REMAT_OP_MUL, T(r, 0), e));
        break;
    }
    case REMAT_OP_LOG1P: /* t / (x + 1) */
        t = bin(r, REMAT_OP_DIV, T(r, 0), bin(r, REMAT_OP_ADD, X(r, 0), cst(r, 1.0)));
        break;
    case REMAT_OP_EXPM1: /* t * (y + 1) */
        t = bin(r, REMAT_OP_MUL, T(r, 0), bin(r, REMAT_OP_ADD, Y(r), cst(r, 1.0)));
        break;
    case REMAT_OP_LOGISTIC: /* t * (y * (1 - y)) */
        t = bin(r, REMAT_OP_MUL, T(r, 0), bin(r, REMAT_OP_MUL, Y(r), bin(r, REMAT_OP_SUB, cst(r, 1.0), Y(r))));
        break;
    case REMAT_OP_ERF_INV: /* sqrt(pi)/2 * (t * exp(y^2)) */
        t = bin(r, REMAT_OP_MUL, cst(r, sqrt(M_PI) / 2.0),
                bin(r, REMAT_OP_MUL, T(r, 0), un(r, REMAT_OP_EXP, un(r, REMAT_OP_SQUARE, Y(r)))));
        break;
    case REMAT_OP_INTEGER_POW:
        t = rule_integer_pow(r);
        break;
    case REMAT_OP_POW: {
        double p = r->n->p.exponent;
        t = bin(r, REMAT_OP_MUL, T(r, 0),
                bin(r, REMAT_OP_MUL, cst(r, p), remat_pow_at(r->g, X(r, 0), p - 1.0, r->loc)));
        break;
    }
    case REMAT_OP_SELECT: /* the predicate has no derivative */
        if (T(r, 1) != REMAT_NONE || T(r, 2) != REMAT_NONE)
            t = remat_select_at(r->g, X(r, 0), T0(r, 1), T0(r, 2), r->loc);
        break;
    case REMAT_OP_CONVERT:
        t = remat_convert_at(r->g, T(r, 0), r->dt, r->loc);
        break;
    case REMAT_OP_SUM: {
        int axes[REMAT_MAX_RANK], kept[REMAT_MAX_RANK];
        int na = axes_of(r->n->p.axes_mask, in_node(r, 0)->shape.rank, axes, kept);
        t = remat_sum_at(r->g, T(r, 0), na, axes, r->loc);
        break;
    }
    case REMAT_OP_REDUCE_MAX:
        t = rule_reduce_max(r);
        break;
    case REMAT_OP_BROADCAST:
    case REMAT_OP_RESHAPE:
    case REMAT_OP_TRANSPOSE:
    case REMAT_OP_SLICE:
    case REMAT_OP_PAD: /* linear: the same op on the tangent (pad's value is 0) */
        t = rmi_fn_copy_node_with_inputs(r->g, r->c->f, v, (remat_val[]){T(r, 0)}, 0);
        break;
    case REMAT_OP_CONCATENATE: {
        remat_val *ts = rmi_malloc(sizeof *ts * (size_t)r->n->nin);
        if (!ts)
            return rmi_error(REMAT_ERR_NOMEM, "%s:%d: out of memory in the JVP of concatenate", r->loc.file,
                             r->loc.line);
        for (int k = 0; k < r->n->nin; k++)
            ts[k] = T0(r, k);
        t = remat_concatenate_at(r->g, r->n->nin, ts, (int)r->n->p.axis, r->loc);
        rmi_free(ts);
        break;
    }
    case REMAT_OP_DOT_GENERAL: /* dot(t0, y) + dot(x, t1) */
        t = tadd(r, T(r, 0) == REMAT_NONE ? REMAT_NONE : remat_dot_general_at(r->g, T(r, 0), X(r, 1), r->n->p.dot, r->loc),
                 T(r, 1) == REMAT_NONE ? REMAT_NONE : remat_dot_general_at(r->g, X(r, 0), T(r, 1), r->n->p.dot, r->loc));
        break;
    case REMAT_OP_LINEAR_SOLVE: { /* (A, lu(A), b): solve(A, b_dot - A_dot x) with the same lu (A_dot^T
                                   * for a transposed solve); lu's tangent is this rule's */
        const int tr = (int)r->n->p.solve_transpose;
        remat_val ax = T(r, 0) == REMAT_NONE ? REMAT_NONE : rmi_linear_solve_matvec(r->g, T(r, 0), Y(r), tr, r->loc);
        remat_val rhs = ax == REMAT_NONE ? T(r, 2) : T(r, 2) == REMAT_NONE ? un(r, REMAT_OP_NEG, ax)
                                                                             : bin(r, REMAT_OP_SUB, T(r, 2), ax);
        t = rhs == REMAT_NONE ? REMAT_NONE : rmi_linear_solve_t_at(r->g, X(r, 0), X(r, 1), rhs, tr, r->loc);
        break;
    }
    case REMAT_OP_NAME: /* the tangent is not the named value: policies do not see it by name */
        t = T(r, 0);
        break;
    case REMAT_OP_CHECKPOINT:
        st = rule_call(r);
        break;
    case REMAT_OP_HOP:
        st = rule_hop(r);
        break;
    case REMAT_OP_CUSTOM:
        st = rmi_error(REMAT_ERR_UNSUPPORTED, "%s:%d: custom op '%s' has no JVP (a custom op gives only its VJP)",
                       r->loc.file, r->loc.line, r->n->name ? r->n->name : "?");
        break;
    case REMAT_OP_CUSTOM_VJP:
        st = rmi_error(REMAT_ERR_UNSUPPORTED, "%s:%d: the VJP of custom op '%s' has no JVP", r->loc.file,
                       r->loc.line, r->n->name ? r->n->name : "?");
        break;
    case REMAT_OP_GT: case REMAT_OP_GE: case REMAT_OP_LT: case REMAT_OP_LE: case REMAT_OP_EQ: case REMAT_OP_NE:
    case REMAT_OP_STOP_GRADIENT:
    case REMAT_OP_LU:
    case REMAT_OP_CONSTANT:
    case REMAT_OP_ARG:
    case REMAT_OP_PROJ:
    case REMAT_OP_COUNT:
        REMAT_UNREACHABLE("jvp_rule: no derivative, or handled by the driver (jvp.c)");
    }
    c->t[v] = t;
    return st;
}
REMAT_EXHAUSTIVE_END

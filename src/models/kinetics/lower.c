/*
 * lower.c — a mechanism's right-hand side as graph ops (remat/kinetics.h).
 *
 * One walk over the expression DAG. Leaves are memoised by table index
 * (species, params, lets) and inner nodes by address, so a reaction's net
 * rate, which appears in the dy/dt of every species it changes, is emitted
 * once, and each let once. Species are read as (..., 1) slices of y so that
 * the same ops serve y of shape (S,) and batched (..., S): t is a scalar and
 * broadcasts, params are scalars (params (P,)) or, batched (..., P), (..., 1)
 * slices read like the species (one parameter set per batch entry: an
 * ensemble); dy/dt is the concatenation of the S per-species values along
 * the last axis.
 *
 * Nothing here recurses with the mechanism's size: a species' dy/dt is a
 * left-deep chain as long as its list of reactions (60,000 deep for a
 * species in 60,000 reactions), so chains are walked down their left spine
 * in a loop, and lets, which may read each other 50,000 deep, are lowered
 * in definition order before the rates, so a let's tree finds the lets it
 * reads already done. What recursion is left is bounded by the parser's
 * MECH_MAX_DEPTH per expression.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/assert.h"
#include "core/error.h"
#include "models/kinetics/gas_impl.h"
#include "models/kinetics/mechanism_impl.h"
#include "remat/kinetics.h"

typedef struct {
    const remat_expr *key;
    remat_val val;
} memo_slot;

typedef struct {
    remat_fn *f;
    const remat_mechanism *m;
    remat_dtype dt;
    remat_val t, y, params;
    remat_shape ys;        /* y's shape */
    remat_val *species;    /* [S] (..., 1) slices, REMAT_NONE until read */
    remat_val *param_vals; /* [P] scalars, or (..., 1) slices of batched params */
    remat_val *let_vals;   /* [nlets] */
    memo_slot *slots;      /* open addressing on node address */
    size_t nslot, used;
    const remat_expr **spine; /* the left spines being walked, innermost last */
    size_t nspine, capspine;
    remat_status st;       /* first error of the walk (beyond graph build errors) */
} lowering;

static size_t hash_ptr(const void *p)
{
    uintptr_t x = (uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return (size_t)x;
}

static remat_val *memo_find(lowering *L, const remat_expr *e)
{
    size_t i = hash_ptr(e) & (L->nslot - 1);
    while (L->slots[i].key && L->slots[i].key != e)
        i = (i + 1) & (L->nslot - 1);
    return L->slots[i].key ? &L->slots[i].val : NULL;
}

static int memo_put(lowering *L, const remat_expr *e, remat_val v)
{
    if (2 * (L->used + 1) > L->nslot) { /* keep the load under one half */
        size_t n = L->nslot * 2;
        memo_slot *s = rmi_calloc(n, sizeof *s);
        if (!s)
            return 0;
        for (size_t k = 0; k < L->nslot; k++) {
            if (!L->slots[k].key)
                continue;
            size_t i = hash_ptr(L->slots[k].key) & (n - 1);
            while (s[i].key)
                i = (i + 1) & (n - 1);
            s[i] = L->slots[k];
        }
        rmi_free(L->slots);
        L->slots = s;
        L->nslot = n;
    }
    size_t i = hash_ptr(e) & (L->nslot - 1);
    while (L->slots[i].key)
        i = (i + 1) & (L->nslot - 1);
    L->slots[i] = (memo_slot){e, v};
    L->used++;
    return 1;
}

/* The value of a subtree without species, params, lets or t, computed as
 * remat_mechanism_eval_rhs would; 0 if the subtree is not constant. */
static int fold(const remat_expr *e, double *v)
{
    double a = 0, b = 0;
    switch (e->kind) {
    case REMAT_EXPR_NUM:
    case REMAT_EXPR_CONST: *v = e->value; return 1;
    case REMAT_EXPR_SPECIES:
    case REMAT_EXPR_PARAM:
    case REMAT_EXPR_COND:
    case REMAT_EXPR_INDEP:
    case REMAT_EXPR_NET:
    case REMAT_EXPR_LET: return 0;
    default: break;
    }
    if (!fold(e->args[0], &a) || (e->nargs > 1 && !fold(e->args[1], &b)))
        return 0;
    switch (e->kind) {
    case REMAT_EXPR_NEG: *v = -a; return 1;
    case REMAT_EXPR_ADD: *v = a + b; return 1;
    case REMAT_EXPR_SUB: *v = a - b; return 1;
    case REMAT_EXPR_MUL: *v = a * b; return 1;
    case REMAT_EXPR_DIV: *v = a / b; return 1;
    case REMAT_EXPR_POW: *v = pow(a, b); return 1;
    case REMAT_EXPR_CALL:
        switch (e->fn) {
        case REMAT_FN_MIN: *v = fmin(a, b); return 1;
        case REMAT_FN_MAX: *v = fmax(a, b); return 1;
        case REMAT_FN_COUNT: break;
        default: *v = mech_fn_value(e->fn, a); return 1;
        }
        break;
    default: break;
    }
    REMAT_UNREACHABLE("bad expression node in a mechanism");
}

static remat_val cst(lowering *L, double v) { return remat_scalar(L->f, L->dt, v); }

static remat_val walk(lowering *L, const remat_expr *e);
static remat_val net_call(lowering *L, const remat_expr *e);

static remat_val species(lowering *L, int i)
{
    if (L->species[i] != REMAT_NONE)
        return L->species[i];
    int r = L->ys.rank;
    int64_t start[REMAT_MAX_RANK] = {0}, limit[REMAT_MAX_RANK];
    memcpy(limit, L->ys.dims, sizeof limit);
    start[r - 1] = i;
    limit[r - 1] = i + 1;
    return L->species[i] = remat_slice(L->f, L->y, start, limit, NULL);
}

static remat_val param(lowering *L, int i)
{
    if (L->param_vals[i] != REMAT_NONE)
        return L->param_vals[i];
    remat_shape ps = remat_val_shape(L->f, L->params);
    if (ps.rank == 1)
        return L->param_vals[i] = remat_index(L->f, L->params, i);
    int64_t start[REMAT_MAX_RANK] = {0}, limit[REMAT_MAX_RANK];
    memcpy(limit, ps.dims, sizeof limit);
    start[ps.rank - 1] = i;
    limit[ps.rank - 1] = i + 1;
    return L->param_vals[i] = remat_slice(L->f, L->params, start, limit, NULL);
}

static remat_val let(lowering *L, int i)
{
    /* lowered in order before the rates (remat_kinetics_rhs); this is the
     * same walk, for a let no rate was found to read */
    if (L->let_vals[i] == REMAT_NONE)
        L->let_vals[i] = walk(L, remat_mechanism_let_expr(L->m, i));
    return L->let_vals[i];
}

/* x^e: exact products for integer orders, as JAX lowers x**2 to integer_pow */
static remat_val power(lowering *L, const remat_expr *e)
{
    double p;
    const remat_expr *base = e->args[0], *ex = e->args[1];
    if (fold(ex, &p)) {
        remat_val x = walk(L, base);
        if (p == 1)
            return x;
        if (p == floor(p) && fabs(p) <= 64)
            return remat_integer_pow(L->f, x, (int)p);
        if (!isfinite(p)) {
            L->st = rmi_error(REMAT_ERR_VALUE, "kinetics: %s:%d:%d: exponent %g is not finite",
                              remat_mechanism_source(L->m), e->line, e->col, p);
            return REMAT_NONE;
        }
        return remat_pow(L->f, x, p);
    }
    double c;
    remat_val logx = fold(base, &c) ? cst(L, log(c)) : remat_log(L->f, walk(L, base));
    return remat_exp(L->f, remat_mul(L->f, walk(L, ex), logx));
}

static int is_chain(const remat_expr *e) { return e->kind >= REMAT_EXPR_NEG && e->kind <= REMAT_EXPR_DIV; }

/* One arithmetic node over its operands' values. */
static remat_val arith(remat_fn *f, const remat_expr *e, remat_val a, remat_val b)
{
    switch (e->kind) {
    case REMAT_EXPR_NEG: return remat_neg(f, a);
    case REMAT_EXPR_ADD: return remat_add(f, a, b);
    case REMAT_EXPR_SUB: return remat_sub(f, a, b);
    case REMAT_EXPR_MUL: return remat_mul(f, a, b);
    case REMAT_EXPR_DIV: return remat_div(f, a, b);
    default: REMAT_UNREACHABLE("not an arithmetic node");
    }
}

static void remember(lowering *L, const remat_expr *e, remat_val v)
{
    if (!memo_put(L, e, v) && L->st == REMAT_OK)
        L->st = rmi_error(REMAT_ERR_NOMEM, "kinetics: out of memory lowering %s", remat_mechanism_source(L->m));
}

/* e and the arithmetic nodes down its left operands, in a loop: the bottom
 * first, then each node up the spine over its right operand. */
static remat_val walk_spine(lowering *L, const remat_expr *e)
{
    size_t base = L->nspine;
    for (const remat_expr *x = e; is_chain(x) && !memo_find(L, x); x = x->args[0]) {
        if (L->nspine == L->capspine) {
            size_t cap = L->capspine ? 2 * L->capspine : 256;
            const remat_expr **v = rmi_realloc(L->spine, cap * sizeof *v);
            if (!v) {
                if (L->st == REMAT_OK)
                    L->st = rmi_error(REMAT_ERR_NOMEM, "kinetics: out of memory lowering %s",
                                      remat_mechanism_source(L->m));
                L->nspine = base;
                return REMAT_NONE;
            }
            L->spine = v;
            L->capspine = cap;
        }
        L->spine[L->nspine++] = x;
    }
    remat_val acc = walk(L, L->spine[L->nspine - 1]->args[0]);
    while (L->nspine > base) {
        const remat_expr *x = L->spine[--L->nspine];
        acc = arith(L->f, x, acc, x->nargs > 1 ? walk(L, x->args[1]) : REMAT_NONE);
        remember(L, x, acc);
    }
    return acc;
}

static remat_val walk(lowering *L, const remat_expr *e)
{
    switch (e->kind) {
    case REMAT_EXPR_NUM:
    case REMAT_EXPR_CONST: return cst(L, e->value);
    case REMAT_EXPR_SPECIES: return species(L, e->index);
    case REMAT_EXPR_PARAM: return param(L, e->index);
    case REMAT_EXPR_COND: return param(L, remat_mechanism_param_count(L->m) + e->index);
    case REMAT_EXPR_LET: return let(L, e->index);
    case REMAT_EXPR_INDEP:
        if (L->t == REMAT_NONE && L->st == REMAT_OK)
            L->st = rmi_error(REMAT_ERR_NULL,
                              "kinetics: %s:%d:%d: the rates read the independent variable '%s' but t is "
                              "REMAT_NONE",
                              remat_mechanism_source(L->m), e->line, e->col, remat_mechanism_indep_name(L->m));
        /* a placeholder, not REMAT_NONE: an op on REMAT_NONE would record its
         * own error on f over this one; L->st stops the lowering anyway */
        return L->t != REMAT_NONE ? L->t : cst(L, 0.0);
    default: break;
    }
    remat_val *hit = memo_find(L, e);
    if (hit)
        return *hit;
    if (is_chain(e))
        return walk_spine(L, e);
    remat_fn *f = L->f;
    remat_val v = REMAT_NONE;
    switch (e->kind) {
    case REMAT_EXPR_POW: v = power(L, e); break;
    case REMAT_EXPR_NET: v = net_call(L, e); break;
    case REMAT_EXPR_CALL: {
        remat_val a = walk(L, e->args[0]);
        switch (e->fn) {
        case REMAT_FN_EXP: v = remat_exp(f, a); break;
        case REMAT_FN_LOG: v = remat_log(f, a); break;
        case REMAT_FN_SQRT: v = remat_sqrt(f, a); break;
        case REMAT_FN_MIN: v = remat_min(f, a, walk(L, e->args[1])); break;
        case REMAT_FN_MAX: v = remat_max(f, a, walk(L, e->args[1])); break;
        case REMAT_FN_STEP: /* a constant of the comparison: no gradient flows to a */
            v = remat_select(f, remat_ge(f, a, cst(L, 0.0)), cst(L, 1.0), cst(L, 0.0));
            break;
        case REMAT_FN_TANH: v = remat_tanh(f, a); break;
        case REMAT_FN_SIN: v = remat_sin(f, a); break;
        case REMAT_FN_COS: v = remat_cos(f, a); break;
        case REMAT_FN_LOG1P: v = remat_log1p(f, a); break;
        case REMAT_FN_EXPM1: v = remat_expm1(f, a); break;
        case REMAT_FN_LOGISTIC: v = remat_logistic(f, a); break;
        case REMAT_FN_ERF: v = remat_erf(f, a); break;
        case REMAT_FN_ABS: /* the select carries the derivative: +1 where a >= 0, else -1 */
            v = remat_select(f, remat_ge(f, a, cst(L, 0.0)), a, remat_neg(f, a));
            break;
        case REMAT_FN_LOG10: v = remat_mul(f, remat_log(f, a), cst(L, 1.0 / M_LN10)); break;
        case REMAT_FN_COUNT: REMAT_UNREACHABLE("bad function in a mechanism");
        }
        break;
    }
    default: REMAT_UNREACHABLE("bad expression node in a mechanism");
    }
    remember(L, e, v);
    return v;
}

/* A network's call: its inputs side by side (..., nin), the network, the
 * output's column (..., 1), as a species' value is shaped. */
static remat_val net_call(lowering *L, const remat_expr *e)
{
    const mech_net *n = &L->m->nets[e->index];
    remat_shape one = L->ys;
    one.dims[one.rank - 1] = 1;
    remat_val in[MECH_NET_MAX_IN];
    for (int i = 0; i < e->nargs; i++) {
        in[i] = walk(L, e->inputs[i]);
        remat_shape s = remat_val_shape(L->f, in[i]);
        if (!remat_shape_equal(&one, &s))
            in[i] = remat_broadcast_to(L->f, in[i], one.rank, one.dims);
    }
    remat_val x = e->nargs == 1 ? in[0] : remat_concatenate(L->f, e->nargs, in, one.rank - 1), y;
    remat_status st = mech_net_lower(L->f, n, x, L->params, &y);
    if (st != REMAT_OK) {
        if (L->st == REMAT_OK)
            L->st = st;
        return cst(L, 0.0);
    }
    if (n->nout == 1)
        return y;
    int64_t start[REMAT_MAX_RANK] = {0}, limit[REMAT_MAX_RANK];
    memcpy(limit, one.dims, sizeof limit);
    start[one.rank - 1] = e->output;
    limit[one.rank - 1] = e->output + 1;
    return remat_slice(L->f, y, start, limit, NULL);
}

static remat_status check_inputs(remat_fn *f, const remat_mechanism *m, remat_val t, remat_val y, remat_val params)
{
    char a[96], b[96];
    if (!f || !m)
        return rmi_error(REMAT_ERR_NULL, "kinetics: %s is NULL", !f ? "the function" : "the mechanism");
    if (remat_fn_status(f) != REMAT_OK)
        return rmi_error(remat_fn_status(f), "kinetics: function '%s' already has a build error: %s",
                         remat_fn_name(f), remat_fn_error(f));
    int S = remat_mechanism_species_count(m), P = remat_mechanism_input_count(m);
    const char *src = remat_mechanism_source(m);
    if (y < 0 || y >= remat_fn_num_nodes(f))
        return rmi_error(REMAT_ERR_ARG, "kinetics: y is not a value of function '%s'", remat_fn_name(f));
    remat_dtype dt = remat_val_dtype(f, y);
    remat_shape ys = remat_val_shape(f, y);
    if (ys.rank < 1 || ys.dims[ys.rank - 1] != S)
        return rmi_error(REMAT_ERR_SHAPE, "kinetics: y is %s but mechanism %s has %d species: expected (%d,) or "
                         "(..., %d)", remat_shape_format(dt, &ys, a, sizeof a), src, S, S, S);
    if (params == REMAT_NONE) {
        if (P > 0)
            return rmi_error(REMAT_ERR_NULL, "kinetics: params is REMAT_NONE but mechanism %s has %d parameters "
                             "and conditions", src, P);
    } else {
        if (params < 0 || params >= remat_fn_num_nodes(f))
            return rmi_error(REMAT_ERR_ARG, "kinetics: params is not a value of function '%s'", remat_fn_name(f));
        remat_shape ps = remat_val_shape(f, params);
        remat_dtype pd = remat_val_dtype(f, params);
        /* (P,) shared by the batch, or one set per batch entry: y's batch axes then (P,) */
        int batched = ps.rank > 1 && ps.rank == ys.rank &&
                      !memcmp(ps.dims, ys.dims, sizeof ps.dims[0] * (size_t)(ys.rank - 1));
        if ((ps.rank != 1 && !batched) || ps.dims[ps.rank - 1] != P)
            return rmi_error(REMAT_ERR_SHAPE, "kinetics: params is %s but mechanism %s has %d parameters and "
                             "conditions and y "
                             "is %s: expected (%d,) or y's batch axes then %d",
                             remat_shape_format(pd, &ps, a, sizeof a), src, P,
                             remat_shape_format(dt, &ys, b, sizeof b), P, P);
        if (pd != dt)
            return rmi_error(REMAT_ERR_DTYPE, "kinetics: params is %s but y is %s", remat_dtype_name(pd),
                             remat_dtype_name(dt));
    }
    if (t != REMAT_NONE) {
        if (t < 0 || t >= remat_fn_num_nodes(f))
            return rmi_error(REMAT_ERR_ARG, "kinetics: t is not a value of function '%s'", remat_fn_name(f));
        remat_shape ts = remat_val_shape(f, t);
        remat_dtype td = remat_val_dtype(f, t);
        if (ts.rank != 0)
            return rmi_error(REMAT_ERR_SHAPE, "kinetics: t is %s, expected a scalar",
                             remat_shape_format(td, &ts, a, sizeof a));
        if (td != dt)
            return rmi_error(REMAT_ERR_DTYPE, "kinetics: t is %s but y is %s", remat_dtype_name(td),
                             remat_dtype_name(dt));
    }
    return REMAT_OK;
}

remat_status remat_kinetics_rhs(remat_fn *f, const remat_mechanism *m, remat_val t, remat_val y, remat_val params,
                                remat_val *dydt)
{
    if (!dydt)
        return rmi_error(REMAT_ERR_NULL, "kinetics: dydt is NULL");
    *dydt = REMAT_NONE;
    remat_status st = check_inputs(f, m, t, y, params);
    if (st != REMAT_OK)
        return st;
    /* a gas mechanism with one parameter set: its vector form (gas_lower.c) */
    if (m->gas_plan && m->gas_plan->vec && remat_val_dtype(f, y) == REMAT_F64 && params != REMAT_NONE &&
        remat_val_shape(f, params).rank == 1)
        return gas_lower_rhs(f, m->gas_plan, y, params, dydt);
    int S = remat_mechanism_species_count(m), P = remat_mechanism_input_count(m),
        NL = remat_mechanism_let_count(m);
    lowering L = {.f = f, .m = m, .dt = remat_val_dtype(f, y), .t = t, .y = y, .params = params,
                  .ys = remat_val_shape(f, y), .nslot = 64};
    L.species = rmi_malloc(sizeof *L.species * (size_t)(S + 1));
    L.param_vals = rmi_malloc(sizeof *L.param_vals * (size_t)(P + 1));
    L.let_vals = rmi_malloc(sizeof *L.let_vals * (size_t)(NL + 1));
    L.slots = rmi_calloc(L.nslot, sizeof *L.slots);
    remat_val *out = rmi_malloc(sizeof *out * (size_t)(S + 1));
    unsigned char *used = NULL;
    if (!L.species || !L.param_vals || !L.let_vals || !L.slots || !out) {
        st = rmi_error(REMAT_ERR_NOMEM, "kinetics: out of memory lowering %s", remat_mechanism_source(m));
        goto done;
    }
    for (int i = 0; i < S; i++)
        L.species[i] = REMAT_NONE;
    for (int i = 0; i < P; i++)
        L.param_vals[i] = REMAT_NONE;
    for (int i = 0; i < NL; i++)
        L.let_vals[i] = REMAT_NONE;
    int reads_t;
    if (!(used = rmi_calloc((size_t)NL + 1, 1)) || !mech_reach(m, used, &reads_t)) {
        st = rmi_error(REMAT_ERR_NOMEM, "kinetics: out of memory lowering %s", remat_mechanism_source(m));
        goto done;
    }
    /* a let reads only lets defined before it: in order, none nests */
    for (int i = 0; i < NL && L.st == REMAT_OK; i++)
        if (used[i])
            L.let_vals[i] = walk(&L, remat_mechanism_let_expr(m, i));

    /* each species' value as (..., 1), like its slice of y */
    remat_shape one = L.ys;
    one.dims[one.rank - 1] = 1;
    for (int i = 0; i < S && L.st == REMAT_OK; i++) {
        out[i] = walk(&L, remat_mechanism_rhs(m, i));
        if (out[i] == REMAT_NONE)
            continue;
        remat_shape s = remat_val_shape(f, out[i]);
        if (!remat_shape_equal(&one, &s)) /* a rate of constants and params only */
            out[i] = remat_broadcast_to(f, out[i], one.rank, one.dims);
    }
    if (L.st != REMAT_OK) {
        st = L.st;
        goto done;
    }
    remat_val r = remat_concatenate(f, S, out, one.rank - 1);
    if (remat_fn_status(f) != REMAT_OK) {
        st = rmi_error(remat_fn_status(f), "kinetics: lowering %s: %s", remat_mechanism_source(m),
                       remat_fn_error(f));
        goto done;
    }
    *dydt = r;
done:
    rmi_free(L.species);
    rmi_free(L.param_vals);
    rmi_free(L.let_vals);
    rmi_free(L.slots);
    rmi_free(L.spine);
    rmi_free(used);
    rmi_free(out);
    return st;
}

remat_fn *remat_kinetics_rhs_fn(const remat_mechanism *m, remat_dtype dt)
{
    if (!m) {
        rmi_error(REMAT_ERR_NULL, "kinetics: the mechanism is NULL");
        return NULL;
    }
    int S = remat_mechanism_species_count(m), P = remat_mechanism_input_count(m);
    remat_fn *f = remat_fn_new("rhs");
    if (!f) {
        rmi_error(REMAT_ERR_NOMEM, "kinetics: out of memory");
        return NULL;
    }
    remat_val t = remat_arg(f, "t", dt, 0, NULL);
    remat_val y = remat_arg(f, "y", dt, 1, ((int64_t[]){S}));
    remat_val p = remat_arg(f, "params", dt, 1, ((int64_t[]){P}));
    remat_val dydt;
    if (remat_fn_status(f) != REMAT_OK) {
        rmi_error(remat_fn_status(f), "kinetics: %s", remat_fn_error(f));
        goto fail;
    }
    if (remat_kinetics_rhs(f, m, t, y, p, &dydt) != REMAT_OK)
        goto fail;
    remat_fn_output(f, dydt);
    return f;
fail:
    remat_fn_free(f);
    return NULL;
}

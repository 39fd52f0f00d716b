/*
 * eval.c — the double evaluator of expression trees (the reference a graph
 * lowering is tested against), and printing trees back as text.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/alloc.h"
#include "core/assert.h"
#include "core/error.h"
#include "models/kinetics/mechanism_impl.h"

static double arith(const remat_expr *e, double a, double b)
{
    switch (e->kind) {
    case REMAT_EXPR_NEG: return -a;
    case REMAT_EXPR_ADD: return a + b;
    case REMAT_EXPR_SUB: return a - b;
    case REMAT_EXPR_MUL: return a * b;
    case REMAT_EXPR_DIV: return a / b;
    default: REMAT_UNREACHABLE("not an arithmetic node");
    }
}

static double note(const mech_env *env, const remat_expr *e, double v, double a, double b)
{
    if (env->bad && !env->bad->e && !isfinite(v) && isfinite(a) && isfinite(b))
        *env->bad = (mech_culprit){e, a, b, v};
    return v;
}

static int is_chain(const remat_expr *e) { return e->kind >= REMAT_EXPR_NEG && e->kind <= REMAT_EXPR_DIV; }

/* e and the arithmetic nodes down its left operands, bottom first. */
static double eval_spine(const remat_expr *e, const mech_env *env)
{
    mech_spine *sp = env->spine;
    size_t base = sp->n;
    for (const remat_expr *x = e; is_chain(x); x = x->args[0]) {
        if (sp->n == sp->cap) {
            size_t cap = sp->cap ? 2 * sp->cap : 256;
            const remat_expr **v = rmi_realloc(sp->v, cap * sizeof *v);
            if (!v) {
                sp->oom = 1;
                sp->n = base;
                return NAN;
            }
            sp->v = v;
            sp->cap = cap;
        }
        sp->v[sp->n++] = x;
    }
    double acc = mech_eval(sp->v[sp->n - 1]->args[0], env);
    while (sp->n > base) {
        const remat_expr *x = sp->v[--sp->n];
        double b = x->nargs > 1 ? mech_eval(x->args[1], env) : 0.0;
        acc = note(env, x, arith(x, acc, b), acc, b);
    }
    return acc;
}

double mech_fn_value(remat_expr_fn fn, double a)
{
    switch (fn) {
    case REMAT_FN_EXP: return exp(a);
    case REMAT_FN_LOG: return log(a);
    case REMAT_FN_SQRT: return sqrt(a);
    case REMAT_FN_STEP: return a >= 0 ? 1.0 : 0.0;
    case REMAT_FN_TANH: return tanh(a);
    case REMAT_FN_SIN: return sin(a);
    case REMAT_FN_COS: return cos(a);
    case REMAT_FN_LOG1P: return log1p(a);
    case REMAT_FN_EXPM1: return expm1(a);
    case REMAT_FN_LOGISTIC: return 1.0 / (1.0 + exp(-a));
    case REMAT_FN_ERF: return erf(a);
    case REMAT_FN_ABS: return fabs(a);
    case REMAT_FN_LOG10: return log10(a);
    case REMAT_FN_MIN:
    case REMAT_FN_MAX:
    case REMAT_FN_COUNT: break;
    }
    REMAT_UNREACHABLE("bad one-argument function in expression");
}

double mech_eval(const remat_expr *e, const mech_env *env)
{
    switch (e->kind) {
    case REMAT_EXPR_NUM:
    case REMAT_EXPR_CONST: return e->value;
    case REMAT_EXPR_SPECIES: REMAT_ASSERT(env->y); return env->y[e->index];
    case REMAT_EXPR_PARAM: REMAT_ASSERT(env->params); return env->params[e->index];
    case REMAT_EXPR_COND: REMAT_ASSERT(env->conds); return env->conds[e->index];
    case REMAT_EXPR_LET: REMAT_ASSERT(env->lets); return env->lets[e->index];
    case REMAT_EXPR_INDEP: return env->t;
    case REMAT_EXPR_NEG:
    case REMAT_EXPR_ADD:
    case REMAT_EXPR_SUB:
    case REMAT_EXPR_MUL:
    case REMAT_EXPR_DIV: {
        if (env->spine)
            return eval_spine(e, env);
        double a = mech_eval(e->args[0], env), b = e->nargs > 1 ? mech_eval(e->args[1], env) : 0.0;
        return note(env, e, arith(e, a, b), a, b);
    }
    case REMAT_EXPR_POW: {
        double a = mech_eval(e->args[0], env), b = mech_eval(e->args[1], env);
        return note(env, e, pow(a, b), a, b);
    }
    case REMAT_EXPR_CALL: {
        double a = mech_eval(e->args[0], env), b = e->nargs > 1 ? mech_eval(e->args[1], env) : 0.0;
        switch (e->fn) {
        case REMAT_FN_EXP: return note(env, e, exp(a), a, b);
        case REMAT_FN_LOG: return note(env, e, log(a), a, b);
        case REMAT_FN_SQRT: return note(env, e, sqrt(a), a, b);
        case REMAT_FN_MIN: return note(env, e, fmin(a, b), a, b);
        case REMAT_FN_MAX: return note(env, e, fmax(a, b), a, b);
        case REMAT_FN_STEP: return a >= 0 ? 1.0 : 0.0;
        default: return note(env, e, mech_fn_value(e->fn, a), a, b);
        }
    }
    case REMAT_EXPR_NET: {
        REMAT_ASSERT(env->nets && env->params);
        const mech_net *n = &env->nets[e->index];
        double in[MECH_NET_MAX_IN];
        for (int i = 0; i < e->nargs; i++)
            in[i] = mech_eval(e->inputs[i], env);
        return mech_net_eval(n, e->output, in, env->params);
    }
    case REMAT_EXPR_COUNT: break;
    }
    REMAT_UNREACHABLE("unresolved or bad expression node");
}

/* dy/dt into dydt; bad, when set, gets the first node that breaks. */
static remat_status eval_all(const remat_mechanism *m, double t, const double y[], const double params[],
                             double dydt[], mech_culprit *bad, const char *fn)
{
    if (!m || !y || !dydt || (!params && m->nparams + m->nconds > 0))
        return rmi_error(REMAT_ERR_NULL, "%s: %s is NULL", fn,
                         !m ? "the mechanism" : !y ? "y" : !dydt ? "dydt" : "params");
    double small[64];
    double *lets = small;
    if (m->nlets > (int)(sizeof small / sizeof small[0])) {
        lets = rmi_malloc((size_t)m->nlets * sizeof *lets);
        if (!lets)
            return rmi_error(REMAT_ERR_NOMEM, "%s: out of memory for %d lets", fn, m->nlets);
    }
    mech_spine spine = {0};
    const mech_env env = {.t = t, .y = y, .params = params, .conds = params ? params + m->nparams : NULL, .nets = m->nets,
                          .lets = lets, .spine = &spine, .bad = bad};
    /* let i refers only to lets < i (definitions precede uses) */
    for (int i = 0; i < m->nlets; i++)
        lets[i] = mech_eval(m->lets[i], &env);
    for (int i = 0; i < m->nspecies; i++)
        dydt[i] = mech_eval(m->rhs[i], &env);
    if (lets != small)
        rmi_free(lets);
    rmi_free(spine.v);
    if (spine.oom)
        return rmi_error(REMAT_ERR_NOMEM, "%s: out of memory evaluating %s", fn, m->source);
    return REMAT_OK;
}

remat_status remat_mechanism_eval_rhs(const remat_mechanism *m, double t, const double y[],
                                      const double params[], double dydt[])
{
    return eval_all(m, t, y, params, dydt, NULL, "remat_mechanism_eval_rhs");
}

/* What an IEEE operation on finite operands a, b that gave v did wrong. */
static const char *why_not_finite(const mech_culprit *c, char *buf, size_t cap)
{
    const remat_expr *e = c->e;
    if (e->kind == REMAT_EXPR_DIV && c->b == 0)
        return "division by zero";
    if (e->kind == REMAT_EXPR_CALL && e->fn == REMAT_FN_LOG && c->a <= 0)
        return c->a == 0 ? "log of 0" : (snprintf(buf, cap, "log of a negative number (%g)", c->a), buf);
    if (e->kind == REMAT_EXPR_CALL && e->fn == REMAT_FN_SQRT && c->a < 0)
        return snprintf(buf, cap, "sqrt of a negative number (%g)", c->a), buf;
    if (e->kind == REMAT_EXPR_CALL && e->fn == REMAT_FN_LOG10 && c->a <= 0)
        return c->a == 0 ? "log10 of 0" : (snprintf(buf, cap, "log10 of a negative number (%g)", c->a), buf);
    if (e->kind == REMAT_EXPR_CALL && e->fn == REMAT_FN_LOG1P && c->a <= -1)
        return c->a == -1 ? "log1p of -1" : (snprintf(buf, cap, "log1p of a number below -1 (%g)", c->a), buf);
    if (e->kind == REMAT_EXPR_POW && c->a == 0 && c->b < 0)
        return "0 to a negative power";
    if (e->kind == REMAT_EXPR_POW && c->a < 0 && c->b != floor(c->b))
        return snprintf(buf, cap, "a negative number (%g) to a fractional power (%g)", c->a, c->b), buf;
    if (isinf(c->v))
        return "overflow (beyond the largest double, 1.8e308)";
    return "not a number";
}

remat_status remat_mechanism_check_rates(const remat_mechanism *m, double t, const double y[],
                                         const double params[])
{
    const char *fn = "remat_mechanism_check_rates";
    if (!m)
        return rmi_error(REMAT_ERR_NULL, "%s: the mechanism is NULL", fn);
    double *dydt = rmi_malloc(sizeof *dydt * (size_t)(m->nspecies + 1));
    if (!dydt)
        return rmi_error(REMAT_ERR_NOMEM, "%s: out of memory", fn);
    mech_culprit bad = {0};
    remat_status st = eval_all(m, t, y, params, dydt, &bad, fn);
    int s = 0;
    while (st == REMAT_OK && s < m->nspecies && isfinite(dydt[s]))
        s++;
    if (st == REMAT_OK && bad.e) {
        char text[120], why[96];
        remat_expr_format(bad.e, text, sizeof text);
        st = rmi_error(REMAT_ERR_NUMERIC, "%s:%d:%d: the rate expression '%s' is %s at %s = %g: %s", m->source,
                       bad.e->line, bad.e->col, text, isnan(bad.v) ? "nan" : bad.v > 0 ? "inf" : "-inf", m->indep, t,
                       why_not_finite(&bad, why, sizeof why));
    } else if (st == REMAT_OK && s < m->nspecies) {
        st = rmi_error(REMAT_ERR_NUMERIC, "%s: d%s/d%s is %g at %s = %g (a concentration or parameter is not "
                       "finite)", m->source, m->species[s], m->indep, dydt[s], m->indep, t);
    }
    rmi_free(dydt);
    return st;
}

/* ---- names and printing ---- */

static const char *const kind_names[] = {
    [REMAT_EXPR_NUM] = "num", [REMAT_EXPR_SPECIES] = "species", [REMAT_EXPR_PARAM] = "param",
    [REMAT_EXPR_CONST] = "const", [REMAT_EXPR_INDEP] = "indep", [REMAT_EXPR_LET] = "let",
    [REMAT_EXPR_NEG] = "neg", [REMAT_EXPR_ADD] = "add", [REMAT_EXPR_SUB] = "sub",
    [REMAT_EXPR_MUL] = "mul", [REMAT_EXPR_DIV] = "div", [REMAT_EXPR_POW] = "pow",
    [REMAT_EXPR_CALL] = "call", [REMAT_EXPR_COND] = "cond", [REMAT_EXPR_NET] = "net",
};
_Static_assert(sizeof kind_names / sizeof kind_names[0] == REMAT_EXPR_COUNT,
               "kind_names out of step with remat_expr_kind");

static const char *const fn_names[] = {
    [REMAT_FN_EXP] = "exp", [REMAT_FN_LOG] = "log", [REMAT_FN_SQRT] = "sqrt",
    [REMAT_FN_MIN] = "min", [REMAT_FN_MAX] = "max", [REMAT_FN_STEP] = "step",
    [REMAT_FN_TANH] = "tanh", [REMAT_FN_SIN] = "sin", [REMAT_FN_COS] = "cos",
    [REMAT_FN_LOG1P] = "log1p", [REMAT_FN_EXPM1] = "expm1", [REMAT_FN_LOGISTIC] = "logistic",
    [REMAT_FN_ERF] = "erf", [REMAT_FN_ABS] = "abs", [REMAT_FN_LOG10] = "log10",
};
_Static_assert(sizeof fn_names / sizeof fn_names[0] == REMAT_FN_COUNT,
               "fn_names out of step with remat_expr_fn");

const char *remat_expr_kind_name(remat_expr_kind kind)
{
    return (unsigned)kind < REMAT_EXPR_COUNT ? kind_names[kind] : "?";
}

const char *remat_expr_fn_name(remat_expr_fn fn)
{
    return (unsigned)fn < REMAT_FN_COUNT ? fn_names[fn] : "?";
}

typedef struct {
    char *buf;
    int len, pos;
} writer;

static void put(writer *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(writer *w, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int room = w->pos < w->len ? w->len - w->pos : 0;
    int n = vsnprintf(room ? w->buf + w->pos : NULL, (size_t)room, fmt, ap);
    va_end(ap);
    if (n > 0)
        w->pos += n;
}

/* Binding strength: sums 1, products 2, signs 3, '^' 4, leaves 5. */
static int prec(const remat_expr *e)
{
    switch (e->kind) {
    case REMAT_EXPR_ADD:
    case REMAT_EXPR_SUB: return 1;
    case REMAT_EXPR_MUL:
    case REMAT_EXPR_DIV: return 2;
    case REMAT_EXPR_NEG: return 3;
    case REMAT_EXPR_POW: return 4;
    case REMAT_EXPR_NUM: return signbit(e->value) ? 3 : 5;
    default: return 5;
    }
}

/* Left operands bind at the operator's level, right ones one higher (so
 * a - (b - c) keeps its parentheses); '^' is right-associative. */
#define FORMAT_MAX_DEPTH 4096 /* deeper (a dy/dt over thousands of reactions) prints "..." */

static void format_expr(writer *w, const remat_expr *e, int min_prec, int depth)
{
    if (depth > FORMAT_MAX_DEPTH) {
        put(w, "...");
        return;
    }
    static const char *const infix[REMAT_EXPR_COUNT] = {
        [REMAT_EXPR_ADD] = " + ", [REMAT_EXPR_SUB] = " - ", [REMAT_EXPR_MUL] = " * ",
        [REMAT_EXPR_DIV] = " / ", [REMAT_EXPR_POW] = "^",
    };
    int pr = prec(e), paren = pr < min_prec;
    if (paren)
        put(w, "(");
    switch (e->kind) {
    case REMAT_EXPR_NUM: {
        char b[32];
        snprintf(b, sizeof b, "%.15g", e->value);
        if (strtod(b, NULL) != e->value)
            snprintf(b, sizeof b, "%.17g", e->value);
        put(w, "%s", b);
        break;
    }
    case REMAT_EXPR_NEG:
        put(w, "-");
        format_expr(w, e->args[0], 3, depth + 1);
        break;
    case REMAT_EXPR_ADD:
    case REMAT_EXPR_SUB:
    case REMAT_EXPR_MUL:
    case REMAT_EXPR_DIV:
        format_expr(w, e->args[0], pr, depth + 1);
        put(w, "%s", infix[e->kind]);
        format_expr(w, e->args[1], pr + 1, depth + 1);
        break;
    case REMAT_EXPR_POW:
        format_expr(w, e->args[0], 5, depth + 1);
        put(w, "^");
        format_expr(w, e->args[1], 3, depth + 1);
        break;
    case REMAT_EXPR_CALL:
        put(w, "%s(", remat_expr_fn_name(e->fn));
        for (int i = 0; i < e->nargs; i++) {
            if (i)
                put(w, ", ");
            format_expr(w, e->args[i], 0, depth + 1);
        }
        put(w, ")");
        break;
    case REMAT_EXPR_NET:
        put(w, "%s", e->name ? e->name : "?");
        if (e->value > 1) /* several outputs */
            put(w, "[%d]", e->output);
        put(w, "(");
        for (int i = 0; i < e->nargs; i++) {
            if (i)
                put(w, ", ");
            format_expr(w, e->inputs[i], 0, depth + 1);
        }
        put(w, ")");
        break;
    default: put(w, "%s", e->name ? e->name : "?"); break;
    }
    if (paren)
        put(w, ")");
}

int remat_expr_format(const remat_expr *e, char *buf, int len)
{
    if (len > 0)
        REMAT_NULL_RETURN(buf, -1);
    writer w = {.buf = buf, .len = len > 0 ? len : 0};
    if (w.len)
        buf[0] = '\0';
    REMAT_NULL_RETURN(e, -1);
    format_expr(&w, e, 0, 0);
    return w.pos;
}

/*
 * control.c — control profiles: a function of the independent variable on
 * N equal intervals whose values are parameters (remat/mechanism.h,
 * "Control profiles"):
 *
 *   control T(z) piecewise 8 over [0, 10] in [300, 420] start 360
 *   control T(z) piecewise linear 8 over [0, 10] in [300, 420]
 *
 * Pass 1 reads the line and declares the name; pass 2 evaluates the numbers,
 * adds the parameters "T[0]".. (after the declared ones) and builds the
 * profile's tree, which becomes a let: every walker (the evaluator, the
 * lowering, reach.c) reads it as it reads any let.
 *
 * Piecewise constant, z_i = z0 + i h, h = (z1 - z0) / N, values v_0..v_{N-1}:
 *   T(z) = v_0 (1 - s_1) + sum_{0<i<N-1} v_i (s_i - s_{i+1}) + v_{N-1} s_{N-1}
 * with s_i = step(z - z_i) (1 for z >= z_i): exactly v_i on [z_i, z_{i+1}),
 * v_0 before z0 and v_{N-1} after z1. Piecewise linear, knots z_0..z_N,
 * values v_0..v_N:
 *   T(z) = v_0 (1 - r_0) + sum_{0<i<N} v_i (r_{i-1} - r_i) + v_N r_{N-1}
 * with r_i = min(max((z - z_i) / h, 0), 1), the covered fraction of interval
 * i. Both are linear in the values, so dT/dv_i is the weight of v_i.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "models/kinetics/mechanism_impl.h"

typedef struct mech_control {
    int name;                       /* name table index */
    int linear;                     /* 0: piecewise constant, 1: piecewise linear */
    int n;                          /* intervals */
    int param0;                     /* its first value's parameter, counted from the first control value */
    mech_token axis;                /* the name in parentheses */
    remat_expr *span[2], *bound[2]; /* over [z0, z1], in [lo, hi] */
    remat_expr *start;              /* NULL: the middle of [lo, hi] */
    int span_line, span_col, bound_line, bound_col, start_line, start_col, n_line, n_col;
} mech_control;

static remat_status expect(mech_parser *p, mech_tok_kind kind, const char *what, const char *after)
{
    char sb[64];
    if (p->tok.kind != kind)
        return mech_fail(p, p->tok.line, p->tok.col, "expected %s %s, got %s", what, after,
                         mech_tok_show(&p->tok, sb, sizeof sb));
    return mech_advance(p);
}

/* "[" cexpr "," cexpr "]" after the word kw ("over", "in") */
static remat_status pair(mech_parser *p, const char *kw, remat_expr **out, int *line, int *col)
{
    char sb[64];
    if (!mech_tok_is(&p->tok, kw))
        return mech_fail(p, p->tok.line, p->tok.col, "expected '%s [a, b]' in the control profile, got %s", kw,
                         mech_tok_show(&p->tok, sb, sizeof sb));
    MECH_TRY(mech_advance(p));
    *line = p->tok.line;
    *col = p->tok.col;
    MECH_TRY(expect(p, TOK_LBRACK, "'['", kw[0] == 'o' ? "after 'over'" : "after 'in'"));
    MECH_TRY(mech_parse_expr(p, &out[0]));
    MECH_TRY(expect(p, TOK_COMMA, "','", "between the two numbers"));
    MECH_TRY(mech_parse_expr(p, &out[1]));
    return expect(p, TOK_RBRACK, "']'", "after the two numbers");
}

remat_status mech_parse_control(mech_parser *p)
{
    char sb[64];
    mech_token kw = p->tok;
    MECH_TRY(mech_advance(p));
    mech_token name = p->tok; /* a NAME: parse_line looked */
    MECH_TRY(mech_declare(p, NAME_CONTROL, &name));
    mech_stmt *s = mech_new_stmt(p, STMT_CONTROL, &kw);
    mech_control *c = s ? rmi_arena_alloc(&p->m->arena, sizeof *c) : NULL;
    if (!c)
        return mech_nomem(p);
    memset(c, 0, sizeof *c);
    s->control = c;
    s->name = c->name = mech_names_find(&p->names, name.text, (size_t)name.len);
    MECH_TRY(mech_advance(p));
    MECH_TRY(expect(p, TOK_LPAREN, "'('", "after the profile's name (write e.g. 'control T(z) ...')"));
    if (p->tok.kind != TOK_NAME)
        return mech_fail(p, p->tok.line, p->tok.col, "expected the independent variable's name in '%.*s(...)', got %s",
                         name.len, name.text, mech_tok_show(&p->tok, sb, sizeof sb));
    c->axis = p->tok;
    MECH_TRY(mech_advance(p));
    MECH_TRY(expect(p, TOK_RPAREN, "')'", "after the independent variable"));
    if (!mech_tok_is(&p->tok, "piecewise"))
        return mech_fail(p, p->tok.line, p->tok.col, "expected 'piecewise' after '%.*s(%.*s)', got %s", name.len,
                         name.text, c->axis.len, c->axis.text, mech_tok_show(&p->tok, sb, sizeof sb));
    MECH_TRY(mech_advance(p));
    if (mech_tok_is(&p->tok, "linear") || mech_tok_is(&p->tok, "constant")) {
        c->linear = mech_tok_is(&p->tok, "linear");
        MECH_TRY(mech_advance(p));
    }
    c->n_line = p->tok.line;
    c->n_col = p->tok.col;
    if (p->tok.kind != TOK_NUM)
        return mech_fail(p, p->tok.line, p->tok.col, "expected the number of intervals after 'piecewise', got %s",
                         mech_tok_show(&p->tok, sb, sizeof sb));
    double n = p->tok.num;
    if (n != floor(n))
        return mech_fail(p, c->n_line, c->n_col, "the number of intervals %s is not an integer",
                         mech_tok_show(&p->tok, sb, sizeof sb));
    if (n < 1)
        return mech_fail(p, c->n_line, c->n_col, "control profile '%.*s' has %s intervals: it needs at least one",
                         name.len, name.text, mech_tok_show(&p->tok, sb, sizeof sb));
    if (n > MECH_MAX_CONTROL)
        return mech_fail(p, c->n_line, c->n_col, "control profile '%.*s' has %s intervals: at most %d are allowed",
                         name.len, name.text, mech_tok_show(&p->tok, sb, sizeof sb), MECH_MAX_CONTROL);
    c->n = (int)n;
    c->param0 = p->control_params;
    p->control_params += c->n + c->linear;
    MECH_TRY(mech_advance(p));
    MECH_TRY(pair(p, "over", c->span, &c->span_line, &c->span_col));
    MECH_TRY(pair(p, "in", c->bound, &c->bound_line, &c->bound_col));
    if (mech_tok_is(&p->tok, "start")) {
        MECH_TRY(mech_advance(p));
        c->start_line = p->tok.line;
        c->start_col = p->tok.col;
        MECH_TRY(mech_parse_expr(p, &c->start));
    }
    return mech_expect_end(p, c->start ? "the start value" : "the bounds (or 'start v')");
}

/* ---- pass 2 ---- */

typedef struct {
    mech_parser *p;
    int line, col;
    remat_status st;
} builder;

static remat_expr *node(builder *b, remat_expr_kind kind, const remat_expr *x, const remat_expr *y)
{
    remat_expr *e = b->st == REMAT_OK ? mech_node(&b->p->m->arena, kind, b->line, b->col) : NULL;
    if (!e) {
        if (b->st == REMAT_OK)
            b->st = mech_nomem(b->p);
        return NULL;
    }
    e->nargs = x ? (y ? 2 : 1) : 0;
    e->args[0] = x;
    e->args[1] = y;
    return e;
}

static remat_expr *num(builder *b, double v)
{
    remat_expr *e = node(b, REMAT_EXPR_NUM, NULL, NULL);
    if (e)
        e->value = v;
    return e;
}

static remat_expr *call(builder *b, remat_expr_fn fn, const remat_expr *x, const remat_expr *y)
{
    remat_expr *e = node(b, REMAT_EXPR_CALL, x, y);
    if (e) {
        e->fn = fn;
        e->name = remat_expr_fn_name(fn);
    }
    return e;
}

/* v * w, added to acc (acc NULL: the first term) */
static remat_expr *term(builder *b, remat_expr *acc, const remat_expr *v, const remat_expr *w)
{
    remat_expr *t = node(b, REMAT_EXPR_MUL, v, w);
    return acc ? node(b, REMAT_EXPR_ADD, acc, t) : t;
}

/* The weights of the values (the file's comment): s_i or r_i at knot i. */
static remat_expr *ramp(builder *b, const mech_control *c, const remat_expr *z, double zi, double h)
{
    remat_expr *d = node(b, REMAT_EXPR_SUB, z, num(b, zi));
    if (!c->linear)
        return call(b, REMAT_FN_STEP, d, NULL);
    return call(b, REMAT_FN_MIN, call(b, REMAT_FN_MAX, node(b, REMAT_EXPR_DIV, d, num(b, h)), num(b, 0.0)),
                num(b, 1.0));
}

static remat_expr *profile(builder *b, const mech_control *c, remat_expr *const *v, double z0, double h)
{
    int nv = c->n + c->linear;
    if (nv == 1)
        return (remat_expr *)v[0];
    remat_expr *z = node(b, REMAT_EXPR_INDEP, NULL, NULL);
    if (z) {
        z->index = -1;
        z->name = b->p->m->indep;
    }
    /* knot i of the weights: s_i at z0 + i h (i >= 1), r_i at z0 + i h (i >= 0) */
    int first = c->linear ? 0 : 1;
    remat_expr *prev = ramp(b, c, z, z0 + h * first, h); /* knots z0 + h i: add_knot gives the same */
    remat_expr *acc = term(b, NULL, v[0], node(b, REMAT_EXPR_SUB, num(b, 1.0), prev));
    for (int i = 1; i < nv - 1; i++) {
        remat_expr *next = ramp(b, c, z, z0 + h * (i + first), h);
        acc = term(b, acc, v[i], node(b, REMAT_EXPR_SUB, prev, next));
        prev = next;
    }
    return term(b, acc, v[nv - 1], prev);
}

/* z into m->knots, kept increasing without repeats */
static remat_status add_knot(mech_parser *p, double z)
{
    remat_mechanism *m = p->m;
    int i = m->nknots;
    while (i > 0 && m->knots[i - 1] > z)
        i--;
    if (i > 0 && m->knots[i - 1] == z)
        return REMAT_OK;
    if (m->nknots == m->capknots) {
        int cap = m->capknots ? 2 * m->capknots : 16;
        double *v = rmi_arena_alloc(&m->arena, sizeof *v * (size_t)cap);
        if (!v)
            return mech_nomem(p);
        if (m->nknots)
            memcpy(v, m->knots, sizeof *v * (size_t)m->nknots);
        m->knots = v;
        m->capknots = cap;
    }
    memmove(m->knots + i + 1, m->knots + i, sizeof *m->knots * (size_t)(m->nknots - i));
    m->knots[i] = z;
    m->nknots++;
    return REMAT_OK;
}

remat_status mech_resolve_control(mech_parser *p, const mech_stmt *s)
{
    remat_mechanism *m = p->m;
    const mech_control *c = s->control;
    const mech_name *n = &p->names.v[c->name];
    if ((size_t)c->axis.len != strlen(m->indep) || memcmp(c->axis.text, m->indep, (size_t)c->axis.len) != 0)
        return mech_fail(p, c->axis.line, c->axis.col,
                         "control profile '%s' runs along '%.*s', which is not the independent variable '%s'%s",
                         n->name, c->axis.len, c->axis.text, m->indep,
                         p->indep_line ? "" : " (name another one with 'indep NAME')");
    double z[2], b[2], v0;
    for (int i = 0; i < 2; i++) {
        MECH_TRY(mech_const_value(p, c->span[i], 0, &z[i]));
        MECH_TRY(mech_const_value(p, c->bound[i], 1, &b[i]));
    }
    if (!isfinite(z[0]) || !isfinite(z[1]) || z[0] >= z[1])
        return mech_fail(p, c->span_line, c->span_col,
                         "control profile '%s' spans [%g, %g] of '%s': it needs finite z0 < z1", n->name, z[0],
                         z[1], m->indep);
    if (!isfinite(b[0]) || !isfinite(b[1]))
        return mech_fail(p, c->bound_line, c->bound_col,
                         "bounds [%g, %g] of control profile '%s' must be finite numbers", b[0], b[1], n->name);
    if (b[0] >= b[1])
        return mech_fail(p, c->bound_line, c->bound_col,
                         "bounds of control profile '%s' are empty: lo %g >= hi %g", n->name, b[0], b[1]);
    v0 = 0.5 * (b[0] + b[1]);
    if (c->start) {
        MECH_TRY(mech_const_value(p, c->start, 0, &v0));
        if (!(v0 >= b[0] && v0 <= b[1]))
            return mech_fail(p, c->start_line, c->start_col,
                             "start %g of control profile '%s' is outside its bounds [%g, %g]", v0, n->name, b[0],
                             b[1]);
    }
    int nv = c->n + c->linear, first = p->count[NAME_PARAM] + c->param0;
    remat_expr **v = rmi_arena_alloc(&m->arena, sizeof *v * (size_t)nv);
    if (!v)
        return mech_nomem(p);
    builder bd = {.p = p, .line = s->line, .col = s->col};
    for (int i = 0; i < nv; i++) {
        char pname[MECH_MAX_NAME + 16];
        snprintf(pname, sizeof pname, "%s[%d]", n->name, i);
        const char *copy = rmi_arena_strndup(&m->arena, pname, strlen(pname));
        if (!copy || !(v[i] = node(&bd, REMAT_EXPR_PARAM, NULL, NULL)))
            return bd.st != REMAT_OK ? bd.st : mech_nomem(p);
        v[i]->index = first + i;
        v[i]->name = copy;
        m->params[first + i] = (mech_param){.name = copy, .value = v0, .lo = b[0], .hi = b[1], .line = s->line};
    }
    double h = (z[1] - z[0]) / c->n;
    remat_expr *e = profile(&bd, c, v, z[0], h);
    if (bd.st != REMAT_OK)
        return bd.st;
    /* the same knots the tree compares with: z0 + i h */
    for (int i = c->linear ? 0 : 1; i <= (c->linear ? c->n : c->n - 1); i++)
        MECH_TRY(add_knot(p, z[0] + h * i));
    m->lets[n->index] = e;
    return REMAT_OK;
}

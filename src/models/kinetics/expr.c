/*
 * expr.c — expressions by recursive descent (grammar in remat/mechanism.h),
 * names left unresolved. Two guards: recursion (parentheses, signs, '^',
 * calls) is limited to MECH_MAX_NEST and tree depth to MECH_MAX_DEPTH, so no
 * input can exhaust the stack here or in the walkers that run later.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "models/kinetics/mechanism_impl.h"

/* step is made by control profiles (control.c), not written: NULL here.
 * The names after step are not reserved words (a file may name a species
 * 'abs'): they are calls only where '(' follows. */
static const char *const fn_names[REMAT_FN_COUNT] = {
    [REMAT_FN_EXP] = "exp",     [REMAT_FN_LOG] = "log",       [REMAT_FN_SQRT] = "sqrt",
    [REMAT_FN_MIN] = "min",     [REMAT_FN_MAX] = "max",       [REMAT_FN_STEP] = NULL,
    [REMAT_FN_TANH] = "tanh",   [REMAT_FN_SIN] = "sin",       [REMAT_FN_COS] = "cos",
    [REMAT_FN_LOG1P] = "log1p", [REMAT_FN_EXPM1] = "expm1",   [REMAT_FN_LOGISTIC] = "logistic",
    [REMAT_FN_ERF] = "erf",     [REMAT_FN_ABS] = "abs",       [REMAT_FN_LOG10] = "log10",
};
#define FN_LIST "exp, log, sqrt, log10, log1p, expm1, tanh, sin, cos, logistic (or sigmoid), erf, abs, min, max, " \
                "pow, arrhenius, arrhenius_ref"

int mech_fn_arity(remat_expr_fn fn) { return fn == REMAT_FN_MIN || fn == REMAT_FN_MAX ? 2 : 1; }

remat_status mech_nomem(const mech_parser *p)
{
    return rmi_error(REMAT_ERR_NOMEM, "%s: out of memory while parsing", p->file);
}

int mech_tok_is(const mech_token *t, const char *word)
{
    return t->kind == TOK_NAME && (size_t)t->len == strlen(word) &&
           memcmp(t->text, word, (size_t)t->len) == 0;
}

remat_status mech_advance(mech_parser *p)
{
    p->prev_end = p->tok.text ? p->tok.text + p->tok.len : NULL;
    return mech_lex_next(&p->lx, &p->tok);
}

static remat_status advance(mech_parser *p) { return mech_advance(p); }
static remat_status nomem(const mech_parser *p) { return mech_nomem(p); }

static remat_status parse_expr(mech_parser *p, int nest, remat_expr **out, int *depth);
static remat_status parse_unary(mech_parser *p, int nest, remat_expr **out, int *depth);

static remat_status make_op(mech_parser *p, remat_expr_kind kind, const mech_token *op,
                            remat_expr *a, int da, remat_expr *b, int db, remat_expr **out,
                            int *depth)
{
    int d = 1 + (da > db ? da : db);
    if (d > MECH_MAX_DEPTH)
        return mech_fail(p, op->line, op->col,
                         "expression too long: more than %d operations deep at '%.*s'", MECH_MAX_DEPTH,
                         op->len, op->text);
    remat_expr *e = mech_node(&p->m->arena, kind, op->line, op->col);
    if (!e)
        return nomem(p);
    e->nargs = b ? 2 : 1;
    e->args[0] = a;
    e->args[1] = b;
    *out = e;
    *depth = d;
    return REMAT_OK;
}

/* The token after '(' did not close it. */
static remat_status unclosed(mech_parser *p, const mech_token *open, const char *what)
{
    char sb[64];
    if (p->tok.kind == TOK_EOL || p->tok.kind == TOK_EOF)
        return mech_fail(p, open->line, open->col, "unbalanced parentheses: '('%s%s is not closed before %s",
                         what ? " of " : "", what ? what : "", mech_tok_show(&p->tok, sb, sizeof sb));
    return mech_fail(p, p->tok.line, p->tok.col, "expected ')' to close the '('%s%s at column %d, got %s",
                     what ? " of " : "", what ? what : "", open->col, mech_tok_show(&p->tok, sb, sizeof sb));
}

/* A call's arguments after its '(' (p->tok), through its ')': the first max
 * into args, their count into *n (all of them, to report a wrong arity),
 * the deepest into *depth. */
static remat_status parse_args(mech_parser *p, int nest, const char *what, int max, remat_expr **args, int *n,
                               int *depth)
{
    mech_token open = p->tok;
    MECH_TRY(advance(p));
    *n = 0, *depth = 0;
    if (p->tok.kind != TOK_RPAREN)
        for (;;) {
            remat_expr *x;
            int dx;
            MECH_TRY(parse_expr(p, nest + 1, &x, &dx));
            if (*n < max)
                args[*n] = x;
            (*n)++;
            *depth = dx > *depth ? dx : *depth;
            if (p->tok.kind != TOK_COMMA)
                break;
            MECH_TRY(advance(p));
        }
    if (p->tok.kind != TOK_RPAREN)
        return unclosed(p, &open, what);
    return advance(p);
}

static remat_status parse_call(mech_parser *p, int nest, const mech_token *name, int fn,
                               remat_expr **out, int *depth)
{
    char what[64];
    snprintf(what, sizeof what, "the call of '%.*s'", name->len, name->text);
    remat_expr *args[2] = {NULL, NULL};
    int nargs, d;
    MECH_TRY(parse_args(p, nest, what, 2, args, &nargs, &d));
    int want = fn < 0 ? 2 : mech_fn_arity((remat_expr_fn)fn);
    if (nargs != want)
        return mech_fail(p, name->line, name->col, "wrong number of arguments: '%.*s' takes %d, got %d",
                         name->len, name->text, want, nargs);
    if (fn < 0) /* pow(a, b): the node a ^ b makes */
        return make_op(p, REMAT_EXPR_POW, name, args[0], d, args[1], d, out, depth);
    if (d + 1 > MECH_MAX_DEPTH)
        return mech_fail(p, name->line, name->col,
                         "expression too long: more than %d operations deep at '%.*s'", MECH_MAX_DEPTH,
                         name->len, name->text);
    remat_expr *e = mech_node(&p->m->arena, REMAT_EXPR_CALL, name->line, name->col);
    if (!e)
        return nomem(p);
    e->fn = (remat_expr_fn)fn;
    e->name = fn_names[fn];
    e->nargs = nargs;
    e->args[0] = args[0];
    e->args[1] = args[1];
    *out = e;
    *depth = d + 1;
    return REMAT_OK;
}

/* arrhenius(A, Ea), arrhenius(A, b, Ea), arrhenius_ref(k_ref, Ea, T_ref):
 * rate constants written out as trees over a temperature name T (resolved
 * later: a condition or a species), Ea in J/mol, R = 8.314462618 J/(mol K):
 *   A exp(-Ea / (R T)),  A T^b exp(-Ea / (R T)),
 *   k_ref exp(-Ea / R (1 / T - 1 / T_ref)). */
#define MECH_GAS_R 8.314462618
static remat_status parse_arrhenius(mech_parser *p, int nest, const mech_token *name, int ref, remat_expr **out,
                                    int *depth)
{
    const char *fname = ref ? "arrhenius_ref" : "arrhenius";
    char what[64];
    snprintf(what, sizeof what, "the call of '%s'", fname);
    remat_expr *a[3] = {NULL, NULL, NULL};
    int n, d;
    MECH_TRY(parse_args(p, nest, what, 3, a, &n, &d));
    if (ref ? n != 3 : (n != 2 && n != 3))
        return mech_fail(p, name->line, name->col,
                         ref ? "wrong number of arguments: 'arrhenius_ref' takes 3 (k_ref, Ea, T_ref), got %d"
                             : "wrong number of arguments: 'arrhenius' takes 2 (A, Ea) or 3 (A, b, Ea), got %d",
                         n);
    if (d + 8 > MECH_MAX_DEPTH)
        return mech_fail(p, name->line, name->col, "expression too long: more than %d operations deep at '%s'",
                         MECH_MAX_DEPTH, fname);
    remat_arena *ar = &p->m->arena;
    int l = name->line, c = name->col;
    remat_expr *T = mech_node(ar, MECH_EXPR_NAME, l, c), *R = mech_node(ar, REMAT_EXPR_NUM, l, c);
    if (!T || !R || !(T->name = rmi_arena_strndup(ar, "T", 1)))
        return nomem(p);
    T->index = MECH_ARRHENIUS_T;
    R->value = MECH_GAS_R;
#define NODE(var, kind_, x, y)                                                                                  \
    remat_expr *var = mech_node(ar, (kind_), l, c);                                                             \
    if (!var)                                                                                                   \
        return nomem(p);                                                                                        \
    var->nargs = (y) ? 2 : 1;                                                                                   \
    var->args[0] = (x);                                                                                         \
    var->args[1] = (y)
    remat_expr *expo;
    if (!ref) {
        NODE(rt, REMAT_EXPR_MUL, R, T);
        NODE(q, REMAT_EXPR_DIV, a[n - 1], rt);
        NODE(neg, REMAT_EXPR_NEG, q, NULL);
        expo = neg;
    } else {
        remat_expr *one1 = mech_node(ar, REMAT_EXPR_NUM, l, c), *one2 = mech_node(ar, REMAT_EXPR_NUM, l, c);
        if (!one1 || !one2)
            return nomem(p);
        one1->value = one2->value = 1;
        NODE(inv_t, REMAT_EXPR_DIV, one1, T);
        NODE(inv_ref, REMAT_EXPR_DIV, one2, a[2]);
        NODE(diff, REMAT_EXPR_SUB, inv_t, inv_ref);
        NODE(er, REMAT_EXPR_DIV, a[1], R);
        NODE(prod, REMAT_EXPR_MUL, er, diff);
        NODE(neg, REMAT_EXPR_NEG, prod, NULL);
        expo = neg;
    }
    NODE(ex, REMAT_EXPR_CALL, expo, NULL);
    ex->fn = REMAT_FN_EXP;
    ex->name = fn_names[REMAT_FN_EXP];
    remat_expr *pre = a[0];
    if (!ref && n == 3) {
        NODE(tb, REMAT_EXPR_POW, T, a[1]);
        NODE(at, REMAT_EXPR_MUL, a[0], tb);
        pre = at;
    }
    NODE(k, REMAT_EXPR_MUL, pre, ex);
#undef NODE
    *out = k;
    *depth = d + 8;
    p->arrhenius_top = k;
    return REMAT_OK;
}

/* f(x, y) or f[i](x, y) of a network declared on an earlier line; p->tok
 * follows the name. */
static remat_status parse_net_call(mech_parser *p, int nest, const mech_token *name, const mech_net *n, int index,
                                   remat_expr **out, int *depth)
{
    char sb[64], what[MECH_MAX_NAME + 32];
    int o = 0;
    if (p->tok.kind == TOK_LBRACK) {
        MECH_TRY(advance(p));
        if (p->tok.kind != TOK_NUM || p->tok.num != (int)p->tok.num || p->tok.num < 0 || p->tok.num >= n->nout)
            return mech_fail(p, p->tok.line, p->tok.col,
                             "network '%s' has %d output%s: expected an index from 0 to %d in %s[...], got %s",
                             n->name, n->nout, n->nout > 1 ? "s" : "", n->nout - 1, n->name,
                             mech_tok_show(&p->tok, sb, sizeof sb));
        o = (int)p->tok.num;
        MECH_TRY(advance(p));
        if (p->tok.kind != TOK_RBRACK)
            return mech_fail(p, p->tok.line, p->tok.col, "expected ']' after the output index, got %s",
                             mech_tok_show(&p->tok, sb, sizeof sb));
        MECH_TRY(advance(p));
    } else if (n->nout > 1 && p->tok.kind == TOK_LPAREN) {
        return mech_fail(p, name->line, name->col,
                         "network '%s' has %d outputs: call one of them as %s[i](...), i from 0 to %d", n->name,
                         n->nout, n->name, n->nout - 1);
    }
    if (p->tok.kind != TOK_LPAREN)
        return mech_fail(p, name->line, name->col, "'%s' is a network (line %d): call it as %s(...)", n->name,
                         n->line, n->name);
    snprintf(what, sizeof what, "the call of network '%s'", n->name);
    remat_expr *args[MECH_NET_MAX_IN];
    int nargs, d;
    MECH_TRY(parse_args(p, nest, what, MECH_NET_MAX_IN, args, &nargs, &d));
    if (nargs != n->nin)
        return mech_fail(p, name->line, name->col,
                         "wrong number of arguments: network '%s' takes %d input%s (line %d), got %d", n->name,
                         n->nin, n->nin > 1 ? "s" : "", n->line, nargs);
    if (d + 1 > MECH_MAX_DEPTH)
        return mech_fail(p, name->line, name->col, "expression too long: more than %d operations deep at '%s'",
                         MECH_MAX_DEPTH, n->name);
    remat_expr *e = mech_node(&p->m->arena, REMAT_EXPR_NET, name->line, name->col);
    const remat_expr **in = rmi_arena_alloc(&p->m->arena, sizeof *in * (size_t)nargs);
    if (!e || !in)
        return nomem(p);
    memcpy(in, args, sizeof *in * (size_t)nargs);
    e->index = index;
    e->name = n->name;
    e->nargs = nargs;
    e->inputs = in;
    e->output = o;
    e->value = n->nout;
    *out = e;
    *depth = d + 1;
    return REMAT_OK;
}

static remat_status too_nested(mech_parser *p)
{
    char sb[64];
    return mech_fail(p, p->tok.line, p->tok.col, "expression nested too deeply (more than %d levels) at %s",
                     MECH_MAX_NEST, mech_tok_show(&p->tok, sb, sizeof sb));
}

static remat_status parse_primary(mech_parser *p, int nest, remat_expr **out, int *depth)
{
    char sb[64];
    if (nest > MECH_MAX_NEST)
        return too_nested(p);
    mech_token t = p->tok;
    *depth = 0;
    if (t.kind == TOK_NUM) {
        remat_expr *e = mech_node(&p->m->arena, REMAT_EXPR_NUM, t.line, t.col);
        if (!e)
            return nomem(p);
        e->value = t.num;
        *out = e;
        return advance(p);
    }
    if (t.kind == TOK_NAME) {
        MECH_TRY(advance(p));
        int fn = -1;
        for (int i = 0; i < REMAT_FN_COUNT; i++)
            if (fn_names[i] && mech_tok_is(&t, fn_names[i]))
                fn = i;
        if (mech_tok_is(&t, "sigmoid"))
            fn = REMAT_FN_LOGISTIC;
        int is_pow = mech_tok_is(&t, "pow");
        int arr = mech_tok_is(&t, "arrhenius") ? 1 : mech_tok_is(&t, "arrhenius_ref") ? 2 : 0;
        if (arr && p->tok.kind == TOK_LPAREN)
            return parse_arrhenius(p, nest, &t, arr == 2, out, depth);
        if (arr)
            return mech_fail(p, t.line, t.col, "'%.*s' is a function: call it as %.*s(...)", t.len, t.text, t.len,
                             t.text);
        int k = mech_names_find(&p->names, t.text, (size_t)t.len);
        if (k >= 0 && p->names.v[k].kind == NAME_NET && (p->tok.kind == TOK_LPAREN || p->tok.kind == TOK_LBRACK))
            return parse_net_call(p, nest, &t, &p->m->nets[p->names.v[k].index], p->names.v[k].index, out, depth);
        if (p->tok.kind == TOK_LPAREN) {
            if (fn < 0 && !is_pow)
                return mech_fail(p, t.line, t.col, "unknown function %s (expected " FN_LIST ")",
                                 mech_tok_show(&t, sb, sizeof sb));
            return parse_call(p, nest, &t, fn, out, depth);
        }
        if (fn >= 0 && fn <= REMAT_FN_MAX) /* the reserved ones */
            return mech_fail(p, t.line, t.col, "'%s' is a function: call it as %s(...)", fn_names[fn],
                             fn_names[fn]);
        remat_expr *e = mech_node(&p->m->arena, MECH_EXPR_NAME, t.line, t.col);
        if (!e || !(e->name = rmi_arena_strndup(&p->m->arena, t.text, (size_t)t.len)))
            return nomem(p);
        *out = e;
        return REMAT_OK;
    }
    if (t.kind == TOK_LPAREN) {
        MECH_TRY(advance(p));
        MECH_TRY(parse_expr(p, nest + 1, out, depth));
        if (p->tok.kind != TOK_RPAREN)
            return unclosed(p, &t, NULL);
        return advance(p);
    }
    return mech_fail(p, t.line, t.col, "expected a number, a name or '(', got %s",
                     mech_tok_show(&t, sb, sizeof sb));
}

/* power = primary [ "^" unary ] */
static remat_status parse_power(mech_parser *p, int nest, remat_expr **out, int *depth)
{
    remat_expr *a, *b;
    int da, db;
    MECH_TRY(parse_primary(p, nest, &a, &da));
    if (p->tok.kind != TOK_CARET) {
        *out = a;
        *depth = da;
        return REMAT_OK;
    }
    mech_token op = p->tok;
    MECH_TRY(advance(p));
    MECH_TRY(parse_unary(p, nest + 1, &b, &db));
    return make_op(p, REMAT_EXPR_POW, &op, a, da, b, db, out, depth);
}

/* unary = ("-" | "+") unary | power; "-" before a number is folded into it */
static remat_status parse_unary(mech_parser *p, int nest, remat_expr **out, int *depth)
{
    if (nest > MECH_MAX_NEST)
        return too_nested(p);
    mech_token op = p->tok;
    if (op.kind == TOK_PLUS) {
        MECH_TRY(advance(p));
        return parse_unary(p, nest + 1, out, depth);
    }
    if (op.kind != TOK_MINUS)
        return parse_power(p, nest, out, depth);
    remat_expr *a;
    int da;
    MECH_TRY(advance(p));
    MECH_TRY(parse_unary(p, nest + 1, &a, &da));
    if (a->kind == REMAT_EXPR_NUM) {
        a->value = -a->value;
        a->line = op.line;
        a->col = op.col;
        *out = a;
        *depth = da;
        return REMAT_OK;
    }
    return make_op(p, REMAT_EXPR_NEG, &op, a, da, NULL, 0, out, depth);
}

static remat_status parse_product(mech_parser *p, int nest, remat_expr **out, int *depth)
{
    MECH_TRY(parse_unary(p, nest, out, depth));
    while (p->tok.kind == TOK_STAR || p->tok.kind == TOK_SLASH) {
        mech_token op = p->tok;
        remat_expr *b;
        int db;
        MECH_TRY(advance(p));
        MECH_TRY(parse_unary(p, nest, &b, &db));
        MECH_TRY(make_op(p, op.kind == TOK_STAR ? REMAT_EXPR_MUL : REMAT_EXPR_DIV, &op, *out, *depth, b, db,
                    out, depth));
    }
    return REMAT_OK;
}

static remat_status parse_expr(mech_parser *p, int nest, remat_expr **out, int *depth)
{
    MECH_TRY(parse_product(p, nest, out, depth));
    while (p->tok.kind == TOK_PLUS || p->tok.kind == TOK_MINUS) {
        mech_token op = p->tok;
        remat_expr *b;
        int db;
        MECH_TRY(advance(p));
        MECH_TRY(parse_product(p, nest, &b, &db));
        MECH_TRY(make_op(p, op.kind == TOK_PLUS ? REMAT_EXPR_ADD : REMAT_EXPR_SUB, &op, *out, *depth, b, db,
                    out, depth));
    }
    return REMAT_OK;
}

remat_status mech_parse_expr(mech_parser *p, remat_expr **out)
{
    int depth;
    return parse_expr(p, 0, out, &depth);
}

/*
 * parser.c — pass 1: each line becomes a statement with raw expression trees
 * (names unresolved, expr.c); declarations and species go into the name
 * table. The grammar is in remat/mechanism.h.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "models/kinetics/mechanism_impl.h"

static const char *const reserved[] = {"exp",   "log",     "sqrt",  "min", "max", "param", "cond",
                                       "const", "species", "indep", "let", "inf", "arrhenius",
                                       "arrhenius_ref"};

static remat_status nomem(const mech_parser *p) { return mech_nomem(p); }
static int tok_is(const mech_token *t, const char *word) { return mech_tok_is(t, word); }
static remat_status advance(mech_parser *p) { return mech_advance(p); }

/* ---- names ---- */

static remat_status check_reserved(const mech_parser *p, const mech_token *t)
{
    for (size_t i = 0; i < sizeof reserved / sizeof reserved[0]; i++)
        if (tok_is(t, reserved[i]))
            return mech_fail(p, t->line, t->col, "'%s' is a reserved word and cannot be used as a name",
                             reserved[i]);
    return REMAT_OK;
}

static remat_status declare(mech_parser *p, mech_name_kind kind, const mech_token *t)
{
    static const char *const twice[NAME_KIND_COUNT] = {
        [NAME_PARAM] = "parameter '%.*s' declared twice (first at line %d)",
        [NAME_CONST] = "const '%.*s' defined twice (first at line %d)",
        [NAME_LET] = "let '%.*s' defined twice (first at line %d)",
        [NAME_INDEP] = "'%.*s' declared twice (first at line %d)",
        [NAME_COND] = "condition '%.*s' declared twice (first at line %d)",
        [NAME_NET] = "network '%.*s' declared twice (first at line %d)",
        [NAME_CONTROL] = "control profile '%.*s' declared twice (first at line %d)",
    };
    MECH_TRY(check_reserved(p, t));
    int k = mech_names_find(&p->names, t->text, (size_t)t->len);
    if (k >= 0) {
        const mech_name *e = &p->names.v[k];
        if (e->kind == kind && twice[kind])
            return mech_fail(p, t->line, t->col, twice[kind], t->len, t->text, e->line);
        return mech_fail(p, t->line, t->col, "'%.*s' is %s (line %d) and cannot also be %s", t->len,
                         t->text, mech_name_kind_text(e->kind, 1), e->line, mech_name_kind_text(kind, 1));
    }
    if ((k = mech_names_add(&p->names, &p->m->arena, t->text, (size_t)t->len)) < 0)
        return nomem(p);
    mech_name *e = &p->names.v[k];
    e->kind = kind;
    e->index = p->count[kind]++;
    e->line = t->line;
    e->col = t->col;
    return REMAT_OK;
}

remat_status mech_declare(mech_parser *p, mech_name_kind kind, const mech_token *t) { return declare(p, kind, t); }

/* A name on a reaction side or an ODE's left-hand side. */
static remat_status use_species(mech_parser *p, const mech_token *t, int *index)
{
    MECH_TRY(check_reserved(p, t));
    int k = mech_names_find(&p->names, t->text, (size_t)t->len);
    if (k < 0) {
        if ((k = mech_names_add(&p->names, &p->m->arena, t->text, (size_t)t->len)) < 0)
            return nomem(p);
        mech_name *e = &p->names.v[k];
        e->kind = NAME_SPECIES;
        e->line = t->line;
        e->col = t->col;
        p->count[NAME_SPECIES]++;
    } else if (p->names.v[k].kind != NAME_SPECIES) {
        const mech_name *e = &p->names.v[k];
        return mech_fail(p, t->line, t->col, "'%.*s' is %s (line %d) and cannot be used as a species",
                         t->len, t->text, mech_name_kind_text(e->kind, 1), e->line);
    }
    *index = k;
    return REMAT_OK;
}

/* ---- statements ---- */

static mech_stmt *new_stmt(mech_parser *p, mech_stmt_kind kind, const mech_token *first)
{
    mech_stmt *s = rmi_arena_alloc(&p->m->arena, sizeof *s);
    if (!s)
        return NULL;
    s->kind = kind;
    s->line = first->line;
    s->col = first->col;
    s->name = -1;
    if (p->last)
        p->last->next = s;
    else
        p->first = s;
    p->last = s;
    return s;
}

/* Every statement ends at the end of its line. */
static remat_status expect_end(mech_parser *p, const char *after)
{
    char sb[64];
    if (p->tok.kind == TOK_EOL || p->tok.kind == TOK_EOF)
        return REMAT_OK;
    if (p->tok.kind == TOK_RPAREN)
        return mech_fail(p, p->tok.line, p->tok.col, "unbalanced parentheses: unmatched ')' after %s", after);
    return mech_fail(p, p->tok.line, p->tok.col, "unexpected %s after %s",
                     mech_tok_show(&p->tok, sb, sizeof sb), after);
}

mech_stmt *mech_new_stmt(mech_parser *p, mech_stmt_kind kind, const mech_token *first)
{
    return new_stmt(p, kind, first);
}

remat_status mech_expect_end(mech_parser *p, const char *after) { return expect_end(p, after); }

/* param NAME = cexpr [in [lo, hi]] | cond NAME = cexpr | const NAME = cexpr | let NAME = expr */
static remat_status parse_def(mech_parser *p, mech_stmt_kind kind)
{
    static const mech_name_kind name_kind[] = {[STMT_PARAM] = NAME_PARAM, [STMT_CONST] = NAME_CONST,
                                               [STMT_LET] = NAME_LET, [STMT_COND] = NAME_COND};
    char sb[64];
    mech_token kw = p->tok;
    MECH_TRY(advance(p));
    mech_token name = p->tok;
    if (name.kind != TOK_NAME)
        return mech_fail(p, name.line, name.col, "expected a name after '%.*s', got %s", kw.len, kw.text,
                         mech_tok_show(&name, sb, sizeof sb));
    MECH_TRY(declare(p, name_kind[kind], &name));
    MECH_TRY(advance(p));
    if (p->tok.kind != TOK_EQ)
        return mech_fail(p, p->tok.line, p->tok.col, "expected '=' after '%.*s %.*s', got %s", kw.len,
                         kw.text, name.len, name.text, mech_tok_show(&p->tok, sb, sizeof sb));
    MECH_TRY(advance(p));
    mech_stmt *s = new_stmt(p, kind, &kw);
    if (!s)
        return nomem(p);
    s->name = mech_names_find(&p->names, name.text, (size_t)name.len);
    s->value_line = p->tok.line;
    s->value_col = p->tok.col;
    MECH_TRY(mech_parse_expr(p, &s->value));
    if (kind == STMT_PARAM && tok_is(&p->tok, "in")) {
        MECH_TRY(advance(p));
        if (p->tok.kind != TOK_LBRACK)
            return mech_fail(p, p->tok.line, p->tok.col, "expected '[' after 'in', got %s",
                             mech_tok_show(&p->tok, sb, sizeof sb));
        s->bound_line = p->tok.line;
        s->bound_col = p->tok.col;
        MECH_TRY(advance(p));
        MECH_TRY(mech_parse_expr(p, &s->bound[0]));
        if (p->tok.kind != TOK_COMMA)
            return mech_fail(p, p->tok.line, p->tok.col, "expected ',' between the bounds, got %s",
                             mech_tok_show(&p->tok, sb, sizeof sb));
        MECH_TRY(advance(p));
        MECH_TRY(mech_parse_expr(p, &s->bound[1]));
        if (p->tok.kind != TOK_RBRACK)
            return mech_fail(p, p->tok.line, p->tok.col, "expected ']' after the bounds, got %s",
                             mech_tok_show(&p->tok, sb, sizeof sb));
        MECH_TRY(advance(p));
    } else if (kind == STMT_PARAM && (p->tok.kind == TOK_NAME || p->tok.kind == TOK_NUM)) {
        return mech_fail(p, p->tok.line, p->tok.col,
                         "unexpected %s after the value of '%.*s' (bounds are written 'in [lo, hi]')",
                         mech_tok_show(&p->tok, sb, sizeof sb), name.len, name.text);
    }
    return expect_end(p, kind == STMT_PARAM && s->bound[0] ? "the bounds" : "the value");
}

/* species NAME { [","] NAME } */
static remat_status parse_species(mech_parser *p)
{
    char sb[64];
    int any = 0;
    if (!p->species_line)
        p->species_line = p->tok.line;
    MECH_TRY(advance(p));
    while (p->tok.kind == TOK_NAME) {
        mech_token t = p->tok;
        MECH_TRY(check_reserved(p, &t));
        int k = mech_names_find(&p->names, t.text, (size_t)t.len);
        if (k >= 0 && p->names.v[k].kind != NAME_SPECIES)
            return mech_fail(p, t.line, t.col, "'%.*s' is %s (line %d) and cannot be declared as a species",
                             t.len, t.text, mech_name_kind_text(p->names.v[k].kind, 1), p->names.v[k].line);
        if (k >= 0 && p->names.v[k].decl_order >= 0)
            return mech_fail(p, t.line, t.col, "species '%.*s' declared twice (first at line %d)", t.len,
                             t.text, p->names.v[k].decl_line);
        if (k < 0) {
            int ignored;
            MECH_TRY(use_species(p, &t, &ignored));
            k = ignored;
        }
        p->names.v[k].decl_order = p->ndeclared++;
        p->names.v[k].decl_line = t.line;
        any = 1;
        MECH_TRY(advance(p));
        if (p->tok.kind == TOK_COMMA) {
            MECH_TRY(advance(p));
            if (p->tok.kind != TOK_NAME)
                return mech_fail(p, p->tok.line, p->tok.col, "expected a species name after ',', got %s",
                                 mech_tok_show(&p->tok, sb, sizeof sb));
        }
    }
    if (!any)
        return mech_fail(p, p->tok.line, p->tok.col, "expected species names after 'species', got %s",
                         mech_tok_show(&p->tok, sb, sizeof sb));
    return expect_end(p, "the species list");
}

/* indep NAME */
static remat_status parse_indep(mech_parser *p)
{
    char sb[64];
    mech_token kw = p->tok;
    MECH_TRY(advance(p));
    mech_token name = p->tok;
    if (name.kind != TOK_NAME)
        return mech_fail(p, name.line, name.col, "expected a name after 'indep', got %s",
                         mech_tok_show(&name, sb, sizeof sb));
    if (p->indep_line)
        return mech_fail(p, kw.line, kw.col, "'indep' given twice (first at line %d)", p->indep_line);
    MECH_TRY(declare(p, NAME_INDEP, &name));
    p->indep_line = kw.line;
    MECH_TRY(advance(p));
    return expect_end(p, "the independent variable's name");
}

/* NAME "'" "=" expr; p->tok is the prime */
static remat_status parse_ode(mech_parser *p, const mech_token *name)
{
    char sb[64];
    int k;
    MECH_TRY(use_species(p, name, &k));
    mech_name *e = &p->names.v[k];
    if (e->ode_line)
        return mech_fail(p, name->line, name->col, "second ODE for '%s' (first at line %d)", e->name,
                         e->ode_line);
    e->ode_line = name->line;
    e->ode_col = name->col;
    MECH_TRY(advance(p));
    if (p->tok.kind != TOK_EQ)
        return mech_fail(p, p->tok.line, p->tok.col, "expected '=' after \"%s'\", got %s", e->name,
                         mech_tok_show(&p->tok, sb, sizeof sb));
    MECH_TRY(advance(p));
    mech_stmt *s = new_stmt(p, STMT_ODE, name);
    if (!s)
        return nomem(p);
    s->name = k;
    s->value_line = p->tok.line;
    s->value_col = p->tok.col;
    MECH_TRY(mech_parse_expr(p, &s->value));
    p->nodes++;
    return expect_end(p, "the ODE's right-hand side");
}

/* side = [ term { "+" term } ], term = [ INTEGER ] NAME */
static remat_status parse_side(mech_parser *p, mech_stmt *s, int which)
{
    char sb[64];
    p->nterms = 0;
    if (p->tok.kind != TOK_NUM && p->tok.kind != TOK_NAME)
        return REMAT_OK; /* empty side */
    for (;;) {
        int coef = 1;
        if (p->tok.kind == TOK_NUM) {
            double c = p->tok.num;
            if (c != floor(c) || c < 1 || c > MECH_MAX_COEF)
                return mech_fail(p, p->tok.line, p->tok.col,
                                 "stoichiometric coefficient %s must be an integer from 1 to %d",
                                 mech_tok_show(&p->tok, sb, sizeof sb), MECH_MAX_COEF);
            coef = (int)c;
            MECH_TRY(advance(p));
            if (p->tok.kind != TOK_NAME)
                return mech_fail(p, p->tok.line, p->tok.col,
                                 "expected a species name after the coefficient, got %s",
                                 mech_tok_show(&p->tok, sb, sizeof sb));
        } else if (p->tok.kind != TOK_NAME) {
            return mech_fail(p, p->tok.line, p->tok.col, "expected a species after '+', got %s",
                             mech_tok_show(&p->tok, sb, sizeof sb));
        }
        int k;
        MECH_TRY(use_species(p, &p->tok, &k));
        if (!p->names.v[k].rx_line) {
            p->names.v[k].rx_line = p->tok.line;
            p->names.v[k].rx_col = p->tok.col;
        }
        if (p->nterms == p->capterms) {
            int cap = p->capterms ? 2 * p->capterms : 8;
            mech_term *t = rmi_realloc(p->terms, (size_t)cap * sizeof *t);
            if (!t)
                return nomem(p);
            p->terms = t;
            p->capterms = cap;
        }
        p->terms[p->nterms++] = (mech_term){.name = k, .coef = coef, .line = p->tok.line, .col = p->tok.col};
        MECH_TRY(advance(p));
        if (p->tok.kind != TOK_PLUS)
            break;
        MECH_TRY(advance(p));
    }
    s->side[which] = rmi_arena_alloc(&p->m->arena, (size_t)p->nterms * sizeof(mech_term));
    if (!s->side[which])
        return nomem(p);
    memcpy(s->side[which], p->terms, (size_t)p->nterms * sizeof(mech_term));
    s->nside[which] = p->nterms;
    return REMAT_OK;
}

/* side ("->" | "<=>") side ":" expr [ "," expr ] */
static remat_status parse_reaction(mech_parser *p)
{
    char sb[64];
    mech_stmt *s = new_stmt(p, STMT_REACTION, &p->tok);
    if (!s)
        return nomem(p);
    MECH_TRY(parse_side(p, s, 0));
    if (p->tok.kind != TOK_ARROW && p->tok.kind != TOK_REVERSIBLE) {
        if (p->tok.kind == TOK_EQ)
            return mech_fail(p, p->tok.line, p->tok.col,
                             "unexpected '=' (definitions start with 'param', 'const' or 'let'; "
                             "an ODE is written y' = ...)");
        return mech_fail(p, p->tok.line, p->tok.col, "expected '+', '->' or '<=>' in a reaction, got %s",
                         mech_tok_show(&p->tok, sb, sizeof sb));
    }
    s->reversible = p->tok.kind == TOK_REVERSIBLE;
    s->arrow_line = p->tok.line;
    s->arrow_col = p->tok.col;
    MECH_TRY(advance(p));
    MECH_TRY(parse_side(p, s, 1));
    if (s->nside[0] == 0 && s->nside[1] == 0)
        return mech_fail(p, s->arrow_line, s->arrow_col, "empty reaction: no reactants and no products");
    if (p->tok.kind != TOK_COLON)
        return mech_fail(p, p->tok.line, p->tok.col, "missing ':' before the rate: expected '+' or ':', got %s",
                         mech_tok_show(&p->tok, sb, sizeof sb));
    MECH_TRY(advance(p));
    for (int i = 0; i <= s->reversible; i++) {
        if (i == 1) {
            if (p->tok.kind != TOK_COMMA)
                return mech_fail(p, p->tok.line, p->tok.col,
                                 "a reversible reaction needs two rates 'forward, reverse': expected ',', got %s",
                                 mech_tok_show(&p->tok, sb, sizeof sb));
            MECH_TRY(advance(p));
        }
        /* "k = expr" (a rate constant) or "rate = expr" (the whole rate): one token of lookahead */
        mech_lexer peek = p->lx;
        mech_token next;
        if ((tok_is(&p->tok, "k") || tok_is(&p->tok, "rate")) && mech_lex_next(&peek, &next) == REMAT_OK &&
            next.kind == TOK_EQ) {
            s->rate_kind[i] = tok_is(&p->tok, "k") ? RATE_CONST : RATE_WHOLE;
            MECH_TRY(advance(p));
            MECH_TRY(advance(p));
        }
        s->rate_line[i] = p->tok.line;
        s->rate_col[i] = p->tok.col;
        s->rate_src[i] = p->tok.text;
        MECH_TRY(mech_parse_expr(p, &s->rate[i]));
        s->rate_len[i] = s->rate_src[i] && p->prev_end > s->rate_src[i] ? (int)(p->prev_end - s->rate_src[i]) : 0;
        if (s->rate_kind[i] == RATE_OLD && s->rate[i] == p->arrhenius_top)
            s->rate_kind[i] = RATE_CONST; /* arrhenius(...) alone is a rate constant */
    }
    if (!s->reversible && p->tok.kind == TOK_COMMA)
        return mech_fail(p, p->tok.line, p->tok.col,
                         "unexpected ',': an irreversible reaction ('->') has one rate");
    p->nreactions++;
    return expect_end(p, "the rate");
}

static remat_status parse_line(mech_parser *p)
{
    char sb[64];
    mech_token t = p->tok;
    if (t.kind == TOK_NAME) {
        if (tok_is(&t, "param"))
            return parse_def(p, STMT_PARAM);
        if (tok_is(&t, "const"))
            return parse_def(p, STMT_CONST);
        if (tok_is(&t, "cond"))
            return parse_def(p, STMT_COND);
        if (tok_is(&t, "let"))
            return parse_def(p, STMT_LET);
        if (tok_is(&t, "species"))
            return parse_species(p);
        if (tok_is(&t, "indep"))
            return parse_indep(p);
        /* one token of lookahead; a lexing error here recurs on the real read */
        mech_lexer peek = p->lx;
        mech_token next;
        int peeked = mech_lex_next(&peek, &next) == REMAT_OK;
        /* "net NAME": a network (net.c); a species named net stays usable */
        if (peeked && tok_is(&t, "net") && next.kind == TOK_NAME)
            return mech_parse_net(p);
        /* "control NAME(...)": not reserved, a species may be called control */
        if (peeked && tok_is(&t, "control") && next.kind == TOK_NAME)
            return mech_parse_control(p);
        if (peeked && next.kind == TOK_PRIME) {
            MECH_TRY(advance(p));
            return parse_ode(p, &t);
        }
        return parse_reaction(p);
    }
    if (t.kind == TOK_NUM || t.kind == TOK_ARROW || t.kind == TOK_REVERSIBLE)
        return parse_reaction(p);
    return mech_fail(p, t.line, t.col,
                     "expected a reaction, an ODE (y' = ...) or a declaration (param, cond, const, let, "
                     "species, indep, net, control), got %s",
                     mech_tok_show(&t, sb, sizeof sb));
}

remat_status mech_parse_lines(mech_parser *p)
{
    MECH_TRY(advance(p));
    for (;;) {
        if (p->tok.kind == TOK_EOF) {
            p->eof_line = p->tok.line;
            p->eof_col = p->tok.col;
            return REMAT_OK;
        }
        if (p->tok.kind == TOK_EOL) {
            MECH_TRY(advance(p));
            continue;
        }
        MECH_TRY(parse_line(p));
    }
}

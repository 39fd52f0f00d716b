/*
 * resolve.c — between the passes: the independent variable, species
 * numbering and the reaction/ODE conflict check; then pass 2: statements in
 * file order, names to table references, consts and param values evaluated.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/assert.h"
#include "core/error.h"
#include "models/kinetics/mechanism_impl.h"

static remat_status nomem(const mech_parser *p) { return mech_nomem(p); }

#define ALLOC_N(p, ptr, n)                                                             \
    do {                                                                               \
        (ptr) = rmi_arena_alloc(&(p)->m->arena, ((n) ? (size_t)(n) : 1) * sizeof *(ptr));     \
        if (!(ptr))                                                                    \
            return nomem(p);                                                           \
    } while (0)

remat_status mech_finish_names(mech_parser *p)
{
    remat_mechanism *m = p->m;
    if (!p->indep_line) {
        int k = mech_names_find(&p->names, "t", 1);
        if (k >= 0)
            return mech_error_at(p->file, p->names.v[k].line, p->names.v[k].col,
                                 "'t' is the independent variable and cannot be %s "
                                 "(name another one with 'indep NAME')",
                                 mech_name_kind_text(p->names.v[k].kind, 1));
        if ((k = mech_names_add(&p->names, &m->arena, "t", 1)) < 0)
            return nomem(p);
        p->names.v[k].kind = NAME_INDEP;
        p->names.v[k].index = p->count[NAME_INDEP]++;
    }
    if (p->nreactions + p->nodes == 0)
        return mech_error_at(p->file, p->eof_line, p->eof_col, "%s: no reactions or ODEs",
                             p->first ? "nothing to integrate" : "empty file");

    m->nspecies = p->count[NAME_SPECIES];
    /* the declared parameters, the control profiles' values (control.c), the networks' weights (net.c) */
    m->ndeclared_params = p->count[NAME_PARAM] + p->control_params;
    m->nparams = m->ndeclared_params + p->nweights;
    m->nconsts = p->count[NAME_CONST];
    m->nconds = p->count[NAME_COND];
    m->nlets = p->count[NAME_LET] + p->count[NAME_CONTROL]; /* the profiles first (control.c) */
    m->nreactions = p->nreactions;
    ALLOC_N(p, m->species, m->nspecies);
    ALLOC_N(p, m->rhs, m->nspecies);
    ALLOC_N(p, p->ode, m->nspecies);
    ALLOC_N(p, m->params, m->nparams);
    ALLOC_N(p, m->const_names, m->nconsts);
    ALLOC_N(p, m->cond_names, m->nconds);
    ALLOC_N(p, m->cond_values, m->nconds);
    ALLOC_N(p, m->const_values, m->nconsts);
    ALLOC_N(p, m->let_names, m->nlets);
    ALLOC_N(p, m->lets, m->nlets);
    ALLOC_N(p, m->reactions, m->nreactions);

    /* the networks' weights follow the declared parameters and the control values (net.c) */
    for (int i = 0; i < m->nnets; i++) {
        mech_net *n = &m->nets[i];
        n->first_param += m->ndeclared_params;
        for (int j = 0; j < n->nweights; j++)
            m->params[n->first_param + j] = (mech_param){.name = n->wnames[j], .value = n->init[j],
                                                         .lo = -INFINITY, .hi = INFINITY, .line = n->line};
    }
    int next_species = 0;
    for (int k = 0; k < p->names.n; k++) {
        mech_name *e = &p->names.v[k];
        switch (e->kind) {
        case NAME_SPECIES:
            if (e->ode_line && e->rx_line) {
                int ode_later = e->ode_line > e->rx_line ||
                                (e->ode_line == e->rx_line && e->ode_col > e->rx_col);
                return mech_error_at(p->file, ode_later ? e->ode_line : e->rx_line,
                                     ode_later ? e->ode_col : e->rx_col,
                                     "species '%s' has an ODE (line %d) and is also in a reaction "
                                     "(line %d): give its rate one way only",
                                     e->name, e->ode_line, e->rx_line);
            }
            if (p->ndeclared && e->decl_order < 0)
                return mech_error_at(p->file, e->line, e->col,
                                     "species '%s' is not in the 'species' list (line %d)", e->name,
                                     p->species_line);
            e->index = p->ndeclared ? e->decl_order : next_species++;
            m->species[e->index] = e->name;
            break;
        case NAME_PARAM:
            m->params[e->index] = (mech_param){.name = e->name, .lo = -INFINITY, .hi = INFINITY,
                                               .line = e->line};
            break;
        case NAME_CONST: m->const_names[e->index] = e->name; break;
        case NAME_COND: m->cond_names[e->index] = e->name; break;
        case NAME_LET:
            e->index += p->count[NAME_CONTROL];
            m->let_names[e->index] = e->name;
            break;
        case NAME_CONTROL: m->let_names[e->index] = e->name; break;
        case NAME_INDEP: m->indep = e->name; break;
        case NAME_NET: break;
        case NAME_KIND_COUNT: REMAT_UNREACHABLE("bad name kind");
        }
    }
    return REMAT_OK;
}

/* ---- pass 2 ---- */

typedef enum {
    CTX_FULL,  /* let, ODE, rate: everything */
    CTX_CONST, /* const and param values: numbers and earlier consts */
    CTX_BOUND, /* param bounds: as CTX_CONST, plus inf */
} ctx_kind;

static remat_status resolve(mech_parser *p, remat_expr *e, ctx_kind ctx)
{
    for (int i = 0; i < e->nargs; i++)
        MECH_TRY(resolve(p, (remat_expr *)mech_child(e, i), ctx));
    if (e->kind == REMAT_EXPR_NET && ctx != CTX_FULL)
        return mech_error_at(p->file, e->line, e->col,
                             "network '%s' is called in a value or bound, which may use only numbers and consts",
                             e->name);
    if (e->kind != MECH_EXPR_NAME)
        return REMAT_OK;
    int k = mech_names_find(&p->names, e->name, strlen(e->name));
    if (k < 0 && e->index == MECH_ARRHENIUS_T)
        return mech_error_at(p->file, e->line, e->col,
                             "arrhenius needs a temperature T in K: declare it, e.g. 'cond T = 298.15' (one "
                             "value per experiment), or a species T");
    if (k < 0) {
        if (strcmp(e->name, "inf") == 0) {
            if (ctx == CTX_BOUND) {
                e->kind = REMAT_EXPR_NUM;
                e->value = INFINITY;
                e->name = NULL;
                return REMAT_OK;
            }
            return mech_error_at(p->file, e->line, e->col, "'inf' is allowed only in bounds");
        }
        return mech_error_at(p->file, e->line, e->col, "unknown name '%s' (%s)", e->name,
                             ctx == CTX_FULL ? "not a species, param, cond, const or let"
                                             : "values and bounds may use numbers and consts");
    }
    const mech_name *n = &p->names.v[k];
    if (n->kind == NAME_NET)
        return mech_error_at(p->file, e->line, e->col, "'%s' is a network (line %d): call it as %s(...)", e->name,
                             n->line, e->name);
    if (e->index == MECH_ARRHENIUS_T && n->kind != NAME_COND && n->kind != NAME_SPECIES && n->kind != NAME_CONTROL)
        return mech_error_at(p->file, e->line, e->col,
                             "arrhenius reads the temperature T, but 'T' is %s (line %d): declare "
                             "'cond T = 298.15' (or make T a species or a control profile)",
                             mech_name_kind_text(n->kind, 1), n->line);
    if (ctx != CTX_FULL && n->kind != NAME_CONST)
        return mech_error_at(p->file, e->line, e->col,
                             "'%s' is %s, but values and bounds may use only numbers and consts",
                             e->name, mech_name_kind_text(n->kind, 1));
    if ((n->kind == NAME_CONST || n->kind == NAME_LET) && n->line >= e->line)
        return mech_error_at(p->file, e->line, e->col, "%s '%s' used before its definition (line %d)",
                             mech_name_kind_text(n->kind, 0), e->name, n->line);
    static const remat_expr_kind kinds[NAME_KIND_COUNT] = {
        [NAME_SPECIES] = REMAT_EXPR_SPECIES, [NAME_PARAM] = REMAT_EXPR_PARAM,
        [NAME_CONST] = REMAT_EXPR_CONST,     [NAME_LET] = REMAT_EXPR_LET,
        [NAME_INDEP] = REMAT_EXPR_INDEP,     [NAME_COND] = REMAT_EXPR_COND,
        [NAME_CONTROL] = REMAT_EXPR_LET, /* the profile's let (control.c) */
    };
    e->kind = kinds[n->kind];
    e->index = n->kind == NAME_INDEP ? -1 : n->index;
    e->name = n->name;
    if (n->kind == NAME_CONST)
        e->value = p->m->const_values[n->index];
    return REMAT_OK;
}

static const char *show_nonfinite(double v)
{
    return isnan(v) ? "NaN" : v > 0 ? "+inf" : "-inf";
}

static double eval_const(const remat_expr *e)
{
    const mech_env env = {0};
    return mech_eval(e, &env);
}

remat_status mech_const_value(mech_parser *p, remat_expr *e, int bound, double *v)
{
    MECH_TRY(resolve(p, e, bound ? CTX_BOUND : CTX_CONST));
    *v = eval_const(e);
    return REMAT_OK;
}

static remat_status resolve_param(mech_parser *p, const mech_stmt *s)
{
    const mech_name *n = &p->names.v[s->name];
    mech_param *par = &p->m->params[n->index];
    MECH_TRY(resolve(p, s->value, CTX_CONST));
    double v = eval_const(s->value);
    if (!isfinite(v))
        return mech_error_at(p->file, s->value_line, s->value_col,
                             "value of parameter '%s' is not finite (%s)", n->name,
                             show_nonfinite(v));
    par->value = v;
    if (!s->bound[0])
        return REMAT_OK;
    MECH_TRY(resolve(p, s->bound[0], CTX_BOUND));
    MECH_TRY(resolve(p, s->bound[1], CTX_BOUND));
    double lo = eval_const(s->bound[0]), hi = eval_const(s->bound[1]);
    if (isnan(lo) || isnan(hi))
        return mech_error_at(p->file, s->bound_line, s->bound_col,
                             "bounds of parameter '%s' are not numbers", n->name);
    if (lo > hi)
        return mech_error_at(p->file, s->bound_line, s->bound_col,
                             "bounds of parameter '%s' are reversed: lo %g > hi %g", n->name, lo, hi);
    if (v < lo || v > hi)
        return mech_error_at(p->file, s->value_line, s->value_col,
                             "value %g of parameter '%s' is outside its bounds [%g, %g]", v, n->name,
                             lo, hi);
    par->lo = lo;
    par->hi = hi;
    return REMAT_OK;
}

remat_status mech_warn(mech_parser *p, int line, int col, const char *fmt, ...)
{
    remat_mechanism *m = p->m;
    char msg[1024];
    int o = snprintf(msg, sizeof msg, "%s:%d:%d: warning: ", p->file, line, col);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg + o, sizeof msg - (size_t)o, fmt, ap);
    va_end(ap);
    if (m->nwarnings == m->capwarnings) {
        int cap = m->capwarnings ? 2 * m->capwarnings : 4;
        const char **v = rmi_realloc(m->warnings, (size_t)cap * sizeof *v);
        if (!v)
            return nomem(p);
        m->warnings = v;
        m->capwarnings = cap;
    }
    if (!(m->warnings[m->nwarnings] = rmi_arena_strndup(&m->arena, msg, strlen(msg))))
        return nomem(p);
    m->nwarnings++;
    return REMAT_OK;
}

/* The first species of mask[] (1: a reactant) that e reads, directly or
 * through lets (seen[nlets] marks lets walked); -1 when none. */
static int reads_reactant(const mech_parser *p, const remat_expr *e, const unsigned char *mask, unsigned char *seen)
{
    if (e->kind == REMAT_EXPR_SPECIES)
        return mask[e->index] ? e->index : -1;
    if (e->kind == REMAT_EXPR_LET) {
        if (seen[e->index])
            return -1;
        seen[e->index] = 1;
        return p->m->lets[e->index] ? reads_reactant(p, p->m->lets[e->index], mask, seen) : -1;
    }
    for (int i = 0; i < e->nargs; i++) {
        int s = reads_reactant(p, mech_child(e, i), mask, seen);
        if (s >= 0)
            return s;
    }
    return -1;
}

/* The readings a reaction's rate can be mistaken in (remat/mechanism.h,
 * "Reactions"): an expression taken as the whole rate that reads none of
 * its reactants; a rate constant that reads one (mass action twice). */
static remat_status check_rate_reading(mech_parser *p, const mech_stmt *s, int dir)
{
    const remat_expr *r = s->rate[dir];
    const mech_term *t = s->side[dir];
    int n = s->nside[dir], kind = s->rate_kind[dir];
    if (n == 0 || kind == RATE_WHOLE)
        return REMAT_OK; /* a source term, or a whole rate said so */
    remat_mechanism *m = p->m;
    unsigned char *mask = rmi_calloc((size_t)m->nspecies + 1, 1), *seen = rmi_calloc((size_t)m->nlets + 1, 1);
    if (!mask || !seen) {
        rmi_free(mask);
        rmi_free(seen);
        return nomem(p);
    }
    char reactants[256] = "", text[256];
    size_t o = 0;
    for (int i = 0; i < n; i++) {
        const mech_name *nm = &p->names.v[t[i].name];
        if (!mask[nm->index] && o < sizeof reactants - 70)
            o += (size_t)snprintf(reactants + o, sizeof reactants - o, "%s%s", o ? ", " : "", nm->name);
        mask[nm->index] = 1;
    }
    int sp = reads_reactant(p, r, mask, seen);
    rmi_free(mask);
    rmi_free(seen);
    /* the rate as written (arrhenius(...) and all), else as the tree prints it */
    if (s->rate_len[dir] > 0)
        snprintf(text, sizeof text, "%.*s", s->rate_len[dir] < 200 ? s->rate_len[dir] : 200, s->rate_src[dir]);
    else
        remat_expr_format(r, text, sizeof text);
    int is_k = r->kind == REMAT_EXPR_PARAM || r->kind == REMAT_EXPR_COND || r->kind == REMAT_EXPR_CONST ||
               r->kind == REMAT_EXPR_LET || r->kind == REMAT_EXPR_NUM;
    int line = s->rate_line[dir], col = s->rate_col[dir];
    if (kind == RATE_OLD && !is_k && sp < 0)
        return mech_warn(p, line, col,
                         "the rate '%s' names none of the reactants (%s), so it is taken as the whole rate, "
                         "without mass action; write ': k = %s' for a rate constant (mass action: times %s) "
                         "or ': rate = %s' for this reading",
                         text, reactants, text, reactants, text);
    if ((kind == RATE_CONST || is_k) && sp >= 0)
        return mech_warn(p, line, col,
                         "the rate constant '%s' reads reactant '%s'%s, and mass action multiplies it by the "
                         "reactants again; write ': rate = %s' if it is the whole rate",
                         text, m->species[sp], r->kind == REMAT_EXPR_LET ? " through its let" : "", text);
    return REMAT_OK;
}

remat_status mech_resolve(mech_parser *p)
{
    remat_mechanism *m = p->m;
    for (mech_stmt *s = p->first; s; s = s->next) {
        const mech_name *n = s->name >= 0 ? &p->names.v[s->name] : NULL;
        switch (s->kind) {
        case STMT_CONST: {
            MECH_TRY(resolve(p, s->value, CTX_CONST));
            double v = eval_const(s->value);
            if (!isfinite(v))
                return mech_error_at(p->file, s->value_line, s->value_col,
                                     "value of const '%s' is not finite (%s)", n->name,
                                     show_nonfinite(v));
            m->const_values[n->index] = v;
            break;
        }
        case STMT_PARAM: MECH_TRY(resolve_param(p, s)); break;
        case STMT_CONTROL: MECH_TRY(mech_resolve_control(p, s)); break;
        case STMT_COND: {
            MECH_TRY(resolve(p, s->value, CTX_CONST));
            double v = eval_const(s->value);
            if (!isfinite(v))
                return mech_error_at(p->file, s->value_line, s->value_col,
                                     "value of condition '%s' is not finite (%s)", n->name,
                                     show_nonfinite(v));
            m->cond_values[n->index] = v;
            break;
        }
        case STMT_LET:
            MECH_TRY(resolve(p, s->value, CTX_FULL));
            m->lets[n->index] = s->value;
            break;
        case STMT_ODE:
            MECH_TRY(resolve(p, s->value, CTX_FULL));
            p->ode[n->index] = s->value;
            break;
        case STMT_REACTION:
            for (int i = 0; i <= s->reversible; i++) {
                remat_expr *r = s->rate[i];
                MECH_TRY(resolve(p, r, CTX_FULL));
                /* a single name is a rate constant; a species or t cannot be one */
                if ((r->kind == REMAT_EXPR_SPECIES || r->kind == REMAT_EXPR_INDEP) && s->rate_kind[i] != RATE_WHOLE)
                    return mech_error_at(p->file, r->line, r->col,
                                         "'%s' is %s, but a rate given as a single name must be a "
                                         "parameter (or const or let); write the whole rate, "
                                         "e.g. 'k * %s'",
                                         r->name,
                                         r->kind == REMAT_EXPR_SPECIES ? "a species"
                                                                       : "the independent variable",
                                         r->name);
                MECH_TRY(check_rate_reading(p, s, i));
            }
            break;
        }
    }
    return REMAT_OK;
}

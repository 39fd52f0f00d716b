/*
 * rhs.c — reactions to right-hand sides.
 *
 * Mass action (Guldberg–Waage): a rate constant k with reactants
 * nu_1 X_1 + nu_2 X_2 + ... has rate k * X_1^nu_1 * X_2^nu_2 * ...; a
 * reversible reaction's net rate is forward - reverse. Species i then gets
 * dy_i/dt = sum_r (products_ir - reactants_ir) * rate_r, written as a
 * left-deep chain of ADD/SUB so that it reads like the formula
 * ("k1 * A - k2 * B"), with each reaction's net rate node shared.
 */
#include "core/error.h"
#include "models/kinetics/mechanism_impl.h"

static remat_status nomem(const mech_parser *p)
{
    return remat_error(REMAT_ERR_NOMEM, "%s: out of memory while building the rates", p->file);
}

static remat_status op(mech_parser *p, remat_expr_kind kind, const remat_expr *a, const remat_expr *b,
                       int line, int col, const remat_expr **out)
{
    remat_expr *e = mech_node(&p->m->arena, kind, line, col);
    if (!e)
        return nomem(p);
    e->nargs = b ? 2 : 1;
    e->args[0] = a;
    e->args[1] = b;
    *out = e;
    return REMAT_OK;
}

static remat_status num(mech_parser *p, double v, int line, int col, const remat_expr **out)
{
    remat_expr *e = mech_node(&p->m->arena, REMAT_EXPR_NUM, line, col);
    if (!e)
        return nomem(p);
    e->value = v;
    *out = e;
    return REMAT_OK;
}

static int is_rate_constant(const remat_expr *e)
{
    return e->kind == REMAT_EXPR_PARAM || e->kind == REMAT_EXPR_CONST || e->kind == REMAT_EXPR_LET ||
           e->kind == REMAT_EXPR_NUM;
}

/* k * prod X^nu over one side's species (repeats summed), or the rate itself. */
static remat_status side_rate(mech_parser *p, const remat_expr *k, const mech_term *t, int n,
                              const remat_expr **out)
{
    *out = k;
    if (!is_rate_constant(k))
        return REMAT_OK;
    for (int i = 0; i < n; i++) {
        int seen = 0, order = 0;
        for (int j = 0; j < i; j++)
            seen |= t[j].name == t[i].name;
        if (seen)
            continue;
        for (int j = i; j < n; j++)
            order += t[j].name == t[i].name ? t[j].coef : 0;
        const mech_name *nm = &p->names.v[t[i].name];
        remat_expr *x = mech_node(&p->m->arena, REMAT_EXPR_SPECIES, t[i].line, t[i].col);
        if (!x)
            return nomem(p);
        x->index = nm->index;
        x->name = nm->name;
        const remat_expr *factor = x;
        if (order != 1) {
            const remat_expr *e = NULL;
            MECH_TRY(num(p, order, t[i].line, t[i].col, &e));
            MECH_TRY(op(p, REMAT_EXPR_POW, x, e, t[i].line, t[i].col, &factor));
        }
        MECH_TRY(op(p, REMAT_EXPR_MUL, *out, factor, t[i].line, t[i].col, out));
    }
    return REMAT_OK;
}

remat_status mech_build_rhs(mech_parser *p)
{
    remat_mechanism *m = p->m;
    int r = 0;
    for (const mech_stmt *s = p->first; s; s = s->next) {
        if (s->kind != STMT_REACTION)
            continue;
        mech_reaction *rx = &m->reactions[r++];
        rx->line = s->line;
        rx->col = s->col;
        rx->stoich = remat_arena_alloc(&m->arena, (size_t)(m->nspecies ? m->nspecies : 1) * sizeof(double));
        if (!rx->stoich)
            return nomem(p);
        for (int side = 0; side < 2; side++)
            for (int i = 0; i < s->nside[side]; i++)
                rx->stoich[p->names.v[s->side[side][i].name].index] +=
                    side ? s->side[side][i].coef : -s->side[side][i].coef;
        MECH_TRY(side_rate(p, s->rate[0], s->side[0], s->nside[0], &rx->rate));
        if (s->reversible) {
            const remat_expr *rev;
            MECH_TRY(side_rate(p, s->rate[1], s->side[1], s->nside[1], &rev));
            MECH_TRY(op(p, REMAT_EXPR_SUB, rx->rate, rev, s->arrow_line, s->arrow_col, &rx->rate));
        }
    }
    for (int i = 0; i < m->nspecies; i++) {
        if (p->ode[i]) {
            m->rhs[i] = p->ode[i];
            continue;
        }
        const remat_expr *sum = NULL;
        for (r = 0; r < m->nreactions; r++) {
            const mech_reaction *rx = &m->reactions[r];
            double nu = rx->stoich[i];
            if (nu == 0)
                continue;
            const remat_expr *term = rx->rate, *c = NULL;
            double mag = nu < 0 ? -nu : nu;
            if (mag != 1) {
                MECH_TRY(num(p, mag, rx->line, rx->col, &c));
                MECH_TRY(op(p, REMAT_EXPR_MUL, c, rx->rate, rx->line, rx->col, &term));
            }
            if (!sum && nu < 0)
                MECH_TRY(op(p, REMAT_EXPR_NEG, term, NULL, rx->line, rx->col, &sum));
            else if (!sum)
                sum = term;
            else
                MECH_TRY(op(p, nu < 0 ? REMAT_EXPR_SUB : REMAT_EXPR_ADD, sum, term, rx->line, rx->col, &sum));
        }
        if (!sum)
            MECH_TRY(num(p, 0.0, 0, 0, &sum));
        m->rhs[i] = sum;
    }
    return REMAT_OK;
}

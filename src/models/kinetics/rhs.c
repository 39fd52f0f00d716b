/*
 * rhs.c — reactions to right-hand sides.
 *
 * Mass action (Guldberg–Waage): a rate constant k with reactants
 * nu_1 X_1 + nu_2 X_2 + ... has rate k * X_1^nu_1 * X_2^nu_2 * ...; a
 * reversible reaction's net rate is forward - reverse. Species i then gets
 * dy_i/dt = sum_r (products_ir - reactants_ir) * rate_r, written as a
 * left-deep chain of ADD/SUB so that it reads like the formula
 * ("k1 * A - k2 * B"), with each reaction's net rate node shared.
 *
 * Time and memory are linear in the mechanism's size: each reaction keeps
 * only the species it changes, and each species' list of reactions is
 * gathered in one pass (a species in no reaction costs nothing), so 40,000
 * reactions over 40,000 species do not make 1.6e9 (reaction, species) pairs.
 */
#include <stdlib.h>

#include "core/error.h"
#include "models/kinetics/mechanism_impl.h"

static remat_status nomem(const mech_parser *p)
{
    return rmi_error(REMAT_ERR_NOMEM, "%s: out of memory while building the rates", p->file);
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
    return e->kind == REMAT_EXPR_PARAM || e->kind == REMAT_EXPR_COND || e->kind == REMAT_EXPR_CONST ||
           e->kind == REMAT_EXPR_LET ||
           e->kind == REMAT_EXPR_NUM;
}

/* k * prod X^nu over one side's species (repeats summed, in order of first
 * appearance), or the rate itself. order[nspecies] is zero on entry and on
 * return. */
static remat_status side_rate(mech_parser *p, const remat_expr *k, int kind, const mech_term *t, int n, int *order,
                              const remat_expr **out)
{
    *out = k;
    if (kind == RATE_WHOLE || (kind == RATE_OLD && !is_rate_constant(k)))
        return REMAT_OK;
    for (int i = 0; i < n; i++)
        order[p->names.v[t[i].name].index] += t[i].coef;
    remat_status st = REMAT_OK;
    for (int i = 0; i < n && st == REMAT_OK; i++) {
        const mech_name *nm = &p->names.v[t[i].name];
        int nu = order[nm->index];
        if (nu == 0)
            continue; /* a repeat, already a factor */
        order[nm->index] = 0;
        remat_expr *x = mech_node(&p->m->arena, REMAT_EXPR_SPECIES, t[i].line, t[i].col);
        if (!x) {
            st = nomem(p);
            break;
        }
        x->index = nm->index;
        x->name = nm->name;
        const remat_expr *factor = x, *e = NULL;
        if (nu != 1 && (st = num(p, nu, t[i].line, t[i].col, &e)) == REMAT_OK)
            st = op(p, REMAT_EXPR_POW, x, e, t[i].line, t[i].col, &factor);
        if (st == REMAT_OK)
            st = op(p, REMAT_EXPR_MUL, *out, factor, t[i].line, t[i].col, out);
    }
    for (int i = 0; i < n; i++) /* after an error, too */
        order[p->names.v[t[i].name].index] = 0;
    return st;
}

/* rx->stoich: the net coefficient of each species the statement's sides
 * name, repeats and both sides summed, zeros dropped. net[nspecies] is zero
 * on entry and on return. */
static remat_status stoichiometry(mech_parser *p, const mech_stmt *s, double *net, mech_reaction *rx)
{
    int n = s->nside[0] + s->nside[1];
    rx->stoich = rmi_arena_alloc(&p->m->arena, (size_t)(n ? n : 1) * sizeof *rx->stoich);
    if (!rx->stoich)
        return nomem(p);
    for (int side = 0; side < 2; side++)
        for (int i = 0; i < s->nside[side]; i++)
            net[p->names.v[s->side[side][i].name].index] += side ? s->side[side][i].coef : -s->side[side][i].coef;
    rx->nstoich = 0;
    for (int side = 0; side < 2; side++)
        for (int i = 0; i < s->nside[side]; i++) {
            int sp = p->names.v[s->side[side][i].name].index;
            if (net[sp] != 0)
                rx->stoich[rx->nstoich++] = (mech_stoich){sp, net[sp]};
            net[sp] = 0; /* a repeat is counted once */
        }
    return REMAT_OK;
}

/* Species i's dy/dt: the chain over the reactions that change it, in file
 * order (rxs[n], coefficient nu[n]). */
static remat_status species_sum(mech_parser *p, const int *rxs, const double *nu, int n, const remat_expr **out)
{
    const remat_expr *sum = NULL;
    for (int k = 0; k < n; k++) {
        const mech_reaction *rx = &p->m->reactions[rxs[k]];
        const remat_expr *term = rx->rate, *c = NULL;
        double mag = nu[k] < 0 ? -nu[k] : nu[k];
        if (mag != 1) {
            MECH_TRY(num(p, mag, rx->line, rx->col, &c));
            MECH_TRY(op(p, REMAT_EXPR_MUL, c, rx->rate, rx->line, rx->col, &term));
        }
        if (!sum && nu[k] < 0)
            MECH_TRY(op(p, REMAT_EXPR_NEG, term, NULL, rx->line, rx->col, &sum));
        else if (!sum)
            sum = term;
        else
            MECH_TRY(op(p, nu[k] < 0 ? REMAT_EXPR_SUB : REMAT_EXPR_ADD, sum, term, rx->line, rx->col, &sum));
    }
    if (!sum)
        MECH_TRY(num(p, 0.0, 0, 0, &sum));
    *out = sum;
    return REMAT_OK;
}

remat_status mech_build_rhs(mech_parser *p)
{
    remat_mechanism *m = p->m;
    size_t S = (size_t)m->nspecies + 1;
    int *order = calloc(S, sizeof *order), *start = calloc(S + 1, sizeof *start), *rxs = NULL;
    double *net = calloc(S, sizeof *net), *nus = NULL;
    remat_status st = order && start && net ? REMAT_OK : nomem(p);
    int r = 0;
    for (const mech_stmt *s = p->first; s && st == REMAT_OK; s = s->next) {
        if (s->kind != STMT_REACTION)
            continue;
        mech_reaction *rx = &m->reactions[r++];
        rx->line = s->line;
        rx->col = s->col;
        if ((st = stoichiometry(p, s, net, rx)) != REMAT_OK ||
            (st = side_rate(p, s->rate[0], s->rate_kind[0], s->side[0], s->nside[0], order, &rx->rate)) != REMAT_OK)
            break;
        if (s->reversible) {
            const remat_expr *rev;
            if ((st = side_rate(p, s->rate[1], s->rate_kind[1], s->side[1], s->nside[1], order, &rev)) == REMAT_OK)
                st = op(p, REMAT_EXPR_SUB, rx->rate, rev, s->arrow_line, s->arrow_col, &rx->rate);
        }
    }
    /* each species' reactions in file order: counts, offsets, then one fill */
    size_t total = 0;
    for (r = 0; r < m->nreactions && st == REMAT_OK; r++)
        for (int k = 0; k < m->reactions[r].nstoich; k++)
            start[m->reactions[r].stoich[k].species + 1]++, total++;
    for (size_t i = 1; i <= S; i++)
        start[i] += start[i - 1];
    if (st == REMAT_OK && (!(rxs = malloc((total + 1) * sizeof *rxs)) || !(nus = malloc((total + 1) * sizeof *nus))))
        st = nomem(p);
    for (r = 0; r < m->nreactions && st == REMAT_OK; r++)
        for (int k = 0; k < m->reactions[r].nstoich; k++) {
            const mech_stoich *e = &m->reactions[r].stoich[k];
            int at = start[e->species] + order[e->species]++; /* order[]: filled so far */
            rxs[at] = r;
            nus[at] = e->nu;
        }
    for (int i = 0; i < m->nspecies && st == REMAT_OK; i++)
        if (p->ode[i])
            m->rhs[i] = p->ode[i];
        else
            st = species_sum(p, rxs + start[i], nus + start[i], start[i + 1] - start[i], &m->rhs[i]);
    free(order);
    free(start);
    free(net);
    free(rxs);
    free(nus);
    return st;
}

/*
 * gas_desc.c — what both gas readers share: the description's tables,
 * reaction equations ("2 H + O2 (+M) <=> HO2 (+M)", with or without spaces)
 * and units ("cm^3/mol/s", "kcal/mol", "atm") to SI with moles.
 */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/error.h"
#include "models/kinetics/gas_impl.h"

remat_status gas_error(const char *file, int line, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return rmi_error(REMAT_ERR_PARSE, "%s:%d: %s", file, line, msg);
}

remat_status gas_nomem(const char *file) { return rmi_error(REMAT_ERR_NOMEM, "%s: out of memory", file); }

int gas_find_species(const gas_desc *d, const char *name, size_t len)
{
    for (int k = 0; k < d->nsp; k++)
        if (strlen(d->sp[k].name) == len && memcmp(d->sp[k].name, name, len) == 0)
            return k;
    return -1;
}

static void *grow(remat_arena *a, void *v, int n, int *cap, size_t size)
{
    if (n < *cap)
        return v;
    int c = *cap ? 2 * *cap : 64;
    void *w = rmi_arena_alloc(a, (size_t)c * size);
    if (!w)
        return NULL;
    if (n)
        memcpy(w, v, (size_t)n * size);
    *cap = c;
    return w;
}

gas_species *gas_add_species(gas_desc *d)
{
    gas_species *v = grow(&d->arena, d->sp, d->nsp, &d->capsp, sizeof *v);
    if (!v)
        return NULL;
    d->sp = v;
    memset(&v[d->nsp], 0, sizeof *v);
    return &v[d->nsp++];
}

gas_reaction *gas_add_reaction(gas_desc *d)
{
    gas_reaction *v = grow(&d->arena, d->rx, d->nrx, &d->caprx, sizeof *v);
    if (!v)
        return NULL;
    d->rx = v;
    gas_reaction *r = &v[d->nrx++];
    memset(r, 0, sizeof *r);
    r->collider = -1;
    r->default_eff = 1;
    return r;
}

/* ---- elements ---- */

int gas_find_element(const gas_desc *d, const char *name, size_t len)
{
    for (int e = 0; e < d->nel; e++)
        if (strlen(d->el[e]) == len && strncasecmp(d->el[e], name, len) == 0)
            return e;
    return -1;
}

remat_status gas_declare_element(gas_desc *d, const char *file, int line, const char *name, size_t len)
{
    if (gas_find_element(d, name, len) >= 0)
        return REMAT_OK;
    if (!len || len > 16)
        return gas_error(file, line, "'%.*s' is not an element symbol", (int)len, name);
    const char **v = grow(&d->arena, d->el, d->nel, &d->capel, sizeof *v);
    if (!v || !(v[d->nel] = rmi_arena_strndup(&d->arena, name, len)))
        return gas_nomem(file);
    d->el = v;
    d->nel++;
    return REMAT_OK;
}

remat_status gas_species_atoms(gas_desc *d, gas_species *sp, const char *file, int line, const char *name,
                               size_t len, double n)
{
    int e = gas_find_element(d, name, len);
    if (e < 0 && d->el_declared)
        return gas_error(file, line, "species '%s' contains the element '%.*s', which is not declared (%s)",
                         sp->name, (int)len, name, d->el_declared == 2 ? "the phase's 'elements'" : "ELEMENTS");
    if (e < 0) {
        MECH_TRY(gas_declare_element(d, file, line, name, len));
        e = d->nel - 1;
    }
    if (!(n >= 0) || !isfinite(n))
        return gas_error(file, line, "species '%s': %g atoms of '%.*s'", sp->name, n, (int)len, name);
    for (int i = 0; i < sp->natoms; i++)
        if (sp->atoms[i].el == e) {
            sp->atoms[i].n += n;
            return REMAT_OK;
        }
    struct gas_atom *a = rmi_arena_alloc(&d->arena, sizeof *a * (size_t)(sp->natoms + 1));
    if (!a)
        return gas_nomem(file);
    if (sp->natoms)
        memcpy(a, sp->atoms, sizeof *a * (size_t)sp->natoms);
    a[sp->natoms].el = e;
    a[sp->natoms].n = n;
    sp->atoms = a;
    sp->natoms++;
    return REMAT_OK;
}

static double side_atoms(const gas_desc *d, const gas_reaction *r, int side, int e)
{
    double t = 0;
    for (int i = 0; i < r->nside[side]; i++) {
        const gas_species *sp = &d->sp[r->side[side][i].species];
        for (int j = 0; j < sp->natoms; j++)
            if (sp->atoms[j].el == e)
                t += r->side[side][i].nu * sp->atoms[j].n;
    }
    return t;
}

remat_status gas_check_balance(const gas_desc *d)
{
    for (int i = 0; i < d->nrx; i++) {
        const gas_reaction *r = &d->rx[i];
        for (int e = 0; e < d->nel; e++) {
            double a = side_atoms(d, r, 0, e), b = side_atoms(d, r, 1, e);
            if (a + b > 0 && fabs(b - a) / (a + b) > 1e-4)
                return gas_error(d->file, r->line,
                                 "reaction %d '%s' is unbalanced: element %s, %g on the reactants' side and %g "
                                 "on the products' (every element's atoms must balance, as Cantera checks)",
                                 i + 1, r->eq ? r->eq : "?", d->el[e], a, b);
        }
    }
    return REMAT_OK;
}

/* ---- equations ---- */

/* one side: terms split at '+' (a "(+X)" already cut out) */
static remat_status parse_side(gas_desc *d, gas_reaction *r, int side, const char *s, size_t n, int *plus_m)
{
    gas_term *t = rmi_arena_alloc(&d->arena, (n / 1 + 1) * sizeof *t);
    if (!t)
        return gas_nomem(d->file);
    int nt = 0;
    size_t i = 0;
    while (i < n) {
        size_t j = i;
        /* a term ends at a '+' that is not its first character */
        while (j < n && !(s[j] == '+' && j > i))
            j++;
        const char *tok = s + i;
        size_t len = j - i;
        /* a name may itself end in '+' only as an ion: not supported */
        if (len == 0)
            return gas_error(d->file, r->line, "empty term in the reaction equation");
        int sp = gas_find_species(d, tok, len);
        double nu = 1;
        if (sp < 0 && (isdigit((unsigned char)tok[0]) || tok[0] == '.')) {
            char *end;
            nu = strtod(tok, &end);
            size_t used = (size_t)(end - tok);
            if (used < len && tok[used] == '*')
                used++;
            sp = gas_find_species(d, tok + used, len - used);
            tok += used;
            len -= used;
            if (!(nu > 0))
                return gas_error(d->file, r->line, "stoichiometric coefficient must be positive in '%.*s'",
                                 (int)(j - i), s + i);
        }
        if (sp < 0 && len == 1 && (tok[0] == 'M' || tok[0] == 'm')) {
            if (*plus_m)
                return gas_error(d->file, r->line, "'M' twice on one side of the reaction equation");
            *plus_m = 1;
        } else if (sp < 0) {
            if (len > 1 && (tok[len - 1] == '+' || tok[len - 1] == '-'))
                return gas_error(d->file, r->line,
                                 "species '%.*s' is not declared (charged species, ions and electrons, are not supported)",
                                 (int)len, tok);
            return gas_error(d->file, r->line, "species '%.*s' in the reaction equation is not declared", (int)len,
                             tok);
        } else {
            int k = 0;
            while (k < nt && t[k].species != sp)
                k++;
            if (k == nt)
                t[nt++] = (gas_term){sp, 0};
            t[k].nu += nu;
        }
        i = j < n ? j + 1 : j;
        if (j < n && j + 1 == n)
            return gas_error(d->file, r->line, "reaction equation side ends with '+'");
    }
    /* in species order, so that the same reaction written in another order
     * (yaml2ck writes "H2 + O" for "O + H2") is computed alike */
    for (int a = 1; a < nt; a++)
        for (int b = a; b > 0 && t[b - 1].species > t[b].species; b--) {
            gas_term x = t[b];
            t[b] = t[b - 1];
            t[b - 1] = x;
        }
    r->side[side] = t;
    r->nside[side] = nt;
    return REMAT_OK;
}

remat_status gas_parse_equation(gas_desc *d, gas_reaction *r, const char *eq, size_t n, int *has_m)
{
    /* whitespace removed */
    char *s = rmi_arena_alloc(&d->arena, n + 1);
    size_t e0 = 0, e1 = n; /* the equation as written, outer blanks cut */
    while (e0 < n && isspace((unsigned char)eq[e0]))
        e0++;
    while (e1 > e0 && isspace((unsigned char)eq[e1 - 1]))
        e1--;
    if (!s || !(r->eq = rmi_arena_strndup(&d->arena, eq + e0, e1 - e0)))
        return gas_nomem(d->file);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (!isspace((unsigned char)eq[i]))
            s[m++] = eq[i];
    s[m] = 0;
    const char *arrow = NULL;
    size_t alen = 0;
    for (size_t i = 0; i < m && !arrow; i++) {
        if (strncmp(s + i, "<=>", 3) == 0)
            arrow = s + i, alen = 3, r->reversible = 1;
        else if (strncmp(s + i, "=>", 2) == 0)
            arrow = s + i, alen = 2, r->reversible = 0;
        else if (s[i] == '=')
            arrow = s + i, alen = 1, r->reversible = 1;
    }
    if (!arrow)
        return gas_error(d->file, r->line, "reaction equation '%.*s' has no '<=>', '=>' or '='", (int)n, eq);
    *has_m = 0;
    int collider[2] = {-2, -2}; /* -2: none, -1: M, else the species */
    const char *part[2] = {s, arrow + alen};
    size_t plen[2] = {(size_t)(arrow - s), m - (size_t)(arrow + alen - s)};
    char *buf[2];
    for (int side = 0; side < 2; side++) {
        buf[side] = rmi_arena_alloc(&d->arena, plen[side] + 1);
        if (!buf[side])
            return gas_nomem(d->file);
        /* cut "(+X)" where X is M or a species; CH2(S) stays a name */
        size_t w = 0;
        for (size_t i = 0; i < plen[side]; i++) {
            const char *p = part[side] + i;
            if (p[0] == '(' && i + 1 < plen[side] && p[1] == '+') {
                const char *close = memchr(p, ')', plen[side] - i);
                if (close) {
                    size_t len = (size_t)(close - p - 2);
                    int sp = gas_find_species(d, p + 2, len);
                    if (sp >= 0 || (len == 1 && (p[2] == 'M' || p[2] == 'm'))) {
                        if (collider[side] != -2)
                            return gas_error(d->file, r->line, "two '(+M)' on one side of the reaction equation");
                        collider[side] = sp >= 0 ? sp : -1;
                        i += (size_t)(close - p);
                        continue;
                    }
                    return gas_error(d->file, r->line, "third body '(+%.*s)' is not a declared species", (int)len,
                                     p + 2);
                }
            }
            buf[side][w++] = *p;
        }
        buf[side][w] = 0;
        plen[side] = w;
    }
    if ((collider[0] == -2) != (collider[1] == -2) || collider[0] != collider[1])
        return gas_error(d->file, r->line, "'(+M)' must stand on both sides of the reaction equation, the same");
    int pm[2] = {0, 0};
    for (int side = 0; side < 2; side++)
        MECH_TRY(parse_side(d, r, side, buf[side], plen[side], &pm[side]));
    if (pm[0] != pm[1])
        return gas_error(d->file, r->line, "'+ M' must stand on both sides of the reaction equation");
    if (pm[0] && collider[0] != -2)
        return gas_error(d->file, r->line, "a reaction equation has '+ M' and '(+M)'");
    if (r->nside[0] == 0 || r->nside[1] == 0)
        return gas_error(d->file, r->line, "a reaction needs reactants and products");
    if (collider[0] != -2) {
        *has_m = 2;
        r->collider = collider[0] >= 0 ? collider[0] : -1;
    } else if (pm[0]) {
        *has_m = 1;
    }
    return REMAT_OK;
}

/* ---- units ---- */

typedef struct {
    const char *name;
    double factor;
    int quantity, energy, kelvin; /* exponents of the dimensions we look at */
} unit_def;

static const unit_def units[] = {
    {"m", 1, 0, 0, 0},        {"cm", 1e-2, 0, 0, 0},      {"mm", 1e-3, 0, 0, 0},       {"km", 1e3, 0, 0, 0},
    {"um", 1e-6, 0, 0, 0},    {"nm", 1e-9, 0, 0, 0},      {"angstrom", 1e-10, 0, 0, 0}, {"L", 1e-3, 0, 0, 0},
    {"mol", 1, 1, 0, 0},      {"gmol", 1, 1, 0, 0},       {"kmol", 1e3, 1, 0, 0},
    {"molec", 1 / GAS_AVOGADRO, 1, 0, 0}, {"molecule", 1 / GAS_AVOGADRO, 1, 0, 0},
    {"s", 1, 0, 0, 0},        {"ms", 1e-3, 0, 0, 0},      {"us", 1e-6, 0, 0, 0},       {"ns", 1e-9, 0, 0, 0},
    {"min", 60, 0, 0, 0},     {"hr", 3600, 0, 0, 0},
    {"J", 1, 0, 1, 0},        {"kJ", 1e3, 0, 1, 0},       {"MJ", 1e6, 0, 1, 0},        {"cal", 4.184, 0, 1, 0},
    {"kcal", 4184, 0, 1, 0},  {"erg", 1e-7, 0, 1, 0},     {"eV", 1.602176634e-19, 0, 1, 0},
    {"Pa", 1, 0, 0, 0},       {"kPa", 1e3, 0, 0, 0},      {"MPa", 1e6, 0, 0, 0},       {"bar", 1e5, 0, 0, 0},
    {"atm", GAS_ONE_ATM, 0, 0, 0}, {"dyn", 1e-5, 0, 0, 0}, {"N", 1, 0, 0, 0},
    {"g", 1e-3, 0, 0, 0},     {"kg", 1, 0, 0, 0},         {"K", 1, 0, 0, 1},
};

remat_status gas_unit_factor(const char *file, int line, const char *text, double *factor, int *kelvin)
{
    double f = 1;
    int sign = 1, nq = 0, ne = 0, nk = 0;
    const char *p = text;
    *kelvin = 0;
    while (*p) {
        while (*p == ' ')
            p++;
        if (*p == '1' && (p[1] == '/' || p[1] == 0)) { /* "1/s" */
            p++;
            continue;
        }
        size_t len = strcspn(p, "*/^ ");
        const unit_def *u = NULL;
        for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
            if (strlen(units[i].name) == len && strncmp(units[i].name, p, len) == 0)
                u = &units[i];
        if (!u)
            return gas_error(file, line, "unknown unit '%.*s' in '%s'", (int)len, p, text);
        p += len;
        while (*p == ' ')
            p++;
        double e = 1;
        if (*p == '^') {
            char *end;
            e = strtod(p + 1, &end);
            if (end == p + 1)
                return gas_error(file, line, "bad exponent in unit '%s'", text);
            p = end;
        }
        f *= pow(u->factor, sign * e);
        nq += (int)(sign * e) * u->quantity;
        ne += (int)(sign * e) * u->energy;
        nk += (int)(sign * e) * u->kelvin;
        while (*p == ' ')
            p++;
        if (*p == '/')
            sign = -1, p++;
        else if (*p == '*')
            sign = 1, p++;
        else if (*p)
            return gas_error(file, line, "cannot read unit '%s'", text);
    }
    *factor = f;
    *kelvin = nk == 1 && ne == 0 && nq == 0 ? 1 : (ne == 1 && nq == 0 ? 2 : 0); /* 2: energy per molecule */
    return REMAT_OK;
}

void gas_units_default(gas_units *u)
{
    *u = (gas_units){.length = 1, .quantity = 1e3, .time = 1, .energy = 1, .pressure = 1, .act_energy = 0};
}

remat_status gas_units_set(const char *file, int line, gas_units *u, const char *dim, const char *unit)
{
    double f;
    int k;
    MECH_TRY(gas_unit_factor(file, line, unit, &f, &k));
    if (strcmp(dim, "length") == 0)
        u->length = f;
    else if (strcmp(dim, "quantity") == 0)
        u->quantity = f;
    else if (strcmp(dim, "time") == 0)
        u->time = f;
    else if (strcmp(dim, "energy") == 0)
        u->energy = f;
    else if (strcmp(dim, "pressure") == 0)
        u->pressure = f;
    else if (strcmp(dim, "activation-energy") == 0) {
        u->act_kelvin = k == 1;
        u->act_energy = k == 2 ? f * GAS_AVOGADRO : f;
    } else if (strcmp(dim, "mass") != 0 && strcmp(dim, "temperature") != 0 && strcmp(dim, "current") != 0)
        return gas_error(file, line, "unknown unit dimension '%s'", dim);
    return REMAT_OK;
}

double gas_reactant_order(const gas_reaction *r)
{
    double n = 0;
    const gas_term *t = r->norders ? r->orders : r->side[0];
    int nt = r->norders ? r->norders : r->nside[0];
    for (int i = 0; i < nt; i++)
        n += t[i].nu;
    return n;
}

double gas_si(double v, double factor)
{
    static const double p10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    double k = factor > 0 ? round(log10(factor)) : 0;
    if (factor > 0 && fabs(k) <= 22) {
        double e = p10[(int)fabs(k)]; /* exact */
        if (fabs((k >= 0 ? factor / e : factor * e) - 1) <= 1e-12)
            return k >= 0 ? v * e : v / e;
    }
    return v * factor;
}

double gas_a_factor(const gas_units *u, double order)
{
    return pow(u->length * u->length * u->length / u->quantity, order - 1) / u->time;
}

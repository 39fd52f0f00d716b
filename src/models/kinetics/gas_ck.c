/*
 * gas_ck.c — CHEMKIN-II input into a gas description: ELEMENTS,
 * SPECIES, THERMO (in the mechanism file or a separate one; NASA 7
 * coefficients in the fixed 80-column format, high range first; the
 * element composition from columns 25-44 and 74-78 of line 1) and
 * REACTIONS with their auxiliary lines (LOW, HIGH, TROE, SRI, REV, PLOG,
 * FORD, DUPLICATE, third-body efficiencies "AR/0.7/"). '!' starts a
 * comment; keywords are case-insensitive; units from the REACTIONS line
 * (CAL/MOLE by default, KCAL/MOLE, JOULES/MOLE, KJOULES/MOLE, KELVINS,
 * EVOLTS; MOLES or MOLECULES), A in cm, s and the quantity.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/error.h"
#include "models/kinetics/gas_impl.h"

typedef struct {
    const char *file;
    const char *p, *end;
    int line;
    char buf[4096]; /* the current line, comment cut, trailing space cut */
    char raw[4096]; /* the same with the comment (fixed-column thermo) */
} ck_lines;

static int next_line(ck_lines *L)
{
    if (L->p >= L->end)
        return 0;
    const char *e = memchr(L->p, '\n', (size_t)(L->end - L->p));
    size_t n = e ? (size_t)(e - L->p) : (size_t)(L->end - L->p);
    size_t k = n < sizeof L->buf - 1 ? n : sizeof L->buf - 1;
    memcpy(L->raw, L->p, k);
    L->raw[k] = 0;
    if (k && L->raw[k - 1] == '\r')
        L->raw[--k] = 0;
    memcpy(L->buf, L->raw, k + 1);
    char *bang = strchr(L->buf, '!');
    if (bang)
        *bang = 0;
    size_t m = strlen(L->buf);
    while (m && isspace((unsigned char)L->buf[m - 1]))
        L->buf[--m] = 0;
    L->line++;
    L->p = e ? e + 1 : L->end;
    return 1;
}

static const char *skip_ws(const char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    return s;
}

static int kw(const char *s, const char *w)
{
    size_t n = strlen(w);
    return strncasecmp(s, w, n) == 0 && (s[n] == 0 || isspace((unsigned char)s[n]) || s[n] == '/');
}

static int is_end(const char *s) { return kw(skip_ws(s), "END"); }

/* ---- thermo ---- */

static double field(const char *raw, int col, int width, int *ok)
{
    char tmp[32];
    int len = (int)strlen(raw);
    if (col >= len) {
        *ok = 0;
        return 0;
    }
    snprintf(tmp, sizeof tmp, "%.*s", width, raw + col);
    for (char *c = tmp; *c; c++)
        if (*c == 'D' || *c == 'd')
            *c = 'E';
    char *e;
    double v = strtod(tmp, &e);
    if (e == tmp || *skip_ws(e)) {
        *ok = 0;
        return 0;
    }
    return v;
}

/* the THERMO section from L's current position (after the THERMO line, or
 * a whole thermo file); species not in d are skipped */
static remat_status read_thermo(gas_desc *d, ck_lines *L, int in_file)
{
    double tdef[3] = {300, 1000, 5000};
    int have_def = 0;
    while (next_line(L)) {
        const char *s = skip_ws(L->buf);
        if (!*s)
            continue;
        if (kw(s, "THERMO")) {
            in_file = 0;
            continue;
        }
        if (is_end(s))
            return REMAT_OK;
        if (kw(s, "REACTIONS") || kw(s, "REAC") || kw(s, "SPECIES") || kw(s, "SPEC"))
            return gas_error(L->file, L->line, "THERMO section without END before '%s'", s);
        if (!have_def) { /* the line of default temperatures */
            char *e1, *e2, *e3;
            double a = strtod(s, &e1), b = strtod(e1, &e2), c = strtod(e2, &e3);
            if (e1 != s && e2 != e1 && e3 != e2) {
                tdef[0] = a, tdef[1] = b, tdef[2] = c;
                have_def = 1;
                continue;
            }
            have_def = 1;
        }
        /* line 1 of an entry: the name in columns 1-18 */
        char name[64];
        int line1 = L->line;
        char raw1[4096];
        snprintf(raw1, sizeof raw1, "%s", L->raw);
        sscanf(raw1, "%63s", name);
        double c[14];
        int ok = 1;
        for (int i = 0; i < 3; i++) {
            if (!next_line(L))
                return gas_error(L->file, line1, "thermo data of '%s' end before its 4 lines", name);
            for (int j = 0; j < (i == 2 ? 4 : 5); j++)
                c[5 * i + j] = field(L->raw, 15 * j, 15, &ok);
            if (!ok)
                return gas_error(L->file, L->line, "thermo data of '%s': line %d is not 15-column numbers", name,
                                 i + 2);
        }
        int k = gas_find_species(d, name, strlen(name));
        if (k < 0 || d->sp[k].has_thermo)
            continue; /* another mechanism's species, or an entry already read (the first one wins) */
        gas_species *sp = &d->sp[k];
        /* the composition: (2-char symbol, 3-char count) at columns 25-44, a fifth at 74-78 */
        size_t len1 = strlen(raw1);
        for (int f = 0; f < 5; f++) {
            size_t at = f < 4 ? 24 + 5 * (size_t)f : 73;
            if (at >= len1)
                continue;
            char sym[3] = {0}, cnt[4] = {0};
            memcpy(sym, raw1 + at, len1 - at < 2 ? len1 - at : 2);
            if (len1 > at + 2)
                memcpy(cnt, raw1 + at + 2, len1 - at - 2 < 3 ? len1 - at - 2 : 3);
            char *a = sym;
            while (*a == ' ')
                a++;
            size_t sl = strlen(a);
            while (sl && a[sl - 1] == ' ')
                a[--sl] = 0;
            if (!sl || !strcmp(a, "0") || !strcmp(a, "00"))
                continue;
            char *e;
            double na = strtod(cnt, &e);
            while (*e == ' ')
                e++;
            if (e == cnt || *e)
                return gas_error(L->file, line1,
                                 "thermo data of '%s': element '%s' has the count '%s' (columns %zu-%zu)", name, a,
                                 cnt, at + 3, at + 5);
            if (na != 0)
                MECH_TRY(gas_species_atoms(d, sp, L->file, line1, a, sl, na));
        }
        int okt = 1;
        double tlo = field(raw1, 45, 10, &okt), thi = (okt = 1, field(raw1, 55, 10, &okt));
        if (!okt)
            thi = tdef[2];
        int okm = 1;
        double tmid = field(raw1, 65, 8, &okm);
        if (!okm)
            tmid = tdef[1];
        if (!(tlo > 0))
            tlo = tdef[0];
        sp->nranges = 2;
        sp->tmin = tlo, sp->tmid = tmid, sp->tmax = thi;
        memcpy(sp->hi, c, 7 * sizeof *c);
        memcpy(sp->lo, c + 7, 7 * sizeof *c);
        sp->has_thermo = 1;
        (void)in_file;
    }
    return REMAT_OK;
}

/* ---- reactions ---- */

typedef struct {
    double ea; /* J/mol per unit; 0 with kelvin */
    int kelvin;
    double quantity; /* mol per unit */
} ck_units;

static remat_status reactions_units(const char *file, int line, const char *s, ck_units *u)
{
    *u = (ck_units){.ea = 4.184, .quantity = 1};
    char tok[64];
    int n;
    s = skip_ws(s);
    while (*s && sscanf(s, "%63s%n", tok, &n) == 1) {
        s = skip_ws(s + n);
        if (!strcasecmp(tok, "CAL/MOLE") || !strcasecmp(tok, "CAL/MOL"))
            u->ea = 4.184;
        else if (!strcasecmp(tok, "KCAL/MOLE") || !strcasecmp(tok, "KCAL/MOL"))
            u->ea = 4184;
        else if (!strcasecmp(tok, "JOULES/MOLE") || !strcasecmp(tok, "JOULES/MOL") || !strcasecmp(tok, "J/MOL"))
            u->ea = 1;
        else if (!strcasecmp(tok, "KJOULES/MOLE") || !strcasecmp(tok, "KJOULES/MOL") || !strcasecmp(tok, "KJ/MOL"))
            u->ea = 1000;
        else if (!strcasecmp(tok, "KELVINS") || !strcasecmp(tok, "KELVIN"))
            u->kelvin = 1;
        else if (!strcasecmp(tok, "EVOLTS") || !strcasecmp(tok, "EVOLT"))
            u->ea = 1.602176634e-19 * GAS_AVOGADRO;
        else if (!strcasecmp(tok, "MOLES") || !strcasecmp(tok, "MOLE"))
            u->quantity = 1;
        else if (!strcasecmp(tok, "MOLECULES"))
            u->quantity = 1 / GAS_AVOGADRO;
        else
            return gas_error(file, line, "REACTIONS: unknown unit '%s'", tok);
    }
    return REMAT_OK;
}

static double ea_si(const ck_units *u, double v) { return u->kelvin ? v * GAS_R : v * u->ea; }

static double a_si(const ck_units *u, double A, double order)
{
    gas_units g = {.length = 0.01, .quantity = u->quantity, .time = 1};
    return gas_si(A, gas_a_factor(&g, order));
}

/* numbers between '/' and '/' after a keyword: up to max into v */
static int slash_numbers(const char *s, double *v, int max)
{
    const char *a = strchr(s, '/');
    if (!a)
        return -1;
    const char *b = strchr(a + 1, '/');
    if (!b)
        return -1;
    int n = 0;
    const char *p = a + 1;
    while (p < b) {
        p = skip_ws(p);
        if (p >= b)
            break;
        char *e;
        double x = strtod(p, &e);
        if (e == p || e > b || n == max)
            return -1;
        v[n++] = x;
        p = e;
    }
    return n;
}

static const char *const unsupported_aux[] = {"CHEB", "PCHEB", "TCHEB", "TDEP", "XSMI", "MOME", "EXCI", "LT",
                                              "RLT", "JAN", "FIT1", "UNITS", "RORD", "USRPROG", NULL};

static remat_status aux_line(gas_desc *d, gas_reaction *r, const ck_units *u, const char *file, int line,
                             const char *s, double order, int *lowhigh)
{
    s = skip_ws(s);
    double v[8];
    int n;
    for (int i = 0; unsupported_aux[i]; i++)
        if (kw(s, unsupported_aux[i]))
            return gas_error(file, line, "CHEMKIN keyword %s is not supported%s", unsupported_aux[i],
                             strncasecmp(unsupported_aux[i], "CHEB", 4) == 0 || strcasecmp(unsupported_aux[i], "PCHEB") == 0
                                 ? " (Chebyshev rates are left out)"
                                 : "");
    if (kw(s, "DUPLICATE") || kw(s, "DUP")) {
        r->duplicate = 1;
        return REMAT_OK;
    }
    if (kw(s, "LOW") || kw(s, "HIGH")) {
        int high = kw(s, "HIGH");
        if ((n = slash_numbers(s, v, 3)) != 3)
            return gas_error(file, line, "%s needs /A b E/", high ? "HIGH" : "LOW");
        r->kind = high ? GAS_CHEM_ACT : GAS_FALLOFF;
        *lowhigh = 1;
        /* falloff: main = kinf (order n), LOW = k0 (n + 1); chem. act.: main = k0 (n), HIGH = kinf (n - 1) */
        r->k2 = (gas_arrhenius){a_si(u, v[0], high ? order - 1 : order + 1), v[1], ea_si(u, v[2])};
        return REMAT_OK;
    }
    if (kw(s, "TROE")) {
        if ((n = slash_numbers(s, v, 4)) < 3)
            return gas_error(file, line, "TROE needs /A T3 T1 [T2]/");
        r->ff = GAS_F_TROE;
        memcpy(r->troe, v, (size_t)n * sizeof *v);
        r->troe_t2 = n == 4;
        return REMAT_OK;
    }
    if (kw(s, "SRI")) {
        if ((n = slash_numbers(s, v, 5)) != 3 && n != 5)
            return gas_error(file, line, "SRI needs /a b c [d e]/");
        r->ff = GAS_F_SRI;
        r->sri[3] = 1, r->sri[4] = 0;
        memcpy(r->sri, v, (size_t)n * sizeof *v);
        return REMAT_OK;
    }
    if (kw(s, "REV")) {
        if ((n = slash_numbers(s, v, 3)) != 3)
            return gas_error(file, line, "REV needs /A b E/");
        if (!r->reversible)
            return gas_error(file, line, "REV on an irreversible reaction");
        double rorder = 0;
        for (int j = 0; j < r->nside[1]; j++)
            rorder += r->side[1][j].nu;
        r->has_rev = 1;
        r->rev = (gas_arrhenius){a_si(u, v[0], rorder + (r->kind == GAS_THREE_BODY)), v[1], ea_si(u, v[2])};
        return REMAT_OK;
    }
    if (kw(s, "PLOG")) {
        if ((n = slash_numbers(s, v, 4)) != 4)
            return gas_error(file, line, "PLOG needs /P A b E/");
        if (r->nplog == 0) {
            r->plog_p = rmi_arena_alloc(&d->arena, 64 * sizeof *r->plog_p);
            r->plog_k = rmi_arena_alloc(&d->arena, 64 * sizeof *r->plog_k);
            if (!r->plog_p || !r->plog_k)
                return gas_nomem(file);
        }
        if (r->nplog == 64)
            return gas_error(file, line, "more than 64 PLOG lines");
        if (!(v[0] > 0) || (r->nplog && v[0] * GAS_ONE_ATM < r->plog_p[r->nplog - 1]) || !(v[1] > 0))
            return gas_error(file, line, "PLOG pressures must be positive and ascending, A > 0");
        r->kind = GAS_PLOG;
        r->plog_p[r->nplog] = v[0] * GAS_ONE_ATM;
        r->plog_k[r->nplog++] = (gas_arrhenius){a_si(u, v[1], order), v[2], ea_si(u, v[3])};
        return REMAT_OK;
    }
    if (kw(s, "FORD")) {
        char name[64];
        double o;
        const char *a = strchr(s, '/');
        if (!a || sscanf(a + 1, "%63s %lf", name, &o) != 2)
            return gas_error(file, line, "FORD needs /SPECIES order/");
        int k = gas_find_species(d, name, strlen(name));
        if (k < 0)
            return gas_error(file, line, "FORD: '%s' is not a species", name);
        if (!r->orders) {
            r->orders = rmi_arena_alloc(&d->arena, (size_t)(d->nsp + r->nside[0] + 1) * sizeof *r->orders);
            if (!r->orders)
                return gas_nomem(file);
            for (int j = 0; j < r->nside[0]; j++)
                r->orders[r->norders++] = r->side[0][j];
        }
        int j = 0;
        while (j < r->norders && r->orders[j].species != k)
            j++;
        if (j == r->norders)
            r->norders++;
        r->orders[j] = (gas_term){k, o};
        return REMAT_OK;
    }
    /* efficiencies: NAME/value/ ... (finish_reaction checks there is a third body) */
    const char *p = s;
    while (*p) {
        p = skip_ws(p);
        if (!*p)
            break;
        const char *sl = strchr(p, '/');
        if (!sl)
            return gas_error(file, line, "cannot read '%s' (an auxiliary line: KEYWORD /numbers/ or SPECIES/eff/)",
                             p);
        size_t nl = (size_t)(sl - p);
        while (nl && isspace((unsigned char)p[nl - 1]))
            nl--;
        char *e;
        double x = strtod(sl + 1, &e);
        const char *sl2 = strchr(sl + 1, '/');
        if (e == sl + 1 || !sl2)
            return gas_error(file, line, "third-body efficiency of '%.*s' needs /value/", (int)nl, p);
        int k = gas_find_species(d, p, nl);
        if (k < 0) {
            int kwd = 1;
            for (size_t i = 0; i < nl; i++)
                kwd &= isupper((unsigned char)p[i]) != 0;
            return gas_error(file, line, "'%.*s' is %s", (int)nl, p,
                             kwd ? "not a species nor a supported CHEMKIN keyword" : "not a species");
        }
        if (!r->eff) {
            r->eff = rmi_arena_alloc(&d->arena, (size_t)d->nsp * sizeof *r->eff);
            if (!r->eff)
                return gas_nomem(file);
            for (int j = 0; j < d->nsp; j++)
                r->eff[j] = 1;
        }
        r->eff[k] = x;
        p = sl2 + 1;
    }
    return REMAT_OK;
}

/* a reaction line: the equation, then A b E */
static remat_status reaction_line(gas_desc *d, const ck_units *u, const char *file, int line, const char *s,
                                  gas_reaction **out)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", s);
    double v[3];
    for (int i = 2; i >= 0; i--) {
        size_t n = strlen(tmp);
        while (n && isspace((unsigned char)tmp[n - 1]))
            tmp[--n] = 0;
        char *sp = tmp + n;
        while (sp > tmp && !isspace((unsigned char)sp[-1]))
            sp--;
        char *e;
        v[i] = strtod(sp, &e);
        if (sp == tmp || e == sp || *e)
            return gas_error(file, line, "a reaction line ends with its Arrhenius parameters A b E, got '%s'", s);
        *sp = 0;
    }
    gas_reaction *r = gas_add_reaction(d);
    if (!r)
        return gas_nomem(file);
    r->line = line;
    int has_m;
    MECH_TRY(gas_parse_equation(d, r, tmp, strlen(tmp), &has_m));
    r->kind = has_m == 1 ? GAS_THREE_BODY : has_m == 2 ? GAS_FALLOFF : GAS_ELEMENTARY;
    r->k = (gas_arrhenius){v[0], v[1], ea_si(u, v[2])}; /* A converted once the order is known */
    r->collider = has_m == 2 ? r->collider : -1;
    *out = r;
    return REMAT_OK;
}

static remat_status finish_reaction(gas_reaction *r, const ck_units *u, const char *file, int has_m2, int lowhigh)
{
    double order = gas_reactant_order(r);
    if (r->kind == GAS_PLOG) {
        if (has_m2)
            return gas_error(file, r->line, "PLOG with '(+M)' is not supported");
        return REMAT_OK;
    }
    if (has_m2 && !lowhigh)
        return gas_error(file, r->line, "a '(+M)' reaction needs a LOW or HIGH line");
    if (!has_m2 && lowhigh)
        return gas_error(file, r->line, "LOW or HIGH needs '(+M)' in the equation");
    if (r->eff && r->kind == GAS_ELEMENTARY)
        return gas_error(file, r->line, "third-body efficiencies need '+ M' or '(+M)' in the equation");
    double n = r->kind == GAS_THREE_BODY ? order + 1 : order;
    r->k.A = a_si(u, r->k.A, n);
    return REMAT_OK;
}

remat_status gas_read_chemkin(gas_desc *d, const char *text, size_t n, const char *thermo_file, const char *thermo,
                              size_t nthermo)
{
    ck_lines L = {.file = d->file, .p = text, .end = text + n};
    enum { NONE, ELEM, SPEC, REAC } sec = NONE;
    int thermo_inside = 0;
    ck_units u = {.ea = 4.184, .quantity = 1};
    gas_reaction *r = NULL;
    int has_m2 = 0, lowhigh = 0;
    while (next_line(&L)) {
        const char *s = skip_ws(L.buf);
        if (!*s)
            continue;
        if (sec != REAC && (kw(s, "ELEMENTS") || kw(s, "ELEM"))) {
            sec = ELEM;
            s = skip_ws(s + strcspn(s, " \t"));
            if (!*s)
                continue;
        } else if (sec != REAC && (kw(s, "SPECIES") || kw(s, "SPEC"))) {
            sec = SPEC;
            s = skip_ws(s + strcspn(s, " \t"));
            if (!*s)
                continue;
        } else if (sec != REAC && kw(s, "THERMO")) {
            if (thermo)
                return gas_error(d->file, L.line, "THERMO data both here and in --thermo %s", thermo_file);
            thermo_inside = 1;
            MECH_TRY(read_thermo(d, &L, 0));
            sec = NONE;
            continue;
        } else if (kw(s, "REACTIONS") || kw(s, "REAC")) {
            MECH_TRY(reactions_units(d->file, L.line, s + strcspn(s, " \t"), &u));
            sec = REAC;
            continue;
        } else if (kw(s, "TRANSPORT") || kw(s, "TRAN")) {
            return gas_error(d->file, L.line, "a TRANSPORT section is not read (transport data are not used)");
        }
        if (sec == ELEM) {
            if (is_end(s)) {
                sec = NONE;
                continue;
            }
            char tok[64];
            int k;
            for (const char *p = s; sscanf(p, "%63s%n", tok, &k) == 1; p += k) {
                if (!strcasecmp(tok, "END")) {
                    sec = NONE;
                    break;
                }
                if (!strcasecmp(tok, "E"))
                    return gas_error(d->file, L.line, "element E: charged species (ions, electrons) are not supported");
                size_t sl = strcspn(tok, "/"); /* "D/2.014/": an atomic weight, not needed */
                if (sl)
                    MECH_TRY(gas_declare_element(d, d->file, L.line, tok, sl));
                d->el_declared = 1;
            }
        } else if (sec == SPEC) {
            char tok[256];
            int k;
            for (const char *p = s; sscanf(p, "%255s%n", tok, &k) == 1; p += k) {
                if (!strcasecmp(tok, "END")) {
                    sec = NONE;
                    break;
                }
                size_t len = strlen(tok);
                if (gas_find_species(d, tok, len) >= 0)
                    return gas_error(d->file, L.line, "species '%s' declared twice", tok);
                if (len > 1 && (tok[len - 1] == '+' || tok[len - 1] == '-') && strcmp(tok, "E") != 0)
                    return gas_error(d->file, L.line, "species '%s': charged species (ions, electrons) are not supported",
                                     tok);
                gas_species *sp = gas_add_species(d);
                if (!sp || !(sp->name = rmi_arena_strndup(&d->arena, tok, len)))
                    return gas_nomem(d->file);
                sp->line = L.line;
            }
        } else if (sec == REAC) {
            if (is_end(s)) {
                sec = NONE;
                continue;
            }
            if (strchr(s, '=') && !strchr(s, '/') && !kw(s, "DUPLICATE") && !kw(s, "DUP")) {
                if (r)
                    MECH_TRY(finish_reaction(r, &u, d->file, has_m2, lowhigh));
                MECH_TRY(reaction_line(d, &u, d->file, L.line, s, &r));
                has_m2 = r->kind == GAS_FALLOFF;
                lowhigh = 0;
            } else if (!r) {
                return gas_error(d->file, L.line, "'%s' before the first reaction", s);
            } else {
                MECH_TRY(aux_line(d, r, &u, d->file, L.line, s, gas_reactant_order(r), &lowhigh));
            }
        } else {
            return gas_error(d->file, L.line, "'%s' outside ELEMENTS, SPECIES, THERMO and REACTIONS", s);
        }
    }
    if (r)
        MECH_TRY(finish_reaction(r, &u, d->file, has_m2, lowhigh));
    if (thermo) {
        ck_lines T = {.file = thermo_file, .p = thermo, .end = thermo + nthermo};
        MECH_TRY(read_thermo(d, &T, 1));
    } else if (!thermo_inside) {
        return gas_error(d->file, 1, "no THERMO section: give the thermo data file (--thermo)");
    }
    for (int k = 0; k < d->nsp; k++)
        if (!d->sp[k].has_thermo)
            return gas_error(thermo ? thermo_file : d->file, 1, "no thermo data for species '%s'", d->sp[k].name);
    return REMAT_OK;
}

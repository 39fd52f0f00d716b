/*
 * gas_yaml.c — Cantera YAML (the format of Cantera 2.5 and later, as
 * ck2yaml writes it) into a gas description, through libyaml's document
 * loader. One ideal-gas phase: its species (from the top-level `species`
 * list or the sections the phase names) and its reactions (the top-level
 * `reactions` list or the sections the phase names). Every number is taken
 * to SI with moles by the file's `units` (Cantera's defaults m, kmol, s, J
 * when absent) or the units written after it ("3.0 kcal/mol").
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "core/error.h"
#include "models/kinetics/gas_impl.h"

typedef struct {
    gas_desc *d;
    yaml_document_t doc;
    gas_units units;
} yrd;

static int line_of(const yaml_node_t *n) { return n ? (int)n->start_mark.line + 1 : 0; }

static yaml_node_t *get(yrd *y, int id) { return yaml_document_get_node(&y->doc, id); }

static int is_scalar(const yaml_node_t *n) { return n && n->type == YAML_SCALAR_NODE; }
static const char *sval(const yaml_node_t *n) { return (const char *)n->data.scalar.value; }

static yaml_node_t *key(yrd *y, const yaml_node_t *map, const char *k)
{
    if (!map || map->type != YAML_MAPPING_NODE)
        return NULL;
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
        yaml_node_t *kn = get(y, p->key);
        if (is_scalar(kn) && strcmp(sval(kn), k) == 0)
            return get(y, p->value);
    }
    return NULL;
}

static int seq_len(const yaml_node_t *n)
{
    return n && n->type == YAML_SEQUENCE_NODE ? (int)(n->data.sequence.items.top - n->data.sequence.items.start) : -1;
}

static yaml_node_t *seq_at(yrd *y, const yaml_node_t *n, int i) { return get(y, n->data.sequence.items.start[i]); }

/* a number, with optional units after it: *factor from them (1 without),
 * *has_units whether there were any */
static remat_status number(yrd *y, const yaml_node_t *n, const char *what, double *v, double *factor, int *kelvin,
                           int *has_units)
{
    *factor = 1;
    *kelvin = 0;
    *has_units = 0;
    if (!is_scalar(n))
        return gas_error(y->d->file, line_of(n), "%s: expected a number", what);
    const char *s = sval(n);
    char *end;
    *v = strtod(s, &end);
    if (end == s || !isfinite(*v))
        return gas_error(y->d->file, line_of(n), "%s: '%s' is not a number", what, s);
    while (*end == ' ')
        end++;
    if (*end) {
        *has_units = 1;
        MECH_TRY(gas_unit_factor(y->d->file, line_of(n), end, factor, kelvin));
    }
    return REMAT_OK;
}

static remat_status plain(yrd *y, const yaml_node_t *n, const char *what, double *v)
{
    double f;
    int k, u;
    MECH_TRY(number(y, n, what, v, &f, &k, &u));
    if (u)
        return gas_error(y->d->file, line_of(n), "%s: '%s' takes no units", what, sval(n));
    return REMAT_OK;
}

/* an activation energy to J/mol */
static remat_status act_energy(yrd *y, const yaml_node_t *n, double *Ea)
{
    double v = 0, f;
    int k, u;
    MECH_TRY(number(y, n, "Ea", &v, &f, &k, &u));
    if (u)
        *Ea = k == 1 ? v * GAS_R : k == 2 ? v * f * GAS_AVOGADRO : v * f;
    else if (y->units.act_kelvin)
        *Ea = v * GAS_R;
    else
        *Ea = v * (y->units.act_energy ? y->units.act_energy : y->units.energy / y->units.quantity);
    return REMAT_OK;
}

static remat_status arrhenius(yrd *y, const yaml_node_t *n, double order, const char *what, gas_arrhenius *k)
{
    if (!n)
        return gas_error(y->d->file, 0, "missing %s", what);
    if (n->type == YAML_SEQUENCE_NODE && seq_len(n) == 3) {
        const yaml_node_t *m = n; /* [A, b, Ea] */
        double f;
        int kk, u;
        MECH_TRY(number(y, seq_at(y, m, 0), "A", &k->A, &f, &kk, &u));
        k->A = gas_si(k->A, u ? f : gas_a_factor(&y->units, order));
        MECH_TRY(plain(y, seq_at(y, m, 1), "b", &k->b));
        return act_energy(y, seq_at(y, m, 2), &k->Ea);
    }
    if (n->type != YAML_MAPPING_NODE)
        return gas_error(y->d->file, line_of(n), "%s: expected {A: ..., b: ..., Ea: ...}", what);
    yaml_node_t *A = key(y, n, "A"), *b = key(y, n, "b"), *Ea = key(y, n, "Ea");
    if (!A || !b || !Ea)
        return gas_error(y->d->file, line_of(n), "%s needs A, b and Ea", what);
    double f;
    int kk, u;
    MECH_TRY(number(y, A, "A", &k->A, &f, &kk, &u));
    k->A = gas_si(k->A, u ? f : gas_a_factor(&y->units, order));
    MECH_TRY(plain(y, b, "b", &k->b));
    return act_energy(y, Ea, &k->Ea);
}

/* ---- species ---- */

static remat_status species_entry(yrd *y, const yaml_node_t *n)
{
    gas_desc *d = y->d;
    yaml_node_t *name = key(y, n, "name"), *comp = key(y, n, "composition"), *th = key(y, n, "thermo");
    if (!is_scalar(name))
        return gas_error(d->file, line_of(n), "a species needs a name");
    if (gas_find_species(d, sval(name), strlen(sval(name))) >= 0)
        return gas_error(d->file, line_of(name), "species '%s' declared twice", sval(name));
    if (comp && comp->type == YAML_MAPPING_NODE && key(y, comp, "E"))
        return gas_error(d->file, line_of(comp),
                         "species '%s': charged species (ions, electrons) are not supported", sval(name));
    gas_species *sp = gas_add_species(d);
    if (!sp)
        return gas_nomem(d->file);
    sp->name = rmi_arena_strndup(&d->arena, sval(name), strlen(sval(name)));
    sp->line = line_of(n);
    if (!sp->name)
        return gas_nomem(d->file);
    if (!th)
        return gas_error(d->file, line_of(n), "species '%s' has no thermo", sp->name);
    yaml_node_t *model = key(y, th, "model"), *tr = key(y, th, "temperature-ranges"), *data = key(y, th, "data");
    if (!is_scalar(model) || strcmp(sval(model), "NASA7") != 0)
        return gas_error(d->file, line_of(model ? model : th),
                         "species '%s': thermo model '%s' is not supported (only NASA7)", sp->name,
                         is_scalar(model) ? sval(model) : "?");
    int nt = seq_len(tr), nd = seq_len(data);
    if (nt < 2 || nt > 3 || nd != nt - 1)
        return gas_error(d->file, line_of(th),
                         "species '%s': NASA7 needs 2 or 3 temperature-ranges and one data list per range",
                         sp->name);
    double t[3];
    for (int i = 0; i < nt; i++)
        MECH_TRY(plain(y, seq_at(y, tr, i), "temperature", &t[i]));
    sp->nranges = nd;
    sp->tmin = t[0];
    sp->tmid = nt == 3 ? t[1] : t[1];
    sp->tmax = t[nt - 1];
    for (int r = 0; r < nd; r++) {
        yaml_node_t *c = seq_at(y, data, r);
        if (seq_len(c) != 7)
            return gas_error(d->file, line_of(c), "species '%s': a NASA7 range has 7 coefficients", sp->name);
        for (int i = 0; i < 7; i++)
            MECH_TRY(plain(y, seq_at(y, c, i), "NASA7 coefficient", r ? &sp->hi[i] : &sp->lo[i]));
    }
    sp->has_thermo = 1;
    if (!comp || comp->type != YAML_MAPPING_NODE)
        return gas_error(d->file, line_of(comp ? comp : n),
                         "species '%s': a composition {element: atoms, ...} is needed", sp->name);
    for (yaml_node_pair_t *p = comp->data.mapping.pairs.start; p < comp->data.mapping.pairs.top; p++) {
        yaml_node_t *el = get(y, p->key);
        double na;
        if (!is_scalar(el))
            return gas_error(d->file, line_of(comp), "species '%s': a composition {element: atoms, ...}", sp->name);
        MECH_TRY(plain(y, get(y, p->value), "atom count", &na));
        MECH_TRY(gas_species_atoms(d, sp, d->file, line_of(el), sval(el), strlen(sval(el)), na));
    }
    return REMAT_OK;
}

/* the species named by list (names, or "all" for every entry) from section */
static remat_status species_from(yrd *y, const yaml_node_t *section, const yaml_node_t *list)
{
    gas_desc *d = y->d;
    if (seq_len(section) < 0)
        return gas_error(d->file, line_of(section ? section : list), "no species section");
    int n = seq_len(section);
    if (is_scalar(list) && strcmp(sval(list), "all") == 0) {
        for (int i = 0; i < n; i++)
            MECH_TRY(species_entry(y, seq_at(y, section, i)));
        return REMAT_OK;
    }
    if (seq_len(list) < 0)
        return gas_error(d->file, line_of(list), "a phase's species: a list of names or 'all'");
    for (int j = 0; j < seq_len(list); j++) {
        yaml_node_t *nm = seq_at(y, list, j);
        if (!is_scalar(nm))
            return gas_error(d->file, line_of(nm), "expected a species name");
        int found = 0;
        for (int i = 0; i < n && !found; i++) {
            yaml_node_t *e = seq_at(y, section, i), *en = key(y, e, "name");
            if (is_scalar(en) && strcmp(sval(en), sval(nm)) == 0) {
                MECH_TRY(species_entry(y, e));
                found = 1;
            }
        }
        if (!found)
            return gas_error(d->file, line_of(nm), "species '%s' of the phase is not defined", sval(nm));
    }
    return REMAT_OK;
}

/* ---- reactions ---- */

static remat_status map_terms(yrd *y, const yaml_node_t *map, gas_term **out, int *n, const char *what)
{
    gas_desc *d = y->d;
    int cap = (int)(map->data.mapping.pairs.top - map->data.mapping.pairs.start);
    gas_term *t = rmi_arena_alloc(&d->arena, (size_t)(cap + 1) * sizeof *t);
    if (!t)
        return gas_nomem(d->file);
    *n = 0;
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
        yaml_node_t *k = get(y, p->key), *v = get(y, p->value);
        int sp = is_scalar(k) ? gas_find_species(d, sval(k), strlen(sval(k))) : -1;
        if (sp < 0)
            return gas_error(d->file, line_of(k), "%s: '%s' is not a species of the phase", what,
                             is_scalar(k) ? sval(k) : "?");
        t[*n].species = sp;
        MECH_TRY(plain(y, v, what, &t[*n].nu));
        (*n)++;
    }
    *out = t;
    return REMAT_OK;
}

static const char *const unsupported_keys[] = {"coverage-dependencies", "sticking-coefficient", "beta",
                                               "electrochemical", "Tsang", NULL};

static remat_status reaction_entry(yrd *y, const yaml_node_t *n)
{
    gas_desc *d = y->d;
    int line = line_of(n);
    yaml_node_t *eq = key(y, n, "equation"), *type = key(y, n, "type");
    if (!is_scalar(eq))
        return gas_error(d->file, line, "a reaction needs an equation");
    for (int i = 0; unsupported_keys[i]; i++)
        if (key(y, n, unsupported_keys[i]))
            return gas_error(d->file, line_of(key(y, n, unsupported_keys[i])), "reaction '%s': '%s' is not supported",
                             sval(eq), unsupported_keys[i]);
    gas_reaction *r = gas_add_reaction(d);
    if (!r)
        return gas_nomem(d->file);
    r->line = line;
    int has_m;
    MECH_TRY(gas_parse_equation(d, r, sval(eq), strlen(sval(eq)), &has_m));
    const char *t = is_scalar(type) ? sval(type) : NULL;
    if (!t)
        t = key(y, n, "rate-constants") ? "pressure-dependent-Arrhenius"
            : key(y, n, "low-P-rate-constant") && key(y, n, "high-P-rate-constant") ? "falloff"
            : has_m == 1 ? "three-body" : "elementary";
    if (strcmp(t, "elementary") == 0 || strcmp(t, "Arrhenius") == 0)
        r->kind = GAS_ELEMENTARY;
    else if (strcmp(t, "three-body") == 0)
        r->kind = GAS_THREE_BODY;
    else if (strcmp(t, "falloff") == 0)
        r->kind = GAS_FALLOFF;
    else if (strcmp(t, "chemically-activated") == 0)
        r->kind = GAS_CHEM_ACT;
    else if (strcmp(t, "pressure-dependent-Arrhenius") == 0)
        r->kind = GAS_PLOG;
    else
        return gas_error(d->file, line_of(type), "reaction '%s': rate type '%s' is not supported%s", sval(eq), t,
                         strcmp(t, "Chebyshev") == 0 ? " (Chebyshev rates are left out)" : "");
    if (r->kind == GAS_THREE_BODY && has_m != 1 && r->collider < 0)
        return gas_error(d->file, line, "three-body reaction '%s' needs '+ M' in its equation", sval(eq));
    if ((r->kind == GAS_FALLOFF || r->kind == GAS_CHEM_ACT) && has_m != 2)
        return gas_error(d->file, line, "%s reaction '%s' needs '(+M)' in its equation", t, sval(eq));
    if ((r->kind == GAS_ELEMENTARY || r->kind == GAS_PLOG) && has_m)
        return gas_error(d->file, line, "reaction '%s' has a third body but type '%s'", sval(eq), t);
    yaml_node_t *dup = key(y, n, "duplicate");
    r->duplicate = is_scalar(dup) && strcmp(sval(dup), "true") == 0;
    yaml_node_t *ord = key(y, n, "orders");
    if (ord) {
        if (ord->type != YAML_MAPPING_NODE)
            return gas_error(d->file, line_of(ord), "orders: expected {species: order, ...}");
        /* orders given replace the stoichiometric ones of those species */
        gas_term *o;
        int no;
        MECH_TRY(map_terms(y, ord, &o, &no, "orders"));
        gas_term *all = rmi_arena_alloc(&d->arena, (size_t)(no + r->nside[0] + 1) * sizeof *all);
        if (!all)
            return gas_nomem(d->file);
        int na = 0;
        for (int j = 0; j < r->nside[0]; j++)
            all[na++] = r->side[0][j];
        for (int j = 0; j < no; j++) {
            int k = 0;
            while (k < na && all[k].species != o[j].species)
                k++;
            if (k == na)
                all[na++] = o[j];
            else
                all[k].nu = o[j].nu;
        }
        int w = 0;
        for (int k = 0; k < na; k++)
            if (all[k].nu != 0)
                all[w++] = all[k];
        r->orders = all;
        r->norders = w ? w : -1;
        if (r->norders < 0) /* all orders zero: a product of nothing */
            r->norders = 0, r->orders = all;
    }
    double order = gas_reactant_order(r);
    if (r->kind == GAS_THREE_BODY)
        order += 1;
    const yaml_node_t *rc = NULL;
    switch (r->kind) {
    case GAS_ELEMENTARY:
    case GAS_THREE_BODY:
        rc = key(y, n, "rate-constant");
        if (!rc)
            return gas_error(d->file, line, "reaction '%s' needs a rate-constant", sval(eq));
        MECH_TRY(arrhenius(y, rc, order, "rate-constant", &r->k));
        break;
    case GAS_FALLOFF:
    case GAS_CHEM_ACT: {
        yaml_node_t *lo = key(y, n, "low-P-rate-constant"), *hi = key(y, n, "high-P-rate-constant");
        if (!lo || !hi)
            return gas_error(d->file, line, "reaction '%s' needs low-P-rate-constant and high-P-rate-constant",
                             sval(eq));
        /* orders of the units (as Cantera): falloff high-P n, low-P n + 1; chemically
         * activated low-P n, high-P n - 1 (so that Pr = k0 [M] / kinf has none) */
        int falloff = r->kind == GAS_FALLOFF;
        MECH_TRY(arrhenius(y, falloff ? hi : lo, order, "rate constant", &r->k));
        MECH_TRY(arrhenius(y, falloff ? lo : hi, falloff ? order + 1 : order - 1, "rate constant", &r->k2));
        yaml_node_t *troe = key(y, n, "Troe"), *sri = key(y, n, "SRI");
        if (troe) {
            r->ff = GAS_F_TROE;
            const char *names[4] = {"A", "T3", "T1", "T2"};
            for (int i = 0; i < 4; i++) {
                yaml_node_t *v = key(y, troe, names[i]);
                if (!v && i < 3)
                    return gas_error(d->file, line_of(troe), "Troe needs A, T3 and T1");
                if (v)
                    MECH_TRY(plain(y, v, names[i], &r->troe[i]));
                if (i == 3)
                    r->troe_t2 = v != NULL;
            }
        } else if (sri) {
            r->ff = GAS_F_SRI;
            const char *names[5] = {"A", "B", "C", "D", "E"};
            r->sri[3] = 1;
            for (int i = 0; i < 5; i++) {
                yaml_node_t *v = key(y, sri, names[i]);
                if (!v && i < 3)
                    return gas_error(d->file, line_of(sri), "SRI needs A, B and C");
                if (v)
                    MECH_TRY(plain(y, v, names[i], &r->sri[i]));
            }
        }
        break;
    }
    case GAS_PLOG: {
        yaml_node_t *list = key(y, n, "rate-constants");
        int np = seq_len(list);
        if (np < 1 || np > 64)
            return gas_error(d->file, line, "reaction '%s': rate-constants needs 1 to 64 entries", sval(eq));
        r->nplog = np;
        r->plog_p = rmi_arena_alloc(&d->arena, (size_t)np * sizeof *r->plog_p);
        r->plog_k = rmi_arena_alloc(&d->arena, (size_t)np * sizeof *r->plog_k);
        if (!r->plog_p || !r->plog_k)
            return gas_nomem(d->file);
        for (int i = 0; i < np; i++) {
            yaml_node_t *e = seq_at(y, list, i), *P = key(y, e, "P");
            double v, f;
            int kk, u;
            if (!P)
                return gas_error(d->file, line_of(e), "a PLOG entry needs P");
            MECH_TRY(number(y, P, "P", &v, &f, &kk, &u));
            r->plog_p[i] = v * (u ? f : y->units.pressure);
            if (!(r->plog_p[i] > 0) || (i && r->plog_p[i] < r->plog_p[i - 1]))
                return gas_error(d->file, line_of(P), "PLOG pressures must be positive and ascending");
            MECH_TRY(arrhenius(y, e, order, "PLOG rate", &r->plog_k[i]));
            if (!(r->plog_k[i].A > 0))
                return gas_error(d->file, line_of(e), "PLOG rates with A <= 0 are not supported");
        }
        break;
    }
    case GAS_KIND_COUNT: break;
    }
    if (r->kind == GAS_THREE_BODY || r->kind == GAS_FALLOFF || r->kind == GAS_CHEM_ACT) {
        yaml_node_t *eff = key(y, n, "efficiencies"), *def = key(y, n, "default-efficiency");
        if (def)
            MECH_TRY(plain(y, def, "default-efficiency", &r->default_eff));
        if (eff) {
            if (eff->type != YAML_MAPPING_NODE)
                return gas_error(d->file, line_of(eff), "efficiencies: expected {species: value, ...}");
            r->eff = rmi_arena_alloc(&d->arena, (size_t)d->nsp * sizeof *r->eff);
            if (!r->eff)
                return gas_nomem(d->file);
            for (int k = 0; k < d->nsp; k++)
                r->eff[k] = r->default_eff;
            gas_term *et;
            int net;
            MECH_TRY(map_terms(y, eff, &et, &net, "efficiencies"));
            for (int j = 0; j < net; j++)
                r->eff[et[j].species] = et[j].nu;
        }
    }
    return REMAT_OK;
}

static remat_status reactions_from(yrd *y, const yaml_node_t *section)
{
    int n = seq_len(section);
    if (n < 0)
        return gas_error(y->d->file, line_of(section), "reactions: expected a list");
    for (int i = 0; i < n; i++)
        MECH_TRY(reaction_entry(y, seq_at(y, section, i)));
    return REMAT_OK;
}

static remat_status read_units(yrd *y, const yaml_node_t *u)
{
    if (!u)
        return REMAT_OK;
    if (u->type != YAML_MAPPING_NODE)
        return gas_error(y->d->file, line_of(u), "units: expected {length: cm, ...}");
    for (yaml_node_pair_t *p = u->data.mapping.pairs.start; p < u->data.mapping.pairs.top; p++) {
        yaml_node_t *k = get(y, p->key), *v = get(y, p->value);
        if (!is_scalar(k) || !is_scalar(v))
            return gas_error(y->d->file, line_of(k), "units: expected {dimension: unit}");
        MECH_TRY(gas_units_set(y->d->file, line_of(v), &y->units, sval(k), sval(v)));
    }
    return REMAT_OK;
}

static const yaml_node_t *pick_phase(yrd *y, const yaml_node_t *phases, const char *want, remat_status *st)
{
    gas_desc *d = y->d;
    *st = REMAT_OK;
    int n = seq_len(phases);
    if (n <= 0) {
        *st = gas_error(d->file, line_of(phases), "phases: expected a list of phases");
        return NULL;
    }
    const yaml_node_t *first = NULL;
    for (int i = 0; i < n; i++) {
        yaml_node_t *ph = seq_at(y, phases, i), *name = key(y, ph, "name"), *th = key(y, ph, "thermo");
        if (want && !(is_scalar(name) && strcmp(sval(name), want) == 0))
            continue;
        if (!first)
            first = ph;
        if (is_scalar(th) && strcmp(sval(th), "ideal-gas") == 0)
            return ph;
        if (want)
            break;
    }
    if (!first) {
        *st = gas_error(d->file, line_of(phases), "no phase named '%s'", want);
        return NULL;
    }
    yaml_node_t *th = key(y, first, "thermo");
    const char *t = is_scalar(th) ? sval(th) : "?";
    int surface = strstr(t, "surface") || strstr(t, "edge");
    *st = gas_error(d->file, line_of(th ? th : first), "phase thermo '%s' is not supported: %s", t,
                    surface ? "surface and edge phases (interface kinetics) are left out; only ideal-gas phases"
                    : strcmp(t, "plasma") == 0 ? "plasmas (charged species) are left out; only ideal-gas phases"
                                               : "non-ideal phases are left out; only ideal-gas phases");
    return NULL;
}

static remat_status read_doc(yrd *y, const remat_gas_options *opt)
{
    gas_desc *d = y->d;
    yaml_node_t *root = yaml_document_get_root_node(&y->doc);
    if (!root || root->type != YAML_MAPPING_NODE)
        return gas_error(d->file, 1, "a Cantera YAML file is a mapping with 'phases', 'species' and 'reactions'");
    MECH_TRY(read_units(y, key(y, root, "units")));
    remat_status st;
    const yaml_node_t *ph = pick_phase(y, key(y, root, "phases"), opt->phase, &st);
    if (!ph)
        return st;
    yaml_node_t *kin = key(y, ph, "kinetics");
    if (is_scalar(kin) && strcmp(sval(kin), "gas") != 0)
        return gas_error(d->file, line_of(kin), "kinetics '%s' is not supported (only gas)", sval(kin));
    yaml_node_t *els = key(y, ph, "elements");
    if (els) { /* declared: a species with another element is an error (Cantera's undefined-element error) */
        if (seq_len(els) < 0)
            return gas_error(d->file, line_of(els), "a phase's elements: a list of symbols");
        for (int i = 0; i < seq_len(els); i++) {
            yaml_node_t *e = seq_at(y, els, i);
            if (!is_scalar(e))
                return gas_error(d->file, line_of(els), "a phase's elements: a list of symbols");
            MECH_TRY(gas_declare_element(d, d->file, line_of(e), sval(e), strlen(sval(e))));
        }
        d->el_declared = 2;
    }
    yaml_node_t *sp = key(y, ph, "species");
    if (!sp)
        return gas_error(d->file, line_of(ph), "the phase lists no species");
    if (is_scalar(sp) || (seq_len(sp) > 0 && is_scalar(seq_at(y, sp, 0)))) {
        MECH_TRY(species_from(y, key(y, root, "species"), sp));
    } else if (seq_len(sp) > 0) {
        for (int i = 0; i < seq_len(sp); i++) { /* [{section: [names] | all}, ...] */
            yaml_node_t *e = seq_at(y, sp, i);
            if (!e || e->type != YAML_MAPPING_NODE || e->data.mapping.pairs.top - e->data.mapping.pairs.start != 1)
                return gas_error(d->file, line_of(e), "a phase's species: names, or {section: names}");
            yaml_node_t *sec = get(y, e->data.mapping.pairs.start->key);
            const char *sn = sval(sec);
            if (strchr(sn, '/'))
                return gas_error(d->file, line_of(sec), "species from another file ('%s') are not supported", sn);
            MECH_TRY(species_from(y, key(y, root, sn), get(y, e->data.mapping.pairs.start->value)));
        }
    } else {
        return gas_error(d->file, line_of(sp), "a phase's species: a list");
    }
    if (kin == NULL)
        return REMAT_OK; /* no kinetics: no reactions */
    yaml_node_t *rx = key(y, ph, "reactions");
    if (!rx || (is_scalar(rx) && (strcmp(sval(rx), "all") == 0 || strcmp(sval(rx), "declared-species") == 0))) {
        yaml_node_t *sec = key(y, root, "reactions");
        if (sec)
            MECH_TRY(reactions_from(y, sec));
    } else if (is_scalar(rx) && strcmp(sval(rx), "none") == 0) {
        return REMAT_OK;
    } else if (seq_len(rx) >= 0) {
        for (int i = 0; i < seq_len(rx); i++) {
            yaml_node_t *e = seq_at(y, rx, i);
            if (!is_scalar(e))
                return gas_error(d->file, line_of(e), "a phase's reactions: section names");
            if (strchr(sval(e), '/'))
                return gas_error(d->file, line_of(e), "reactions from another file ('%s') are not supported",
                                 sval(e));
            yaml_node_t *sec = key(y, root, sval(e));
            if (!sec)
                return gas_error(d->file, line_of(e), "no reactions section '%s'", sval(e));
            MECH_TRY(reactions_from(y, sec));
        }
    } else {
        return gas_error(d->file, line_of(rx), "a phase's reactions: 'all', 'none' or section names");
    }
    return REMAT_OK;
}

remat_status gas_read_yaml(gas_desc *d, const char *text, size_t n, const remat_gas_options *opt)
{
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser))
        return gas_nomem(d->file);
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, n);
    yrd y = {.d = d};
    gas_units_default(&y.units);
    if (!yaml_parser_load(&parser, &y.doc)) {
        remat_status st = parser.error == YAML_MEMORY_ERROR
                              ? gas_nomem(d->file)
                              : gas_error(d->file, (int)parser.problem_mark.line + 1, "YAML: %s%s%s",
                                          parser.problem ? parser.problem : "syntax error",
                                          parser.context ? " " : "", parser.context ? parser.context : "");
        yaml_parser_delete(&parser);
        return st;
    }
    yaml_parser_delete(&parser);
    remat_status st = read_doc(&y, opt);
    yaml_document_delete(&y.doc);
    return st;
}

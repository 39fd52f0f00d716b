/*
 * gas_dup.c — duplicate reactions of a gas description, checked as Cantera
 * checks them (Kinetics::checkDuplicates) and CHEMKIN requires: two
 * reactions with the same reactants and products (or each other's reverse,
 * when either is reversible), of the same form (no third body; "+ M" with
 * the same efficiencies; "(+M)" or "(+AR)" with the same collider and
 * efficiencies) are one reaction counted twice unless both are marked
 * duplicates (CHEMKIN DUPLICATE, YAML `duplicate: true`); a reaction marked
 * so that has no such twin is an error too. Neither reading is guessed:
 * each is an error naming file:line.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "models/kinetics/gas_impl.h"

/* 0 no third body, 1 "+ M", 2 falloff "(+M)" (falloff and chemically activated alike) */
static int family(const gas_reaction *r)
{
    switch (r->kind) {
    case GAS_ELEMENTARY:
    case GAS_PLOG: return 0;
    case GAS_THREE_BODY: return 1;
    case GAS_FALLOFF:
    case GAS_CHEM_ACT: return 2;
    case GAS_KIND_COUNT: break;
    }
    return 3;
}

/* The amount of species k on side s of r (repeats summed). */
static double amount(const gas_reaction *r, int s, int k)
{
    double nu = 0;
    for (int i = 0; i < r->nside[s]; i++)
        if (r->side[s][i].species == k)
            nu += r->side[s][i].nu;
    return nu;
}

/* Side s of a equals side t of b, species by species. */
static int same_side(const gas_reaction *a, int s, const gas_reaction *b, int t)
{
    for (int i = 0; i < a->nside[s]; i++)
        if (amount(a, s, a->side[s][i].species) != amount(b, t, a->side[s][i].species))
            return 0;
    for (int i = 0; i < b->nside[t]; i++)
        if (amount(a, s, b->side[t][i].species) != amount(b, t, b->side[t][i].species))
            return 0;
    return 1;
}

static int same_third_body(const gas_desc *d, const gas_reaction *a, const gas_reaction *b)
{
    if (a->collider != b->collider || a->default_eff != b->default_eff)
        return 0;
    for (int k = 0; k < d->nsp; k++) {
        double ea = a->eff ? a->eff[k] : a->default_eff, eb = b->eff ? b->eff[k] : b->default_eff;
        if (ea != eb)
            return 0;
    }
    return 1;
}

static int twins(const gas_desc *d, const gas_reaction *a, const gas_reaction *b)
{
    if (family(a) != family(b) || (family(a) && !same_third_body(d, a, b)))
        return 0;
    if (same_side(a, 0, b, 0) && same_side(a, 1, b, 1))
        return 1;
    return (a->reversible || b->reversible) && same_side(a, 0, b, 1) && same_side(a, 1, b, 0);
}

/* A hash of r's two sides that is the same for r reversed, so twins share it. */
static unsigned long long key(const gas_reaction *r)
{
    unsigned long long h[2] = {0, 0};
    for (int s = 0; s < 2; s++)
        for (int i = 0; i < r->nside[s]; i++) {
            unsigned long long x = (unsigned long long)(r->side[s][i].species + 1) * 0x9E3779B97F4A7C15ULL;
            x ^= (unsigned long long)(r->side[s][i].nu * 1024.0) * 0xC2B2AE3D27D4EB4FULL;
            h[s] += x ^ (x >> 29);
        }
    return h[0] * h[1] + (h[0] ^ h[1]);
}

static const unsigned long long *sort_keys;

static int by_key(const void *x, const void *y)
{
    int i = *(const int *)x, j = *(const int *)y;
    if (sort_keys[i] != sort_keys[j])
        return sort_keys[i] < sort_keys[j] ? -1 : 1;
    return (i > j) - (i < j);
}

/* "2 O + M <=> O2 + M" of r into buf. */
static void equation(const gas_desc *d, const gas_reaction *r, char *buf, size_t cap)
{
    size_t o = 0;
    buf[0] = '\0';
    for (int s = 0; s < 2; s++) {
        for (int i = 0; i < r->nside[s] && o + 1 < cap; i++) {
            double nu = r->side[s][i].nu;
            const char *name = d->sp[r->side[s][i].species].name, *plus = i ? " + " : "";
            if (nu == 1)
                o += (size_t)snprintf(buf + o, cap - o, "%s%s", plus, name);
            else
                o += (size_t)snprintf(buf + o, cap - o, "%s%g %s", plus, nu, name);
        }
        if (o + 1 < cap && family(r) == 1)
            o += (size_t)snprintf(buf + o, cap - o, " + M");
        else if (o + 1 < cap && family(r) == 2)
            o += (size_t)snprintf(buf + o, cap - o, " (+%s)", r->collider >= 0 ? d->sp[r->collider].name : "M");
        if (s == 0 && o + 1 < cap)
            o += (size_t)snprintf(buf + o, cap - o, r->reversible ? " <=> " : " => ");
    }
}

remat_status gas_check_duplicates(const gas_desc *d, const char *how)
{
    int N = d->nrx;
    if (N < 1)
        return REMAT_OK;
    int *ix = rmi_malloc(sizeof *ix * (size_t)N);
    unsigned long long *keys = rmi_malloc(sizeof *keys * (size_t)N);
    unsigned char *twin = rmi_calloc((size_t)N, 1);
    if (!ix || !keys || !twin) {
        rmi_free(ix);
        rmi_free(keys);
        rmi_free(twin);
        return gas_nomem(d->file);
    }
    for (int i = 0; i < N; i++) {
        ix[i] = i;
        keys[i] = key(&d->rx[i]);
    }
    sort_keys = keys;
    qsort(ix, (size_t)N, sizeof *ix, by_key);
    remat_status st = REMAT_OK;
    char eq[256];
    for (int a = 0; a < N && st == REMAT_OK; a++)
        for (int b = a + 1; b < N && keys[ix[b]] == keys[ix[a]] && st == REMAT_OK; b++) {
            int i = ix[a] < ix[b] ? ix[a] : ix[b], j = ix[a] < ix[b] ? ix[b] : ix[a];
            const gas_reaction *ri = &d->rx[i], *rj = &d->rx[j];
            if (!twins(d, ri, rj))
                continue;
            twin[i] = twin[j] = 1;
            if (!ri->duplicate || !rj->duplicate) {
                equation(d, rj, eq, sizeof eq);
                st = gas_error(d->file, rj->line,
                               "reaction %d '%s' repeats reaction %d (line %d) and the two are not both "
                               "marked duplicates: mark both %s if both are meant (their rates add), else "
                               "remove one",
                               j + 1, eq, i + 1, ri->line, how);
            }
        }
    for (int i = 0; i < N && st == REMAT_OK; i++)
        if (d->rx[i].duplicate && !twin[i]) {
            equation(d, &d->rx[i], eq, sizeof eq);
            st = gas_error(d->file, d->rx[i].line,
                           "reaction %d '%s' is marked a duplicate, but no other reaction has its reactants, "
                           "products and form: remove the mark, or the equation is not the one meant",
                           i + 1, eq);
        }
    rmi_free(ix);
    rmi_free(keys);
    rmi_free(twin);
    return st;
}

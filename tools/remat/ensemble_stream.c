/*
 * ensemble_stream.c — the rounds of `remat pfr ensemble` (ensemble_cli.h).
 *
 * A round: rank 0 reads up to size x B sets and broadcasts them; the round's
 * chunks of B sets go to the ranks in contiguous blocks (ens_dist_split);
 * each rank runs its chunks; rank 0 gathers the results in chunk order and
 * writes the round's rows. An agreement follows each step that can fail on
 * one rank (reading, integrating, writing).
 *
 * Where equal steps cannot follow pfr simulate's adaptive integration
 * (r->per_member), a chunk's sets are integrated one by one as simulate
 * integrates them: the outlet from one adaptive reactor, the sensitivities
 * of each --species s from a reactor whose objective is C_s(L) (its
 * gradient, the discrete adjoint through the adaptive steps).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ensemble_cli.h"

/* a double that reads back as itself; non-finite as nan, inf, -inf */
static void put(FILE *f, double v)
{
    if (isnan(v))
        fputs("nan", f);
    else
        fprintf(f, "%.17g", v);
}

static void write_header(FILE *f, const ens_run *r)
{
    const remat_mechanism *m = r->su.mech;
    for (int j = 0; j < r->Q; j++)
        fprintf(f, "%s%s", j ? "," : "", r->colname[j]);
    for (int s = 0; s < r->su.S; s++)
        fprintf(f, ",C_%s", remat_mechanism_species_name(m, s));
    for (int g = 0; g < r->G; g++)
        for (int j = 0; j < r->Q; j++)
            fprintf(f, ",d%s/d%s", remat_mechanism_species_name(m, r->grad[g]), r->colname[j]);
    fputc('\n', f);
}

/* one row: the set, then its result (outlet S, jac S x Q) */
static int write_row(FILE *f, const ens_run *r, const double *set, const double *res)
{
    int S = r->su.S, Q = r->Q, finite = 1;
    for (int j = 0; j < Q; j++) {
        if (j)
            fputc(',', f);
        put(f, set[j]);
    }
    for (int s = 0; s < S; s++) {
        fputc(',', f);
        put(f, res[s]);
        finite &= isfinite(res[s]) != 0;
    }
    for (int g = 0; g < r->G; g++)
        for (int j = 0; j < Q; j++) {
            fputc(',', f);
            put(f, res[S + r->grad[g] * Q + j]);
        }
    fputc('\n', f);
    return finite;
}

/* Q and the varied parameters from rank 0's header to every rank */
static int share_header(ens_run *r, const ens_csv *csv)
{
    int Q = r->rank == 0 ? csv->ncol : 0;
    if (!ens_dist_bcast(r->d, &Q, sizeof Q))
        return 0;
    r->Q = Q;
    r->vary = malloc(sizeof *r->vary * (size_t)Q);
    r->colname = r->rank == 0 ? calloc((size_t)Q, sizeof *r->colname) : NULL;
    int ok = r->vary && (r->rank != 0 || r->colname);
    for (int j = 0; ok && r->rank == 0 && j < Q; j++) {
        r->vary[j] = csv->param[j];
        ok = (r->colname[j] = strdup(csv->name[j])) != NULL;
    }
    if (!ok)
        snprintf(r->err, sizeof r->err, "out of memory");
    if (!ens_dist_agree(r->d, ok, r->err, sizeof r->err))
        return 0;
    return ens_dist_bcast(r->d, r->vary, sizeof *r->vary * (size_t)Q);
}

typedef struct {
    double *sets;   /* (size*B, Q) the round's sets (every rank) */
    int64_t *lines; /* (size*B,) their lines (rank 0) */
    double *mine;   /* (chunks mine * B, W) */
    double *all;    /* (size*B, W) rank 0 */
    double *outlet, *jac; /* (B, S), (B, S*Q) one chunk */
    int *owner;     /* (size,) */
    int64_t *len;   /* (size,) */
    remat_pfr_ensemble *e;
    remat_pfr *one, **by_species; /* per_member: the outlet's reactor, (G,) one per --species */
    double *p, *pg;               /* per_member: (P,) a set's parameters, (P,) a gradient */
    int64_t bad, first_bad; /* rows with non-finite outlets; the first one's line */
    int64_t negative, first_negative; /* rows with negative outlets (remat_pfr_ensemble_negative); the first's line */
    int negative_species;             /* and its species */
    int64_t rows;                     /* the sets so far */
} round_bufs;

/* per_member: k sets one by one into b->outlet and b->jac, as pfr simulate
 * integrates each; a set whose integration fails numerically (too many
 * steps, a rate that cannot be computed) gets nan, as an unstable lane */
static int members(ens_run *r, round_bufs *b, int64_t k, const double *sets)
{
    int S = r->su.S, Q = r->Q, P = r->su.P;
    for (int64_t i = 0; i < k; i++) {
        memcpy(b->p, r->su.params, sizeof *b->p * (size_t)P);
        for (int j = 0; j < Q; j++)
            b->p[r->vary[j]] = sets[(size_t)i * (size_t)Q + (size_t)j];
        double *out = b->outlet + (size_t)i * (size_t)S, *jac = b->jac + (size_t)i * (size_t)S * (size_t)Q;
        memset(jac, 0, sizeof *jac * (size_t)S * (size_t)Q);
        remat_status st = remat_pfr_outlet(b->one, b->p, out);
        for (int g = 0; st == REMAT_OK && g < r->G; g++) {
            double obj;
            st = remat_pfr_objective(b->by_species[g], b->p, &obj, b->pg);
            for (int j = 0; st == REMAT_OK && j < Q; j++)
                jac[r->grad[g] * Q + j] = b->pg[r->vary[j]];
        }
        if (st == REMAT_ERR_NUMERIC) {
            for (int s = 0; s < S; s++)
                out[s] = NAN;
            for (int q = 0; q < S * Q; q++)
                jac[q] = NAN;
        } else if (st != REMAT_OK) {
            snprintf(r->err, sizeof r->err, "%s", remat_last_error());
            return 0;
        }
    }
    return 1;
}

/* per_member: the reactors (compiled on their first run) and buffers */
static int members_new(ens_run *r, round_bufs *b)
{
    remat_pfr_options o = r->su.opt;
    o.goal = REMAT_PFR_NO_GOAL;
    b->p = malloc(sizeof *b->p * (size_t)r->su.P);
    b->pg = malloc(sizeof *b->pg * (size_t)r->su.P);
    b->by_species = calloc((size_t)r->G, sizeof *b->by_species);
    if (!b->p || !b->pg || !b->by_species)
        return snprintf(r->err, sizeof r->err, "out of memory"), 0;
    if (remat_pfr_new(r->su.mech, &o, &b->one) != REMAT_OK)
        return snprintf(r->err, sizeof r->err, "%s", remat_last_error()), 0;
    o.goal = REMAT_PFR_MINIMIZE; /* objective +C_s(L): its gradient is dC_s(L)/dp */
    for (int g = 0; g < r->G; g++) {
        o.species = r->grad[g];
        if (remat_pfr_new(r->su.mech, &o, &b->by_species[g]) != REMAT_OK)
            return snprintf(r->err, sizeof r->err, "%s", remat_last_error()), 0;
    }
    return 1;
}

/* this rank's chunks of a round of n sets */
static int compute(ens_run *r, round_bufs *b, int64_t n)
{
    int S = r->su.S, Q = r->Q, W = r->W;
    int64_t B = r->B, chunks = (n + B - 1) / B, at = 0;
    if (!ens_dist_split(r->d, chunks, b->owner))
        return 0;
    for (int64_t c = 0; c < chunks; c++) {
        int64_t lo = c * B, k = n - lo < B ? n - lo : B;
        b->len[c] = k * W;
        if (b->owner[c] != r->rank)
            continue;
        if (r->per_member) {
            if (!members(r, b, k, b->sets + (size_t)lo * (size_t)Q))
                return 0;
        } else if (remat_pfr_ensemble_run(b->e, k, b->sets + (size_t)lo * (size_t)Q, b->outlet, b->jac) !=
                   REMAT_OK) {
            snprintf(r->err, sizeof r->err, "%s", remat_last_error());
            return 0;
        }
        for (int64_t i = 0; i < k; i++, at++) {
            double *row = b->mine + (size_t)at * (size_t)W;
            memcpy(row, b->outlet + (size_t)i * (size_t)S, sizeof *row * (size_t)S);
            memcpy(row + S, b->jac + (size_t)i * (size_t)S * (size_t)Q, sizeof *row * (size_t)S * (size_t)Q);
        }
    }
    return 1;
}

static int rounds(ens_run *r, ens_csv *csv, FILE *out, round_bufs *b)
{
    int Q = r->Q, W = r->W, first = 1;
    int64_t cap = (int64_t)r->size * r->B;
    for (;;) {
        int64_t n = 0;
        if (r->rank == 0 && (n = ens_csv_read(csv, cap, b->sets, b->lines, r->err, sizeof r->err)) < 0)
            n = -1;
        if (!ens_dist_agree(r->d, n >= 0, r->err, sizeof r->err) || !ens_dist_bcast(r->d, &n, sizeof n))
            return 0;
        if (first && n == 0 && r->rank == 0) {
            snprintf(r->err, sizeof r->err, "%s: no parameter sets after the header", csv->path);
            n = -1;
        }
        if (first && !ens_dist_agree(r->d, n != -1, r->err, sizeof r->err))
            return 0;
        if (n == 0)
            return 1;
        b->rows += n;
        if (!ens_dist_bcast(r->d, b->sets, sizeof *b->sets * (size_t)n * (size_t)Q))
            return 0;
        if (first) { /* a file of fewer sets than B compiles no lanes it would not use */
            int64_t lanes = n < r->B ? n : r->B;
            remat_pfr_options o = r->su.opt;
            int ok;
            if (r->per_member)
                ok = members_new(r, b);
            else if (!(ok = remat_pfr_ensemble_new(r->su.mech, &o, lanes, Q, r->vary, r->su.params, &b->e) ==
                            REMAT_OK))
                snprintf(r->err, sizeof r->err, "%s", remat_last_error());
            if (!ens_dist_agree(r->d, ok, r->err, sizeof r->err))
                return 0;
            if (r->rank == 0)
                write_header(out, r);
            first = 0;
        }
        int ok = compute(r, b, n);
        if (!ens_dist_agree(r->d, ok, r->err, sizeof r->err))
            return 0;
        int64_t chunks = (n + r->B - 1) / r->B;
        if (!ens_dist_gather0(r->d, chunks, b->owner, b->len, b->mine, r->rank == 0 ? b->all : NULL))
            return 0;
        ok = 1;
        for (int64_t i = 0; r->rank == 0 && i < n; i++) {
            const double *res = b->all + (size_t)i * (size_t)W;
            int s = 0;
            if (!write_row(out, r, b->sets + (size_t)i * (size_t)Q, res) && !b->bad++)
                b->first_bad = b->lines[i];
            int neg = b->e ? remat_pfr_ensemble_negative(b->e, 1, res, NULL, &s)
                           : remat_pfr_negative(b->one, 1, res, NULL, &s);
            if (neg && !b->negative++)
                b->first_negative = b->lines[i], b->negative_species = s;
        }
        if (r->rank == 0 && ferror(out)) {
            snprintf(r->err, sizeof r->err, "writing the output: %s", strerror(errno));
            ok = 0;
        }
        if (!ens_dist_agree(r->d, ok, r->err, sizeof r->err))
            return 0;
    }
}

int ens_stream(ens_run *r, ens_csv *csv, FILE *out)
{
    if (!share_header(r, csv))
        return ens_fail(r, 2);
    int S = r->su.S;
    r->W = S + S * r->Q;
    int64_t cap = (int64_t)r->size * r->B, B = r->B;
    round_bufs b = {0};
    b.sets = malloc(sizeof *b.sets * (size_t)cap * (size_t)r->Q);
    b.mine = malloc(sizeof *b.mine * (size_t)cap * (size_t)r->W); /* a rank's chunks of a round */
    b.outlet = malloc(sizeof *b.outlet * (size_t)B * (size_t)S);
    b.jac = malloc(sizeof *b.jac * (size_t)B * (size_t)S * (size_t)r->Q);
    b.owner = malloc(sizeof *b.owner * (size_t)r->size);
    b.len = malloc(sizeof *b.len * (size_t)r->size);
    if (r->rank == 0) {
        b.lines = malloc(sizeof *b.lines * (size_t)cap);
        b.all = malloc(sizeof *b.all * (size_t)cap * (size_t)r->W);
    }
    int ok = b.sets && b.mine && b.outlet && b.jac && b.owner && b.len && (r->rank != 0 || (b.lines && b.all));
    if (!ok)
        snprintf(r->err, sizeof r->err, "out of memory for rounds of %lld sets", (long long)cap);
    int status = 0;
    if (!ens_dist_agree(r->d, ok, r->err, sizeof r->err) || !rounds(r, csv, out, &b))
        status = ens_fail(r, 1);
    if (status == 0 && r->rank == 0 && r->per_member)
        fprintf(stderr, "remat: pfr ensemble: %s: each of the %lld members integrated adaptively with %s (rtol %g, "
                        "atol %g), as pfr simulate integrates it\n",
                r->why, (long long)b.rows, remat_ode_method_name(r->su.opt.method), r->su.opt.rtol, r->su.opt.atol);
    if (status == 0 && r->rank == 0 && b.bad)
        fprintf(stderr, "remat: pfr ensemble: warning: %lld set%s gave non-finite outlet concentrations (the first "
                        "at %s:%lld), written as nan: the integration is unstable there; take more steps or a "
                        "higher-order method\n",
                (long long)b.bad, b.bad == 1 ? "" : "s", csv->path, (long long)b.first_bad);
    if (status == 0 && r->rank == 0 && b.negative)
        fprintf(stderr, "remat: pfr ensemble: warning: %lld set%s gave negative outlet concentrations, below zero by "
                        "more than rounding (the first at %s:%lld, '%s'): the step is too large for the rates there, "
                        "or a rate drives them negative; take more steps or a higher-order method\n",
                (long long)b.negative, b.negative == 1 ? "" : "s", csv->path, (long long)b.first_negative,
                remat_mechanism_species_name(r->su.mech, b.negative_species));
    remat_pfr_ensemble_free(b.e);
    remat_pfr_free(b.one);
    for (int g = 0; b.by_species && g < r->G; g++)
        remat_pfr_free(b.by_species[g]);
    free(b.by_species);
    free(b.p);
    free(b.pg);
    free(b.sets);
    free(b.lines);
    free(b.mine);
    free(b.all);
    free(b.outlet);
    free(b.jac);
    free(b.owner);
    free(b.len);
    return status;
}

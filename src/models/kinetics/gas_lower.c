/*
 * gas_lower.c — a gas mechanism's right-hand side as vector ops.
 *
 * The expression DAG of gas_build.c lowers one scalar op per node: GRI-Mech
 * 3.0 becomes tens of thousands of ops per evaluation, and Rodas5's
 * Jacobian (one JVP per state) multiplies that by 54. Here the same model is
 * written over vectors of species (K) and reactions (N): the thermo as
 * K x 7 matrices times (1, T, T^2, T^3, T^4, 1/T, log T), concentrations
 * gathered into reactant slots by 0/1 matrices (a product of one non-zero
 * term per row, exact), third bodies as an efficiency matrix, falloff
 * functions for all reactions with constants that make them 1 elsewhere,
 * and production rates as the stoichiometric matrix times q. The values
 * agree with the DAG's reference evaluator to rounding (tests/test_gas.c),
 * not bit for bit: sums run in another order.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/assert.h"
#include "core/error.h"
#include "models/kinetics/gas_impl.h"
#include "remat/ad.h"

static double *vec(remat_arena *a, size_t n, double fill, int *oom)
{
    double *v = rmi_arena_alloc(a, (n ? n : 1) * sizeof *v);
    if (!v) {
        *oom = 1;
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        v[i] = fill;
    return v;
}

static void thermo_rows(const double *a, double *h, double *s, double *cp, double *dcp)
{
    const double hh[7] = {a[0], a[1] / 2, a[2] / 3, a[3] / 4, a[4] / 5, a[5], 0};
    const double ss[7] = {a[6], a[1], a[2] / 2, a[3] / 3, a[4] / 4, 0, a[0]};
    const double cc[7] = {a[0], a[1], a[2], a[3], a[4], 0, 0};
    const double dc[7] = {a[1], 2 * a[2], 3 * a[3], 4 * a[4], 0, 0, 0};
    memcpy(h, hh, sizeof hh);
    memcpy(s, ss, sizeof ss);
    memcpy(cp, cc, sizeof cc);
    memcpy(dcp, dc, sizeof dc);
}

/* slots of one side (or the orders): 0 when an amount is not an integer or there are too many */
static int fill_slots(const gas_term *t, int n, int K, int row, double **sel, int *used)
{
    int slot = 0;
    for (int j = 0; j < n; j++) {
        double nu = t[j].nu;
        if (nu != floor(nu) || nu < 0)
            return 0;
        for (int c = 0; c < (int)nu; c++) {
            if (slot == GAS_SLOTS)
                return 0;
            sel[slot][(size_t)row * K + t[j].species] = 1;
            slot++;
        }
    }
    if (slot > *used)
        *used = slot;
    return 1;
}

remat_status gas_plan_build(const gas_desc *d, int adiabatic, remat_arena *a, gas_plan **out)
{
    int oom = 0, K = d->nsp, N = d->nrx;
    size_t NK = (size_t)N * K;
    gas_plan *g = rmi_arena_alloc(a, sizeof *g);
    if (!g)
        return gas_nomem(d->file);
    g->K = K, g->N = N, g->adiabatic = adiabatic, g->vec = 1;
    for (int r = 0; r < 2; r++) {
        for (int q = 0; q < 3; q++)
            g->th[r][q] = vec(a, (size_t)K * 7, 0, &oom);
        g->dcp[r] = vec(a, (size_t)K * 7, 0, &oom);
    }
    g->tmid = vec(a, K, INFINITY, &oom);
    g->nrs = vec(a, N, 0, &oom), g->nps = vec(a, N, 0, &oom);
    for (int k = 0; k < GAS_SLOTS; k++) {
        g->rsel[k] = vec(a, NK, 0, &oom), g->psel[k] = vec(a, NK, 0, &oom);
        g->rpad[k] = vec(a, N, 0, &oom), g->ppad[k] = vec(a, N, 0, &oom);
    }
    g->nut = vec(a, NK, 0, &oom), g->nueq = vec(a, NK, 0, &oom), g->eff = vec(a, NK, 0, &oom);
    g->effx = vec(a, NK, 0, &oom), g->effd = vec(a, N, 0, &oom);
    double **masks[] = {&g->dneq, &g->revmask, &g->is_tb, &g->is_fo, &g->is_ca, &g->is_troe, &g->is_sri,
                        &g->has_rev, &g->k2b, &g->k2Ea, &g->rt3, &g->rt1, &g->t2, &g->w2, &g->sb, &g->scinv,
                        &g->scw, &g->se, &g->revb, &g->revEa, &g->revA, &g->rev_tb};
    for (size_t i = 0; i < sizeof masks / sizeof masks[0]; i++)
        *masks[i] = vec(a, N, 0, &oom);
    g->k2A = vec(a, N, 1, &oom), g->troeA = vec(a, N, 0.5, &oom), g->sa = vec(a, N, 1, &oom);
    g->sd = vec(a, N, 1, &oom);
    if (oom)
        return gas_nomem(d->file);
    for (int k = 0; k < K; k++) {
        const gas_species *sp = &d->sp[k];
        for (int r = 0; r < 2; r++)
            thermo_rows(r && sp->nranges == 2 ? sp->hi : sp->lo, g->th[r][0] + 7 * k, g->th[r][1] + 7 * k,
                        g->th[r][2] + 7 * k, g->dcp[r] + 7 * k);
        if (sp->nranges == 2)
            g->tmid[k] = sp->tmid;
    }
    for (int i = 0; i < N && g->vec; i++) {
        const gas_reaction *r = &d->rx[i];
        if (r->kind == GAS_PLOG) {
            g->vec = 0;
            break;
        }
        const gas_term *ord = r->norders ? r->orders : r->side[0];
        int nord = r->norders ? r->norders : r->nside[0];
        if (!fill_slots(ord, nord, K, i, g->rsel, &g->R) || !fill_slots(r->side[1], r->nside[1], K, i, g->psel, &g->Pn)) {
            g->vec = 0;
            break;
        }
        for (int side = 0; side < 2; side++)
            for (int j = 0; j < r->nside[side]; j++) {
                double nu = side ? r->side[side][j].nu : -r->side[side][j].nu;
                int k = r->side[side][j].species;
                g->nut[(size_t)k * N + i] += nu;
                if (r->reversible && !r->has_rev) {
                    g->nueq[(size_t)i * K + k] += nu;
                    g->dneq[i] += nu;
                }
            }
        g->revmask[i] = r->reversible;
        if (r->has_rev) {
            g->has_rev[i] = 1;
            g->revA[i] = r->rev.A, g->revb[i] = r->rev.b, g->revEa[i] = r->rev.Ea;
            g->rev_tb[i] = r->kind == GAS_THREE_BODY;
        }
        int third = r->kind == GAS_THREE_BODY || r->kind == GAS_FALLOFF || r->kind == GAS_CHEM_ACT;
        for (int k = 0; third && k < K; k++)
            g->eff[(size_t)i * K + k] = r->collider >= 0 ? (k == r->collider) : r->eff ? r->eff[k] : r->default_eff;
        g->effd[i] = third && r->collider < 0 ? r->default_eff : 0;
        for (int k = 0; third && k < K; k++)
            g->effx[(size_t)i * K + k] = g->eff[(size_t)i * K + k] - g->effd[i];
        g->is_tb[i] = r->kind == GAS_THREE_BODY;
        g->is_fo[i] = r->kind == GAS_FALLOFF;
        g->is_ca[i] = r->kind == GAS_CHEM_ACT;
        if (r->kind == GAS_FALLOFF || r->kind == GAS_CHEM_ACT) {
            g->k2A[i] = r->k2.A, g->k2b[i] = r->k2.b, g->k2Ea[i] = r->k2.Ea;
            if (r->ff == GAS_F_TROE) {
                g->is_troe[i] = 1;
                g->troeA[i] = r->troe[0];
                /* Cantera: 1/T3 infinite for T3 = 0 (then exp(-T/T3) = 0); large and finite here,
                 * so that its derivative is 0, not 0 * inf */
                g->rt3[i] = fabs(r->troe[1]) < 1e-300 ? 1e300 : 1 / r->troe[1];
                g->rt1[i] = fabs(r->troe[2]) < 1e-300 ? 1e300 : 1 / r->troe[2];
                g->t2[i] = r->troe[3], g->w2[i] = r->troe_t2;
            } else if (r->ff == GAS_F_SRI) {
                g->is_sri[i] = 1;
                g->sa[i] = r->sri[0], g->sb[i] = r->sri[1], g->sd[i] = r->sri[3], g->se[i] = r->sri[4];
                g->scw[i] = r->sri[2] != 0, g->scinv[i] = r->sri[2] != 0 ? 1 / r->sri[2] : 0;
            }
        }
    }
    for (int i = 0; i < N; i++) {
        g->n_tb += g->is_tb[i] != 0, g->n_fo += g->is_fo[i] != 0, g->n_ca += g->is_ca[i] != 0;
        g->n_troe += g->is_troe[i] != 0, g->n_sri += g->is_sri[i] != 0, g->n_rev += g->has_rev[i] != 0;
        g->n_rev_tb += g->rev_tb[i] != 0;
    }
    /* the falloff reactions' parameters, compacted to their nf entries */
    g->nf = g->n_fo + g->n_ca;
    g->fidx = rmi_arena_alloc(a, sizeof *g->fidx * (size_t)(g->nf ? g->nf : 1));
    g->is_f = vec(a, N, 0, &oom), g->fgat = vec(a, (size_t)g->nf * N, 0, &oom);
    g->fsct = vec(a, (size_t)g->nf * N, 0, &oom);
    if (!g->fidx || oom)
        return gas_nomem(d->file);
    for (int i = 0, j = 0; i < N; i++)
        if (g->is_fo[i] != 0 || g->is_ca[i] != 0) {
            g->is_f[i] = 1, g->fidx[j] = i;
            g->fgat[(size_t)j * N + i] = 1, g->fsct[(size_t)i * g->nf + j] = 1;
            j++;
        }
    g->f_is_fo = g->is_fo, g->f_is_ca = g->is_ca;
    double **fa[] = {&g->f_is_fo, &g->f_is_ca, &g->is_troe, &g->is_sri, &g->k2A, &g->k2b, &g->k2Ea, &g->troeA,
                     &g->rt3, &g->rt1, &g->t2, &g->w2, &g->sa, &g->sb, &g->scinv, &g->scw, &g->sd, &g->se};
    for (size_t q = 0; q < sizeof fa / sizeof fa[0]; q++) {
        double *c = vec(a, (size_t)g->nf, 0, &oom);
        if (oom)
            return gas_nomem(d->file);
        for (int j = 0; j < g->nf; j++)
            c[j] = (*fa[q])[g->fidx[j]];
        *fa[q] = c;
    }
    for (int k = 0; k < GAS_SLOTS; k++)
        for (int i = 0; i < N; i++) {
            double rs = 0, ps = 0;
            for (int j = 0; j < K; j++)
                rs += g->rsel[k][(size_t)i * K + j], ps += g->psel[k][(size_t)i * K + j];
            g->rpad[k][i] = rs == 0, g->ppad[k][i] = ps == 0;
            g->nrs[i] += rs != 0, g->nps[i] += ps != 0;
        }
    *out = g;
    return REMAT_OK;
}

/* ---- lowering ---- */

typedef struct {
    remat_fn *f;
    int64_t K, N;
    remat_shape ys; /* y's shape: (S,) or batched (..., S) */
} lw;

static remat_val cvec(lw *L, const double *v, int64_t n) { return remat_const_data(L->f, REMAT_F64, 1, &n, v); }
static remat_val cmat(lw *L, const double *v, int64_t r, int64_t c)
{
    return remat_const_data(L->f, REMAT_F64, 2, ((int64_t[]){r, c}), v);
}
/* A x for a constant A (r x c) and x (c,), or x A^T for a batch x (..., c):
 * one gemm over the batch (the Jacobian's S tangents at once) */
static remat_val mv(lw *L, const double *A, int64_t r, int64_t c, remat_val x)
{
    if (L->ys.rank == 1)
        return remat_matmul(L->f, cmat(L, A, r, c), x);
    double *t = rmi_malloc(sizeof *t * (size_t)(r * c > 0 ? r * c : 1));
    if (!t)
        return remat_matmul(L->f, x, remat_transpose(L->f, cmat(L, A, r, c), ((int[]){1, 0})));
    for (int64_t i = 0; i < r; i++)
        for (int64_t j = 0; j < c; j++)
            t[j * r + i] = A[i * c + j];
    remat_val v = remat_matmul(L->f, x, cmat(L, t, c, r));
    rmi_free(t);
    return v;
}

/* the last axis of y's shape, sized n */
static remat_shape last(const lw *L, int64_t n)
{
    remat_shape s = L->ys;
    s.dims[s.rank - 1] = n;
    return s;
}

/* a slice [a, b) of y's last axis */
static remat_val cut(lw *L, remat_val y, int64_t a, int64_t b)
{
    int64_t start[REMAT_MAX_RANK] = {0}, limit[REMAT_MAX_RANK];
    memcpy(limit, L->ys.dims, sizeof limit);
    start[L->ys.rank - 1] = a;
    limit[L->ys.rank - 1] = b;
    return remat_slice(L->f, y, start, limit, NULL);
}

/* the sum over the last axis, kept as (..., 1) */
static remat_val sum_last(lw *L, remat_val x)
{
    remat_shape s = last(L, 1);
    return remat_reshape(L->f, remat_sum(L->f, x, 1, ((int[]){L->ys.rank - 1})), s.rank, s.dims);
}

static remat_val sc(lw *L, double v) { return remat_scalar(L->f, REMAT_F64, v); }

/* an Arrhenius rate and what its T derivative reads: d log k / dT = (b + Ea / (R T)) / T */
typedef struct {
    remat_val k, b, eaRT; /* eaRT = Ea / (R T) */
} arrh_parts;

/* A exp(b log T - Ea / (R T)) over vectors */
static remat_val arrh(lw *L, remat_val A, remat_val b, remat_val Ea, remat_val logT, remat_val invT, arrh_parts *o)
{
    remat_fn *f = L->f;
    remat_val eaRT = remat_mul(f, remat_div(f, Ea, sc(L, GAS_R)), invT);
    remat_val k = remat_mul(f, A, remat_exp(f, remat_sub(f, remat_mul(f, b, logT), eaRT)));
    *o = (arrh_parts){.k = k, .b = b, .eaRT = eaRT};
    return k;
}

static remat_val log10v(lw *L, remat_val x) { return remat_div(L->f, remat_log(L->f, x), sc(L, M_LN10)); }

/* the slots' factors (sel x conc + pad, one per slot) and their product */
static remat_val slot_product(lw *L, int n, double *const *sel, double *const *pad, remat_val conc, remat_val *slots)
{
    remat_val p = REMAT_NONE;
    for (int k = 0; k < n; k++) {
        remat_val c = remat_add(L->f, mv(L, sel[k], L->N, L->K, conc), cvec(L, pad[k], L->N));
        slots[k] = c;
        p = k ? remat_mul(L->f, p, c) : c;
    }
    return n ? p : remat_const_fill(L->f, REMAT_F64, 1, &L->N, 1.0);
}

/* what the right-hand side computes, kept for its Jacobian (gas_lower_jac) */
typedef struct {
    remat_val X, T, C, conc, h, cp, m, kmain, M, kf, kr, Emin;
    remat_val krev; /* the explicit reverses' Arrhenius rates, before a three-body M */
    /* over the nf falloff reactions (gas_plan.fidx) */
    remat_val k0, kinf, Mf, Pr, lpr, F, onePr;
    remat_val lfc, nn, lc, f1, xx, w0;
    remat_val rslot[GAS_SLOTS], pslot[GAS_SLOTS], rprod, pprod;
    remat_val omega, total, dX, dT, dydt;
    /* read by the T column alone (gas_lower_jac) */
    remat_val invT, v, hi, factor, expdg, Fc, e3, e1, e2, ew, ec, cpsum;
    arrh_parts amain, a2, arev;
} parts;

static void lower_parts(lw *Lp, const gas_plan *g, remat_val y, remat_val params, parts *o)
{
    lw L = *Lp;
    remat_fn *f = L.f;
    int64_t K = g->K, N = g->N;
    /* X (..., K) and T, P, C as (..., 1) (unbatched: (1,)), so everything broadcasts */
    remat_val X = cut(&L, y, 0, K);
    remat_val T = cut(&L, y, K, K + 1), P = remat_index(f, params, 0);
    remat_val logT = remat_log(f, T), invT = remat_div(f, sc(&L, 1), T);
    remat_val C = remat_div(f, P, remat_mul(f, sc(&L, GAS_R), T));
    remat_val T2 = remat_mul(f, T, T), T3 = remat_mul(f, T2, T), T4 = remat_mul(f, T3, T);
    remat_shape s1 = last(&L, 1);
    remat_val one = remat_broadcast_to(f, remat_const_fill(f, REMAT_F64, 1, ((int64_t[]){1}), 1.0), s1.rank, s1.dims);
    remat_val pows[7] = {one, T, T2, T3, T4, invT, logT};
    remat_val v = remat_concatenate(f, 7, pows, L.ys.rank - 1);
    remat_val hi = remat_gt(f, T, cvec(&L, g->tmid, K));
    remat_val th[3];
    for (int q = 0; q < 3; q++) {
        if (q == 2 && !g->adiabatic)
            break;
        remat_val lo = mv(&L, g->th[0][q], K, 7, v);
        remat_val up = mv(&L, g->th[1][q], K, 7, v);
        th[q] = remat_select(f, hi, up, lo);
    }
    remat_val h = th[0], gk = remat_sub(f, th[0], th[1]);
    *o = (parts){.invT = invT, .v = v, .hi = hi};
    remat_val conc = remat_mul(f, C, X);

    /* rate constants */
    remat_val m = remat_slice(f, params, ((int64_t[]){1}), ((int64_t[]){1 + N}), NULL);
    remat_val arr = remat_reshape(f, remat_slice(f, params, ((int64_t[]){1 + N}), ((int64_t[]){1 + 4 * N}), NULL), 2,
                                  ((int64_t[]){N, 3}));
    remat_val col[3];
    for (int c = 0; c < 3; c++)
        col[c] = remat_reshape(f, remat_slice(f, arr, ((int64_t[]){0, c}), ((int64_t[]){N, c + 1}), NULL), 1, &N);
    remat_val kmain = arrh(&L, col[0], col[1], col[2], logT, invT, &o->amain);
    /* the parts of forms the mechanism lacks are left out (g->n_*): each is a select whose mask is
     * all zeros there, so the values are the same bits either way */
    int pres = g->nf > 0;
    int64_t Nf = g->nf;
    /* M = eff conc = default x sum(conc) + (eff - default) conc: the constant keeps the few
     * species whose efficiency is not the default (GRI: about 400 non-zeros, not 3,000) */
    remat_val M = g->n_tb + pres > 0 ? remat_add(f, remat_mul(f, cvec(&L, g->effd, N), sum_last(&L, conc)),
                                                  mv(&L, g->effx, N, K, conc))
                                      : REMAT_NONE;
    remat_val ones = remat_const_fill(f, REMAT_F64, 1, &N, 1.0);
    remat_val k0 = REMAT_NONE, kinf = REMAT_NONE, Pr = REMAT_NONE, lpr = REMAT_NONE, F = REMAT_NONE;
    remat_val onePr = REMAT_NONE, Mf = REMAT_NONE;
    remat_val lfc = REMAT_NONE, nn = REMAT_NONE, lc = REMAT_NONE, f1 = REMAT_NONE, xx = REMAT_NONE, w0 = REMAT_NONE;
    remat_val factor = ones;
    if (pres) {
        /* over the nf falloff and chemically activated reactions alone (vectors (..., nf)) */
        remat_val kmf = mv(&L, g->fgat, Nf, N, kmain), is_ca = cvec(&L, g->f_is_ca, Nf);
        remat_val onesf = remat_const_fill(f, REMAT_F64, 1, &Nf, 1.0);
        Mf = mv(&L, g->fgat, Nf, N, M);
        remat_val k2 = arrh(&L, cvec(&L, g->k2A, Nf), cvec(&L, g->k2b, Nf), cvec(&L, g->k2Ea, Nf), logT, invT, &o->a2);
        k0 = g->n_ca ? remat_select(f, is_ca, kmf, k2) : k2;
        kinf = g->n_ca ? remat_select(f, is_ca, k2, kmf) : kmf;
        /* max: log10 of Pr = 0 would give the Jacobian's reverse pass 1/x^2 = inf, and inf * 0 = NaN */
        Pr = remat_div(f, remat_mul(f, k0, Mf), kinf);
        lpr = log10v(&L, remat_max(f, Pr, sc(&L, 1e-300)));
        remat_val Ftroe = onesf, Fsri = onesf;
        if (g->n_troe) {
            remat_val tA = cvec(&L, g->troeA, Nf);
            o->e3 = remat_exp(f, remat_neg(f, remat_mul(f, T, cvec(&L, g->rt3, Nf))));
            o->e1 = remat_exp(f, remat_neg(f, remat_mul(f, T, cvec(&L, g->rt1, Nf))));
            o->e2 = remat_exp(f, remat_neg(f, remat_mul(f, cvec(&L, g->t2, Nf), invT)));
            remat_val Fc = remat_add(f, remat_add(f, remat_mul(f, remat_sub(f, sc(&L, 1), tA), o->e3),
                                                  remat_mul(f, tA, o->e1)),
                                     remat_mul(f, cvec(&L, g->w2, Nf), o->e2));
            o->Fc = remat_max(f, Fc, sc(&L, 1e-300));
            lfc = log10v(&L, o->Fc);
            remat_val cc = remat_sub(f, sc(&L, -0.4), remat_mul(f, sc(&L, 0.67), lfc));
            nn = remat_sub(f, sc(&L, 0.75), remat_mul(f, sc(&L, 1.27), lfc));
            lc = remat_add(f, lpr, cc);
            f1 = remat_div(f, lc, remat_sub(f, nn, remat_mul(f, sc(&L, 0.14), lc)));
            Ftroe = remat_exp(
                f, remat_mul(f, sc(&L, M_LN10), remat_div(f, lfc, remat_add(f, sc(&L, 1), remat_mul(f, f1, f1)))));
        }
        if (g->n_sri) {
            o->ew = remat_exp(f, remat_neg(f, remat_mul(f, cvec(&L, g->sb, Nf), invT)));
            o->ec = remat_exp(f, remat_neg(f, remat_mul(f, T, cvec(&L, g->scinv, Nf))));
            w0 = remat_add(f, remat_mul(f, cvec(&L, g->sa, Nf), o->ew), remat_mul(f, cvec(&L, g->scw, Nf), o->ec));
            xx = remat_div(f, sc(&L, 1), remat_add(f, sc(&L, 1), remat_mul(f, lpr, lpr)));
            Fsri = remat_mul(f, remat_exp(f, remat_mul(f, xx, remat_log(f, w0))),
                             remat_mul(f, cvec(&L, g->sd, Nf), remat_exp(f, remat_mul(f, cvec(&L, g->se, Nf), logT))));
        }
        F = onesf;
        if (g->n_troe && g->n_sri)
            F = remat_select(f, cvec(&L, g->is_troe, Nf), Ftroe, remat_select(f, cvec(&L, g->is_sri, Nf), Fsri, onesf));
        else if (g->n_troe)
            F = remat_select(f, cvec(&L, g->is_troe, Nf), Ftroe, onesf);
        else if (g->n_sri)
            F = remat_select(f, cvec(&L, g->is_sri, Nf), Fsri, onesf);
        onePr = remat_add(f, sc(&L, 1), Pr);
        remat_val fo = remat_mul(f, remat_div(f, Pr, onePr), F), ca = remat_div(f, F, onePr);
        remat_val ff = !g->n_ca ? fo : !g->n_fo ? ca : remat_select(f, cvec(&L, g->f_is_fo, Nf), fo, ca);
        /* back to all reactions (each falloff entry one product by 1: its own bits), 1 elsewhere */
        factor = remat_select(f, cvec(&L, g->is_f, N), mv(&L, g->fsct, N, Nf, ff), ones);
    }
    if (g->n_tb)
        factor = remat_select(f, cvec(&L, g->is_tb, N), M, factor);
    remat_val kf = remat_mul(f, kmain, factor);

    /* rates of progress */
    remat_val rs[GAS_SLOTS], ps[GAS_SLOTS];
    for (int k = 0; k < GAS_SLOTS; k++)
        rs[k] = ps[k] = REMAT_NONE; /* the slots used are g->R and g->Pn */
    remat_val rprod = slot_product(&L, g->R, g->rsel, g->rpad, conc, rs);
    remat_val pprod = slot_product(&L, g->Pn, g->psel, g->ppad, conc, ps);
    remat_val logC0 = remat_sub(f, sc(&L, log(GAS_ONE_ATM / GAS_R)), logT);
    remat_val dg = remat_sub(f, mv(&L, g->nueq, N, K, gk),
                             remat_mul(f, cvec(&L, g->dneq, N), logC0));
    remat_val expdg = remat_exp(f, dg), Emin = remat_min(f, expdg, sc(&L, 1e300));
    remat_val kr = remat_mul(f, kf, Emin);
    remat_val krev = REMAT_NONE;
    if (g->n_rev) {
        /* an explicit reverse (CHEMKIN REV): Arrhenius, times the forward's M on a three-body
         * reaction (Cantera: the reverse is a three-body reaction with the same efficiencies) */
        krev = arrh(&L, cvec(&L, g->revA, N), cvec(&L, g->revb, N), cvec(&L, g->revEa, N), logT, invT, &o->arev);
        remat_val kre = g->n_rev_tb ? remat_mul(f, krev, remat_select(f, cvec(&L, g->rev_tb, N), M, ones)) : krev;
        kr = remat_select(f, cvec(&L, g->has_rev, N), kre, kr);
    }
    remat_val q = remat_mul(f, m, remat_sub(f, remat_mul(f, kf, rprod),
                                             remat_mul(f, cvec(&L, g->revmask, N), remat_mul(f, kr, pprod))));

    /* production rates, the state's derivatives */
    remat_val omega = mv(&L, g->nut, K, N, q);
    remat_val total = sum_last(&L, omega);
    remat_val dX = remat_div(f, remat_sub(f, omega, remat_mul(f, X, total)), C);
    remat_val dT = remat_mul(f, T, sc(&L, 0)), cpsum = REMAT_NONE;
    if (g->adiabatic) {
        cpsum = sum_last(&L, remat_mul(f, X, th[2]));
        dT = remat_neg(f, remat_div(f, remat_mul(f, T, sum_last(&L, remat_mul(f, h, omega))), remat_mul(f, C, cpsum)));
    }
    remat_val dd[2] = {dX, dT};
    o->X = X, o->T = T, o->C = C, o->conc = conc, o->h = h, o->cp = g->adiabatic ? th[2] : REMAT_NONE, o->m = m;
    o->kmain = kmain, o->k0 = k0, o->kinf = kinf, o->M = M, o->Mf = Mf, o->Pr = Pr, o->lpr = lpr, o->F = F;
    o->onePr = onePr;
    o->krev = krev;
    o->kf = kf, o->kr = kr, o->Emin = Emin, o->lfc = lfc, o->nn = nn, o->lc = lc, o->f1 = f1, o->xx = xx, o->w0 = w0;
    o->rprod = rprod, o->pprod = pprod, o->omega = omega, o->total = total, o->dX = dX, o->dT = dT;
    o->factor = factor, o->expdg = expdg, o->cpsum = cpsum;
    o->dydt = remat_concatenate(f, 2, dd, L.ys.rank - 1);
    memcpy(o->rslot, rs, sizeof rs);
    memcpy(o->pslot, ps, sizeof ps);
}

remat_status gas_lower_rhs(remat_fn *f, const gas_plan *g, remat_val y, remat_val params, remat_val *dydt)
{
    lw L = {.f = f, .K = g->K, .N = g->N, .ys = remat_val_shape(f, y)};
    parts o;
    lower_parts(&L, g, y, params, &o);
    if (remat_fn_status(f) != REMAT_OK)
        return rmi_error(remat_fn_status(f), "kinetics: lowering the gas mechanism: %s", remat_fn_error(f));
    *dydt = o.dydt;
    return REMAT_OK;
}

/* ---- the Jacobian ---- */

static remat_val reshape2(remat_fn *f, remat_val v, int64_t r, int64_t c)
{
    return remat_reshape(f, v, 2, ((int64_t[]){r, c}));
}

/* d factor / d M for every reaction (N,): 1 for a third body, through Pr for falloff and
 * chemically activated reactions (dPr/dM = k0/kinf, over their nf entries and put back), 0
 * elsewhere */
static remat_val factor_dM(lw *L, const gas_plan *g, const parts *o)
{
    remat_fn *f = L->f;
    int64_t N = g->N, Nf = g->nf;
    remat_val zeros = remat_const_fill(f, REMAT_F64, 1, &N, 0.0), ones = remat_const_fill(f, REMAT_F64, 1, &N, 1.0);
    remat_val d = zeros;
    if (Nf > 0) {
        remat_val zf = remat_const_fill(f, REMAT_F64, 1, &Nf, 0.0);
        remat_val Prc = remat_max(f, o->Pr, sc(L, 1e-300)), dTroe = zf, dSri = zf, dF = zf;
        if (g->n_troe) {
            /* Troe: log10 F = lfc / (1 + f1^2), f1 = lc / (nn - 0.14 lc), lc = log10 Pr + c */
            remat_val d1 = remat_sub(f, o->nn, remat_mul(f, sc(L, 0.14), o->lc));
            remat_val df1 = remat_div(f, o->nn, remat_mul(f, d1, d1));
            remat_val q1 = remat_add(f, sc(L, 1), remat_mul(f, o->f1, o->f1));
            remat_val dlog10F = remat_div(
                f, remat_mul(f, o->lfc, remat_mul(f, sc(L, -2), remat_mul(f, o->f1, df1))), remat_mul(f, q1, q1));
            /* dF/dPr = F ln10 dlog10F/dlog10Pr / (Pr ln10) */
            dTroe = remat_div(f, remat_mul(f, o->F, dlog10F), Prc);
        }
        if (g->n_sri) {
            /* SRI: F = w0^xx d T^e, xx = 1 / (1 + lpr^2) */
            remat_val dxx = remat_mul(f, sc(L, -2), remat_mul(f, o->lpr, remat_mul(f, o->xx, o->xx)));
            dSri = remat_div(f, remat_mul(f, o->F, remat_mul(f, remat_log(f, o->w0), dxx)),
                             remat_mul(f, Prc, sc(L, M_LN10)));
        }
        if (g->n_sri)
            dF = remat_select(f, cvec(L, g->is_sri, Nf), dSri, zf);
        if (g->n_troe)
            dF = remat_select(f, cvec(L, g->is_troe, Nf), dTroe, dF);
        remat_val rr = remat_div(f, o->k0, o->kinf);
        remat_val inv1 = remat_div(f, sc(L, 1), o->onePr), inv2 = remat_mul(f, inv1, inv1);
        remat_val dca = REMAT_NONE, dfo = REMAT_NONE;
        if (g->n_ca)
            dca = remat_mul(f, remat_sub(f, remat_mul(f, dF, inv1), remat_mul(f, o->F, inv2)), rr);
        if (g->n_fo)
            dfo = remat_mul(f, remat_add(f, remat_mul(f, o->F, inv2), remat_mul(f, remat_mul(f, o->Pr, inv1), dF)), rr);
        remat_val df = !g->n_ca ? dfo : !g->n_fo ? dca : remat_select(f, cvec(L, g->f_is_fo, Nf), dfo, dca);
        d = mv(L, g->fsct, N, Nf, df);
    }
    return g->n_tb ? remat_select(f, cvec(L, g->is_tb, N), ones, d) : d;
}

/* the slots' weights: column s of the (N, n) matrix is sign w times the other slots' product */
static void slot_weights(lw *L, int n, const remat_val *slots, remat_val w, int sign, remat_val *cols)
{
    remat_fn *f = L->f;
    if (sign < 0)
        w = remat_neg(f, w);
    for (int s = 0; s < n; s++) {
        remat_val c = w;
        for (int u = 0; u < n; u++)
            if (u != s)
                c = remat_mul(f, c, slots[u]);
        cols[s] = reshape2(f, c, L->N, 1);
    }
}

/* dq/dconc (N x K) = sum over j of W[:, j] times selection j (N x K), as one batched product over
 * reactions: W (N, J) by the constant (N, J, K) whose block n holds row n of each selection (the
 * efficiencies less their default, then the reactant and the product slots; the caller adds the
 * default's rank-one part). A reaction touches a few species, so the
 * constant is mostly zeros and the CPU backend sums its non-zeros alone (dot_sparse.c): about N J
 * products where J dense N x K terms each read and wrote all N K entries. REMAT_NONE: out of memory. */
static remat_val slot_matrix(lw *L, const gas_plan *g, int J, remat_val *cols)
{
    remat_fn *f = L->f;
    int64_t N = L->N, K = L->K;
    double *sel = rmi_calloc((size_t)(N * J * K), sizeof *sel);
    if (!sel)
        return REMAT_NONE; /* out of memory */
    const double *src[1 + 2 * GAS_SLOTS];
    int ns = 0;
    src[ns++] = g->effx; /* the default efficiencies' part is rank one: gas_lower_jac */
    for (int s = 0; s < g->R; s++)
        src[ns++] = g->rsel[s];
    for (int s = 0; s < g->Pn; s++)
        src[ns++] = g->psel[s];
    REMAT_ASSERT(ns == J);
    for (int64_t n = 0; n < N; n++)
        for (int j = 0; j < J; j++)
            memcpy(sel + (n * J + j) * K, src[j] + n * K, sizeof *sel * (size_t)K);
    remat_val c = remat_const_data(f, REMAT_F64, 3, ((int64_t[]){N, J, K}), sel);
    rmi_free(sel);
    remat_val W = remat_concatenate(f, J, cols, 1);
    remat_dot_dims d = {.n_contract = 1, .lhs_contract = {1}, .rhs_contract = {1}, .n_batch = 1,
                        .lhs_batch = {0}, .rhs_batch = {0}};
    return remat_dot_general(f, W, c, &d);
}

/* d log k / dT of an Arrhenius rate: (b + Ea / (R T)) / T */
static remat_val arrh_dlog(lw *L, const arrh_parts *a, remat_val invT)
{
    return remat_mul(L->f, remat_add(L->f, a->b, a->eaRT), invT);
}

/* d factor / dT for every reaction (N,): a third body's M = C eff X goes as 1/T; a falloff or
 * chemically activated reaction's Pr = k0 M / kinf moves with both rates and M, and its F with Pr
 * and, through Fc (Troe) or w0 and T^e (SRI), with T itself (over the nf entries, put back) */
static remat_val factor_dT(lw *L, const gas_plan *g, const parts *o, remat_val dlk)
{
    remat_fn *f = L->f;
    int64_t N = g->N, Nf = g->nf;
    remat_val d = remat_const_fill(f, REMAT_F64, 1, &N, 0.0), invT = o->invT;
    if (Nf > 0) {
        remat_val zf = remat_const_fill(f, REMAT_F64, 1, &Nf, 0.0);
        remat_val is_ca = cvec(L, g->f_is_ca, Nf), dl2 = arrh_dlog(L, &o->a2, invT);
        remat_val dlkf = mv(L, g->fgat, Nf, N, dlk);
        remat_val dl0 = g->n_ca ? remat_select(f, is_ca, dlkf, dl2) : dl2;
        remat_val dlinf = g->n_ca ? remat_select(f, is_ca, dl2, dlkf) : dlkf;
        remat_val dPr = remat_mul(f, o->Pr, remat_sub(f, remat_sub(f, dl0, dlinf), invT));
        remat_val dlpr = remat_div(f, dPr, remat_mul(f, remat_max(f, o->Pr, sc(L, 1e-300)), sc(L, M_LN10)));
        remat_val dF = zf, dTroe = zf, dSri = zf;
        if (g->n_troe) {
            /* log10 F = lfc / (1 + f1^2), f1 = lc / (nn - 0.14 lc), lc = lpr - 0.4 - 0.67 lfc,
             * nn = 0.75 - 1.27 lfc, Fc = (1 - a) e^(-T/T3) + a e^(-T/T1) + e^(-T2/T) */
            remat_val tA = cvec(L, g->troeA, Nf), rt3 = cvec(L, g->rt3, Nf), rt1 = cvec(L, g->rt1, Nf);
            remat_val dFc = remat_sub(
                f,
                remat_mul(f, remat_mul(f, cvec(L, g->w2, Nf), cvec(L, g->t2, Nf)),
                          remat_mul(f, o->e2, remat_mul(f, invT, invT))),
                remat_add(f, remat_mul(f, remat_mul(f, remat_sub(f, sc(L, 1), tA), rt3), o->e3),
                          remat_mul(f, remat_mul(f, tA, rt1), o->e1)));
            remat_val dlfc = remat_div(f, dFc, remat_mul(f, o->Fc, sc(L, M_LN10)));
            remat_val dlc = remat_sub(f, dlpr, remat_mul(f, sc(L, 0.67), dlfc));
            remat_val dnn = remat_mul(f, sc(L, -1.27), dlfc);
            remat_val d1 = remat_sub(f, o->nn, remat_mul(f, sc(L, 0.14), o->lc));
            remat_val df1 = remat_div(f, remat_sub(f, remat_mul(f, dlc, o->nn), remat_mul(f, o->lc, dnn)),
                                      remat_mul(f, d1, d1));
            remat_val q1 = remat_add(f, sc(L, 1), remat_mul(f, o->f1, o->f1));
            remat_val dlog10F =
                remat_sub(f, remat_div(f, dlfc, q1),
                          remat_div(f, remat_mul(f, remat_mul(f, sc(L, 2), o->lfc), remat_mul(f, o->f1, df1)),
                                    remat_mul(f, q1, q1)));
            dTroe = remat_mul(f, o->F, remat_mul(f, sc(L, M_LN10), dlog10F));
        }
        if (g->n_sri) {
            /* log F = xx log w0 + log d + e log T, xx = 1 / (1 + lpr^2), w0 = a e^(-b/T) + e^(-T/c) */
            remat_val dxx =
                remat_mul(f, sc(L, -2), remat_mul(f, remat_mul(f, o->lpr, dlpr), remat_mul(f, o->xx, o->xx)));
            remat_val dw0 = remat_sub(
                f,
                remat_mul(f, remat_mul(f, cvec(L, g->sa, Nf), cvec(L, g->sb, Nf)),
                          remat_mul(f, o->ew, remat_mul(f, invT, invT))),
                remat_mul(f, remat_mul(f, cvec(L, g->scw, Nf), cvec(L, g->scinv, Nf)), o->ec));
            remat_val dlogF = remat_add(f, remat_add(f, remat_mul(f, dxx, remat_log(f, o->w0)),
                                                     remat_div(f, remat_mul(f, o->xx, dw0), o->w0)),
                                        remat_mul(f, cvec(L, g->se, Nf), invT));
            dSri = remat_mul(f, o->F, dlogF);
        }
        if (g->n_sri)
            dF = remat_select(f, cvec(L, g->is_sri, Nf), dSri, zf);
        if (g->n_troe)
            dF = remat_select(f, cvec(L, g->is_troe, Nf), dTroe, dF);
        remat_val inv1 = remat_div(f, sc(L, 1), o->onePr), inv2 = remat_mul(f, inv1, inv1);
        remat_val dca = REMAT_NONE, dfo = REMAT_NONE;
        if (g->n_ca) /* F / (1 + Pr) */
            dca = remat_sub(f, remat_mul(f, dF, inv1), remat_mul(f, o->F, remat_mul(f, dPr, inv2)));
        if (g->n_fo) /* F Pr / (1 + Pr) */
            dfo = remat_add(f, remat_mul(f, o->F, remat_mul(f, dPr, inv2)),
                            remat_mul(f, remat_mul(f, o->Pr, inv1), dF));
        remat_val df = !g->n_ca ? dfo : !g->n_fo ? dca : remat_select(f, cvec(L, g->f_is_fo, Nf), dfo, dca);
        d = mv(L, g->fsct, N, Nf, df);
    }
    return g->n_tb ? remat_select(f, cvec(L, g->is_tb, N), remat_neg(f, remat_mul(f, o->M, invT)), d) : d;
}

/* the Jacobian's T column (S, 1) in closed form: the rates through Arrhenius, the falloff
 * functions, the third bodies and the concentrations (C = P / (R T), so each concentration
 * goes as 1/T and a slot product of n molecules as T^-n), the equilibrium constants through
 * d(g/RT)/dT = -h/(RT) / T, and the energy balance through h and cp (dh/dT = (cp - h) / T in
 * units of R T, cp's own slope from the NASA polynomial). Differentiated by hand from
 * lower_parts, term by term; tests/test_gas.c holds it to forward mode on every rate form. */
static remat_val t_column(lw *L, const gas_plan *g, const parts *o)
{
    remat_fn *f = L->f;
    int64_t K = g->K, N = g->N;
    remat_val invT = o->invT, rev = cvec(L, g->revmask, N);
    remat_val dlk = arrh_dlog(L, &o->amain, invT);
    /* kf = kmain factor */
    remat_val dkf = remat_add(f, remat_mul(f, o->kf, dlk), remat_mul(f, o->kmain, factor_dT(L, g, o, dlk)));
    /* kr = kf E with E = min(exp(dg), 1e300), dg = nueq (h - s) - dneq log(P0 / (R T)):
     * d dg / dT = (dneq - nueq h) / T */
    remat_val ddg = remat_mul(f, remat_sub(f, cvec(L, g->dneq, N), mv(L, g->nueq, N, K, o->h)), invT);
    remat_val zeros = remat_const_fill(f, REMAT_F64, 1, &N, 0.0);
    remat_val dE = remat_select(f, remat_lt(f, o->expdg, sc(L, 1e300)), remat_mul(f, o->Emin, ddg), zeros);
    remat_val dkr = remat_add(f, remat_mul(f, dkf, o->Emin), remat_mul(f, o->kf, dE));
    if (g->n_rev) {
        /* explicit: d log kr / dT = d log k_rev / dT, less 1/T on a three-body one (M = C eff X) */
        remat_val dl = arrh_dlog(L, &o->arev, invT);
        if (g->n_rev_tb)
            dl = remat_sub(f, dl, remat_mul(f, cvec(L, g->rev_tb, N), invT));
        dkr = remat_select(f, cvec(L, g->has_rev, N), remat_mul(f, o->kr, dl), dkr);
    }
    /* q = m (kf rprod - rev kr pprod), d rprod / dT = -nrs rprod / T */
    remat_val tf = remat_mul(f, remat_sub(f, dkf, remat_mul(f, o->kf, remat_mul(f, cvec(L, g->nrs, N), invT))),
                             o->rprod);
    remat_val tr = remat_mul(f, remat_sub(f, dkr, remat_mul(f, o->kr, remat_mul(f, cvec(L, g->nps, N), invT))),
                             o->pprod);
    remat_val dq = remat_mul(f, o->m, remat_sub(f, tf, remat_mul(f, rev, tr)));
    remat_val domega = mv(L, g->nut, K, N, dq);
    remat_val dtotal = sum_last(L, domega);
    /* dX = (omega - X total) / C, dC/dT = -C / T */
    remat_val ddX = remat_add(f, remat_div(f, remat_sub(f, domega, remat_mul(f, o->X, dtotal)), o->C),
                              remat_mul(f, o->dX, invT));
    remat_val ddT = remat_mul(f, o->T, sc(L, 0));
    if (g->adiabatic) {
        /* dT = -T (h . omega) / (C X . cp): d(T h . omega)/dT = cp . omega + T h . domega,
         * d(C X . cp)/dT / (C X . cp) = X . dcp / X . cp - 1 / T */
        remat_val dlo = mv(L, g->dcp[0], K, 7, o->v), dhi = mv(L, g->dcp[1], K, 7, o->v);
        remat_val dcp = remat_select(f, o->hi, dhi, dlo);
        remat_val den = remat_mul(f, o->C, o->cpsum);
        remat_val dnum = remat_add(f, sum_last(L, remat_mul(f, o->cp, o->omega)),
                                   remat_mul(f, o->T, sum_last(L, remat_mul(f, o->h, domega))));
        remat_val dlden = remat_sub(f, remat_div(f, sum_last(L, remat_mul(f, o->X, dcp)), o->cpsum), invT);
        ddT = remat_neg(f, remat_add(f, remat_div(f, dnum, den), remat_mul(f, o->dT, dlden)));
    }
    remat_val dd[2] = {ddX, ddT};
    return reshape2(f, remat_concatenate(f, 2, dd, 0), K + 1, 1);
}

remat_status gas_lower_jac(remat_fn *f, const gas_plan *g, remat_val y, remat_val params, remat_val *J,
                           remat_val *dydt)
{
    lw L = {.f = f, .K = g->K, .N = g->N, .ys = remat_val_shape(f, y)};
    int64_t K = g->K, N = g->N, S = K + 1;
    REMAT_ASSERT(L.ys.rank == 1 && L.ys.dims[0] == S);
    parts o;
    lower_parts(&L, g, y, params, &o);
    /* dq/dconc (N x K): through the third-body concentration M (kf and, from equilibrium, kr = kf E;
     * an explicit reverse on a three-body reaction, kr = k_rev M) and through the reactant and
     * product slots */
    int64_t N1 = N;
    remat_val zeros = remat_const_fill(f, REMAT_F64, 1, &N1, 0.0);
    remat_val Er = remat_select(f, cvec(&L, g->has_rev, N), zeros, o.Emin);
    remat_val rev = cvec(&L, g->revmask, N);
    remat_val a_eff = remat_mul(f, remat_mul(f, o.m, remat_mul(f, o.kmain, factor_dM(&L, g, &o))),
                                remat_sub(f, o.rprod, remat_mul(f, rev, remat_mul(f, Er, o.pprod))));
    /* an explicit reverse on a three-body reaction, k_rev M: d kr / dM = k_rev */
    if (g->n_rev_tb)
        a_eff = remat_sub(f, a_eff,
                          remat_mul(f, o.m, remat_mul(f, remat_mul(f, rev, remat_select(f, cvec(&L, g->rev_tb, N),
                                                                                          o.krev, zeros)),
                                                       o.pprod)));
    remat_val wcols[1 + 2 * GAS_SLOTS];
    wcols[0] = reshape2(f, a_eff, N, 1);
    slot_weights(&L, g->R, o.rslot, remat_mul(f, o.m, o.kf), 1, wcols + 1);
    slot_weights(&L, g->Pn, o.pslot, remat_mul(f, o.m, remat_mul(f, rev, o.kr)), -1, wcols + 1 + g->R);
    remat_val Dq = slot_matrix(&L, g, 1 + g->R + g->Pn, wcols);
    if (Dq == REMAT_NONE && remat_fn_status(f) == REMAT_OK)
        return rmi_error(REMAT_ERR_NOMEM, "kinetics: out of memory lowering the gas Jacobian");
    /* d omega / dX = C nut Dq = C G; dX = (omega - X total) / C */
    remat_val G = remat_matmul(f, cmat(&L, g->nut, K, N), Dq);
    /* the efficiencies' default part, a_eff effd 1^T in Dq (every species alike), is
     * nut (a_eff effd) 1^T in G: one more product of a vector, not K dense columns of Dq */
    if (g->n_tb + g->nf > 0)
        G = remat_add(f, G, reshape2(f, mv(&L, g->nut, K, N, remat_mul(f, a_eff, cvec(&L, g->effd, N))), K, 1));
    remat_val colsum = reshape2(f, remat_sum(f, G, 1, ((int[]){0})), 1, K);
    double *id = rmi_calloc((size_t)(K * K), sizeof *id);
    if (!id)
        return rmi_error(REMAT_ERR_NOMEM, "kinetics: out of memory lowering the gas Jacobian");
    for (int64_t i = 0; i < K; i++)
        id[i * K + i] = 1.0;
    remat_val eye = cmat(&L, id, K, K);
    rmi_free(id);
    remat_val tc = reshape2(f, remat_div(f, o.total, o.C), 1, 1);
    remat_val JXX = remat_sub(f, remat_sub(f, G, remat_mul(f, eye, tc)),
                              remat_mul(f, reshape2(f, o.X, K, 1), colsum));
    /* dT = -T (h . omega) / (C X . cp): d/dX_j = -(T (h^T G)_j + dT cp_j) / (X . cp) */
    remat_val rowT;
    if (g->adiabatic) {
        remat_val cps = reshape2(f, remat_sum(f, remat_mul(f, o.X, o.cp), 1, ((int[]){0})), 1, 1);
        remat_val hG = remat_matmul(f, reshape2(f, o.h, 1, K), G);
        rowT = remat_neg(f, remat_div(f, remat_add(f, remat_mul(f, reshape2(f, o.T, 1, 1), hG),
                                                    remat_mul(f, reshape2(f, o.dT, 1, 1), reshape2(f, o.cp, 1, K))),
                                      cps));
    } else {
        rowT = remat_const_fill(f, REMAT_F64, 2, ((int64_t[]){1, K}), 0.0);
    }
    remat_val rows[2] = {JXX, rowT};
    remat_val left = remat_concatenate(f, 2, rows, 0);
    remat_val cols[2] = {left, t_column(&L, g, &o)};
    remat_val Jv = remat_concatenate(f, 2, cols, 1);
    if (remat_fn_status(f) != REMAT_OK)
        return rmi_error(remat_fn_status(f), "kinetics: lowering the gas Jacobian: %s", remat_fn_error(f));
    *J = Jv;
    *dydt = o.dydt;
    return REMAT_OK;
}

/*
 * gas_build.c — a gas description (gas_impl.h) to a remat_mechanism: the
 * constant-pressure ideal-gas reactor of remat/gas.h as lets and ODE
 * right-hand sides over the state (X_1 .. X_K, T) and the params P, m<i>,
 * A<i>, b<i>, Ea<i>.
 *
 * Everything is an expression of the mechanism language, so the double
 * evaluator, the graph lowering and every transform see an ordinary
 * mechanism. Shared quantities are lets (log T, C, each species' h/RT, s/R,
 * c_p/R and concentration, each reaction's rate of progress q_i, each
 * species' production rate), so each is computed once per evaluation.
 *
 * The NASA polynomials' two ranges are chosen with a step H(T - T_mid) made
 * of max and min: H(x) = min(max(x * 1e200 - 0.5, 0), 1) is 0 for x <= 0 and
 * exactly 1 for every x > 0 a double near T_mid can take (x >= 1e-13), with
 * derivative 0 on both sides; value = lo + H (hi - lo).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "models/kinetics/gas_impl.h"

typedef struct {
    remat_mechanism *m;
    const gas_desc *d;
    int K, N;
    int oom;
    int nlets, caplets;
    const remat_expr *T, *logT, *invT, *C, *logC0, *P, *logP;
    const remat_expr **h, **s, **g, **cp, **conc; /* [K] lets */
    const remat_expr **q;                         /* [N] lets */
    int *par_A;                                   /* [N] index of A<i>, -1: none */
} gas_b;

/* ---- nodes ---- */

static remat_expr *node(gas_b *b, remat_expr_kind kind, int line)
{
    remat_expr *e = mech_node(&b->m->arena, kind, line, 0);
    if (!e)
        b->oom = 1;
    return e;
}

static const remat_expr *num(gas_b *b, double v)
{
    remat_expr *e = node(b, REMAT_EXPR_NUM, 0);
    if (e)
        e->value = v;
    return e;
}

static const remat_expr *bin(gas_b *b, remat_expr_kind k, const remat_expr *x, const remat_expr *y)
{
    if (!x || !y)
        return NULL;
    remat_expr *e = node(b, k, 0);
    if (e) {
        e->nargs = 2;
        e->args[0] = x;
        e->args[1] = y;
    }
    return e;
}

static const remat_expr *add(gas_b *b, const remat_expr *x, const remat_expr *y) { return bin(b, REMAT_EXPR_ADD, x, y); }
static const remat_expr *sub(gas_b *b, const remat_expr *x, const remat_expr *y) { return bin(b, REMAT_EXPR_SUB, x, y); }
static const remat_expr *mul(gas_b *b, const remat_expr *x, const remat_expr *y) { return bin(b, REMAT_EXPR_MUL, x, y); }
static const remat_expr *dvd(gas_b *b, const remat_expr *x, const remat_expr *y) { return bin(b, REMAT_EXPR_DIV, x, y); }

static const remat_expr *neg(gas_b *b, const remat_expr *x)
{
    if (!x)
        return NULL;
    remat_expr *e = node(b, REMAT_EXPR_NEG, 0);
    if (e) {
        e->nargs = 1;
        e->args[0] = x;
    }
    return e;
}

static const remat_expr *call(gas_b *b, remat_expr_fn fn, const remat_expr *x, const remat_expr *y)
{
    int two = mech_fn_arity(fn) == 2;
    if (!x || (two && !y))
        return NULL;
    remat_expr *e = node(b, REMAT_EXPR_CALL, 0);
    if (e) {
        e->fn = fn;
        e->nargs = two ? 2 : 1;
        e->args[0] = x;
        e->args[1] = two ? y : NULL;
        e->name = remat_expr_fn_name(fn);
    }
    return e;
}

static const remat_expr *ex(gas_b *b, const remat_expr *x) { return call(b, REMAT_FN_EXP, x, NULL); }
static const remat_expr *lg(gas_b *b, const remat_expr *x) { return call(b, REMAT_FN_LOG, x, NULL); }
static const remat_expr *mx(gas_b *b, const remat_expr *x, const remat_expr *y) { return call(b, REMAT_FN_MAX, x, y); }
static const remat_expr *mn(gas_b *b, const remat_expr *x, const remat_expr *y) { return call(b, REMAT_FN_MIN, x, y); }

static const remat_expr *pw(gas_b *b, const remat_expr *x, double p)
{
    return p == 1 ? x : bin(b, REMAT_EXPR_POW, x, num(b, p));
}

/* c * x, dropping c = 1 and c = 0 (then NULL means "no term": callers use addt) */
static const remat_expr *scale(gas_b *b, double c, const remat_expr *x) { return c == 1 ? x : mul(b, num(b, c), x); }

/* sum + c x with sum possibly empty (*have = 0) */
static const remat_expr *addt(gas_b *b, const remat_expr *sum, int *have, double c, const remat_expr *x)
{
    if (!*have) {
        *have = 1;
        return c < 0 ? neg(b, scale(b, -c, x)) : scale(b, c, x);
    }
    return c < 0 ? sub(b, sum, scale(b, -c, x)) : add(b, sum, scale(b, c, x));
}

static const remat_expr *param(gas_b *b, int i)
{
    remat_expr *e = node(b, REMAT_EXPR_PARAM, b->m->params[i].line);
    if (e) {
        e->index = i;
        e->name = b->m->params[i].name;
    }
    return e;
}

static const remat_expr *species(gas_b *b, int i)
{
    remat_expr *e = node(b, REMAT_EXPR_SPECIES, 0);
    if (e) {
        e->index = i;
        e->name = b->m->species[i];
    }
    return e;
}

static char *fmt(gas_b *b, const char *f, const char *s, int i)
{
    char buf[160];
    snprintf(buf, sizeof buf, f, s ? s : "", i);
    char *r = rmi_arena_strndup(&b->m->arena, buf, strlen(buf));
    if (!r)
        b->oom = 1;
    return r;
}

/* A let named by f (with s or i), holding x; returns the LET reference. */
static const remat_expr *let(gas_b *b, const remat_expr *x, const char *f, const char *s, int i)
{
    if (!x)
        return NULL;
    remat_mechanism *m = b->m;
    if (m->nlets == b->caplets) {
        int cap = b->caplets ? 2 * b->caplets : 256;
        const char **names = rmi_arena_alloc(&m->arena, (size_t)cap * sizeof *names);
        const remat_expr **v = rmi_arena_alloc(&m->arena, (size_t)cap * sizeof *v);
        if (!names || !v) {
            b->oom = 1;
            return NULL;
        }
        if (m->nlets) {
            memcpy(names, m->let_names, (size_t)m->nlets * sizeof *names);
            memcpy(v, m->lets, (size_t)m->nlets * sizeof *v);
        }
        m->let_names = names;
        m->lets = v;
        b->caplets = cap;
    }
    const char *name = fmt(b, f, s, i);
    remat_expr *e = node(b, REMAT_EXPR_LET, 0);
    if (!name || !e)
        return NULL;
    e->index = m->nlets;
    e->name = name;
    m->let_names[m->nlets] = name;
    m->lets[m->nlets++] = x;
    return e;
}

/* ---- thermo ---- */

/* a polynomial sum_j c[j] * pows[j] (pows NULL: constant 1) */
static const remat_expr *poly(gas_b *b, const double *c, const remat_expr *const *pows, int n)
{
    const remat_expr *sum = NULL;
    int have = 0;
    for (int j = 0; j < n; j++) {
        if (c[j] == 0)
            continue;
        sum = pows[j] ? addt(b, sum, &have, c[j], pows[j]) : (have ? add(b, sum, num(b, c[j])) : (have = 1, num(b, c[j])));
    }
    return have ? sum : num(b, 0);
}

typedef enum { TH_H, TH_S, TH_CP } thermo_fn;

static const remat_expr *thermo_range(gas_b *b, const double *a, thermo_fn f, const remat_expr *const *T)
{
    /* T[0..5] = 1 (NULL), T, T^2, T^3, T^4, 1/T; T[6] = log T */
    double c[7];
    switch (f) {
    case TH_H: { /* h/RT = a1 + a2 T/2 + a3 T^2/3 + a4 T^3/4 + a5 T^4/5 + a6/T */
        double cc[6] = {a[0], a[1] / 2, a[2] / 3, a[3] / 4, a[4] / 5, a[5]};
        return poly(b, cc, T, 6);
    }
    case TH_S: { /* s/R = a1 log T + a2 T + a3 T^2/2 + a4 T^3/3 + a5 T^4/4 + a7 */
        const remat_expr *pows[6] = {T[6], T[1], T[2], T[3], T[4], NULL};
        double cc[6] = {a[0], a[1], a[2] / 2, a[3] / 3, a[4] / 4, a[6]};
        return poly(b, cc, pows, 6);
    }
    case TH_CP: /* cp/R = a1 + a2 T + a3 T^2 + a4 T^3 + a5 T^4 */
        memcpy(c, a, 5 * sizeof *c);
        return poly(b, c, T, 5);
    }
    return NULL;
}

static const remat_expr *thermo(gas_b *b, const gas_species *sp, thermo_fn f, const remat_expr *const *T,
                                const remat_expr *H)
{
    const remat_expr *lo = thermo_range(b, sp->lo, f, T);
    if (sp->nranges == 1)
        return lo;
    const remat_expr *hi = thermo_range(b, sp->hi, f, T);
    return add(b, lo, mul(b, H, sub(b, hi, lo)));
}

/* ---- rates ---- */

/* A T^b exp(-Ea/(R T)) from numbers */
static const remat_expr *arrhenius_num(gas_b *b, const gas_arrhenius *k)
{
    const remat_expr *arg = NULL;
    int have = 0;
    if (k->b != 0)
        arg = addt(b, arg, &have, k->b, b->logT);
    if (k->Ea != 0)
        arg = addt(b, arg, &have, -k->Ea / GAS_R, b->invT);
    return have ? mul(b, num(b, k->A), ex(b, arg)) : num(b, k->A);
}

/* log of the same, for PLOG (A > 0) */
static const remat_expr *log_arrhenius_num(gas_b *b, const gas_arrhenius *k, int n)
{
    if (n == 1) {
        const remat_expr *sum = num(b, log(k->A));
        if (k->b != 0)
            sum = add(b, sum, scale(b, k->b, b->logT));
        if (k->Ea != 0)
            sum = sub(b, sum, scale(b, k->Ea / GAS_R, b->invT));
        return sum;
    }
    const remat_expr *sum = NULL;
    for (int j = 0; j < n; j++)
        sum = j ? add(b, sum, arrhenius_num(b, &k[j])) : arrhenius_num(b, &k[j]);
    return lg(b, sum);
}

/* A<i> exp(b<i> log T - Ea<i> / (R T)) from the params */
static const remat_expr *arrhenius_par(gas_b *b, int ia)
{
    const remat_expr *A = param(b, ia), *bb = param(b, ia + 1), *Ea = param(b, ia + 2);
    return mul(b, A, ex(b, sub(b, mul(b, bb, b->logT), mul(b, dvd(b, Ea, num(b, GAS_R)), b->invT))));
}

static const remat_expr *log10x(gas_b *b, const remat_expr *x) { return dvd(b, lg(b, x), num(b, M_LN10)); }

static const remat_expr *third_body(gas_b *b, const gas_reaction *r)
{
    if (r->collider >= 0)
        return b->conc[r->collider];
    const remat_expr *M = scale(b, r->default_eff, b->C);
    for (int k = 0; r->eff && k < b->K; k++) {
        double e = r->eff[k] - r->default_eff;
        if (e != 0)
            M = e < 0 ? sub(b, M, scale(b, -e, b->conc[k])) : add(b, M, scale(b, e, b->conc[k]));
    }
    return M;
}

static const remat_expr *falloff_F(gas_b *b, const gas_reaction *r, const remat_expr *pr)
{
    if (r->ff == GAS_F_LINDEMANN)
        return NULL;
    const remat_expr *T = b->T, *lpr = log10x(b, mx(b, pr, num(b, 1e-300)));
    if (r->ff == GAS_F_TROE) {
        const double A = r->troe[0], T3 = r->troe[1], T1 = r->troe[2], T2 = r->troe[3];
        const remat_expr *Fc = NULL;
        int have = 0;
        if (fabs(T3) >= 1e-300 && A != 1)
            Fc = addt(b, Fc, &have, 1 - A, ex(b, scale(b, -1 / T3, T)));
        if (fabs(T1) >= 1e-300 && A != 0)
            Fc = addt(b, Fc, &have, A, ex(b, scale(b, -1 / T1, T)));
        if (r->troe_t2)
            Fc = addt(b, Fc, &have, 1, ex(b, scale(b, -T2, b->invT)));
        const remat_expr *lfc = have ? log10x(b, mx(b, Fc, num(b, 1e-300))) : num(b, log10(1e-300));
        const remat_expr *cc = sub(b, num(b, -0.4), scale(b, 0.67, lfc));
        const remat_expr *nn = sub(b, num(b, 0.75), scale(b, 1.27, lfc));
        const remat_expr *lc = add(b, lpr, cc);
        const remat_expr *f1 = dvd(b, lc, sub(b, nn, scale(b, 0.14, lc)));
        const remat_expr *lgf = dvd(b, lfc, add(b, num(b, 1), mul(b, f1, f1)));
        return ex(b, scale(b, M_LN10, lgf));
    }
    /* SRI */
    const double a = r->sri[0], bb = r->sri[1], c = r->sri[2], d = r->sri[3], e = r->sri[4];
    const remat_expr *w0 = scale(b, a, ex(b, scale(b, -bb, b->invT)));
    if (c != 0)
        w0 = add(b, w0, ex(b, scale(b, -1 / c, T)));
    const remat_expr *w1 = e != 0 ? scale(b, d, ex(b, scale(b, e, b->logT))) : num(b, d);
    const remat_expr *xx = dvd(b, num(b, 1), add(b, num(b, 1), mul(b, lpr, lpr)));
    return mul(b, ex(b, mul(b, xx, lg(b, w0))), w1);
}

static const remat_expr *plog(gas_b *b, const gas_reaction *r, int i)
{
    /* distinct pressures, rates at one pressure summed */
    int n = 0;
    double lp[64];
    const remat_expr *lk[64];
    for (int j = 0; j < r->nplog;) {
        int e = j;
        while (e < r->nplog && r->plog_p[e] == r->plog_p[j])
            e++;
        if (n == 64)
            return NULL; /* checked by the readers */
        lp[n] = log(r->plog_p[j]);
        lk[n] = let(b, log_arrhenius_num(b, &r->plog_k[j], e - j), "logk%s%d", "", i + 1);
        n++;
        j = e;
    }
    if (n == 1)
        return ex(b, lk[0]);
    const remat_expr *x = mn(b, mx(b, b->logP, num(b, lp[0])), num(b, lp[n - 1]));
    const remat_expr *sum = lk[0];
    for (int j = 0; j + 1 < n; j++) {
        const remat_expr *seg = sub(b, mn(b, mx(b, x, num(b, lp[j])), num(b, lp[j + 1])), num(b, lp[j]));
        const remat_expr *slope = dvd(b, sub(b, lk[j + 1], lk[j]), num(b, lp[j + 1] - lp[j]));
        sum = add(b, sum, mul(b, slope, seg));
    }
    return ex(b, sum);
}

/* the forward rate constant of reaction i, third body included */
static const remat_expr *forward_k(gas_b *b, int i)
{
    const gas_reaction *r = &b->d->rx[i];
    switch (r->kind) {
    case GAS_ELEMENTARY: return arrhenius_par(b, b->par_A[i]);
    case GAS_THREE_BODY: return mul(b, arrhenius_par(b, b->par_A[i]), third_body(b, r));
    case GAS_FALLOFF:
    case GAS_CHEM_ACT: {
        const remat_expr *kmain = let(b, arrhenius_par(b, b->par_A[i]), "k%s%d", "", i + 1);
        const remat_expr *kother = arrhenius_num(b, &r->k2);
        const remat_expr *k0 = r->kind == GAS_FALLOFF ? kother : kmain;
        const remat_expr *kinf = r->kind == GAS_FALLOFF ? kmain : kother;
        const remat_expr *pr = let(b, dvd(b, mul(b, k0, third_body(b, r)), kinf), "Pr%s%d", "", i + 1);
        const remat_expr *F = falloff_F(b, r, pr);
        const remat_expr *k = r->kind == GAS_FALLOFF ? dvd(b, mul(b, pr, kinf), add(b, num(b, 1), pr))
                                                     : dvd(b, k0, add(b, num(b, 1), pr));
        return F ? mul(b, k, F) : k;
    }
    case GAS_PLOG: return plog(b, r, i);
    case GAS_KIND_COUNT: break;
    }
    return NULL;
}

static const remat_expr *conc_product(gas_b *b, const remat_expr *k, const gas_term *t, int n)
{
    for (int j = 0; j < n; j++)
        k = mul(b, k, pw(b, b->conc[t[j].species], t[j].nu));
    return k;
}

static const remat_expr *rate_of_progress(gas_b *b, int i)
{
    const gas_reaction *r = &b->d->rx[i];
    const remat_expr *kf = let(b, forward_k(b, i), "kf%s%d", "", i + 1);
    const gas_term *ord = r->norders ? r->orders : r->side[0];
    int nord = r->norders ? r->norders : r->nside[0];
    const remat_expr *q = conc_product(b, kf, ord, nord);
    if (r->reversible) {
        const remat_expr *kr;
        if (r->has_rev) {
            /* CHEMKIN REV: Arrhenius; a three-body reaction's reverse is a three-body reaction,
             * the same M (Cantera's ck2yaml); a falloff reaction's is bare Arrhenius there too */
            kr = arrhenius_num(b, &r->rev);
            if (r->kind == GAS_THREE_BODY)
                kr = mul(b, kr, third_body(b, r));
        } else {
            /* kr = kf / Kc = kf exp(sum nu g/RT) (P_ref/(R T))^(-sum nu) */
            const remat_expr *dg = NULL;
            int have = 0;
            double dn = 0;
            for (int side = 0; side < 2; side++)
                for (int j = 0; j < r->nside[side]; j++) {
                    double nu = side ? r->side[side][j].nu : -r->side[side][j].nu;
                    dg = addt(b, dg, &have, nu, b->g[r->side[side][j].species]);
                    dn += nu;
                }
            if (dn != 0)
                dg = addt(b, dg, &have, -dn, b->logC0);
            kr = mul(b, kf, mn(b, ex(b, dg), num(b, 1e300)));
        }
        q = sub(b, q, conc_product(b, kr, r->side[1], r->nside[1]));
    }
    return let(b, mul(b, param(b, 1 + i), q), "q%s%d", "", i + 1);
}

/* ---- the mechanism ---- */

static int add_param(gas_b *b, const char *name, double v, double lo, double hi, int line)
{
    mech_param *p = &b->m->params[b->m->nparams];
    p->name = name;
    p->value = v;
    p->lo = lo;
    p->hi = hi;
    p->line = line;
    return b->m->nparams++;
}

static remat_status fill(gas_b *b, const remat_gas_options *opt)
{
    remat_mechanism *m = b->m;
    const gas_desc *d = b->d;
    int K = b->K, N = b->N;
    m->nspecies = K + 1;
    m->species = rmi_arena_alloc(&m->arena, (size_t)(K + 1) * sizeof *m->species);
    m->rhs = rmi_arena_alloc(&m->arena, (size_t)(K + 1) * sizeof *m->rhs);
    m->params = rmi_arena_alloc(&m->arena, (size_t)(1 + 4 * N) * sizeof *m->params);
    m->reactions = rmi_arena_alloc(&m->arena, (size_t)(N ? N : 1) * sizeof *m->reactions);
    size_t nk = (size_t)K + 1;
    const remat_expr **arr = rmi_arena_alloc(&m->arena, 5 * nk * sizeof *arr);
    b->q = rmi_arena_alloc(&m->arena, (size_t)(N + 1) * sizeof *b->q);
    b->par_A = rmi_arena_alloc(&m->arena, (size_t)(N + 1) * sizeof *b->par_A);
    if (!m->species || !m->rhs || !m->params || !m->reactions || !arr || !b->q || !b->par_A)
        return gas_nomem(d->file);
    b->h = arr, b->s = arr + nk, b->g = arr + 2 * nk, b->cp = arr + 3 * nk, b->conc = arr + 4 * nk;
    for (int k = 0; k < K; k++)
        if (!(m->species[k] = rmi_arena_strndup(&m->arena, d->sp[k].name, strlen(d->sp[k].name))))
            return gas_nomem(d->file);
    m->species[K] = "T";
    m->indep = "t";

    /* params: P, m<i>, then A, b, Ea per reaction with a main Arrhenius */
    add_param(b, "P", GAS_ONE_ATM, 0, INFINITY, 0);
    for (int i = 0; i < N; i++)
        add_param(b, fmt(b, "m%s%d", "", i + 1), 1.0, 0, INFINITY, d->rx[i].line);
    for (int i = 0; i < N; i++) {
        const gas_reaction *r = &d->rx[i];
        b->par_A[i] = -1;
        if (r->kind == GAS_PLOG)
            continue;
        b->par_A[i] = add_param(b, fmt(b, "A%s%d", "", i + 1), r->k.A, -INFINITY, INFINITY, r->line);
        add_param(b, fmt(b, "b%s%d", "", i + 1), r->k.b, -INFINITY, INFINITY, r->line);
        add_param(b, fmt(b, "Ea%s%d", "", i + 1), r->k.Ea, -INFINITY, INFINITY, r->line);
    }
    if (b->oom)
        return gas_nomem(d->file);

    /* temperature functions */
    b->T = species(b, K);
    b->P = param(b, 0);
    b->logT = let(b, lg(b, b->T), "logT", NULL, 0);
    b->invT = let(b, dvd(b, num(b, 1), b->T), "invT", NULL, 0);
    b->logP = let(b, lg(b, b->P), "logP", NULL, 0);
    b->C = let(b, dvd(b, b->P, mul(b, num(b, GAS_R), b->T)), "C", NULL, 0);
    b->logC0 = let(b, sub(b, num(b, log(GAS_ONE_ATM / GAS_R)), b->logT), "logC0", NULL, 0);
    const remat_expr *T2 = let(b, mul(b, b->T, b->T), "T2", NULL, 0);
    const remat_expr *T3 = let(b, mul(b, T2, b->T), "T3", NULL, 0);
    const remat_expr *T4 = let(b, mul(b, T3, b->T), "T4", NULL, 0);
    const remat_expr *pows[7] = {NULL, b->T, T2, T3, T4, b->invT, b->logT};
    double tmids[64];
    const remat_expr *steps[64];
    int ntm = 0;
    for (int k = 0; k < K; k++) {
        const gas_species *sp = &d->sp[k];
        const remat_expr *H = NULL;
        if (sp->nranges == 2) {
            int j = 0;
            while (j < ntm && tmids[j] != sp->tmid)
                j++;
            if (j == ntm) {
                if (ntm == 64)
                    return gas_error(d->file, sp->line, "species '%s': more than 64 distinct mid temperatures",
                                     sp->name);
                tmids[ntm] = sp->tmid;
                const remat_expr *x = sub(b, scale(b, 1e200, sub(b, b->T, num(b, sp->tmid))), num(b, 0.5));
                steps[ntm++] = let(b, mn(b, mx(b, x, num(b, 0)), num(b, 1)), "high_range_%s%d", "", j);
            }
            H = steps[j];
        }
        b->h[k] = let(b, thermo(b, sp, TH_H, pows, H), "h_%s%.0d", sp->name, 0);
        b->s[k] = let(b, thermo(b, sp, TH_S, pows, H), "s_%s%.0d", sp->name, 0);
        b->g[k] = let(b, sub(b, b->h[k], b->s[k]), "g_%s%.0d", sp->name, 0);
        if (opt->energy == REMAT_GAS_ADIABATIC)
            b->cp[k] = let(b, thermo(b, sp, TH_CP, pows, H), "cp_%s%.0d", sp->name, 0);
        b->conc[k] = let(b, mul(b, b->C, species(b, k)), "C_%s%.0d", sp->name, 0);
    }
    if (b->oom)
        return gas_nomem(d->file);

    /* reactions */
    for (int i = 0; i < N; i++) {
        const gas_reaction *r = &d->rx[i];
        b->q[i] = rate_of_progress(b, i);
        mech_reaction *mr = &m->reactions[i];
        mr->rate = b->q[i];
        mr->line = r->line;
        mr->stoich = rmi_arena_alloc(&m->arena, (size_t)(r->nside[0] + r->nside[1] + 1) * sizeof *mr->stoich);
        if (!mr->stoich)
            return gas_nomem(d->file);
        for (int side = 0; side < 2; side++)
            for (int j = 0; j < r->nside[side]; j++) {
                int sp = r->side[side][j].species, at = 0;
                double nu = side ? r->side[side][j].nu : -r->side[side][j].nu;
                while (at < mr->nstoich && mr->stoich[at].species != sp)
                    at++;
                if (at == mr->nstoich)
                    mr->stoich[mr->nstoich++] = (mech_stoich){sp, 0};
                mr->stoich[at].nu += nu;
            }
        int w = 0;
        for (int j = 0; j < mr->nstoich; j++)
            if (mr->stoich[j].nu != 0)
                mr->stoich[w++] = mr->stoich[j];
        mr->nstoich = w;
        if (b->oom)
            return gas_nomem(d->file);
    }
    m->nreactions = N;

    /* production rates: omega_k = sum_i nu_ki q_i, in reaction order */
    const remat_expr **omega = b->s; /* s is no longer needed as a table */
    int *have = rmi_calloc(nk, sizeof *have);
    if (!have)
        return gas_nomem(d->file);
    const remat_expr **acc = rmi_calloc(nk, sizeof *acc);
    if (!acc) {
        rmi_free(have);
        return gas_nomem(d->file);
    }
    for (int i = 0; i < N; i++)
        for (int j = 0; j < m->reactions[i].nstoich; j++) {
            const mech_stoich *st = &m->reactions[i].stoich[j];
            acc[st->species] = addt(b, acc[st->species], &have[st->species], st->nu, b->q[i]);
        }
    const remat_expr *total = NULL, *hsum = NULL, *cpsum = NULL;
    int ht = 0, hh = 0, hc = 0;
    for (int k = 0; k < K; k++) {
        omega[k] = have[k] ? let(b, acc[k], "omega_%s%.0d", d->sp[k].name, 0) : NULL;
        if (omega[k]) {
            total = addt(b, total, &ht, 1, omega[k]);
            hsum = addt(b, hsum, &hh, 1, mul(b, b->h[k], omega[k]));
        }
        if (opt->energy == REMAT_GAS_ADIABATIC)
            cpsum = addt(b, cpsum, &hc, 1, mul(b, species(b, k), b->cp[k]));
    }
    rmi_free(have);
    rmi_free(acc);
    if (ht)
        total = let(b, total, "omega_total", NULL, 0);
    for (int k = 0; k < K; k++) {
        const remat_expr *x = species(b, k);
        const remat_expr *dx = omega[k] ? omega[k] : num(b, 0);
        if (ht)
            dx = sub(b, dx, mul(b, x, total));
        m->rhs[k] = dvd(b, dx, b->C);
    }
    if (opt->energy == REMAT_GAS_ADIABATIC && hh)
        m->rhs[K] = neg(b, dvd(b, mul(b, b->T, hsum), mul(b, b->C, cpsum)));
    else
        m->rhs[K] = num(b, 0);
    return b->oom ? gas_nomem(d->file) : REMAT_OK;
}

remat_status gas_build(const gas_desc *d, const remat_gas_options *opt, remat_mechanism **out)
{
    for (int k = 0; k < d->nsp; k++) {
        if (!d->sp[k].has_thermo)
            return gas_error(d->file, d->sp[k].line, "species '%s' has no thermo data", d->sp[k].name);
        if (strcmp(d->sp[k].name, "T") == 0)
            return gas_error(d->file, d->sp[k].line,
                             "a species named 'T' is not supported (the state's temperature has that name)");
    }
    if (d->nsp == 0)
        return gas_error(d->file, 1, "no species");
    remat_mechanism *m = rmi_calloc(1, sizeof *m);
    if (!m)
        return gas_nomem(d->file);
    gas_b b = {.m = m, .d = d, .K = d->nsp, .N = d->nrx};
    remat_status st = REMAT_OK;
    if (!(m->source = rmi_arena_strndup(&m->arena, d->file, strlen(d->file))))
        st = gas_nomem(d->file);
    if (st == REMAT_OK)
        st = fill(&b, opt);
    gas_plan *plan = NULL;
    if (st == REMAT_OK && (st = gas_plan_build(d, opt->energy == REMAT_GAS_ADIABATIC, &m->arena, &plan)) == REMAT_OK)
        m->gas_plan = plan;
    if (st != REMAT_OK) {
        remat_mechanism_free(m);
        return st;
    }
    m->ngas = d->nsp;
    *out = m;
    return REMAT_OK;
}

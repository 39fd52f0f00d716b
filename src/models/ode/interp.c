/*
 * interp.c — the interpolating (checkpointed) continuous adjoint
 * (remat/ode.h, REMAT_ODE_ADJOINT_INTERPOLATING), as CVODES's CVodeB and
 * SciML's InterpolatingAdjoint: y is never integrated backwards.
 *
 * As for backsolve (backsolve.c), the forward integration is built from
 * stop_gradient'ed y0 and params and its output states ys (K, S) pass
 * through one custom op, identity on values, whose VJP runs the backward
 * solve. Here that solve is driven from C with small compiled programs
 * (CPU), all built when the integration is:
 *   - the forward step: remat_ode_step_body (fixed steps), or the adaptive
 *     attempt of adaptive_step.c with the integration's controller, so a
 *     recomputation takes the same steps as the first sweep;
 *   - the right-hand side f(t, y, p), for the Hermite data at step ends;
 *   - the adjoint step (fixed) or attempt (adaptive, its own PID control on
 *     z = [lambda, mu], S + P numbers) of the system, in negated time s = -t,
 *       dlambda/ds = lambda^T df/dy (y(t)),  dmu/ds = lambda^T df/dp,
 *     with the forward's method (Rodas5's Jacobian of it by forward mode
 *     through the VJP), y(t) the cubic Hermite interpolant of (y, f) at the
 *     ends of the forward step that contains t; the step's data ride in the
 *     attempt's params, q = [p, t_a, t_b, y_a, y_b, f_a, f_b].
 * The VJP: (1) a forward sweep from y0 keeps checkpoints (the step's carries)
 * every `every` accepted steps, at most INTERP_CHECKPOINTS of them: when
 * full, every other one is dropped and `every` doubles; (2) for each segment
 * between checkpoints, last first, the forward steps are recomputed from
 * its checkpoint and their ends (t, y, f) kept, and the adjoint is stepped
 * backwards over each forward step in turn (an adaptive backward step never
 * crosses a forward step's end: the interpolant is one cubic on it); lambda
 * gains the cotangent of output k when the backward solve reaches t_k.
 * Memory: INTERP_CHECKPOINTS carries and one segment's step ends, at most
 * 2n / INTERP_CHECKPOINTS + 1 of them for n forward steps.
 *
 * The op struct and its programs are kept in a registry freed at exit, as
 * backsolve's are.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "models/ode/ode_impl.h"
#include "models/ode/ode_registry.h"

#define INTERP_CHECKPOINTS 64

/* ---- the backward right-hand side ---- */

typedef struct {
    ode_aug_rhs ar;
    int64_t S, P;
} interp_aux;

/* dz/ds at s for z = [lambda, mu] and q = [p, t_a, t_b, y_a, y_b, f_a, f_b] */
static remat_status interp_eval(remat_fn *g, const ode_rhs *r, remat_val s, remat_val z, remat_val q,
                                remat_val *dzds)
{
    const interp_aux *x = r->ctx;
    int64_t S = x->S, P = x->P, o = P;
#define SL(lo, hi) remat_slice(g, q, (int64_t[]){(lo)}, (int64_t[]){(hi)}, NULL)
    remat_val p = P ? SL(0, P) : REMAT_NONE;
    remat_val ta = remat_index(g, q, o), tb = remat_index(g, q, o + 1);
    o += 2;
    remat_val ya = SL(o, o + S), yb = SL(o + S, o + 2 * S), fa = SL(o + 2 * S, o + 3 * S), fb = SL(o + 3 * S, o + 4 * S);
#undef SL
    remat_val t = remat_neg(g, s), hs = remat_sub(g, tb, ta);
    remat_val th = remat_div(g, remat_sub(g, t, ta), hs);
    remat_val th2 = remat_mul(g, th, th), th3 = remat_mul(g, th2, th);
    /* h00 = 2θ³ - 3θ² + 1, h10 = θ³ - 2θ² + θ, h01 = 3θ² - 2θ³, h11 = θ³ - θ² */
    remat_val h01 = remat_sub(g, remat_mul_scalar(g, th2, 3.0), remat_mul_scalar(g, th3, 2.0));
    remat_val h00 = remat_sub(g, remat_scalar(g, remat_val_dtype(g, s), 1.0), h01);
    remat_val h10 = remat_add(g, remat_sub(g, th3, remat_mul_scalar(g, th2, 2.0)), th);
    remat_val h11 = remat_sub(g, th3, th2);
    remat_val y = remat_add(g, remat_add(g, remat_mul(g, h00, ya), remat_mul(g, remat_mul(g, h10, hs), fa)),
                            remat_add(g, remat_mul(g, h01, yb), remat_mul(g, remat_mul(g, h11, hs), fb)));
    remat_val lam = P ? remat_slice(g, z, (int64_t[]){0}, (int64_t[]){S}, NULL) : z, fz[3];
    ode_aug_eval(g, &x->ar, x->ar.timed ? t : REMAT_NONE, y, lam, p, fz);
    /* fz = (f, -lambda^T J, -lambda^T f_p) is d/dt; d/ds is its negation */
    remat_val parts[2] = {remat_neg(g, fz[1]), P ? remat_neg(g, fz[2]) : REMAT_NONE};
    *dzds = P ? remat_concatenate(g, 2, parts, 0) : parts[0];
    if (remat_fn_status(g) != REMAT_OK)
        return rmi_error(remat_fn_status(g), "ode interpolating adjoint: %s", remat_fn_error(g));
    return REMAT_OK;
}

/* ---- building the programs ---- */

static remat_status finish_prog(remat_fn *g, remat_status st, remat_program **out)
{
    if (st == REMAT_OK && remat_fn_status(g) != REMAT_OK)
        st = rmi_error(remat_fn_status(g), "ode interpolating adjoint: %s", remat_fn_error(g));
    if (st == REMAT_OK)
        st = remat_compile(g, remat_backend_cpu(), out);
    remat_fn_free(g);
    return st;
}

/* rhs(y, t, params) -> f, or first(y, fy, t, params) -> dt0 (Hairer's) */
static remat_status build_rhs(const ode_rhs *r, const ode_ctl *c, remat_dtype dt, bool first, remat_program **out)
{
    remat_fn *g = remat_fn_new(first ? "interp_first_step" : "interp_rhs");
    if (!g)
        return rmi_error(REMAT_ERR_NOMEM, "ode interpolating adjoint: out of memory");
    int64_t S = r->S, P = r->P;
    remat_val y = remat_arg(g, "y", dt, 1, &S), fy = first ? remat_arg(g, "fy", dt, 1, &S) : REMAT_NONE;
    remat_val t = remat_arg(g, "t", dt, 0, NULL), p = remat_arg(g, "params", dt, 1, &P), o;
    remat_val tt = r->timed ? t : REMAT_NONE, pp = P ? p : REMAT_NONE;
    remat_status st = first ? ode_initial_step(g, r, c, tt, y, fy, pp, &o) : ode_rhs_eval(g, r, tt, y, pp, &o);
    if (st == REMAT_OK)
        remat_fn_output(g, o);
    return finish_prog(g, st, out);
}

/* step(z, s, h, q) -> z': one fixed step of the backward system (explicit
 * stages as step.c forms them, or the Rosenbrock step) */
static remat_status build_astep(const ode_rhs *r, const ode_tableau *tb, remat_dtype dt, remat_program **out)
{
    remat_fn *g = remat_fn_new("interp_adjoint_step");
    if (!g)
        return rmi_error(REMAT_ERR_NOMEM, "ode interpolating adjoint: out of memory");
    int64_t N = r->S, Q = r->P;
    remat_val z = remat_arg(g, "z", dt, 1, &N), s = remat_arg(g, "s", dt, 0, NULL);
    remat_val h = remat_arg(g, "h", dt, 0, NULL), q = remat_arg(g, "q", dt, 1, &Q), z1 = REMAT_NONE;
    remat_status st = REMAT_OK;
    if (tb->ros) {
        st = rmi_ode_rosenbrock_step(g, r, tb, s, h, z, q, &z1, NULL, NULL);
    } else {
        remat_val k[ODE_MAX_STAGES];
        for (int i = 0; i < tb->stages && st == REMAT_OK; i++) {
            remat_val zi = i ? remat_add(g, z, ode_combine(g, i, tb->a + i * (i - 1) / 2, k)) : z, fi;
            remat_val si = tb->c[i] == 0.0 ? s : remat_add(g, s, remat_mul_scalar(g, h, tb->c[i]));
            st = ode_rhs_eval(g, r, si, zi, q, &fi);
            k[i] = st == REMAT_OK ? remat_mul(g, h, fi) : REMAT_NONE;
        }
        if (st == REMAT_OK)
            z1 = remat_add(g, z, ode_combine(g, tb->stages, tb->b, k));
    }
    if (st == REMAT_OK)
        remat_fn_output(g, z1);
    return finish_prog(g, st, out);
}

/* ---- the op's context ---- */

typedef struct interp_ctx {
    remat_custom_op op;
    remat_dtype dt;
    size_t es;
    int64_t K, S, P, N, Q; /* N = S + P (z), Q = P + 2 + 4S (q) */
    bool adaptive, has_p, has_ts, has_steps; /* has_steps: the step counts are the op's input after the times */
    double t0;
    double *times; /* opt->times (K), or NULL: from the op's input */
    int64_t *steps; /* fixed: per interval (has_steps: read from the op's input at each solve) */
    int64_t max_steps;
    double dt0;
    int n_jumps; /* opt->jump_ts: f's left limit there ends the step before */
    double *jumps;
    remat_program *rhs, *fstep, *ffirst, *fatt, *arhs, *astep, *afirst, *aatt;
    pthread_mutex_t lock;
    bool have;
    unsigned char *key;
    size_t key_bytes;
    unsigned char *ans;
    ode_registry_entry reg; /* freed at exit (ode_registry.h) */
} interp_ctx;

static void ctx_free(interp_ctx *c)
{
    remat_program *ps[] = {c->rhs, c->fstep, c->ffirst, c->fatt, c->arhs, c->astep, c->afirst, c->aatt};
    for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++)
        remat_program_free(ps[i]);
    rmi_free(c->times);
    rmi_free(c->steps);
    rmi_free(c->jumps);
    rmi_free(c->key);
    rmi_free(c->ans);
    rmi_free(c);
}

static void ctx_release(void *p)
{
    interp_ctx *c = p;
    pthread_mutex_destroy(&c->lock);
    ctx_free(c);
}

/* ---- numbers in the op's dtype ---- */

static double get(const interp_ctx *c, const void *p, int64_t i)
{
    return c->dt == REMAT_F64 ? ((const double *)p)[i] : (double)((const float *)p)[i];
}

static void put(const interp_ctx *c, void *p, int64_t i, double v)
{
    if (c->dt == REMAT_F64)
        ((double *)p)[i] = v;
    else
        ((float *)p)[i] = (float)v;
}

/* x rounded to the dtype */
static double rnd(const interp_ctx *c, double x)
{
    return c->dt == REMAT_F64 ? x : (double)(float)x;
}

static remat_tensor vec(const interp_ctx *c, int64_t n, const void *data)
{
    return (remat_tensor){.dtype = c->dt, .shape = {.rank = 1, .dims = {n}}, .data = (void *)data};
}

static remat_tensor sca(const interp_ctx *c, const void *data)
{
    return (remat_tensor){.dtype = c->dt, .shape = {.rank = 0}, .data = (void *)data};
}

/* ---- the forward sweep ---- */

/* Where the forward is: interval k, step j of it (fixed), i accepted steps
 * so far, and the carries: y (fixed), or the adaptive attempt's
 * [y, fy, t, tprop, r1, r2, nacc, nrej, stiff, calm] (2S + 8 numbers). */
typedef struct {
    int k;
    int64_t j, i;
    unsigned char *cy;
} fwd_state;

typedef struct {
    const interp_ctx *c;
    const double *times; /* K, as doubles */
    const void *params;  /* P in dt (a dummy when P = 0) */
    size_t carry_bytes;
    unsigned char *tmp;  /* carry_bytes + one scalar: the attempt's outputs */
} run_env;

static size_t carry_len(const interp_ctx *c, int64_t n)
{
    return (size_t)(c->adaptive ? 2 * n + 8 : n);
}

/* the time of the forward state (its last step's end) */
static double fwd_time(const run_env *e, const fwd_state *s)
{
    const interp_ctx *c = e->c;
    if (c->adaptive)
        return get(c, s->cy, 2 * c->S + 0);
    if (s->k >= c->K)
        return e->times[c->K - 1];
    double prev = s->k ? e->times[s->k - 1] : c->t0;
    if (s->j == c->steps[s->k])
        return e->times[s->k];
    return s->j == 0 ? prev : prev + (double)s->j * ((e->times[s->k] - prev) / (double)c->steps[s->k]);
}

/* One accepted forward step: 1, 0 at the end, -1 failed (max_steps, stiff,
 * a run error) */
static int fwd_advance(const run_env *e, fwd_state *s)
{
    const interp_ctx *c = e->c;
    int64_t S = c->S;
    size_t es = c->es;
    if (!c->adaptive) {
        while (s->k < c->K && s->j == c->steps[s->k])
            s->k++, s->j = 0;
        if (s->k >= c->K)
            return 0;
        double prev = s->k ? e->times[s->k - 1] : c->t0, h = (e->times[s->k] - prev) / (double)c->steps[s->k];
        double t = fwd_time(e, s);
        unsigned char tb[8], hb[8];
        put(c, tb, 0, t);
        put(c, hb, 0, h);
        remat_tensor in[4] = {vec(c, S, s->cy), sca(c, tb), sca(c, hb), vec(c, c->P, e->params)};
        remat_tensor o = vec(c, S, e->tmp);
        if (remat_run(c->fstep, 4, in, 1, &o, NULL) != REMAT_OK)
            return -1;
        memcpy(s->cy, e->tmp, (size_t)S * es);
        s->j++, s->i++;
        if (s->j == c->steps[s->k])
            s->k++, s->j = 0;
        return 1;
    }
    for (;;) {
        double t = get(c, s->cy, 2 * S);
        while (s->k < c->K && !(t < rnd(c, e->times[s->k])))
            s->k++;
        if (s->k >= c->K)
            return 0;
        double nacc = get(c, s->cy, 2 * S + 4), nrej = get(c, s->cy, 2 * S + 5);
        if (nacc + nrej >= (double)c->max_steps || get(c, s->cy, 2 * S + 6) >= ODE_STIFF_STEPS)
            return -1;
        unsigned char te[8], tf[8];
        put(c, te, 0, e->times[s->k]);
        put(c, tf, 0, ode_floor_of(e->times[s->k], c->dt));
        remat_tensor in[13], o[11];
        in[0] = vec(c, S, s->cy), in[1] = vec(c, S, s->cy + (size_t)S * es);
        o[0] = vec(c, S, e->tmp), o[1] = vec(c, S, e->tmp + (size_t)S * es);
        for (int q = 0; q < 8; q++) {
            in[2 + q] = sca(c, s->cy + (size_t)(2 * S + q) * es);
            o[2 + q] = sca(c, e->tmp + (size_t)(2 * S + q) * es);
        }
        o[10] = sca(c, e->tmp + (size_t)(2 * S + 8) * es);
        in[10] = sca(c, te), in[11] = sca(c, tf), in[12] = vec(c, c->P, e->params);
        if (remat_run(c->fatt, c->has_p ? 13 : 12, in, 11, o, NULL) != REMAT_OK)
            return -1;
        /* a rejected attempt keeps y and fy (remat_while's n_diff carries) */
        bool acc = get(c, e->tmp, 2 * S + 8) != 0;
        size_t from = acc ? 0 : (size_t)(2 * S) * es;
        memcpy(s->cy + from, e->tmp + from, e->carry_bytes - from);
        if (acc) {
            s->i++;
            return 1;
        }
    }
}

/* f at (t, y) into fy */
static int rhs_at(const run_env *e, const remat_program *prog, int64_t n, const void *y, double t, const void *p,
                  int64_t np, void *fy)
{
    const interp_ctx *c = e->c;
    unsigned char tb[8];
    put(c, tb, 0, t);
    remat_tensor in[3] = {vec(c, n, y), sca(c, tb), vec(c, np, p)}, o = vec(c, n, fy);
    return remat_run((remat_program *)prog, 3, in, 1, &o, NULL) == REMAT_OK ? 0 : -1;
}

/* ---- the backward solve ---- */

typedef struct {
    int64_t cap, n;
    double *t;
    unsigned char *y, *f, *fl; /* n * S each: y, f(t, y), f's left limit (differs at a jump) */
} points;

static int points_push(const run_env *e, points *pt, double t, const void *y)
{
    const interp_ctx *c = e->c;
    size_t sb = (size_t)c->S * c->es;
    if (pt->n == pt->cap) {
        int64_t cap = pt->cap ? 2 * pt->cap : 64;
        double *nt = rmi_realloc(pt->t, sizeof *nt * (size_t)cap);
        if (nt)
            pt->t = nt;
        unsigned char *ny = nt ? rmi_realloc(pt->y, sb * (size_t)cap) : NULL;
        if (ny)
            pt->y = ny;
        unsigned char *nf = ny ? rmi_realloc(pt->f, sb * (size_t)cap) : NULL;
        if (nf)
            pt->f = nf;
        unsigned char *nl = nf ? rmi_realloc(pt->fl, sb * (size_t)cap) : NULL;
        if (!nl)
            return -1;
        pt->fl = nl;
        pt->cap = cap;
    }
    pt->t[pt->n] = t;
    memcpy(pt->y + sb * (size_t)pt->n, y, sb);
    unsigned char *f = pt->f + sb * (size_t)pt->n, *fl = pt->fl + sb * (size_t)pt->n;
    if (rhs_at(e, c->rhs, c->S, y, t, e->params, c->P, f))
        return -1;
    bool jump = false;
    for (int i = 0; i < c->n_jumps && !jump; i++)
        jump = rnd(c, c->jumps[i]) == t;
    /* the left limit, as the forward's step that ended here took it (adaptive_step.c) */
    double below = t - fmax(fabs(t), 1.0) * 4.0 * (c->dt == REMAT_F32 ? 0x1p-23 : 0x1p-52);
    if (!jump)
        memcpy(fl, f, sb);
    else if (rhs_at(e, c->rhs, c->S, y, below, e->params, c->P, fl))
        return -1;
    pt->n++;
    return 0;
}

typedef struct {
    unsigned char *z;  /* adaptive: [z, fz, s, sprop, r1, r2, nacc, nrej, stiff, calm]; fixed: z */
    unsigned char *tmp;
    unsigned char *q;
    int64_t budget;    /* adaptive: attempts allowed */
    bool started;
} bwd_state;

/* the backward solve over the forward step from points a to b (t_a < t_b) */
static int bwd_step(const run_env *e, bwd_state *b, const points *pt, int64_t ia)
{
    const interp_ctx *c = e->c;
    int64_t S = c->S, N = c->N, P = c->P;
    size_t es = c->es, sb = (size_t)S * es;
    double ta = pt->t[ia], tb = pt->t[ia + 1];
    memcpy(b->q, e->params, (size_t)P * es);
    put(c, b->q, P, ta);
    put(c, b->q, P + 1, tb);
    memcpy(b->q + (size_t)(P + 2) * es, pt->y + sb * (size_t)ia, sb);
    memcpy(b->q + (size_t)(P + 2) * es + sb, pt->y + sb * (size_t)(ia + 1), sb);
    memcpy(b->q + (size_t)(P + 2) * es + 2 * sb, pt->f + sb * (size_t)ia, sb);
    memcpy(b->q + (size_t)(P + 2) * es + 3 * sb, pt->fl + sb * (size_t)(ia + 1), sb);
    if (!c->adaptive) {
        unsigned char sbuf[8], hb[8];
        put(c, sbuf, 0, -tb);
        put(c, hb, 0, tb - ta);
        remat_tensor in[4] = {vec(c, N, b->z), sca(c, sbuf), sca(c, hb), vec(c, c->Q, b->q)}, o = vec(c, N, b->tmp);
        if (remat_run(c->astep, 4, in, 1, &o, NULL) != REMAT_OK)
            return -1;
        memcpy(b->z, b->tmp, (size_t)N * es);
        return 0;
    }
    /* z may have jumped (an output's cotangent) and q changed: f(z) afresh */
    put(c, b->z, 2 * N, -tb);
    if (rhs_at(e, c->arhs, N, b->z, -tb, b->q, c->Q, b->z + (size_t)N * es))
        return -1;
    if (!b->started) {
        double h0 = c->dt0;
        if (h0 <= 0) {
            unsigned char sbuf[8], hb[8];
            put(c, sbuf, 0, -tb);
            remat_tensor in[4] = {vec(c, N, b->z), vec(c, N, b->z + (size_t)N * es), sca(c, sbuf), vec(c, c->Q, b->q)};
            remat_tensor o = sca(c, hb);
            if (remat_run(c->afirst, 4, in, 1, &o, NULL) != REMAT_OK)
                return -1;
            h0 = get(c, hb, 0);
        }
        put(c, b->z, 2 * N + 1, -tb + h0);
        for (int q = 2; q < 4; q++)
            put(c, b->z, 2 * N + q, 1.0);
        b->started = true;
    }
    double s_end = rnd(c, -ta);
    unsigned char te[8], tf[8];
    put(c, te, 0, -ta);
    put(c, tf, 0, ode_floor_of(-ta, c->dt));
    while (get(c, b->z, 2 * N) < s_end) {
        double nacc = get(c, b->z, 2 * N + 4), nrej = get(c, b->z, 2 * N + 5);
        if (nacc + nrej >= (double)b->budget || get(c, b->z, 2 * N + 6) >= ODE_STIFF_STEPS)
            return -1;
        remat_tensor in[13], o[11];
        in[0] = vec(c, N, b->z), in[1] = vec(c, N, b->z + (size_t)N * es);
        o[0] = vec(c, N, b->tmp), o[1] = vec(c, N, b->tmp + (size_t)N * es);
        for (int q = 0; q < 8; q++) {
            in[2 + q] = sca(c, b->z + (size_t)(2 * N + q) * es);
            o[2 + q] = sca(c, b->tmp + (size_t)(2 * N + q) * es);
        }
        o[10] = sca(c, b->tmp + (size_t)(2 * N + 8) * es);
        in[10] = sca(c, te), in[11] = sca(c, tf), in[12] = vec(c, c->Q, b->q);
        if (remat_run(c->aatt, 13, in, 11, o, NULL) != REMAT_OK)
            return -1;
        size_t from = get(c, b->tmp, 2 * N + 8) != 0 ? 0 : (size_t)(2 * N) * es; /* rejected: z, fz kept */
        memcpy(b->z + from, b->tmp + from, (size_t)(2 * N + 8) * es - from);
    }
    return 0;
}

/* lambda += ct[k] for the outputs at or after t not yet added */
static void add_outputs(const run_env *e, bwd_state *b, const void *ct, int *kk, double t)
{
    const interp_ctx *c = e->c;
    for (; *kk >= 0 && rnd(c, e->times[*kk]) >= t; (*kk)--)
        for (int64_t i = 0; i < c->S; i++)
            put(c, b->z, i, get(c, b->z, i) + get(c, ct, *kk * c->S + i));
}

/* The whole VJP: ans = [lambda(t0), mu(t0)]; 0 or -1 (then NaN) */
static int solve(interp_ctx *c, const void *y0, const void *params, const double *times, const void *ct)
{
    int64_t S = c->S, N = c->N;
    size_t es = c->es, fcb = carry_len(c, S) * es;
    unsigned char pdummy[8] = {0};
    run_env e = {.c = c, .times = times, .params = c->P ? params : pdummy, .carry_bytes = fcb};
    fwd_state ck[INTERP_CHECKPOINTS], cur = {0};
    int nck = 0, rc = -1;
    int64_t every = 1;
    points pt = {0};
    bwd_state b = {0};
    memset(ck, 0, sizeof ck);
    e.tmp = rmi_malloc(fcb + es);
    cur.cy = rmi_malloc(fcb);
    for (int i = 0; i < INTERP_CHECKPOINTS; i++)
        if (!(ck[i].cy = rmi_malloc(fcb)))
            goto done;
    if (!e.tmp || !cur.cy)
        goto done;
    /* the initial carries, as adaptive.c sets them */
    memcpy(cur.cy, y0, (size_t)S * es);
    if (c->adaptive) {
        if (rhs_at(&e, c->rhs, S, y0, c->t0, e.params, c->P, cur.cy + (size_t)S * es))
            goto done;
        double h0 = c->dt0;
        if (h0 <= 0) {
            unsigned char tb[8], hb[8];
            put(c, tb, 0, c->t0);
            remat_tensor in[4] = {vec(c, S, cur.cy), vec(c, S, cur.cy + (size_t)S * es), sca(c, tb),
                                  vec(c, c->P, e.params)};
            remat_tensor o = sca(c, hb);
            if (remat_run(c->ffirst, 4, in, 1, &o, NULL) != REMAT_OK)
                goto done;
            h0 = get(c, hb, 0);
        }
        put(c, cur.cy, 2 * S, c->t0);
        put(c, cur.cy, 2 * S + 1, rnd(c, c->t0) + rnd(c, h0));
        put(c, cur.cy, 2 * S + 2, 1.0);
        put(c, cur.cy, 2 * S + 3, 1.0);
        for (int q = 4; q < 8; q++)
            put(c, cur.cy, 2 * S + q, 0.0);
    }
    /* (1) the sweep that keeps the checkpoints */
    for (int r;;) {
        if (cur.i % every == 0) {
            if (nck == INTERP_CHECKPOINTS) {
                for (int m = 0; m < nck / 2; m++) {
                    unsigned char *keep = ck[m].cy;
                    ck[m].cy = ck[2 * m].cy, ck[2 * m].cy = keep;
                    ck[m].k = ck[2 * m].k, ck[m].j = ck[2 * m].j, ck[m].i = ck[2 * m].i;
                }
                nck /= 2;
                every *= 2;
            }
            if (cur.i % every == 0) {
                ck[nck].k = cur.k, ck[nck].j = cur.j, ck[nck].i = cur.i;
                memcpy(ck[nck].cy, cur.cy, fcb);
                nck++;
            }
        }
        if ((r = fwd_advance(&e, &cur)) < 0)
            goto done;
        if (r == 0)
            break;
    }
    int64_t total = cur.i;
    /* (2) the backward solve, segment by segment */
    size_t zb = carry_len(c, N) * es;
    b.z = rmi_calloc(1, zb + es);
    b.tmp = rmi_malloc(zb + es);
    b.q = rmi_malloc((size_t)c->Q * es);
    if (!b.z || !b.tmp || !b.q)
        goto done;
    b.budget = c->max_steps + total;
    int kk = (int)c->K - 1;
    add_outputs(&e, &b, ct, &kk, fwd_time(&e, &cur));
    for (int j = nck - 1; j >= 0; j--) {
        int64_t stop = j + 1 < nck ? ck[j + 1].i : total;
        cur.k = ck[j].k, cur.j = ck[j].j, cur.i = ck[j].i;
        memcpy(cur.cy, ck[j].cy, fcb);
        pt.n = 0;
        if (points_push(&e, &pt, fwd_time(&e, &cur), cur.cy))
            goto done;
        while (cur.i < stop)
            if (fwd_advance(&e, &cur) != 1 || points_push(&e, &pt, fwd_time(&e, &cur), cur.cy))
                goto done;
        for (int64_t m = pt.n - 2; m >= 0; m--) {
            if (bwd_step(&e, &b, &pt, m))
                goto done;
            add_outputs(&e, &b, ct, &kk, pt.t[m]);
        }
    }
    add_outputs(&e, &b, ct, &kk, c->t0);
    memcpy(c->ans, b.z, (size_t)N * es);
    rc = 0;
    for (int64_t i = 0; i < N; i++)
        if (!isfinite(get(c, c->ans, i)))
            rc = -1;
done:
    for (int i = 0; i < INTERP_CHECKPOINTS; i++)
        rmi_free(ck[i].cy);
    rmi_free(cur.cy);
    rmi_free(e.tmp);
    rmi_free(pt.t);
    rmi_free(pt.y);
    rmi_free(pt.f);
    rmi_free(pt.fl);
    rmi_free(b.z);
    rmi_free(b.tmp);
    rmi_free(b.q);
    return rc;
}

/* ---- the custom op ---- */

static void ip_forward(int n_in, const remat_tensor *ins, remat_tensor *out, void *ctx)
{
    (void)n_in;
    interp_ctx *c = ctx;
    memcpy(out->data, ins[0].data, (size_t)(c->K * c->S) * c->es);
    pthread_mutex_lock(&c->lock);
    c->have = false; /* a new evaluation: its VJPs solve again */
    pthread_mutex_unlock(&c->lock);
}

/* Step counts (K, the op's dtype) into c->steps: whole numbers, 0 <= n <=
 * 2^53 (remat_ode_count_steps'); 0 when one is not (the solve then fails:
 * NaN, as for any failed solve) */
static int read_steps(interp_ctx *c, const void *ns)
{
    for (int64_t k = 0; k < c->K; k++) {
        double v = get(c, ns, k);
        if (!(v >= 0 && v <= 0x1p53 && v == floor(v)))
            return 0;
        c->steps[k] = (int64_t)v;
    }
    return 1;
}

/* ins: ys, y0, [params], [times, [steps]]; which 1: lambda(t0), 2 (params): mu(t0) */
static void ip_vjp(int which, int n_in, const remat_tensor *ins, const remat_tensor *out, const remat_tensor *dout,
                   remat_tensor *din, void *ctx)
{
    (void)out;
    (void)n_in;
    interp_ctx *c = ctx;
    size_t es = c->es;
    int ip = c->has_p ? 2 : -1, it = c->has_ts ? (c->has_p ? 3 : 2) : -1, in_ = c->has_steps ? it + 1 : -1;
    int64_t n = which == 0 ? c->K * c->S : which == 1 ? c->S : which == ip ? c->P : c->K;
    if (which != 1 && which != ip) { /* ys and times are stop_gradient'ed */
        memset(din->data, 0, (size_t)n * es);
        return;
    }
    size_t ks = (size_t)(c->K * c->S) * es, ss = (size_t)c->S * es, ps = (size_t)c->P * es, ts = (size_t)c->K * es;
    pthread_mutex_lock(&c->lock);
    unsigned char *kp = c->key;
    bool hit = c->have && !memcmp(kp, ins[1].data, ss) && !memcmp(kp + ss, dout->data, ks) &&
               (ip < 0 || !memcmp(kp + ss + ks, ins[ip].data, ps)) &&
               (it < 0 || !memcmp(kp + ss + ks + ps, ins[it].data, ts)) &&
               (in_ < 0 || !memcmp(kp + ss + ks + ps + ts, ins[in_].data, ts));
    if (!hit) {
        double *times = c->times;
        if (it >= 0 && (times = rmi_malloc(sizeof *times * (size_t)c->K)))
            for (int64_t k = 0; k < c->K; k++)
                times[k] = get(c, ins[it].data, k);
        c->have = times && (in_ < 0 || read_steps(c, ins[in_].data)) &&
                  solve(c, ins[1].data, ip >= 0 ? ins[ip].data : NULL, times, dout->data) == 0;
        if (times != c->times)
            rmi_free(times);
        if (c->have) {
            memcpy(kp, ins[1].data, ss);
            memcpy(kp + ss, dout->data, ks);
            if (ip >= 0)
                memcpy(kp + ss + ks, ins[ip].data, ps);
            if (it >= 0)
                memcpy(kp + ss + ks + ps, ins[it].data, ts);
            if (in_ >= 0)
                memcpy(kp + ss + ks + ps + ts, ins[in_].data, ts);
        }
    }
    if (c->have) {
        memcpy(din->data, c->ans + (which == 1 ? 0 : ss), (size_t)n * es);
    } else {
        for (int64_t i = 0; i < n; i++)
            put(c, din->data, i, NAN);
    }
    pthread_mutex_unlock(&c->lock);
}

static remat_status build_programs(interp_ctx *c, const remat_mechanism *m, const remat_ode_options *opt)
{
    const ode_tableau *tb = rmi_ode_tableau(opt->method);
    ode_rhs fr = ode_rhs_of(m);
    interp_aux aux = {.S = c->S, .P = c->P};
    ode_rhs ar = {.m = m, .eval = interp_eval, .ctx = &aux, .S = c->N, .P = c->Q, .timed = 1};
    ode_ctl ctl = {0};
    remat_status st = REMAT_OK;
    if (c->adaptive)
        st = ode_ctl_of(opt, &ctl);
    if (st == REMAT_OK)
        st = ode_aug_rhs_new(m, c->dt, c->S, c->P, &aux.ar);
    if (st == REMAT_OK)
        st = build_rhs(&fr, &ctl, c->dt, false, &c->rhs);
    if (st == REMAT_OK)
        st = build_rhs(&ar, &ctl, c->dt, false, &c->arhs);
    if (st == REMAT_OK && !c->adaptive) {
        remat_fn *body = remat_ode_step_body(m, opt->method, c->dt);
        st = body ? remat_compile(body, remat_backend_cpu(), &c->fstep) : REMAT_ERR_NOMEM;
        remat_fn_free(body);
        if (st == REMAT_OK)
            st = build_astep(&ar, tb, c->dt, &c->astep);
    }
    if (st == REMAT_OK && c->adaptive) {
        remat_fn *fb = NULL, *ab = NULL;
        st = build_rhs(&fr, &ctl, c->dt, true, &c->ffirst);
        if (st == REMAT_OK)
            st = build_rhs(&ar, &ctl, c->dt, true, &c->afirst);
        if (st == REMAT_OK && (st = ode_attempt_body(&fr, &ctl, c->dt, c->S, c->has_p, 0, &fb)) == REMAT_OK)
            st = remat_compile(fb, remat_backend_cpu(), &c->fatt);
        ode_ctl actl = ctl; /* the backward steps end on the forward's, knots included */
        actl.n_jumps = 0, actl.jump_ts = NULL;
        if (st == REMAT_OK && (st = ode_attempt_body(&ar, &actl, c->dt, c->N, 1, 0, &ab)) == REMAT_OK)
            st = remat_compile(ab, remat_backend_cpu(), &c->aatt);
        remat_fn_free(fb);
        remat_fn_free(ab);
        c->max_steps = ctl.max_steps;
    }
    remat_fn_free(aux.ar.vjp);
    return st;
}

remat_status rmi_ode_interp_wrap(remat_fn *f, const remat_mechanism *m, const remat_ode_options *opt,
                                 const int64_t *steps, remat_val y0, remat_val params, remat_val ts, remat_val nsteps,
                                 remat_val ys, remat_val *out)
{
    *out = REMAT_NONE;
    interp_ctx *c = rmi_calloc(1, sizeof *c);
    if (!c)
        return rmi_error(REMAT_ERR_NOMEM, "ode interpolating adjoint: out of memory");
    c->dt = remat_val_dtype(f, y0);
    c->es = remat_dtype_size(c->dt);
    c->S = remat_val_shape(f, y0).dims[0];
    c->P = params != REMAT_NONE ? remat_val_shape(f, params).dims[0] : 0;
    c->has_p = params != REMAT_NONE;
    c->has_ts = ts != REMAT_NONE;
    c->has_steps = nsteps != REMAT_NONE; /* with ts: the row scan's fixed steps */
    c->K = c->has_ts ? remat_val_shape(f, ts).dims[0] : opt->n_times;
    c->N = c->S + c->P, c->Q = c->P + 2 + 4 * c->S;
    c->adaptive = opt->adaptive;
    c->t0 = opt->t0, c->dt0 = opt->dt0;
    c->n_jumps = opt->adaptive && opt->n_jumps > 0 && opt->jump_ts ? opt->n_jumps : 0;
    if (c->n_jumps && (c->jumps = rmi_malloc(sizeof *c->jumps * (size_t)c->n_jumps)))
        memcpy(c->jumps, opt->jump_ts, sizeof *c->jumps * (size_t)c->n_jumps);
    size_t es = c->es;
    c->key_bytes = (size_t)(c->S + c->K * c->S + c->P + 2 * c->K) * es;
    c->key = rmi_malloc(c->key_bytes + 1);
    c->ans = rmi_malloc((size_t)c->N * es + 1);
    if (!c->has_ts && (c->times = rmi_malloc(sizeof *c->times * (size_t)c->K)))
        memcpy(c->times, opt->times, sizeof *c->times * (size_t)c->K);
    if (!c->adaptive && (c->steps = rmi_malloc(sizeof *c->steps * (size_t)c->K)) && !c->has_steps)
        memcpy(c->steps, steps, sizeof *c->steps * (size_t)c->K);
    if (!c->key || !c->ans || (!c->has_ts && !c->times) || (!c->adaptive && !c->steps) || (c->n_jumps && !c->jumps)) {
        ctx_free(c);
        return rmi_error(REMAT_ERR_NOMEM, "ode interpolating adjoint: out of memory");
    }
    remat_status st = build_programs(c, m, opt);
    if (st != REMAT_OK) {
        char why[512];
        snprintf(why, sizeof why, "%s", remat_last_error());
        ctx_free(c);
        return rmi_error(st, "ode interpolating adjoint: building the backward solve: %s", why);
    }
    pthread_mutex_init(&c->lock, NULL);
    c->op = (remat_custom_op){.name = "ode_interpolating_adjoint", .forward = ip_forward, .vjp = ip_vjp, .ctx = c};
    ode_registry_add(&c->reg, c, ctx_release);
    remat_shape sh = remat_val_shape(f, ys);
    remat_val ins[5];
    int n = 0;
    ins[n++] = remat_stop_gradient(f, ys);
    ins[n++] = y0;
    if (c->has_p)
        ins[n++] = params;
    if (c->has_ts)
        ins[n++] = remat_stop_gradient(f, ts);
    if (c->has_steps)
        ins[n++] = remat_stop_gradient(f, nsteps);
    *out = remat_custom(f, &c->op, n, ins, c->dt, sh.rank, sh.dims);
    if (*out == REMAT_NONE || remat_fn_status(f) != REMAT_OK) {
        *out = REMAT_NONE;
        return rmi_error(remat_fn_status(f), "ode interpolating adjoint: %s", remat_fn_error(f));
    }
    return REMAT_OK;
}

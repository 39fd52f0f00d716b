/*
 * bdf.c — a variable-order (1..5), variable-step BDF integrator over
 * callbacks (bdf.h), for stiff systems whose Jacobian is dear: it is
 * reused across steps, as CVODE does.
 *
 * The form is the quasi-constant-step one of Shampine & Reichelt ("The
 * MATLAB ODE suite", SIAM J. Sci. Comput. 18 (1997) 1-22; MATLAB's ode15s)
 * as scipy.integrate.BDF writes it: the backward differences D[0..q+2] of
 * the interpolating polynomial on an equal grid of step h are the state; a
 * step change by the factor r rescales them (D <- (R U)^T D, R and U from
 * compute_R), so the formulas are always the constant-step ones. The
 * numerical differentiation formulas (NDF, kappa of Shampine-Reichelt) are
 * used for orders 1-4 (their steps are larger than BDF's for the same
 * error; order 5 is the BDF); the corrector solves
 *   d - c f(t_new, y_pred + d) + psi = 0,  c = h / alpha_q,
 * with the predictor y_pred = sum_{j<=q} D_j and psi = sum_j gamma_j D_j /
 * alpha_q, by modified Newton on M = I - c J. Why this form and not CVODE's
 * Nordsieck array: the step change is one small (q+1)^2 matrix product, the
 * error estimates of the neighbouring orders are D[q] and D[q+2] directly,
 * and the interpolating polynomial of the outputs is the same differences.
 *
 * What is CVODE's (Hindmarsh et al., ACM TOMS 31 (2005) 363-396, cvode.c):
 * the Jacobian is kept until Newton fails to converge with a stale one (or
 * after BDF_JAC_AGE steps), M's LU until c moves by 30% from the c it was
 * factored with or BDF_LU_AGE steps pass (a solve with a stale c is scaled
 * by 2 / (1 + c / c_lu)); the convergence test del min(1, rate) err_q <=
 * BDF_NEWTON_TOL with the rate carried between steps (so a step may
 * converge after one right-hand side), at most 3 iterations, divergence
 * when a correction is twice the last; a step or order change only when it
 * gains at least the factor BDF_THRESH (1.5, CVODE's); a convergence
 * failure with a fresh Jacobian cuts h by 4. CVODE's test constant is 0.1;
 * 0.03 was measured better here (GRI-Mech 3.0 at 1500 K, rtol 1e-8: 0.1
 * left corrector error in the error estimate, 1481 steps with 206
 * rejected and 2278 right-hand sides against 1054, 32 and 1587;
 * docs/design-notes.md, "BDF"). The error test is err_q |d| <= 1 in the weighted RMS norm with
 * weights atol + rtol |y|. Outputs between steps are the step's
 * interpolating polynomial (scipy's BdfDenseOutput); the last output time
 * ends the integration (the step that would pass it is cut to it).
 *
 * The LU is LAPACK's dgetrf/dgetrs (OpenBLAS ships them), as
 * src/backend/linalg.c calls them.
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "models/ode/bdf.h"

void dgetrf_(const int *m, const int *n, double *a, const int *lda, int *ipiv, int *info);
void dgetrs_(const char *trans, const int *n, const int *nrhs, const double *a, const int *lda, const int *ipiv,
             double *b, const int *ldb, int *info);

#define BDF_NEWTON_ITERS 3
#define BDF_JAC_AGE 50   /* steps before a Jacobian is renewed anyway (CVODE's msbj) */
#define BDF_LU_AGE 20    /* steps before M is refactored anyway (CVODE's msbp) */
#define BDF_LU_DC 0.3    /* |c / c_lu - 1| past which M is refactored (CVODE's dgmax) */
#define BDF_THRESH 1.5   /* least step factor worth a change (CVODE's THRESH) */
#define BDF_NEWTON_TOL 0.03 /* err_q |correction| min(1, rate) below it: converged */
#define BDF_MIN_FACTOR 0.2
#define BDF_MAX_FACTOR 10.0

/* Shampine-Reichelt's NDF coefficients kappa_q, gamma_q = sum_{j<=q} 1/j,
 * alpha_q = (1 - kappa_q) gamma_q, error constants kappa_q gamma_q + 1/(q+1) */
static const double kappa[RMI_BDF_MAX_ORDER + 1] = {0, -0.1850, -1.0 / 9.0, -0.0823, -0.0415, 0};

typedef struct {
    int n, order, max_order;
    double gamma[RMI_BDF_MAX_ORDER + 2], alpha[RMI_BDF_MAX_ORDER + 2], err[RMI_BDF_MAX_ORDER + 2];
    double *D;                  /* (MAX_ORDER + 3, n) */
    double *ypred, *psi, *d, *dy, *y, *f, *scale, *J, *M;
    int *ipiv;
    const rmi_bdf_problem *p;
    remat_ode_bdf_stats *st;
} bdf;

static double wrms(const double *x, const double *scale, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++) {
        double v = x[i] / scale[i];
        s += v * v;
    }
    return sqrt(s / n);
}

static void set_scale(const bdf *b, const double *y, double rtol, double atol)
{
    for (int i = 0; i < b->n; i++)
        b->scale[i] = atol + rtol * fabs(y[i]);
}

/* R of scipy's compute_R: R[i][j] = prod_{k=1..i} (k - 1 - factor j) / k, R[0][j] = 1 */
static void compute_R(int q, double factor, double R[RMI_BDF_MAX_ORDER + 1][RMI_BDF_MAX_ORDER + 1])
{
    for (int j = 0; j <= q; j++)
        R[0][j] = 1.0;
    for (int i = 1; i <= q; i++)
        for (int j = 0; j <= q; j++)
            R[i][j] = R[i - 1][j] * (j == 0 ? 0.0 : (i - 1 - factor * j) / i);
}

/* D[0..q] <- (R U)^T D[0..q]: the differences on the grid of step factor h */
static void change_D(bdf *b, int q, double factor)
{
    double R[RMI_BDF_MAX_ORDER + 1][RMI_BDF_MAX_ORDER + 1], U[RMI_BDF_MAX_ORDER + 1][RMI_BDF_MAX_ORDER + 1];
    double RU[RMI_BDF_MAX_ORDER + 1][RMI_BDF_MAX_ORDER + 1];
    compute_R(q, factor, R);
    compute_R(q, 1.0, U);
    for (int i = 0; i <= q; i++)
        for (int j = 0; j <= q; j++) {
            double s = 0;
            for (int k = 0; k <= q; k++)
                s += R[i][k] * U[k][j];
            RU[i][j] = s;
        }
    int n = b->n;
    for (int x = 0; x < n; x++) {
        double col[RMI_BDF_MAX_ORDER + 1], tmp[RMI_BDF_MAX_ORDER + 1];
        for (int k = 0; k <= q; k++)
            col[k] = b->D[k * n + x];
        for (int i = 0; i <= q; i++) {
            double s = 0;
            for (int k = 0; k <= q; k++)
                s += RU[k][i] * col[k];
            tmp[i] = s;
        }
        for (int i = 0; i <= q; i++)
            b->D[i * n + x] = tmp[i];
    }
}

static int eval_rhs(bdf *b, double t, const double *y, double *f)
{
    b->st->rhs_evals++;
    if (b->p->rhs(b->p->ctx, t, y, f))
        return 1;
    for (int i = 0; i < b->n; i++)
        if (!isfinite(f[i]))
            return 1;
    return 0;
}

static int eval_jac(bdf *b, double t, const double *y)
{
    b->st->jacobians++;
    if (b->p->jac(b->p->ctx, t, y, b->J))
        return 1;
    for (int i = 0; i < b->n * b->n; i++)
        if (!isfinite(b->J[i]))
            return 1;
    return 0;
}

/* M = I - c J (column-major for LAPACK) and its LU; nonzero when singular */
static int factor_M(bdf *b, double c)
{
    int n = b->n, info = 0;
    for (int j = 0; j < n; j++)
        for (int i = 0; i < n; i++)
            b->M[j * n + i] = (i == j ? 1.0 : 0.0) - c * b->J[i * n + j];
    b->st->lu++;
    dgetrf_(&n, &n, b->M, &n, b->ipiv, &info);
    return info != 0;
}

static void solve_M(bdf *b, double *x)
{
    int n = b->n, one = 1, info = 0;
    dgetrs_("N", &n, &one, b->M, &n, b->ipiv, x, &n, &info);
}

/* Hairer-Norsett-Wanner I, II.4, for order 1 (scipy's select_initial_step) */
static int initial_step(bdf *b, double t0, const double *y0, const double *f0, double rtol, double atol, double span,
                        double *h)
{
    int n = b->n;
    set_scale(b, y0, rtol, atol);
    double d0 = wrms(y0, b->scale, n), d1 = wrms(f0, b->scale, n);
    double h0 = d0 < 1e-5 || d1 < 1e-5 ? 1e-6 : 0.01 * d0 / d1;
    if (h0 > span)
        h0 = span;
    for (int i = 0; i < n; i++)
        b->y[i] = y0[i] + h0 * f0[i];
    if (eval_rhs(b, t0 + h0, b->y, b->f))
        return 1;
    for (int i = 0; i < n; i++)
        b->dy[i] = b->f[i] - f0[i];
    double d2 = wrms(b->dy, b->scale, n) / h0, m = d1 > d2 ? d1 : d2;
    double h1 = m <= 1e-15 ? fmax(1e-6, h0 * 1e-3) : sqrt(0.01 / m);
    *h = fmin(100 * h0, h1);
    if (*h > span)
        *h = span;
    return 0;
}

/* y at t in the last step (t_new - h, t_new] from D[0..q] (scipy's BdfDenseOutput) */
static void interpolate(const bdf *b, int q, double t_new, double h, double t, double *out)
{
    int n = b->n;
    double p[RMI_BDF_MAX_ORDER], x = 1.0;
    for (int j = 0; j < q; j++) {
        x *= (t - (t_new - h * j)) / (h * (1 + j));
        p[j] = x;
    }
    for (int i = 0; i < n; i++) {
        double s = b->D[i];
        for (int j = 1; j <= q; j++)
            s += b->D[j * n + i] * p[j - 1];
        out[i] = s;
    }
}

/* The corrector on M's current LU: 0 converged (b->y, b->d hold y_new and
 * y_new - y_pred), 1 not; *iters the right-hand sides taken */
static int newton(bdf *b, double t_new, double c, double c_lu, double *rate, int *iters)
{
    int n = b->n, q = b->order;
    memcpy(b->y, b->ypred, sizeof *b->y * (size_t)n);
    memset(b->d, 0, sizeof *b->d * (size_t)n);
    double dn_old = 0, scal = c == c_lu ? 1.0 : 2.0 / (1.0 + c / c_lu);
    for (int m = 0; m < BDF_NEWTON_ITERS; m++) {
        *iters = m + 1;
        if (eval_rhs(b, t_new, b->y, b->f))
            return 1;
        for (int i = 0; i < n; i++)
            b->dy[i] = c * b->f[i] - b->psi[i] - b->d[i];
        solve_M(b, b->dy);
        if (scal != 1.0)
            for (int i = 0; i < n; i++)
                b->dy[i] *= scal;
        double dn = wrms(b->dy, b->scale, n);
        if (!isfinite(dn))
            return 1;
        if (m > 0)
            *rate = fmax(0.3 * *rate, dn / dn_old);
        for (int i = 0; i < n; i++) {
            b->y[i] += b->dy[i];
            b->d[i] += b->dy[i];
        }
        if (dn * fmin(1.0, *rate) * b->err[q] <= BDF_NEWTON_TOL || dn == 0)
            return 0;
        if (m >= 1 && dn > 2 * dn_old)
            return 1;
        dn_old = dn;
    }
    return 1;
}

static remat_status bdf_alloc(bdf *b, int n)
{
    size_t v = (size_t)n;
    b->D = rmi_calloc((RMI_BDF_MAX_ORDER + 3) * v, sizeof *b->D);
    double **vecs[] = {&b->ypred, &b->psi, &b->d, &b->dy, &b->y, &b->f, &b->scale};
    int ok = b->D != NULL;
    for (size_t i = 0; i < sizeof vecs / sizeof vecs[0]; i++)
        ok &= (*vecs[i] = rmi_calloc(v, sizeof(double))) != NULL;
    ok &= (b->J = rmi_calloc(v * v, sizeof *b->J)) != NULL;
    ok &= (b->M = rmi_calloc(v * v, sizeof *b->M)) != NULL;
    ok &= (b->ipiv = rmi_calloc(v, sizeof *b->ipiv)) != NULL;
    return ok ? REMAT_OK : rmi_error(REMAT_ERR_NOMEM, "ode bdf: out of memory (%d states)", n);
}

static void bdf_release(bdf *b)
{
    double *vecs[] = {b->D, b->ypred, b->psi, b->d, b->dy, b->y, b->f, b->scale, b->J, b->M};
    for (size_t i = 0; i < sizeof vecs / sizeof vecs[0]; i++)
        rmi_free(vecs[i]);
    rmi_free(b->ipiv);
}

static remat_status check_args(const rmi_bdf_problem *p, const rmi_bdf_options *o, double t0, int K,
                               const double *times, const double *ys, const remat_ode_bdf_stats *stats)
{
    if (!p || !o || !times || !ys || !stats || !p->rhs || !p->jac)
        return rmi_error(REMAT_ERR_NULL, "ode bdf: a problem, option, time, output or stats pointer is NULL");
    if (p->n < 1 || K < 1)
        return rmi_error(REMAT_ERR_ARG, "ode bdf: needs at least one state and one output time (%d, %d)", p->n, K);
    if (!(o->rtol > 0) || !(o->atol >= 0) || !isfinite(o->rtol) || !isfinite(o->atol))
        return rmi_error(REMAT_ERR_VALUE, "ode bdf: rtol = %g must be > 0 and atol = %g >= 0", o->rtol, o->atol);
    if (o->max_order < 0 || o->max_order > RMI_BDF_MAX_ORDER || o->max_steps < 0 || !(o->h0 >= 0))
        return rmi_error(REMAT_ERR_VALUE, "ode bdf: max_order %d (0..5), max_steps %lld (>= 0), h0 %g (>= 0)",
                         o->max_order, (long long)o->max_steps, o->h0);
    double prev = t0;
    for (int k = 0; k < K; k++) {
        if (!isfinite(times[k]) || (k == 0 ? times[k] < prev : times[k] <= prev))
            return rmi_error(REMAT_ERR_VALUE, "ode bdf: output time %d (%g) must be finite and after %s (%g)", k,
                             times[k], k ? "the previous one" : "t0", prev);
        prev = times[k];
    }
    return REMAT_OK;
}

/* the step, with its failures and retries; 0 accepted (t_new, b->d, b->y
 * set), 1 stop (stats->code set) */
typedef struct {
    double t, h, t_end, rtol, atol, c_lu, rate;
    int64_t max_steps, jac_age, lu_age;
    int jac_fresh, lu_ok, n_equal;
    double safety, err_norm;
} bdf_run;

static int64_t attempts_of(const remat_ode_bdf_stats *s) { return s->steps + s->rejected + s->newton_failures; }

static int step(bdf *b, bdf_run *r, double *t_new_out)
{
    int n = b->n;
    remat_ode_bdf_stats *st = b->st;
    for (;;) {
        int q = b->order;
        double min_step = 10 * fabs(nextafter(r->t, INFINITY) - r->t);
        if (attempts_of(st) >= r->max_steps) {
            st->code = REMAT_ODE_BDF_MAX_STEPS;
            return 1;
        }
        if (r->h < min_step) {
            st->code = REMAT_ODE_BDF_COLLAPSED;
            return 1;
        }
        double t_new = r->t + r->h;
        if (t_new > r->t_end) { /* the last output time ends the integration */
            double f = (r->t_end - r->t) / r->h;
            change_D(b, q, f);
            r->h *= f;
            r->n_equal = 0;
            t_new = r->t_end;
        }
        for (int i = 0; i < n; i++) {
            double s = 0, ps = 0;
            for (int j = 0; j <= q; j++)
                s += b->D[j * n + i];
            for (int j = 1; j <= q; j++)
                ps += b->gamma[j] * b->D[j * n + i];
            b->ypred[i] = s;
            b->psi[i] = ps / b->alpha[q];
        }
        set_scale(b, b->ypred, r->rtol, r->atol);
        double c = r->h / b->alpha[q];
        int converged = 0, iters = 0;
        for (;;) {
            if (!r->lu_ok || fabs(c / r->c_lu - 1.0) > BDF_LU_DC || r->lu_age >= BDF_LU_AGE) {
                if (!r->jac_fresh && r->jac_age >= BDF_JAC_AGE) {
                    if (eval_jac(b, t_new, b->ypred))
                        break;
                    r->jac_fresh = 1, r->jac_age = 0;
                }
                if (factor_M(b, c))
                    break;
                r->lu_ok = 1, r->c_lu = c, r->lu_age = 0, r->rate = 1.0;
            }
            if (!newton(b, t_new, c, r->c_lu, &r->rate, &iters)) {
                converged = 1;
                break;
            }
            if (r->jac_fresh)
                break;
            if (eval_jac(b, t_new, b->ypred))
                break;
            r->jac_fresh = 1, r->jac_age = 0, r->lu_ok = 0;
        }
        if (!converged) {
            st->newton_failures++;
            r->h *= 0.25;
            change_D(b, q, 0.25);
            r->n_equal = 0;
            r->lu_ok = 0;
            continue;
        }
        r->safety = 0.9 * (2 * BDF_NEWTON_ITERS + 1) / (2 * BDF_NEWTON_ITERS + iters);
        set_scale(b, b->y, r->rtol, r->atol);
        r->err_norm = b->err[q] * wrms(b->d, b->scale, n);
        if (r->err_norm > 1) {
            st->rejected++;
            double f = fmax(BDF_MIN_FACTOR, r->safety * pow(r->err_norm, -1.0 / (q + 1)));
            r->h *= f;
            change_D(b, q, f);
            r->n_equal = 0;
            continue;
        }
        *t_new_out = t_new;
        return 0;
    }
}

/* after an accepted step: the order and step for the next one (scipy's
 * choice among q - 1, q, q + 1, taken only when worth BDF_THRESH) */
static void choose_next(bdf *b, bdf_run *r)
{
    int n = b->n, q = b->order;
    if (r->n_equal < q + 1)
        return;
    double em = q > 1 ? b->err[q - 1] * wrms(b->D + (size_t)q * n, b->scale, n) : INFINITY;
    double ep = q < b->max_order ? b->err[q + 1] * wrms(b->D + (size_t)(q + 2) * n, b->scale, n) : INFINITY;
    double norms[3] = {em, r->err_norm, ep}, best = 0;
    int dq = 0;
    for (int k = 0; k < 3; k++) {
        double fk = norms[k] == 0 ? INFINITY : pow(norms[k], -1.0 / (q + k));
        if (fk > best) {
            best = fk;
            dq = k - 1;
        }
    }
    double factor = fmin(BDF_MAX_FACTOR, r->safety * best);
    r->n_equal = 0;
    if (factor < BDF_THRESH)
        return;
    b->order = q + dq;
    r->h *= factor;
    change_D(b, b->order, factor);
}

remat_status rmi_bdf_solve(const rmi_bdf_problem *p, const rmi_bdf_options *o, double t0, const double *y0,
                           int K, const double *times, double *ys, remat_ode_bdf_stats *stats)
{
    remat_status s = check_args(p, o, t0, K, times, ys, stats);
    if (s != REMAT_OK)
        return s;
    int n = p->n;
    memset(stats, 0, sizeof *stats);
    stats->t = t0;
    for (size_t i = 0; i < (size_t)K * (size_t)n; i++)
        ys[i] = NAN;
    bdf b = {.n = n, .order = 1, .max_order = o->max_order ? o->max_order : RMI_BDF_MAX_ORDER, .p = p, .st = stats};
    for (int q = 1; q <= RMI_BDF_MAX_ORDER; q++)
        b.gamma[q] = b.gamma[q - 1] + 1.0 / q;
    for (int q = 0; q <= RMI_BDF_MAX_ORDER; q++) {
        b.alpha[q] = (1 - kappa[q]) * b.gamma[q];
        b.err[q] = kappa[q] * b.gamma[q] + 1.0 / (q + 1);
    }
    int k = 0;
    for (; k < K && times[k] <= t0; k++)
        memcpy(ys + (size_t)k * n, y0, sizeof *ys * (size_t)n);
    if (k == K)
        return REMAT_OK;
    if ((s = bdf_alloc(&b, n)) != REMAT_OK) {
        bdf_release(&b);
        return s;
    }
    bdf_run r = {.t = t0, .t_end = times[K - 1], .rtol = o->rtol, .atol = o->atol, .rate = 1.0,
                 .max_steps = o->max_steps ? o->max_steps : 4096};
    memcpy(b.D, y0, sizeof *y0 * (size_t)n);
    double *f0 = b.D + n;
    if (eval_rhs(&b, t0, y0, f0) || eval_jac(&b, t0, y0)) {
        stats->code = REMAT_ODE_BDF_COLLAPSED;
        goto done;
    }
    r.jac_fresh = 1;
    r.h = o->h0;
    if (r.h == 0 && initial_step(&b, t0, y0, f0, o->rtol, o->atol, r.t_end - t0, &r.h)) {
        stats->code = REMAT_ODE_BDF_COLLAPSED;
        goto done;
    }
    if (r.h > r.t_end - t0)
        r.h = r.t_end - t0;
    for (int i = 0; i < n; i++)
        f0[i] *= r.h;
    while (k < K) {
        double t_new;
        if (step(&b, &r, &t_new))
            break;
        int q = b.order;
        stats->steps++;
        r.n_equal++, r.jac_age++, r.lu_age++;
        r.jac_fresh = 0;
        double *D = b.D;
        for (int i = 0; i < n; i++) {
            D[(q + 2) * n + i] = b.d[i] - D[(q + 1) * n + i];
            D[(q + 1) * n + i] = b.d[i];
        }
        for (int j = q; j >= 0; j--)
            for (int i = 0; i < n; i++)
                D[j * n + i] += D[(j + 1) * n + i];
        r.t = t_new;
        stats->t = t_new;
        for (; k < K && times[k] <= t_new; k++)
            if (times[k] == t_new)
                memcpy(ys + (size_t)k * n, D, sizeof *ys * (size_t)n);
            else
                interpolate(&b, q, t_new, r.h, times[k], ys + (size_t)k * n);
        choose_next(&b, &r);
    }
done:
    bdf_release(&b);
    return REMAT_OK;
}

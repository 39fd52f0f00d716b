/*
 * vars.c — the optimizer's variables (vars.h).
 *
 * x -> theta -> p per free parameter: theta = x, or for LM and BFGS with
 * bounds the MINUIT transform (F. James, MINUIT Reference Manual, CERN D506,
 * sec. 1.3; as lmfit uses it) that maps an unbounded x into [lo, hi] in theta; then
 * p = exp(theta) on the log scale, p = theta on the linear one. Fixed
 * parameters keep their start values. Random starts for multistart.c
 * (fit_vars_draw_start) are drawn here too, within the same bounds.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "models/fit/vars.h"

static double theta_of(const fit_vars *v, int j, double x)
{
    double lo = v->tlo[j], hi = v->thi[j];
    switch (v->map[j]) {
    case VAR_SIN: return lo + (hi - lo) * (sin(x) + 1.0) / 2.0;
    case VAR_LOWER: return lo - 1.0 + sqrt(x * x + 1.0);
    case VAR_UPPER: return hi + 1.0 - sqrt(x * x + 1.0);
    default: return x;
    }
}

static double dtheta_dx(const fit_vars *v, int j, double x)
{
    switch (v->map[j]) {
    case VAR_SIN: return (v->thi[j] - v->tlo[j]) * cos(x) / 2.0;
    case VAR_LOWER: return x / sqrt(x * x + 1.0);
    case VAR_UPPER: return -x / sqrt(x * x + 1.0);
    default: return 1.0;
    }
}

void fit_x_start(const fit_vars *v, double *x)
{
    memcpy(x, v->x0, sizeof *x * (size_t)v->n_free);
}

void fit_vars_setup(fit_vars *v, int minuit)
{
    v->n_free = 0;
    v->bounded = 0;
    for (int i = 0; i < v->P; i++) {
        if (v->fixed[i])
            continue;
        int j = v->n_free++;
        double lo = v->lo[i], hi = v->hi[i];
        v->free_idx[j] = i;
        if (v->logscale[i]) {
            v->tlo[j] = lo > 0 ? log(lo) : -INFINITY;
            v->thi[j] = isfinite(hi) ? log(hi) : INFINITY;
        } else {
            v->tlo[j] = lo;
            v->thi[j] = hi;
        }
        int l = isfinite(v->tlo[j]), h = isfinite(v->thi[j]);
        v->bounded |= l || h;
        v->map[j] = !minuit ? VAR_PLAIN : l && h ? VAR_SIN : l ? VAR_LOWER : h ? VAR_UPPER : VAR_PLAIN;
    }
    fit_x_setup(v);
}

void fit_x_setup(fit_vars *v)
{
    double *x = v->x0;
    for (int j = 0; j < v->n_free; j++) {
        int i = v->free_idx[j];
        double th = v->logscale[i] ? log(v->start[i]) : v->start[i], lo = v->tlo[j], hi = v->thi[j];
        switch (v->map[j]) {
        case VAR_SIN: x[j] = asin(fmax(-1.0, fmin(1.0, 2.0 * (th - lo) / (hi - lo) - 1.0))); break;
        case VAR_LOWER: x[j] = sqrt(fmax(0.0, (th - lo + 1.0) * (th - lo + 1.0) - 1.0)); break;
        case VAR_UPPER: x[j] = sqrt(fmax(0.0, (hi - th + 1.0) * (hi - th + 1.0) - 1.0)); break;
        default: x[j] = th; break;
        }
    }
}

void fit_x_to_p(const fit_vars *v, const double *x, double *p)
{
    memcpy(p, v->start, sizeof *p * (size_t)v->P);
    for (int j = 0; j < v->n_free; j++) {
        int i = v->free_idx[j];
        if (x[j] == v->x0[j])
            continue; /* the start itself, not exp(log(start)) one ulp away */
        double th = theta_of(v, j, x[j]);
        p[i] = v->logscale[i] ? exp(th) : th;
        /* the transform is exact in theta; keep p inside the natural box when
         * rounding in exp() would step over it */
        p[i] = fmin(fmax(p[i], v->lo[i]), v->hi[i]);
    }
}

double fit_dp_dx(const fit_vars *v, const double *x, const double *p, int j)
{
    int i = v->free_idx[j];
    return (v->logscale[i] ? p[i] : 1.0) * dtheta_dx(v, j, x[j]);
}

void fit_grad_to_x(const fit_vars *v, const double *x, const double *p, const double *gp, double *gx)
{
    for (int j = 0; j < v->n_free; j++)
        gx[j] = gp[v->free_idx[j]] * fit_dp_dx(v, x, p, j);
}

/* ---- random starts (multistart.c; the rules in vars.h) ---- */

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double uniform01(uint64_t *s) { return (double)(splitmix64(s) >> 11) * 0x1.0p-53; }

void fit_vars_draw_start(fit_vars *v, const double *declared, uint64_t *rng)
{
    for (int j = 0; j < v->n_free; j++) {
        int i = v->free_idx[j];
        double lo = v->lo[i], hi = v->hi[i], d = declared[i], u = uniform01(rng), p;
        if (v->logscale[i]) {
            double a, b;
            if (lo > 0 && isfinite(hi)) {
                a = lo;
                b = hi;
            } else if (isfinite(hi)) {
                a = fmin(hi * 1e-6, d / 10);
                b = hi;
            } else {
                a = fmax(lo, d / 10);
                b = d * 10;
            }
            p = exp(log(a) + u * (log(b) - log(a)));
        } else {
            double w = fmax(fabs(d), 1.0), a = isfinite(lo) ? lo : d - w, b = isfinite(hi) ? hi : d + w;
            p = a + u * (b - a);
        }
        v->start[i] = fmin(fmax(p, lo), hi);
    }
    fit_x_setup(v);
}

/*
 * vars.h (internal) — the variable transforms between an optimizer's
 * variables x (n_free of them) and the natural parameters p (P): fixed
 * parameters keep their start values, the others go x -> theta (plain, or
 * for bounded LM and BFGS the MINUIT transform into [tlo, thi]) -> p
 * (exp(theta) on the log scale, theta on the linear one). vars.c.
 *
 * Layer 1 of fit/'s chain (docs/DESIGN.md): includes no other fit/ header.
 */
#ifndef REMAT_MODELS_FIT_VARS_H
#define REMAT_MODELS_FIT_VARS_H

#include <stdint.h>

/* How an optimizer variable x maps to theta (and theta to p). */
typedef enum {
    VAR_PLAIN = 0, /* theta = x */
    VAR_SIN,       /* theta = lo + (hi - lo)(sin x + 1)/2 */
    VAR_LOWER,     /* theta = lo - 1 + sqrt(x^2 + 1) */
    VAR_UPPER      /* theta = hi + 1 - sqrt(x^2 + 1) */
} fit_var_map;

typedef struct {
    int P;
    double *start;    /* [P] natural */
    double *lo, *hi;  /* [P] natural bounds */
    int *logscale;    /* [P] */
    int *fixed;       /* [P] */
    int n_free;
    int *free_idx;    /* [n_free] -> parameter index */
    double *tlo, *thi; /* [n_free] bounds in theta (+-INFINITY: none) */
    fit_var_map *map; /* [n_free] (LM and BFGS with bounds; else VAR_PLAIN) */
    double *x0;       /* [n_free] the start in x (maps back to start exactly) */
    int bounded;      /* some bound is finite in theta */
} fit_vars;

/* From P, start, lo, hi, logscale and fixed: the free set, the bounds in
 * theta, bounded, the map (the MINUIT transform of each bounded variable
 * when minuit, else VAR_PLAIN) and x0. Every array has room for P. */
void fit_vars_setup(fit_vars *v, int minuit);
void fit_x_setup(fit_vars *v); /* recomputes x0 from start (a new start, same map) */
void fit_x_start(const fit_vars *v, double *x);
void fit_x_to_p(const fit_vars *v, const double *x, double *p);
/* dp_i/dx_j for free parameter j (i = free_idx[j]) at x, p = fit_x_to_p(x). */
double fit_dp_dx(const fit_vars *v, const double *x, const double *p, int j);
/* gx[j] = dF/dp[free_idx[j]] * dp/dx_j */
void fit_grad_to_x(const fit_vars *v, const double *x, const double *p, const double *gp, double *gx);
/* A random start into v->start (and x0), per free parameter from the
 * declared values, drawn with splitmix64 (Steele, Lea & Flood 2014) from
 * *rng (the same rules as bench/bench_battery.c):
 *   log scale   log-uniform in [lo, hi] when both are positive and finite;
 *               in [min(hi 1e-6, start/10), hi] when lo is 0 (or none) and
 *               hi finite; in [max(lo, start/10), start 10] when hi is
 *               infinite;
 *   linear      uniform in [lo, hi], an infinite end replaced by
 *               start -+ max(|start|, 1).
 * Fixed parameters keep their values. */
void fit_vars_draw_start(fit_vars *v, const double *declared, uint64_t *rng);

#endif

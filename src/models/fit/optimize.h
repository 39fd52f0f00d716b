/*
 * optimize.h (internal) — one run of an optimizer on an objective
 * (objective.h) through the variable transforms (vars.h): the run's state,
 * the steps every driver takes the same way (run.c: evaluating at x,
 * recording the history, the stop messages) and the drivers, one library
 * each (opt_lm.c, opt_bfgs.c, opt_nlopt.c, opt_adam.c). The drivers see
 * only this header: no problem, no programs, no ranks, so a test drives
 * each on a fake objective (tests/test_fit_optimizers_fake.c).
 *
 * Layer 2 of fit/'s chain (docs/DESIGN.md): includes objective.h, vars.h.
 */
#ifndef REMAT_MODELS_FIT_OPTIMIZE_H
#define REMAT_MODELS_FIT_OPTIMIZE_H

#include "models/fit/objective.h"
#include "models/fit/vars.h"
#include "remat/fit.h"

typedef struct {
    const fit_objective *obj;
    const fit_vars *vars;
    const char *const *names; /* [P] parameter names, for messages and the progress callback */
    remat_fit_result *res;    /* params [P] allocated by the caller; history grown here */
    int n;                    /* optimizer variables (free parameters) */
    double *p;                /* [P] natural parameters of the last evaluation */
    double *gp;               /* [P] dF/dp scratch */
    int iter;                 /* the iteration being computed (0: the start) */
    double F0;                /* objective at the start */
    double xtol, gtol, ftol;
    int max_iters;
    double lr;                /* Adam's learning rate (0: the default) */
    int lm_more_scaling;      /* LM: Moré's scaling instead of Levenberg's */
    remat_fit_callback progress;
    void *progress_ctx;
    remat_status st;          /* not OK: an evaluation failed or was non-finite; res->message says why */
    int user_stop;            /* the progress callback asked to stop */
    int hist_cap;
} fit_run;

double fit_inf_norm(int n, const double *v);
/* Whether F and g[0..n) are finite; if not, sets run->st = REMAT_ERR_NUMERIC and
 * the message "fit: iteration I: the WHAT is nan at k1=..., ..." (g may be NULL). */
int fit_check_finite(fit_run *run, const char *what, double F, int n, const double *g, const double *p);
/* An evaluation failed with st: records it (message kept) and returns st. */
remat_status fit_fail(fit_run *run, remat_status st);
/* A step before the first evaluation (a driver's memory) done with status
 * local: every evaluator of the objective learns whether every one's was
 * (fit_obj_agree); a failure is fit_fail'ed. */
remat_status fit_ready(fit_run *run, remat_status local);
/* After iteration run->iter: history, progress callback (may set user_stop). */
remat_status fit_record(fit_run *run, double F, double gnorm, const double *p);
/* Final point and message ("converged: ..." / "stopped: ..."). */
void fit_finish(fit_run *run, int converged, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* F and gx = dF/dx at x (run->p gets p(x)): 1 when the evaluation ran and F
 * and gx are finite, else 0 with run->st and the message saying why. */
int fit_eval_grad_x(fit_run *run, const double *x, double *F, double *gx);
/* The same at a trial point of a line search: -1, with nothing reported,
 * when F or gx is not finite (the caller rejects the point). */
int fit_eval_grad_x_trial(fit_run *run, const double *x, double *F, double *gx);
/* The objective a line search is told at a rejected trial point: far above
 * every finite value seen from the start F0, finite so that its
 * interpolation stays finite, and the step backs off. */
double fit_reject_value(double F0);
/* fit_record at p(x) (run->p gets it). */
remat_status fit_record_x(fit_run *run, double F, double gnorm, const double *x);
/* Iteration 0 at x: F0 = F, recorded. Returns 1 when the run is over there (a
 * failure, or a zero gradient: finished as converged), else 0. */
int fit_record_start(fit_run *run, double F, double gnorm, const double *x);
/* Before iteration it: run->iter = it and 1, or 0 with the run finished
 * ("stopped: max_iters") when it is past max_iters. */
int fit_iteration_begin(fit_run *run, int it, double F);
/* GSL's step test: |dx_j| <= xtol (xtol + |x_j|) for every variable j. */
int fit_step_below_xtol(const fit_run *run, const double *x, const double *dx);
/* A GSL call returned gsl_status: fit_fail with GSL's reason. */
remat_status fit_fail_gsl(fit_run *run, int gsl_status);
/* GSL's error handler off between begin and end (statuses instead of abort),
 * counted across threads: nested and concurrent fits keep it off until the
 * last one ends, which restores the caller's handler. */
void fit_gsl_quiet_begin(void);
void fit_gsl_quiet_end(void);

/* opt_*.c: each runs from fit_x_start and calls fit_record per iteration,
 * fit_finish at the end; returns run->st (REMAT_OK unless an error stopped it). */
remat_status fit_opt_lm(fit_run *run);
remat_status fit_opt_bfgs(fit_run *run);
remat_status fit_opt_nlopt(fit_run *run);
remat_status fit_opt_adam(fit_run *run);

#endif

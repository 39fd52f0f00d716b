/*
 * fit_impl.h (internal) — the fitting problem shared by the optimizer drivers.
 *
 * problem.c owns the data and sets the problem up, programs.c builds and
 * compiles its graphs, evaluate.c runs them in the natural scale (params p,
 * gradient dF/dp; jacobian.c the Jacobian dr/dp). vars.c maps
 * the optimizer's variables x to p (log scale, fixed parameters, the LM bound
 * transform) and keeps the history; opt_*.c drive one library each.
 */
#ifndef REMAT_MODELS_FIT_IMPL_H
#define REMAT_MODELS_FIT_IMPL_H

#include <stdbool.h>

#include "remat/dist.h"
#include "remat/exec.h"
#include "remat/fit.h"

typedef struct {
    const remat_dataset *d;
    int cls;         /* its program class (fit->cls) */
    int64_t rows;    /* K: every data row is an output time */
    double *y0;      /* [S] */
    double *target;  /* [K][S], 0 where not measured */
    double *mask;    /* [K][S], 1 measured, 0 not (or row 0 when it is the initial state) */
    int64_t n_meas;  /* N_e */
    int64_t *meas;   /* [N_e] cells r*S+s, ascending */
    double *r_full;  /* [K][S] residual output buffer */
    double *ct;      /* [K][S] cotangent input buffer (VJP) */
    double *dp;      /* [P] parameter cotangent output buffer (VJP) */
    double *dr;      /* [K][S] residual tangent output buffer (JVP) */
} fit_exp;

/* Experiments that share compiled programs: with adaptive stepping every
 * experiment of K rows (its initial state, times, data and mask are inputs
 * of the programs, the times reached by dense output), with fixed steps each
 * experiment alone (its step grid is built from its times). Each program
 * takes (p, y0, ts, target, mask) and one experiment's outputs. */
typedef struct {
    int64_t rows;           /* K */
    int first;              /* its first experiment (fixed steps: the one) */
    int n_local;            /* its experiments this process evaluates */
    remat_fn *res_fn;       /* (p, y0, ts, tgt, msk) -> r (K*S,), kept to build the JVP */
    remat_program *res;     /* -> r */
    remat_program *vg;      /* -> (F_e, dF_e/dp)                       gradient methods */
    remat_program *vjp;     /* (..., ct) -> (r, dp)                    reverse J */
    remat_program *jvp;     /* (..., t_p) -> (r, dr)                   forward J */
} fit_class;

/* How an optimizer variable x maps to theta (and theta to p). */
typedef enum {
    VAR_PLAIN = 0, /* theta = x */
    VAR_SIN,       /* theta = lo + (hi - lo)(sin x + 1)/2 */
    VAR_LOWER,     /* theta = lo - 1 + sqrt(x^2 + 1) */
    VAR_UPPER      /* theta = hi + 1 - sqrt(x^2 + 1) */
} fit_var_map;

struct remat_fit {
    const remat_mechanism *m;
    int S, P, E;
    fit_exp *exp;
    remat_fit_options opt;      /* copied; the pointer fields are NULLed, copies below */
    remat_fit_optimizer optimizer; /* resolved: never AUTO */
    int bounded;                /* some bound is finite in theta */
    char **names;               /* [P] */
    double *start;              /* [P] natural */
    double *lo, *hi;            /* [P] natural bounds */
    int *logscale;              /* [P] */
    int *fixed;                 /* [P] */
    int n_free;
    int *free_idx;              /* [n_free] -> parameter index */
    double *tlo, *thi;          /* [n_free] bounds in theta (+-INFINITY: none) */
    fit_var_map *map;           /* [n_free] (LM and BFGS with bounds; else VAR_PLAIN) */
    double *x0;                 /* [n_free] the start in x (maps back to start exactly) */
    int64_t n_res;              /* N = sum N_e */
    int64_t max_meas;           /* max_e N_e: VJP runs per Jacobian */
    double dt;                  /* ode dt (0: steps) */
    int64_t steps;
    double finest_h;            /* smallest step the grid takes */
    int64_t longest_scan;       /* most steps in one interval */
    remat_schedule_spec spec;   /* the schedule every interval scan uses */
    int n_cls;
    fit_class *cls;             /* [n_cls] the programs, shared by experiments */
    remat_fit_jacobian jac_mode; /* resolved: FORWARD or REVERSE */
    bool jac_ready;             /* jac_mode's program compiled (fit_jacobian_compile) */
    double *tan;                /* [P] the tangent input (a basis vector) */
    double *grad_p;             /* [P] */
    double *pbuf;               /* [P] scratch natural params */
    int64_t evals;
    /* many processes (spread.c): the experiments this process evaluates */
    remat_dist *group;          /* the evaluation group: opt.dist when experiments are
                                   spread, NULL (alone) when starts are or without dist */
    bool per_experiment_sum;    /* opt.dist given: F and dF/dp are per-experiment values
                                   summed in experiment order (remat_dist_sum) */
    bool spread_starts;         /* starts spread over opt.dist's ranks, each evaluating
                                   every experiment */
    int *owner;                 /* [E] the rank evaluating each experiment */
    int n_local;
    int *local;                 /* [n_local] its experiments, ascending */
    int64_t local_res;          /* their measured cells */
    int64_t local_max_meas;     /* their largest N_e: VJP runs per Jacobian here */
    double *rloc;               /* [local_res] their compact residuals (spread only) */
    double *rall;               /* [N] all residuals when the caller wants F only */
    double *jloc;               /* [local_res][P] their Jacobian rows (spread only) */
    int64_t *len;               /* [E] gather lengths */
    double *items;              /* [n_local][1 + P] per-experiment (F_e, dF_e/dp) */
};

/* problem.c */
remat_status fit_problem_init(struct remat_fit *fit, remat_dataset *const *data);
void fit_problem_release(struct remat_fit *fit);

/* programs.c: the classes and their programs */
/* Sorts the experiments into classes (after the experiments are prepared). */
remat_status fit_classes_init(struct remat_fit *fit);
void fit_classes_release(struct remat_fit *fit);
typedef enum { FIT_PROG_RES, FIT_PROG_VG, FIT_PROG_VJP, FIT_PROG_JVP } fit_prog;
/* Compiles program kind of every class with a local experiment (kept ones
 * stay). */
remat_status fit_compile_classes(struct remat_fit *fit, fit_prog kind);
/* The inputs (p, y0, ts, target, mask[, extra]) of experiment e's programs
 * into in[0..5] (extra NULL: 5 inputs). */
int fit_inputs(const struct remat_fit *fit, int e, const double *p, double *extra, int64_t n_extra,
               remat_tensor *in);
/* fit->spec: opt.scan.schedule, or the one opt.memory_budget picks (a
 * collective with a group: rank 0 probes and broadcasts). */
remat_status fit_pick_schedule(struct remat_fit *fit);

/* evaluate.c */
/* F(p) and, when r is non-NULL, the N compact residuals. */
remat_status fit_eval_residuals(struct remat_fit *fit, const double *p, double *F, double *r);
/* F(p) and dF/dp (P). */
remat_status fit_eval_grad(struct remat_fit *fit, const double *p, double *F, double *grad);
remat_tensor fit_vec(double *data, int64_t n);

/* jacobian.c */
/* The mode opt.jacobian asks for, AUTO resolved: forward when n_free < max_meas. */
remat_fit_jacobian fit_jacobian_resolve(const struct remat_fit *fit);
/* Compiles jac_mode's program unless it is there. */
remat_status fit_jacobian_compile(struct remat_fit *fit);
/* J = dr/dp, N x P row-major (natural scale), by jac_mode (compiled on first
 * use). Forward mode fills the free parameters' columns only, leaving the
 * fixed ones' as they were; callers read free columns. */
remat_status fit_eval_jacobian(struct remat_fit *fit, const double *p, double *J);

/* ---- one run of an optimizer (fit.c) ---- */
typedef struct {
    struct remat_fit *fit;
    remat_fit_result *res;
    int n;              /* optimizer variables (free parameters) */
    double *p;          /* [P] natural parameters of the last evaluation */
    double *gp;         /* [P] dF/dp scratch */
    int iter;           /* the iteration being computed (0: the start) */
    double F0;          /* objective at the start */
    double xtol, gtol, ftol;
    int max_iters;
    remat_status st;    /* not OK: an evaluation failed or was non-finite; res->message says why */
    int user_stop;      /* the progress callback asked to stop */
    int hist_cap;
} fit_run;

/* vars.c: x (optimizer variables) <-> p (natural parameters) */
void fit_x_setup(struct remat_fit *fit); /* computes x0 once the map is known */
void fit_x_start(const struct remat_fit *fit, double *x);
void fit_x_to_p(const struct remat_fit *fit, const double *x, double *p);
/* dp_i/dx_j for free parameter j (i = free_idx[j]) at x, p = fit_x_to_p(x). */
double fit_dp_dx(const struct remat_fit *fit, const double *x, const double *p, int j);
/* gx[j] = dF/dp[free_idx[j]] * dp/dx_j */
void fit_grad_to_x(const struct remat_fit *fit, const double *x, const double *p, const double *gp, double *gx);
double fit_inf_norm(int n, const double *v);
/* Whether F and g[0..n) are finite; if not, sets run->st = REMAT_ERR_NUMERIC and
 * the message "fit: iteration I: the WHAT is nan at k1=..., ..." (g may be NULL). */
int fit_check_finite(fit_run *run, const char *what, double F, int n, const double *g, const double *p);
/* An evaluation failed with st: records it (message kept) and returns st. */
remat_status fit_fail(fit_run *run, remat_status st);
/* After iteration run->iter: history, progress callback (may set user_stop). */
remat_status fit_record(fit_run *run, double F, double gnorm, const double *p);
/* Final point and message ("converged: ..." / "stopped: ..."). */
void fit_finish(fit_run *run, int converged, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The steps the drivers share (vars.c). */
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

/* fit.c: one run of the optimizer from fit->start (x0); multistart.c's
 * remat_fit_run calls it once per start. */
remat_status fit_run_single(struct remat_fit *fit, remat_fit_result *result);

/* opt_*.c: each runs from fit_x_start and calls fit_record per iteration,
 * fit_finish at the end; returns run->st (REMAT_OK unless an error stopped it). */
remat_status fit_opt_lm(fit_run *run);
remat_status fit_opt_bfgs(fit_run *run);
remat_status fit_opt_nlopt(fit_run *run);
remat_status fit_opt_adam(fit_run *run);

/* spread.c: the seam to remat/dist.h (models/ include no MPI header) */
/* After the experiments are prepared: which process evaluates which
 * experiment (all of them without opt.dist, or when starts are spread). */
remat_status fit_spread_setup(struct remat_fit *fit);
void fit_spread_release(struct remat_fit *fit);
/* Every process's local status agreed (remat_dist_agree), then the local
 * compact residuals rloc gathered into r (N, experiment order). Alone: r
 * already holds them (rloc is r). */
remat_status fit_spread_residuals(struct remat_fit *fit, remat_status local, double *r);
/* The same for Jacobian rows: jloc into J (N x P). */
remat_status fit_spread_jacobian(struct remat_fit *fit, remat_status local, double *J);
/* F = sum_e F_e, grad = sum_e dF_e/dp from `items`, in experiment order. */
remat_status fit_spread_objective(struct remat_fit *fit, remat_status local, double *F, double *grad);
/* A step before the first evaluation (a driver's memory) done with status
 * local on this rank: with a group, every rank learns whether every rank's
 * was, before the evaluations' collectives; a failure is fit_fail'ed. */
remat_status fit_spread_ready(fit_run *run, remat_status local);
/* multistart.c: start k's rank (every start on this one without spreading) */
int fit_spread_start_owner(const struct remat_fit *fit, int n_starts, int k);
/* After every rank ran its starts (local: a start's error other than
 * NaN/Inf, which stopped this rank's): agrees on local, gathers objs[k]
 * (NaN: failed) and evals[k] of every start, and broadcasts the best start's
 * result into *best (*have_best = 1) or, when every start failed, start 0's
 * into *failed, from the rank that ran it (which passed it as best_k /
 * failed_k, its own best and first failed start). */
remat_status fit_spread_starts(struct remat_fit *fit, int n_starts, double *objs, int64_t *evals,
                               remat_status local, int best_k, remat_fit_result *best, int failed_k,
                               remat_fit_result *failed, int *have_best);
/* fit.c: "lm", "bfgs", "lbfgs-b" or "adam" */
const char *fit_driver_name(const struct remat_fit *fit);

/* the integration options of experiment x (problem.c) */
remat_ode_options fit_ode_options(const struct remat_fit *fit, const fit_exp *x);

#endif

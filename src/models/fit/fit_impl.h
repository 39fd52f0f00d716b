/*
 * fit_impl.h (internal) — the fitting problem: layer 3 of fit/'s chain
 * (docs/DESIGN.md, "fit/ as a chain"), above the objective interface
 * (objective.h), the variable transforms (vars.h) and the optimizers
 * (optimize.h), which never include it.
 *
 * problem.c owns the data and sets the problem up, programs.c builds and
 * compiles its graphs, evaluate.c and jacobian.c run them over this rank's
 * experiments in the natural scale (the local residuals, dF/dp, rows of
 * dr/dp). spread.c wraps those local evaluations into the objective the
 * optimizers see (fit->obj), gathering over ranks: it is the one file that
 * calls remat/dist.h. fit.c and multistart.c are the public API's runs.
 */
#ifndef REMAT_MODELS_FIT_IMPL_H
#define REMAT_MODELS_FIT_IMPL_H

#include <stdbool.h>

#include "remat/dist.h"
#include "remat/exec.h"
#include "models/fit/objective.h"
#include "models/fit/optimize.h"
#include "models/fit/vars.h"
#include "remat/fit.h"

typedef struct {
    const remat_dataset *d;
    int cls;         /* its program class (fit->cls) */
    int64_t rows;    /* K: every data row is an output time */
    double *nsteps;  /* [K] fixed steps (fit_exp_rows): each data interval's step count
                        (remat_ode_count_steps), an input of the row scan
                        (remat_ode_integrate_rows); NULL: adaptive */
    double *y0;      /* [S] */
    double *cond;    /* [CI] this experiment's conditions: its file's, else opt.conds', else the
                        defaults; then, with iP >= 0, its pressure (its file's, else P's start) */
    double *target;  /* [K][S], 0 where not measured */
    double *mask;    /* [K][S], 1 measured, 0 not (or row 0 when it is the initial state) */
    int64_t n_meas;  /* N_e */
    int64_t *meas;   /* [N_e] cells r*S+s, ascending */
    double *r_full;  /* [K][S] residual output buffer */
    double *ct;      /* [K][S] cotangent input buffer (VJP) */
    double *dp;      /* [P] parameter cotangent output buffer (VJP) */
    double *dr;      /* [K][S] residual tangent output buffer (JVP) */
    /* an ignition-delay experiment (delay.c): its one row is the delay, measured in T's cell */
    bool delay;
    bool located;    /* tau_hat and slope are those at located_p */
    double tau_hat;  /* the crossing the host found (NaN: none) */
    double slope;    /* dT/dt there (the secant over 1e-6 of the horizon) */
    double *located_p; /* [P] */
} fit_exp;

/* Fixed steps (--dt, the default dt or --steps), whatever the adjoint:
 * every experiment is one scan over its rows whose body steps to the next
 * row (remat_ode_integrate_rows: the steps of remat_ode_integrate's
 * per-interval grid, a step ending at every row, the times and step counts
 * inputs), O(steps + rows) in time and memory. With a continuous adjoint
 * (backsolve, interpolating) the scan is its forward, its op taking the
 * times and step counts as inputs too: experiments of one row count share
 * their programs as with the discrete adjoint. */
bool fit_rows_scan(const struct remat_fit *fit);
/* This experiment takes that scan (plan_grid counted its steps) */
bool fit_exp_rows(const fit_exp *x);

/* Experiments that share compiled programs: with adaptive stepping every
 * experiment of K rows (its initial state, times, data, mask and conditions
 * are inputs of the programs, the times reached by dense output), with fixed
 * steps and the discrete adjoint every experiment of K rows (fit_exp_rows:
 * its step counts are an input too), with a continuous adjoint each
 * experiment alone (its step grid is built from its times). Each program
 * takes (p, y0, ts, target, mask[, nsteps][, conds]) and one experiment's
 * outputs. */
typedef struct {
    int64_t rows;           /* K */
    int first;              /* its first experiment (fixed steps: the one) */
    int n_local;            /* its experiments this process evaluates */
    bool delay;             /* ignition-delay experiments (delay.c): one more input, the slope */
    remat_program *locate;  /* delay: (p, y0, ts[1000][, conds]) -> ys, the host's search */
    remat_fn *res_fn;       /* (p, y0, ts, tgt, msk[, conds]) -> r (K*S,), kept to build the JVP */
    remat_program *res;     /* -> r */
    remat_program *vg;      /* -> (F_e, dF_e/dp)                       gradient methods */
    remat_program *vjp;     /* (..., ct) -> (r, dp)                    reverse J */
    remat_program *jvp;     /* (..., t_p) -> (r, dr)                   forward J */
} fit_class;

/* remat_fit_predict's programs, one per number of times and (fixed steps,
 * the row scan) most steps of an interval (evaluate.c) */
#define FIT_PREDICT_SLOTS 4
typedef struct {
    int n;
    int64_t steps; /* the row scan's most steps of an interval; 0: adaptive */
    remat_program *prog;
} fit_predict_slot;

struct remat_fit {
    const remat_mechanism *m;
    int S, P, E;
    int C;                      /* the mechanism's conditions */
    int iP;                     /* a gas mechanism with P fixed: P's index, which each experiment
                                   sets (its file's '# P', else P's start; remat/fit.h); else -1 */
    int CI;                     /* the programs' condition inputs: C, + 1 with iP >= 0 */
    double *cond_default;       /* [C] opt.conds (copied) or the declared values */
    double *knots;              /* [nknots] adaptive: the control profiles' knots, where steps end */
    int nknots;
    fit_exp *exp;
    remat_fit_options opt;      /* copied; the pointer fields are NULLed, copies below */
    remat_fit_optimizer optimizer; /* resolved: never AUTO */
    char **names;               /* [P] */
    fit_vars vars;              /* start, bounds, scales, the free set and their transforms */
    fit_objective obj;          /* the objective the optimizers see (spread.c) */
    int64_t n_res;              /* N = sum N_e */
    int64_t max_meas;           /* max_e N_e: VJP runs per Jacobian */
    double dt;                  /* ode dt (0: steps) */
    int64_t steps;
    double finest_h;            /* smallest step the grid takes */
    int64_t longest_scan;       /* most steps in one interval */
    int64_t most_rows;          /* most rows of an experiment: the row scan's longest (fit_rows_scan) */
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
    fit_predict_slot predict[FIT_PREDICT_SLOTS]; /* remat_fit_predict's, kept */
    int predict_next;           /* the slot the next length takes */
    int64_t predict_builds;     /* programs it compiled (remat_fit_predict_builds) */
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
/* The inputs (p, y0, ts, target, mask[, conds when C > 0][, extra]) of
 * experiment e's programs into in[] (at most 8; a delay experiment's slope after the conds,
 * located at p first); returns their count. */
int fit_inputs(const struct remat_fit *fit, int e, const double *p, double *extra, int64_t n_extra,
               remat_tensor *in);
/* fn compiled with opt.compile (NULL: the environment's, remat_compile_env). */
remat_status fit_compile(const struct remat_fit *fit, const remat_fn *fn, remat_program **out);

/* delay.c: experiment e's model ignition delay on this process (UNSUPPORTED: another's) */
remat_status fit_delay_eval(struct remat_fit *fit, int e, const double *params, double *tau);

/* evaluate.c: remat_fit_predict's kept programs freed */
void fit_predict_release(struct remat_fit *fit);
/* evaluate.c: this rank's experiments (fit->local) */
/* Their compact residuals into mine (local_res). */
remat_status fit_local_residuals(struct remat_fit *fit, const double *p, double *mine);
/* (F_e, dF_e/dp) of each into fit->items. */
remat_status fit_local_objectives(struct remat_fit *fit, const double *p);
/* F and dF/dp summed over them (the vg program of every experiment). */
remat_status fit_local_grad(struct remat_fit *fit, const double *p, double *F, double *grad);
/* Why F is not finite at p when the problem can say (a rate, an adaptive
 * integration's statistics), else NULL. */
const char *fit_explain_nonfinite(struct remat_fit *fit, const double *p);
remat_tensor fit_vec(double *data, int64_t n);

/* jacobian.c */
/* The mode opt.jacobian asks for, AUTO resolved: forward when n_free < max_meas. */
remat_fit_jacobian fit_jacobian_resolve(const struct remat_fit *fit);
/* This rank's program for Jacobian mode `mode` (FORWARD: the JVP, REVERSE:
 * the VJP), unless it is there. */
remat_status fit_jacobian_compile_local(struct remat_fit *fit, remat_fit_jacobian mode);
/* This rank's rows of J = dr/dp (local_res x P) by jac_mode, compiled.
 * Forward mode fills the free parameters' columns only. */
remat_status fit_local_jacobian(struct remat_fit *fit, const double *p, double *J);

/* programs.c: the store-all probe of memory_budget's schedule (rank 0's) */
remat_status fit_schedule_probe(struct remat_fit *fit);

/* spread.c: the objective over ranks, and every agreement between them */
/* After the experiments are prepared: which process evaluates which
 * experiment (all of them without opt.dist, or when starts are spread),
 * and fit->obj. */
remat_status fit_spread_setup(struct remat_fit *fit);
void fit_spread_release(struct remat_fit *fit);
/* Every rank of d goes on, or none: the status they agree on (st when d
 * is NULL). */
remat_status fit_agree(remat_dist *d, remat_status st);
/* fit->spec: opt.scan.schedule, or the one opt.memory_budget picks (a
 * collective with a group: rank 0 probes and broadcasts). */
remat_status fit_pick_schedule(struct remat_fit *fit);
/* Compiles jac_mode's program on every rank (agreed); an op without a JVP
 * rule falls back to reverse when the mode was the fit's own pick. */
remat_status fit_jacobian_compile(struct remat_fit *fit);
/* Whether start k of n_starts runs on this rank (every start without spreading). */
int fit_spread_owns_start(const struct remat_fit *fit, int n_starts, int k);
/* spread starts: every rank gets each start's message (msgs[n], NULL: none)
 * from the rank that ran it; collective */
remat_status fit_spread_gather_messages(struct remat_fit *fit, int n, char **msgs);
/* After every rank ran its starts (local: a start's error other than
 * NaN/Inf, which stopped this rank's): agrees on local, gathers objs[k]
 * (NaN: failed) and evals[k] of every start, and broadcasts the best start's
 * result into *best (*have_best = 1) or, when every start failed, start 0's
 * into *failed, from the rank that ran it (which passed it as best_k /
 * failed_k, its own best and first failed start). */
remat_status fit_spread_starts(struct remat_fit *fit, int n_starts, double *objs, int64_t *evals,
                               remat_status local, int best_k, remat_fit_result *best, int failed_k,
                               remat_fit_result *failed, int *have_best);

/* fit.c: one run of the optimizer from fit->vars.start (x0); multistart.c's
 * remat_fit_run calls it once per start. */
remat_status fit_run_single(struct remat_fit *fit, remat_fit_result *result);
/* "lm", "bfgs", "lbfgs-b" or "adam" */
const char *fit_driver_name(const struct remat_fit *fit);

/* The rates' inputs in a graph from p (P) and the experiment's condition
 * input cond (CI; REMAT_NONE when CI is 0): p with P[iP] replaced by the
 * experiment's pressure, then the conditions; and the same as numbers
 * into in[P + C] (problem.c). */
remat_val fit_rate_inputs(const struct remat_fit *fit, remat_fn *f, remat_val p, remat_val cond);
void fit_rate_input_values(const struct remat_fit *fit, const fit_exp *x, const double *p, double *in);

/* delay.c: ignition-delay experiments */
/* Whether d is one: a gas mechanism's file whose first column is "tau". */
int fit_delay_is(const remat_mechanism *m, const remat_dataset *d);
/* The time by which x's search for T0 + rise ends: t0 + REMAT_FIT_DELAY_HORIZON (tau - t0). */
double fit_delay_horizon(const struct remat_fit *fit, const fit_exp *x);
/* The delay's (1, S) rows from ys = y at ts = (tau_hat,) and slope (1,):
 * tau_hat - (T - T0 - rise) / slope in every column (the mask keeps T's). */
remat_val fit_delay_graph(const struct remat_fit *fit, remat_fn *f, remat_val y0, remat_val ys, remat_val ts,
                          remat_val slope);
/* The search programs of the delay classes with a local experiment. */
remat_status fit_delay_compile(struct remat_fit *fit);
/* tau_hat and slope of experiment e at p (kept while p does not change). */
remat_status fit_delay_locate(struct remat_fit *fit, int e, const double *p);

/* the integration options of experiment x (problem.c) */
remat_ode_options fit_ode_options(const struct remat_fit *fit, const fit_exp *x);

#endif

/*
 * remat/pfr.h — a plug-flow reactor: a mechanism's ODE integrated along the
 * reactor, with its outlet, its axial profile, the gradient of an outlet
 * objective with respect to the mechanism's parameters, and Adam or bounded
 * quasi-Newton (remat_pfr_minimize) on that
 * objective (the `remat pfr simulate|optimize` commands).
 *
 * The axial coordinate z runs from 0 (inlet) to L (outlet); it is the
 * mechanism's independent variable (remat/mechanism.h: "indep z"), so a rate
 * may read it. The integration is remat/ode.h's: fixed steps of one method,
 * one scan, differentiated through the scan's checkpoint schedule.
 *
 *   remat_mechanism *m;
 *   remat_mechanism_parse_string(remat_pfr_seed()->mechanism, NULL, &m);
 *   remat_pfr_options o = {
 *       .method = REMAT_ODE_EULER, .length = 10.0, .steps = 1000,
 *       .inlet = (double[]){1, 0, 0},
 *       .goal = REMAT_PFR_MAXIMIZE, .species = remat_mechanism_species_find(m, "B"),
 *       .schedule = {.kind = REMAT_SCHED_BINOMIAL, .snapshots = 10},
 *   };
 *   remat_pfr *r;
 *   if (remat_pfr_new(m, &o, &r) != REMAT_OK) puts(remat_last_error());
 *   double k[2] = {1.0, 0.5}, out[3], loss, grad[2];
 *   remat_pfr_outlet(r, k, out);              // {0.000043, 0.013222, 0.986735}
 *   remat_pfr_objective(r, k, &loss, grad);   // -C_B = -0.013222, {0.012349, 0.107305}
 *   remat_pfr_free(r);
 *   remat_mechanism_free(m);
 *
 * The objective is the value a minimiser drives down: -C_s(L) to maximize
 * species s at the outlet, +C_s(L) to minimize it. Programs are compiled on
 * first use and reused, so a remat_pfr is used by one thread at a time.
 * Non-finite concentrations (an integration that blew up: too few steps for
 * the rates) are reported as REMAT_ERR_NUMERIC naming the species and the
 * step size, never returned as numbers.
 *
 * Stability. Before a fixed-step run of an explicit method (euler, rk4, and
 * tsit5 or dopri5 without adaptive) the outlet, profile and objective calls
 * check the step against the method's real stability interval
 * (remat_ode_stability_bound: 2 for Euler, 2.785 for RK4): when the Jacobian
 * d f / d y at the inlet has a real decaying mode lambda, found by power
 * iteration on a finite-difference Jacobian, with h |lambda| more than 5%
 * past the bound, the run is refused with REMAT_ERR_NUMERIC naming the step
 * size, the rate and the steps that would be stable, and suggesting twice
 * that (h |lambda| within half the bound: for Euler, no overshoot below 0).
 * Where the estimate cannot be trusted (rates not smooth at the inlet, a
 * complex or tied fastest mode) or is not cheap (over 512 species) the
 * check is silent, and what such a step does shows as negative
 * concentrations: remat_pfr_negative() finds them, and the remat tool warns
 * (simulate, ensemble, fit) with the species and the position.
 *
 * A rate that cannot be computed (a division by zero, a log of 0) at the
 * inlet or anywhere inside the reactor (k / (z - 5)) is REMAT_ERR_NUMERIC
 * naming the expression (file:line:column) and the z, since no step size
 * helps there.
 */
#ifndef REMAT_PFR_H
#define REMAT_PFR_H

#include <stdbool.h>

#include "export.h"
#include "mechanism.h"
#include "ode.h"
#include "optim.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    REMAT_PFR_NO_GOAL = 0, /* no objective: outlet and profile only */
    REMAT_PFR_MAXIMIZE,    /* objective -C_s(L) */
    REMAT_PFR_MINIMIZE,    /* objective +C_s(L) */
} remat_pfr_goal;

typedef struct {
    remat_ode_method method;
    double length;                /* L > 0, finite */
    int64_t steps;                /* >= 1 equal steps over [0, L] ... */
    double dt;                    /* ... or, with steps = 0, the largest step: ceil(L/dt) steps
                                     (remat_ode_count_steps' rule); giving both is an error */
    const double *inlet;          /* species_count finite concentrations at z = 0 (copied) */
    remat_pfr_goal goal;
    int species;                  /* the objective's species (goal != REMAT_PFR_NO_GOAL) */
    remat_schedule_spec schedule; /* reverse pass of the objective (zero: store-all; adaptive:
                                     the loop's default, online) */
    /* Adaptive stepping (remat/ode.h; method tsit5 or dopri5, steps and dt 0):
     * the outlet is one error-controlled integration over [0, L] whose steps
     * end at the control profiles' knots inside (0, L) (remat_mechanism_control_knots:
     * no step crosses a jump, whose stages would share the gradient between
     * the two values wrongly; objective and stats alike); the profile
     * another, one loop whose dense output (remat/ode.h) gives the
     * profile_points equal intervals (0: 100): rows between steps carry the
     * interpolant's error (a few rtol), and the last row is the outlet to
     * the tolerance, not bit for bit. */
    bool adaptive;
    double rtol, atol;            /* rtol > 0, atol >= 0 */
    int64_t max_steps;            /* attempts per integration (0: 4096) */
    int64_t profile_points;
    /* NULL (the declared defaults) or cond_count values of the mechanism's
     * conditions (remat/mechanism.h "cond"), copied; they are inputs of the
     * rates, never parameters: no gradient, no Adam step. Ensembles take
     * them too. */
    const double *conds;
    /* How the reactor's programs (and an ensemble's) compile
     * (remat_compile_opts: JIT mode, cache, threads, backend); NULL: the
     * environment's, as remat_compile. Borrowed: must outlive the reactor. */
    const remat_compile_options *compile;
    /* How the objective's gradient is taken (remat/ode.h remat_ode_adjoint):
     * the discrete adjoint under `schedule` (the zero value), or backsolve,
     * the continuous adjoint (any method, fixed or adaptive steps; an
     * ensemble is refused by name). */
    remat_ode_adjoint adjoint;
} remat_pfr_options;

typedef struct remat_pfr remat_pfr;

/* Checks the options against m (naming the bad one) and keeps a pointer to m,
 * which must outlive the reactor. Compiles nothing yet. */
REMAT_API remat_status remat_pfr_new(const remat_mechanism *m, const remat_pfr_options *opt, remat_pfr **out);
REMAT_API void remat_pfr_free(remat_pfr *r); /* NULL is a no-op */

/* For a NULL reactor: NULL, -1 and NaN (remat_last_error() set). */
REMAT_API const remat_mechanism *remat_pfr_mechanism(const remat_pfr *r);
REMAT_API int64_t remat_pfr_steps(const remat_pfr *r);    /* steps over [0, L]; adaptive: profile intervals */
REMAT_API double remat_pfr_step_size(const remat_pfr *r); /* L / steps */

/* The outlet integration's stats at params (remat/ode.h: accepted and
 * rejected steps, the z reached, a failure code; fixed steps: the steps). */
REMAT_API remat_status remat_pfr_integration_stats(remat_pfr *r, const double params[], double stats[REMAT_ODE_STATS]);

/* The outlet concentrations (species_count) for params (param_count). */
REMAT_API remat_status remat_pfr_outlet(remat_pfr *r, const double params[], double outlet[]);

/* The axial profile: z[i] = i*h and y[i*S + s] = C_s(z[i]) for i = 0..steps
 * (steps + 1 rows; row 0 is the inlet, the last row equals remat_pfr_outlet
 * bit for bit). z may be NULL. */
REMAT_API remat_status remat_pfr_profile(remat_pfr *r, const double params[], double z[], double y[]);

/* The objective and, unless grad is NULL, its gradient d objective / d params
 * (param_count) through the schedule's reverse pass. REMAT_ERR_ARG without a
 * goal. */
REMAT_API remat_status remat_pfr_objective(remat_pfr *r, const double params[], double *objective, double grad[]);

/* Adam on the objective from params (updated in place), as a JAX loop does it:
 * for i < iters: (objective, grad) at params, then one remat_adam_update
 * (which projects on the options' bounds). Records, when not NULL,
 * conc_before[i] = C_s(L) before update i and params_after[i*P + j] after it;
 * *conc_final = C_s(L) at the final params. A non-finite gradient stops it
 * with REMAT_ERR_NUMERIC naming the iteration. */
REMAT_API remat_status remat_pfr_adam(remat_pfr *r, const remat_adam_options *adam, int64_t iters, double params[],
                                      double conc_before[], double params_after[], double *conc_final);

/* ---- bounded minimisation of the objective (remat pfr optimize) ----
 *
 * A quasi-Newton method on the objective within box bounds, the gradient
 * from remat_pfr_objective's reverse pass:
 *   REMAT_PFR_LBFGSB  NLopt's NLOPT_LD_LBFGS (Nocedal's limited-memory BFGS
 *                     with box constraints, Luksan's code), as the fit's
 *                     lbfgs-b;
 *   REMAT_PFR_SLSQP   NLopt's NLOPT_LD_SLSQP (Kraft 1988): a dense BFGS
 *                     model whose step solves a QP within the bounds, so the
 *                     iterates stay in the box and bound-constrained
 *                     variables leave the step (a projected quasi-Newton).
 * Fixed parameters keep their start; the others are the decision variables.
 *
 * Convergence is tested on the projected gradient g_p (a component at a
 * bound whose descent direction leaves the box counts 0), scaled as Dennis &
 * Schnabel's relative gradient (Numerical Methods for Unconstrained
 * Optimization, 1983, sec. 7.2): max_i |g_p,i| max(|p_i|, 1) /
 * max(|f|, |f_start|, 1e-300) <= gtol; else NLopt's tests on the relative step
 * (xtol) and change of f (ftol); else max_evals. The result says which test
 * held. A trial point where the integration fails (non-finite values, an
 * unstable fixed step) is told a value above every finite one so the line
 * search backs off; only the start must succeed. */
typedef enum {
    REMAT_PFR_LBFGSB = 0,
    REMAT_PFR_SLSQP,
    REMAT_PFR_MINIMIZER_COUNT
} remat_pfr_minimizer;

typedef struct {
    int evaluation;          /* 0: the start */
    double objective;        /* at params */
    double rel_grad;         /* the scaled projected gradient above */
    const double *params;    /* all param_count values */
} remat_pfr_minimize_progress;

typedef struct {
    remat_pfr_minimizer method;
    const double *lo, *hi;   /* NULL, or param_count bounds (lo <= start <= hi) */
    const bool *fixed;       /* NULL, or param_count flags: true = keep the start */
    int max_evals;           /* 0: 500 */
    double gtol;             /* 0: 1e-8 */
    double xtol;             /* 0: 1e-12, relative to |p| (and absolute) */
    double ftol;             /* 0: 1e-15 relative */
    void (*progress)(const remat_pfr_minimize_progress *p, void *ctx); /* NULL, or per evaluation */
    void *progress_ctx;
} remat_pfr_minimize_options;

typedef struct {
    double objective;        /* at the returned params */
    double rel_grad;         /* its scaled projected gradient */
    int evaluations;         /* objective + gradient runs */
    int rejected;            /* trial points whose integration failed */
    int at_bound;            /* decision variables at a bound */
    bool converged;          /* the gradient, step or change test held */
    char message[192];       /* which test stopped it, with the figures */
} remat_pfr_minimize_result;

/* Minimises the objective over the free parameters from params (updated in
 * place to the best point found). REMAT_ERR_ARG without a goal or free
 * parameter; REMAT_ERR_VALUE for bounds that do not hold the start; the
 * start's own integration error as remat_pfr_objective gives it. Stopping
 * without convergence (max_evals) is REMAT_OK with converged false. */
REMAT_API remat_status remat_pfr_minimize(remat_pfr *r, const remat_pfr_minimize_options *opt, double params[],
                                          remat_pfr_minimize_result *result);

/* ---- ensembles: many parameter sets through one reactor ----
 *
 * The outlet and its Jacobian for each of many parameter sets, `lanes` sets
 * per run through one compiled program (each set a lane of the integration's
 * loop). A set gives values to the n_vary parameters vary[] (the others keep
 * base[]); the Jacobian is d C_s(L) / d p_vary[j] for every species s, by
 * forward mode (one loop carrying n_vary tangents, no tape; n_vary <= 64).
 * Fixed steps only (the
 * lanes step together): opt.adaptive is refused; goal and schedule are
 * ignored.  Each lane's outlet is bitwise remat_pfr_outlet's for its set (gas mechanisms,
 * remat/gas.h: to rounding, another lowering); a set
 * whose integration blows up gets non-finite numbers, not an error (an
 * ensemble screens sets; the caller decides).
 *
 *   remat_pfr_ensemble *e;
 *   remat_pfr_ensemble_new(m, &o, 1024, 2, (int[]){0, 1}, (double[]){1, 0.5}, &e);
 *   double sets[2 * 2] = {1, 0.5, 2, 0.25}, out[2 * 3], jac[2 * 3 * 2];
 *   remat_pfr_ensemble_run(e, 2, sets, out, jac); // jac[(i*S + s)*2 + j]
 *   remat_pfr_ensemble_free(e);
 */
typedef struct remat_pfr_ensemble remat_pfr_ensemble;

/* Checks the options as remat_pfr_new does, builds and compiles the program
 * (m must outlive it). lanes in [1, 2^20]; vary: n_vary >= 1 distinct
 * parameter indices; base: param_count finite values. */
REMAT_API remat_status remat_pfr_ensemble_new(const remat_mechanism *m, const remat_pfr_options *opt, int64_t lanes,
                                              int n_vary, const int *vary, const double *base,
                                              remat_pfr_ensemble **out);
REMAT_API void remat_pfr_ensemble_free(remat_pfr_ensemble *e); /* NULL is a no-op */
REMAT_API int64_t remat_pfr_ensemble_lanes(const remat_pfr_ensemble *e); /* NULL: 0 */
/* remat_pfr_negative for n outlets (n x species_count, as
 * remat_pfr_ensemble_run writes them): 1 with the first set and species
 * below zero by more than rounding, else 0 (also for a NULL e or outlet). */
REMAT_API int remat_pfr_ensemble_negative(const remat_pfr_ensemble *e, int64_t n, const double *outlet, int64_t *set,
                                          int *species);

/* The equal steps with which opt's method, fixed, integrates as opt's
 * adaptive stepping does at params (an ensemble's lanes step together, so
 * the `remat pfr ensemble` of a mechanism that `pfr simulate` integrates
 * adaptively takes these): from the adaptive run's accepted steps, doubled
 * until the fixed outlet is within the adaptive tolerance (rtol |y_s| +
 * atol, every species) of the previous doubling's and of the adaptive one.
 * A count whose explicit step is unstable is doubled past. *steps, and unless NULL
 * *adaptive_steps (the adaptive run's accepted steps). opt->adaptive must be
 * set; REMAT_ERR_NUMERIC, saying that equal steps cannot follow the
 * integration's stiff transient, when no count up to 64 times the first
 * (the accepted steps, at least 16; at most 2^22) holds: an ignition's
 * adaptive run takes tiny steps in the transient only, and equal steps that
 * small would be orders of magnitude more. */
REMAT_API remat_status remat_pfr_fixed_steps(const remat_mechanism *m, const remat_pfr_options *opt,
                                             const double params[], int64_t *steps, int64_t *adaptive_steps);

/* n <= lanes sets, sets[i*n_vary + j] the value of parameter vary[j] in set i
 * (finite; else REMAT_ERR_VALUE naming set and parameter): outlet[i*S + s] =
 * C_s(L) and, unless jac is NULL, jac[(i*S + s)*n_vary + j] = d C_s(L) /
 * d p_vary[j]. A run costs one pass of the loop over all lanes, whatever n. */
REMAT_API remat_status remat_pfr_ensemble_run(remat_pfr_ensemble *e, int64_t n, const double *sets, double *outlet,
                                              double *jac);

/* Negative concentrations no rounding explains: the first row i of rows
 * states y (rows x species_count, as remat_pfr_profile writes them; rows = 1
 * for an outlet) with a species s that reactions form or consume and whose
 * inlet is not negative below -tol, where tol = 1e-6 * the largest |inlet|
 * of a concentration (1 when all are 0); adaptive: max(1e-6, rtol) * that
 * largest |inlet| + atol. The concentrations (mole fractions) are a gas
 * mechanism's species and every state a reaction forms or consumes: a
 * temperature state (a gas mechanism's T, a .mech T' = 0) sets no scale.
 * Returns 1 with *row = i, *species = s (either pointer may be NULL), else 0.
 * A species with an ODE line may be negative: it is not looked at. */
REMAT_API int remat_pfr_negative(const remat_pfr *r, int64_t rows, const double *y, int64_t *row, int *species);
/* The same rule for states y (rows x species_count) of m integrated from y0
 * by any integrator (a fit's predictions): tol = max(1e-6, rtol) * the
 * largest |y0| of a concentration (1 when all are 0) + atol; rtol = atol = 0
 * for fixed steps. */
REMAT_API int remat_pfr_negative_states(const remat_mechanism *m, const double *y0, double rtol, double atol,
                                        int64_t rows, const double *y, int64_t *row, int *species);

/* How a species takes part in the mechanism's reactions: "reactant" (only
 * consumed), "product" (only formed), "intermediate" (both), or "" (neither,
 * e.g. a species with an ODE line). For titles such as "maximize intermediate B".
 * A NULL mechanism: NULL. */
REMAT_API const char *remat_pfr_species_role(const remat_mechanism *m, int species);

/* The seed's reactor (seed 004, section 7): A -> B -> C, first order, in a
 * plug-flow reactor of length 10 with 1000 explicit Euler steps, inlet
 * [1, 0, 0], k1 = 1, k2 = 0.5; the optimisation maximizes C_B(L) with
 * optax.adam(0.1) from (0.5, 0.3) for 50 iterations, projecting the
 * parameters on [0.01, inf) after each update. */
typedef struct {
    const char *name;      /* "A->B->C" */
    const char *mechanism; /* mechanism text (remat_mechanism_parse_string) */
    const double *inlet;   /* species_count */
    double length;
    int64_t steps;
    remat_ode_method method;
    const char *species;   /* the optimised species, "B" */
    remat_pfr_goal goal;   /* maximize */
    const double *start;   /* param_count: where the optimisation starts */
    double lr;
    int64_t iters;
    double min_param;      /* lower bound of every parameter while optimising */
} remat_pfr_seed_problem;

REMAT_API const remat_pfr_seed_problem *remat_pfr_seed(void);

#ifdef __cplusplus
}
#endif
#endif

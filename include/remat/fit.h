/*
 * remat/fit.h — least-squares fitting of a mechanism's parameters (rate
 * constants) to measured concentration profiles.
 *
 * Each experiment is one remat_dataset (one CSV file) with its own initial
 * state; the model is integrated through the experiment's data times
 * (remat/ode.h: adaptive stepping reaches them by dense output, one loop
 * whatever the number of rows; fixed steps land exactly on every data time)
 * and every measured cell gives one residual, model - data. The objective is the plain sum of squared
 * residuals over all experiments (no weights; scale the data if species differ
 * by orders of magnitude).
 *
 *   remat_mechanism *m;  remat_mechanism_parse_file("abc.mech", &m);
 *   remat_dataset *d[2]; remat_dataset_read("run1.csv", m, &d[0]); ...
 *   remat_fit_options o = remat_fit_defaults();
 *   remat_fit_result r;
 *   if (remat_fit_run_once(m, 2, d, &o, &r) != REMAT_OK)
 *       fprintf(stderr, "%s\n", remat_last_error());
 *   for (int i = 0; i < r.n_params; i++)
 *       printf("%s = %g\n", r.param_names[i], r.params[i]);
 *   remat_fit_result_clear(&r);
 *
 * Graphs. The problem's graphs are built and compiled once per fit
 * (remat_fit_new) and run at every evaluation; nothing is rebuilt per
 * iteration. With adaptive stepping, or fixed steps with the discrete
 * adjoint (one scan over the rows whose body takes a data interval's steps,
 * a step ending at every row: remat_ode_integrate_rows, the times and each
 * interval's step count inputs; tsit5, dopri5 and rodas5 keep the uniform
 * grid of dt and read off-grid rows from their own continuous extension; a
 * continuous adjoint keeps a scan per row), experiments of the same
 * number of rows share their programs (the initial state, times and data are inputs), which
 * run once per experiment: a 10,000-file fit compiles one set, and its
 * memory is O(rows x species) plus the schedule's store. Gradient methods run one remat_value_and_grad program (one
 * forward and one reverse sweep per evaluation). Levenberg–Marquardt needs
 * the residual vector r (N cells) and its Jacobian J (N x P): it runs a
 * forward-only residual program for each trial point, and builds J in the
 * cheaper of two modes (opt.jacobian, below). Forward: one remat_jvp program
 * of the residuals run once per free parameter with the tangent e_i, which
 * returns column i — n_free runs, each about two forward sweeps, no tape.
 * Reverse: one remat_vjp program whose residual cotangent is an input; a run
 * with the cotangent e_i returns row i (J^T e_i). The VJP program takes a
 * separate copy of the parameters for each experiment, so one run with a
 * unit cotangent in every experiment at once returns one row of each
 * experiment's block; one Jacobian costs max_e N_e runs of (forward +
 * reverse of every experiment), N_e the measured cells of experiment e. AUTO
 * takes forward when n_free <= max_e N_e: a kinetics fit (3-5 constants,
 * 40 cells) takes 5-40x less time per Jacobian (design notes). The modes
 * agree to rounding, not bitwise.
 *
 * Parameter scale. Rate constants span orders of magnitude and must stay
 * positive, so by default a parameter is searched as theta = log(k) (the
 * gradient by the chain rule, dF/dtheta = k dF/dk): a step in theta is a
 * relative change of k, and k never crosses zero. A parameter uses the linear
 * scale (theta = k) when its declared lower bound is <= 0 (it may reach zero
 * or below: "param c = 0.1 in [-1, 1]"), when its start value is <= 0, or when
 * the caller asks (scale[i] = REMAT_FIT_SCALE_LINEAR). A parameter with no
 * declared lower bound and a positive start is a rate constant: log scale.
 * The log scale for a lower bound of 0 too was measured (bench_battery
 * --log-zero, 16 random starts per problem, fixed RK4 steps and Moré-scaled
 * lm, the defaults then) and lost with the default optimizer: lm reached the optimum from 52% of all starts against 81%
 * linear (from the declared start it drives series_reversible's k2 towards
 * 0); it helps the gradient methods (lbfgs-b 63% against 56%, adam 45%
 * against 26%), which still trail lm. Adam takes the log scale for a lower
 * bound of 0 as well (its step is about lr in every variable, so the
 * variable needs the log scale's unit: on the linear one lr 0.05 moved
 * bellman's constants of 1e-6 .. 1e-4 to 0.05 in one step); see Optimizers.
 *
 * Bounds. The mechanism's bounds ("in [lo, hi]") are honoured, mapped into
 * theta (log lo, log hi on the log scale; a lower bound 0 on the log scale is
 * no bound in theta). A bound is active when it is finite in theta. Then
 * lbfgs-b runs NLopt's L-BFGS with box constraints (NLOPT_LD_LBFGS); lm and
 * bfgs, GSL's and unbounded, map the box into an unbounded variable (the
 * MINUIT transform, as lmfit does for every method it drives:
 * theta = lo + (hi - lo)(sin u + 1)/2, theta = lo - 1 + sqrt(u^2 + 1) for one
 * side) and run on u; Adam projects onto the box after each step.
 *
 * Optimizers (all but Adam from well-kept libraries):
 *   lm    GSL gsl_multifit_nlinear, trust-region Levenberg–Marquardt with
 *         Levenberg's scaling D = I (opt.lm_more_scaling: Moré's, GSL's
 *         default; geodesic acceleration off), J as above
 *   bfgs  GSL gsl_multimin_fdfminimizer_vector_bfgs2 (Fletcher's line search),
 *         bounds by the MINUIT transform as lm (it refused bounds until
 *         the battery showed the transform reaching 11/11 declared starts)
 *   lbfgs-b NLopt NLOPT_LD_LBFGS (Luksan's L-BFGS with box constraints) in
 *         theta, bounds active or not; an evaluation counts as an iteration
 *   adam  remat/optim.h (optax.adam), run as an optax script would
 *         (src/models/fit/opt_adam.c): in theta divided by a unit (1 on
 *         the log scale; the box width, else |start|, on the linear one),
 *         projected on the bounds, lr (default 0.05) halved when the best
 *         objective has not fallen by 1e-4 relative in 50 steps (optax
 *         reduce_on_plateau, from the best point with fresh moments), a
 *         step the integrator cannot take rejected the same way; converged
 *         at a gradient below gtol F(start) or once lr is below 1e-3 of its
 *         start, stopped after max_iters steps (default 5000); the result
 *         is the best point seen
 *   auto  (the default) lm, bounds active or not.
 *         Why LM: bench_battery (bench/battery/: 11 published kinetics and
 *         NIST problems, 2..5 constants of order 1e-5 to 1e2, declared
 *         bounds on 8 of them; the declared start and 8 seeded random
 *         starts each, under these defaults: adaptive Tsit5, rtol 1e-6):
 *         lm reached the reported optimum (1e-4 relative SSE) from every
 *         declared start and from 80% (79/99) of all starts; lbfgs-b from
 *         8 of 11 declared starts and 61% of all starts; bfgs 11 of 11
 *         and 81% (80/99) on the MINUIT transform (3 of 11, 25% when it
 *         refused bounds): one start more than lm, at about twice lm's
 *         median time (27 against 12 ms), so lm stays; adam 11 of 11 and
 *         73% (20% before its scale, schedule and stopping rule), at
 *         500-3600 steps a fit.
 *         With Moré's scaling lm missed
 *         BoxBOD from NIST's first start (b2 ran off to infinity) and reached
 *         72% of all starts. Fixed RK4 steps (the default before
 *         adaptive stepping) had hidden that: a coarse grid happened to steer
 *         Moré-scaled lm to BoxBOD's optimum, which adaptive Tsit5 and Rodas5
 *         do not. Under adaptive Rodas5 (bench_battery --method rodas5)
 *         lm reaches 11/11 and 83%: 8 random starts whose first integration
 *         Tsit5 stops as stiff (a NaN objective) are fine there; it takes
 *         about twice the time, so Tsit5 stays the default and a stiff
 *         problem's message names rodas5. lm's cost is the experiments with many cells
 *         (methanol_floudas, 48 cells: 189 program runs, 25 ms from its
 *         declared start, against lbfgs-b's 26 and 13 ms); with thousands
 *         of cells choose lbfgs-b or bfgs. The run: OPENBLAS_NUM_THREADS=1
 *         taskset -c 1 build/bench/bench_battery --starts 8 (and
 *         --optimizer lm --lm-more); per-problem figures in
 *         bench/battery/README.md.
 *
 * Multi-start. With opt.starts = N > 1 remat_fit_run runs the optimizer from
 * the start values and from N - 1 random starts within the bounds
 * (log-uniform on the log scale, seeded by opt.seed; the rules are in
 * src/models/fit/multistart.c) and returns the best fit: its parameters,
 * history and message, evaluations summed over all starts, and the spread:
 * every start's final SSE, how many came within 1e-4 relative of the best,
 * how many stopped on a NaN/Inf (such a start is skipped; only when all fail
 * is it an error), and for each start where it began and, for a failed one,
 * its message.
 *
 * Weights. A residual is (model - data) / sigma for the cell's sigma: the
 * data file's sigma_<species> column where it has a value there (dataset.h),
 * else opt.sigma[s] of its species (all 1 by default); divided by |data| as
 * well with REMAT_FIT_WEIGHT_RELATIVE;
 * the objective, the residuals (remat_fit_residuals), J and the statistics
 * are those of the weighted residuals.
 *
 * Non-finite values. A NaN or Inf in the objective or the gradient stops the
 * fit with REMAT_ERR_NUMERIC and a message naming the iteration and the
 * parameter values ("fit: iteration 3: the objective is inf at k1=1e+04,
 * k2=0.5 ..."). Trial points are the exception: a point whose objective or
 * gradient is not finite (a step so long that the integrator blows up) is a
 * point that does not decrease the objective. LM rejects the step and raises
 * the damping, as GSL's trust region does for any failed step; the line
 * searches of bfgs and lbfgs-b see a value far above every finite one and
 * back off; an Adam step is a trial too: Adam goes back to its best point
 * and halves lr. A non-finite value where no trial is involved (the start,
 * a Jacobian) stops the fit.
 *
 * Many processes. With opt.dist a group of remat/dist.h (under mpirun),
 * every rank calls remat_fit_new, remat_fit_run, remat_fit_statistics,
 * remat_fit_objective/_residuals/_jacobian_at with the same arguments (they
 * are collective then; every rank holds every dataset). The experiments
 * are split over the ranks (remat_dist_split, cost rows x species); a rank
 * compiles and runs the programs of its experiments only, residual and
 * Jacobian blocks are gathered in experiment order, and the optimizer runs
 * on every rank with the same numbers. The objective and gradient of the
 * gradient methods are per-experiment values summed in experiment order
 * (remat_dist_sum): results are bitwise the same on any number of ranks
 * (they differ from a run without opt.dist, whose one graph sums the
 * experiments in its own order, by rounding only; lm's do not differ).
 * With opt.starts > 1 and more than one rank the starts are spread instead:
 * each rank runs whole fits of its starts, and the best is the same as on
 * one rank. A failure on one rank (an integration, a file) is agreed on
 * (remat_dist_agree): every rank returns it, "rank R: ...".
 *
 * Conditions. A mechanism's conditions ("cond T = 298") are inputs of each
 * experiment, never parameters: experiment e reads the value its data file
 * sets (remat_dataset_cond: '# T = 350' or a column T), else opt.conds',
 * else the declared default. They are constants of its graph, are not in
 * params, the residuals or the degrees of freedom, and have no gradient.
 * Initial values. A data file's '# A = 1' comments give those species'
 * initial values (winning over opt.y0); when they give every species, the
 * first row is data like any other, else the others come from the first
 * row (which is then the initial state, not data). A gas mechanism's
 * (remat/gas.h) comments give the composition as amounts ('# H2 = 2',
 * '# O2 = 1'), normalised to mole fractions, species not named 0, and the
 * temperature ('# T = 1100'); what they leave out comes from opt.y0[e],
 * whose entries may then be NaN where every file gives them (an error names
 * the file when neither does). Its pressure P (Pa) is a parameter of the
 * mechanism; while it is fixed (opt.fixed) each experiment has its own, a
 * condition like the others: its file's '# P = 506625' or column P
 * (remat_dataset_pressure), else P's start (opt.start, the tool's --cond
 * P=); a free P is one fitted value for all experiments, and a file that
 * sets it then is an error naming its line.
 *
 * Ignition delays. A gas mechanism's data file whose first column is named
 * tau measures ignition delays (s): with no other column it is one
 * experiment, one row, its comments giving T, P and the composition as for
 * a profile ('# T = 1100', '# P = 101325', '# H2 = 2', ...); with more
 * columns it is a table of experiments, one per row, the columns giving
 * each its T, P, conditions, composition and sigma_tau (remat/dataset.h
 * "Ignition-delay tables": read it with remat_dataset_read_all and pass
 * each row's dataset as an experiment). The delay is
 * the time at which T first reaches its initial value + REMAT_FIT_DELAY_RISE
 * K (as Cantera's goldens of tests/test_gas_cantera.c), found in
 * (t0, t0 + REMAT_FIT_DELAY_HORIZON (tau - t0)] on the dense output; the
 * residual is (model - measured delay) / sigma, sigma the row's sigma_tau
 * (remat_dataset_delay_sigma), else opt.delay_sigma, else 1 (opt.sigma,
 * per species, is not a delay's: T's entry weighs measured T profiles
 * only), divided by tau too with REMAT_FIT_WEIGHT_RELATIVE; NaN when T does not get there in that
 * horizon. Its gradient is the implicit function theorem's, dtau/dp =
 * -(dT(tau)/dp) / (dT/dt), through every Jacobian mode. Adaptive
 * stepping only (a fixed-step fit with a delay file is refused).
 *
 * Errors (bad options, data before t0, a first row that cannot be the initial
 * state, a budget no schedule fits in) return a status with a message naming
 * the option or the file; nothing is allocated on failure.
 */
#ifndef REMAT_FIT_H
#define REMAT_FIT_H

#include "export.h"

#include <stdbool.h>
#include <stdint.h>

#include "dataset.h"
#include "dist.h"
#include "mechanism.h"
#include "ode.h"

/* Ignition delays (see "Ignition delays"): T's rise (K) that defines the
 * delay, and the search's horizon in delays. */
#define REMAT_FIT_DELAY_RISE 400.0
#define REMAT_FIT_DELAY_HORIZON 4.0

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    REMAT_FIT_AUTO = 0, /* lm (the battery's winner, see above) */
    REMAT_FIT_LM,       /* GSL Levenberg-Marquardt */
    REMAT_FIT_BFGS,     /* GSL BFGS; bounds through the MINUIT variable, as lm */
    REMAT_FIT_ADAM,
    REMAT_FIT_LBFGSB,   /* NLopt L-BFGS with box constraints */
    REMAT_FIT_OPTIMIZER_COUNT
} remat_fit_optimizer;

/* "auto", "lm", "bfgs", "adam", "lbfgs-b"; "?" out of range. */
REMAT_API const char *remat_fit_optimizer_name(remat_fit_optimizer o);
/* Parses the names above. Errors name the text and the known names;
 * REMAT_ERR_NULL for a NULL text or out. */
REMAT_API remat_status remat_fit_optimizer_parse(const char *text, remat_fit_optimizer *out);

/* How lm (and the statistics) build the Jacobian of the residuals: forward
 * mode runs one JVP per free parameter, reverse mode one VJP per measured cell
 * of the largest experiment (the experiments share each run). AUTO takes
 * forward when there are fewer free parameters than that, the fewer program
 * runs; the two agree to rounding (not bitwise). When the residuals hold an
 * op without a JVP rule (a custom op gives only its VJP), AUTO falls back to
 * reverse mode (remat_fit_jacobian_mode says which ran) and FORWARD is
 * REMAT_ERR_UNSUPPORTED naming the op. */
typedef enum {
    REMAT_FIT_JACOBIAN_AUTO = 0,
    REMAT_FIT_JACOBIAN_FORWARD,
    REMAT_FIT_JACOBIAN_REVERSE,
    REMAT_FIT_JACOBIAN_COUNT
} remat_fit_jacobian;

/* "auto", "forward", "reverse"; "?" out of range. */
REMAT_API const char *remat_fit_jacobian_name(remat_fit_jacobian j);
/* Parses the names above. Errors name the text and the known names. */
REMAT_API remat_status remat_fit_jacobian_parse(const char *text, remat_fit_jacobian *out);

typedef enum {
    REMAT_FIT_SCALE_AUTO = 0, /* log unless a lower bound <= 0, a start <= 0 or a network weight */
    REMAT_FIT_SCALE_LOG,      /* theta = log(k); needs a positive start */
    REMAT_FIT_SCALE_LINEAR    /* theta = k */
} remat_fit_scale;

typedef enum {
    REMAT_FIT_WEIGHT_NONE = 0, /* residual (model - data) / sigma */
    REMAT_FIT_WEIGHT_RELATIVE  /* (model - data) / (sigma |data|): a relative error;
                                  a measured 0 is an error naming its cell */
} remat_fit_weighting;

/* What the progress callback sees after each iteration (NLopt: evaluation). */
typedef struct {
    int iteration;          /* 0: the start point */
    double objective;       /* sum of squared residuals */
    double grad_norm;       /* inf-norm of the gradient in theta (LM: of J^T r) */
    int n_params;
    const double *params;   /* all parameters, natural scale */
    const char *const *param_names;
    const char *optimizer;  /* "lm", "bfgs", "lbfgs-b", "adam" */
} remat_fit_progress;
/* Return nonzero to stop the fit (it then ends with converged = false). */
typedef int (*remat_fit_callback)(const remat_fit_progress *p, void *ctx);

typedef struct {
    remat_fit_optimizer optimizer;
    remat_ode_method method;     /* remat_fit_defaults: TSIT5, adaptive */
    double t0;                   /* where the initial states are given (0) */
    double dt;                   /* > 0: largest step (ode.h) */
    int64_t steps;               /* dt == 0: steps per data interval; both 0:
                                    dt = (last data time - t0) / 200 */
    remat_scan_options scan;     /* checkpoint schedule of every interval's scan */
    int64_t memory_budget;       /* > 0: bytes for snapshots + step tapes; the schedule
                                    is then remat_schedule_for_budget's pick (overrides
                                    scan.schedule), REMAT_ERR_BUDGET if none fits */
    const double *const *y0;     /* NULL, or one entry per experiment: NULL (take the
                                    experiment's first row, which must be at t0 and give
                                    every species) or species_count initial values (a gas
                                    mechanism's: NaN where the files give them, above) */
    const double *start;         /* NULL (declared values) or param_count start values */
    const remat_fit_scale *scale;/* NULL (all AUTO) or param_count scales */
    const bool *fixed;           /* NULL (fit all) or param_count flags: true = keep */
    int max_iters;               /* 0: lm 200, bfgs 500, lbfgs-b 2000 evaluations, adam 5000 */
    double lr;                   /* adam's starting learning rate in its scaled theta
                                    (0: REMAT_FIT_ADAM_DEFAULT_LR) */
    double xtol;                 /* relative step in theta (0: 1e-12) */
    double gtol;                 /* gradient test, relative to the start objective (0: 1e-12) */
    double ftol;                 /* relative objective change (0: 1e-15; bfgs/lbfgs-b only) */
    remat_fit_callback progress; /* NULL, or called after every iteration */
    void *progress_ctx;
    int starts;                  /* multi-start: 0 or 1 the start only; N: the start and
                                    N - 1 seeded random starts (see "Multi-start") */
    uint64_t seed;               /* of the random starts */
    const double *sigma;         /* NULL (all 1) or species_count standard deviations > 0:
                                    a residual of species s is divided by sigma[s] */
    remat_fit_weighting weighting; /* REMAT_FIT_WEIGHT_RELATIVE: also divide by |data| */
    remat_fit_jacobian jacobian; /* the Jacobian's mode (lm, statistics); AUTO: the cheaper */
    bool adaptive;               /* error-controlled steps (remat/ode.h): method tsit5 or
                                    dopri5, dt and steps 0; a failed integration (max_steps,
                                    a stiff problem) ends the fit with the integrator's
                                    message */
    double rtol, atol;           /* adaptive: tolerances (rtol > 0, atol >= 0) */
    int64_t max_steps;           /* adaptive: attempts per integration (0: 4096) */
    remat_dist *dist;            /* NULL: this process evaluates everything; a group
                                    (remat/dist.h): see "Many processes" */
    bool lm_more_scaling;        /* lm: Moré's diagonal scaling (GSL's default) instead of
                                    Levenberg's, the default (see "Optimizers") */
    const double *conds;         /* NULL (the declared defaults) or cond_count values: the
                                    conditions (remat/mechanism.h "cond") of an experiment
                                    whose data file does not set them (see "Conditions") */
    const remat_compile_options *compile; /* how every program of the fit compiles
                                    (remat_compile_opts: JIT mode, cache, threads,
                                    backend); NULL: the environment's, as remat_compile.
                                    Borrowed: must outlive the fit */
    remat_ode_adjoint adjoint;   /* how gradients and reverse-mode Jacobians are taken
                                    (remat/ode.h): the discrete adjoint (zero value) or
                                    backsolve (fixed steps: an adaptive fit's programs
                                    take the data times as a value, which backsolve
                                    does not; the
                                    Jacobian is then reverse mode: AUTO picks it, FORWARD
                                    is refused, a custom op having no forward mode) */
    double delay_sigma;          /* an ignition delay's standard deviation (s) where its
                                    row gives no sigma_tau; 0: 1 (see "Ignition delays") */
} remat_fit_options;

/* The defaults above: auto (lm), adaptive Tsit5 at rtol 1e-6, atol 1e-9,
 * t0 0, the loops' online schedule; what `remat pfr fit` runs without
 * --method/--steps/--dt. Fixed steps: set adaptive = false with a method and
 * steps or dt (0 and 0: dt = (last data time - t0) / 200). Start from these:
 * a zero-initialised struct means fixed explicit Euler. */
/* Adam's starting learning rate when opt.lr is 0 (see Optimizers). */
#define REMAT_FIT_ADAM_DEFAULT_LR 0.05
#define REMAT_FIT_DEFAULT_RTOL 1e-6
#define REMAT_FIT_DEFAULT_ATOL 1e-9
REMAT_API remat_fit_options remat_fit_defaults(void);

typedef struct {
    double objective;       /* sum of squared residuals at params */
    int n_params;
    double *params;         /* [n_params], natural scale (fixed ones included) */
    char **param_names;     /* [n_params] */
    int iterations;         /* iterations taken (NLopt: evaluations) */
    int64_t evaluations;    /* program runs: objective/gradient or residual/JVP/VJP */
    bool converged;
    char message[512];      /* why it stopped */
    const char *optimizer;  /* the optimizer that ran: "lm", "bfgs", "lbfgs-b", "adam" */
    const char *jacobian;   /* lm: the Jacobian's mode, "forward" or "reverse"; else NULL */
    int64_t n_residuals;    /* measured cells */
    int n_history;          /* iterate 0 (the start) .. iterations */
    double *history_objective; /* [n_history] */
    double *history_params;    /* [n_history][n_params], natural scale */
    int n_starts;              /* starts run (1 without multi-start) */
    int starts_at_best;        /* starts whose SSE is within 1e-4 relative of the best */
    int starts_failed;         /* starts that stopped on a NaN/Inf (REMAT_ERR_NUMERIC) */
    double *start_objectives;  /* [n_starts] final SSE of each start (NaN: failed) */
    double *start_params;      /* [n_starts][n_params] where each start began, natural scale */
    char **start_messages;     /* [n_starts] why a failed start stopped (its message, as
                                  remat_last_error words it); NULL for the others */
} remat_fit_result;

/* Frees the result's arrays and zeroes it; NULL or a zeroed result is a no-op. */
REMAT_API void remat_fit_result_clear(remat_fit_result *r);

typedef struct remat_fit remat_fit;

/* Checks the options and data, builds the graphs and compiles them. The
 * mechanism and the datasets must outlive the handle. A measured cell whose
 * weighted value |data| / sigma passes 2^500, or a weight 1 / sigma that
 * passes 2^500 against the experiment's largest |data|, would square beyond
 * the largest double whatever the parameters: REMAT_ERR_VALUE naming the
 * cell (file:line, column) and where its sigma came from. */
REMAT_API remat_status remat_fit_new(const remat_mechanism *m, int n_data, remat_dataset *const *data,
                                     const remat_fit_options *opt, remat_fit **out);
REMAT_API void remat_fit_free(remat_fit *fit); /* NULL is a no-op */

/* Runs the optimizer from the start point. result is always filled (with the
 * best point reached) unless the status is REMAT_ERR_NULL; clear it after.
 * REMAT_OK whether or not it converged (see result.converged); REMAT_ERR_NUMERIC
 * for a NaN/Inf. */
REMAT_API remat_status remat_fit_run(remat_fit *fit, remat_fit_result *result);

/* remat_fit_new + remat_fit_run + remat_fit_free. */
REMAT_API remat_status remat_fit_run_once(const remat_mechanism *m, int n_data, remat_dataset *const *data,
                                          const remat_fit_options *opt, remat_fit_result *result);

/* The chosen schedule (after memory_budget), the initial state of experiment
 * e (species_count values), the number of measured cells, and the sum of
 * squared residuals at params (param_count values, natural scale). */
/* A NULL fit: spec untouched, NULL, 0 (remat_last_error() set). */
REMAT_API void remat_fit_schedule(const remat_fit *fit, remat_schedule_spec *spec);
REMAT_API const double *remat_fit_initial_state(const remat_fit *fit, int e);
REMAT_API int64_t remat_fit_residual_count(const remat_fit *fit);
/* The Jacobian's mode the fit resolved (FORWARD or REVERSE; AUTO for NULL). */
REMAT_API remat_fit_jacobian remat_fit_jacobian_mode(const remat_fit *fit);
/* J = d r / d params at params, r as remat_fit_residuals (weighted), written
 * n_residuals x param_count row-major, in the fit's mode; the columns of
 * fixed parameters are 0. */
REMAT_API remat_status remat_fit_jacobian_at(remat_fit *fit, const double *params, double *J);
REMAT_API remat_status remat_fit_objective(remat_fit *fit, const double *params, double *objective);
/* Experiment e's model ignition delay at params (s; see "Ignition delays"),
 * NaN when T does not rise REMAT_FIT_DELAY_RISE K within the horizon.
 * REMAT_ERR_ARG when experiment e is not an ignition delay (or no
 * experiment); REMAT_ERR_UNSUPPORTED on a process of opt.dist that does not
 * evaluate it (its owner can). Not collective. */
REMAT_API remat_status remat_fit_delay(remat_fit *fit, int e, const double *params, double *tau);
/* Every experiment's model ignition delay at params into tau[experiment
 * count] (s; NaN for a profile experiment and a delay not reached): with
 * opt.dist collective, each process evaluating its own experiments and
 * every process receiving all (remat_fit_delay answers only the owner's). */
REMAT_API remat_status remat_fit_delays(remat_fit *fit, const double *params, double *tau);
/* Residuals model - data at params, one per measured cell: experiment by
 * experiment, row by row, species in mechanism order (NULL: just the count). */
REMAT_API remat_status remat_fit_residuals(remat_fit *fit, const double *params, double *r);

/* The model of experiment e at params through n_times increasing times >= t0,
 * written to out[n_times][species_count] (for plotting a fit against its data).
 * Steps: the fit's dt, or the finest step the fit took when it counted steps. */
REMAT_API remat_status remat_fit_predict(const remat_fit *fit, int e, const double *params, int n_times,
                                         const double *times, double *out);
/* With adaptive steps remat_fit_predict's program takes the times as an
 * input: it is compiled at the first call for a number of times and kept
 * in the fit (the last 4 lengths), so later calls for any experiment and
 * times of that length compile nothing (not thread-safe on one fit, as
 * every call on it); so are those of fixed steps with the discrete adjoint
 * (the row scan, kept by length and most steps of an interval). How many
 * programs it compiled so far (a continuous adjoint's fixed steps: not
 * counted, each call builds its own step grid). NULL: 0. */
REMAT_API int64_t remat_fit_predict_builds(const remat_fit *fit);
/* The fixed step remat_fit_predict takes (0: adaptive stepping), to judge
 * its cost: a dense grid over log-spaced data at the finest step is long. */
REMAT_API double remat_fit_predict_step(const remat_fit *fit); /* NULL: 0 */

/* The integrator's work at params over every experiment's data times:
 * stats[REMAT_ODE_STAT_ACCEPTED/REJECTED] summed over the experiments (fixed
 * steps: the steps), [T] the least time reached, [CODE] the first failure's
 * (remat/ode.h). REMAT_OK even when an integration failed: the code says so,
 * and remat_ode_stats_check words it. */
REMAT_API remat_status remat_fit_integration_stats(const remat_fit *fit, const double *params, double *stats);

/* Statistics of a least-squares fit at params (a regression's report).
 * J is the Jacobian of the (weighted) residuals with respect to the free
 * parameters in the natural scale, N measured cells, n free parameters,
 * dof = N - n, s^2 = SSE / dof, covariance s^2 (J^T J)^-1 (scaled by s^2
 * whether or not sigmas were given, as lmfit's scale_covar and NIST StRD do),
 * standard error sqrt(cov_ii), the 95% interval p_i +- t se_i with
 * t = gsl_cdf_tdist_Pinv(0.975, dof), correlation cov_ij / (se_i se_j).
 * Identifiability: from the singular values of J with each column scaled by
 * |p_i| (relative sensitivities, so units do not matter): when the smallest
 * is below REMAT_FIT_IDENTIFIABLE_RTOL times the largest (J^T J's condition
 * number above 1e12), every parameter with a component >= 0.1 in one of
 * those singular vectors is flagged not identifiable; a singular value of 0
 * gives it an infinite standard error. Fixed parameters get NaN. */
#define REMAT_FIT_IDENTIFIABLE_RTOL 1e-6

typedef struct {
    int n_params;           /* all parameters; fixed ones have NaN statistics */
    int n_free;
    int64_t n_residuals;    /* N */
    int64_t dof;            /* N - n_free */
    double sse, s2;         /* SSE and SSE / dof */
    double t95;             /* the two-sided 95% t-quantile at dof */
    double *se;             /* [n_params] */
    double *ci_lo, *ci_hi;  /* [n_params] */
    double *corr;           /* [n_params][n_params] */
    double cond;            /* condition number of the scaled J^T J (inf: singular) */
    int n_unidentifiable;
    bool *unidentifiable;   /* [n_params] */
} remat_fit_stats;

/* Computes the statistics (one Jacobian in the fit's mode: n_free JVP runs or
 * max_e N_e VJP runs). Errors: dof
 * < 1 (REMAT_ERR_VALUE: as many parameters as measured cells), a non-finite
 * Jacobian (REMAT_ERR_NUMERIC). Clear the stats after. */
REMAT_API remat_status remat_fit_statistics(remat_fit *fit, const double *params, remat_fit_stats *stats);
REMAT_API void remat_fit_stats_clear(remat_fit_stats *stats); /* NULL or zeroed: no-op */

#ifdef __cplusplus
}
#endif
#endif

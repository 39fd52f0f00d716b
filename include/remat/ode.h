/*
 * remat/ode.h — integrators of a mechanism's ODE: explicit Runge–Kutta
 * (Euler, RK4, Tsit5, Dopri5) at fixed steps as scans, or adaptive (Tsit5,
 * Dopri5) with error control as loops of unknown length; for stiff
 * mechanisms, the Rosenbrock method Rodas5 (fixed steps).
 *
 * A step is graph ops (the mechanism's right-hand side lowered by
 * remat/kinetics.h, evaluated at each stage); a trajectory is a scan of steps,
 * so reverse mode through it is a discrete adjoint run by the scan's
 * checkpoint schedule: the memory of a 10^6-step integration is the
 * schedule's snapshots, not 10^6 states.
 *
 *   remat_fn *f = remat_fn_new("loss");
 *   remat_val y0 = remat_arg(f, "y0", REMAT_F64, 1, ((int64_t[]){3}));
 *   remat_val k = remat_arg(f, "k", REMAT_F64, 1, ((int64_t[]){2}));
 *   remat_ode_options opt = {
 *       .method = REMAT_ODE_EULER, .t0 = 0.0,
 *       .n_times = 1, .times = (double[]){10.0}, .dt = 0.01,
 *       .scan = {.schedule = {.kind = REMAT_SCHED_BINOMIAL, .snapshots = 10}},
 *   };
 *   remat_val ys;                                   // f64[1,3]: y(10)
 *   if (remat_ode_integrate(f, mech, &opt, y0, k, &ys) != REMAT_OK)
 *       puts(remat_last_error());
 *   remat_fn_output(f, remat_neg(f, remat_index(f, remat_index(f, ys, 0), 1)));  // -C_B(10)
 *   remat_fn *g;
 *   remat_grad(f, 1, (int[]){1}, &g);               // d(-C_B)/dk
 *
 * Output times. The states are wanted at times t_1 < ... < t_K (data times,
 * a reactor outlet). Every interval [t_{k-1}, t_k] (t_0 = opt.t0) is split
 * into n_k = ceil(len/dt) equal steps of h_k = len/n_k, so steps land exactly
 * on every output time whatever dt is (dt is the largest step). Each interval
 * is one scan whose final carry is the output state: no per-step states are
 * kept. Every interval but the last is also a checkpoint region that keeps
 * only its input state, so the reverse pass holds one interval's schedule
 * store at a time plus the K output states: the memory the schedule promises,
 * for one extra forward sweep of the intervals before the last (none when
 * there is one output time). keep_interval_stores = true skips the re-run and
 * holds every interval's store at once.
 * Step j of interval k starts at t = t_{k-1} + j*h_k, computed from the step
 * index, not accumulated, so a t-dependent rate sees the same times whether
 * or not the grid is split at intermediate outputs.
 *
 * Tableaus: Euler (order 1), classical RK4 (order 4), and Tsitouras' 5(4)
 * pair (Ch. Tsitouras, "Runge–Kutta pairs of order 5(4) satisfying only the
 * first column simplifying assumption", Comput. Math. Appl. 62 (2011)
 * 770–775) with the coefficients and the 5th-order solution weights b_sol
 * that diffrax's Tsit5 uses; a fixed step needs no error estimate, so the
 * FSAL stage is not evaluated. Stages are formed as diffrax does:
 * k_i = h f(t + c_i h, y + sum_j a_ij k_j), y' = y + sum_i b_i k_i.
 *
 * Rodas5 (G. Di Marzo, 1993; Hairer & Wanner, "Solving ODEs II", IV.7) is
 * for stiff mechanisms: L-stable and stiffly accurate, order 5, 8 stages
 * each solving (I/(h gamma) - J) k_i = f(u_i) + ... with J = df/dy at the
 * step's start, taken by forward mode (S JVPs of the right-hand side) and
 * the linear-solve primitive. Why a Rosenbrock method rather than an
 * implicit Runge–Kutta one: no Newton iteration, so a step is a fixed
 * sequence of graph ops and its reverse pass (a discrete adjoint that
 * differentiates J as well, i.e. the exact gradient of the computed
 * solution) needs no implicit-function rule. Its step sees the stiffness
 * only through J at the step's start: on a fixed grid, start with steps
 * below the fastest time scale (e.g. log-spaced output times with equal
 * steps per interval; examples/robertson).
 * Dormand–Prince 5(4) (J. Comput. Appl. Math. 6 (1980) 19–26) likewise.
 *
 * Adaptive stepping (opt.adaptive). Tsit5 and Dopri5 carry an embedded
 * 4th-order solution: one attempt computes y' and err = sum_i e_i k_i (seven
 * stages, the seventh f(t + h, y') being the next step's first: FSAL). The
 * controller is diffrax's PIDController (rtol, atol and defaults from it):
 *   q = RMS_i err_i / (atol + rtol max(|y_i|, |y'_i|)),   accepted iff q < 1,
 *   h_next = h clip(safety (1/q)^((p+i+d)/5) r1^(-(p+2d)/5) r2^(d/5),
 *                   accepted ? [1, factormax] : [factormin, safety])
 * with r1, r2 the last two accepted 1/q (pcoeff p, icoeff i, dcoeff d;
 * defaults 0, 1, 0, safety 0.9, factormin 0.2, factormax 10), and the first
 * step from Hairer's selection (Hairer–Nørsett–Wanner I, II.4) unless
 * opt.dt0 is given. Steps are clipped to land exactly on every output time (a
 * proposal within 100 ulps of one lands on it), the step size carrying over
 * from one interval to the next as diffrax's ClipStepSizeController(step_ts =
 * times) does. Every interval is one remat_while loop (remat/loop.h), so
 * outputs need no dynamic indexing; every interval but the last is a
 * checkpoint region as for fixed steps. The loops' reverse pass runs
 * opt.scan.schedule, whose zero value (store-all elsewhere) means the
 * loop's default here, online, since the length is unknown until the end.
 *
 * Dense output (opt.dense, adaptive only; the fits use it). Output times
 * are data of one loop over [t0, t_K], as diffrax's SaveAt(ts=...): steps
 * are clipped to t_K only, and the rows (K, S) are a differentiated carry
 * that each step fills, for the times in (t, t + h], from its continuous
 * extension at theta = (t_k - t)/h: Tsitouras' interpolant for tsit5,
 * Hairer's dense output for dopri5, Rodas5's own for rodas5 (a combination
 * of its stages, OrdinaryDiffEq.jl's coefficients; all three order 4, none
 * costs a right-hand side beyond the step's). Reverse mode runs through
 * the interpolant (theta and the row mask are constants of the reverse
 * pass, like the step sizes). One loop whatever K: memory O(K S) per
 * schedule snapshot, time O(attempts K S), and rows between steps carry the
 * interpolant's error (a few rtol) rather than a step end's. Fixed steps
 * ignore dense: their grid lands on every output time. With the times as a
 * graph value (remat_ode_integrate_times) one compiled program integrates
 * any times of that length.
 *
 * Gradient semantics: the reverse pass is the discrete adjoint of the
 * accepted steps. Step sizes, accept decisions and the controller are
 * constants there (stop_gradient), as in diffrax with
 * RecursiveCheckpointAdjoint; rejected attempts contribute nothing. The
 * gradient is that of the numerical solution on the step sequence the
 * forward pass chose, which converges to the ODE's as rtol -> 0.
 *
 * Failures happen at run time, so they are values: remat_ode_integrate_stats
 * returns stats (REMAT_ODE_STATS numbers: accepted and rejected attempts,
 * the time reached, a code), and remat_ode_stats_check turns them into a
 * status naming the cause — max_steps attempts (over all intervals, diffrax's
 * count) used up, or an explicit method whose step collapsed on a stiff
 * problem (Hairer's test: h|lambda| estimated from the last two stages beyond
 * the stability bound on 15 accepted steps; it names the stiff method
 * rodas5). The outputs of a failed integration are NaN.
 */
#ifndef REMAT_ODE_H
#define REMAT_ODE_H

#include "exec.h"
#include "export.h"
#include "kinetics.h"
#include "scan.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    REMAT_ODE_EULER = 0, /* explicit Euler, 1 stage, order 1 */
    REMAT_ODE_RK4,       /* classical Runge–Kutta, 4 stages, order 4 */
    REMAT_ODE_TSIT5,     /* Tsitouras 2011, 6 stages per fixed step, order 5 */
    REMAT_ODE_RODAS5,    /* Rosenbrock, L-stable, for stiff mechanisms: 8 stages
                            (each a linear solve with I/(h gamma) - J), order 5 */
    REMAT_ODE_DOPRI5,    /* Dormand–Prince 1980, 6 stages per fixed step, order 5 */
    REMAT_ODE_BDF,       /* variable-order (1..5) BDF/NDF, adaptive only, forward
                            only: Newton with a reused Jacobian (below) */
    REMAT_ODE_METHOD_COUNT
} remat_ode_method;

/* "euler", "rk4", "tsit5", "rodas5", "dopri5", "bdf"; "?" out of range. */
REMAT_API const char *remat_ode_method_name(remat_ode_method method);
/* Parses the names above. Errors name the text. */
REMAT_API remat_status remat_ode_method_parse(const char *text, remat_ode_method *out);
/* Convergence order (1, 4, 5, 5, 5, 5: bdf's highest) and stages per step
 * (1, 4, 6, 8, 6, 1: right-hand side evaluations; Rodas5 adds S JVPs for
 * the Jacobian and 8 solves; bdf's Newton iterations take 1-3); 0 out of
 * range. */
REMAT_API int remat_ode_method_order(remat_ode_method method);
REMAT_API int remat_ode_method_stages(remat_ode_method method);
/* Whether the method has an error estimate (tsit5, dopri5, rodas5, bdf): opt.adaptive. */
REMAT_API bool remat_ode_method_adaptive(remat_ode_method method);
/* The real stability interval of a fixed step: the largest x such that the
 * step is stable on y' = lambda y for every real h*lambda in [-x, 0]
 * (Euler 2, RK4 2.785, Tsit5 and Dopri5 about 3.5 and 3.3; Rodas5 infinite,
 * it is A-stable); 0 out of range. A fixed step h with h*|lambda| beyond it
 * for a decaying mode lambda of the Jacobian grows that mode instead. */
REMAT_API double remat_ode_stability_bound(remat_ode_method method);

/* One step as a function:
 *   body(y: (S,), t: (), h: (), params: (P,)) -> y': (S,)
 * a step from t to t+h, all in dtype dt. Use it as (part of) a scan body, or
 * call it. NULL on error (message in remat_last_error()); free with
 * remat_fn_free. */
REMAT_API remat_fn *remat_ode_step_body(const remat_mechanism *m, remat_ode_method method, remat_dtype dt);

/* Emits one step into f: y_next = step(y, t, h, params), with y of shape (S,)
 * or batched (..., S), t and h scalars (t may be REMAT_NONE when the
 * mechanism does not read it; see remat_kinetics_uses_indep). */
REMAT_API remat_status remat_ode_step(remat_fn *f, const remat_mechanism *m, remat_ode_method method, remat_val t,
                                      remat_val h, remat_val y, remat_val params, remat_val *y_next);

/* The gradient of an integration (opt.adjoint).
 *
 * DISCRETE (the default): reverse mode runs through the steps the forward
 * pass took, under the scan's checkpoint schedule — the exact gradient of
 * the computed solution (diffrax's RecursiveCheckpointAdjoint with a
 * binomial or online schedule, DirectAdjoint with store-all).
 *
 * BACKSOLVE: the continuous adjoint, diffrax's BacksolveAdjoint. The
 * forward pass keeps nothing but the output states; the reverse pass
 * integrates the augmented system
 *   y' = f(t, y, p),   a' = -a^T df/dy,   m' = -a^T df/dp
 * backwards from each output time t_k to the one before (y restarting from
 * the forward's state at t_k, a gaining the cotangent of that output, m
 * starting at 0), with the same method, and returns a(t0) and m(t0) as
 * the cotangents of y0 and params. Fixed steps walk the forward's grid in
 * reverse (step -h_k). Adaptive steps have their own error control on the
 * backward solve, as diffrax's: each interval is an adaptive solve of its
 * own (in negated time) with the forward's method, rtol, atol, controller,
 * max_steps and dt0 (0: Hairer's selection on the augmented state), the
 * error norm taken over all 2S + P components; it matches diffrax's
 * BacksolveAdjoint to rounding (tests/goldens/backsolve.json), and a
 * backward solve that fails (max_steps) makes the gradient NaN.
 * a^T df/dy and a^T df/dp are one VJP of the mechanism's right-hand side
 * (remat's reverse mode, inlined into the backward step).
 * Memory is O(1) in the steps: one augmented state (2S + P numbers) and the
 * stages of one step, whatever the step count; time is about 2-3 forward
 * integrations (a VJP costs a few right-hand sides).
 * What is differentiated is the ODE, not the numerical solution: the result
 * approximates the exact dy(T)/d(y0, p) with the method's error on each of
 * the two solves, so it differs from the discrete adjoint by O(h^order)
 * (Euler, dt 0.01 on seed 004's A->B->C: -0.01125 against -0.01235 for
 * dC_B/dk1; Tsit5: equal to 6 digits) and converges to it as the step
 * shrinks. It is unstable when y's backward integration is: y is
 * recomputed by integrating y' = f backwards, so a strongly decaying
 * (stiff, dissipative) mode of the forward grows like exp(|lambda| T)
 * backwards and swamps the state it is reconstructing; then use the
 * discrete adjoint. Adaptive: the gradient's error follows rtol (Tsit5 on
 * A->B->C: 1.2e-5, 1.2e-7, 1.3e-9 from the discrete one at rtol 1e-4,
 * 1e-6, 1e-8). Rodas5 steps the augmented system in negated time with
 * its Jacobian ((2S + P)^2, forward mode through the VJP); on a mildly
 * stiff problem it converges to the discrete adjoint as the other methods
 * do, but on Robertson's kinetics (to t = 1e5) the backward state
 * reconstruction fails and the gradient is NaN, fixed or adaptive: there
 * the discrete adjoint (equal to CVODES's checkpointed adjoint within
 * 1e-5) or the interpolating one (below) is the one to use. Supported:
 * every method, fixed or adaptive, y0 (S,) and params (P,) in f64 or f32, output times as
 * opt.times (dense output too) or as a value (remat_ode_integrate_times,
 * the adaptive fits: the backward program takes them as an input, each
 * interval a solve between values); a batch is refused by name. The
 * backward solve runs on the CPU inside the forward's program as a custom
 * op (remat/graph.h), compiled when the integration is built.
 *
 * INTERPOLATING: the continuous adjoint as CVODES's CVodeB (and SciML's
 * InterpolatingAdjoint) solve it: y is never integrated backwards. The
 * reverse pass sweeps the forward integration again from y0 keeping
 * checkpoints (the step's carries), then for each segment between two
 * checkpoints, last first, recomputes its forward steps and solves
 *   lambda' = -lambda^T df/dy (t, y(t)),   mu' = -lambda^T df/dp
 * backwards over them, y(t) the cubic Hermite interpolant of y and f at
 * the ends of the forward step containing t; lambda gains the cotangent
 * of output k at t_k, and lambda(t0), mu(t0) (mu(T) = 0) are the
 * cotangents of y0 and params. The backward solve uses the forward's
 * method: fixed steps walk the forward's grid in reverse, one step per
 * forward step; adaptive steps have their own error control (the
 * forward's rtol, atol, controller and dt0, the error norm over the S + P
 * components of [lambda, mu]; max_steps attempts beyond one per forward
 * step), and a backward step never crosses a forward step's end, where
 * the interpolant has a kink; Rodas5 steps it with its Jacobian
 * ((S + P)^2 by forward mode through the VJP): the adjoint system is as
 * stiff as the forward. The forward recomputation takes the forward's
 * steps (the same attempt program and controller); adaptive outputs are
 * step ends (with dense output the forward pass's rows are interpolated,
 * so they differ from the recomputation's by its error).
 * Memory: at most 64 checkpoints (every `e` accepted steps; when they
 * fill, every other one goes and e doubles), one segment's step ends
 * (at most 2n/64 + 1 of them for n steps, 2S + 1 numbers each) and
 * [lambda, mu], whatever the schedule; time: three forward sweeps (the
 * forward pass, the checkpointing sweep, the segments') and the backward
 * solve. Accuracy: the method's on the two solves and the interpolant's
 * (order 3: h^4); it converges to the discrete adjoint as the step or rtol
 * shrinks (Tsit5 on A->B->C at rtol 1e-4, 1e-6, 1e-8: 1.9e-6, 8.9e-8,
 * 2.2e-9 from the exact gradient). On Robertson's kinetics to t = 1e5 with
 * adaptive Rodas5 at rtol 1e-8 it is within 6.1e-7 of CVODES's adjoint
 * (backsolve gives NaN there). On a stiff problem with large fixed steps
 * the backward Rosenbrock step on the interpolated, time-dependent
 * Jacobian loses accuracy that the forward step keeps (Robertson, 10
 * steps per interval: a factor 3 off, converging as the backward step is
 * refined): use it adaptive there, whose error control takes the steps
 * the adjoint needs. Supported: every method, fixed or adaptive, y0 (S,)
 * and params (P,) in f64 or f32, output times as opt.times or as a value
 * (remat_ode_integrate_times: the op reads them when it runs, so the
 * fits' shared programs take it); a batch is refused. It runs on the CPU
 * as a custom op driving small compiled programs (the steps, the
 * right-hand side), compiled when the integration is built. */
typedef enum {
    REMAT_ODE_ADJOINT_DISCRETE = 0,
    REMAT_ODE_ADJOINT_BACKSOLVE,
    REMAT_ODE_ADJOINT_INTERPOLATING,
    REMAT_ODE_ADJOINT_COUNT
} remat_ode_adjoint;

/* "discrete", "backsolve", "interpolating"; "?" out of range. */
REMAT_API const char *remat_ode_adjoint_name(remat_ode_adjoint adjoint);
/* Parses the names above. Errors name the text and the choices. */
REMAT_API remat_status remat_ode_adjoint_parse(const char *text, remat_ode_adjoint *out);

/* diffrax PIDController coefficients; a zero field takes diffrax's default
 * (pcoeff 0, icoeff 1, dcoeff 0, safety 0.9, factormin 0.2, factormax 10):
 * icoeff cannot be 0 (a controller without its integral part is not
 * offered). Checked: 0 < safety <= 1, 0 < factormin <= 1 <= factormax. */
typedef struct {
    double pcoeff, icoeff, dcoeff;
    double safety, factormin, factormax;
} remat_ode_controller;

typedef struct {
    remat_ode_method method;
    double t0;           /* where y0 is given */
    int n_times;         /* >= 1 output times ... */
    const double *times; /* ... strictly increasing, times[0] >= t0 (== t0: y0 itself) */
    double dt;           /* > 0: largest step; each interval gets ceil(len/dt) steps
                            (a dt that divides len to 1e-9 relative gives len/dt) */
    int64_t steps;       /* dt == 0: steps per interval instead (>= 1) */
    remat_scan_options scan; /* schedule and body policy of every interval's scan */
    bool keep_interval_stores; /* false (default): each interval but the last is a
                                  checkpoint region, re-run just before it is
                                  reversed, so the reverse pass holds one
                                  interval's store at a time; true: no re-run,
                                  every interval's store is held at once */
    /* Adaptive stepping (tsit5, dopri5, rodas5); false: the fixed steps above. */
    bool adaptive;
    double rtol;          /* adaptive: > 0 */
    double atol;          /* adaptive: >= 0 */
    int64_t max_steps;    /* attempts, accepted or not, over all intervals; 0: 4096 */
    double dt0;           /* first step; 0: Hairer's selection */
    const remat_ode_controller *controller; /* NULL: diffrax defaults */
    /* Adaptive only (fixed steps land on every output time and ignore it):
     * true: output times are data of one loop (dense output, below) instead
     * of ends of intervals; false: one loop per interval, steps clipped to
     * every output time. */
    bool dense;
    /* How reverse mode differentiates the integration (below); the zero
     * value is the discrete adjoint. */
    remat_ode_adjoint adjoint;
    /* Adaptive only: times where the right-hand side jumps (a control
     * profile's knots, remat_mechanism_control_knots), as diffrax's
     * PIDController(jump_ts=...): a step proposed past the next one ends on
     * it (one within 100 ulps of it lands on it) instead of stepping across
     * it, in the dense loop and the interval loops alike. Finite; any order;
     * those outside (t0, t_K) change nothing. 0 / NULL: none. */
    int n_jumps;
    const double *jump_ts;
} remat_ode_options;

/* Steps per interval (steps[k] for output k) and their total, as
 * remat_ode_integrate will take them; either may be NULL (total NULL: a check
 * of the options alone). Checks the options; NULL options: REMAT_ERR_NULL. */
REMAT_API remat_status remat_ode_count_steps(const remat_ode_options *opt, int64_t *steps, int64_t *total);

/* Emits the integration of y' = f(t, y, params) from y0 at opt->t0 into f,
 * and writes the states at the output times, stacked: (n_times, S), or
 * (n_times, ..., S) for a batched y0 (..., S). params is (P,), P = remat_mechanism_input_count (the parameters, then the conditions) (REMAT_NONE
 * when P = 0), or with fixed steps and a batched y0 (..., S) one parameter
 * set per batch entry, (..., P) (remat_pfr_ensemble). On error returns the
 * status with a message naming the bad option or input and *y_at_outputs =
 * REMAT_NONE. */
REMAT_API remat_status remat_ode_integrate(remat_fn *f, const remat_mechanism *m, const remat_ode_options *opt,
                                           remat_val y0, remat_val params, remat_val *y_at_outputs);

/* The numbers of remat_ode_integrate_stats' stats value, f64[REMAT_ODE_STATS]
 * (y0's dtype): */
enum {
    REMAT_ODE_STAT_ACCEPTED, /* accepted steps (fixed: the steps) */
    REMAT_ODE_STAT_REJECTED, /* rejected attempts */
    REMAT_ODE_STAT_T,        /* the time reached (the last output time if all went well) */
    REMAT_ODE_STAT_CODE,     /* 0 done, 1 max_steps used up, 2 stiff (step collapsed),
                                3 bdf's step collapsed (below h = 10 ulp(t)) */
    REMAT_ODE_STATS
};

/* remat_ode_integrate, also writing the stats value (may be NULL). With
 * fixed steps the stats are constants. A batched y0 (..., S) under
 * adaptive stepping integrates every member with its own loops: its own
 * step sizes, accept decisions, max_steps and failure (what jax.vmap of
 * diffrax's diffeqsolve gives), so a member's states and gradients are the
 * bits of its unbatched run, and a member that fails makes only its own
 * rows NaN. The batch's stats then sum the accepted and rejected counts,
 * give the least time reached and the worst code. The graph holds one set
 * of loops per member (interpreted): for a few dozen members, not for
 * thousands of lanes, which fixed steps compile to lane loops. */
REMAT_API remat_status remat_ode_integrate_stats(remat_fn *f, const remat_mechanism *m, const remat_ode_options *opt,
                                                 remat_val y0, remat_val params, remat_val *y_at_outputs,
                                                 remat_val *stats);

/* One forward integration of m from y0 (S,) with params (P,; P =
 * remat_mechanism_input_count: the parameters, then the conditions; NULL
 * when P is 0) under opt, built as a graph, compiled on be (NULL: copts->backend)
 * with copts (NULL: the environment's, as remat_compile), run once and
 * freed: the states at the output times into ys ((n_times, S) as
 * remat_ode_integrate gives them; NULL: not wanted) and the integrator's
 * statistics into stats ([REMAT_ODE_STATS], as remat_ode_integrate_stats;
 * NULL: not wanted; one of the two is required). For a value at one
 * parameter set (a prediction, a report); keep a compiled program to
 * evaluate many. */
REMAT_API remat_status remat_ode_run_once(const remat_mechanism *m, const remat_ode_options *opt, const double *y0,
                                          const double *params, remat_backend *be,
                                          const remat_compile_options *copts, double *ys, double *stats);

/* Dense output at output times that are a value of f: times (K,), y0's
 * dtype, strictly increasing, times[0] >= opt->t0 (the caller checks: rows
 * out of order or before t0 are not reached and keep y0); opt->dense,
 * opt->times and opt->n_times are not read. Adaptive: outputs and stats as
 * remat_ode_integrate_stats' (stats may be NULL). Fixed steps (adaptive
 * false, discrete adjoint, y0 (S,)): one scan of opt->steps steps of
 * opt->dt from t0 on the grid t_j = t0 + j dt (opt->steps is the total
 * here, and t0 + steps dt must reach the last time). A row on the grid,
 * |t_k - t_j| <= REMAT_ODE_GRID_TOL j dt, is step j's end y' itself (no
 * interpolation: it equals remat_ode_integrate's row at that time to
 * rounding, as that path's steps there are dt to rounding). A row off the
 * grid is the continuous extension of the step it falls in, with gradients
 * through it: tsit5's, dopri5's and rodas5's own (order 4, from the
 * step's stages, tsit5's and dopri5's FSAL stage f(t + dt, y') reused by
 * the next step: no extra right-hand side), euler's and rk4's the cubic
 * Hermite interpolant of y, y' and f at both ends (one more right-hand side
 * per step; order 3, less accurate than rk4's steps). The scan's zero
 * schedule means binomial with REMAT_WHILE_DEFAULT_SNAPSHOTS slots; *stats
 * is REMAT_NONE. The graph
 * depends on K, not on the times, so one compiled program integrates every
 * experiment of K rows. Each step updates every row: O(steps x K) time;
 * remat_ode_integrate_rows (below, what remat/fit.h takes) is
 * O(steps + K) with a step ending at every row. */
#define REMAT_ODE_GRID_TOL 1e-9
REMAT_API remat_status remat_ode_integrate_times(remat_fn *f, const remat_mechanism *m, const remat_ode_options *opt,
                                                 remat_val y0, remat_val params, remat_val times,
                                                 remat_val *y_at_outputs, remat_val *stats);

/* Fixed steps ending on every output time, the times and the steps per
 * interval values of f (src/models/ode/rows.c): times (K,) as for
 * remat_ode_integrate_times, steps (K,) the step count of each interval
 * (from t0 or the previous time; integers >= 1, 0 only for a time at t0),
 * as remat_ode_count_steps gives them, both y0's dtype; y0 (S,), params
 * (P,) or REMAT_NONE. Interval k takes steps[k] steps of
 * (t_k - t_{k-1}) / steps[k], the steps remat_ode_integrate takes, through
 * the same step kernel: the rows are that path's. Fixed steps (adaptive
 * false), any adjoint (the continuous ones: below); opt->max_steps (>= 1)
 * is the most steps of one interval (a run-time error past it);
 * opt->times, n_times, dt and steps are not read. One scan over the K rows (opt->scan's schedule, the
 * zero spec binomial with REMAT_WHILE_DEFAULT_SNAPSHOTS slots) whose body
 * runs an interval's steps as a while loop (online, as remat/loop.h's
 * default): the graph depends on the species and the method, not on K or
 * the times, and time and memory grow as O(steps + K).
 * tsit5, dopri5 and rodas5 with opt->dt > 0 (steps then only checked for
 * shape) keep instead the uniform grid t_j = t0 + j dt and their own
 * continuous extension, remat_ode_integrate_times' rows in O(steps + K)
 * (one discretisation whatever the times): row k's while
 * loop takes the grid steps up to t_k (a grid point within
 * REMAT_ODE_GRID_TOL j dt past t_k included); a row on that point is its
 * y, a row past it the extension of the grid step from it (the scan
 * carries that step ahead of the rows, so each grid step is taken once
 * whatever the rows), with gradients through it. opt->max_steps + 1 bounds the grid steps of one
 * interval (its step count, one more for the band).
 * opt->adjoint backsolve or interpolating: every interval's own steps
 * (tsit5 and dopri5 too, as remat_ode_integrate; opt->dt unread), not
 * differentiated, through the adjoint's op as remat_ode_integrate's, the
 * times and step counts its inputs: one program for every K-row set of
 * times, its values and gradients those of remat_ode_integrate with that
 * adjoint (src/models/ode/rows_adjoint.c). */
REMAT_API remat_status remat_ode_integrate_rows(remat_fn *f, const remat_mechanism *m, const remat_ode_options *opt,
                                                remat_val y0, remat_val params, remat_val times, remat_val steps,
                                                remat_val *y_at_outputs);

/* BDF (REMAT_ODE_BDF, src/models/ode/bdf.c): a variable-order (1..5),
 * variable-step backward-differentiation integrator in the quasi-constant
 * step form of Shampine and Reichelt (MATLAB's ode15s, scipy's BDF: NDF
 * coefficients for orders 1-4), for stiff mechanisms whose forward solve
 * is wanted fast: Newton's iteration matrix I - c J and its LU are reused
 * across steps as CVODE reuses them (the Jacobian renewed when Newton fails
 * with a stale one or after 50 steps, the LU when c moves by 30% or after
 * 20 steps), so a step costs one to three right-hand sides and, now and
 * then, a Jacobian; gas mechanisms take remat_gas_jacobian's closed form,
 * others forward mode of the right-hand side. It is driven from C over
 * small compiled CPU programs (the right-hand side, the Jacobian), not
 * built as loop nodes: in a graph (remat_ode_integrate and the calls on
 * it, adaptive, one state (S,)) the integration is one custom op, forward
 * only; differentiating it is an error naming bdf (gradients need rodas5
 * or another method). Output times are the interpolating polynomial of
 * the step that covers them (never a step forced onto them); the last one
 * ends the integration. Error test in the weighted RMS norm with weights
 * rtol |y| + atol; max_steps counts attempts (accepted, error-test and
 * Newton failures). Fixed steps (steps, dt) are refused. */
enum { REMAT_ODE_BDF_DONE = 0, REMAT_ODE_BDF_MAX_STEPS = 1, REMAT_ODE_BDF_COLLAPSED = 3 };
typedef struct {
    int64_t steps;           /* accepted steps */
    int64_t rejected;        /* error-test failures */
    int64_t newton_failures; /* corrector failures (each cuts h by 4) */
    int64_t rhs_evals;       /* right-hand sides (Newton iterations and the first step's choice) */
    int64_t jacobians;       /* Jacobians evaluated */
    int64_t lu;              /* LU factorisations of I - c J */
    double t;                /* the time reached */
    int code;                /* REMAT_ODE_BDF_*: the stats code of remat_ode_stats_check */
} remat_ode_bdf_stats;

/* One BDF integration of m (opt->method REMAT_ODE_BDF, adaptive; opt->times,
 * rtol, atol, max_steps, dt0 read) from y0 (S,) with params (P,; NULL when
 * P is 0) on the CPU: the states at the output times into ys ((n_times, S),
 * NaN past a failure; may be NULL) and the statistics into stats (may be
 * NULL). Builds and compiles the right-hand side and Jacobian programs for
 * this call (a reactor or a graph keeps them: remat_pfr, remat_ode_integrate).
 * A failed integration (max_steps, step collapse) returns the status of
 * remat_ode_stats_check with its message. */
REMAT_API remat_status remat_ode_bdf_run(const remat_mechanism *m, const remat_ode_options *opt, const double *y0,
                                         const double *params, double *ys, remat_ode_bdf_stats *stats);

/* REMAT_OK when stats (as run) say the integration reached its last output
 * time; else an error whose message names the cause and what to change
 * (max_steps, or the stiff method rodas5). */
REMAT_API remat_status remat_ode_stats_check(const remat_ode_options *opt, const double *stats);

#ifdef __cplusplus
}
#endif
#endif

/*
 * ode_impl.h (internal) — one-step methods as tableaus.
 *
 * One static const tableau per method, each in its own file (euler.c, rk4.c,
 * tsit5.c, rodas5.c), read by one generic stage emitter per family: explicit
 * Runge–Kutta (step.c) and Rosenbrock (rosenbrock.c). Adding a method is
 * adding a table.
 */
#ifndef REMAT_MODELS_ODE_IMPL_H
#define REMAT_MODELS_ODE_IMPL_H

#include "remat/ode.h"

#define ODE_MAX_STAGES 8

/* A Rosenbrock method in the W-transformed form (Hairer & Wanner II, IV.7,
 * (4.7')): with W = I/(h gamma) - J, J = df/dy at (t, y),
 *   u_i = y + sum_{j<i} a_ij k_j,
 *   W k_i = f(t + c_i h, u_i) + h d_i df/dt + (1/h) sum_{j<i} C_ij k_j,
 *   y' = y + sum_i b_i k_i,   error estimate sum_i e_i k_i.
 * Its continuous extension (dense.c), from the stages of the step:
 *   y(t + theta h) = (1 - theta) y + theta (y' + (1 - theta) (d_1 + theta (d_2 + theta d_3 ...))),
 *   d_r = sum_i H[r][i] k_i,
 * equal to y and y' at theta 0 and 1 whatever H. */
#define ODE_MAX_DENSE 3
typedef struct {
    double gamma;
    const double *a; /* strictly lower triangle by rows, as ode_tableau's */
    const double *C; /* strictly lower triangle by rows */
    const double *c; /* [stages] */
    const double *d; /* [stages] */
    const double *b; /* [stages] */
    const double *e; /* [stages] embedded error weights */
    int n_dense;     /* rows of H (<= ODE_MAX_DENSE); 0: no extension of its own */
    const double *H; /* [n_dense][stages] */
} ode_rosenbrock;

typedef struct {
    const char *name;
    int order;
    int stages;      /* right-hand side evaluations per step */
    const double *c; /* [stages], c[0] = 0 */
    const double *a; /* strictly lower triangle by rows: a_ij (j < i) at a[i*(i-1)/2 + j] */
    const double *b; /* [stages] solution weights */
    const ode_rosenbrock *ros; /* non-NULL: a Rosenbrock method (stages solve with W) */
    /* Explicit embedded pairs only (NULL otherwise): error weights e = b - b_hat over
     * the stages and one more, the FSAL stage f(t + h, y'), whose solution
     * weight is 0 (a_{stages+1,j} = b_j, c = 1): err = sum_i e_i k_i. */
    const double *e;
    /* Embedded pairs: the real stability bound |h lambda| of the explicit
     * step, the stiffness test's threshold (Hairer-Wanner I, II.10). */
    double stab;
    /* An explicit method's continuous extension (dense.c), NULL: none (a
     * Rosenbrock method's is ros->H). Row i of
     * [stages + 1][4] (the FSAL stage last) gives the coefficients of theta,
     * theta^2, theta^3, theta^4 in stage i's weight b_i(theta), with
     * b_i(1) = b_i: y(t + theta h) = y + sum_i b_i(theta) k_i. */
    const double *dense;
    /* A multistep method (bdf): no one-step form, no stages; it runs in
     * C over compiled programs (bdf.c, bdf_mech.c), adaptive only. */
    int multistep;
} ode_tableau;

/* Whether tb has a continuous extension of its own (tsit5, dopri5, rodas5);
 * the others' rows between step ends are the cubic Hermite interpolant */
static inline int ode_has_extension(const ode_tableau *tb)
{
    return tb->ros ? tb->ros->n_dense > 0 : tb->dense != NULL;
}

extern const ode_tableau rmi_ode_euler_tableau;
extern const ode_tableau rmi_ode_rk4_tableau;
extern const ode_tableau rmi_ode_tsit5_tableau;
extern const ode_tableau rmi_ode_rodas5_tableau;
extern const ode_tableau rmi_ode_dopri5_tableau;
extern const ode_tableau rmi_ode_bdf_tableau;

/* The integration by bdf (bdf_mech.c): one custom op of f, forward only,
 * the rows at opt->times (ts REMAT_NONE) or at the K times ts holds; opt
 * checked but for the method's own requirements (adaptive, discrete
 * adjoint, y0 f64[S]) */
remat_status rmi_ode_bdf_integrate(remat_fn *f, const remat_mechanism *m, const remat_ode_options *opt,
                                   remat_val y0, remat_val params, remat_val ts, int64_t K, remat_val *y_at_outputs,
                                   remat_val *stats);

/* NULL out of range. */
const ode_tableau *rmi_ode_tableau(remat_ode_method method);

/* sum_j w_j k_j over the nonzero w_j, in j order (a weight 1 adds k_j
 * itself); REMAT_NONE if all are 0. The explicit, adaptive and Rosenbrock
 * steps combine their stages with it (step.c). */
remat_val ode_combine(remat_fn *f, int n, const double *w, const remat_val *k);

/* Emits one Rosenbrock step of tb (tb->ros != NULL) of the right-hand side
 * rhs (ode_rhs, below) into f, the other arguments as remat_ode_step's; *err (may be NULL) gets the embedded error estimate
 * sum_i e_i k_i, shaped like y; k (may be NULL; tb->stages values) the
 * stages k_i, for the continuous extension (no more right-hand sides). */
struct ode_rhs;
remat_status rmi_ode_rosenbrock_step(remat_fn *f, const struct ode_rhs *rhs, const ode_tableau *tb, remat_val t,
                                     remat_val h, remat_val y, remat_val params, remat_val *y_next,
                                     remat_val *err, remat_val *k);
/* ---- adaptive stepping (adaptive_step.c, adaptive.c, loop.c) ---- */

/* The loop's carries: y and fy = f(t, y) are differentiated, the rest is
 * control state (times, the PID memory r1 r2 of the last two accepted
 * 1/error, attempt counts, Hairer's stiff and calm step counts). */
enum { ODE_Y, ODE_FY, ODE_T, ODE_TPROP, ODE_R1, ODE_R2, ODE_NACC, ODE_NREJ, ODE_STIFF, ODE_CALM, ODE_N_CARRY };
#define ODE_N_DIFF 2
/* accepted stiff steps (Hairer's DOPRI5: 15) that stop an explicit method */
#define ODE_STIFF_STEPS 15
#define ODE_DEFAULT_MAX_STEPS 4096

typedef struct {
    const ode_tableau *tb;
    double rtol, atol, error_order;
    double c1, c2, c3; /* exponents of 1/q, r1, r2 */
    double safety, factormin, factormax;
    int64_t max_steps;
    int n_jumps;           /* opt->jump_ts: steps end on them */
    const double *jump_ts;
} ode_ctl;

/* The right-hand side an adaptive integration steps: the mechanism's
 * (eval NULL), or eval's (the backsolve adjoint's augmented system,
 * backsolve.c); S and P the lengths of y and params, timed whether it reads t. */
typedef struct ode_rhs {
    const remat_mechanism *m;
    remat_status (*eval)(remat_fn *f, const struct ode_rhs *r, remat_val t, remat_val y, remat_val p, remat_val *dydt);
    const void *ctx;
    int64_t S, P;
    int timed;
} ode_rhs;

/* m's right-hand side as an ode_rhs */
ode_rhs ode_rhs_of(const remat_mechanism *m);
/* dydt = r(t, y, p) emitted into f */
remat_status ode_rhs_eval(remat_fn *f, const ode_rhs *r, remat_val t, remat_val y, remat_val p, remat_val *dydt);

/* Hairer's first step from (t0, y0, f0 = f(t0, y0)), all stop_gradient'ed */
remat_status ode_initial_step(remat_fn *f, const ode_rhs *r, const ode_ctl *c, remat_val t0, remat_val y0,
                              remat_val f0, remat_val params, remat_val *dt0);
/* The attempt body and loop condition of adaptive_step.c's header comment */
/* K > 0: dense output (dense.c), the carries y, fy, out (S, K), then the
 * control ones, and a const ts (K,) after t_floor */
remat_status ode_attempt_body(const ode_rhs *r, const ode_ctl *c, remat_dtype dt, int64_t S, int has_params,
                              int64_t K, remat_fn **out);
remat_status ode_attempt_cond(const ode_ctl *c, remat_dtype dt, int64_t S, int64_t P, int has_params, int64_t K,
                              remat_fn **out);

/* Runs body while cond holds (remat_while, its first n_diff carries kept on
 * a rejected iteration), at most `bound` iterations; the schedule of so,
 * its zero spec meaning remat_while's default (online). */
remat_status ode_loop(remat_fn *f, const remat_fn *cond, const remat_fn *body, int n_carry, int n_diff,
                      const remat_val *init, int n_consts, const remat_val *consts, int64_t bound,
                      const remat_scan_options *so, remat_val *carry_out);

/* Output times as loop data (dense.c): the buffer out (S, K) with the rows
 * of ts (K,) in (t, t_next] set to the step's continuous extension from y
 * to y1 = y(t + h): explicit methods' from the stages k[0..stages] of tb,
 * k[stages] = h f(t + h, y1); Rosenbrock methods' from their stages
 * k[0..stages-1] (rmi_ode_rosenbrock_step's); methods without one (euler,
 * rk4) the cubic Hermite interpolant, k[0] = h f(t, y), k[1] = h f(t + h,
 * y1); the other rows kept. */
remat_val ode_dense_update(remat_fn *f, const ode_tableau *tb, remat_dtype dt, int64_t S, int64_t K, remat_val out,
                           remat_val ts, remat_val t, remat_val t_next, remat_val y, remat_val y1, remat_val h,
                           const remat_val *k);
/* The same for the rows where mask (K,) is nonzero, whatever their time
 * (theta still (t_k - t)/h, clamped to [0, 1]) */
remat_val ode_dense_update_masked(remat_fn *f, const ode_tableau *tb, remat_dtype dt, int64_t S, int64_t K,
                                  remat_val out, remat_val ts, remat_val t, remat_val mask, remat_val y, remat_val y1,
                                  remat_val h, const remat_val *k);
/* ode_dense_update_masked in two parts: the step's coefficients P (S,)
 * each, from its stages k as above (returns their count: 4 explicit, 3
 * Hermite with P[3] REMAT_NONE, ros->n_dense Rosenbrock), then the rows at
 * theta from them; a caller that reads many rows of one step (rows.c's
 * grid) forms P once */
#define ODE_DENSE_TERMS 4
int ode_dense_coeffs(remat_fn *f, const ode_tableau *tb, remat_val y, remat_val y1, const remat_val *k, remat_val *P);
remat_val ode_dense_eval_masked(remat_fn *f, const ode_tableau *tb, remat_dtype dt, int64_t S, int64_t K,
                                remat_val out, remat_val ts, remat_val t, remat_val mask, remat_val y, remat_val y1,
                                remat_val h, const remat_val *P);

/* One step of tb (with ode_has_extension) from (t, y) with fy = f(t, y)
 * to tn = t + h (fixed_dense.c), its stages kept for the continuous
 * extension. Explicit: k[0] = h fy, k[1..stages-1] as step.c forms them,
 * y1 = y + sum b_i k_i, fy1 = f(tn, y1) and k[stages] = h fy1 (the FSAL
 * stage of tsit5 and dopri5). Rosenbrock: rmi_ode_rosenbrock_step's y1
 * and stages k[0..stages-1], and fy1 = fy unread (f(t, y) comes with the
 * Jacobian inside the step: no right-hand side beyond the step's). k holds
 * stages + 1 values */
remat_status ode_step_kept(remat_fn *b, const ode_rhs *r, const ode_tableau *tb, remat_val t, remat_val tn,
                           remat_val h, remat_val y, remat_val fy, remat_val p, remat_val *k, remat_val *y1,
                           remat_val *fy1);

/* remat_ode_integrate_times with fixed steps (fixed_dense.c): opt->steps
 * steps of opt->dt from t0 in one scan, the rows at the K times held by ts
 * (K,): a row within REMAT_ODE_GRID_TOL j dt of a grid point t0 + j dt is
 * the step's end y' there, the others the step's continuous extension (the
 * method's own: tsit5, dopri5, rodas5; else the cubic Hermite interpolant); times
 * past t0 + steps dt keep y0 (the caller covers them) */
remat_status ode_integrate_fixed_dense(remat_fn *f, const remat_mechanism *m, const remat_ode_options *opt,
                                       remat_val y0, remat_val params, remat_val ts, int64_t K,
                                       remat_val *y_at_outputs);

/* The adaptive integration behind remat_ode_integrate_stats (options
 * checked) at K output times: opt->times (ts REMAT_NONE), or dense output
 * at the times held by the value ts (K,) (remat_ode_integrate_times) */
remat_status ode_integrate_adaptive(remat_fn *f, const remat_mechanism *m, const remat_ode_options *opt,
                                    remat_val y0, remat_val params, remat_val ts, int64_t K, remat_val *y_at_outputs,
                                    remat_val *stats);
/* The same for the right-hand side r, y0 (r->S,) unbatched, ts REMAT_NONE
 * and opt->dense false (the backsolve adjoint's backward solves) */
remat_status ode_integrate_adaptive_rhs(remat_fn *f, const ode_rhs *r, const remat_ode_options *opt, remat_val y0,
                                        remat_val params, remat_val *y_at_outputs, remat_val *stats);
/* One adaptive solve of r from y0 at t0 to t1, both scalar values of f
 * (t1 >= t0; equal: y0 back), opt's method, tolerances, controller, dt0 and
 * max_steps; *y1 NaN when it stops short (the backsolve adjoint's backward
 * intervals when the output times are a value) */
remat_status ode_integrate_adaptive_span(remat_fn *f, const ode_rhs *r, const remat_ode_options *opt, remat_val y0,
                                         remat_val params, remat_val t0, remat_val t1, remat_val *y1);
/* A batched y0 (..., S): ode_integrate_adaptive once per member, the
 * outputs (n_times, ..., S), the stats summed (counts), least (t), worst (code) */
remat_status ode_integrate_adaptive_batch(remat_fn *f, const remat_mechanism *m, const remat_ode_options *opt,
                                          remat_val y0, remat_val params, remat_val ts, int64_t K,
                                          remat_val *y_at_outputs, remat_val *stats);

/* opt's controller and budget checked into c (adaptive.c) */
remat_status ode_ctl_of(const remat_ode_options *opt, ode_ctl *c);
/* tk less 100 ulps in dtype dt: an adaptive step proposed past it lands on tk */
double ode_floor_of(double tk, remat_dtype dt);

/* ---- the backsolve adjoint (backsolve.c) ---- */

/* The right-hand side's VJP: vjp(y, [t,] [p,] a) -> (f, a^T df/dy, [a^T df/dp]) */
typedef struct {
    remat_fn *vjp;
    int timed, has_p;
} ode_aug_rhs;
remat_status ode_aug_rhs_new(const remat_mechanism *m, remat_dtype dt, int64_t S, int64_t P, ode_aug_rhs *out);
/* fz = (f, -a^T df/dy, -a^T df/dp) at (t, y, p) emitted into g (fz[2] REMAT_NONE without p) */
void ode_aug_eval(remat_fn *g, const ode_aug_rhs *ar, remat_val t, remat_val y, remat_val a, remat_val p,
                  remat_val fz[3]);

/* REMAT_OK when opt->adjoint is discrete or a backsolve this integration
 * supports (fixed steps, explicit method, y0 (S,), params (P,)); else an
 * error naming what is not. */
remat_status rmi_ode_backsolve_check(const remat_ode_options *opt, remat_fn *f, remat_val y0, remat_val params);
/* ys (K, S), the fixed-step integration of y0 and params (built from their
 * stop_gradient), through the op whose VJP solves the adjoint backwards:
 * *out has ys' values; steps[k] as check_grid counts them; ts (K,) the
 * output times as a value (adaptive, remat_ode_integrate_times), else
 * REMAT_NONE and opt->times; nsteps (K,) with ts and fixed steps: the
 * step counts as a value too (the row scan, rmi_ode_rows_continuous;
 * steps unread), so the op's programs depend on K, not on the times. */
remat_status rmi_ode_backsolve_wrap(remat_fn *f, const remat_mechanism *m, const remat_ode_options *opt,
                                    const int64_t *steps, remat_val y0, remat_val params, remat_val ts,
                                    remat_val nsteps, remat_val ys, remat_val *out);

/* ---- the interpolating adjoint (interp.c) ---- */

/* As rmi_ode_backsolve_wrap for REMAT_ODE_ADJOINT_INTERPOLATING; ts (K,)
 * the output times as a value (remat_ode_integrate_times), else REMAT_NONE
 * and opt->times; nsteps as there */
remat_status rmi_ode_interp_wrap(remat_fn *f, const remat_mechanism *m, const remat_ode_options *opt,
                                 const int64_t *steps, remat_val y0, remat_val params, remat_val ts, remat_val nsteps,
                                 remat_val ys, remat_val *out);

/* ---- the continuous adjoints of the row scan (rows_adjoint.c) ---- */

/* remat_ode_integrate_rows with opt->adjoint backsolve or interpolating
 * (fixed steps): the rows scan's forced steps (every interval's own, as
 * remat_ode_integrate's per-interval grid, tsit5 and dopri5 too) from
 * stop_gradient'ed y0 and params, through the adjoint's op with the times
 * and step counts as its inputs. */
remat_status rmi_ode_rows_continuous(remat_fn *f, const remat_mechanism *m, const remat_ode_options *opt,
                                     remat_val y0, remat_val params, remat_val times, remat_val steps,
                                     remat_val *y_at_outputs);

#endif

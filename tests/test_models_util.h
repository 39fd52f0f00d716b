/*
 * test_models_util.h — what the test_models_*.c files share: running a
 * program on f64 buffers, the two test mechanisms, the tableaus' steps
 * written out in plain C, the graph builders over remat_ode_integrate and the
 * closed form of A -> B -> C.
 *
 *   remat_mechanism *m = parse(NET5);
 *   remat_fn *f = states_fn(m, &opt);
 *   remat_program *p = compile_ok(f);
 *   run(p, (double *[]){y0, k}, (double *[]){ys}, NULL);
 *   ref_step(m, REMAT_ODE_RK4, t, h, y, k, y_next);
 */
#ifndef REMAT_TEST_MODELS_UTIL_H
#define REMAT_TEST_MODELS_UTIL_H

#include "test_util.h"

#include <math.h>

#include "models/ode/ode_impl.h"
#include "remat/remat.h"

/* most species or values a reference step holds */
#define MAXV 64

/* |got - want| <= rel * |want| + abs */
#define assert_close(got, want, rel, abs_)                                                                  \
    do {                                                                                                    \
        double g_ = (got), w_ = (want);                                                                     \
        if (!(fabs(g_ - w_) <= (rel) * fabs(w_) + (abs_)))                                                  \
            fail_msg("%s = %.17g, expected %.17g (diff %.3g)", #got, g_, w_, g_ - w_);                       \
    } while (0)

/* Runs p on f64 buffers; shapes come from the program. */
void run(remat_program *p, double *const *in, double *const *out, remat_stats *st);

/* A -> B -> C with k1 = 1.0, k2 = 0.5 */
extern const char *const ABC;
/* Five species exercising every rate form; NET5_Y0 its initial state */
extern const char *const NET5;
extern const double NET5_Y0[5];

/* ---- reference steps in plain C (the tableaus written out) ---- */
void ref_rhs(const remat_mechanism *m, double t, const double *y, const double *p, double *dydt);
void ref_step(const remat_mechanism *m, remat_ode_method method, double t, double h, const double *y,
              const double *p, double *out);

/* ---- graph builders ---- */

/* f(y0: (S,), params: (P,)) -> states at the output times (n_times, S) */
remat_fn *states_fn(const remat_mechanism *m, const remat_ode_options *opt);
/* f(y0, params) -> sum(W * states): a scalar touching every output */
remat_fn *weighted_loss_fn(const remat_mechanism *m, const remat_ode_options *opt, const double *w);
/* The seed's objective: -C_B at the outlet, f(y0, k) */
remat_fn *neg_cb_fn(const remat_mechanism *m, const remat_ode_options *opt);

/* B(t) = k1/(k2-k1) (e^{-k1 t} - e^{-k2 t}) and its k-derivatives */
void abc_exact(double t, double k1, double k2, double *B, double *dk1, double *dk2);

#endif

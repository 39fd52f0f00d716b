/*
 * pfr_cvodes.h — the A->B->C plug-flow reactor's gradient by SUNDIALS
 * CVODES's continuous adjoint, for bench_pfr to compare remat against at
 * matched accuracy. Built only when meson finds SUNDIALS (HAVE_CVODES); the
 * library never links it.
 *
 *   y' = f(y, p) = [-k1 A, k1 A - k2 B, k2 B],  y(0) = y0,  p = (k1, k2)
 *
 * Loss J = sum_k phi_k(y(t_k)) over output times t_1 < ... < t_K:
 *   data == NULL: J = -B(t_K)                     (the seed objective)
 *   else:         J = sum_k |y(t_k) - d_k|^2      (a fit objective)
 * Adjoint (CVODES user guide, "adjoint sensitivity analysis"): forward CVodeF
 * through every t_k with checkpoints; backward from t_K,
 *   lambda' = -f_y^T lambda,  lambda(t_k^-) = lambda(t_k^+) + dphi_k/dy,
 *   dJ/dp   = int_0^{t_K} lambda^T f_p dt   (y0 does not depend on p)
 * as a backward quadrature. Each jump is a CVodeB to t_k followed by
 * CVodeReInitB / CVodeQuadReInitB (the "discrete observations" recipe).
 *
 * Tolerances: one knob rtol; atol = PFR_CV_ATOL_PER_RTOL * rtol for the
 * state, the adjoint and the quadrature, and the quadrature is part of the
 * backward error test (CVodeSetQuadErrConB).
 *
 *   pfr_cv *cv = pfr_cv_new(PFR_CV_ADAMS, 1e-8);
 *   double J, g[2];
 *   pfr_cv_grad(cv, (double[]){1, 0, 0}, 1.0, 0.5, 1, (double[]){10.0}, NULL, &J, g);
 *   pfr_cv_free(cv);
 */
#ifndef BENCH_PFR_CVODES_H
#define BENCH_PFR_CVODES_H

#define PFR_CV_ATOL_PER_RTOL 1e-3
/* CVodeAdjInit: steps between checkpoints. More than any run here takes, so
 * that CVODES keeps the interpolation data of every step and never re-runs
 * the forward (its store-all, and its fastest setting; 100 costs up to 1.5x
 * at tight tolerances). pfr_cv_steps reports the checkpoints taken. */
#define PFR_CV_CHECKPOINT_STEPS 5000

typedef enum {
    PFR_CV_ADAMS = 0, /* Adams–Moulton, fixed-point iteration (non-stiff: no Jacobian) */
    PFR_CV_BDF,       /* BDF, Newton with a dense direct solver and the analytic Jacobian */
    PFR_CV_KIND_COUNT
} pfr_cv_kind;

const char *pfr_cv_kind_name(pfr_cv_kind kind); /* "adams-fixedpoint", "bdf-dense" */
const char *pfr_cv_version(void);               /* SUNDIALS_VERSION */

typedef struct pfr_cv pfr_cv;

/* NULL on failure (message on stderr). */
pfr_cv *pfr_cv_new(pfr_cv_kind kind, double rtol);
void pfr_cv_free(pfr_cv *cv); /* NULL is a no-op */

/* The loss and its gradient; 0 on success, -1 on a CVODES failure (the
 * failing call and its flag on stderr). */
int pfr_cv_grad(pfr_cv *cv, const double y0[3], double k1, double k2, int n_out, const double *t_out,
                const double *data, double *loss, double g[2]);

/* Steps the last pfr_cv_grad took forward and backward, and the checkpoints
 * its forward run stored besides the start (0: CVODES never re-runs the
 * forward). */
void pfr_cv_steps(pfr_cv *cv, long *forward, long *backward, int *checkpoints);

#endif

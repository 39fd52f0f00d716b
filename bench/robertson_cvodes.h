/*
 * robertson_cvodes.h — Robertson's stiff kinetics and its parameter gradient
 * by SUNDIALS CVODES (BDF, dense Newton, CVodeB adjoint), the reference
 * tests/test_models_robertson.c holds remat's Rodas5 to and bench_robertson times it
 * against. Built only when meson finds SUNDIALS (HAVE_CVODES); the library
 * never links it.
 *
 *   y1' = -k1 y1 + k3 y2 y3
 *   y2' =  k1 y1 - k2 y2^2 - k3 y2 y3
 *   y3' =  k2 y2^2,            k = (0.04, 3e7, 1e4),  y(0) = (1, 0, 0)
 *
 * (H. H. Robertson, "The solution of a set of reaction rate equations", in
 * J. Walsh (ed.), Numerical Analysis, Academic Press (1966) 178–182; the
 * CVODES example cvsRoberts_dns uses the same constants.)
 *
 * Loss L = sum_c w_c y_c(T), T the last output time. Adjoint (CVODES user
 * guide, adjoint sensitivity analysis): lambda' = -f_y^T lambda backward
 * from lambda(T) = w, dL/dk = int_0^T lambda^T f_k dt as a backward
 * quadrature (y(0) does not depend on k).
 *
 * Tolerances: rtol for states, adjoint and quadrature; atol per component
 * rtol * ROB_CV_ATOL_SCALE[c] (y2 stays below 4e-5: its absolute tolerance
 * is 1e-4 of the others', as in cvsRoberts_dns), and the quadrature is in
 * the backward error test.
 *
 *   rob_cv *cv = rob_cv_new(1e-12);
 *   double y[3], g[3];
 *   rob_cv_run(cv, (double[]){0.04, 3e7, 1e4}, 1, (double[]){1e5}, y, (double[]){1, 0, 0}, g);
 *   rob_cv_free(cv);
 */
#ifndef BENCH_ROBERTSON_CVODES_H
#define BENCH_ROBERTSON_CVODES_H

typedef struct rob_cv rob_cv;

/* NULL on failure (message on stderr). */
rob_cv *rob_cv_new(double rtol);
void rob_cv_free(rob_cv *cv); /* NULL is a no-op */

/* Integrates from y(0) = (1, 0, 0) through the n_out increasing times t_out,
 * writing y at each (n_out x 3) to y_out; when w is not NULL also the
 * gradient dL/dk (3) of L = w . y(t_out[n_out - 1]) to grad. 0 on success,
 * -1 on a CVODES failure (the call and its flag on stderr). */
int rob_cv_run(rob_cv *cv, const double k[3], int n_out, const double *t_out, double *y_out, const double w[3],
               double grad[3]);

/* Steps the last rob_cv_run took forward and backward. */
void rob_cv_steps(const rob_cv *cv, long *forward, long *backward);
const char *rob_cv_version(void);

#endif

/*
 * cvodes_adj.h — what the CVODES references (pfr_cvodes.c,
 * robertson_cvodes.c) share: the SUNDIALS objects of one adjoint problem,
 * set up once and re-used per gradient, with the forward and backward
 * solver set up by method, and one release. Built only with SUNDIALS
 * (HAVE_CVODES); the library never links it.
 *
 *   cv_adj a = {0};
 *   const cv_adj_problem p = {.who = "mine", .lmm = CV_BDF, .n = 3, .n_quad = 2,
 *                             .rhs = rhs, .jac = jac, .rhs_b = rhs_b, .jac_b = jac_b,
 *                             .quad_b = quad_b, .checkpoint_steps = 5000, .user_data = me};
 *   if (cv_adj_init(&a, &p)) ...          // then the forward tolerances, CVodeF ...
 *   if (cv_adj_backward(&a, &p, T, rtol, atol, atol)) ...   // then CVodeB ...
 *   cv_adj_free(&a);
 */
#ifndef BENCH_CVODES_ADJ_H
#define BENCH_CVODES_ADJ_H

#include <stdbool.h>
#include <stdio.h>

#include <cvodes/cvodes.h>
#include <nvector/nvector_serial.h>
#include <sunlinsol/sunlinsol_dense.h>
#include <sunmatrix/sunmatrix_dense.h>
#include <sunnonlinsol/sunnonlinsol_fixedpoint.h>

#define CV_ADJ_Y(v) N_VGetArrayPointer(v)

/* goto fail, the failing call and its flag on stderr, when a CVODES call
 * returns a negative flag */
#define CV_ADJ_CHECK(who, call)                                                                              \
    do {                                                                                                     \
        int flag_ = (call);                                                                                  \
        if (flag_ < 0) {                                                                                     \
            fprintf(stderr, "%s: %s failed with flag %d\n", who, #call, flag_);                              \
            goto fail;                                                                                       \
        }                                                                                                    \
    } while (0)

typedef struct {
    const char *who; /* names the reference in failure messages */
    /* CV_ADAMS: fixed-point iteration, no Jacobian (non-stiff); CV_BDF:
     * Newton with a dense direct solver and jac / jac_b */
    int lmm;
    int n, n_quad; /* states (and adjoint states), backward quadratures */
    CVRhsFn rhs;
    CVLsJacFn jac;
    CVRhsFnB rhs_b;
    CVLsJacFnB jac_b;
    CVQuadRhsFnB quad_b;
    /* CVodeAdjInit: steps between checkpoints, Hermite interpolation */
    long checkpoint_steps;
    void *user_data; /* for every callback, forward and backward */
} cv_adj_problem;

typedef struct {
    SUNContext ctx;
    void *mem;
    N_Vector y, yB, qB; /* state (n), adjoint (n), quadrature (n_quad), zeroed */
    SUNMatrix A, AB;
    SUNLinearSolver LS, LSB;
    SUNNonlinearSolver NLS, NLSB;
    int which;   /* the backward problem */
    bool have_b; /* it exists (created by the first cv_adj_backward) */
} cv_adj;

/* The forward problem with its solver and the adjoint memory; the caller
 * sets the forward tolerances. 0, or -1 with *a half built (cv_adj_free it). */
int cv_adj_init(cv_adj *a, const cv_adj_problem *p);
/* The backward problem from tB0 with yB and qB as they are: created the
 * first time (CVodeInitB checks tB0 against the forward run, so after it),
 * re-initialised after. Tolerances rtol / atol_b for the adjoint, rtol /
 * atol_q for the quadrature, which is in the error test. 0, or -1. */
int cv_adj_backward(cv_adj *a, const cv_adj_problem *p, double tB0, double rtol, double atol_b, double atol_q);
/* steps of the backward problem since its last (re)initialisation */
long cv_adj_backward_steps(cv_adj *a);
void cv_adj_free(cv_adj *a); /* releases what is set; a zeroed cv_adj is a no-op */

#endif

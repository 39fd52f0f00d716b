/*
 * robertson_cvodes.c — CVODES BDF + CVodeB on Robertson (see
 * robertson_cvodes.h). One CVODES memory per tolerance, re-initialised per
 * run, as an optimiser calling it in a loop would.
 */
#include "robertson_cvodes.h"

#include <stdlib.h>

#include <sundials/sundials_version.h>

#include "cvodes_adj.h"

/* steps between CVodeAdjInit checkpoints: more than a run takes, so CVODES
 * keeps every step's interpolation data and never re-runs the forward */
#define ROB_CV_CHECKPOINT_STEPS 20000

static const double ROB_CV_ATOL_SCALE[3] = {1e-2, 1e-6, 1e-2};

struct rob_cv {
    double rtol;
    cv_adj_problem prob;
    cv_adj a;
    N_Vector atol;
    double k[3];
    long steps_f, steps_b;
};

const char *rob_cv_version(void) { return SUNDIALS_VERSION; }

#define Y(v) CV_ADJ_Y(v)

static int rhs(sunrealtype t, N_Vector yv, N_Vector ydot, void *ud)
{
    (void)t;
    const double *k = ((const rob_cv *)ud)->k, *y = Y(yv);
    double *d = Y(ydot), r1 = k[0] * y[0], r2 = k[1] * y[1] * y[1], r3 = k[2] * y[1] * y[2];
    d[0] = -r1 + r3, d[1] = r1 - r2 - r3, d[2] = r2;
    return 0;
}

/* J[r][c] = df_r/dy_c */
static void jacobian(const double *k, const double *y, double J[3][3])
{
    J[0][0] = -k[0], J[0][1] = k[2] * y[2], J[0][2] = k[2] * y[1];
    J[1][0] = k[0], J[1][1] = -2 * k[1] * y[1] - k[2] * y[2], J[1][2] = -k[2] * y[1];
    J[2][0] = 0, J[2][1] = 2 * k[1] * y[1], J[2][2] = 0;
}

static int jac(sunrealtype t, N_Vector y, N_Vector fy, SUNMatrix M, void *ud, N_Vector t1, N_Vector t2, N_Vector t3)
{
    (void)t, (void)fy, (void)t1, (void)t2, (void)t3;
    double J[3][3];
    jacobian(((const rob_cv *)ud)->k, Y(y), J);
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++)
            SM_ELEMENT_D(M, r, c) = J[r][c];
    return 0;
}

/* lambda' = -f_y^T lambda */
static int rhs_b(sunrealtype t, N_Vector y, N_Vector yB, N_Vector yBdot, void *ud)
{
    (void)t;
    double J[3][3];
    jacobian(((const rob_cv *)ud)->k, Y(y), J);
    const double *l = Y(yB);
    double *d = Y(yBdot);
    for (int c = 0; c < 3; c++)
        d[c] = -(J[0][c] * l[0] + J[1][c] * l[1] + J[2][c] * l[2]);
    return 0;
}

/* the backward system's Jacobian: -f_y^T */
static int jac_b(sunrealtype t, N_Vector y, N_Vector yB, N_Vector fyB, SUNMatrix M, void *ud, N_Vector t1,
                 N_Vector t2, N_Vector t3)
{
    (void)t, (void)yB, (void)fyB, (void)t1, (void)t2, (void)t3;
    double J[3][3];
    jacobian(((const rob_cv *)ud)->k, Y(y), J);
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++)
            SM_ELEMENT_D(M, r, c) = -J[c][r];
    return 0;
}

/* q' = -lambda^T f_k, integrated from T down to 0 from q = 0, so that
 * q(0) = int_0^T lambda^T f_k dt = dL/dk */
static int quad_b(sunrealtype t, N_Vector yv, N_Vector yB, N_Vector qBdot, void *ud)
{
    (void)t, (void)ud;
    const double *y = Y(yv), *l = Y(yB);
    double *d = Y(qBdot);
    d[0] = -y[0] * (l[1] - l[0]);
    d[1] = -y[1] * y[1] * (l[2] - l[1]);
    d[2] = -y[1] * y[2] * (l[0] - l[1]);
    return 0;
}

#define CHECK(call) CV_ADJ_CHECK("robertson_cvodes", call)

rob_cv *rob_cv_new(double rtol)
{
    rob_cv *cv = calloc(1, sizeof *cv);
    if (!cv)
        return NULL;
    cv->rtol = rtol;
    cv->prob = (cv_adj_problem){.who = "robertson_cvodes", .lmm = CV_BDF, .n = 3, .n_quad = 3, .rhs = rhs,
                                .jac = jac, .rhs_b = rhs_b, .jac_b = jac_b, .quad_b = quad_b,
                                .checkpoint_steps = ROB_CV_CHECKPOINT_STEPS, .user_data = cv};
    if (cv_adj_init(&cv->a, &cv->prob))
        goto fail;
    cv->atol = N_VNew_Serial(3, cv->a.ctx);
    if (!cv->atol)
        goto fail;
    for (int c = 0; c < 3; c++)
        Y(cv->atol)[c] = rtol * ROB_CV_ATOL_SCALE[c];
    CHECK(CVodeSVtolerances(cv->a.mem, rtol, cv->atol));
    return cv;
fail:
    rob_cv_free(cv);
    return NULL;
}

void rob_cv_free(rob_cv *cv)
{
    if (!cv)
        return;
    if (cv->atol)
        N_VDestroy(cv->atol); /* before the context it was made in */
    cv_adj_free(&cv->a);
    free(cv);
}

int rob_cv_run(rob_cv *cv, const double k[3], int n_out, const double *t_out, double *y_out, const double w[3],
               double grad[3])
{
    for (int c = 0; c < 3; c++)
        cv->k[c] = k[c];
    cv_adj *a = &cv->a;
    double *y = Y(a->y), *l = Y(a->yB), *q = Y(a->qB);
    y[0] = 1.0, y[1] = 0.0, y[2] = 0.0;
    CHECK(CVodeReInit(a->mem, 0.0, a->y));
    if (w)
        CHECK(CVodeAdjReInit(a->mem));
    for (int i = 0; i < n_out; i++) {
        sunrealtype t;
        int ncheck;
        CHECK(w ? CVodeF(a->mem, t_out[i], a->y, &t, CV_NORMAL, &ncheck)
                : CVode(a->mem, t_out[i], a->y, &t, CV_NORMAL));
        for (int c = 0; c < 3; c++)
            y_out[3 * i + c] = y[c];
    }
    CVodeGetNumSteps(a->mem, &cv->steps_f);
    cv->steps_b = 0;
    if (!w)
        return 0;
    for (int c = 0; c < 3; c++)
        l[c] = w[c], q[c] = 0.0;
    if (cv_adj_backward(a, &cv->prob, t_out[n_out - 1], cv->rtol, cv->rtol * 1e-2, cv->rtol * 1e-6))
        return -1;
    sunrealtype t;
    CHECK(CVodeB(a->mem, 0.0, CV_NORMAL));
    CHECK(CVodeGetB(a->mem, a->which, &t, a->yB));
    CHECK(CVodeGetQuadB(a->mem, a->which, &t, a->qB));
    cv->steps_b = cv_adj_backward_steps(a);
    for (int c = 0; c < 3; c++)
        grad[c] = q[c];
    return 0;
fail:
    return -1;
}

void rob_cv_steps(const rob_cv *cv, long *forward, long *backward)
{
    *forward = cv->steps_f;
    *backward = cv->steps_b;
}

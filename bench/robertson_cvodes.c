/*
 * robertson_cvodes.c — CVODES BDF + CVodeB on Robertson (see
 * robertson_cvodes.h). One CVODES memory per tolerance, re-initialised per
 * run, as an optimiser calling it in a loop would.
 */
#include "robertson_cvodes.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include <cvodes/cvodes.h>
#include <nvector/nvector_serial.h>
#include <sundials/sundials_version.h>
#include <sunlinsol/sunlinsol_dense.h>
#include <sunmatrix/sunmatrix_dense.h>

#if SUNDIALS_VERSION_MAJOR >= 7
#define ROB_CV_COMM SUN_COMM_NULL
#else
#define ROB_CV_COMM NULL
#endif

/* steps between CVodeAdjInit checkpoints: more than a run takes, so CVODES
 * keeps every step's interpolation data and never re-runs the forward */
#define ROB_CV_CHECKPOINT_STEPS 20000

static const double ROB_CV_ATOL_SCALE[3] = {1e-2, 1e-6, 1e-2};

struct rob_cv {
    double rtol;
    SUNContext ctx;
    void *mem;
    N_Vector y, atol, yB, qB;
    SUNMatrix A, AB;
    SUNLinearSolver LS, LSB;
    int which;
    bool have_b;
    double k[3];
    long steps_f, steps_b;
};

const char *rob_cv_version(void) { return SUNDIALS_VERSION; }

#define Y(v) N_VGetArrayPointer(v)

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

#define CHECK(call)                                                                                          \
    do {                                                                                                     \
        int flag_ = (call);                                                                                  \
        if (flag_ < 0) {                                                                                     \
            fprintf(stderr, "robertson_cvodes: %s failed with flag %d\n", #call, flag_);                    \
            goto fail;                                                                                       \
        }                                                                                                    \
    } while (0)

rob_cv *rob_cv_new(double rtol)
{
    rob_cv *cv = calloc(1, sizeof *cv);
    if (!cv)
        return NULL;
    cv->rtol = rtol;
    CHECK(SUNContext_Create(ROB_CV_COMM, &cv->ctx));
    cv->y = N_VNew_Serial(3, cv->ctx);
    cv->atol = N_VNew_Serial(3, cv->ctx);
    cv->yB = N_VNew_Serial(3, cv->ctx);
    cv->qB = N_VNew_Serial(3, cv->ctx);
    if (!cv->y || !cv->atol || !cv->yB || !cv->qB)
        goto fail;
    N_VConst(0.0, cv->y);
    for (int c = 0; c < 3; c++)
        Y(cv->atol)[c] = rtol * ROB_CV_ATOL_SCALE[c];
    cv->mem = CVodeCreate(CV_BDF, cv->ctx);
    if (!cv->mem)
        goto fail;
    CHECK(CVodeInit(cv->mem, rhs, 0.0, cv->y));
    CHECK(CVodeSVtolerances(cv->mem, rtol, cv->atol));
    CHECK(CVodeSetUserData(cv->mem, cv));
    CHECK(CVodeSetMaxNumSteps(cv->mem, 1000000));
    cv->A = SUNDenseMatrix(3, 3, cv->ctx);
    cv->LS = cv->A ? SUNLinSol_Dense(cv->y, cv->A, cv->ctx) : NULL;
    if (!cv->LS)
        goto fail;
    CHECK(CVodeSetLinearSolver(cv->mem, cv->LS, cv->A));
    CHECK(CVodeSetJacFn(cv->mem, jac));
    CHECK(CVodeAdjInit(cv->mem, ROB_CV_CHECKPOINT_STEPS, CV_HERMITE));
    return cv;
fail:
    rob_cv_free(cv);
    return NULL;
}

void rob_cv_free(rob_cv *cv)
{
    if (!cv)
        return;
    if (cv->mem)
        CVodeFree(&cv->mem);
    if (cv->LS)
        SUNLinSolFree(cv->LS);
    if (cv->LSB)
        SUNLinSolFree(cv->LSB);
    if (cv->A)
        SUNMatDestroy(cv->A);
    if (cv->AB)
        SUNMatDestroy(cv->AB);
    N_Vector vs[4] = {cv->y, cv->atol, cv->yB, cv->qB};
    for (int i = 0; i < 4; i++)
        if (vs[i])
            N_VDestroy(vs[i]);
    if (cv->ctx)
        SUNContext_Free(&cv->ctx);
    free(cv);
}

/* created after the first forward run (CVodeInitB checks tB0 against it) */
static int backward_init(rob_cv *cv, double tB0)
{
    if (cv->have_b) {
        CHECK(CVodeReInitB(cv->mem, cv->which, tB0, cv->yB));
        CHECK(CVodeQuadReInitB(cv->mem, cv->which, cv->qB));
        return 0;
    }
    CHECK(CVodeCreateB(cv->mem, CV_BDF, &cv->which));
    CHECK(CVodeInitB(cv->mem, cv->which, rhs_b, tB0, cv->yB));
    CHECK(CVodeSStolerancesB(cv->mem, cv->which, cv->rtol, cv->rtol * 1e-2));
    CHECK(CVodeSetUserDataB(cv->mem, cv->which, cv));
    CHECK(CVodeSetMaxNumStepsB(cv->mem, cv->which, 1000000));
    cv->AB = SUNDenseMatrix(3, 3, cv->ctx);
    cv->LSB = cv->AB ? SUNLinSol_Dense(cv->yB, cv->AB, cv->ctx) : NULL;
    if (!cv->LSB)
        goto fail;
    CHECK(CVodeSetLinearSolverB(cv->mem, cv->which, cv->LSB, cv->AB));
    CHECK(CVodeSetJacFnB(cv->mem, cv->which, jac_b));
    CHECK(CVodeQuadInitB(cv->mem, cv->which, quad_b, cv->qB));
    CHECK(CVodeQuadSStolerancesB(cv->mem, cv->which, cv->rtol, cv->rtol * 1e-6));
    CHECK(CVodeSetQuadErrConB(cv->mem, cv->which, SUNTRUE));
    cv->have_b = true;
    return 0;
fail:
    return -1;
}

int rob_cv_run(rob_cv *cv, const double k[3], int n_out, const double *t_out, double *y_out, const double w[3],
               double grad[3])
{
    for (int c = 0; c < 3; c++)
        cv->k[c] = k[c];
    double *y = Y(cv->y), *l = Y(cv->yB), *q = Y(cv->qB);
    y[0] = 1.0, y[1] = 0.0, y[2] = 0.0;
    CHECK(CVodeReInit(cv->mem, 0.0, cv->y));
    if (w)
        CHECK(CVodeAdjReInit(cv->mem));
    for (int i = 0; i < n_out; i++) {
        sunrealtype t;
        int ncheck;
        CHECK(w ? CVodeF(cv->mem, t_out[i], cv->y, &t, CV_NORMAL, &ncheck)
                : CVode(cv->mem, t_out[i], cv->y, &t, CV_NORMAL));
        for (int c = 0; c < 3; c++)
            y_out[3 * i + c] = y[c];
    }
    CVodeGetNumSteps(cv->mem, &cv->steps_f);
    cv->steps_b = 0;
    if (!w)
        return 0;
    for (int c = 0; c < 3; c++)
        l[c] = w[c], q[c] = 0.0;
    if (backward_init(cv, t_out[n_out - 1]))
        return -1;
    sunrealtype t;
    CHECK(CVodeB(cv->mem, 0.0, CV_NORMAL));
    CHECK(CVodeGetB(cv->mem, cv->which, &t, cv->yB));
    CHECK(CVodeGetQuadB(cv->mem, cv->which, &t, cv->qB));
    CVodeGetNumSteps(CVodeGetAdjCVodeBmem(cv->mem, cv->which), &cv->steps_b);
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

/*
 * pfr_cvodes.c — CVODES adjoint of the A->B->C PFR (see pfr_cvodes.h).
 *
 * One CVODES memory per (method, tolerance), set up once and re-initialised
 * per gradient (CVodeReInit + CVodeAdjReInit, then CVodeReInitB +
 * CVodeQuadReInitB), as an optimiser calling it in a loop would: the timed
 * work is the integration, not the allocation.
 */
#include "pfr_cvodes.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include <cvodes/cvodes.h>
#include <nvector/nvector_serial.h>
#include <sundials/sundials_version.h>
#include <sunlinsol/sunlinsol_dense.h>
#include <sunmatrix/sunmatrix_dense.h>
#include <sunnonlinsol/sunnonlinsol_fixedpoint.h>

#if SUNDIALS_VERSION_MAJOR >= 7
#define PFR_CV_COMM SUN_COMM_NULL
#else
#define PFR_CV_COMM NULL
#endif

struct pfr_cv {
    pfr_cv_kind kind;
    double rtol, atol;
    SUNContext ctx;
    void *mem;
    N_Vector y, yB, qB;
    SUNMatrix A, AB;
    SUNLinearSolver LS, LSB;
    SUNNonlinearSolver NLS, NLSB;
    int which;
    bool have_b;         /* the backward problem exists (created after the first CVodeF) */
    double k1, k2;
    long steps_f, steps_b;
    int checkpoints;
    int n_out_cap;
    double *y_out;       /* (n_out, 3): y at the output times */
};

const char *pfr_cv_kind_name(pfr_cv_kind kind)
{
    return kind == PFR_CV_ADAMS ? "adams-fixedpoint" : kind == PFR_CV_BDF ? "bdf-dense" : "?";
}

const char *pfr_cv_version(void) { return SUNDIALS_VERSION; }

#define Y(v) N_VGetArrayPointer(v)

static int rhs(sunrealtype t, N_Vector y, N_Vector ydot, void *ud)
{
    const pfr_cv *cv = ud;
    const double *u = Y(y);
    double *d = Y(ydot), r1 = cv->k1 * u[0], r2 = cv->k2 * u[1];
    d[0] = -r1, d[1] = r1 - r2, d[2] = r2;
    return 0;
}

static int jac(sunrealtype t, N_Vector y, N_Vector fy, SUNMatrix J, void *ud, N_Vector t1, N_Vector t2, N_Vector t3)
{
    const pfr_cv *cv = ud;
    const double j[3][3] = {{-cv->k1, 0, 0}, {cv->k1, -cv->k2, 0}, {0, cv->k2, 0}};
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++)
            SM_ELEMENT_D(J, r, c) = j[r][c];
    return 0;
}

/* lambda' = -f_y^T lambda */
static int rhs_b(sunrealtype t, N_Vector y, N_Vector yB, N_Vector yBdot, void *ud)
{
    const pfr_cv *cv = ud;
    const double *l = Y(yB);
    double *d = Y(yBdot);
    d[0] = -cv->k1 * (l[1] - l[0]), d[1] = -cv->k2 * (l[2] - l[1]), d[2] = 0.0;
    return 0;
}

static int jac_b(sunrealtype t, N_Vector y, N_Vector yB, N_Vector fyB, SUNMatrix J, void *ud, N_Vector t1,
                 N_Vector t2, N_Vector t3)
{
    const pfr_cv *cv = ud;
    const double j[3][3] = {{cv->k1, -cv->k1, 0}, {0, cv->k2, -cv->k2}, {0, 0, 0}};
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++)
            SM_ELEMENT_D(J, r, c) = j[r][c];
    return 0;
}

/* q' = -lambda^T f_p, integrated from t_K down to 0 from q = 0, so that
 * q(0) = int_0^{t_K} lambda^T f_p dt = dJ/dp */
static int quad_b(sunrealtype t, N_Vector y, N_Vector yB, N_Vector qBdot, void *ud)
{
    const double *u = Y(y), *l = Y(yB);
    double *d = Y(qBdot);
    d[0] = -u[0] * (l[1] - l[0]), d[1] = -u[1] * (l[2] - l[1]);
    return 0;
}

#define CHECK(call)                                                                                          \
    do {                                                                                                     \
        int flag_ = (call);                                                                                  \
        if (flag_ < 0) {                                                                                     \
            fprintf(stderr, "pfr_cvodes: %s failed with flag %d\n", #call, flag_);                          \
            goto fail;                                                                                       \
        }                                                                                                    \
    } while (0)

pfr_cv *pfr_cv_new(pfr_cv_kind kind, double rtol)
{
    pfr_cv *cv = calloc(1, sizeof *cv);
    if (!cv)
        return NULL;
    cv->kind = kind, cv->rtol = rtol, cv->atol = PFR_CV_ATOL_PER_RTOL * rtol;
    CHECK(SUNContext_Create(PFR_CV_COMM, &cv->ctx));
    cv->y = N_VNew_Serial(3, cv->ctx);
    cv->yB = N_VNew_Serial(3, cv->ctx);
    cv->qB = N_VNew_Serial(2, cv->ctx);
    if (!cv->y || !cv->yB || !cv->qB)
        goto fail;
    N_VConst(0.0, cv->y);
    cv->mem = CVodeCreate(kind == PFR_CV_ADAMS ? CV_ADAMS : CV_BDF, cv->ctx);
    if (!cv->mem)
        goto fail;
    CHECK(CVodeInit(cv->mem, rhs, 0.0, cv->y));
    CHECK(CVodeSStolerances(cv->mem, cv->rtol, cv->atol));
    CHECK(CVodeSetUserData(cv->mem, cv));
    CHECK(CVodeSetMaxNumSteps(cv->mem, 1000000));
    if (kind == PFR_CV_ADAMS) {
        cv->NLS = SUNNonlinSol_FixedPoint(cv->y, 0, cv->ctx);
        if (!cv->NLS)
            goto fail;
        CHECK(CVodeSetNonlinearSolver(cv->mem, cv->NLS));
    } else {
        cv->A = SUNDenseMatrix(3, 3, cv->ctx);
        cv->LS = cv->A ? SUNLinSol_Dense(cv->y, cv->A, cv->ctx) : NULL;
        if (!cv->LS)
            goto fail;
        CHECK(CVodeSetLinearSolver(cv->mem, cv->LS, cv->A));
        CHECK(CVodeSetJacFn(cv->mem, jac));
    }
    CHECK(CVodeAdjInit(cv->mem, PFR_CV_CHECKPOINT_STEPS, CV_HERMITE));
    return cv;
fail:
    pfr_cv_free(cv);
    return NULL;
}

void pfr_cv_free(pfr_cv *cv)
{
    if (!cv)
        return;
    if (cv->mem)
        CVodeFree(&cv->mem); /* frees the backward problems and the adjoint memory too */
    if (cv->NLS)
        SUNNonlinSolFree(cv->NLS);
    if (cv->NLSB)
        SUNNonlinSolFree(cv->NLSB);
    if (cv->LS)
        SUNLinSolFree(cv->LS);
    if (cv->LSB)
        SUNLinSolFree(cv->LSB);
    if (cv->A)
        SUNMatDestroy(cv->A);
    if (cv->AB)
        SUNMatDestroy(cv->AB);
    if (cv->y)
        N_VDestroy(cv->y);
    if (cv->yB)
        N_VDestroy(cv->yB);
    if (cv->qB)
        N_VDestroy(cv->qB);
    if (cv->ctx)
        SUNContext_Free(&cv->ctx);
    free(cv->y_out);
    free(cv);
}

/* The backward problem: created once, after the first forward run (CVodeInitB
 * checks tB0 against the forward interval). */
static int backward_init(pfr_cv *cv, double tB0)
{
    if (cv->have_b) {
        CHECK(CVodeReInitB(cv->mem, cv->which, tB0, cv->yB));
        CHECK(CVodeQuadReInitB(cv->mem, cv->which, cv->qB));
        return 0;
    }
    CHECK(CVodeCreateB(cv->mem, cv->kind == PFR_CV_ADAMS ? CV_ADAMS : CV_BDF, &cv->which));
    CHECK(CVodeInitB(cv->mem, cv->which, rhs_b, tB0, cv->yB));
    CHECK(CVodeSStolerancesB(cv->mem, cv->which, cv->rtol, cv->atol));
    CHECK(CVodeSetUserDataB(cv->mem, cv->which, cv));
    CHECK(CVodeSetMaxNumStepsB(cv->mem, cv->which, 1000000));
    if (cv->kind == PFR_CV_ADAMS) {
        cv->NLSB = SUNNonlinSol_FixedPoint(cv->yB, 0, cv->ctx);
        if (!cv->NLSB)
            goto fail;
        CHECK(CVodeSetNonlinearSolverB(cv->mem, cv->which, cv->NLSB));
    } else {
        cv->AB = SUNDenseMatrix(3, 3, cv->ctx);
        cv->LSB = cv->AB ? SUNLinSol_Dense(cv->yB, cv->AB, cv->ctx) : NULL;
        if (!cv->LSB)
            goto fail;
        CHECK(CVodeSetLinearSolverB(cv->mem, cv->which, cv->LSB, cv->AB));
        CHECK(CVodeSetJacFnB(cv->mem, cv->which, jac_b));
    }
    CHECK(CVodeQuadInitB(cv->mem, cv->which, quad_b, cv->qB));
    CHECK(CVodeQuadSStolerancesB(cv->mem, cv->which, cv->rtol, cv->atol));
    CHECK(CVodeSetQuadErrConB(cv->mem, cv->which, SUNTRUE));
    cv->have_b = true;
    return 0;
fail:
    return -1;
}

static long backward_steps(pfr_cv *cv)
{
    long n = 0;
    CVodeGetNumSteps(CVodeGetAdjCVodeBmem(cv->mem, cv->which), &n);
    return n;
}

int pfr_cv_grad(pfr_cv *cv, const double y0[3], double k1, double k2, int n_out, const double *t_out,
                const double *data, double *loss, double g[2])
{
    cv->k1 = k1, cv->k2 = k2;
    if (n_out > cv->n_out_cap) {
        double *p = realloc(cv->y_out, sizeof *p * 3 * (size_t)n_out);
        if (!p)
            return -1;
        cv->y_out = p, cv->n_out_cap = n_out;
    }
    double *y = Y(cv->y), *l = Y(cv->yB), *q = Y(cv->qB);
    y[0] = y0[0], y[1] = y0[1], y[2] = y0[2];
    CHECK(CVodeReInit(cv->mem, 0.0, cv->y));
    CHECK(CVodeAdjReInit(cv->mem));
    for (int k = 0; k < n_out; k++) {
        sunrealtype t;
        int ncheck;
        CHECK(CVodeF(cv->mem, t_out[k], cv->y, &t, CV_NORMAL, &ncheck));
        cv->checkpoints = ncheck;
        for (int c = 0; c < 3; c++)
            cv->y_out[3 * k + c] = y[c];
    }
    CVodeGetNumSteps(cv->mem, &cv->steps_f);

    double J = 0;
    if (!data)
        J = -cv->y_out[3 * (n_out - 1) + 1];
    else
        for (int i = 0; i < 3 * n_out; i++)
            J += (cv->y_out[i] - data[i]) * (cv->y_out[i] - data[i]);
    /* lambda(t_K) = dphi_K/dy */
    for (int c = 0; c < 3; c++)
        l[c] = data ? 2.0 * (cv->y_out[3 * (n_out - 1) + c] - data[3 * (n_out - 1) + c]) : c == 1 ? -1.0 : 0.0;
    q[0] = q[1] = 0.0;
    if (backward_init(cv, t_out[n_out - 1]))
        return -1;
    cv->steps_b = 0;
    for (int k = n_out - 1; k >= 0; k--) {
        double t_prev = k > 0 ? t_out[k - 1] : 0.0;
        sunrealtype t;
        CHECK(CVodeB(cv->mem, t_prev, CV_NORMAL));
        CHECK(CVodeGetB(cv->mem, cv->which, &t, cv->yB));
        CHECK(CVodeGetQuadB(cv->mem, cv->which, &t, cv->qB));
        cv->steps_b += backward_steps(cv); /* CVodeReInitB restarts the count */
        if (k > 0) { /* the jump of lambda at t_{k-1}; restart there */
            for (int c = 0; c < 3; c++)
                l[c] += data ? 2.0 * (cv->y_out[3 * (k - 1) + c] - data[3 * (k - 1) + c]) : 0.0;
            CHECK(CVodeReInitB(cv->mem, cv->which, t_prev, cv->yB));
            CHECK(CVodeQuadReInitB(cv->mem, cv->which, cv->qB));
        }
    }
    *loss = J;
    g[0] = q[0], g[1] = q[1];
    return 0;
fail:
    return -1;
}

void pfr_cv_steps(pfr_cv *cv, long *forward, long *backward, int *checkpoints)
{
    *forward = cv->steps_f;
    *backward = cv->steps_b;
    *checkpoints = cv->checkpoints;
}

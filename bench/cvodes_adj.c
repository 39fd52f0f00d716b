/* cvodes_adj.c — the CVODES adjoint set-up the bench references share (see cvodes_adj.h). */
#include "cvodes_adj.h"

#if SUNDIALS_VERSION_MAJOR >= 7
#define CV_ADJ_COMM SUN_COMM_NULL
#else
#define CV_ADJ_COMM NULL
#endif

/* more steps than any run here takes: a failure says so instead of stopping short */
#define CV_ADJ_MAX_STEPS 1000000

int cv_adj_init(cv_adj *a, const cv_adj_problem *p)
{
    CV_ADJ_CHECK(p->who, SUNContext_Create(CV_ADJ_COMM, &a->ctx));
    a->y = N_VNew_Serial(p->n, a->ctx);
    a->yB = N_VNew_Serial(p->n, a->ctx);
    a->qB = N_VNew_Serial(p->n_quad, a->ctx);
    if (!a->y || !a->yB || !a->qB)
        goto fail;
    N_VConst(0.0, a->y);
    N_VConst(0.0, a->yB);
    N_VConst(0.0, a->qB);
    a->mem = CVodeCreate(p->lmm, a->ctx);
    if (!a->mem)
        goto fail;
    CV_ADJ_CHECK(p->who, CVodeInit(a->mem, p->rhs, 0.0, a->y));
    CV_ADJ_CHECK(p->who, CVodeSetUserData(a->mem, p->user_data));
    CV_ADJ_CHECK(p->who, CVodeSetMaxNumSteps(a->mem, CV_ADJ_MAX_STEPS));
    if (p->lmm == CV_ADAMS) {
        a->NLS = SUNNonlinSol_FixedPoint(a->y, 0, a->ctx);
        if (!a->NLS)
            goto fail;
        CV_ADJ_CHECK(p->who, CVodeSetNonlinearSolver(a->mem, a->NLS));
    } else {
        a->A = SUNDenseMatrix(p->n, p->n, a->ctx);
        a->LS = a->A ? SUNLinSol_Dense(a->y, a->A, a->ctx) : NULL;
        if (!a->LS)
            goto fail;
        CV_ADJ_CHECK(p->who, CVodeSetLinearSolver(a->mem, a->LS, a->A));
        CV_ADJ_CHECK(p->who, CVodeSetJacFn(a->mem, p->jac));
    }
    CV_ADJ_CHECK(p->who, CVodeAdjInit(a->mem, p->checkpoint_steps, CV_HERMITE));
    return 0;
fail:
    return -1;
}

int cv_adj_backward(cv_adj *a, const cv_adj_problem *p, double tB0, double rtol, double atol_b, double atol_q)
{
    if (a->have_b) {
        CV_ADJ_CHECK(p->who, CVodeReInitB(a->mem, a->which, tB0, a->yB));
        CV_ADJ_CHECK(p->who, CVodeQuadReInitB(a->mem, a->which, a->qB));
        return 0;
    }
    CV_ADJ_CHECK(p->who, CVodeCreateB(a->mem, p->lmm, &a->which));
    CV_ADJ_CHECK(p->who, CVodeInitB(a->mem, a->which, p->rhs_b, tB0, a->yB));
    CV_ADJ_CHECK(p->who, CVodeSStolerancesB(a->mem, a->which, rtol, atol_b));
    CV_ADJ_CHECK(p->who, CVodeSetUserDataB(a->mem, a->which, p->user_data));
    CV_ADJ_CHECK(p->who, CVodeSetMaxNumStepsB(a->mem, a->which, CV_ADJ_MAX_STEPS));
    if (p->lmm == CV_ADAMS) {
        a->NLSB = SUNNonlinSol_FixedPoint(a->yB, 0, a->ctx);
        if (!a->NLSB)
            goto fail;
        CV_ADJ_CHECK(p->who, CVodeSetNonlinearSolverB(a->mem, a->which, a->NLSB));
    } else {
        a->AB = SUNDenseMatrix(p->n, p->n, a->ctx);
        a->LSB = a->AB ? SUNLinSol_Dense(a->yB, a->AB, a->ctx) : NULL;
        if (!a->LSB)
            goto fail;
        CV_ADJ_CHECK(p->who, CVodeSetLinearSolverB(a->mem, a->which, a->LSB, a->AB));
        CV_ADJ_CHECK(p->who, CVodeSetJacFnB(a->mem, a->which, p->jac_b));
    }
    CV_ADJ_CHECK(p->who, CVodeQuadInitB(a->mem, a->which, p->quad_b, a->qB));
    CV_ADJ_CHECK(p->who, CVodeQuadSStolerancesB(a->mem, a->which, rtol, atol_q));
    CV_ADJ_CHECK(p->who, CVodeSetQuadErrConB(a->mem, a->which, SUNTRUE));
    a->have_b = true;
    return 0;
fail:
    return -1;
}

long cv_adj_backward_steps(cv_adj *a)
{
    long n = 0;
    CVodeGetNumSteps(CVodeGetAdjCVodeBmem(a->mem, a->which), &n);
    return n;
}

void cv_adj_free(cv_adj *a)
{
    if (a->mem)
        CVodeFree(&a->mem); /* frees the backward problems and the adjoint memory too */
    if (a->NLS)
        SUNNonlinSolFree(a->NLS);
    if (a->NLSB)
        SUNNonlinSolFree(a->NLSB);
    if (a->LS)
        SUNLinSolFree(a->LS);
    if (a->LSB)
        SUNLinSolFree(a->LSB);
    if (a->A)
        SUNMatDestroy(a->A);
    if (a->AB)
        SUNMatDestroy(a->AB);
    N_Vector vs[3] = {a->y, a->yB, a->qB};
    for (int i = 0; i < 3; i++)
        if (vs[i])
            N_VDestroy(vs[i]);
    if (a->ctx)
        SUNContext_Free(&a->ctx);
    *a = (cv_adj){0};
}

/*
 * pfr_cvodes.c — CVODES adjoint of the A->B->C PFR (see pfr_cvodes.h).
 *
 * One CVODES memory per (method, tolerance), set up once and re-initialised
 * per gradient (CVodeReInit + CVodeAdjReInit, then CVodeReInitB +
 * CVodeQuadReInitB), as an optimiser calling it in a loop would: the timed
 * work is the integration, not the allocation.
 */
#include "pfr_cvodes.h"

#include <stdlib.h>

#include <sundials/sundials_version.h>

#include "cvodes_adj.h"

struct pfr_cv {
    double rtol, atol;
    cv_adj_problem prob; /* its lmm says the kind */
    cv_adj a;
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

#define Y(v) CV_ADJ_Y(v)

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

#define CHECK(call) CV_ADJ_CHECK("pfr_cvodes", call)

pfr_cv *pfr_cv_new(pfr_cv_kind kind, double rtol)
{
    pfr_cv *cv = calloc(1, sizeof *cv);
    if (!cv)
        return NULL;
    cv->rtol = rtol, cv->atol = PFR_CV_ATOL_PER_RTOL * rtol;
    cv->prob = (cv_adj_problem){.who = "pfr_cvodes", .lmm = kind == PFR_CV_ADAMS ? CV_ADAMS : CV_BDF, .n = 3,
                                .n_quad = 2, .rhs = rhs, .jac = jac, .rhs_b = rhs_b, .jac_b = jac_b,
                                .quad_b = quad_b, .checkpoint_steps = PFR_CV_CHECKPOINT_STEPS, .user_data = cv};
    if (cv_adj_init(&cv->a, &cv->prob))
        goto fail;
    CHECK(CVodeSStolerances(cv->a.mem, cv->rtol, cv->atol));
    return cv;
fail:
    pfr_cv_free(cv);
    return NULL;
}

void pfr_cv_free(pfr_cv *cv)
{
    if (!cv)
        return;
    cv_adj_free(&cv->a);
    free(cv->y_out);
    free(cv);
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
    cv_adj *a = &cv->a;
    double *y = Y(a->y), *l = Y(a->yB), *q = Y(a->qB);
    y[0] = y0[0], y[1] = y0[1], y[2] = y0[2];
    CHECK(CVodeReInit(a->mem, 0.0, a->y));
    CHECK(CVodeAdjReInit(a->mem));
    for (int k = 0; k < n_out; k++) {
        sunrealtype t;
        int ncheck;
        CHECK(CVodeF(a->mem, t_out[k], a->y, &t, CV_NORMAL, &ncheck));
        cv->checkpoints = ncheck;
        for (int c = 0; c < 3; c++)
            cv->y_out[3 * k + c] = y[c];
    }
    CVodeGetNumSteps(a->mem, &cv->steps_f);

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
    if (cv_adj_backward(a, &cv->prob, t_out[n_out - 1], cv->rtol, cv->atol, cv->atol))
        return -1;
    cv->steps_b = 0;
    for (int k = n_out - 1; k >= 0; k--) {
        double t_prev = k > 0 ? t_out[k - 1] : 0.0;
        sunrealtype t;
        CHECK(CVodeB(a->mem, t_prev, CV_NORMAL));
        CHECK(CVodeGetB(a->mem, a->which, &t, a->yB));
        CHECK(CVodeGetQuadB(a->mem, a->which, &t, a->qB));
        cv->steps_b += cv_adj_backward_steps(a); /* CVodeReInitB restarts the count */
        if (k > 0) { /* the jump of lambda at t_{k-1}; restart there */
            for (int c = 0; c < 3; c++)
                l[c] += data ? 2.0 * (cv->y_out[3 * (k - 1) + c] - data[3 * (k - 1) + c]) : 0.0;
            CHECK(CVodeReInitB(a->mem, a->which, t_prev, a->yB));
            CHECK(CVodeQuadReInitB(a->mem, a->which, a->qB));
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

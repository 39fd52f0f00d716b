/*
 * adam.c — Adam on a reactor's objective (remat_pfr_adam), and the seed
 * problem it ships with (A->B->C in a plug-flow reactor, B maximised).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "models/pfr/pfr_impl.h"

static double concentration(const remat_pfr *r, double objective)
{
    return r->opt.goal == REMAT_PFR_MAXIMIZE ? -objective : objective;
}

remat_status remat_pfr_adam(remat_pfr *r, const remat_adam_options *adam, int64_t iters, double params[],
                            double conc_before[], double params_after[], double *conc_final)
{
    if (!r || !adam || !params)
        return rmi_error(REMAT_ERR_NULL, "pfr adam: %s is NULL",
                         !r ? "the reactor" : !adam ? "the options" : "params");
    if (r->P == 0)
        return rmi_error(REMAT_ERR_ARG, "pfr adam: %s has no parameters to optimise", remat_mechanism_source(r->m));
    if (iters < 0)
        return rmi_error(REMAT_ERR_VALUE, "pfr adam: iterations %lld is negative", (long long)iters);
    remat_adam *a;
    remat_status st = remat_adam_new(r->P, adam, &a);
    if (st != REMAT_OK)
        return st;
    double *g = rmi_malloc(sizeof *g * (size_t)r->P), loss;
    if (!g) {
        remat_adam_free(a);
        return rmi_error(REMAT_ERR_NOMEM, "pfr: out of memory");
    }
    for (int64_t i = 0; i < iters && st == REMAT_OK; i++) {
        st = remat_pfr_objective(r, params, &loss, g);
        if (st == REMAT_OK && (st = remat_adam_update(a, params, g)) != REMAT_OK) {
            char why[512];
            snprintf(why, sizeof why, "%s", remat_last_error());
            st = rmi_error(st, "pfr adam: iteration %lld: %s", (long long)i, why);
        }
        if (st == REMAT_OK && conc_before)
            conc_before[i] = concentration(r, loss);
        if (st == REMAT_OK && params_after)
            memcpy(params_after + (size_t)i * (size_t)r->P, params, sizeof *params * (size_t)r->P);
    }
    if (st == REMAT_OK && conc_final && (st = remat_pfr_objective(r, params, &loss, NULL)) == REMAT_OK)
        *conc_final = concentration(r, loss);
    rmi_free(g);
    remat_adam_free(a);
    return st;
}

static const double seed_inlet[3] = {1.0, 0.0, 0.0};
static const double seed_start[2] = {0.5, 0.3};
static const remat_pfr_seed_problem seed = {
    .name = "A->B->C",
    .mechanism = "# A -> B -> C, first order, in a plug-flow reactor (seed 004, section 7)\n"
                 "indep z\n"
                 "param k1 = 1.0\n"
                 "param k2 = 0.5\n"
                 "A -> B : k1\n"
                 "B -> C : k2\n",
    .inlet = seed_inlet,
    .length = 10.0,
    .steps = 1000,
    .method = REMAT_ODE_EULER,
    .species = "B",
    .goal = REMAT_PFR_MAXIMIZE,
    .start = seed_start,
    .lr = 0.1,
    .iters = 50,
    .min_param = 0.01,
};

const remat_pfr_seed_problem *remat_pfr_seed(void) { return &seed; }

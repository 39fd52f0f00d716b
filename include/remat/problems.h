/*
 * remat/problems.h — small reference problems for comparing checkpoint
 * schedules (`remat compare`), built from the public graph and scan API.
 *
 *   "pfr-euler"  A->B->C in a plug-flow reactor, explicit Euler, k1=1,
 *                k2=0.5, C0=[1,0,0], L=10: loss -C_B(L), gradient w.r.t.
 *                (k1, k2) closed over by the scan
 *   "sin"        x = ones(100); steps times x = sin(x) + 0.1 x; loss sum(x);
 *                gradient w.r.t. x (the scan's initial carry)
 *
 * and, from any mechanism, its plug-flow reactor (remat/pfr.h) with the
 * objective as loss, differentiated w.r.t. the mechanism's parameters
 * (`remat pfr compare`): remat_problem_from_mechanism().
 *
 *   remat_problem *p;
 *   remat_problem_new("pfr-euler", 1000, &p);
 *   remat_fn *vg;
 *   remat_problem_build(p, &opt, &vg);   // (loss, grads...) of value_and_grad
 */
#ifndef REMAT_PROBLEMS_H
#define REMAT_PROBLEMS_H

#include "export.h"
#include "pfr.h"
#include "scan.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct remat_problem remat_problem;

/* Unknown names are an error naming the known ones. steps >= 0. */
REMAT_API remat_status remat_problem_new(const char *name, int64_t steps, remat_problem **out);
REMAT_API void remat_problem_free(remat_problem *p); /* NULL is a no-op */
/* The accessors answer a NULL problem with remat_last_error() set
 * (REMAT_ERR_NULL) and NULL, 0 (counts) or -1 (steps). */
REMAT_API const char *remat_problem_name(const remat_problem *p);
REMAT_API const char *remat_problem_description(const remat_problem *p);
REMAT_API int64_t remat_problem_steps(const remat_problem *p);
/* The reactor of opt on mech: inputs (inlet (S,), params (P,)), loss the
 * objective (-C_s(L) to maximize species s, +C_s(L) to minimize it), gradient
 * w.r.t. params; one scan of remat_pfr_steps() steps, or with opt->adaptive
 * one loop of attempts, whose count at the given inlet and params (one
 * forward run here; an integration that fails is the error, naming rodas5
 * for a stiff problem under an explicit method) is remat_problem_steps(),
 * the length the schedules' predictions take. opt's schedule is
 * ignored (remat_problem_build gets one) and a goal is required. params:
 * param_count values, or NULL for the declared ones; inlet and params are
 * copied. mech must outlive the problem and every function built from it.
 * Errors name the bad option, as remat_pfr_new's do. Name: the mechanism's
 * source; description: method, length, loss and parameters. */
REMAT_API remat_status remat_problem_from_mechanism(const remat_mechanism *mech, const remat_pfr_options *opt,
                                                    const double *params, remat_problem **out);
/* value_and_grad of the problem's loss, its scan using opt's schedule. */
REMAT_API remat_status remat_problem_build(const remat_problem *p, const remat_scan_options *opt, remat_fn **out);
/* The inputs the built function takes (default values; owned by p). */
REMAT_API int remat_problem_num_inputs(const remat_problem *p);
REMAT_API const remat_tensor *remat_problem_inputs(const remat_problem *p);
/* Names of the differentiated inputs, in gradient-output order (i out of
 * range: NULL, REMAT_ERR_ARG's message). */
REMAT_API int remat_problem_num_grads(const remat_problem *p);
REMAT_API const char *remat_problem_grad_name(const remat_problem *p, int i);

#ifdef __cplusplus
}
#endif
#endif

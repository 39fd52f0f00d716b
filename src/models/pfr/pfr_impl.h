/*
 * pfr_impl.h (internal) — a plug-flow reactor (remat/pfr.h) as its files
 * share it: reactor.c makes it and answers the public calls, programs.c
 * builds and compiles its programs, diagnose.c says why an integration gave
 * a value that is not finite, adam.c and minimize.c optimise its objective.
 */
#ifndef REMAT_MODELS_PFR_IMPL_H
#define REMAT_MODELS_PFR_IMPL_H

#include "remat/exec.h"
#include "remat/pfr.h"

struct remat_pfr {
    const remat_mechanism *m;
    remat_pfr_options opt;
    double *inlet;
    int S, P;         /* species, parameters */
    int PI;           /* the programs' params: the P parameters, then the conditions */
    double *in;       /* [PI] (pfr_inputs): the last params, then opt.conds or the defaults */
    int64_t steps;
    double h;
    remat_program *outlet, *profile, *objective;
    /* the functions they were compiled from: a program reads its scan nodes'
     * data, which the function owns, so each function lives as long as its
     * program */
    remat_fn *outlet_fn, *profile_fn, *objective_fn;
};

/* reactor.c */
/* the integration over [0, L] (*L) the options ask for */
remat_ode_options pfr_ode_options(const remat_pfr_options *o, const double *L);
/* f compiled with o->compile (NULL: the environment's, backend included:
 * remat_compile_env) */
remat_status pfr_compile(const remat_pfr_options *o, const remat_fn *f, remat_program **out);
/* prog on (r's inlet, params) into out[0..n_out) */
remat_status pfr_run(remat_program *prog, const remat_pfr *r, const double *params, int n_out, double *const *out);
/* params (P of them, NULL when P is 0) finite, or a message naming the
 * parameter; then r->in = params and the conditions (what the programs,
 * the rate checks and the diagnoses read) */
remat_status pfr_inputs(remat_pfr *r, const double *params);

/* programs.c: r->outlet, r->objective and r->profile compiled (with the
 * functions they read kept beside them) */
remat_status pfr_build_outlet(remat_pfr *r);
remat_status pfr_build_objective(remat_pfr *r);
remat_status pfr_build_profile(remat_pfr *r);

/* diagnose.c: why the integration gave a value that is not finite, when
 * more steps cannot help (a message set, REMAT_ERR_NUMERIC; else REMAT_OK) */
remat_status pfr_hopeless(remat_pfr *r, const double *params);
/* an adaptive integration's own reason (max_steps, stiffness), after pfr_hopeless's */
remat_status pfr_adaptive_failure(remat_pfr *r, const double *params);
/* the outlet concentrations c (S) finite, or why not */
remat_status pfr_check_finite(remat_pfr *r, const double *params, const double *c);

/* stability.c: a fixed explicit step beyond the method's stability bound for
 * the fastest decaying mode at the inlet (REMAT_ERR_NUMERIC naming the step
 * and the steps it needs), else REMAT_OK */
remat_status pfr_check_step(const remat_pfr *r, const double *params);

#endif

/*
 * pfr_fit_args.h — `remat pfr fit`'s options as given (pfr_fit_args.c):
 * the help text, the command line read and checked across options, and
 * --sigma read against the mechanism. What the options mean is the help's.
 */
#ifndef REMAT_TOOL_PFR_FIT_ARGS_H
#define REMAT_TOOL_PFR_FIT_ARGS_H

#include <stdint.h>
#include <stdio.h>

#include "plot_opts.h"
#include "remat/remat.h"

typedef struct {
    const char *mechanism, *init, *params, *method, *optimizer, *schedule, *plot, *plot_res, *sigma, *weighting;
    const char *jacobian, *adjoint;
    const char *cond, *free, *fix, *out; /* --cond, --free, --fix, --out */
    const char *energy, *thermo;         /* gas mechanisms (pfr_gas.c): --energy, --thermo */
    char **data_args;  /* [n_data_args] "--data PATH" / "--data-list LIST" operands in order */
    int *data_is_list; /* [n_data_args] */
    int n_data_args, json, history, has_lr, has_iters, has_max_iters, has_rtol, has_atol, has_max_steps;
    double dt, lr, rtol, atol;
    int64_t steps, iters, max_iters, budget, starts, seed, max_steps;
    plot_opts plot_opts; /* --log-x, --log-y, --species of the plots */
} pfr_fit_cli;

void pfr_fit_help(FILE *out);
/* argv into c (c->data_args and c->data_is_list hold argc entries); 1: go
 * on, -1: --help printed, 0: bad input (the message on stderr). */
int pfr_fit_parse(int argc, char **argv, pfr_fit_cli *c);
/* "A=0.01,B=0.02" into sigma[S] (others 1) and named[S] (which were
 * given); for a gas mechanism "tau=1e-6" into *tau_sigma (else 0), the
 * ignition delays' sigma. 0 with a message naming --sigma. */
int pfr_fit_parse_sigma(const char *text, const remat_mechanism *m, double *sigma, double *tau_sigma, bool *named);

#endif

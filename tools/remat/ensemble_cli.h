/*
 * ensemble_cli.h — the state `remat pfr ensemble` shares between its option
 * handling (cmd_pfr_ensemble.c) and its rounds (ensemble_stream.c).
 */
#ifndef REMAT_TOOL_ENSEMBLE_CLI_H
#define REMAT_TOOL_ENSEMBLE_CLI_H

#include "ensemble_csv.h"
#include "ensemble_dist.h"
#include "pfr_cli.h"

typedef struct {
    ens_dist *d;
    int rank, size;
    pfr_setup su;
    int Q, G, W;     /* varied parameters, sensitivity species, doubles per row result */
    int *vary, *grad; /* (Q,), (G,) */
    int64_t B;
    char **colname;  /* (Q,) the header's names */
    /* equal steps cannot follow simulate's adaptive integration (its stiff
     * transient): each set is its own adaptive run, pfr simulate's, and
     * why says why (remat_pfr_fixed_steps' message) */
    int per_member;
    char why[1024];
    char err[2048];
} ens_run;

/* Prints r->err once (rank 0) as the command's error; returns code. */
int ens_fail(const ens_run *r, int code);

/* The rounds: rank 0 reads csv (its header read) and writes the rows to out;
 * every rank computes its chunks. 0, or 1 with the message printed once. */
int ens_stream(ens_run *r, ens_csv *csv, FILE *out);

#endif

/*
 * pfr_optimize.h — what `remat pfr optimize` prints for the quasi-Newton
 * optimizers (remat_pfr_minimize): the history of evaluations, the table,
 * the JSON, and the header every optimizer shares, naming the decision
 * variables.
 */
#ifndef REMAT_TOOL_PFR_OPTIMIZE_H
#define REMAT_TOOL_PFR_OPTIMIZE_H

#include <stdbool.h>

#include "pfr_cli.h"

/* Every evaluation of a remat_pfr_minimize run (its progress callback). */
typedef struct {
    int P, n, cap;
    double *obj, *rel, *params; /* n entries; params n x P */
    int failed;                 /* out of memory while recording */
} pfr_opt_history;
void pfr_opt_record(const remat_pfr_minimize_progress *p, void *ctx); /* ctx: a pfr_opt_history */
void pfr_opt_history_free(pfr_opt_history *h);

/* "Optimizing k1, T (k2 fixed) to maximize intermediate B with lbfgs-b:";
 * the seed's "Optimizing rate constants to maximize intermediate B:" for the
 * built-in mechanism with every parameter free and optimizer NULL (Adam). */
void pfr_opt_header(const pfr_setup *su, const bool *fixed, const char *optimizer);

/* The concentration from an objective value */
double pfr_opt_conc(const pfr_setup *su, double objective);

void pfr_opt_print_table(const pfr_setup *su, const bool *fixed, const char *optimizer, const pfr_opt_history *h,
                         const remat_pfr_minimize_result *res, const double *p);
/* The JSON document's opening fields every optimizer prints: mechanism,
 * integration, schedule, goal and species (ends with ",\n"). */
void pfr_opt_print_json_head(const pfr_setup *su, const remat_pfr *r);
void pfr_opt_print_json(const pfr_setup *su, const remat_pfr *r, const bool *fixed, const char *optimizer,
                        const remat_pfr_minimize_options *mo, const double *start, const pfr_opt_history *h,
                        const remat_pfr_minimize_result *res, const double *p);
/* {"k1": 1, "k2": null}: names with values, non-finite as null */
void pfr_opt_print_params(const remat_mechanism *m, int P, const double *p);

#endif

/*
 * pfr_names.h — name lists of the pfr commands' options, read against a
 * mechanism (pfr_names.c): --free/--fix (parameter names) and --cond
 * (NAME=VALUE of conditions). Messages name the option and list the names
 * the mechanism has.
 */
#ifndef REMAT_TOOL_PFR_NAMES_H
#define REMAT_TOOL_PFR_NAMES_H

#include <stdbool.h>

#include "remat/remat.h"

/* "k1,k2" (parameter names, each once) into flags[param_count]: the named
 * ones set to true, the others left as they are. 0 with a message on
 * stderr naming opt (an empty list, an unknown or repeated name). */
int pfr_names_params(const char *opt, const char *text, const remat_mechanism *m, bool *flags);

/* "T=350,P=1e5" into values[cond_count] by condition name (remat/mechanism.h
 * "cond"); names not listed keep their value. 0 with a message naming opt
 * (not NAME=VALUE, an unknown or repeated name, a value that is not a
 * finite number). */
int pfr_names_conds(const char *opt, const char *text, const remat_mechanism *m, double *values);

/* "T, P" (the mechanism's conditions, "none" without), for messages. */
void pfr_names_cond_list(const remat_mechanism *m, char *buf, int len);

/* The mechanism's parse warnings on stderr, "remat: FILE:LINE:COL: warning: ...". */
void pfr_names_warnings(const remat_mechanism *m);

#endif

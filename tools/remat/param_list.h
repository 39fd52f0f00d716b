/*
 * param_list.h — "NAME,NAME,..." lists of a mechanism's parameters, for
 * --fix and --free (pfr optimize; pfr fit may share it).
 *
 *   bool fixed[P];
 *   if (!param_list_fixed(fix_text, free_text, m, fixed)) return 2;
 */
#ifndef REMAT_TOOL_PARAM_LIST_H
#define REMAT_TOOL_PARAM_LIST_H

#include <stdbool.h>

#include "remat/remat.h"

/* Sets flags[i] = value for every parameter i that text lists (comma
 * separated names, each once). 0 with a message naming opt and the bad name
 * (an unknown name lists the mechanism's parameters; a species says it is
 * one) when the list is empty or wrong. */
int param_list_set(const char *opt, const char *text, const remat_mechanism *m, bool value, bool *flags);

/* fixed[] from --fix (fix_text: these are kept, the others fitted) or --free
 * (free_text: only these are fitted); both NULL: none fixed. Giving both is
 * an error. 0 with a message on error. */
int param_list_fixed(const char *fix_text, const char *free_text, const remat_mechanism *m, bool *fixed);

#endif

/* pfr_adjoints.h — `remat pfr compare --adjoints` (pfr_adjoints.c). */
#ifndef REMAT_TOOL_PFR_ADJOINTS_H
#define REMAT_TOOL_PFR_ADJOINTS_H

#include "pfr_cli.h"

/* Prints seed 004 §8's table for the reactor su describes: the goal
 * species' outlet concentration and its gradient by the recursive (su's
 * binomial or online schedule), backsolve and direct (store-all) adjoints,
 * with steps, memory and the median time of `repeat` runs. Returns the exit
 * status: 0, 2 for options it cannot compare (adaptive steps, rodas5, a
 * schedule that is not recursive; named), 1 for a failure while running. */
int pfr_compare_adjoints(const pfr_setup *su, int repeat, int json);

#endif

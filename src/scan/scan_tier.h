/*
 * scan_tier.h (internal) — when a scan's body is compiled: only where it
 * pays (include/remat/scan.h, "Compiled loops", states the policy; the
 * account and the decision are src/lanes' tier.c, lanes.h).
 *
 * A loop whose body has lane programs (lanes/lanes.h) is compiled at
 * lowering when one run's predicted interpreted work exceeds what compiling
 * costs, or its code is at hand (this process's or the disk's cache) and
 * the run is worth loading it for; otherwise it starts interpreted and
 * counts the work its runs do, and compiles at the start of the run that
 * brings that work past the compile's cost (a rent-or-buy rule: never more
 * than twice the better of the two choices made in hindsight). Interpreted
 * and compiled loops give the same bits and use the same store, so the
 * switch between runs is invisible but in time.
 */
#ifndef REMAT_SCAN_TIER_H
#define REMAT_SCAN_TIER_H

#include <stdbool.h>

#include "lanes/lanes.h"

typedef struct scan_rt scan_rt;

/* At lowering, after r->lanes were translated: gets their code now
 * (compiled or loaded) and returns true, or leaves r interpreted, waiting
 * (r->tier_wait) or for good. */
bool rmi_scan_tier_lower(scan_rt *r);

/* At a kernel's entry: a waiting node counts the run, and switches to its
 * compiled loops when they are due. */
void rmi_scan_tier_run(scan_rt *r);

/* Both loops' tier drivers (scan_tier.c, while_lanes.c): program k (a
 * kernel index, LKI_*) of S, NULL when not translated; and, with
 * REMAT_JIT_DEBUG set, one line "remat: jit: ..." on stderr of what a
 * node's tier decided. */
remat_lane_program *rmi_tier_prog(const scan_lanes *S, int k);
void rmi_tier_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif

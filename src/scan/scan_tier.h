/*
 * scan_tier.h (internal) — when a scan's body is compiled: only where it
 * pays (include/remat/scan.h, "Compiled loops", states the policy).
 *
 * A loop whose body has lane programs (scan_lanes.h) is compiled at
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
#include <stdint.h>

#include "backend/lane.h"
#include "remat/exec.h"

typedef struct scan_rt scan_rt;

typedef enum { SCAN_JIT_AUTO, SCAN_JIT_ALWAYS, SCAN_JIT_NEVER } scan_jit_mode;

/* The compile's jit option (remat_compile_options.jit; from REMAT_JIT and
 * REMAT_NO_JIT when the caller gave none, core/config.c). */
scan_jit_mode rmi_scan_jit_mode(const remat_compile_options *o);

/* At lowering, after r->lanes were translated: gets their code now
 * (compiled or loaded) and returns true, or leaves r interpreted, waiting
 * (r->tier_wait) or for good. */
bool rmi_scan_tier_lower(scan_rt *r);

/* At a kernel's entry: a waiting node counts the run, and switches to its
 * compiled loops when they are due. */
void rmi_scan_tier_run(scan_rt *r);

/* The process's account of interpreted work per body (a set of lane
 * programs; scan_tier.c): loop nodes with the same programs add their runs'
 * work to one total, so a body many nodes run (a fit's experiments, each
 * with its own loops) compiles once their work together pays for it.
 * rmi_tier_pool_for: NULL when the table is full (the node keeps its own
 * count). rmi_tier_pool_add returns the new total. Thread-safe. */
struct scan_tier_pool;
/* the account of programs whose rmi_lane_programs_hash is key (computed
 * once, when they are translated) */
struct scan_tier_pool *rmi_tier_pool_for(uint64_t key);
uint64_t rmi_lane_programs_hash(int n, const remat_lane_program *const *pp);
double rmi_tier_pool_add(struct scan_tier_pool *p, double ns);

#endif

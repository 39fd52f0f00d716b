/* scan_tier.c — compile a scan's body only where it pays (scan_tier.h). */
#include "scan/scan_tier.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scan/scan_rt.h"

/* The cost model, in ns, measured on the PFR Euler body (152 lane
 * instructions in its five kernels) at 1 to 1024 lanes (design notes,
 * "Compiling only where it pays"): an interpreted step costs per lane
 * instruction a dispatch share plus a per-lane share; gcc a fixed part (the
 * driver, assembler and linker runs) plus a part per instruction (it grows
 * faster than that for large bodies, which compile later than they would
 * pay: still within the rent-or-buy bound, as the estimate only errs low);
 * taking code from the disk cache a read and a dlopen. */
#define INTERP_NS_PER_INS 1.5
#define INTERP_NS_PER_LANE 0.5
#define GCC_NS_FIXED 80e6
#define GCC_NS_PER_INS 0.6e6
#define LOAD_NS 0.3e6

scan_jit_mode remat_scan_jit_mode(void)
{
    const char *no = getenv("REMAT_NO_JIT");
    if (no && *no && strcmp(no, "0"))
        return SCAN_JIT_NEVER;
    const char *e = getenv("REMAT_JIT");
    if (!e || !*e || !strcmp(e, "auto"))
        return SCAN_JIT_AUTO;
    if (!strcmp(e, "always"))
        return SCAN_JIT_ALWAYS;
    if (!strcmp(e, "never"))
        return SCAN_JIT_NEVER;
    static atomic_flag said = ATOMIC_FLAG_INIT;
    if (!atomic_flag_test_and_set(&said))
        fprintf(stderr, "remat: REMAT_JIT=%s: not always, never or auto; using auto\n", e);
    return SCAN_JIT_AUTO;
}

/* instructions of kernel k's program (0: not translated) */
static int64_t kernel_ins(const scan_lanes *S, int k)
{
    if (!(S->want & (1u << k)))
        return 0;
    int i = 0;
    for (int j = 0; j < k; j++)
        i += (S->want >> j) & 1u;
    return S->progs[i].n_ins;
}

/* One run's interpreted work. A checkpointed scan's two nodes (forward and
 * backward) both count the whole schedule, so they decide alike at
 * lowering: lane blocks need both compiled. */
static double run_ns(const scan_rt *r)
{
    const scan_lanes *S = &r->lanes;
    const double per_ins = INTERP_NS_PER_INS + INTERP_NS_PER_LANE * (double)S->m;
    if (r->d->kind == SCAN_PRIMAL)
        return (double)r->length * (double)kernel_ins(S, LKI_ADVANCE) * per_ins;
    const scan_evals *f = &r->plan.cost[SCAN_PHASE_FORWARD].evals, *b = &r->plan.cost[SCAN_PHASE_REVERSE].evals;
    return per_ins * ((double)(f->plain + b->plain) * (double)kernel_ins(S, LKI_ADVANCE) +
                      (double)(f->record + b->record) * (double)kernel_ins(S, LKI_TAPE) +
                      (double)(f->reverse + b->reverse) * (double)kernel_ins(S, LKI_REVERSE));
}

static bool debug(void)
{
    const char *e = getenv("REMAT_JIT_DEBUG");
    return e && *e && strcmp(e, "0");
}

static void say(const scan_rt *r, const char *what)
{
    if (debug())
        fprintf(stderr, "remat: jit: scan %s (%lld steps, %lld lanes, %lld instructions): %.3g ms interpreted a run, "
                        "compiling ~%.3g ms: %s\n", r->d->kind == SCAN_PRIMAL ? "primal" : r->d->kind == SCAN_FWD ? "forward" : "backward",
                (long long)r->length, (long long)r->lanes.m, (long long)r->lanes.n_ins, r->tier_run_ns / 1e6,
                r->tier_cost_ns / 1e6, what);
}

bool remat_scan_tier_lower(scan_rt *r)
{
    scan_lanes *S = &r->lanes;
    const scan_jit_mode mode = remat_scan_jit_mode();
    if (mode == SCAN_JIT_NEVER)
        return false;
    r->tier_run_ns = run_ns(r);
    r->tier_cost_ns = GCC_NS_FIXED + GCC_NS_PER_INS * (double)S->n_ins;
    /* The cost model is the CPU backend's (gcc, its interpreter): a backend
     * without load_lanes (CUDA's NVRTC) compiles as it did before tiers. */
    if (mode == SCAN_JIT_ALWAYS || !r->be->iface.load_lanes || r->tier_run_ns >= r->tier_cost_ns) {
        const bool ok = remat_scan_lanes_get(S, r->be, true) == REMAT_OK;
        say(r, ok ? "compiled" : "compiling failed, interpreted");
        return ok;
    }
    if (r->tier_run_ns >= LOAD_NS && remat_scan_lanes_get(S, r->be, false) == REMAT_OK) {
        say(r, "loaded from the cache");
        return true;
    }
    r->tier_wait = true;
    say(r, "interpreted until its runs have done that much work");
    return false;
}

void remat_scan_tier_run(scan_rt *r)
{
    if (!r->tier_wait)
        return;
    r->tier_spent_ns += r->tier_run_ns; /* with this run's */
    if (r->tier_spent_ns < r->tier_cost_ns)
        return;
    r->tier_wait = false;
    if (remat_scan_lanes_get(&r->lanes, r->be, true) == REMAT_OK) {
        r->exec = &remat_scan_exec_lanes;
        say(r, "compiled now");
    } else {
        say(r, "compiling failed, interpreted");
    }
}

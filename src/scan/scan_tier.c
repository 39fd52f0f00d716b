/* scan_tier.c — compile a scan's body only where it pays (scan_tier.h):
 * what one run of a scan node costs interpreted, and the node's switch to
 * its compiled loops; the policy's account is src/lanes' (lanes.h). */
#include "scan/scan_tier.h"

#include <stdarg.h>
#include <stdio.h>

#include "core/config.h"
#include "scan/scan_rt.h"

static struct scan_tier_pool *pool_of(const scan_lanes *S) { return rmi_tier_pool_for(S->pool_key); }

/* ---- the cost model ---- */

remat_lane_program *rmi_tier_prog(const scan_lanes *S, int k)
{
    if (!(S->want & (1u << k)))
        return NULL;
    int i = 0;
    for (int j = 0; j < k; j++)
        i += (S->want >> j) & 1u;
    return (remat_lane_program *)&S->progs[i];
}

/* instructions of kernel k's program (0: not translated) */
static int64_t kernel_ins(const scan_lanes *S, int k)
{
    const remat_lane_program *p = rmi_tier_prog(S, k);
    return p ? p->n_ins : 0;
}

/* One run's interpreted work. A checkpointed scan's two nodes (forward and
 * backward) both count the whole schedule, so they decide alike at
 * lowering: lane blocks need both compiled. */
static double run_ns(const scan_rt *r)
{
    const scan_lanes *S = &r->lanes;
    const double per_ins = rmi_lanes_interp_ns_per_ins(S->m);
    if (r->d->kind == SCAN_PRIMAL)
        return (double)r->length * (double)kernel_ins(S, LKI_ADVANCE) * per_ins;
    const scan_evals *f = &r->plan.cost[SCAN_PHASE_FORWARD].evals, *b = &r->plan.cost[SCAN_PHASE_REVERSE].evals;
    return per_ins * ((double)(f->plain + b->plain) * (double)kernel_ins(S, LKI_ADVANCE) +
                      (double)(f->record + b->record) * (double)kernel_ins(S, LKI_TAPE) +
                      (double)(f->reverse + b->reverse) * (double)kernel_ins(S, LKI_REVERSE));
}

static double compile_ns(const scan_rt *r)
{
    const remat_lane_program *pp[LKI_COUNT];
    for (int i = 0; i < r->lanes.n_progs; i++)
        pp[i] = &r->lanes.progs[i];
    return r->c.be->iface.lanes_compile_ns(r->lanes.n_progs, pp);
}

void rmi_tier_say(const char *fmt, ...)
{
    if (!rmi_env_flag("REMAT_JIT_DEBUG")) /* a debugging aid: the environment's only (core/config.h) */
        return;
    va_list ap;
    va_start(ap, fmt);
    fputs("remat: jit: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static void say(const scan_rt *r, const char *what)
{
    rmi_tier_say("scan %s (%lld steps, %lld lanes, %lld instructions): %.3g ms interpreted a run, compiling ~%.3g ms: "
                 "%s", r->d->kind == SCAN_PRIMAL ? "primal" : r->d->kind == SCAN_FWD ? "forward" : "backward",
                 (long long)r->length, (long long)r->lanes.m, (long long)r->lanes.n_ins, r->tier_run_ns / 1e6,
                 r->tier_cost_ns / 1e6, what);
}

/* ---- the policy ---- */

static void settle(scan_rt *r, bool at_hand, bool failed) { rmi_tier_pool_settle(r->tier_pool, at_hand, failed); }

bool rmi_scan_tier_lower(scan_rt *r)
{
    scan_lanes *S = &r->lanes;
    const scan_jit_mode mode = rmi_scan_jit_mode(r->opts);
    if (mode == SCAN_JIT_NEVER)
        return false;
    /* The cost model is the CPU backend's (gcc, its interpreter): a backend
     * that cannot say what compiling costs (CUDA's NVRTC) compiles as it did
     * before tiers. */
    const bool weigh = r->c.be->iface.load_lanes && r->c.be->iface.lanes_compile_ns;
    r->tier_run_ns = run_ns(r);
    r->tier_cost_ns = weigh ? compile_ns(r) : 0;
    /* one run's own work decides at lowering, so that a gradient's two
     * nodes decide alike (lane blocks need both compiled, or neither) */
    if (mode == SCAN_JIT_ALWAYS || !weigh || r->tier_run_ns >= r->tier_cost_ns) {
        const bool ok = rmi_lanes_get(S, r->c.be, rmi_lane_cache_dir(r->opts), true) == REMAT_OK;
        say(r, ok ? "compiled" : "compiling failed, interpreted");
        if (ok && weigh)
            settle((r->tier_pool = pool_of(S), r), true, false); /* waiting nodes of the body may take it */
        return ok;
    }
    if (r->tier_run_ns >= LANES_LOAD_NS && rmi_lanes_get(S, r->c.be, rmi_lane_cache_dir(r->opts), false) == REMAT_OK) {
        settle((r->tier_pool = pool_of(S), r), true, false);
        say(r, "loaded from the cache");
        return true;
    }
    rmi_tier_pool_mark(r->tier_pool = pool_of(S), r->d->kind);
    r->tier_wait = true;
    say(r, "interpreted until its body's runs have done that much work");
    return false;
}

/* with this run's: a gradient's forward and backward node each count the
 * whole schedule in run_ns, so where both wait on this account each adds half */
static tier_step account(scan_rt *r)
{
    const unsigned both = 1u << SCAN_FWD | 1u << SCAN_BWD;
    return rmi_lanes_tier_account(r->tier_pool, &r->tier_spent_ns, r->tier_run_ns,
                                  r->d->kind != SCAN_PRIMAL ? both : 0, r->tier_cost_ns);
}

void rmi_scan_tier_run(scan_rt *r)
{
    if (!r->tier_wait)
        return;
    const tier_step s = account(r);
    bool got = false;
    switch (s) {
    case T_WAIT: return;
    case T_GIVE_UP: r->tier_wait = false; return;
    case T_LOAD: /* another process may have compiled the body: one look for all its nodes */
        got = rmi_lanes_get(&r->lanes, r->c.be, rmi_lane_cache_dir(r->opts), false) == REMAT_OK;
        settle(r, got, false);
        if (!got)
            return;
        break;
    case T_TAKE: /* this process's cache has it */
    case T_COMPILE:
        got = rmi_lanes_get(&r->lanes, r->c.be, rmi_lane_cache_dir(r->opts), true) == REMAT_OK;
        settle(r, got, !got);
        break;
    }
    r->tier_wait = false;
    if (got) {
        r->exec = &rmi_scan_exec_lanes;
        say(r, s == T_COMPILE ? "compiled now" : "took its body's code now");
    } else {
        say(r, "compiling failed, interpreted");
    }
}

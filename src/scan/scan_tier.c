/* scan_tier.c — compile a scan's body only where it pays (scan_tier.h). */
#include "scan/scan_tier.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/assert.h"
#include "core/config.h"
#include "scan/scan_rt.h"

/* The interpreter's cost, in ns, measured on the PFR Euler body (152 lane
 * instructions in its five kernels) at 1 to 1024 lanes (design notes,
 * "Compiling only where it pays"): an interpreted step costs per lane
 * instruction a dispatch share plus a per-lane share (Robertson's unrolled
 * Rodas5 body: predicted 2.4 ms a gradient, measured 1.7). What compiling
 * costs is the backend's model (lanes_compile_ns: gcc's time grows with the
 * programs' size and depends on the -O level it picks for them); taking
 * code from the disk cache, or from this process's, costs a read and a
 * dlopen at most. */
#define INTERP_NS_PER_INS 1.5
#define INTERP_NS_PER_LANE 0.5
#define LOAD_NS 0.3e6

scan_jit_mode rmi_scan_jit_mode(const remat_compile_options *o)
{
    return o->jit == REMAT_JIT_NEVER ? SCAN_JIT_NEVER : o->jit == REMAT_JIT_ALWAYS ? SCAN_JIT_ALWAYS : SCAN_JIT_AUTO;
}

/* ---- the process's account per body ----
 *
 * Nodes with the same programs (the 21 interval scans of an ODE, one body;
 * the programs a fit rebuilds; a gradient's forward and backward node) share
 * one compilation, so they share one account of the interpreted work done:
 * the first run that brings the body's total past the compile's cost
 * compiles it, and every waiting node of that body then takes the code at
 * its next run. Keyed by a hash of the programs: a collision only merges two
 * accounts (a decision's timing), never code, which jit.c finds by the full
 * programs. A full table leaves a node its own account. */
struct scan_tier_pool {
    uint64_t key;
    double spent_ns; /* interpreted work its nodes did */
    bool at_hand;    /* in this process's cache: compiled or loaded */
    bool loaded;     /* the disk cache was asked */
    bool failed;     /* compiling failed: its nodes stay interpreted */
    unsigned kinds;  /* 1 << scan kind of the nodes waiting on it */
};

#define POOLS 256
static struct scan_tier_pool pools[POOLS];
static int n_pools;
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ c[i]) * 1099511628211ull;
    return h;
}

/* field by field: the struct's padding is not part of the program */
uint64_t rmi_lane_programs_hash(int n, const remat_lane_program *const *pp)
{
    uint64_t h = fnv(14695981039346656037ull, &n, sizeof n);
    for (int k = 0; k < n; k++) {
        const remat_lane_program *p = pp[k];
        h = fnv(fnv(h, &p->m, sizeof p->m), &p->n_ins, sizeof p->n_ins);
        for (int i = 0; i < p->n_ins; i++) {
            const remat_lane_ins *I = &p->ins[i];
            const int32_t f[8] = {I->kind, I->dt, I->op, I->post, I->a, I->b, I->c, I->buf};
            h = fnv(fnv(fnv(fnv(h, f, sizeof f), &I->off, sizeof I->off), &I->lstride, sizeof I->lstride), &I->imm,
                    sizeof I->imm);
        }
    }
    return h;
}

struct scan_tier_pool *rmi_tier_pool_for(uint64_t key)
{
    struct scan_tier_pool *p = NULL;
    pthread_mutex_lock(&pool_lock);
    for (int i = 0; i < n_pools && !p; i++)
        if (pools[i].key == key)
            p = &pools[i];
    if (!p && n_pools < POOLS)
        p = &pools[n_pools++], *p = (struct scan_tier_pool){.key = key};
    pthread_mutex_unlock(&pool_lock);
    return p;
}

double rmi_tier_pool_add(struct scan_tier_pool *p, double ns)
{
    pthread_mutex_lock(&pool_lock);
    const double total = p->spent_ns += ns;
    pthread_mutex_unlock(&pool_lock);
    return total;
}

static struct scan_tier_pool *pool_of(const scan_lanes *S) { return rmi_tier_pool_for(S->pool_key); }

/* ---- the cost model ---- */

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

static double compile_ns(const scan_rt *r)
{
    const remat_lane_program *pp[LKI_COUNT];
    for (int i = 0; i < r->lanes.n_progs; i++)
        pp[i] = &r->lanes.progs[i];
    return r->be->iface.lanes_compile_ns(r->lanes.n_progs, pp);
}

static bool debug(void)
{
    return rmi_env_flag("REMAT_JIT_DEBUG"); /* a debugging aid: the environment's only (core/config.h) */
}

static void say(const scan_rt *r, const char *what)
{
    if (debug())
        fprintf(stderr, "remat: jit: scan %s (%lld steps, %lld lanes, %lld instructions): %.3g ms interpreted a run, "
                        "compiling ~%.3g ms: %s\n", r->d->kind == SCAN_PRIMAL ? "primal" : r->d->kind == SCAN_FWD ? "forward" : "backward",
                (long long)r->length, (long long)r->lanes.m, (long long)r->lanes.n_ins, r->tier_run_ns / 1e6,
                r->tier_cost_ns / 1e6, what);
}

/* ---- the policy ---- */

static void settle(scan_rt *r, bool at_hand, bool failed)
{
    if (!r->tier_pool)
        return;
    pthread_mutex_lock(&pool_lock);
    r->tier_pool->at_hand |= at_hand;
    r->tier_pool->failed |= failed;
    pthread_mutex_unlock(&pool_lock);
}

bool rmi_scan_tier_lower(scan_rt *r)
{
    scan_lanes *S = &r->lanes;
    const scan_jit_mode mode = rmi_scan_jit_mode(r->opts);
    if (mode == SCAN_JIT_NEVER)
        return false;
    /* The cost model is the CPU backend's (gcc, its interpreter): a backend
     * that cannot say what compiling costs (CUDA's NVRTC) compiles as it did
     * before tiers. */
    const bool weigh = r->be->iface.load_lanes && r->be->iface.lanes_compile_ns;
    r->tier_run_ns = run_ns(r);
    r->tier_cost_ns = weigh ? compile_ns(r) : 0;
    /* one run's own work decides at lowering, so that a gradient's two
     * nodes decide alike (lane blocks need both compiled, or neither) */
    if (mode == SCAN_JIT_ALWAYS || !weigh || r->tier_run_ns >= r->tier_cost_ns) {
        const bool ok = rmi_scan_lanes_get(S, r->be, rmi_lane_cache_dir(r->opts), true) == REMAT_OK;
        say(r, ok ? "compiled" : "compiling failed, interpreted");
        if (ok && weigh)
            settle((r->tier_pool = pool_of(S), r), true, false); /* waiting nodes of the body may take it */
        return ok;
    }
    if (r->tier_run_ns >= LOAD_NS && rmi_scan_lanes_get(S, r->be, rmi_lane_cache_dir(r->opts), false) == REMAT_OK) {
        settle((r->tier_pool = pool_of(S), r), true, false);
        say(r, "loaded from the cache");
        return true;
    }
    if ((r->tier_pool = pool_of(S))) {
        pthread_mutex_lock(&pool_lock);
        r->tier_pool->kinds |= 1u << r->d->kind;
        pthread_mutex_unlock(&pool_lock);
    }
    r->tier_wait = true;
    say(r, "interpreted until its body's runs have done that much work");
    return false;
}

/* What a waiting node does at a run: take the code, compile it, look in the
 * disk cache, or go on interpreting. */
typedef enum { T_WAIT, T_TAKE, T_COMPILE, T_LOAD, T_GIVE_UP } tier_step;

static tier_step account(scan_rt *r)
{
    struct scan_tier_pool *p = r->tier_pool, own = {.spent_ns = r->tier_spent_ns};
    if (!p)
        p = &own;
    pthread_mutex_lock(&pool_lock);
    /* with this run's: a gradient's forward and backward node each count
     * the whole schedule in run_ns, so where both wait on this account each
     * adds half */
    const unsigned both = 1u << SCAN_FWD | 1u << SCAN_BWD;
    p->spent_ns += r->d->kind != SCAN_PRIMAL && (p->kinds & both) == both ? r->tier_run_ns / 2 : r->tier_run_ns;
    tier_step s = T_WAIT;
    if (p->failed)
        s = T_GIVE_UP;
    else if (p->at_hand)
        s = p->spent_ns >= LOAD_NS ? T_TAKE : T_WAIT;
    else if (p->spent_ns >= r->tier_cost_ns)
        s = T_COMPILE;
    else if (p->spent_ns >= LOAD_NS && !p->loaded)
        s = T_LOAD, p->loaded = true;
    pthread_mutex_unlock(&pool_lock);
    r->tier_spent_ns = own.spent_ns;
    return s;
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
        got = rmi_scan_lanes_get(&r->lanes, r->be, rmi_lane_cache_dir(r->opts), false) == REMAT_OK;
        settle(r, got, false);
        if (!got)
            return;
        break;
    case T_TAKE: /* this process's cache has it */
    case T_COMPILE:
        got = rmi_scan_lanes_get(&r->lanes, r->be, rmi_lane_cache_dir(r->opts), true) == REMAT_OK;
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

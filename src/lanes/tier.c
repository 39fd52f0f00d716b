/* tier.c — when a loop body is compiled: the jit mode, the cost model of
 * the interpreter, the process's account per body (lanes.h). */
#include "lanes/lanes.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/assert.h"
#include "core/config.h"

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
    unsigned kinds;  /* 1 << kind of the nodes waiting on it (the caller's numbering) */
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


double rmi_lanes_interp_ns_per_ins(int64_t m) { return INTERP_NS_PER_INS + INTERP_NS_PER_LANE * (double)m; }

void rmi_tier_pool_settle(struct scan_tier_pool *p, bool at_hand, bool failed)
{
    if (!p)
        return;
    pthread_mutex_lock(&pool_lock);
    p->at_hand |= at_hand;
    p->failed |= failed;
    pthread_mutex_unlock(&pool_lock);
}

void rmi_tier_pool_mark(struct scan_tier_pool *p, int kind)
{
    if (!p)
        return;
    pthread_mutex_lock(&pool_lock);
    p->kinds |= 1u << kind;
    pthread_mutex_unlock(&pool_lock);
}

tier_step rmi_lanes_tier_account(struct scan_tier_pool *p, double *own_ns, double run_ns, unsigned pair,
                                 double cost_ns)
{
    struct scan_tier_pool own = {.spent_ns = *own_ns};
    if (!p)
        p = &own;
    pthread_mutex_lock(&pool_lock);
    p->spent_ns += pair && (p->kinds & pair) == pair ? run_ns / 2 : run_ns;
    tier_step s = T_WAIT;
    if (p->failed)
        s = T_GIVE_UP;
    else if (p->at_hand)
        s = p->spent_ns >= LANES_LOAD_NS ? T_TAKE : T_WAIT;
    else if (p->spent_ns >= cost_ns)
        s = T_COMPILE;
    else if (p->spent_ns >= LANES_LOAD_NS && !p->loaded)
        s = T_LOAD, p->loaded = true;
    pthread_mutex_unlock(&pool_lock);
    *own_ns = own.spent_ns;
    return s;
}

/*
 * sched_two_tier.c — an optimal schedule for two snapshot tiers: S slots in
 * RAM (free to write and read) and D slots in a slower store (a disk file,
 * pinned host memory), writing one carry there costing W and reading one R,
 * in units of one step evaluation. What it minimises is the time model of
 * the multistage literature (Aupy, Herrmann, Hovland, Robert, "Optimal
 * multistage algorithm for adjoint computation", SIAM J. Sci. Comput. 38(3),
 * 2016; Herrmann & Pallez, "H-Revolve", ACM TOMS 46(2), 2020):
 *
 *   cost = forward evaluations + W * disk writes + R * disk reads
 *
 * over every schedule of remat/schedule.h's vocabulary that holds at most S
 * snapshots in RAM and D on disk at once. Slots 0 .. S-1 are RAM, S ..
 * S+D-1 the slower tier.
 *
 * The recursion. C_k(l, m, d): the least cost of reversing l steps from a
 * base carry that is current and held in tier k (M: RAM, D: disk; reading
 * it back costs r_M = 0, r_D = R), with m RAM and d disk slots free besides:
 *
 *   C_k(1, m, d) = 1                          (tape and reverse the step)
 *   C_k(l, m, d) = min of
 *     (l-1) + 1 + r_k + C_k(l-1, m, d)        advance to l-1, reverse it,
 *                                             restore the base
 *     j + C_M(l-j, m-1, d) + r_k + C_k(j, m, d)      m >= 1, 1 <= j < l:
 *                                             advance j, snapshot in RAM,
 *                                             reverse [j, l) from it, free
 *                                             it, restore the base, reverse
 *                                             [0, j)
 *     j + W + C_D(l-j, m, d-1) + r_k + C_k(j, m, d)  the same on disk
 *     C_M(l, m-1, d)                          k = D, m >= 1: copy the base
 *                                             into RAM (it is current)
 *     W + C_D(l, m+1, d-1)                    k = M, d >= 1: move the base
 *                                             to disk, freeing its RAM slot
 *
 * and the whole scan, n >= 2, takes carry 0 into RAM (C_M(n, S-1, D)) or
 * onto disk (W + C_D(n, S, D-1)); n = 1 needs no snapshot. The first descent
 * of every branch is one sweep from 0 to n-1, so the forward phase is the
 * vocabulary's (TAPE n-1, END_FORWARD, REVERSE n-1). With D = 0 it is
 * Revolve's binomial optimum; tests/test_adjoint.c ("two tiers") holds the
 * recursion to an exhaustive search over every action sequence on small
 * cases, and the generator's counts to the recursion.
 *
 * Dynamic programming over l <= n, m <= min(S, l), d <= min(D, l) (more
 * slots than steps are never useful), the decisions kept in a table of
 * 2 (n+1)(S'+1)(D'+1) entries, S' = min(S, n), D' = min(D, n): init refuses
 * a table past TWO_TIER_MAX_CELLS (the message says so), as it is built in
 * O(n^2 S' D') time (about a second at n = 200, D = 199), so the process
 * keeps the last few solved tables (tt_table_get: a compile asks for the
 * same one several times, a while loop once per run at its counted
 * length); rmi_sched_two_tier_tables_solved counts the solves. The
 * generator replays the decisions with an explicit stack of frames, one
 * action group at a time; predict replays it and counts (as online's
 * predict does).
 */
#include <float.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "adjoint/schedule_impl.h"
#include "core/alloc.h"
#include "core/error.h"

#define TWO_TIER_MAX_CELLS ((int64_t)1 << 24)

enum { TIER_M = 0, TIER_D = 1 };
enum { CH_ONE = 0, CH_LAST, CH_RAM, CH_DISK, CH_COPY_RAM, CH_MOVE_DISK };

/* a frame: reverse steps [a, a+l) from base a, held in slot `slot` of tier
 * k, with m RAM and d disk slots free besides */
enum { PH_DECIDE = 0, PH_AFTER_CHILD, PH_RESTORE, PH_AFTER_COPY };
typedef struct {
    int64_t a, l, j;
    int k, slot, child, m, d, phase;
} tt_frame;

/* the solved recursion for one (n, S, D, W, R): read only once solved,
 * shared by every schedule of that key through the process's cache */
typedef struct tt_table {
    int64_t n, S, D, Sp, Dp;
    double W, R;
    double *cost;   /* C_k(l, m, d) */
    uint8_t *choice;
    int32_t *split; /* j */
    size_t bytes;
    int refs;    /* schedules using it (under cache_lock) */
    bool cached; /* in cache[]: freed by eviction, else by its last user */
} tt_table;

typedef struct {
    int64_t n, S, D, Sp, Dp;
    const tt_table *tab;
    tt_frame *st;
    int64_t top;
    int *ram_free, *disk_free; /* stacks of free slots */
    int n_ram, n_disk;
    int base0; /* carry 0's slot (-1: none) */
    bool first_turn_done, started, finished;
} tt_state;

static int64_t idx(const tt_table *t, int k, int64_t l, int64_t m, int64_t d)
{
    m = m < l ? m : l;
    d = d < l ? d : l;
    return ((k * (t->n + 1) + l) * (t->Sp + 1) + m) * (t->Dp + 1) + d;
}

static double C(const tt_table *t, int k, int64_t l, int64_t m, int64_t d) { return t->cost[idx(t, k, l, m, d)]; }

/* the recursion of the header, l = 1 .. n, ties to the first option listed */
static void tt_solve(tt_table *t)
{
    /* within one l, copying the base into RAM (D -> M) lowers m + d and
     * moving it to disk (M -> D) keeps it: by m + d, disk bases first */
    for (int64_t l = 1; l <= t->n; l++) {
        const int64_t ms = t->Sp < l ? t->Sp : l, ds = t->Dp < l ? t->Dp : l;
        for (int64_t sum = 0; sum <= ms + ds; sum++)
            for (int k = 1; k >= 0; k--)
                for (int64_t m = sum - ds > 0 ? sum - ds : 0; m <= ms && m <= sum; m++) {
                    const int64_t d = sum - m, i = idx(t, k, l, m, d);
                    if (l == 1) {
                        t->cost[i] = 1, t->choice[i] = CH_ONE, t->split[i] = 0;
                        continue;
                    }
                    const double rk = k == TIER_D ? t->R : 0;
                    double best = (double)l + rk + C(t, k, l - 1, m, d);
                    int ch = CH_LAST;
                    int64_t bj = 0;
                    for (int64_t j = 1; j < l; j++) {
                        const double tail = rk + C(t, k, j, m, d);
                        if (m >= 1) {
                            const double c = (double)j + C(t, TIER_M, l - j, m - 1, d) + tail;
                            if (c < best)
                                best = c, ch = CH_RAM, bj = j;
                        }
                        if (d >= 1) {
                            const double c = (double)j + t->W + C(t, TIER_D, l - j, m, d - 1) + tail;
                            if (c < best)
                                best = c, ch = CH_DISK, bj = j;
                        }
                    }
                    if (k == TIER_D && m >= 1 && C(t, TIER_M, l, m - 1, d) < best)
                        best = C(t, TIER_M, l, m - 1, d), ch = CH_COPY_RAM, bj = 0;
                    /* m+1 <= S': the base's own RAM slot is one of the S */
                    if (k == TIER_M && d >= 1 && m + 1 <= t->Sp && t->W + C(t, TIER_D, l, m + 1, d - 1) < best)
                        best = t->W + C(t, TIER_D, l, m + 1, d - 1), ch = CH_MOVE_DISK, bj = 0;
                    t->cost[i] = best, t->choice[i] = (uint8_t)ch, t->split[i] = (int32_t)bj;
                }
    }
}

/* the whole scan's cost and where carry 0 goes (TIER_M / TIER_D; -1: no
 * snapshot, n == 1; -2: none possible) */
static double tt_top(const tt_table *t, int *tier)
{
    if (t->n <= 1) {
        *tier = -1;
        return (double)t->n;
    }
    double best = DBL_MAX;
    *tier = -2;
    if (t->S >= 1)
        best = C(t, TIER_M, t->n, t->S - 1, t->D), *tier = TIER_M;
    if (t->D >= 1 && t->W + C(t, TIER_D, t->n, t->S, t->D - 1) < best)
        best = t->W + C(t, TIER_D, t->n, t->S, t->D - 1), *tier = TIER_D;
    return best;
}

static void tt_table_free(tt_table *t)
{
    if (!t)
        return;
    rmi_free(t->cost);
    rmi_free(t->choice);
    rmi_free(t->split);
    rmi_free(t);
}

/* The process's solved tables, most recently used first: a compile asks
 * for the same one several times (the store's sizing, predict, the plan's
 * replay, each node's), and a while loop once per run at its counted
 * length. At most TT_CACHE_ENTRIES tables and TT_CACHE_BYTES in all stay
 * when unused; a larger table is freed by its last user. */
#define TT_CACHE_ENTRIES 4
#define TT_CACHE_BYTES ((size_t)64 << 20)
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static tt_table *cache[TT_CACHE_ENTRIES];
static int64_t tables_solved;

static bool same_key(const tt_table *t, int64_t n, const remat_schedule_spec *spec)
{
    return t->n == n && t->S == spec->snapshots && t->D == spec->disk_snapshots && t->W == spec->disk_write &&
           t->R == spec->disk_read;
}

/* under cache_lock: the cached table for the key, moved to the front and
 * referenced, or NULL */
static tt_table *cache_find(int64_t n, const remat_schedule_spec *spec)
{
    for (int i = 0; i < TT_CACHE_ENTRIES; i++) {
        tt_table *t = cache[i];
        if (t && same_key(t, n, spec)) {
            memmove(cache + 1, cache, sizeof *cache * (size_t)i);
            cache[0] = t;
            t->refs++;
            return t;
        }
    }
    return NULL;
}

/* under cache_lock: t at the front, unused tables past the limits evicted
 * from the back */
static void cache_insert(tt_table *t)
{
    if (t->bytes > TT_CACHE_BYTES)
        return;
    tt_table *last = cache[TT_CACHE_ENTRIES - 1];
    if (last) { /* the least recently used leaves; its users free it */
        last->cached = false;
        if (last->refs == 0)
            tt_table_free(last);
    }
    memmove(cache + 1, cache, sizeof *cache * (TT_CACHE_ENTRIES - 1));
    cache[0] = t;
    t->cached = true;
    size_t total = 0;
    for (int i = 0; i < TT_CACHE_ENTRIES; i++) {
        if (!cache[i])
            continue;
        if (total + cache[i]->bytes > TT_CACHE_BYTES && cache[i]->refs == 0 && i > 0) {
            cache[i]->cached = false;
            tt_table_free(cache[i]);
            memmove(cache + i, cache + i + 1, sizeof *cache * (size_t)(TT_CACHE_ENTRIES - 1 - i));
            cache[TT_CACHE_ENTRIES - 1] = NULL;
            i--;
            continue;
        }
        total += cache[i]->bytes;
    }
}

static void tt_table_release(const tt_table *ct)
{
    if (!ct)
        return;
    tt_table *t = (tt_table *)ct;
    pthread_mutex_lock(&cache_lock);
    const bool drop = --t->refs == 0 && !t->cached;
    pthread_mutex_unlock(&cache_lock);
    if (drop)
        tt_table_free(t);
}

/* the solved table for spec over n steps, from the cache or solved now
 * (and cached); the message when too large or out of memory */
static remat_status tt_table_get(const remat_schedule_spec *spec, int64_t n, const tt_table **out)
{
    *out = NULL;
    pthread_mutex_lock(&cache_lock);
    tt_table *t = cache_find(n, spec);
    pthread_mutex_unlock(&cache_lock);
    if (t) {
        *out = t;
        return REMAT_OK;
    }
    const int64_t S = spec->snapshots, D = spec->disk_snapshots;
    const int64_t Sp = S < n ? S : n, Dp = D < n ? D : n;
    const double cells = 2.0 * (double)(n + 1) * (double)(Sp + 1) * (double)(Dp + 1);
    if (cells > (double)TWO_TIER_MAX_CELLS || n > INT32_MAX || S + D > INT_MAX) {
        return rmi_error(REMAT_ERR_ARG,
                         "two-tier:%lld:%lld over %lld steps: the exact schedule's table would have %.3g entries "
                         "(at most %lld: fewer steps or slots)",
                         (long long)S, (long long)D, (long long)n, cells, (long long)TWO_TIER_MAX_CELLS);
    }
    t = rmi_calloc(1, sizeof *t);
    if (t) {
        *t = (tt_table){.n = n, .S = S, .D = D, .Sp = Sp, .Dp = Dp, .W = spec->disk_write, .R = spec->disk_read,
                        .bytes = (size_t)cells * (sizeof *t->cost + 1 + sizeof *t->split), .refs = 1};
        t->cost = rmi_malloc(sizeof *t->cost * (size_t)cells);
        t->choice = rmi_malloc((size_t)cells);
        t->split = rmi_malloc(sizeof *t->split * (size_t)cells);
    }
    if (!t || !t->cost || !t->choice || !t->split) {
        tt_table_free(t);
        return rmi_error(REMAT_ERR_NOMEM, "two-tier: out of memory for the schedule's table (%.3g entries)", cells);
    }
    tt_solve(t);
    pthread_mutex_lock(&cache_lock);
    tables_solved++;
    tt_table *other = cache_find(n, spec); /* solved meanwhile by another thread: theirs */
    if (!other)
        cache_insert(t);
    pthread_mutex_unlock(&cache_lock);
    if (other) {
        tt_table_free(t);
        t = other;
    }
    *out = t;
    return REMAT_OK;
}

int64_t rmi_sched_two_tier_tables_solved(void)
{
    pthread_mutex_lock(&cache_lock);
    const int64_t k = tables_solved;
    pthread_mutex_unlock(&cache_lock);
    return k;
}

static void tt_release(tt_state *t)
{
    if (!t)
        return;
    tt_table_release(t->tab);
    rmi_free(t->st);
    rmi_free(t->ram_free);
    rmi_free(t->disk_free);
    rmi_free(t);
}

/* the generator's state over the solved table; the message when too large
 * or out of memory */
static remat_status tt_new(const remat_schedule_spec *spec, int64_t n, tt_state **out)
{
    *out = NULL;
    const tt_table *tab;
    remat_status st = tt_table_get(spec, n, &tab);
    if (st != REMAT_OK)
        return st;
    tt_state *t = rmi_calloc(1, sizeof *t);
    if (t) {
        *t = (tt_state){.n = n, .S = tab->S, .D = tab->D, .Sp = tab->Sp, .Dp = tab->Dp, .tab = tab};
        t->st = rmi_malloc(sizeof *t->st * (size_t)(2 * n + 4));
        t->ram_free = rmi_malloc(sizeof *t->ram_free * (size_t)(t->Sp + 1));
        t->disk_free = rmi_malloc(sizeof *t->disk_free * (size_t)(t->Dp + 1));
    }
    if (!t || !t->st || !t->ram_free || !t->disk_free) {
        if (t)
            tt_release(t);
        else
            tt_table_release(tab);
        return rmi_error(REMAT_ERR_NOMEM, "two-tier: out of memory for the schedule's state");
    }
    *out = t;
    return REMAT_OK;
}

/* ---- the generator ---- */

static int take_slot(tt_state *t, int tier)
{
    if (tier == TIER_M) {
        REMAT_ASSERT(t->n_ram > 0);
        return t->ram_free[--t->n_ram];
    }
    REMAT_ASSERT(t->n_disk > 0);
    return t->disk_free[--t->n_disk];
}

static void put_slot(tt_state *t, int slot)
{
    if (slot < t->S)
        t->ram_free[t->n_ram++] = slot;
    else
        t->disk_free[t->n_disk++] = slot;
}

/* reverse step `step`, current: the first turn is the forward phase's end */
static void emit_reverse(remat_schedule *s, tt_state *t, int64_t step)
{
    if (!t->first_turn_done) {
        rmi_sched_emit(s, REMAT_ACT_TAPE, step, -1);
        rmi_sched_emit(s, REMAT_ACT_END_FORWARD, t->n, -1);
        t->first_turn_done = true;
    }
    rmi_sched_emit(s, REMAT_ACT_REVERSE, step, -1);
}

static void push(tt_state *t, int64_t a, int64_t l, int k, int slot, int64_t m, int64_t d)
{
    REMAT_ASSERT(t->top < 2 * t->n + 4);
    t->st[t->top++] = (tt_frame){.a = a, .l = l, .k = k, .slot = slot, .m = (int)m, .d = (int)d, .phase = PH_DECIDE};
}

/* one group of at most REMAT_SCHED_STEP_MAX actions */
static void tt_unit(remat_schedule *s, tt_state *t)
{
    tt_frame *f = &t->st[t->top - 1];
    switch (f->phase) {
    case PH_DECIDE: {
        const int64_t i = idx(t->tab, f->k, f->l, f->m, f->d);
        const int ch = t->tab->choice[i];
        const int64_t j = t->tab->split[i];
        if (ch == CH_ONE) {
            emit_reverse(s, t, f->a);
            t->top--;
            return;
        }
        if (ch == CH_LAST) {
            if (f->l > 1)
                rmi_sched_emit(s, REMAT_ACT_ADVANCE, f->a + f->l - 1, -1);
            emit_reverse(s, t, f->a + f->l - 1);
            f->l--;
            f->phase = PH_RESTORE;
            return;
        }
        if (ch == CH_COPY_RAM) { /* the child reverses all l steps from a RAM copy this frame frees */
            f->child = take_slot(t, TIER_M);
            rmi_sched_emit(s, REMAT_ACT_TAKESHOT, f->a, f->child);
            f->phase = PH_AFTER_COPY;
            push(t, f->a, f->l, TIER_M, f->child, f->m - 1, f->d);
            return;
        }
        if (ch == CH_MOVE_DISK) { /* the base moves to disk: whoever frees it frees the disk slot */
            const int slot = take_slot(t, TIER_D);
            rmi_sched_emit(s, REMAT_ACT_TAKESHOT, f->a, slot);
            rmi_sched_emit(s, REMAT_ACT_FREE, f->a, f->slot);
            put_slot(t, f->slot);
            f->slot = slot, f->k = TIER_D, f->m++, f->d--;
            if (t->top >= 2)
                t->st[t->top - 2].child = slot;
            else
                t->base0 = slot;
            return;
        }
        const int tier = ch == CH_RAM ? TIER_M : TIER_D;
        rmi_sched_emit(s, REMAT_ACT_ADVANCE, f->a + j, -1);
        f->child = take_slot(t, tier);
        rmi_sched_emit(s, REMAT_ACT_TAKESHOT, f->a + j, f->child);
        f->j = j;
        f->phase = PH_AFTER_CHILD;
        push(t, f->a + j, f->l - j, tier, f->child, tier == TIER_M ? f->m - 1 : f->m,
             tier == TIER_D ? f->d - 1 : f->d);
        return;
    }
    case PH_AFTER_CHILD:
        rmi_sched_emit(s, REMAT_ACT_FREE, f->a + f->j, f->child);
        put_slot(t, f->child);
        rmi_sched_emit(s, REMAT_ACT_RESTORE, f->a, f->slot);
        f->l = f->j;
        f->phase = PH_DECIDE;
        return;
    case PH_RESTORE:
        rmi_sched_emit(s, REMAT_ACT_RESTORE, f->a, f->slot);
        f->phase = PH_DECIDE;
        return;
    case PH_AFTER_COPY:
        rmi_sched_emit(s, REMAT_ACT_FREE, f->a, f->child);
        put_slot(t, f->child);
        t->top--;
        return;
    }
}

static remat_status two_tier_init(remat_schedule *s)
{
    tt_state *t;
    remat_status st = tt_new(&s->spec, s->n, &t);
    if (st != REMAT_OK)
        return st;
    int tier;
    tt_top(t->tab, &tier);
    if (tier == -2) {
        tt_release(t);
        return rmi_error(REMAT_ERR_ARG, "two-tier:%lld:%lld: no snapshot slot for %lld steps",
                         (long long)s->spec.snapshots, (long long)s->spec.disk_snapshots, (long long)s->n);
    }
    for (int64_t i = t->Sp - 1; i >= 0; i--) /* slot 0 is taken first */
        t->ram_free[t->n_ram++] = (int)i;
    for (int64_t i = t->Dp - 1; i >= 0; i--)
        t->disk_free[t->n_disk++] = (int)(t->S + i);
    t->base0 = -1;
    s->state = t;
    s->max_slots = t->S + t->Dp;
    return REMAT_OK;
}

static void two_tier_step(remat_schedule *s)
{
    tt_state *t = s->state;
    if (!t->started) {
        t->started = true;
        if (t->n == 0) {
            rmi_sched_emit(s, REMAT_ACT_END_FORWARD, 0, -1);
            t->finished = true;
            return;
        }
        int tier;
        tt_top(t->tab, &tier);
        if (tier < 0) { /* one step: nothing to bring back */
            push(t, 0, 1, TIER_M, -1, 0, 0);
        } else {
            t->base0 = take_slot(t, tier);
            rmi_sched_emit(s, REMAT_ACT_TAKESHOT, 0, t->base0);
            push(t, 0, t->n, tier, t->base0, tier == TIER_M ? t->S - 1 : t->S, tier == TIER_D ? t->D - 1 : t->D);
        }
        return;
    }
    if (t->finished) {
        s->done = true;
        return;
    }
    while (t->top > 0 && rmi_sched_room(s)) {
        tt_unit(s, t);
        if (t->top == 0) { /* the whole scan is reversed: free carry 0's slot */
            if (t->base0 >= 0) {
                rmi_sched_emit(s, REMAT_ACT_FREE, 0, t->base0);
                put_slot(t, t->base0);
            }
            t->finished = true;
            return;
        }
    }
}

static void two_tier_free(remat_schedule *s)
{
    tt_release(s->state);
    s->state = NULL;
}

static remat_status two_tier_predict(const remat_schedule_spec *spec, int64_t n, remat_schedule_cost *cost)
{
    if (n == 0)
        return REMAT_OK;
    remat_schedule *s;
    remat_status st = remat_schedule_new(spec, n, &s);
    if (st != REMAT_OK)
        return st;
    const int64_t S = spec->snapshots;
    int64_t ram = 0, disk = 0, c = 0;
    bool kept = false;
    remat_action a;
    for (remat_schedule_next(s, &a); a.kind != REMAT_ACT_DONE; remat_schedule_next(s, &a)) {
        switch (a.kind) {
        case REMAT_ACT_ADVANCE: cost->forward_evals += a.step - c, c = a.step; break;
        case REMAT_ACT_TAPE: cost->forward_evals++, kept = true, c = a.step + 1; break;
        case REMAT_ACT_REVERSE:
            cost->forward_evals += kept ? 0 : 1;
            kept = false;
            break;
        case REMAT_ACT_TAKESHOT:
            if (a.slot < S)
                ram++;
            else
                disk++, cost->disk_writes++;
            break;
        case REMAT_ACT_RESTORE: cost->disk_reads += a.slot >= S, c = a.step; break;
        case REMAT_ACT_FREE:
            if (a.slot < S)
                ram--;
            else
                disk--;
            break;
        default: break;
        }
        if (ram > cost->peak_snapshots)
            cost->peak_snapshots = ram;
        if (disk > cost->peak_disk_snapshots)
            cost->peak_disk_snapshots = disk;
    }
    cost->peak_tapes = 1;
    remat_schedule_free(s);
    return REMAT_OK;
}

static const remat_schedule_type two_tier_type = {
    .name = "two-tier",
    .init = two_tier_init,
    .step = two_tier_step,
    .free = two_tier_free,
    .predict = two_tier_predict,
};

const remat_schedule_type *const rmi_schedule_type_two_tier = &two_tier_type;

double rmi_sched_two_tier_optimum(const remat_schedule_spec *spec, int64_t n)
{
    tt_state *t;
    if (tt_new(spec, n, &t) != REMAT_OK)
        return -1;
    int tier;
    const double c = tt_top(t->tab, &tier);
    tt_release(t);
    return tier == -2 ? -1 : c;
}

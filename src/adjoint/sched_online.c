/*
 * sched_online.c — checkpointing when the length is unknown until the end
 * (adaptive stepping; diffrax's RecursiveCheckpointAdjoint without max_steps).
 *
 * The forward phase advances one step at a time and decides at each carry c
 * whether to keep it, and which snapshot to give up for it, without knowing n.
 * Whatever n turns out to be, the reverse phase then reverses the gap between
 * each pair of kept carries with Revolve, right to left, the gap after the
 * i-th kept carry (i = 0 is carry 0) with s - i snapshots. That costs
 *     2n - 1 + sum_i F(gap_i, s - i)
 * evaluations (n forward, n-1 recording, the advances of each gap), so all
 * that matters is where the kept carries are when n is revealed.
 *
 * Index the gaps from the right: h_1 = (n-1) - last kept carry, h_2 the gap
 * before it, ..., h_s the gap after carry 0; h_k is reversed with k snapshots.
 * With T the repetition number of (n, s) (see revolve.h), the placement rule
 * below keeps every h_k <= beta(k, T-1). Then
 *   - for n <= beta(s, 2) = (s+1)(s+2)/2 the cost is exactly the binomial
 *     optimum n + F(n, s) = 3n - s - 2 (for n > s+1): F(h, k) >= h - 1 with
 *     equality exactly when h <= k+1, so s gaps with h_k <= k+1 sum to the
 *     optimum and no other placement reaches it. That is the whole range in
 *     which Stumm & Walther, "New algorithms for optimal online
 *     checkpointing", SIAM J. Sci. Comput. 32(2), 2010, show an online
 *     schedule can match the offline optimum. The placement rule below is our
 *     own construction reaching that condition (not their Algorithm 1);
 *     tests/test_adjoint.c checks it for every such n with s = 1..12.
 *   - for every n >= 2, since F(h, k) <= (T-1)(h-1) when h <= beta(k, T-1):
 *         evaluations <= (T+1) n - (T-1)(s+1) - 1,
 *     which exceeds the binomial optimum by at most
 *     C(s+T, T-1) - (T-1)(s+1) - 1, a constant for a given repetition number.
 *     As in Wang, Moin & Iaccarino, "Minimal repetition dynamic checkpointing
 *     algorithm for unsteady adjoint calculation", SIAM J. Sci. Comput. 31(4),
 *     2009, no kept gap ever needs more repetitions than the optimal schedule
 *     for the current length; their checkpoint levels are replaced here by
 *     the explicit per-gap cap, which is what makes the bound provable.
 *
 * The rule, at carry c when n >= c+2 (T and the caps taken for n = c+2):
 * while fewer than s carries are kept, keep c. Otherwise keep c and drop the
 * kept carry e >= 1 with the smallest e whose two neighbouring gaps fit,
 * merged, under the cap of the merged gap; if none fits, keep nothing (h_1
 * grows by one). Dropping from the left fills the leftmost gap to its cap
 * first: starting from gaps all full for T-1, merging at the left absorbs the
 * gaps to its right one at a time, and
 *     beta(s, T-1) = beta(s, T-2) + sum_{k=1}^{s-1} beta(k, T-2) + 1
 * fills it exactly; then the next gap fills the same way, down to h_1. Every
 * merge adds a gap of 1 on the right and keeps the others under their
 * (growing) caps, so the rule never gets stuck (asserted).
 *
 * Runs: while n is unknown, single actions (remat/schedule.h: the length may
 * be revealed between any two). Once it is known, the forward phase groups
 * carries with the same decision (forward_runs), and the reverse phase is the
 * Revolve engine's (sched_binomial.c lists its runs; the gaps' slots come in
 * the order the forward phase freed them, so fewer one-step reversals line
 * up than in binomial, which a scan's plan undoes by renaming the slots:
 * src/scan/scan_slots.c). online:10 over 1000 steps, length known: 7388
 * actions in 2450 runs.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "adjoint/revolve.h"
#include "core/alloc.h"
#include "core/assert.h"
#include "core/error.h"

/* Where the kept carries are; shared by the generator and predict(). */
typedef struct {
    int64_t s;
    int64_t *pos; /* kept carries, increasing; pos[0] == 0 */
    int *slot;    /* slot of pos[i] (generator only) */
    int64_t kept;
    int64_t *cap; /* cap[k] = beta(k, T-1) for the gap with right index k */
    int64_t T, beta_T; /* repetition number of the next length, beta(s, T) */
    int64_t first;     /* gaps left of pos[first-1] are full for this T */
} online_plan;

#define KEEP_NONE (-2)
#define KEEP_NEW (-1)

static remat_status plan_init(online_plan *p, int64_t s, bool slots)
{
    *p = (online_plan){.s = s, .T = 1, .beta_T = rmi_revolve_beta(s, 1), .first = 1};
    p->pos = rmi_calloc((size_t)s + 1, sizeof *p->pos);
    p->cap = rmi_calloc((size_t)s + 1, sizeof *p->cap);
    p->slot = slots ? rmi_calloc((size_t)s + 1, sizeof *p->slot) : NULL;
    if (!p->pos || !p->cap || (slots && !p->slot))
        goto fail;
    for (int64_t k = 1; k <= s; k++)
        p->cap[k] = 1; /* beta(k, 0) */
    return REMAT_OK;
fail:
    rmi_free(p->pos);
    rmi_free(p->cap);
    rmi_free(p->slot);
    return rmi_error(REMAT_ERR_NOMEM, "online:%lld: out of memory for its snapshot table",
                     (long long)s);
}

static void plan_release(online_plan *p)
{
    rmi_free(p->pos);
    rmi_free(p->cap);
    rmi_free(p->slot);
}

/* The decision at carry c, assuming n >= c+2: KEEP_NONE, KEEP_NEW, or the
 * index in pos[] of the carry to drop for c. */
static int64_t plan_decide(online_plan *p, int64_t c)
{
    while (c + 2 > p->beta_T) { /* the next length has a higher repetition number */
        p->T++;
        p->beta_T = rmi_revolve_beta(p->s, p->T);
        for (int64_t k = 1; k <= p->s; k++)
            p->cap[k] = rmi_revolve_beta(k, p->T - 1);
        p->first = 1;
    }
    if (p->kept < p->s)
        return KEEP_NEW;
    int64_t s = p->s;
    for (int64_t e = p->first; e <= s - 1; e++) {
        int64_t right = e + 1 < s ? p->pos[e + 1] : c;
        int64_t k = s - e + 1; /* right index of the merged gap */
        if (p->pos[e] - p->pos[e - 1] == p->cap[k]) {
            if (e == p->first)
                p->first++; /* full gaps on the left stay full until T grows */
            continue;
        }
        if (right - p->pos[e - 1] <= p->cap[k])
            return e;
    }
    REMAT_ASSERT(c + 1 - p->pos[s - 1] <= p->cap[1]);
    return KEEP_NONE;
}

static void plan_apply(online_plan *p, int64_t c, int64_t drop, int slot)
{
    if (drop == KEEP_NONE)
        return;
    if (drop >= 0) {
        int64_t tail = p->kept - drop - 1; /* often 0: the last kept carry moves on */
        if (tail > 0) {
            memmove(p->pos + drop, p->pos + drop + 1, (size_t)tail * sizeof *p->pos);
            if (p->slot)
                memmove(p->slot + drop, p->slot + drop + 1, (size_t)tail * sizeof *p->slot);
        }
        p->kept--;
    }
    p->pos[p->kept] = c;
    if (p->slot)
        p->slot[p->kept] = slot;
    p->kept++;
}

/* Evaluations once n is revealed with the plan's carries kept (n >= 2). */
static int64_t plan_evals(const online_plan *p, int64_t n)
{
    int64_t total = 2 * n - 1;
    for (int64_t i = 0; i < p->kept; i++) {
        int64_t end = i + 1 < p->kept ? p->pos[i + 1] : n - 1;
        int64_t f = rmi_revolve_advances(end - p->pos[i], p->s - i);
        total = f > INT64_MAX - total ? INT64_MAX : total + f;
    }
    return total;
}

typedef enum { ON_FORWARD, ON_REVERSE } online_phase;

/* The decision at one carry as actions: nothing, TAKESHOT c into a slot from
 * the pool, or FREE `freed` and TAKESHOT c into its slot. */
typedef struct {
    int64_t drop; /* KEEP_NONE, KEEP_NEW, or >= 0: a kept carry was dropped */
    int64_t freed;
    int slot;
} online_decision;

#define ONLINE_TAB_COLS 32

typedef struct {
    online_plan plan;
    remat_revolve_engine engine; /* its pool holds the free slots */
    online_phase phase;
    int64_t c;       /* forward: the runtime's current carry */
    bool decided;    /* forward: the snapshot decision at c has been emitted */
    bool emitted;    /* any action handed out yet */
    bool pending;    /* forward, n known: the decision at c is made, in `next` */
    online_decision next;
} online_state;

static remat_status online_init(remat_schedule *s)
{
    int64_t snaps = s->spec.snapshots;
    if (snaps > INT_MAX || (uint64_t)snaps > SIZE_MAX / 16)
        return rmi_error(REMAT_ERR_ARG, "online:%lld: too many snapshot slots", (long long)snaps);
    online_state *st = rmi_calloc(1, sizeof *st);
    if (!st)
        return rmi_error(REMAT_ERR_NOMEM, "online: out of memory");
    remat_status rc = plan_init(&st->plan, snaps, true);
    if (rc != REMAT_OK)
        goto fail_plan;
    /* The beta table is filled when the reverse phase starts (n known).
     * ONLINE_TAB_COLS columns hold repetition numbers up to 31 (online:10:
     * past 10^9 steps; online:2: about 500); past them the engine computes. */
    rc = rmi_revolve_engine_init(&st->engine, snaps + 2, snaps, ONLINE_TAB_COLS);
    if (rc != REMAT_OK)
        goto fail_engine;
    for (int64_t i = snaps - 1; i >= 0; i--) /* slot 0 is taken first */
        rmi_revolve_pool_put(&st->engine, (int)i);
    s->state = st;
    s->max_slots = snaps;
    return REMAT_OK;
fail_engine:
    plan_release(&st->plan);
fail_plan:
    rmi_free(st);
    return rc;
}

static void online_set_length(remat_schedule *s, int64_t n)
{
    online_state *st = s->state;
    if (s->n >= 0) {
        REMAT_ASSERT(n == s->n); /* revealed twice: must agree */
        return;
    }
    /* Too late if step n-1 has already been advanced over without a tape. */
    REMAT_ASSERT(st->phase == ON_FORWARD);
    REMAT_ASSERT(n == 0 ? !st->emitted : n >= st->c + 1);
    s->n = n;
}

/* Every gap goes on the engine's stack at once, the last on top: the engine
 * reverses the top range to its end before it looks at the one below, which
 * is the order of reversing gap by gap, and it can then see a stretch of
 * one-step gaps in slots one apart (reversed as one run). Gap i, with s - i
 * snapshots, nests at most s - i + 1 frames over the i below: s + 1 in all.
 * plan_decide's caps keep every gap's repetition number below T, so a beta
 * table up to T serves every split (while it fits in ONLINE_TAB_COLS). */
static void start_reverse(remat_schedule *s, online_state *st)
{
    const online_plan *p = &st->plan;
    for (int64_t i = 0; i < p->kept; i++) {
        int64_t end = i + 1 < p->kept ? p->pos[i + 1] : s->n - 1;
        rmi_revolve_push(&st->engine, p->pos[i], end, p->s - i, 0, p->slot[i]);
    }
    rmi_revolve_engine_fill(&st->engine, p->T + 1);
    st->engine.c = -1;
}

/* Make the decision at carry c (n >= c+2) and apply it to the plan. */
static online_decision decide(online_state *st, int64_t c)
{
    online_decision d = {.drop = plan_decide(&st->plan, c), .freed = -1, .slot = -1};
    if (d.drop >= 0) {
        d.slot = st->plan.slot[d.drop];
        d.freed = st->plan.pos[d.drop];
    } else if (d.drop == KEEP_NEW) {
        d.slot = rmi_revolve_pool_take(&st->engine);
    }
    if (d.drop != KEEP_NONE)
        plan_apply(&st->plan, c, d.drop, d.slot);
    return d;
}

/* Whether d1, the decision m carries after d0, repeats it shifted by m steps
 * and m*ds slots (ds fixed by m == 1: +-1 for new slots, also 0 when the
 * same slot is freed and retaken). */
static bool decision_repeats(const online_decision *d0, const online_decision *d1, int64_t m,
                             int *ds)
{
    if ((d0->drop >= 0) != (d1->drop >= 0) || (d0->drop < 0 && d0->drop != d1->drop))
        return false;
    if (d0->drop == KEEP_NONE)
        return true;
    if (d0->drop >= 0 && d1->freed != d0->freed + m)
        return false;
    int d = d1->slot - d0->slot;
    if (m == 1 && (d == 1 || d == -1 || (d == 0 && d0->drop >= 0)))
        *ds = d;
    else if (m == 1)
        return false;
    return d == (int)m * *ds;
}

/* The forward phase once n is known (runtimes that know the length reveal it
 * at once): the decisions are made ahead, and a stretch of carries with the
 * same decision shifted by one step goes out as one run, up to carry n-1 at
 * most:
 *   [ADVANCE c+1] x m                              nothing kept
 *   [TAKESHOT c slot p, ADVANCE c+1] x m           kept in new slots p, p+-1..
 *   [FREE e slot p, TAKESHOT c slot p, ADVANCE c+1] x m
 *                                                  the last kept carry moved
 *                                                  on (e = c-1; ds 0 or +-1)
 * The decision that breaks a run is kept for the next call: decisions are
 * made in the same order, so the actions are those of the one-step loop. */
static void forward_runs(remat_schedule *s, online_state *st)
{
    int64_t c = st->c, n = s->n, m = 1;
    online_decision d0 = st->pending ? st->next : decide(st, c);
    st->pending = false;
    int ds = 0;
    for (; c + m <= n - 2; m++) {
        online_decision d1 = decide(st, c + m);
        if (!decision_repeats(&d0, &d1, m, &ds)) {
            st->next = d1;
            st->pending = true;
            break;
        }
    }
    int len = d0.drop >= 0 ? 3 : d0.drop == KEEP_NEW ? 2 : 1;
    remat_action_run *r = rmi_sched_emit_open(s, len, m, 1, ds);
    if (d0.drop >= 0)
        rmi_sched_set(&r->pat[0], REMAT_ACT_FREE, d0.freed, d0.slot);
    if (d0.drop != KEEP_NONE)
        rmi_sched_set(&r->pat[len - 2], REMAT_ACT_TAKESHOT, c, d0.slot);
    rmi_sched_set(&r->pat[len - 1], REMAT_ACT_ADVANCE, c + 1, -1);
    st->c = c + m;
}

static void online_forward(remat_schedule *s, online_state *st)
{
    int64_t c = st->c;
    if (s->n == 0) {
        rmi_sched_emit(s, REMAT_ACT_END_FORWARD, 0, -1);
        s->done = true;
        return;
    }
    if (s->n == c + 1) { /* the last step: tape it; the reverse phase follows */
        rmi_sched_emit(s, REMAT_ACT_TAPE, c, -1);
        rmi_sched_emit(s, REMAT_ACT_END_FORWARD, s->n, -1);
        rmi_sched_emit(s, REMAT_ACT_REVERSE, c, -1);
        st->phase = ON_REVERSE;
        start_reverse(s, st);
        return;
    }
    if (s->n > 0 && !st->decided) {
        forward_runs(s, st);
        return;
    }
    if (!st->decided) {
        st->decided = true;
        int64_t drop = plan_decide(&st->plan, c);
        if (drop == KEEP_NONE)
            goto advance;
        int slot;
        if (drop >= 0) {
            slot = st->plan.slot[drop];
            rmi_sched_emit(s, REMAT_ACT_FREE, st->plan.pos[drop], slot);
        } else {
            slot = rmi_revolve_pool_take(&st->engine);
        }
        rmi_sched_emit(s, REMAT_ACT_TAKESHOT, c, slot);
        plan_apply(&st->plan, c, drop, slot);
        return;
    }
advance:
    /* One step at a time: the runtime may reveal n before any next() call. */
    rmi_sched_emit(s, REMAT_ACT_ADVANCE, c + 1, -1);
    st->c = c + 1;
    st->decided = false;
}

/* While n is unknown, one decision per call (the runtime may reveal n
 * between any two); once it is known, as many as the queue takes. */
static void online_step(remat_schedule *s)
{
    online_state *st = s->state;
    st->emitted = true;
    do {
        if (st->phase == ON_FORWARD) {
            online_forward(s, st);
            if (s->n < 0)
                return;
        } else if (!rmi_revolve_step(&st->engine, s)) {
            s->done = true;
        }
    } while (!s->done && rmi_sched_room(s));
}

static void online_free(remat_schedule *s)
{
    online_state *st = s->state;
    if (!st)
        return;
    plan_release(&st->plan);
    rmi_revolve_engine_release(&st->engine);
    rmi_free(st);
}

static remat_status online_predict(const remat_schedule_spec *spec, int64_t n,
                                   remat_schedule_cost *cost)
{
    if (n <= 1) {
        *cost = (remat_schedule_cost){.forward_evals = n, .peak_tapes = n};
        return REMAT_OK;
    }
    /* While fewer than s carries are kept every carry is kept, so more than
     * n-1 snapshots change nothing: clamping keeps predict O(n) in memory. */
    online_plan p;
    remat_status rc = plan_init(&p, spec->snapshots < n - 1 ? spec->snapshots : n - 1, false);
    if (rc != REMAT_OK)
        return rc;
    for (int64_t c = 0; c + 1 < n; c++) /* the decisions the generator makes */
        plan_apply(&p, c, plan_decide(&p, c), -1);
    *cost = (remat_schedule_cost){
        .forward_evals = plan_evals(&p, n), .peak_snapshots = p.kept, .peak_tapes = 1};
    plan_release(&p);
    return REMAT_OK;
}

static const remat_schedule_type online_type = {
    .name = "online",
    .init = online_init,
    .step = online_step,
    .set_length = online_set_length,
    .free = online_free,
    .predict = online_predict,
};

const remat_schedule_type *const rmi_schedule_type_online = &online_type;

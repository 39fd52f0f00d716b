/*
 * revolve.c — binomial checkpointing formulas and the Revolve engine
 * (Griewank, "Achieving logarithmic growth of temporal and spatial complexity
 * in reverse automatic differentiation", OMS 1(1), 1992; Griewank & Walther,
 * "Algorithm 799: Revolve", ACM TOMS 26(1), 2000).
 */
#include "adjoint/revolve.h"

#include <stdlib.h>

#include "core/alloc.h"
#include "core/assert.h"
#include "core/error.h"

__extension__ typedef unsigned __int128 u128;

int64_t rmi_revolve_beta(int64_t s, int64_t t)
{
    if (t < 0 || s < 0)
        return 0;
    /* C(s+t, t) = C(s+t, s): multiply by the shorter run. Each partial product
     * C(x+i, i) is exact and increasing, so once past INT64_MAX the result is too.
     * 64-bit arithmetic while r*(hi+i) fits (all the Revolve engine asks
     * for), 128-bit only beyond: a 128-bit division is a libgcc call. */
    int64_t lo = s < t ? s : t, hi = s < t ? t : s;
    uint64_t r = 1;
    int64_t i = 1;
    for (; i <= lo; i++) {
        uint64_t p;
        if (__builtin_mul_overflow(r, (uint64_t)(hi + i), &p))
            break;
        r = p / (uint64_t)i;
        if (r > (uint64_t)INT64_MAX)
            return INT64_MAX;
    }
    u128 w = r;
    for (; i <= lo; i++) {
        w = w * (u128)(hi + i) / (u128)i;
        if (w > (u128)INT64_MAX)
            return INT64_MAX;
    }
    return (int64_t)w;
}

int64_t rmi_revolve_reps(int64_t l, int64_t s)
{
    REMAT_ASSERT(l >= 1 && s >= 1);
    if (s == 1)
        return l - 1; /* beta(1, t) = t + 1 */
    if (s <= 16) { /* t can be large (~ l^(1/s)): bisect, O(s log l) */
        int64_t lo = 0, hi = 1;
        while (rmi_revolve_beta(s, hi) < l)
            hi *= 2;
        while (lo < hi) {
            int64_t mid = lo + (hi - lo) / 2;
            if (rmi_revolve_beta(s, mid) >= l)
                hi = mid;
            else
                lo = mid + 1;
        }
        return lo;
    }
    int64_t t = 0; /* t is small here: count up */
    u128 r = 1; /* beta(s, t) */
    while (r < (u128)l) {
        t++;
        r = r * (u128)(s + t) / (u128)t;
    }
    return t;
}

static int64_t sat_mul(int64_t a, int64_t b)
{
    int64_t r;
    return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}

int64_t rmi_revolve_advances(int64_t l, int64_t s)
{
    if (l <= 1)
        return 0;
    REMAT_ASSERT(s >= 1);
    if (s == 1) /* advance l-1, l-2, ..., 1 steps from the one snapshot */
        return (l % 2 == 0) ? sat_mul(l / 2, l - 1) : sat_mul(l, (l - 1) / 2);
    int64_t t = rmi_revolve_reps(l, s);
    int64_t tl = sat_mul(t, l);
    if (tl == INT64_MAX)
        return INT64_MAX;
    /* beta(s+1, t-1) < t*l since beta(s, t-1) < l, so no saturation here. */
    return tl - rmi_revolve_beta(s + 1, t - 1);
}

/* Most beta table entries an engine keeps (32 KiB): binomial:10 over 1000
 * steps needs 11 x 5. */
#define REVOLVE_TAB_MAX 4096

remat_status rmi_revolve_engine_init(remat_revolve_engine *e, int64_t frames, int64_t slots,
                                     int64_t tab_cols)
{
    *e = (remat_revolve_engine){.c = 0};
    int64_t rows = slots + 1;
    if (tab_cols > REVOLVE_TAB_MAX / rows)
        tab_cols = REVOLVE_TAB_MAX / rows;
    if (tab_cols < 3) /* t <= 1 is cheap to compute anyway */
        tab_cols = 0;
    e->frames = rmi_calloc((size_t)(frames > 0 ? frames : 1), sizeof *e->frames);
    e->pool = rmi_calloc((size_t)(slots > 0 ? slots : 1), sizeof *e->pool);
    e->tab = tab_cols ? rmi_malloc((size_t)(rows * tab_cols) * sizeof *e->tab) : NULL;
    if (!e->frames || !e->pool || (tab_cols && !e->tab)) {
        rmi_revolve_engine_release(e);
        return rmi_error(REMAT_ERR_NOMEM,
                         "schedule: out of memory for a Revolve stack of %lld frames and %lld slots",
                         (long long)frames, (long long)slots);
    }
    e->cap = frames;
    e->pool_cap = slots;
    e->tab_cols = tab_cols;
    e->tab_s = tab_cols ? rows : 0;
    return REMAT_OK;
}

static int64_t sat_add(int64_t a, int64_t b)
{
    int64_t r;
    return __builtin_add_overflow(a, b, &r) ? INT64_MAX : r;
}

void rmi_revolve_engine_fill(remat_revolve_engine *e, int64_t t_max)
{
    int64_t cols = t_max + 1 < e->tab_cols ? t_max + 1 : e->tab_cols;
    /* Pascal's rule beta(s, t) = beta(s-1, t) + beta(s, t-1), saturating like
     * rmi_revolve_beta: a sum past INT64_MAX has a summand past it or
     * overflows. */
    for (int64_t t = e->tab_t; t < cols; t++)
        for (int64_t s = 0; s < e->tab_s; s++)
            e->tab[s * e->tab_cols + t] = s == 0 || t == 0
                                              ? 1
                                              : sat_add(e->tab[(s - 1) * e->tab_cols + t],
                                                        e->tab[s * e->tab_cols + t - 1]);
    if (cols > e->tab_t)
        e->tab_t = cols;
}

void rmi_revolve_engine_release(remat_revolve_engine *e)
{
    rmi_free(e->frames);
    rmi_free(e->pool);
    rmi_free(e->tab);
    e->frames = NULL;
    e->pool = NULL;
    e->tab = NULL;
}

void rmi_revolve_pool_put(remat_revolve_engine *e, int slot)
{
    REMAT_ASSERT(e->npool < e->pool_cap);
    e->pool[e->npool++] = slot;
}

int rmi_revolve_pool_take(remat_revolve_engine *e)
{
    REMAT_ASSERT(e->npool > 0);
    return e->pool[--e->npool];
}

static inline void push_frame(remat_revolve_engine *e, int64_t a, int64_t b, int64_t s, int64_t t,
                              int slot)
{
    REMAT_ASSERT(e->depth < e->cap && a <= b);
    remat_revolve_frame *f = &e->frames[e->depth++];
    f->a = a;
    f->b = b;
    f->s = s;
    f->t = t;
    f->slot = slot;
}

void rmi_revolve_push(remat_revolve_engine *e, int64_t a, int64_t b, int64_t s, int64_t t,
                      int slot)
{
    push_frame(e, a, b, s, t, slot);
}

static inline int64_t beta_of(const remat_revolve_engine *e, int64_t s, int64_t t)
{
    if ((uint64_t)s < (uint64_t)e->tab_s && (uint64_t)t < (uint64_t)e->tab_t)
        return e->tab[s * e->tab_cols + t];
    return rmi_revolve_beta(s, t);
}

/* The split point j of the frame's range (revolve.h), its repetition number
 * found from the frame's bound (stepping down while beta(s, t-1) still
 * reaches l) and stored back exact. s == 1 needs none. */
static int64_t frame_split(const remat_revolve_engine *e, remat_revolve_frame *f)
{
    int64_t l = f->b - f->a, s = f->s;
    if (s == 1)
        return l - 1;
    int64_t t = f->t;
    if (t <= 0) { /* a range pushed from outside (online: its gaps) */
        t = 1;
        while (t < e->tab_t && s < e->tab_s && e->tab[s * e->tab_cols + t] < l)
            t++;
        if (t >= e->tab_t || s >= e->tab_s)
            t = rmi_revolve_reps(l, s);
    } else {
        REMAT_ASSERT(beta_of(e, s, t) >= l); /* a bound: the parent's split holds */
        while (t > 1 && beta_of(e, s, t - 1) >= l)
            t--;
    }
    f->t = t;
    int64_t j = beta_of(e, s, t - 2);
    int64_t right = beta_of(e, s - 1, t);
    if (right < l && l - right > j)
        j = l - right;
    if (j < 1)
        j = 1;
    REMAT_ASSERT(j >= 1 && j < l);
    return j;
}

/* One level of the descent of the top range (l >= 2), as one run of count 1:
 *   [RESTORE a]      when coming back to a (c != a; a is in the frame's slot)
 *   [TAKESHOT a]     when a is not kept yet (the range comes back to it)
 *   ADVANCE a+j      to the split point; the frame shrinks to [a, a+j), the
 *                    right part [a+j, b) with one snapshot fewer is pushed
 *   [REVERSE a+j]    when the right part is that one step (it is reversed at
 *                    once, nothing pushed), unless it is the first turn
 * The parts' repetition numbers are at most t (right) and t-1 (left). */
static void descend_level(remat_revolve_engine *e, remat_schedule *s, bool restore)
{
    remat_revolve_frame *f = &e->frames[e->depth - 1];
    remat_action pat[REMAT_RUN_MAX_PATTERN];
    int n = 0;
    if (restore)
        rmi_sched_set(&pat[n++], REMAT_ACT_RESTORE, f->a, f->slot);
    if (f->slot < 0) {
        f->slot = rmi_revolve_pool_take(e);
        rmi_sched_set(&pat[n++], REMAT_ACT_TAKESHOT, f->a, f->slot);
    }
    int64_t m = f->a + frame_split(e, f);
    int64_t b = f->b, sub = f->s - 1, t = f->t;
    f->b = m;
    f->t = t - 1;
    rmi_sched_set(&pat[n++], REMAT_ACT_ADVANCE, m, -1);
    if (b - m == 1 && !(e->forward_open && b == e->n)) {
        rmi_sched_set(&pat[n++], REMAT_ACT_REVERSE, m, -1);
        e->c = -1;
    } else {
        e->c = m;
        push_frame(e, m, b, sub, t, -1);
    }
    remat_action_run *r = rmi_sched_emit_open(s, n, 1, 0, 0);
    for (int i = 0; i < n; i++)
        rmi_sched_set(&r->pat[i], pat[i].kind, pat[i].step, pat[i].slot);
}

/* c == a, the top range (l >= 2) has no snapshot of a yet. While its split
 * is 1 (a range with at least l-1 free snapshots is reversed per step, and
 * the first splits of a long range are often 1 as well) and the pool hands
 * out slots one apart, the snapshot/advance pairs
 *     TAKESHOT a slot p, ADVANCE a+1, TAKESHOT a+1 slot p+d, ADVANCE a+2, ...
 * go out as one run [TAKESHOT a slot p, ADVANCE a+1] x m (dstep +1,
 * dslot d = +-1). A range that ends the run with l >= 2 (split > 1, or a
 * slot out of line) descends one level on its own. At most 2 runs. */
static void snapshot_descend(remat_revolve_engine *e, remat_schedule *s)
{
    int64_t a0 = e->frames[e->depth - 1].a, m = 0;
    int p0 = -1, ds = 0;
    for (;;) {
        remat_revolve_frame *f = &e->frames[e->depth - 1];
        if (f->b - f->a < 2)
            break;
        if (m == 0 && f->b - f->a == 2 && !(e->forward_open && f->b == e->n))
            break; /* a run of one pair and a REVERSE: descend_level's one run */
        REMAT_ASSERT(f->slot < 0 && e->npool > 0);
        int p = e->pool[e->npool - 1];
        if (m == 1 && (p - p0 == 1 || p - p0 == -1))
            ds = p - p0;
        if (m >= 1 && p != p0 + (int)m * ds)
            break;
        if (frame_split(e, f) != 1)
            break;
        e->npool--;
        f->slot = p;
        if (m == 0)
            p0 = p;
        int64_t a = f->a, b = f->b, sub = f->s - 1, t = f->t;
        f->b = a + 1;
        push_frame(e, a + 1, b, sub, t, -1);
        e->c = a + 1;
        m++;
    }
    if (m > 0) {
        remat_action_run *r = rmi_sched_emit_open(s, 2, m, 1, ds);
        rmi_sched_set(&r->pat[0], REMAT_ACT_TAKESHOT, a0, p0);
        rmi_sched_set(&r->pat[1], REMAT_ACT_ADVANCE, a0 + 1, -1);
    }
    const remat_revolve_frame *f = &e->frames[e->depth - 1];
    if (f->b - f->a >= 2)
        descend_level(e, s, false);
}

/* The top range is one step whose carry a is in a slot, c != a: restore,
 * reverse, free. The frames below are often one-step ranges too, steps
 * a-1, a-2, ... in slots one apart (the left parts a per-step descent left
 * behind, all the way down to carry 0 in the last turn), so the whole stretch
 *     [RESTORE a slot p, REVERSE a, FREE a slot p] x m  (dstep -1, dslot +-1)
 * goes out as one run. */
static void reverse_restored(remat_revolve_engine *e, remat_schedule *s)
{
    const remat_revolve_frame *fr = e->frames, *f = &fr[e->depth - 1];
    int64_t m = 1;
    int ds = 0;
    for (; m < e->depth; m++) {
        const remat_revolve_frame *g = f - m;
        if (g->b - g->a != 1 || g->a != f->a - m || g->slot < 0)
            break;
        int d = g->slot - f->slot;
        if (m == 1 && (d == 1 || d == -1))
            ds = d;
        if (d != (int)m * ds)
            break;
    }
    remat_action_run *r = rmi_sched_emit_open(s, 3, m, -1, ds);
    rmi_sched_set(&r->pat[0], REMAT_ACT_RESTORE, f->a, f->slot);
    rmi_sched_set(&r->pat[1], REMAT_ACT_REVERSE, f->a, -1);
    rmi_sched_set(&r->pat[2], REMAT_ACT_FREE, f->a, f->slot);
    for (int64_t k = 0; k < m; k++) /* in the order the FREEs hand them back */
        rmi_revolve_pool_put(e, f->slot + (int)k * ds);
    e->depth -= m;
    e->c = -1;
}

/* One range reversal, written iteratively: the recursion
 *   reverse(a, b, s): advance a -> a+j, snapshot, reverse(a+j, b, s-1),
 *                     restore a, reverse(a, a+j, s)
 * keeps the right part on the stack and shrinks the frame itself to the left
 * part, so the stack never holds more than s+1 frames. The actions are those
 * of the recursion one by one; the helpers above only group them into runs:
 * repeated stretches (snapshot_descend, reverse_restored) and one level of a
 * descent (descend_level). */
bool rmi_revolve_step(remat_revolve_engine *e, remat_schedule *s)
{
    if (e->depth == 0)
        return false;
    remat_revolve_frame *f = &e->frames[e->depth - 1];
    int64_t l = f->b - f->a;
    if (l == 0) { /* an empty range (online: a snapshot of the last carry) */
        if (f->slot >= 0) {
            rmi_sched_emit(s, REMAT_ACT_FREE, f->a, f->slot);
            rmi_revolve_pool_put(e, f->slot);
        }
        e->depth--;
        return true;
    }
    if (e->c != f->a) {
        REMAT_ASSERT(f->slot >= 0);
        if (l == 1)
            reverse_restored(e, s);
        else
            descend_level(e, s, true);
        return true;
    }
    if (l >= 2) {
        if (f->slot < 0) /* the range will come back to a: keep it */
            snapshot_descend(e, s);
        else
            descend_level(e, s, false);
        return true;
    }
    /* l == 1: the step at c is evaluated with recording and reversed. */
    if (e->forward_open && f->b == e->n) {
        /* Revolve's "first turn": the last step is taped in the forward phase. */
        rmi_sched_emit(s, REMAT_ACT_TAPE, f->a, -1);
        rmi_sched_emit(s, REMAT_ACT_END_FORWARD, e->n, -1);
        e->forward_open = false;
    }
    rmi_sched_emit(s, REMAT_ACT_REVERSE, f->a, -1);
    e->c = -1;
    if (f->slot >= 0) {
        rmi_sched_emit(s, REMAT_ACT_FREE, f->a, f->slot);
        rmi_revolve_pool_put(e, f->slot);
    }
    e->depth--;
    return true;
}

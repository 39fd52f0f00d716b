/*
 * revolve.c — binomial checkpointing formulas and the Revolve engine
 * (Griewank, "Achieving logarithmic growth of temporal and spatial complexity
 * in reverse automatic differentiation", OMS 1(1), 1992; Griewank & Walther,
 * "Algorithm 799: Revolve", ACM TOMS 26(1), 2000).
 */
#include "adjoint/revolve.h"

#include <stdlib.h>

#include "core/assert.h"
#include "core/error.h"

__extension__ typedef unsigned __int128 u128;

int64_t remat_revolve_beta(int64_t s, int64_t t)
{
    if (t < 0 || s < 0)
        return 0;
    /* C(s+t, t) = C(s+t, s): multiply by the shorter run. Each partial product
     * C(x+i, i) is exact and increasing, so once past INT64_MAX the result is too. */
    int64_t lo = s < t ? s : t, hi = s < t ? t : s;
    u128 r = 1;
    for (int64_t i = 1; i <= lo; i++) {
        r = r * (u128)(hi + i) / (u128)i;
        if (r > (u128)INT64_MAX)
            return INT64_MAX;
    }
    return (int64_t)r;
}

int64_t remat_revolve_reps(int64_t l, int64_t s)
{
    REMAT_ASSERT(l >= 1 && s >= 1);
    if (s == 1)
        return l - 1; /* beta(1, t) = t + 1 */
    if (s <= 16) { /* t can be large (~ l^(1/s)): bisect, O(s log l) */
        int64_t lo = 0, hi = 1;
        while (remat_revolve_beta(s, hi) < l)
            hi *= 2;
        while (lo < hi) {
            int64_t mid = lo + (hi - lo) / 2;
            if (remat_revolve_beta(s, mid) >= l)
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

int64_t remat_revolve_advances(int64_t l, int64_t s)
{
    if (l <= 1)
        return 0;
    REMAT_ASSERT(s >= 1);
    if (s == 1) /* advance l-1, l-2, ..., 1 steps from the one snapshot */
        return (l % 2 == 0) ? sat_mul(l / 2, l - 1) : sat_mul(l, (l - 1) / 2);
    int64_t t = remat_revolve_reps(l, s);
    int64_t tl = sat_mul(t, l);
    if (tl == INT64_MAX)
        return INT64_MAX;
    /* beta(s+1, t-1) < t*l since beta(s, t-1) < l, so no saturation here. */
    return tl - remat_revolve_beta(s + 1, t - 1);
}

int64_t remat_revolve_split(int64_t l, int64_t s)
{
    REMAT_ASSERT(l >= 2 && s >= 1);
    if (s == 1)
        return l - 1; /* no snapshot for the right part: its single step only */
    int64_t t = remat_revolve_reps(l, s);
    int64_t j = remat_revolve_beta(s, t - 2);
    int64_t right = remat_revolve_beta(s - 1, t);
    if (right < l && l - right > j)
        j = l - right;
    if (j < 1) /* t == 1: j in [0, 1], and j = 0 is no split */
        j = 1;
    REMAT_ASSERT(j >= 1 && j < l);
    return j;
}

remat_status remat_revolve_engine_init(remat_revolve_engine *e, int64_t frames, int64_t slots)
{
    *e = (remat_revolve_engine){.c = 0};
    e->frames = calloc((size_t)(frames > 0 ? frames : 1), sizeof *e->frames);
    e->pool = calloc((size_t)(slots > 0 ? slots : 1), sizeof *e->pool);
    if (!e->frames || !e->pool) {
        remat_revolve_engine_release(e);
        return remat_error(REMAT_ERR_NOMEM,
                           "schedule: cannot allocate a Revolve stack of %lld frames and %lld slots",
                           (long long)frames, (long long)slots);
    }
    e->cap = frames;
    e->pool_cap = slots;
    return REMAT_OK;
}

void remat_revolve_engine_release(remat_revolve_engine *e)
{
    free(e->frames);
    free(e->pool);
    e->frames = NULL;
    e->pool = NULL;
}

void remat_revolve_pool_put(remat_revolve_engine *e, int slot)
{
    REMAT_ASSERT(e->npool < e->pool_cap);
    e->pool[e->npool++] = slot;
}

int remat_revolve_pool_take(remat_revolve_engine *e)
{
    REMAT_ASSERT(e->npool > 0);
    return e->pool[--e->npool];
}

void remat_revolve_push(remat_revolve_engine *e, int64_t a, int64_t b, int64_t s, int slot)
{
    REMAT_ASSERT(e->depth < e->cap && a <= b);
    e->frames[e->depth++] = (remat_revolve_frame){.a = a, .b = b, .s = s, .slot = slot};
}

/* One range reversal, written iteratively: the recursion
 *   reverse(a, b, s): advance a -> a+j, snapshot, reverse(a+j, b, s-1),
 *                     restore a, reverse(a, a+j, s)
 * keeps the right part on the stack and shrinks the frame itself to the left
 * part, so the stack never holds more than s+1 frames. */
bool remat_revolve_step(remat_revolve_engine *e, remat_schedule *s)
{
    if (e->depth == 0)
        return false;
    remat_revolve_frame *f = &e->frames[e->depth - 1];
    int64_t l = f->b - f->a;
    if (l == 0) { /* an empty range (online: a snapshot of the last carry) */
        if (f->slot >= 0) {
            remat_sched_emit(s, REMAT_ACT_FREE, f->a, f->slot);
            remat_revolve_pool_put(e, f->slot);
        }
        e->depth--;
        return true;
    }
    if (e->c != f->a) {
        REMAT_ASSERT(f->slot >= 0);
        remat_sched_emit(s, REMAT_ACT_RESTORE, f->a, f->slot);
        e->c = f->a;
        return true;
    }
    if (l >= 2) {
        if (f->slot < 0) { /* the range will come back to a: keep it */
            f->slot = remat_revolve_pool_take(e);
            remat_sched_emit(s, REMAT_ACT_TAKESHOT, f->a, f->slot);
            return true;
        }
        int64_t m = f->a + remat_revolve_split(l, f->s);
        int64_t b = f->b, sub = f->s - 1;
        f->b = m;
        remat_sched_emit(s, REMAT_ACT_ADVANCE, m, -1);
        e->c = m;
        remat_revolve_push(e, m, b, sub, -1);
        return true;
    }
    /* l == 1: the step at c is evaluated with recording and reversed. */
    if (e->forward_open && f->b == e->n) {
        /* Revolve's "first turn": the last step is taped in the forward phase. */
        remat_sched_emit(s, REMAT_ACT_TAPE, f->a, -1);
        remat_sched_emit(s, REMAT_ACT_END_FORWARD, e->n, -1);
        e->forward_open = false;
    }
    remat_sched_emit(s, REMAT_ACT_REVERSE, f->a, -1);
    e->c = -1;
    if (f->slot >= 0) {
        remat_sched_emit(s, REMAT_ACT_FREE, f->a, f->slot);
        remat_revolve_pool_put(e, f->slot);
    }
    e->depth--;
    return true;
}

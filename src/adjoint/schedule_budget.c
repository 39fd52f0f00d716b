/*
 * schedule_budget.c — pick the schedule with the fewest forward evaluations
 * whose peak memory (snapshots * carry_bytes + tapes * tape_bytes, both peaks
 * as predict() reports them) fits a byte budget.
 *
 * Candidates, for a known length n:
 *   store-all        n evaluations, n tapes;
 *   binomial:S       the largest S that fits (evaluations fall as S grows;
 *                    S = n-1 is the per-step schedule, 2n-1 evaluations);
 *   periodic:K       n + (m-1)K evaluations with m = ceil(n/K), m-1 snapshots
 *                    and K tapes. For a given m the least K is ceil(n/m), so
 *                    K in 1..sqrt(n) and ceil(n/m) for m in 1..sqrt(n) cover
 *                    every useful period. Periodic beats binomial when tapes
 *                    are cheap next to carries (its tapes do double duty).
 * Online is never chosen: with n known, binomial is at least as good.
 * Ties in evaluations go to less memory, then to the earlier candidate above.
 */
#include <stdio.h>

#include "adjoint/revolve.h"
#include "adjoint/schedule_impl.h"
#include "core/error.h"

typedef struct {
    remat_schedule_spec spec;
    int64_t evals, bytes;
    bool found;
} choice;

static int64_t sat_add(int64_t a, int64_t b) { return a > INT64_MAX - b ? INT64_MAX : a + b; }

static int64_t sat_mul(int64_t a, int64_t b)
{
    int64_t r;
    return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}

typedef struct {
    int64_t budget, n, carry, tape;
    choice best;  /* fewest evaluations among those that fit */
    choice least; /* least memory of all, for the error message */
} search;

static void consider(search *q, remat_schedule_spec spec)
{
    remat_schedule_cost cost;
    if (remat_schedule_predict(&spec, q->n, &cost) != REMAT_OK)
        return;
    int64_t bytes = sat_add(sat_mul(cost.peak_snapshots, q->carry), sat_mul(cost.peak_tapes, q->tape));
    if (!q->least.found || bytes < q->least.bytes)
        q->least = (choice){.spec = spec, .evals = cost.forward_evals, .bytes = bytes, .found = true};
    if (bytes > q->budget)
        return;
    if (!q->best.found || cost.forward_evals < q->best.evals ||
        (cost.forward_evals == q->best.evals && bytes < q->best.bytes))
        q->best = (choice){.spec = spec, .evals = cost.forward_evals, .bytes = bytes, .found = true};
}

remat_status remat_schedule_for_budget(int64_t budget_bytes, int64_t length, int64_t carry_bytes,
                                       int64_t tape_bytes, remat_schedule_spec *spec)
{
    if (!spec)
        return rmi_error(REMAT_ERR_NULL, "remat_schedule_for_budget: spec is NULL");
    if (budget_bytes < 0 || length < 0 || carry_bytes < 0 || tape_bytes < 0)
        return rmi_error(REMAT_ERR_ARG,
                         "remat_schedule_for_budget: negative argument (budget %lld bytes, "
                         "length %lld, carry %lld bytes, tape %lld bytes)",
                         (long long)budget_bytes, (long long)length, (long long)carry_bytes,
                         (long long)tape_bytes);
    search q = {.budget = budget_bytes, .n = length, .carry = carry_bytes, .tape = tape_bytes};
    int64_t n = length;
    consider(&q, (remat_schedule_spec){.kind = REMAT_SCHED_STORE_ALL});
    if (n >= 2) {
        int64_t s = n - 1;
        if (carry_bytes > 0) {
            int64_t room = budget_bytes - tape_bytes;
            s = room < carry_bytes ? 1 : room / carry_bytes; /* 1: for the message */
            if (s > n - 1)
                s = n - 1;
        }
        consider(&q, (remat_schedule_spec){.kind = REMAT_SCHED_BINOMIAL, .snapshots = s});
        if (s != 1)
            consider(&q, (remat_schedule_spec){.kind = REMAT_SCHED_BINOMIAL, .snapshots = 1});
        int64_t r = rmi_sched_two_level_period(n); /* ~sqrt(n) */
        for (int64_t k = 1; k <= r && k < n; k++)
            consider(&q, (remat_schedule_spec){.kind = REMAT_SCHED_PERIODIC, .period = k});
        for (int64_t m = 2; m <= r; m++) {
            int64_t k = n / m + (n % m != 0);
            if (k > r)
                consider(&q, (remat_schedule_spec){.kind = REMAT_SCHED_PERIODIC, .period = k});
        }
    }
    if (q.best.found) {
        *spec = q.best.spec;
        return REMAT_OK;
    }
    char name[64];
    remat_schedule_format(&q.least.spec, name, sizeof name);
    return rmi_error(REMAT_ERR_BUDGET,
                     "memory budget of %lld bytes is too small for a scan of %lld steps "
                     "(carry %lld bytes, step tape %lld bytes): at least %lld bytes are needed (%s)",
                     (long long)budget_bytes, (long long)n, (long long)carry_bytes,
                     (long long)tape_bytes, (long long)q.least.bytes, name);
}

/* Two tiers: the RAM-only choice above, or two-tier:S:D:W:R with S the
 * carries that fit in RAM beside one tape and D those that fit in the slow
 * tier, whichever costs less in the two-tier time model (evaluations + W
 * writes + R reads; a RAM-only schedule writes and reads nothing slow). */
remat_status remat_schedule_for_tiers(int64_t ram_bytes, int64_t disk_bytes, int64_t length, int64_t carry_bytes,
                                      int64_t tape_bytes, double disk_write, double disk_read,
                                      remat_schedule_spec *spec)
{
    if (!spec)
        return rmi_error(REMAT_ERR_NULL, "remat_schedule_for_tiers: spec is NULL");
    if (disk_bytes < 0)
        return rmi_error(REMAT_ERR_ARG, "schedule for tiers: disk budget %lld bytes is negative",
                         (long long)disk_bytes);
    if (!(disk_write >= 0 && disk_write < 1e300) || !(disk_read >= 0 && disk_read < 1e300))
        return rmi_error(REMAT_ERR_ARG, "schedule for tiers: costs %g, %g must be finite and >= 0", disk_write,
                         disk_read);
    remat_schedule_spec ram;
    remat_status st = remat_schedule_for_budget(ram_bytes, length, carry_bytes, tape_bytes, &ram);
    if (st != REMAT_OK && st != REMAT_ERR_BUDGET)
        return st;
    const bool ram_ok = st == REMAT_OK;
    if (carry_bytes <= 0 || disk_bytes < carry_bytes) { /* nothing for the slow tier to hold */
        if (ram_ok)
            *spec = ram;
        return st;
    }
    remat_schedule_cost rc = {0};
    if (ram_ok && remat_schedule_predict(&ram, length, &rc) != REMAT_OK)
        return REMAT_ERR_ARG;
    const int64_t fit = ram_bytes >= tape_bytes ? (ram_bytes - tape_bytes) / carry_bytes : -1;
    const int64_t S = fit < length - 1 ? fit : (length > 1 ? length - 1 : 0);
    const int64_t d_fit = disk_bytes / carry_bytes, D = d_fit < length - 1 ? d_fit : (length > 1 ? length - 1 : 0);
    const remat_schedule_spec two = {.kind = REMAT_SCHED_TWO_TIER, .snapshots = S, .disk_snapshots = D,
                                     .disk_write = disk_write, .disk_read = disk_read};
    remat_schedule_cost tc;
    const bool two_ok = S >= 0 && S + D >= 1 && length >= 2 && (!ram_ok || rc.forward_evals > length) &&
                        remat_schedule_predict(&two, length, &tc) == REMAT_OK;
    if (!ram_ok && !two_ok)
        return rmi_error(REMAT_ERR_BUDGET,
                         "schedule for tiers: %lld bytes of RAM and %lld of disk hold no schedule of %lld steps "
                         "(one tape is %lld bytes, one carry %lld)",
                         (long long)ram_bytes, (long long)disk_bytes, (long long)length, (long long)tape_bytes,
                         (long long)carry_bytes);
    if (two_ok && (!ram_ok || (double)tc.forward_evals + disk_write * (double)tc.disk_writes +
                                      disk_read * (double)tc.disk_reads <
                                  (double)rc.forward_evals))
        *spec = two;
    else
        *spec = ram;
    return REMAT_OK;
}

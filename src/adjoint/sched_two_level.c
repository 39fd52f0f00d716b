/*
 * sched_two_level.c — periodic checkpointing with the period that balances the
 * two memory terms: k = ceil(sqrt(n)) gives about sqrt(n) snapshots and sqrt(n)
 * tapes for 2n - k evaluations (the classical "sqrt(n)" scheme; Griewank &
 * Walther, "Evaluating Derivatives", 2nd ed., sec. 12.3). A nonzero `period`
 * fixes k, which makes it the same schedule as periodic:k.
 */
#include "adjoint/schedule_impl.h"

int64_t rmi_sched_two_level_period(int64_t n)
{
    if (n <= 1)
        return 1;
    /* Integer search, no libm rounding doubts: the least k with k*k >= n. */
    int64_t lo = 1, hi = 3037000500; /* > sqrt(INT64_MAX) */
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (mid * mid >= n)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

static int64_t period_for(const remat_schedule_spec *spec, int64_t n)
{
    return spec->period > 0 ? spec->period : rmi_sched_two_level_period(n);
}

static remat_status two_level_init(remat_schedule *s)
{
    return rmi_sched_periodic_init_k(s, period_for(&s->spec, s->n));
}

static remat_status two_level_predict(const remat_schedule_spec *spec, int64_t n,
                                      remat_schedule_cost *cost)
{
    rmi_sched_periodic_cost(n, period_for(spec, n), cost);
    return REMAT_OK;
}

static const remat_schedule_type two_level_type = {
    .name = "two-level",
    .init = two_level_init,
    .step = rmi_sched_periodic_step,
    .free = rmi_sched_periodic_free,
    .predict = two_level_predict,
};

const remat_schedule_type *const rmi_schedule_type_two_level = &two_level_type;

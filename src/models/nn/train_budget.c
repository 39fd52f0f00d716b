/*
 * train_budget.c — the whole-step memory budget's search (remat_nn_budget_choose,
 * remat/nn_train.h): compile every candidate network as the trainer does, keep
 * those whose predicted peak (plan.arena_bytes: the arena with the scans'
 * stores and the loop bodies' arenas) fits, time each one's step and take the
 * fastest. Time is measured, not modelled: a policy's recomputation and a
 * schedule's extra forward evaluations cost what they cost on this machine.
 */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "nn_impl.h"
#include "remat/dist.h"
#include "train_impl.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* the median of `repeat` runs of t's step program on zeros (rows x in, rows x out) */
static remat_status time_step(remat_nn_trainer *t, int64_t rows, int repeat, double *median)
{
    size_t es = remat_dtype_size(t->p->dtype);
    void *x = rmi_calloc((size_t)(rows * t->in_features) + 1, es), *y = rmi_calloc((size_t)(rows * t->n_out) + 1, es);
    double *times = rmi_malloc(sizeof *times * (size_t)repeat);
    remat_status st = x && y && times ? REMAT_OK : rmi_error(REMAT_ERR_NOMEM, "nn budget: out of memory");
    for (int k = 0; st == REMAT_OK && k < repeat; k++) {
        double loss;
        st = nn_trainer_run(t, rows, x, y, &loss);
        times[k] = t->stats.seconds;
    }
    if (st == REMAT_OK) {
        qsort(times, (size_t)repeat, sizeof *times, cmp_double);
        *median = times[repeat / 2];
    }
    rmi_free(x);
    rmi_free(y);
    rmi_free(times);
    return st;
}

remat_status remat_nn_budget_choose(int n, const remat_nn_module *const *mods, remat_nn_params *const *params,
                                    int64_t in_features, int64_t n_out, const remat_nn_train_options *o, int repeat,
                                    size_t *peaks, double *seconds, remat_nn_budget_choice *out)
{
    if (!mods || !params || !o || !out)
        return rmi_error(REMAT_ERR_NULL, "nn budget: modules, params, options or output are NULL");
    *out = (remat_nn_budget_choice){.index = -1, .smallest = -1};
    if (n < 1 || repeat < 1)
        return rmi_error(REMAT_ERR_VALUE, "nn budget: %d candidates and %d repeats; give at least one of each", n,
                         repeat);
    if (o->memory_budget <= 0)
        return rmi_error(REMAT_ERR_VALUE, "nn budget: memory_budget %lld; give the budget in bytes (> 0)",
                         (long long)o->memory_budget);
    remat_nn_train_options free_o = *o;
    free_o.memory_budget = 0; /* every candidate's plan, fitting or not */
    const int64_t rows = nn_trainer_shard_rows(o);
    remat_status st = REMAT_OK;
    double best = 0;
    for (int i = 0; i < n && st == REMAT_OK; i++) {
        if (!mods[i] || !params[i]) { /* the same on every rank */
            st = rmi_error(REMAT_ERR_NULL, "nn budget: candidate %d's module or params are NULL", i);
            break;
        }
        remat_nn_trainer *t = NULL;
        st = remat_nn_trainer_new(mods[i], params[i], in_features, n_out, &free_o, &t); /* collective */
        if (st != REMAT_OK)
            break;
        size_t peak = t->plan.arena_bytes;
        double secs = -1;
        bool fits = peak <= (size_t)o->memory_budget;
        if (fits) /* every rank times; rank 0's times decide */
            st = time_step(t, rows, repeat, &secs);
        if (remat_dist_size(o->dist) > 1)
            st = remat_dist_agree(o->dist, st);
        remat_nn_trainer_free(t);
        if (peaks)
            peaks[i] = peak;
        if (seconds)
            seconds[i] = secs;
        if (out->smallest < 0 || peak < out->smallest_bytes)
            out->smallest = i, out->smallest_bytes = peak;
        if (st == REMAT_OK && fits && (out->index < 0 || secs < best))
            out->index = i, out->peak_bytes = peak, out->seconds = best = secs;
    }
    if (st == REMAT_OK && remat_dist_size(o->dist) > 1) /* the peaks agree; the times may not */
        st = remat_dist_bcast(o->dist, 0, out, sizeof *out);
    if (st != REMAT_OK)
        return st;
    if (out->index < 0)
        return rmi_error(REMAT_ERR_BUDGET,
                         "nn budget: no candidate's training step fits the memory budget of %lld bytes: the "
                         "smallest predicted peak is %zu bytes (candidate %d)",
                         (long long)o->memory_budget, out->smallest_bytes, out->smallest);
    return REMAT_OK;
}

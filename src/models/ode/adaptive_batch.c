/*
 * adaptive_batch.c — adaptive stepping of a batch of initial states
 * y0 (..., S): every member its own loops, with its own step sizes, accept
 * decisions, max_steps and failure, as jax.vmap of diffrax's diffeqsolve
 * gives (vmap of a while_loop keeps per-member control and freezes a member
 * once it is done). A member's states and gradients are therefore the bits
 * of the unbatched integration of that member.
 *
 * Why not one loop with a step shared by the batch (the largest error norm
 * over the members): a member's result would then depend on its neighbours,
 * and every member would take the stiffest member's steps. The price of
 * per-member loops is a graph with B loops (B x K loops in all), each
 * interpreted: meant for the tens of starts or conditions of a study, not
 * for thousands of lanes (fixed steps compile those to lane loops).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "models/ode/ode_impl.h"

/* The batch's stats from the members' (B, REMAT_ODE_STATS): accepted and
 * rejected summed, the least time reached, the worst code (stiff over
 * max_steps over done). */
static remat_val batch_stats(remat_fn *f, remat_val all)
{
    const int axis0[1] = {0};
    remat_val sum = remat_sum(f, all, 1, axis0), max = remat_reduce_max(f, all, 1, axis0);
    remat_val min = remat_neg(f, remat_reduce_max(f, remat_neg(f, all), 1, axis0));
    int64_t one = 1;
    remat_val parts[REMAT_ODE_STATS] = {
        [REMAT_ODE_STAT_ACCEPTED] = remat_reshape(f, remat_index(f, sum, REMAT_ODE_STAT_ACCEPTED), 1, &one),
        [REMAT_ODE_STAT_REJECTED] = remat_reshape(f, remat_index(f, sum, REMAT_ODE_STAT_REJECTED), 1, &one),
        [REMAT_ODE_STAT_T] = remat_reshape(f, remat_index(f, min, REMAT_ODE_STAT_T), 1, &one),
        [REMAT_ODE_STAT_CODE] = remat_reshape(f, remat_index(f, max, REMAT_ODE_STAT_CODE), 1, &one),
    };
    return remat_stop_gradient(f, remat_concatenate(f, REMAT_ODE_STATS, parts, 0));
}

remat_status ode_integrate_adaptive_batch(remat_fn *f, const remat_mechanism *m, const remat_ode_options *opt,
                                          remat_val y0, remat_val params, remat_val ts, int64_t K,
                                          remat_val *y_at_outputs, remat_val *stats)
{
    remat_dtype dt = remat_val_dtype(f, y0);
    remat_shape ys = remat_val_shape(f, y0);
    int64_t S = ys.dims[ys.rank - 1], B = 1;
    for (int i = 0; i < ys.rank - 1; i++)
        B *= ys.dims[i];
    if (B == 0 || ys.rank + 1 > REMAT_MAX_RANK) {
        char a[96];
        return rmi_error(REMAT_ERR_SHAPE, "ode: y0 is %s: a batch needs at least one system, and a rank below %d (the outputs add an axis)",
                         remat_shape_format(dt, &ys, a, sizeof a), REMAT_MAX_RANK);
    }
    remat_val flat = remat_reshape(f, y0, 2, ((int64_t[]){B, S}));
    remat_val *rows = rmi_malloc(sizeof *rows * (size_t)B), *st_rows = rmi_malloc(sizeof *st_rows * (size_t)B);
    remat_status st = REMAT_OK;
    if (!rows || !st_rows) {
        st = rmi_error(REMAT_ERR_NOMEM, "ode: out of memory for a batch of %lld", (long long)B);
        goto done;
    }
    for (int64_t b = 0; b < B && st == REMAT_OK; b++) {
        remat_val out, sv;
        st = ode_integrate_adaptive(f, m, opt, remat_index(f, flat, b), params, ts, K, &out, &sv);
        if (st != REMAT_OK) {
            char why[512];
            snprintf(why, sizeof why, "%s", remat_last_error());
            st = rmi_error(st, "ode: batch member %lld of %lld: %s", (long long)b, (long long)B, why);
            break;
        }
        rows[b] = remat_reshape(f, out, 3, ((int64_t[]){K, 1, S})); /* (K, S) -> (K, 1, S) */
        st_rows[b] = remat_reshape(f, sv, 2, ((int64_t[]){1, REMAT_ODE_STATS}));
    }
    if (st != REMAT_OK)
        goto done;
    /* (K, B, S), then the batch's own axes back: (K, ..., S) */
    remat_shape os = {.rank = ys.rank + 1};
    os.dims[0] = K;
    memcpy(os.dims + 1, ys.dims, sizeof ys.dims[0] * (size_t)ys.rank);
    remat_val out = remat_reshape(f, B == 1 ? rows[0] : remat_concatenate(f, (int)B, rows, 1), os.rank, os.dims);
    remat_val sv = batch_stats(f, B == 1 ? st_rows[0] : remat_concatenate(f, (int)B, st_rows, 0));
    if (remat_fn_status(f) != REMAT_OK) {
        st = rmi_error(remat_fn_status(f), "ode: %s", remat_fn_error(f));
        goto done;
    }
    *y_at_outputs = out;
    if (stats)
        *stats = sv;
done:
    rmi_free(rows);
    rmi_free(st_rows);
    return st;
}

/*
 * opt_adam.c — Adam (remat/optim.h, optax.adam) in x = theta, projected on
 * the bounds in theta after every step. Adam has no convergence test of its
 * own: it takes max_iters steps, stopping early (converged) only when the
 * gradient falls below gtol F(start). The result is the last iterate, as an
 * optax loop returns it.
 */
#include <math.h>
#include <stdlib.h>

#include "core/error.h"
#include "models/fit/fit_impl.h"
#include "remat/optim.h"

remat_status fit_opt_adam(fit_run *run)
{
    struct remat_fit *fit = run->fit;
    int n = run->n;
    remat_adam_options ao = remat_adam_optax(fit->opt.lr > 0 ? fit->opt.lr : 0.05);
    if (fit->bounded) {
        ao.lo = fit->tlo;
        ao.hi = fit->thi;
    }
    remat_adam *adam = NULL;
    double *x = calloc((size_t)n, sizeof *x), *gx = calloc((size_t)n, sizeof *gx);
    remat_status st = x && gx ? remat_adam_new(n, &ao, &adam) : remat_error(REMAT_ERR_NOMEM, "out of memory");
    if (fit_spread_ready(run, st) != REMAT_OK)
        goto done;
    fit_x_start(fit, x);
    for (int it = 0;; it++) {
        run->iter = it;
        double F;
        if (!fit_eval_grad_x(run, x, &F, gx))
            goto done;
        double gn = fit_inf_norm(n, gx);
        if (it == 0)
            run->F0 = F;
        if (fit_record(run, F, gn, run->p) != REMAT_OK || run->user_stop)
            break;
        if (F == 0 || gn <= run->gtol * run->F0) {
            fit_finish(run, 1, "converged: %s after %d steps (F = %.6g)", F == 0 ? "exact fit" : "gradient below gtol",
                       it, F);
            goto done;
        }
        if (it == run->max_iters) {
            fit_finish(run, 0, "stopped: %d Adam steps taken (lr %g; Adam has no convergence test) (F = %.6g)", it,
                       ao.lr, F);
            goto done;
        }
        st = remat_adam_update(adam, x, gx);
        if (st != REMAT_OK) {
            fit_fail(run, st);
            goto done;
        }
    }
    fit_finish(run, 0, "stopped");
done:
    remat_adam_free(adam);
    free(x);
    free(gx);
    return run->st;
}

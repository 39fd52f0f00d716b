/*
 * loop.c — the adaptive integrator's loop: body while cond, its length known
 * only at the end, through remat_while (remat/loop.h): rejected attempts are
 * absent from the reverse pass, which runs the online schedule unless the
 * options name another.
 */
#include "models/ode/ode_impl.h"
#include "remat/loop.h"

remat_status ode_loop(remat_fn *f, const remat_fn *cond, const remat_fn *body, int n_carry, int n_diff,
                      const remat_val *init, int n_consts, const remat_val *consts, int64_t bound,
                      const remat_scan_options *so, remat_val *carry_out)
{
    /* the zero spec (the options' default) is the loop's default, online */
    const remat_schedule_spec *sp = &so->schedule;
    int zero = sp->kind == REMAT_SCHED_STORE_ALL && sp->period == 0 && sp->snapshots == 0;
    remat_while_options wo = {
        .max_steps = bound,
        .schedule = zero ? NULL : sp,
        .body_policy = so->body_policy,
    };
    return remat_while(f, cond, body, n_carry, n_diff, init, n_consts, consts, &wo, carry_out, NULL);
}

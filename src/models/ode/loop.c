/*
 * loop.c — the adaptive integrator's loop: body while cond, its length known
 * only at the end.
 *
 * The seam for remat_while (a while-loop primitive whose reverse pass tapes
 * accepted iterations only, under the online schedule by default). Until the
 * library has it the loop is a scan of `bound` iterations whose body idles
 * once cond is false: an iteration that is inactive or rejected selects the
 * old differentiated carries, so its cotangent passes through unchanged (the
 * discrete adjoint of the accepted steps, as remat_while gives), at the price
 * of running all `bound` iterations forward and backward.
 */
#include <stdio.h>
#include <string.h>

#include "core/assert.h"
#include "core/error.h"
#include "models/ode/ode_impl.h"

#if __has_include("remat/loop.h")
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
#else
#define MAX_LOOP_VALS 16

/* w(carry..., consts...) -> carry': cond ? body's carries (its first n_diff
 * only when accepted) : the carries unchanged */
static remat_status idle_body(const remat_fn *cond, const remat_fn *body, int n_carry, int n_diff, remat_fn **out_fn)
{
    remat_fn *w = remat_fn_new("ode_loop_step");
    if (!w)
        return remat_error(REMAT_ERR_NOMEM, "ode: out of memory");
    int n_args = remat_fn_num_args(body);
    remat_val a[MAX_LOOP_VALS], out[MAX_LOOP_VALS + 1];
    for (int i = 0; i < n_args; i++) {
        remat_val bi = remat_fn_arg(body, i);
        remat_shape s = remat_val_shape(body, bi);
        a[i] = remat_arg(w, "arg", remat_val_dtype(body, bi), s.rank, s.dims);
    }
    remat_val active = remat_call1(w, cond, n_args, a);
    remat_call(w, body, n_args, a, out);
    if (remat_fn_status(w) == REMAT_OK) {
        remat_val keep = remat_mul(w, active, out[n_carry]);
        for (int i = 0; i < n_carry; i++)
            remat_fn_output(w, remat_select(w, i < n_diff ? keep : active, out[i], a[i]));
    }
    if (remat_fn_status(w) != REMAT_OK) {
        remat_status st = remat_error(remat_fn_status(w), "ode: building the loop step: %s", remat_fn_error(w));
        remat_fn_free(w);
        return st;
    }
    *out_fn = w;
    return REMAT_OK;
}

remat_status ode_loop(remat_fn *f, const remat_fn *cond, const remat_fn *body, int n_carry, int n_diff,
                      const remat_val *init, int n_consts, const remat_val *consts, int64_t bound,
                      const remat_scan_options *so, remat_val *carry_out)
{
    REMAT_ASSERT(n_carry + n_consts <= MAX_LOOP_VALS && remat_fn_num_args(body) == n_carry + n_consts);
    remat_fn *w = NULL;
    remat_status st = idle_body(cond, body, n_carry, n_diff, &w);
    if (st != REMAT_OK)
        return st;
    st = remat_scan(f, w, bound, n_carry, init, 0, NULL, n_consts, consts, so, carry_out, NULL);
    remat_fn_free(w);
    return st;
}
#endif

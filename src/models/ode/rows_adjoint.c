/*
 * rows_adjoint.c — the continuous adjoints (backsolve, interpolating) of
 * fixed steps ending on every output time, the times and the step counts
 * values (remat_ode_integrate_rows with opt->adjoint continuous; issue 21):
 * the graph depends on the species, the method and K, never on the times,
 * so experiments of K rows share their programs, and the memory of the
 * graph and of the reverse pass is O(K x S) plus the adjoint's own.
 *
 * The forward is rows.c's scan of every interval's own steps (its
 * integrate_steps: the steps of remat_ode_integrate's per-interval grid,
 * tsit5 and dopri5 included, which is what both continuous adjoints walk
 * back over) built from stop_gradient'ed y0 and params, so reverse mode
 * keeps no store for it. Its rows pass through the adjoint's op as for
 * remat_ode_integrate (backsolve.c, interp.c), with the times and the
 * step counts two more inputs of the op: backsolve's backward program is
 * one reverse scan over the rows whose body runs an interval's steps as a
 * while loop (backsolve.c, build_backward_rows); the interpolating
 * adjoint's solve, driven from C, reads them at each run.
 *
 * What stays O(K) per gradient: each run of the op's VJP solves back over
 * every row, so a reverse-mode Jacobian (one VJP per measured cell, the
 * only mode a continuous adjoint has: remat/fit.h) costs O(K^2 S) steps.
 */
#include "core/error.h"
#include "models/ode/ode_impl.h"

remat_status rmi_ode_rows_continuous(remat_fn *f, const remat_mechanism *m, const remat_ode_options *opt,
                                     remat_val y0, remat_val params, remat_val times, remat_val steps,
                                     remat_val *y_at_outputs)
{
    *y_at_outputs = REMAT_NONE;
    /* the forward's options: discrete (nothing of it is differentiated) and
     * dt 0, so tsit5 and dopri5 take every interval's own steps too */
    remat_ode_options o = *opt;
    o.adjoint = REMAT_ODE_ADJOINT_DISCRETE;
    o.dt = 0;
    o.steps = 1;
    int nv = remat_fn_num_nodes(f);
    if (y0 < 0 || y0 >= nv || (params != REMAT_NONE && (params < 0 || params >= nv)))
        return remat_ode_integrate_rows(f, m, &o, y0, params, times, steps, y_at_outputs); /* its error */
    remat_status st = rmi_ode_backsolve_check(opt, f, y0, params);
    if (st != REMAT_OK)
        return st;
    remat_val ys;
    st = remat_ode_integrate_rows(f, m, &o, remat_stop_gradient(f, y0),
                                  params != REMAT_NONE ? remat_stop_gradient(f, params) : REMAT_NONE, times, steps,
                                  &ys);
    if (st != REMAT_OK)
        return st;
    st = opt->adjoint == REMAT_ODE_ADJOINT_BACKSOLVE
             ? rmi_ode_backsolve_wrap(f, m, opt, NULL, y0, params, times, steps, ys, y_at_outputs)
             : rmi_ode_interp_wrap(f, m, opt, NULL, y0, params, times, steps, ys, y_at_outputs);
    if (st != REMAT_OK)
        *y_at_outputs = REMAT_NONE;
    return st;
}

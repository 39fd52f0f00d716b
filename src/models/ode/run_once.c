/*
 * run_once.c — remat_ode_run_once: one forward integration built as a
 * graph, compiled with the caller's backend and compile options, run once
 * and freed. The one "compile an ODE graph and run once" of the models
 * (remat_fit_predict, remat_fit_integration_stats,
 * remat_pfr_integration_stats, the problems' attempt count).
 */
#include "core/error.h"
#include "models/ode/ode_impl.h"

remat_status remat_ode_run_once(const remat_mechanism *m, const remat_ode_options *opt, const double *y0,
                                const double *params, remat_backend *be, const remat_compile_options *copts,
                                double *ys, double *stats)
{
    if (!m || !opt || !y0)
        return rmi_error(REMAT_ERR_NULL, "ode run once: %s is NULL", !m ? "the mechanism" : !opt ? "opt" : "y0");
    if (!ys && !stats)
        return rmi_error(REMAT_ERR_NULL, "ode run once: ys and stats are both NULL: nothing to compute");
    int64_t S = remat_mechanism_species_count(m), P = remat_mechanism_input_count(m);
    if (P > 0 && !params)
        return rmi_error(REMAT_ERR_NULL, "ode run once: params is NULL (the mechanism has %lld rate inputs)", (long long)P);
    remat_fn *f = remat_fn_new("ode_run_once");
    if (!f)
        return rmi_error(REMAT_ERR_NOMEM, "ode run once: out of memory");
    remat_val y = remat_arg(f, "y0", REMAT_F64, 1, &S);
    remat_val p = P ? remat_arg(f, "params", REMAT_F64, 1, &P) : REMAT_NONE;
    remat_val yv = REMAT_NONE, sv = REMAT_NONE;
    remat_status st = stats ? remat_ode_integrate_stats(f, m, opt, y, p, &yv, &sv)
                            : remat_ode_integrate(f, m, opt, y, p, &yv);
    remat_shape ysh = {0};
    if (st == REMAT_OK && ys) {
        ysh = remat_val_shape(f, yv);
        remat_fn_output(f, yv);
    }
    if (st == REMAT_OK && stats)
        remat_fn_output(f, sv);
    if (st == REMAT_OK && remat_fn_status(f) != REMAT_OK)
        st = rmi_error(remat_fn_status(f), "ode run once: %s", remat_fn_error(f));
    remat_program *prog = NULL;
    if (st == REMAT_OK)
        st = remat_compile_opts(f, be, copts, &prog);
    if (st == REMAT_OK) {
        remat_tensor in[2] = {remat_tensor_f64((double *)y0, 1, &S), remat_tensor_f64((double *)params, 1, &P)};
        remat_tensor out[2];
        int n_out = 0;
        if (ys)
            out[n_out++] = remat_tensor_f64(ys, ysh.rank, ysh.dims);
        if (stats)
            out[n_out++] = remat_tensor_f64(stats, 1, (int64_t[]){REMAT_ODE_STATS});
        st = remat_run(prog, P ? 2 : 1, in, n_out, out, NULL);
    }
    remat_program_free(prog);
    remat_fn_free(f);
    return st;
}

/* c_peers.c — the C side of vs_peers.py, a small shared library that
 * vs_peers.py loads with ctypes so that C, Python and the peers run
 * interleaved in one process. Every time is measured here, in C, with
 * CLOCK_MONOTONIC (wall) and CLOCK_PROCESS_CPUTIME_ID (the process's CPU time,
 * which a loaded machine inflates less): the ctypes call around them is not
 * counted.
 *
 *   cc -O2 -shared -fPIC -Iinclude python/bench/c_peers.c -Lbuild -lremat \
 *      -Wl,-rpath,$PWD/build -o /tmp/c_peers.so          (vs_peers.py does this)
 *
 * peers_fit: what remat.fit(mechanism, [csv]) does under the binding
 * (python/src/fit.c) with the mechanism already parsed: read the CSV,
 * remat_fit_new, remat_fit_run, remat_fit_statistics, the residuals and the
 * model at the data times. peers_reactor_*: the seed reactor's gradient
 * (remat_pfr_objective, 1000 Euler steps, binomial:10) as
 * remat.Reactor(m, {"A": 1}, steps=1000, maximize="B").objective. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime under -std=c11 */
#include <remat/remat.h>

#include <stdlib.h>
#include <time.h>

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double now(void) { return clock_s(CLOCK_MONOTONIC); }
static double cpu(void) { return clock_s(CLOCK_PROCESS_CPUTIME_ID); }

static remat_mechanism *fit_mech;
static remat_mechanism *reactor_mech;
static remat_pfr *reactor;

/* 0 on success; else the remat status, message in remat_last_error(). */
int peers_fit_setup(const char *mech_path)
{
    return (int)remat_mechanism_parse_file(mech_path, &fit_mech);
}

/* One fit; seconds[0] its wall time, seconds[1] its CPU time, params[5],
 * *sse, *iterations out. */
int peers_fit(const char *csv_path, double *seconds, double *params, double *sse, int *iterations)
{
    remat_dataset *d = NULL;
    remat_fit *fit = NULL;
    remat_fit_result r = {0};
    remat_fit_stats s = {0};
    double *res = NULL, *pred = NULL;
    double c0 = cpu(), t0 = now();
    remat_fit_options o = remat_fit_defaults();
    remat_status st = remat_dataset_read(csv_path, fit_mech, &d);
    if (st == REMAT_OK)
        st = remat_fit_new(fit_mech, 1, &d, &o, &fit);
    if (st == REMAT_OK)
        st = remat_fit_run(fit, &r);
    if (st == REMAT_OK)
        st = remat_fit_statistics(fit, r.params, &s);
    if (st == REMAT_OK) {
        size_t rows = remat_dataset_rows(d);
        res = malloc((size_t)remat_fit_residual_count(fit) * sizeof *res);
        pred = malloc(rows * (size_t)remat_mechanism_species_count(fit_mech) * sizeof *pred);
        st = res && pred ? remat_fit_residuals(fit, r.params, res) : REMAT_ERR_NOMEM;
        if (st == REMAT_OK)
            st = remat_fit_predict(fit, 0, r.params, (int)rows, remat_dataset_times(d), pred);
    }
    seconds[0] = now() - t0;
    seconds[1] = cpu() - c0;
    if (st == REMAT_OK) {
        for (int i = 0; i < r.n_params; i++)
            params[i] = r.params[i];
        *sse = r.objective;
        *iterations = r.iterations;
    }
    free(res);
    free(pred);
    remat_fit_stats_clear(&s);
    remat_fit_result_clear(&r);
    remat_fit_free(fit);
    remat_dataset_free(d);
    return (int)st;
}

int peers_reactor_setup(void)
{
    remat_status st = remat_mechanism_parse_string("param k1 = 1\nparam k2 = 0.5\nA -> B : k1\nB -> C : k2\n", NULL,
                                                   &reactor_mech);
    if (st != REMAT_OK)
        return (int)st;
    remat_pfr_options o = {.method = REMAT_ODE_EULER, .length = 10.0, .steps = 1000, .inlet = (double[]){1, 0, 0},
                           .goal = REMAT_PFR_MAXIMIZE, .species = 1,
                           .schedule = {.kind = REMAT_SCHED_BINOMIAL, .snapshots = 10}};
    return (int)remat_pfr_new(reactor_mech, &o, &reactor);
}

/* n calls of remat_pfr_objective at k; seconds[0] their total wall time,
 * seconds[1] their CPU time. */
int peers_reactor(const double *k, int n, double *seconds, double *objective, double *grad)
{
    remat_status st = REMAT_OK;
    double c0 = cpu(), t0 = now();
    for (int i = 0; i < n && st == REMAT_OK; i++)
        st = remat_pfr_objective(reactor, k, objective, grad);
    seconds[0] = now() - t0;
    seconds[1] = cpu() - c0;
    return (int)st;
}

void peers_teardown(void)
{
    remat_pfr_free(reactor);
    remat_mechanism_free(reactor_mech);
    remat_mechanism_free(fit_mech);
    reactor = NULL;
    reactor_mech = fit_mech = NULL;
}

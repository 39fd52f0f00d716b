/*
 * fit.c — fit rate constants to measured concentration profiles.
 *
 * Reads the Van de Vusse mechanism (A -> B -> C, 2 A -> D) and two
 * experiments, plug-flow runs from two feed concentrations in which only A
 * and B were measured, and fits k1, k2, k3 by least squares with the default
 * options: adaptive Tsit5 steps landing on the data times, Levenberg–Marquardt
 * on log k, the Jacobian by forward mode through the integration. Prints the constants and
 * checks them against the ones the data were made with (make_data.c); the
 * data carry noise, so within a few percent.
 *
 *   fit [MECHANISM DATA.csv...]     (default: the files in examples/pfr/data)
 */
#include <math.h>
#include <stdio.h>

#include <remat/remat.h>

#define MAX_DATA 16

int main(int argc, char **argv)
{
    const char *mech_path = argc > 1 ? argv[1] : "examples/pfr/data/van_de_vusse.mech";
    const char *defaults[2] = {"examples/pfr/data/feed_10.csv", "examples/pfr/data/feed_5.csv"};
    int n = argc > 2 ? argc - 2 : 2;
    if (n > MAX_DATA) {
        fprintf(stderr, "fit: at most %d data files\n", MAX_DATA);
        return 2;
    }

    remat_mechanism *m;
    if (remat_mechanism_parse_file(mech_path, &m) != REMAT_OK) {
        fprintf(stderr, "fit: %s\n", remat_last_error());
        return 1;
    }
    remat_dataset *data[MAX_DATA];
    for (int e = 0; e < n; e++)
        if (remat_dataset_read(argc > 2 ? argv[2 + e] : defaults[e], m, &data[e]) != REMAT_OK) {
            fprintf(stderr, "fit: %s\n", remat_last_error());
            return 1; /* (a real program frees what it read) */
        }

    remat_fit_options opt = remat_fit_defaults(); /* auto (LM), adaptive Tsit5, initial states from the first rows */
    remat_fit_result r;
    remat_status st = remat_fit_run_once(m, n, data, &opt, &r);
    if (st != REMAT_OK) {
        fprintf(stderr, "fit: %s\n", remat_last_error());
        return 1;
    }
    printf("%s\nsum of squared residuals %.4g over %lld measured values\n", r.message, r.objective,
           (long long)r.n_residuals);
    /* the constants the shipped data were made with, and how close a fit to
     * noisy data gets to them */
    static const double truth[3] = {5.0 / 6.0, 5.0 / 3.0, 1.0 / 6.0};
    int ok = r.converged && r.n_params == 3;
    for (int i = 0; i < r.n_params; i++) {
        double rel = i < 3 ? r.params[i] / truth[i] - 1 : NAN;
        printf("%-4s = %-10.5g (made with %.5g: %+.2f%%)\n", r.param_names[i], r.params[i], truth[i], 100 * rel);
        if (!(fabs(rel) < 0.05))
            ok = 0;
    }
    remat_fit_result_clear(&r);
    for (int e = 0; e < n; e++)
        remat_dataset_free(data[e]);
    remat_mechanism_free(m);
    if (!ok)
        fprintf(stderr, "fit: the constants are not within 5%% of the ones the data were made with\n");
    return ok ? 0 : 1;
}

/*
 * make_data.c — makes the data set of examples/pfr/data: the Van de Vusse
 * reactions integrated from two feeds with the textbook constants
 * (k1 = 5/6, k2 = 5/3 1/min, k3 = 1/6 L/(mol min)), sampled at 12 residence
 * times, A and B "measured" with Gaussian noise of 0.02 mol/L from a fixed
 * seed, C and D not measured (empty cells). Deterministic: running it again
 * writes the same files.
 *
 *   make_data DIR           writes DIR/feed_10.csv and DIR/feed_5.csv
 *   make_data --check DIR   exits 1 unless the files in DIR are what it writes
 *
 * The model is integrated with Tsit5 at a step of 1e-3 min, far finer than a
 * fit's default, so fitting the data also meets an integration error as real
 * data would.
 */
#include "../make_data.h"

static const double k_true[3] = {5.0 / 6.0, 5.0 / 3.0, 1.0 / 6.0};
static const double taus[12] = {0, 0.1, 0.2, 0.35, 0.5, 0.75, 1, 1.5, 2, 3, 4, 5};
#define NOISE 0.02

static uint64_t rng = 20240611;

/* y[12][4] at taus from the feed y0 */
static int simulate(const remat_mechanism *m, const double *y0, double *y)
{
    const remat_ode_options o = {.method = REMAT_ODE_TSIT5, .t0 = 0, .n_times = 12, .times = taus, .dt = 1e-3};
    return make_data_simulate(m, "van_de_vusse", 4, y0, 3, k_true, &o, y);
}

/* The CSV text of one feed: tau, A, B measured (rounded to 1e-4), C, D empty
 * except in the first row (the feed, which gives every species). */
static int csv(const remat_mechanism *m, double feed, char *buf, size_t len)
{
    double y0[4] = {feed, 0, 0, 0}, y[48];
    if (!simulate(m, y0, y))
        return 0;
    size_t o = (size_t)snprintf(buf, len, "tau,A,B,C,D\n");
    for (int r = 0; r < 12; r++) {
        if (r == 0) {
            o += (size_t)snprintf(buf + o, len - o, "0,%.4f,0,0,0\n", feed);
            continue;
        }
        /* A's noise is drawn before B's: each initializer is a full expression */
        double a = fmax(0.0, y[r * 4] + NOISE * make_data_gauss(&rng)),
               b = fmax(0.0, y[r * 4 + 1] + NOISE * make_data_gauss(&rng));
        o += (size_t)snprintf(buf + o, len - o, "%g,%.4f,%.4f,,\n", taus[r], a, b);
    }
    return 1;
}

int main(int argc, char **argv)
{
    int check;
    const char *dir = make_data_args(argc, argv, &check);
    if (!dir)
        return 2;
    remat_mechanism *m = make_data_mechanism(dir, "van_de_vusse.mech");
    if (!m)
        return 1;
    const double feeds[2] = {10, 5};
    int status = 0;
    for (int i = 0; i < 2 && !status; i++) {
        char text[4096], path[4096];
        if (!csv(m, feeds[i], text, sizeof text)) {
            status = 1;
            break;
        }
        snprintf(path, sizeof path, "%s/feed_%g.csv", dir, feeds[i]);
        status = make_data_put(path, text, check);
    }
    remat_mechanism_free(m);
    return status;
}

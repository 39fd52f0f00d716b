/*
 * make_data.c — makes examples/robertson/robertson.csv, the synthetic data
 * of the README's stiff fit: Robertson's reactions (robertson.mech, with its
 * constants k1 = 0.04, k2 = 3e7, k3 = 1e4) from A = 1 at t = 0 (the fit's
 * --init A=1), sampled two times per decade from 1e-4 to 1e5, every species
 * "measured" with 1% relative Gaussian noise from a fixed seed.
 * Deterministic: running it again writes the same file.
 *
 *   make_data DIR           writes DIR/robertson.csv
 *   make_data --check DIR   exits 1 unless DIR/robertson.csv is what it writes
 *
 * The model is integrated with Rodas5 at 100 steps between samples, far
 * finer than the fit's 10, so fitting also meets an integration error as real
 * data would.
 */
#include "../make_data.h"

#define N_T 19 /* 1e-4 .. 1e5, two per decade */
#define NOISE 0.01

static uint64_t rng = 19660101;

/* y[N_T][3] at times t from A = 1, with the mechanism's declared constants */
static int simulate(const remat_mechanism *m, const double *t, double *y)
{
    double k[3];
    const double y0[3] = {1, 0, 0};
    remat_mechanism_param_values(m, k);
    const remat_ode_options o = {.method = REMAT_ODE_RODAS5, .t0 = 0, .n_times = N_T, .times = t, .steps = 100};
    return make_data_simulate(m, "robertson", 3, y0, 3, k, &o, y);
}

static int csv(const remat_mechanism *m, char *buf, size_t len)
{
    double t[N_T], y[N_T * 3];
    for (int i = 0; i < N_T; i++)
        t[i] = pow(10.0, -4.0 + 0.5 * i);
    if (!simulate(m, t, y))
        return 0;
    size_t o = (size_t)snprintf(buf, len, "t,A,B,C\n");
    for (int i = 0; i < N_T; i++) {
        o += (size_t)snprintf(buf + o, len - o, "%.6g", t[i]);
        for (int c = 0; c < 3; c++)
            o += (size_t)snprintf(buf + o, len - o, ",%.6g", y[i * 3 + c] * (1.0 + NOISE * make_data_gauss(&rng)));
        o += (size_t)snprintf(buf + o, len - o, "\n");
    }
    return 1;
}

int main(int argc, char **argv)
{
    int check;
    const char *dir = make_data_args(argc, argv, &check);
    if (!dir)
        return 2;
    remat_mechanism *m = make_data_mechanism(dir, "robertson.mech");
    if (!m)
        return 1;
    char path[4096], text[4096];
    int status = !csv(m, text, sizeof text);
    remat_mechanism_free(m);
    if (status)
        return 1;
    snprintf(path, sizeof path, "%s/robertson.csv", dir);
    return make_data_put(path, text, check);
}

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
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <remat/remat.h>

static const double k_true[3] = {5.0 / 6.0, 5.0 / 3.0, 1.0 / 6.0};
static const double taus[12] = {0, 0.1, 0.2, 0.35, 0.5, 0.75, 1, 1.5, 2, 3, 4, 5};
#define NOISE 0.02

static uint64_t rng = 20240611;

static double uniform(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return ((double)(rng >> 11) + 0.5) * 0x1.0p-53;
}

static double gauss(void) /* Box–Muller */
{
    double u = uniform(), v = uniform();
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

/* y[12][4] at taus from the feed y0 */
static int simulate(const remat_mechanism *m, const double *y0, double *y)
{
    remat_fn *f = remat_fn_new("van_de_vusse");
    remat_val k = remat_arg(f, "k", REMAT_F64, 1, (int64_t[]){3});
    remat_val c0 = remat_const_data(f, REMAT_F64, 1, (int64_t[]){4}, y0);
    remat_ode_options o = {.method = REMAT_ODE_TSIT5, .t0 = 0, .n_times = 12, .times = taus, .dt = 1e-3};
    remat_val ys;
    remat_program *p = NULL;
    int ok = remat_ode_integrate(f, m, &o, c0, k, &ys) == REMAT_OK;
    if (ok) {
        remat_fn_output(f, ys);
        ok = remat_compile_env(f, &p) == REMAT_OK;
    }
    if (ok) {
        remat_tensor in = remat_tensor_f64((double *)k_true, 1, (int64_t[]){3});
        remat_tensor out = remat_tensor_f64(y, 2, (int64_t[]){12, 4});
        ok = remat_run(p, 1, &in, 1, &out, NULL) == REMAT_OK;
    }
    if (!ok)
        fprintf(stderr, "make_data: %s\n", remat_last_error());
    remat_program_free(p);
    remat_fn_free(f);
    return ok;
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
        double a = fmax(0.0, y[r * 4] + NOISE * gauss()), b = fmax(0.0, y[r * 4 + 1] + NOISE * gauss());
        o += (size_t)snprintf(buf + o, len - o, "%g,%.4f,%.4f,,\n", taus[r], a, b);
    }
    return 1;
}

int main(int argc, char **argv)
{
    int check = argc == 3 && !strcmp(argv[1], "--check");
    if (argc != 2 && !check) {
        fprintf(stderr, "usage: make_data DIR | make_data --check DIR\n");
        return 2;
    }
    const char *dir = argv[argc - 1];
    char path[4096];
    snprintf(path, sizeof path, "%s/van_de_vusse.mech", dir);
    remat_mechanism *m;
    if (remat_mechanism_parse_file(path, &m) != REMAT_OK) {
        fprintf(stderr, "make_data: %s\n", remat_last_error());
        return 1;
    }
    const double feeds[2] = {10, 5};
    int status = 0;
    for (int i = 0; i < 2 && !status; i++) {
        char text[4096], old[4096];
        if (!csv(m, feeds[i], text, sizeof text)) {
            status = 1;
            break;
        }
        snprintf(path, sizeof path, "%s/feed_%g.csv", dir, feeds[i]);
        FILE *f = fopen(path, check ? "r" : "w");
        if (!f) {
            perror(path);
            status = 1;
        } else if (check) {
            size_t n = fread(old, 1, sizeof old - 1, f);
            old[n] = 0;
            if (strcmp(old, text)) {
                fprintf(stderr, "make_data: %s differs from what make_data writes:\n%s", path, text);
                status = 1;
            }
            fclose(f);
        } else {
            fputs(text, f);
            status = fclose(f) != 0;
        }
    }
    remat_mechanism_free(m);
    return status;
}

/*
 * make_experiments.c — N synthetic experiments of the Van de Vusse reactions
 * (examples/pfr/data/van_de_vusse.mech) for the fit-over-ranks benchmark
 * (bench/dist/fit_ranks.sh): experiment i starts from the feed
 * A0 = 2 + 10 i / N mol/L (B0 = 0.5 for odd i), is integrated with Tsit5 at
 * dt 1e-3 with the textbook constants (k1 = 5/6, k2 = 5/3, k3 = 1/6) and
 * sampled at 24 residence times in [0, 5] min; A and B get Gaussian noise
 * of 0.02 mol/L from a seeded generator, C and D are not measured. Writes
 * DIR/exp_NN.csv and DIR/list.txt (the --data-list). Deterministic: the same
 * N and seed write the same bytes.
 *
 *   make_experiments MECH DIR [N [SEED]]     (N default 64, SEED 20261201)
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <remat/remat.h>

#define ROWS 24
#define NOISE 0.02
static const double k_true[3] = {5.0 / 6.0, 5.0 / 3.0, 1.0 / 6.0};

static uint64_t rng;

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

/* y[ROWS][4] at taus from y0 */
static int simulate(const remat_mechanism *m, const double *y0, const double *taus, double *y)
{
    remat_fn *f = remat_fn_new("van_de_vusse");
    remat_val k = remat_arg(f, "k", REMAT_F64, 1, (int64_t[]){3});
    remat_val c0 = remat_const_data(f, REMAT_F64, 1, (int64_t[]){4}, y0);
    remat_ode_options o = {.method = REMAT_ODE_TSIT5, .t0 = 0, .n_times = ROWS, .times = taus, .dt = 1e-3};
    remat_val ys;
    remat_program *p = NULL;
    int ok = remat_ode_integrate(f, m, &o, c0, k, &ys) == REMAT_OK;
    if (ok) {
        remat_fn_output(f, ys);
        ok = remat_compile_env(f, &p) == REMAT_OK;
    }
    if (ok) {
        remat_tensor in = remat_tensor_f64((double *)k_true, 1, (int64_t[]){3});
        remat_tensor out = remat_tensor_f64(y, 2, (int64_t[]){ROWS, 4});
        ok = remat_run(p, 1, &in, 1, &out, NULL) == REMAT_OK;
    }
    if (!ok)
        fprintf(stderr, "make_experiments: %s\n", remat_last_error());
    remat_program_free(p);
    remat_fn_free(f);
    return ok;
}

int main(int argc, char **argv)
{
    if (argc < 3 || argc > 5) {
        fprintf(stderr, "usage: make_experiments MECH DIR [N [SEED]]\n");
        return 2;
    }
    int n = argc > 3 ? atoi(argv[3]) : 64;
    rng = argc > 4 ? strtoull(argv[4], NULL, 10) : 20261201;
    if (n < 1 || n > 100000) {
        fprintf(stderr, "make_experiments: N = %s: 1 to 100000 experiments\n", argv[3]);
        return 2;
    }
    remat_mechanism *m;
    if (remat_mechanism_parse_file(argv[1], &m) != REMAT_OK) {
        fprintf(stderr, "make_experiments: %s\n", remat_last_error());
        return 1;
    }
    double taus[ROWS], y[ROWS * 4];
    for (int r = 0; r < ROWS; r++)
        taus[r] = 5.0 * r / (ROWS - 1);
    char path[4096];
    snprintf(path, sizeof path, "%s/list.txt", argv[2]);
    FILE *list = fopen(path, "w");
    int status = list ? 0 : 1;
    if (!list)
        perror(path);
    for (int i = 0; i < n && !status; i++) {
        double y0[4] = {2 + 10.0 * i / n, i % 2 ? 0.5 : 0, 0, 0};
        if (!simulate(m, y0, taus, y)) {
            status = 1;
            break;
        }
        snprintf(path, sizeof path, "%s/exp_%02d.csv", argv[2], i);
        FILE *f = fopen(path, "w");
        if (!f) {
            perror(path);
            status = 1;
            break;
        }
        fprintf(f, "tau,A,B,C,D\n%g,%.4f,%.4f,0,0\n", taus[0], y0[0], y0[1]);
        for (int r = 1; r < ROWS; r++) {
            double a = fmax(0.0, y[r * 4] + NOISE * gauss()), b = fmax(0.0, y[r * 4 + 1] + NOISE * gauss());
            fprintf(f, "%.6g,%.4f,%.4f,,\n", taus[r], a, b);
        }
        status = fclose(f) != 0;
        fprintf(list, "exp_%02d.csv\n", i);
    }
    if (list && fclose(list) != 0)
        status = 1;
    remat_mechanism_free(m);
    return status;
}

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
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <remat/remat.h>

#define N_T 19 /* 1e-4 .. 1e5, two per decade */
#define NOISE 0.01

static uint64_t rng = 19660101;

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

/* y[N_T][3] at times t from A = 1, with the mechanism's declared constants */
static int simulate(const remat_mechanism *m, const double *t, double *y)
{
    double k[3], y0[3] = {1, 0, 0};
    remat_mechanism_param_values(m, k);
    remat_fn *f = remat_fn_new("robertson");
    remat_val kv = remat_arg(f, "k", REMAT_F64, 1, (int64_t[]){3});
    remat_val c0 = remat_const_data(f, REMAT_F64, 1, (int64_t[]){3}, y0);
    remat_ode_options o = {.method = REMAT_ODE_RODAS5, .t0 = 0, .n_times = N_T, .times = t, .steps = 100};
    remat_val ys;
    remat_program *p = NULL;
    int ok = remat_ode_integrate(f, m, &o, c0, kv, &ys) == REMAT_OK;
    if (ok) {
        remat_fn_output(f, ys);
        ok = remat_compile_env(f, &p) == REMAT_OK;
    }
    if (ok) {
        remat_tensor in = remat_tensor_f64(k, 1, (int64_t[]){3});
        remat_tensor out = remat_tensor_f64(y, 2, (int64_t[]){N_T, 3});
        ok = remat_run(p, 1, &in, 1, &out, NULL) == REMAT_OK;
    }
    if (!ok)
        fprintf(stderr, "make_data: %s\n", remat_last_error());
    remat_program_free(p);
    remat_fn_free(f);
    return ok;
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
            o += (size_t)snprintf(buf + o, len - o, ",%.6g", y[i * 3 + c] * (1.0 + NOISE * gauss()));
        o += (size_t)snprintf(buf + o, len - o, "\n");
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
    char path[4096], text[4096], old[4096];
    snprintf(path, sizeof path, "%s/robertson.mech", dir);
    remat_mechanism *m;
    if (remat_mechanism_parse_file(path, &m) != REMAT_OK) {
        fprintf(stderr, "make_data: %s\n", remat_last_error());
        return 1;
    }
    int status = !csv(m, text, sizeof text);
    remat_mechanism_free(m);
    if (status)
        return 1;
    snprintf(path, sizeof path, "%s/robertson.csv", dir);
    FILE *f = fopen(path, check ? "r" : "w");
    if (!f) {
        perror(path);
        return 1;
    }
    if (check) {
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
    return status;
}

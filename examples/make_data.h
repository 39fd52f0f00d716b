/*
 * make_data.h — what the data makers (pfr/make_data.c,
 * robertson/make_data.c) do alike, so that each shows only its experiment:
 * the command line, the mechanism, its trajectory at the sample times, a
 * seeded Gaussian noise source, and writing the CSV or checking the
 * committed file against it. Header-only, like seeds/example_util.h.
 *
 *   int check;
 *   const char *dir = make_data_args(argc, argv, &check);   // DIR | --check DIR
 *   remat_mechanism *m = dir ? make_data_mechanism(dir, "mine.mech") : NULL;
 *   ... make_data_simulate(m, "mine", 4, y0, 3, k, &o, y) ... make_data_gauss(&rng) ...
 *   return make_data_put(path, text, check);                 // 0, or 1 with a message
 */
#ifndef REMAT_EXAMPLE_MAKE_DATA_H
#define REMAT_EXAMPLE_MAKE_DATA_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <remat/remat.h>

/* DIR, with *check = 0, or --check DIR, with *check = 1; NULL after the usage on stderr */
static inline const char *make_data_args(int argc, char **argv, int *check)
{
    *check = argc == 3 && !strcmp(argv[1], "--check");
    if (argc != 2 && !*check) {
        fprintf(stderr, "usage: make_data DIR | make_data --check DIR\n");
        return NULL;
    }
    return argv[argc - 1];
}

/* DIR/file parsed; NULL after the parser's message on stderr */
static inline remat_mechanism *make_data_mechanism(const char *dir, const char *file)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    remat_mechanism *m;
    if (remat_mechanism_parse_file(path, &m) != REMAT_OK) {
        fprintf(stderr, "make_data: %s\n", remat_last_error());
        return NULL;
    }
    return m;
}

/* uniform in (0, 1) from a 64-bit LCG: the same numbers on every machine */
static inline double make_data_uniform(uint64_t *rng)
{
    *rng = *rng * 6364136223846793005ull + 1442695040888963407ull;
    return ((double)(*rng >> 11) + 0.5) * 0x1.0p-53;
}

static inline double make_data_gauss(uint64_t *rng) /* Box–Muller */
{
    double u = make_data_uniform(rng), v = make_data_uniform(rng);
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

/* y (o->n_times, n_sp) from y0 (n_sp, the species of m) under the n_k rate
 * constants k, integrated as o says; 1, or 0 after remat's message on stderr */
static inline int make_data_simulate(const remat_mechanism *m, const char *name, int64_t n_sp, const double *y0,
                                     int64_t n_k, const double *k, const remat_ode_options *o, double *y)
{
    remat_fn *f = remat_fn_new(name);
    remat_val kv = remat_arg(f, "k", REMAT_F64, 1, (int64_t[]){n_k});
    remat_val c0 = remat_const_data(f, REMAT_F64, 1, (int64_t[]){n_sp}, y0);
    remat_val ys;
    remat_program *p = NULL;
    int ok = remat_ode_integrate(f, m, o, c0, kv, &ys) == REMAT_OK;
    if (ok) {
        remat_fn_output(f, ys);
        ok = remat_compile_env(f, &p) == REMAT_OK;
    }
    if (ok) {
        remat_tensor in = remat_tensor_f64((double *)k, 1, (int64_t[]){n_k});
        remat_tensor out = remat_tensor_f64(y, 2, (int64_t[]){o->n_times, n_sp});
        ok = remat_run(p, 1, &in, 1, &out, NULL) == REMAT_OK;
    }
    if (!ok)
        fprintf(stderr, "make_data: %s\n", remat_last_error());
    remat_program_free(p);
    remat_fn_free(f);
    return ok;
}

/* Writes text to path, or with check compares the file with it (the text
 * on stderr when they differ). 0, or 1 after a message. */
static inline int make_data_put(const char *path, const char *text, int check)
{
    FILE *f = fopen(path, check ? "r" : "w");
    if (!f) {
        perror(path);
        return 1;
    }
    if (!check) {
        fputs(text, f);
        return fclose(f) != 0;
    }
    /* one byte more than the text, so that a longer file differs too */
    const size_t len = strlen(text);
    char *old = malloc(len + 1);
    size_t n = old ? fread(old, 1, len + 1, f) : 0;
    fclose(f);
    const int same = old && n == len && !memcmp(old, text, len);
    free(old);
    if (!same)
        fprintf(stderr, "make_data: %s differs from what make_data writes:\n%s", path, text);
    return !same;
}

#endif

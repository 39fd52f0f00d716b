/*
 * bench_solve.c — the lu + linear_solve CPU kernels per system against LAPACK
 * called directly, for the small sizes where the kernel uses its own
 * elimination (n <= 8) and one above (n = 12, where it calls LAPACK too).
 *
 * Both variants solve the same B systems A x = b (A row-major, rows
 * rotated so the elimination pivots): "remat" runs a compiled program of
 * remat_linear_solve over (B, n, n) and (B, n) (lu, then linear_solve:
 * factor + solve, as LAPACK's variant does); "lapack" loops over the
 * systems with memcpy + dgetrf_ + dgetrs_('T') (the kernel's own LAPACK
 * path, without the program). "stages": STAGES chained solves with one
 * matrix (one lu in remat's program, one getrf in LAPACK's loop), a
 * Rosenbrock step's pattern. Round-robin sampling of thread CPU time,
 * medians per system. Prints one JSON object, with the largest relative
 * difference between the two solutions.
 *
 *   taskset -c 1 env OPENBLAS_NUM_THREADS=1 ./build/bench/bench_solve [--smoke]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "remat/remat.h"

void dgetrf_(const int *m, const int *n, double *a, const int *lda, int *ipiv, int *info);
void dgetrs_(const char *trans, const int *n, const int *nrhs, const double *a, const int *lda, const int *ipiv,
             double *b, const int *ldb, int *info, size_t trans_len);

#define STAGES 8

typedef struct {
    int64_t B, n;
    double *A, *b, *x_remat, *x_lapack, *M;
    int *ipiv;
    remat_program *p, *ps; /* one solve; STAGES chained solves with one A */
    remat_tensor in[2], out;
} ctx_t;

static int run(void *vc, int i, bool first)
{
    ctx_t *c = vc;
    (void)first;
    if (i == 0 || i == 2)
        return remat_run(i ? c->ps : c->p, 2, c->in, 1, &c->out, NULL) != REMAT_OK;
    const int n = (int)c->n, one = 1;
    int info = 0;
    memcpy(c->x_lapack, c->b, sizeof(double) * (size_t)(c->B * c->n));
    for (int64_t s = 0; s < c->B; s++) {
        memcpy(c->M, c->A + s * c->n * c->n, sizeof(double) * (size_t)(c->n * c->n));
        dgetrf_(&n, &n, c->M, &n, c->ipiv, &info);
        for (int k = 0; k < (i == 3 ? STAGES : 1); k++)
            dgetrs_("T", &n, &one, c->M, &n, c->ipiv, c->x_lapack + s * c->n, &n, &info, 1);
    }
    return info != 0;
}

int main(int argc, char **argv)
{
    const int smoke = argc > 1 && strcmp(argv[1], "--smoke") == 0;
    const int64_t B = smoke ? 16 : 1000, sizes[] = {2, 3, 4, 6, 8, 12};
    const int rounds = smoke ? 1 : 15;
    int bad = 0;
    printf("{\"bench\": \"linear_solve\", \"systems\": %lld, \"rounds\": %d, \"sizes\": [\n", (long long)B, rounds);
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        const int64_t n = sizes[si];
        ctx_t c = {.B = B, .n = n};
        c.A = malloc(sizeof(double) * (size_t)(B * n * n));
        c.b = malloc(sizeof(double) * (size_t)(B * n));
        c.x_remat = malloc(sizeof(double) * (size_t)(B * n));
        c.x_lapack = malloc(sizeof(double) * (size_t)(B * n));
        c.M = malloc(sizeof(double) * (size_t)(n * n));
        c.ipiv = malloc(sizeof(int) * (size_t)n);
        if (!c.A || !c.b || !c.x_remat || !c.x_lapack || !c.M || !c.ipiv)
            return 1;
        srand(7);
        for (int64_t s = 0; s < B; s++)
            for (int64_t i = 0; i < n; i++) {
                c.b[s * n + i] = 2.0 * rand() / RAND_MAX - 1;
                for (int64_t j = 0; j < n; j++)
                    c.A[s * n * n + ((i + s + 1) % n) * n + j] = 2.0 * rand() / RAND_MAX - 1 + (i == j ? (double)n : 0);
            }
        remat_fn *f = remat_fn_new("solve");
        remat_val A = remat_arg(f, "A", REMAT_F64, 3, ((int64_t[]){B, n, n}));
        remat_val b = remat_arg(f, "b", REMAT_F64, 2, ((int64_t[]){B, n}));
        remat_fn_output(f, remat_linear_solve(f, A, b));
        remat_fn *fs = remat_fn_new("stages"); /* x_{s+1} = A^{-1} x_s: one lu, STAGES solves */
        remat_val As = remat_arg(fs, "A", REMAT_F64, 3, ((int64_t[]){B, n, n}));
        remat_val xs = remat_arg(fs, "b", REMAT_F64, 2, ((int64_t[]){B, n}));
        for (int k = 0; k < STAGES; k++)
            xs = remat_linear_solve(fs, As, xs);
        remat_fn_output(fs, xs);
        if (remat_compile(f, remat_backend_cpu(), &c.p) != REMAT_OK ||
            remat_compile(fs, remat_backend_cpu(), &c.ps) != REMAT_OK) {
            fprintf(stderr, "bench_solve: %s\n", remat_last_error());
            return 1;
        }
        c.in[0] = remat_tensor_f64(c.A, 3, ((int64_t[]){B, n, n}));
        c.in[1] = remat_tensor_f64(c.b, 2, ((int64_t[]){B, n}));
        c.out = remat_tensor_f64(c.x_remat, 2, ((int64_t[]){B, n}));
        bench_timing tr = {0}, tl = {0}, trs = {0}, tls = {0};
        bench_timing *t[4] = {&tr, &tl, &trs, &tls};
        if (bench_time_round_robin(4, t, run, &c, rounds, smoke ? 1e5 : 2e7, false))
            return 1;
        run(&c, 0, false); /* the one-solve answers, for the comparison */
        run(&c, 1, false);
        double maxrel = 0;
        for (int64_t i = 0; i < B * n; i++)
            maxrel = fmax(maxrel, fabs(c.x_remat[i] - c.x_lapack[i]) / fmax(fabs(c.x_lapack[i]), 1e-300));
        const double mr = bench_median(tr.samples, rounds) * 1e6 / (double)B;
        const double ml = bench_median(tl.samples, rounds) * 1e6 / (double)B;
        const double mrs = bench_median(trs.samples, rounds) * 1e6 / (double)B;
        const double mls = bench_median(tls.samples, rounds) * 1e6 / (double)B;
        printf("  {\"n\": %lld, \"kernel\": \"%s\", \"remat_ns_per_system\": %.1f, \"lapack_ns_per_system\": %.1f, "
               "\"lapack_over_remat\": %.2f, \"paired_ratio\": %.2f, \"max_rel_diff\": %.2g,\n"
               "   \"stages\": %d, \"remat_stages_ns_per_system\": %.1f, \"lapack_stages_ns_per_system\": %.1f}%s\n",
               (long long)n, n <= 8 ? "elimination" : "lapack", mr, ml, ml / mr,
               bench_paired_ratio(tl.samples, tr.samples, rounds), maxrel, STAGES, mrs, mls,
               si + 1 < sizeof sizes / sizeof sizes[0] ? "," : "");
        bad |= !(maxrel <= 1e-10);
        free(tr.samples), free(tl.samples), free(trs.samples), free(tls.samples);
        remat_program_free(c.p), remat_program_free(c.ps);
        remat_fn_free(f), remat_fn_free(fs);
        free(c.A), free(c.b), free(c.x_remat), free(c.x_lapack), free(c.M), free(c.ipiv);
    }
    printf("]}\n");
    return bad;
}

/*
 * bench_dist.c — the cost of remat/dist.h's collectives on this machine,
 * for the fit's communication model (docs/design-notes.md, "A fit over
 * ranks: cost"): per call, median of ROUNDS rounds of REPS calls each, of
 *   agree      remat_dist_agree(REMAT_OK) (an allreduce of 3 ints)
 *   gather_N   remat_dist_gather of N doubles split over E items (residuals)
 *   gather_NP  the same of N x P doubles (Jacobian rows)
 *   sum        remat_dist_sum of E items of 1 + P doubles (objective, gradient)
 * Run under mpirun; rank 0 prints one JSON line.
 *
 *   mpirun -np 4 bench_dist [E [ROWS_PER_EXP [P [REPS]]]]   (64 46 3 200)
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <remat/remat.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#define ROUNDS 7

typedef enum { AGREE, GATHER_N, GATHER_NP, SUM, N_KINDS } kind;
static const char *const names[N_KINDS] = {"agree_us", "gather_N_us", "gather_NP_us", "sum_us"};

int main(int argc, char **argv)
{
    remat_dist *d;
    if (remat_dist_init(&argc, &argv, &d) != REMAT_OK) {
        fprintf(stderr, "bench_dist: %s\n", remat_last_error());
        return 1;
    }
    int E = argc > 1 ? atoi(argv[1]) : 64, cells = argc > 2 ? atoi(argv[2]) : 46, P = argc > 3 ? atoi(argv[3]) : 3;
    int reps = argc > 4 ? atoi(argv[4]) : 200;
    int *owner = malloc(sizeof *owner * (size_t)E);
    int64_t *len_n = malloc(sizeof *len_n * (size_t)E), *len_np = malloc(sizeof *len_np * (size_t)E);
    size_t N = (size_t)E * (size_t)cells;
    double *mine = calloc(N * (size_t)(P + 1) + 1, sizeof *mine), *all = calloc(N * (size_t)(P + 1) + 1, sizeof *all);
    if (!owner || !len_n || !len_np || !mine || !all || remat_dist_split(d, E, NULL, owner) != REMAT_OK) {
        fprintf(stderr, "bench_dist: out of memory\n");
        return 1;
    }
    for (int e = 0; e < E; e++)
        len_n[e] = cells, len_np[e] = (int64_t)cells * P;
    double t[N_KINDS][ROUNDS];
    remat_status st = REMAT_OK;
    for (int r = 0; r < ROUNDS && st == REMAT_OK; r++)
        for (int k = 0; k < N_KINDS && st == REMAT_OK; k++) {
            remat_dist_agree(d, REMAT_OK); /* start together */
            double t0 = now();
            for (int i = 0; i < reps && st == REMAT_OK; i++)
                switch ((kind)k) {
                case AGREE: st = remat_dist_agree(d, REMAT_OK); break;
                case GATHER_N: st = remat_dist_gather(d, E, owner, len_n, mine, all); break;
                case GATHER_NP: st = remat_dist_gather(d, E, owner, len_np, mine, all); break;
                default: st = remat_dist_sum(d, E, owner, 1 + P, mine, all); break;
                }
            t[k][r] = (now() - t0) / reps * 1e6;
        }
    if (st != REMAT_OK) {
        fprintf(stderr, "bench_dist: %s\n", remat_last_error());
        return 1;
    }
    if (remat_dist_is_root(d)) {
        printf("{\"ranks\": %d, \"kind\": \"%s\", \"experiments\": %d, \"N\": %zu, \"P\": %d", remat_dist_size(d),
               remat_dist_kind(d), E, N, P);
        for (int k = 0; k < N_KINDS; k++) {
            qsort(t[k], ROUNDS, sizeof t[k][0], cmp);
            printf(", \"%s\": %.2f", names[k], t[k][ROUNDS / 2]);
        }
        printf("}\n");
    }
    free(owner), free(len_n), free(len_np), free(mine), free(all);
    remat_dist_finalize(d);
    return 0;
}

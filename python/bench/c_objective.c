/* c_objective.c — the seed reactor's gradient from C (remat_pfr_objective,
 * 1000 Euler steps), median time per call: the reference for
 * overhead.py's remat.Reactor.objective figure.
 *
 *   gcc -O2 -Iinclude python/bench/c_objective.c -Lbuild -lremat -o /tmp/c_objective
 *   LD_LIBRARY_PATH=build /tmp/c_objective
 */
#include <remat/remat.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

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

int main(void)
{
    remat_mechanism *m;
    if (remat_mechanism_parse_string("param k1 = 1\nparam k2 = 0.5\nA -> B : k1\nB -> C : k2\n", NULL, &m) !=
        REMAT_OK)
        return 1;
    remat_pfr_options o = {.method = REMAT_ODE_EULER, .length = 10.0, .steps = 1000, .inlet = (double[]){1, 0, 0},
                           .goal = REMAT_PFR_MAXIMIZE, .species = 1,
                           .schedule = {.kind = REMAT_SCHED_BINOMIAL, .snapshots = 10}};
    remat_pfr *r;
    if (remat_pfr_new(m, &o, &r) != REMAT_OK) {
        fprintf(stderr, "%s\n", remat_last_error());
        return 1;
    }
    double k[2] = {1.0, 0.5}, obj, g[2], t[500];
    remat_pfr_objective(r, k, &obj, g); /* compile */
    for (int i = 0; i < 500; i++) {
        double t0 = now();
        remat_pfr_objective(r, k, &obj, g);
        t[i] = now() - t0;
    }
    qsort(t, 500, sizeof t[0], cmp);
    printf("seed reactor gradient from C, remat_pfr_objective: %9.1f us per call (objective %.6f)\n", t[250] * 1e6,
           obj);
    remat_pfr_free(r);
    remat_mechanism_free(m);
    return 0;
}

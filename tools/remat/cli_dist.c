/* cli_dist.c — the remat tool under mpirun/srun (cli_dist.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_dist.h"

remat_dist *cli_dist_open(void)
{
    remat_dist *d;
    if (remat_dist_init(NULL, NULL, &d) != REMAT_OK) {
        fprintf(stderr, "remat: %s\n", remat_last_error());
        return NULL;
    }
    if (!remat_dist_is_root(d)) { /* rank 0 speaks for all */
        fflush(stdout);
        fflush(stderr);
        if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr)) {
            /* nothing to say it on: carry on, the output doubles */
        }
    }
    return d;
}

void cli_dist_close(remat_dist *d) { remat_dist_finalize(d); }

remat_dist *cli_dist_group(remat_dist *d) { return d && !strcmp(remat_dist_kind(d), "mpi") ? d : NULL; }

int cli_dist_agree(remat_dist *d, int ok, char *msg, size_t cap)
{
    int size = remat_dist_size(d);
    if (size == 1)
        return ok;
    int *ranks = malloc(sizeof *ranks * (size_t)size);
    int64_t *ones = malloc(sizeof *ones * (size_t)size);
    double *all = malloc(sizeof *all * (size_t)size), mine = ok;
    int bad = -1;
    remat_status st = REMAT_ERR_NOMEM;
    if (ranks && ones && all) {
        for (int r = 0; r < size; r++)
            ranks[r] = r, ones[r] = 1;
        st = remat_dist_gather(d, size, ranks, ones, &mine, all);
    }
    for (int r = 0; st == REMAT_OK && r < size && bad < 0; r++)
        if (all[r] == 0)
            bad = r;
    free(ranks);
    free(ones);
    free(all);
    if (st != REMAT_OK) {
        snprintf(msg, cap, "%s", remat_last_error());
        return 0;
    }
    if (bad < 0)
        return 1;
    char text[1024];
    snprintf(text, sizeof text, "%s", msg);
    if (remat_dist_bcast(d, bad, text, sizeof text) != REMAT_OK) {
        snprintf(msg, cap, "%s", remat_last_error());
        return 0;
    }
    text[sizeof text - 1] = '\0';
    snprintf(msg, cap, "rank %d: %s", bad, text);
    return 0;
}

void cli_dist_test_kill_hook(const remat_dist *d)
{
    static int calls;
    const char *rank = getenv("REMAT_TEST_KILL_RANK");
    if (!rank || atoi(rank) != remat_dist_rank(d))
        return;
    const char *at = getenv("REMAT_TEST_KILL_AT");
    if (++calls == (at ? atoi(at) : 3))
        _exit(9);
}

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
    return remat_dist_agree_msg(d, ok ? REMAT_OK : REMAT_ERR_VALUE, msg, cap) == REMAT_OK;
}

void cli_dist_say(const char *lead, const char *msg)
{
    int named = 0;
    if (sscanf(msg, "rank %*d: %n", &named) == 0 && named > 0)
        fprintf(stderr, "remat: %.*s%s%s\n", named, msg, lead, msg + named);
    else
        fprintf(stderr, "remat: %s%s\n", lead, msg);
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

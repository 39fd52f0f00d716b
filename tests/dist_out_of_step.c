/*
 * dist_out_of_step.c — ranks that call different collectives of
 * remat/dist.h (a caller that let one rank return early): the job must end
 * with rank 0's message naming both, not hang. Run on 2 ranks by
 * tests/dist_out_of_step.sh; exits 0 only when nothing ended it (a failure).
 *
 *   dist_out_of_step gather-agree   rank 0 gathers, the others agree
 *   dist_out_of_step early-return   rank 0 broadcasts, the others leave
 */
#include <stdio.h>
#include <string.h>

#include "remat/dist.h"

int main(int argc, char **argv)
{
    remat_dist *d;
    if (argc != 2 || remat_dist_init(&argc, &argv, &d) != REMAT_OK) {
        fprintf(stderr, "usage: dist_out_of_step gather-agree|early-return (under mpirun)\n");
        return 2;
    }
    int rank = remat_dist_rank(d);
    remat_status st = REMAT_OK;
    if (!strcmp(argv[1], "gather-agree")) {
        int owner[2] = {0, 1};
        int64_t len[2] = {1, 1};
        double mine = rank, all[2];
        st = rank == 0 ? remat_dist_gather(d, 2, owner, len, &mine, all) : remat_dist_agree(d, REMAT_OK);
    } else if (rank == 0) {
        double x = 1;
        st = remat_dist_bcast(d, 0, &x, sizeof x);
    }
    remat_dist_finalize(d);
    fprintf(stderr, "dist_out_of_step: rank %d went on (%s)\n", rank, remat_status_name(st));
    return 0;
}

/* ensemble_dist.c — ensemble_dist.h over remat/dist.h (a group of one rank
 * without MPI or outside a launcher). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_dist.h"
#include "ensemble_dist.h"
#include "remat/dist.h"

struct ens_dist {
    remat_dist *d;
};

int ens_dist_init(int *argc, char ***argv, ens_dist **out)
{
    *out = calloc(1, sizeof **out);
    if (!*out) {
        fprintf(stderr, "remat: out of memory\n");
        return 0;
    }
    if (remat_dist_init(argc, argv, &(*out)->d) != REMAT_OK) {
        fprintf(stderr, "remat: %s\n", remat_last_error());
        free(*out);
        *out = NULL;
        return 0;
    }
    return 1;
}

void ens_dist_finalize(ens_dist *d)
{
    if (!d)
        return;
    remat_dist_finalize(d->d);
    free(d);
}

int ens_dist_rank(const ens_dist *d) { return remat_dist_rank(d->d); }

int ens_dist_same_file(ens_dist *d, const char *label, const char *path, char *err, size_t errlen)
{
    return cli_dist_same_files(d->d, 1, &label, &path, err, errlen);
}
int ens_dist_size(const ens_dist *d) { return remat_dist_size(d->d); }

int ens_dist_split(ens_dist *d, int64_t n, int *owner) { return remat_dist_split(d->d, n, NULL, owner) == REMAT_OK; }

/* The messages the command formats itself are not in remat_last_error:
 * the agreement carries err. */
int ens_dist_agree(ens_dist *d, int ok, char *err, size_t errlen)
{
    return remat_dist_agree_msg(d->d, ok ? REMAT_OK : REMAT_ERR_VALUE, err, errlen) == REMAT_OK;
}

int ens_dist_bcast(ens_dist *d, void *buf, size_t bytes) { return remat_dist_bcast(d->d, 0, buf, bytes) == REMAT_OK; }

int ens_dist_gather0(ens_dist *d, int64_t n, const int *owner, const int64_t *len, const double *mine, double *all)
{
    return remat_dist_gather_to(d->d, 0, n, owner, len, mine, all) == REMAT_OK;
}

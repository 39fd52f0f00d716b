/* ensemble_dist.c — ensemble_dist.h over remat/dist.h (a group of one rank
 * without MPI or outside a launcher). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
int ens_dist_size(const ens_dist *d) { return remat_dist_size(d->d); }

int ens_dist_split(ens_dist *d, int64_t n, int *owner) { return remat_dist_split(d->d, n, NULL, owner) == REMAT_OK; }

/* The messages the command formats itself are not in remat_last_error, so
 * the agreement carries err: the ranks learn which failed (a gather of one
 * flag each), and the lowest one broadcasts its err. */
int ens_dist_agree(ens_dist *d, int ok, char *err, size_t errlen)
{
    if (remat_dist_agree(d->d, ok ? REMAT_OK : REMAT_ERR_VALUE) == REMAT_OK)
        return 1;
    int size = remat_dist_size(d->d), rank = remat_dist_rank(d->d);
    if (size == 1)
        return 0;
    int *owner = malloc(sizeof *owner * (size_t)size);
    int64_t *len = malloc(sizeof *len * (size_t)size);
    double *flag = malloc(sizeof *flag * (size_t)size), mine = ok ? 0.0 : 1.0;
    int first = -1;
    if (owner && len && flag) {
        for (int i = 0; i < size; i++)
            owner[i] = i, len[i] = 1;
        if (remat_dist_gather(d->d, size, owner, len, &mine, flag) == REMAT_OK)
            for (int i = 0; i < size && first < 0; i++)
                if (flag[i] != 0)
                    first = i;
    }
    free(owner);
    free(len);
    free(flag);
    if (first < 0) { /* cannot happen unless the gather failed: say what is known */
        snprintf(err, errlen, "a rank failed: %s", remat_last_error());
        return 0;
    }
    char *msg = malloc(errlen);
    if (msg) {
        snprintf(msg, errlen, "rank %d: %s", first, err);
        if (remat_dist_bcast(d->d, first, msg, errlen) == REMAT_OK)
            snprintf(err, errlen, "%s", msg);
        free(msg);
    }
    (void)rank;
    return 0;
}

int ens_dist_bcast(ens_dist *d, void *buf, size_t bytes) { return remat_dist_bcast(d->d, 0, buf, bytes) == REMAT_OK; }

int ens_dist_gather0(ens_dist *d, int64_t n, const int *owner, const int64_t *len, const double *mine, double *all)
{
    return remat_dist_gather_to(d->d, 0, n, owner, len, mine, all) == REMAT_OK;
}

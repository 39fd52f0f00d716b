/*
 * ensemble_dist.h — the part of remat/dist.h (issue 12's contract) that
 * `remat pfr ensemble` uses, behind one seam: ranks, the split of chunks, the
 * error agreement (a message travels with the status), the broadcast of a
 * round's sets and the gather of its results to rank 0.
 */
#ifndef REMAT_TOOL_ENSEMBLE_DIST_H
#define REMAT_TOOL_ENSEMBLE_DIST_H

#include <stddef.h>
#include <stdint.h>

typedef struct ens_dist ens_dist;

/* 0 with a message on stderr when the group cannot start. */
int ens_dist_init(int *argc, char ***argv, ens_dist **out);
void ens_dist_finalize(ens_dist *d);
int ens_dist_rank(const ens_dist *d);
int ens_dist_size(const ens_dist *d);
/* owner[i] for n equal items, contiguous blocks */
int ens_dist_split(ens_dist *d, int64_t n, int *owner);
/* Collective: ok on every rank, or 0 on every rank with err holding the
 * message of the lowest failing rank (remat_dist_agree_msg: "rank R: ..."
 * when size > 1 and not every rank failed alike). */
int ens_dist_agree(ens_dist *d, int ok, char *err, size_t errlen);
int ens_dist_bcast(ens_dist *d, void *buf, size_t bytes);
/* Collective: the file at path holds the same bytes on every rank, or 0 on
 * every rank with err naming label, path and the ranks (cli_dist_same_files). */
int ens_dist_same_file(ens_dist *d, const char *label, const char *path, char *err, size_t errlen);
/* rank 0 receives all items' doubles in item order (others: all = NULL) */
int ens_dist_gather0(ens_dist *d, int64_t n, const int *owner, const int64_t *len, const double *mine, double *all);

#endif

/*
 * remat/dist.h — running over many processes (MPI), deterministically.
 *
 * A thin layer over MPI for the work that splits into independent items
 * (experiments of a fit, starts of a multistart, rows of an ensemble,
 * examples of a batch): which rank owns which item, gathering per-item
 * results, and sums whose bits do not depend on the number of ranks.
 *
 * Optional at build (-Dmpi=auto|enabled|disabled; REMAT_HAVE_MPI says which).
 * Built without MPI, or run outside mpirun/srun, every function works as a
 * group of one rank, so callers never #ifdef; d = NULL is such a group too
 * (a library call handed no group runs alone).
 *
 * Collective functions (split is not one: it is a pure function) must be
 * called by every rank of the group in the same order. A step that can fail
 * on one rank only (reading a file, an integration, an allocation) is
 * followed by remat_dist_agree, so that no rank waits in a collective
 * another rank never reaches. The collectives keep that rule themselves:
 * each opens with an agreement on everything it checks and allocates
 * before data move, so it returns the same status on every rank (a rank
 * out of memory there fails them all, with its message). Ranks found out
 * of step (one in a gather, another in an agreement or in
 * remat_dist_finalize: a caller that returned early on one rank) cannot be
 * brought back by a status: rank 0 says so on stderr and the job ends
 * (MPI_Abort, exit status 70) instead of hanging.
 *
 * Determinism: remat_dist_sum adds the per-item vectors in item order,
 * ((v0 + v1) + v2) + ..., passing the partial sum from rank to rank, never
 * in MPI_Allreduce's order; its result is bitwise the same on 1, 2 or 4
 * ranks, and so is everything computed from it.
 *
 *   remat_dist *d;
 *   if (remat_dist_init(&argc, &argv, &d) != REMAT_OK) { ... }
 *   int owner[64];
 *   remat_dist_split(d, 64, cost, owner);          // same on every rank
 *   remat_status st = REMAT_OK;
 *   for (int64_t i = 0; i < 64 && st == REMAT_OK; i++)
 *       if (owner[i] == remat_dist_rank(d))
 *           st = evaluate(i, mine + k++ * P);      // P doubles per item
 *   st = remat_dist_agree(d, st);                  // every rank: same status
 *   if (st == REMAT_OK)
 *       st = remat_dist_sum(d, 64, owner, P, mine, grad);
 *   if (remat_dist_is_root(d)) write_output(grad);
 *   remat_dist_finalize(d);
 */
#ifndef REMAT_DIST_H
#define REMAT_DIST_H

#include "export.h"

#include <stddef.h>
#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct remat_dist remat_dist;

/* Joins the job: MPI_Init_thread (MPI_THREAD_FUNNELED: only the thread that
 * called init calls the collectives) when MPI is not initialised yet, and
 * MPI_COMM_WORLD's ranks. Built without MPI, or not started by mpirun/srun,
 * a group of one rank ("single"). argc/argv may be NULL.
 * Test hook: REMAT_TEST_ALLOC_FAIL=R:K in the environment makes rank R's
 * allocation number K inside remat (counted from 0 when init returns) fail,
 * once, as a rank out of memory would; the job must end with a message. */
REMAT_API remat_status remat_dist_init(int *argc, char ***argv, remat_dist **out);
/* Leaves the job (MPI_Finalize when init initialised MPI). Collective:
 * every rank calls it (a rank that calls it while another waits in a
 * collective ends the job, see above). NULL is a no-op. */
REMAT_API void remat_dist_finalize(remat_dist *d);

REMAT_API int remat_dist_rank(const remat_dist *d);       /* NULL: 0 */
REMAT_API int remat_dist_size(const remat_dist *d);       /* NULL: 1 */
REMAT_API int remat_dist_is_root(const remat_dist *d);    /* rank 0: prints user-facing output, writes files */
REMAT_API const char *remat_dist_kind(const remat_dist *d); /* "mpi" or "single" (also for NULL) */

/* Splits n items into contiguous blocks, one per rank in rank order (every
 * rank gets one item at least when n >= size), balanced by cost[i] >= 0
 * (NULL, or all 0: equal): rank by rank, a block takes items while its cost
 * plus half the next item's stays within the rank's share of the cost left.
 * owner[i] = its rank. A pure function of n, cost and size: the
 * same on every rank. Not collective. */
REMAT_API remat_status remat_dist_split(const remat_dist *d, int64_t n, const double *cost, int *owner);

/* Every rank receives all items' doubles in item order in `all` (sum of
 * len[i] doubles); item i has len[i] >= 0 doubles; a rank passes its own
 * items' data concatenated in increasing item order in `mine` (NULL when it
 * owns nothing). owner[i] in [0, size), the same on every rank. Collective. */
REMAT_API remat_status remat_dist_gather(remat_dist *d, int64_t n, const int *owner, const int64_t *len,
                                         const double *mine, double *all);
/* Same, but only `root` receives; the others may pass all = NULL. Collective. */
REMAT_API remat_status remat_dist_gather_to(remat_dist *d, int root, int64_t n, const int *owner,
                                            const int64_t *len, const double *mine, double *all);

/* Deterministic sum of per-item vectors of len doubles: sum = ((v0 + v1) +
 * v2) + ... in item order, on every rank, bitwise independent of the number
 * of ranks and of the split. `mine` holds the rank's own items' vectors in
 * increasing item order (NULL when it owns nothing); n = 0 gives zeros.
 * Collective. */
REMAT_API remat_status remat_dist_sum(remat_dist *d, int64_t n, const int *owner, int64_t len,
                                      const double *mine, double *sum);

/* root's `bytes` bytes of buf copied into every rank's buf. Collective. */
REMAT_API remat_status remat_dist_bcast(remat_dist *d, int root, void *buf, size_t bytes);

/* Error agreement. Every rank passes its local status (its message in
 * remat_last_error() on failure); every rank returns the status of the
 * lowest failing rank and gets that rank's message as its remat_last_error()
 * ("rank R: ..." when size > 1, unless every rank failed with the same
 * status and message: then as it is); REMAT_OK when every rank succeeded.
 * Collective. */
REMAT_API remat_status remat_dist_agree(remat_dist *d, remat_status local);
/* The same agreement, carrying the caller's own text instead of
 * remat_last_error(): msg (cap bytes) is this rank's message when local
 * fails; on a failure anywhere every rank returns the lowest failing
 * rank's status with its message in msg and in remat_last_error(). A
 * message every rank failed with alike (a bad option value) is said as it
 * is, without a rank; another is "rank R: ..." when size > 1. msg NULL:
 * remat_dist_agree with an empty message. Collective. */
REMAT_API remat_status remat_dist_agree_msg(remat_dist *d, remat_status local, char *msg, size_t cap);

#ifdef __cplusplus
}
#endif
#endif

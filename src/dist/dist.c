/* dist.c — the public functions of remat/dist.h over a group's primitives
 * (dist_impl.h): the split, gathers in item order, the deterministic sum
 * (a partial sum handed from rank to rank in item order), error agreement. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "dist/dist_impl.h"

/* d = NULL: a group of one rank (its primitives touch nothing of it) */
static remat_dist single_group = {.ops = &remat_dist_single_ops, .rank = 0, .size = 1};

static remat_dist *group(remat_dist *d) { return d ? d : &single_group; }

int remat_dist_launched_size(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE", "MPI_LOCALNRANKS",
                                       "SLURM_NTASKS"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v) {
            long n = strtol(v, NULL, 10);
            if (n > 0 && n < 1L << 30)
                return (int)n;
        }
    }
    /* PMIx (srun --mpi=pmix) sets the rank, not always the size */
    return getenv("PMIX_RANK") ? 1 : 0;
}

remat_status remat_dist_init(int *argc, char ***argv, remat_dist **out)
{
    if (!out)
        return remat_error(REMAT_ERR_NULL, "remat_dist_init: out is NULL");
    *out = NULL;
    remat_dist *d = remat_calloc(1, sizeof *d);
    if (!d)
        return remat_error(REMAT_ERR_NOMEM, "remat_dist_init: the group");
    bool joined = false;
    remat_status st = remat_dist_mpi_open(argc, argv, d, &joined);
    if (st != REMAT_OK) {
        remat_free(d);
        return st;
    }
    if (!joined)
        *d = single_group;
    *out = d;
    return REMAT_OK;
}

void remat_dist_finalize(remat_dist *d)
{
    if (!d)
        return;
    d->ops->close(d);
    remat_free(d);
}

int remat_dist_rank(const remat_dist *d) { return d ? d->rank : 0; }
int remat_dist_size(const remat_dist *d) { return d ? d->size : 1; }
int remat_dist_is_root(const remat_dist *d) { return remat_dist_rank(d) == 0; }
const char *remat_dist_kind(const remat_dist *d) { return d ? d->ops->kind : "single"; }

remat_status remat_dist_split_n(int size, int64_t n, const double *cost, int *owner)
{
    if (n < 0)
        return remat_error(REMAT_ERR_ARG, "remat_dist_split: n = %lld items", (long long)n);
    if (n > 0 && !owner)
        return remat_error(REMAT_ERR_NULL, "remat_dist_split: owner is NULL");
    double total = 0;
    for (int64_t i = 0; cost && i < n; i++) {
        if (!(cost[i] >= 0) || !isfinite(cost[i]))
            return remat_error(REMAT_ERR_VALUE, "remat_dist_split: cost[%lld] = %g (a cost is finite and >= 0)",
                               (long long)i, cost[i]);
        total += cost[i];
    }
    if (!(total > 0) || !isfinite(total))
        cost = NULL; /* all zero (or a sum past DBL_MAX): equal shares */
    if (!cost)
        total = (double)n;
    /* Rank by rank, a block takes items while its cost stays nearest the
     * rank's fair share of what is left (left / ranks left): an item joins
     * when the block plus half the item is within the share. A block is
     * never empty while items remain for it, and when only as many items
     * remain as ranks after this one, each of those gets one. */
    int r = 0;
    double left = total, block = 0, share = total / size;
    int64_t taken = 0; /* items in the current block */
    for (int64_t i = 0; i < n; i++) {
        double c = cost ? cost[i] : 1;
        bool full = taken > 0 && (block + 0.5 * c > share || n - i <= size - 1 - r);
        if (full && r < size - 1) {
            r++;
            left -= block;
            share = left / (size - r);
            block = 0;
            taken = 0;
        }
        owner[i] = r;
        block += c;
        taken++;
    }
    return REMAT_OK;
}

remat_status remat_dist_split(const remat_dist *d, int64_t n, const double *cost, int *owner)
{
    return remat_dist_split_n(remat_dist_size(d), n, cost, owner);
}

/* The arguments every collective over items shares, checked alike on every
 * rank (they are the same there), so all ranks return or none. */
static remat_status check_items(const char *fn, const remat_dist *d, int64_t n, const int *owner)
{
    if (n < 0)
        return remat_error(REMAT_ERR_ARG, "%s: n = %lld items", fn, (long long)n);
    if (n > 0 && !owner)
        return remat_error(REMAT_ERR_NULL, "%s: owner is NULL", fn);
    for (int64_t i = 0; i < n; i++)
        if (owner[i] < 0 || owner[i] >= d->size)
            return remat_error(REMAT_ERR_ARG, "%s: owner[%lld] = %d is not a rank of this %d-rank group", fn,
                               (long long)i, owner[i], d->size);
    return REMAT_OK;
}

static remat_status gather(const char *fn, remat_dist *d, int root, int64_t n, const int *owner,
                           const int64_t *len, const double *mine, double *all)
{
    remat_status st = check_items(fn, d, n, owner);
    if (st != REMAT_OK)
        return st;
    if (root >= d->size)
        return remat_error(REMAT_ERR_ARG, "%s: root %d is not a rank of this %d-rank group", fn, root, d->size);
    if (n > 0 && !len)
        return remat_error(REMAT_ERR_NULL, "%s: len is NULL", fn);
    int64_t *count = remat_calloc(2 * (size_t)d->size, sizeof *count);
    if (!count)
        return remat_error(REMAT_ERR_NOMEM, "%s: counts of %d ranks", fn, d->size);
    int64_t *displ = count + d->size, total = 0;
    bool in_order = true; /* owners non-decreasing: rank blocks are item order */
    for (int64_t i = 0; i < n; i++) {
        if (len[i] < 0) {
            remat_free(count);
            return remat_error(REMAT_ERR_ARG, "%s: len[%lld] = %lld", fn, (long long)i, (long long)len[i]);
        }
        count[owner[i]] += len[i];
        in_order = in_order && (i == 0 || owner[i] >= owner[i - 1]);
    }
    for (int r = 0; r < d->size; r++) {
        displ[r] = total;
        total += count[r];
    }
    bool receives = root < 0 || root == d->rank;
    if ((receives && total > 0 && !all) || (count[d->rank] > 0 && !mine)) {
        remat_free(count);
        return remat_error(REMAT_ERR_NULL, "%s: %s is NULL", fn, count[d->rank] > 0 && !mine ? "mine" : "all");
    }
    double *by_rank = all;
    if (receives && !in_order && total > 0) {
        by_rank = remat_malloc((size_t)total * sizeof *by_rank);
        if (!by_rank) {
            remat_free(count);
            return remat_error(REMAT_ERR_NOMEM, "%s: %lld doubles", fn, (long long)total);
        }
    }
    st = d->ops->gatherv(d, root, mine, count, displ, receives ? by_rank : NULL);
    if (st == REMAT_OK && by_rank != all) { /* rank blocks -> item order */
        double *dst = all;
        for (int64_t i = 0; i < n; i++) {
            memcpy(dst, by_rank + displ[owner[i]], (size_t)len[i] * sizeof *dst);
            displ[owner[i]] += len[i];
            dst += len[i];
        }
    }
    if (by_rank != all)
        remat_free(by_rank);
    remat_free(count);
    return st;
}

remat_status remat_dist_gather(remat_dist *d, int64_t n, const int *owner, const int64_t *len,
                               const double *mine, double *all)
{
    return gather("remat_dist_gather", group(d), -1, n, owner, len, mine, all);
}

remat_status remat_dist_gather_to(remat_dist *d, int root, int64_t n, const int *owner,
                                  const int64_t *len, const double *mine, double *all)
{
    if (root < 0)
        return remat_error(REMAT_ERR_ARG, "remat_dist_gather_to: root %d", root);
    return gather("remat_dist_gather_to", group(d), root, n, owner, len, mine, all);
}

/* Each run of consecutive items of one rank is folded into the partial sum
 * there, which then goes to the next run's rank; the last one broadcasts.
 * Every rank walks the same runs, so sends and receives pair up in order. */
remat_status remat_dist_sum(remat_dist *d, int64_t n, const int *owner, int64_t len, const double *mine,
                            double *sum)
{
    d = group(d);
    remat_status st = check_items("remat_dist_sum", d, n, owner);
    if (st != REMAT_OK)
        return st;
    if (len < 0)
        return remat_error(REMAT_ERR_ARG, "remat_dist_sum: len = %lld", (long long)len);
    if (len > 0 && !sum)
        return remat_error(REMAT_ERR_NULL, "remat_dist_sum: sum is NULL");
    if (n == 0 || len == 0) {
        for (int64_t k = 0; k < len; k++)
            sum[k] = 0;
        return REMAT_OK;
    }
    int64_t owned = 0;
    for (int64_t i = 0; i < n; i++)
        owned += owner[i] == d->rank;
    if (owned > 0 && !mine)
        return remat_error(REMAT_ERR_NULL, "remat_dist_sum: mine is NULL (this rank owns %lld items)",
                           (long long)owned);
    const double *v = mine;
    for (int64_t i = 0; i < n && st == REMAT_OK; i++) {
        if (i > 0 && owner[i] != owner[i - 1]) {
            if (d->rank == owner[i - 1])
                st = d->ops->send(d, owner[i], sum, len);
            else if (d->rank == owner[i])
                st = d->ops->recv(d, owner[i - 1], sum, len);
        }
        if (st != REMAT_OK || d->rank != owner[i])
            continue;
        if (i == 0)
            memcpy(sum, v, (size_t)len * sizeof *sum);
        else
            for (int64_t k = 0; k < len; k++)
                sum[k] += v[k];
        v += len;
    }
    if (st != REMAT_OK)
        return st;
    return remat_dist_bcast(d, owner[n - 1], sum, (size_t)len * sizeof *sum);
}

remat_status remat_dist_bcast(remat_dist *d, int root, void *buf, size_t bytes)
{
    d = group(d);
    if (root < 0 || root >= d->size)
        return remat_error(REMAT_ERR_ARG, "remat_dist_bcast: root %d is not a rank of this %d-rank group", root,
                           d->size);
    if (bytes > 0 && !buf)
        return remat_error(REMAT_ERR_NULL, "remat_dist_bcast: buf is NULL");
    return d->ops->bcast(d, root, buf, bytes);
}

remat_status remat_dist_agree(remat_dist *d, remat_status local)
{
    d = group(d);
    if (d->size == 1)
        return local;
    int stack[64], *all = d->size <= 64 ? stack : remat_malloc((size_t)d->size * sizeof *all);
    if (!all)
        return remat_error(REMAT_ERR_NOMEM, "remat_dist_agree: statuses of %d ranks", d->size);
    remat_status st = d->ops->allgather_int(d, (int)local, all);
    int bad = -1;
    for (int r = 0; st == REMAT_OK && r < d->size && bad < 0; r++)
        if (all[r] != REMAT_OK)
            bad = r;
    if (st == REMAT_OK && bad >= 0) {
        st = (remat_status)all[bad];
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", remat_last_error());
        remat_status bst = d->ops->bcast(d, bad, msg, sizeof msg);
        msg[sizeof msg - 1] = '\0';
        int skip = 0;
        if (bst != REMAT_OK)
            st = bst;
        else if (sscanf(msg, "rank %*d: %n", &skip) == 0 && skip > 0)
            remat_error(st, "%s", msg); /* agreed on before: named already */
        else
            remat_error(st, "rank %d: %s", bad, msg);
    }
    if (all != stack)
        remat_free(all);
    return st;
}

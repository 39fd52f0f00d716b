/* dist.c — the public functions of remat/dist.h over a group's primitives
 * (dist_impl.h): the split, gathers in item order, the deterministic sum
 * (a partial sum handed from rank to rank in item order), error agreement,
 * and the agreement every collective opens with. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/assert.h"
#include "core/error.h"
#include "dist/dist_impl.h"

/* d = NULL: a group of one rank (its primitives touch nothing of it) */
static remat_dist single_group = {.ops = &rmi_dist_single_ops, .rank = 0, .size = 1};

static remat_dist *group(remat_dist *d) { return d ? d : &single_group; }

int rmi_dist_launched_size(void)
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

/* Test hook (dist.h): REMAT_TEST_ALLOC_FAIL=R:K fails allocation K of rank
 * R (counted from here), once. */
static void test_alloc_hook(const remat_dist *d)
{
    const char *v = getenv("REMAT_TEST_ALLOC_FAIL");
    int rank;
    long long k;
    if (v && sscanf(v, "%d:%lld", &rank, &k) == 2 && rank == d->rank && k >= 0)
        rmi_alloc_fail_once(k);
}

remat_status remat_dist_init(int *argc, char ***argv, remat_dist **out)
{
    if (!out)
        return rmi_error(REMAT_ERR_NULL, "remat_dist_init: out is NULL");
    *out = NULL;
    remat_dist *d = rmi_calloc(1, sizeof *d), stand_in = {0};
    bool joined = false;
    remat_status st = rmi_dist_mpi_open(argc, argv, d ? d : &stand_in, d != NULL, &joined);
    if (st == REMAT_OK && !d) /* alone: nobody to fail with */
        st = rmi_error(REMAT_ERR_NOMEM, "remat_dist_init: out of memory for the group");
    if (st != REMAT_OK) {
        rmi_free(d);
        return st;
    }
    if (!joined)
        *d = single_group;
    *out = d;
    test_alloc_hook(d);
    return REMAT_OK;
}

static remat_status agreed(remat_dist *d, int tag, remat_status local);
enum { ENTER_AGREE = 1, ENTER_GATHER, ENTER_GATHER_TO, ENTER_SUM, ENTER_BCAST, ENTER_FINALIZE, ENTER_COUNT };

void remat_dist_finalize(remat_dist *d)
{
    if (!d)
        return;
    /* a rank that leaves while others wait in a collective ends the job
     * with a message instead of leaving them waiting (agreed) */
    (void)agreed(d, ENTER_FINALIZE, REMAT_OK);
    d->ops->close(d);
    rmi_free(d);
}

int remat_dist_rank(const remat_dist *d) { return d ? d->rank : 0; }
int remat_dist_size(const remat_dist *d) { return d ? d->size : 1; }
int remat_dist_is_root(const remat_dist *d) { return remat_dist_rank(d) == 0; }
const char *remat_dist_kind(const remat_dist *d) { return d ? d->ops->kind : "single"; }

remat_status rmi_dist_split_n(int size, int64_t n, const double *cost, int *owner)
{
    if (n < 0)
        return rmi_error(REMAT_ERR_ARG, "remat_dist_split: n = %lld items", (long long)n);
    if (n > 0 && !owner)
        return rmi_error(REMAT_ERR_NULL, "remat_dist_split: owner is NULL");
    double total = 0;
    for (int64_t i = 0; cost && i < n; i++) {
        if (!(cost[i] >= 0) || !isfinite(cost[i]))
            return rmi_error(REMAT_ERR_VALUE, "remat_dist_split: cost[%lld] = %g (a cost is finite and >= 0)",
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
    return rmi_dist_split_n(remat_dist_size(d), n, cost, owner);
}

/* ---- the opening agreement ----
 *
 * Every collective here opens with one MPI_Allreduce (MIN) of three ints:
 * the lowest rank whose preparation failed (argument checks, allocations:
 * all a collective can fail at before data move), the collective's tag and
 * minus its tag. Then
 *   - the least and the greatest tag differ: the ranks are out of step (one
 *     in a gather, another in an agreement or in remat_dist_finalize,
 *     having returned early): a caller's bug no status can repair, and
 *     waiting would hang the job; rank 0 names the collectives that met
 *     and the job ends (MPI_Abort);
 *   - a rank failed: it broadcasts its status and message, every rank
 *     returns them, and no data moves;
 *   - else the collective goes on, allocating nothing more.
 * So a failure on one rank is every rank's failure, whatever the caller
 * does next. A message every rank failed with alike (a bad argument the
 * same everywhere) is said as it is; another is "rank R: ...". */

static const char *const enter_name[ENTER_COUNT] = {
    [ENTER_AGREE] = "remat_dist_agree",       [ENTER_GATHER] = "remat_dist_gather",
    [ENTER_GATHER_TO] = "remat_dist_gather_to", [ENTER_SUM] = "remat_dist_sum",
    [ENTER_BCAST] = "remat_dist_bcast",       [ENTER_FINALIZE] = "remat_dist_finalize",
};

enum { MSG_CAP = 1024, OUT_OF_STEP_EXIT = 70 /* EX_SOFTWARE */ };

static _Noreturn void out_of_step(remat_dist *d, int lo, int hi)
{
    if (d->rank == 0) {
        fprintf(stderr, "remat: dist: ranks out of step: some ranks called %s while others called %s (a rank "
                "left a collective path early, a bug): ending the job\n", enter_name[lo], enter_name[hi]);
        fflush(stderr);
    }
    int said = 0; /* rank 0 has printed before any rank ends the job */
    (void)d->ops->allreduce_min_int(d, &said, 1);
    d->ops->abort_job(d, OUT_OF_STEP_EXIT);
    REMAT_UNREACHABLE("dist: MPI_Abort returned");
}

/* msg (cap bytes): this rank's message when local failed; on return, when
 * the status is not REMAT_OK, the agreed one on every rank. */
static remat_status enter(remat_dist *d, int tag, remat_status local, char *msg, size_t cap)
{
    REMAT_ASSERT(tag > 0 && tag < ENTER_COUNT);
    if (d->size == 1)
        return local;
    int v[3] = {local != REMAT_OK ? d->rank : d->size, tag, -tag};
    remat_status st = d->ops->allreduce_min_int(d, v, 3);
    if (st == REMAT_OK && v[1] != -v[2])
        out_of_step(d, v[1], -v[2]);
    if (st == REMAT_OK && v[0] >= d->size)
        return REMAT_OK;
    struct {
        int status;
        char text[MSG_CAP];
    } said = {0};
    char mine[MSG_CAP];
    snprintf(mine, sizeof mine, "%s", local != REMAT_OK ? msg : "");
    int bad = v[0], alike = 0;
    if (st == REMAT_OK) {
        if (d->rank == bad) {
            said.status = (int)local;
            memcpy(said.text, mine, sizeof said.text);
        }
        st = d->ops->bcast(d, bad, &said, sizeof said);
        said.text[MSG_CAP - 1] = '\0';
    }
    if (st == REMAT_OK) {
        alike = said.status == (int)local && !strcmp(mine, said.text);
        st = d->ops->allreduce_min_int(d, &alike, 1);
    }
    if (st != REMAT_OK) { /* the transport failed: its message */
        snprintf(msg, cap, "%s", remat_last_error());
        return st;
    }
    int named = 0; /* agreed on before: "rank R: " already */
    if (alike || (sscanf(said.text, "rank %*d: %n", &named) == 0 && named > 0))
        snprintf(msg, cap, "%s", said.text);
    else
        snprintf(msg, cap, "rank %d: %s", bad, said.text);
    return said.status > REMAT_OK && said.status < REMAT_STATUS_COUNT ? (remat_status)said.status : REMAT_ERR_BACKEND;
}

/* enter with remat_last_error() as the message, agreed into it */
static remat_status agreed(remat_dist *d, int tag, remat_status local)
{
    if (d->size == 1)
        return local;
    char msg[MSG_CAP];
    snprintf(msg, sizeof msg, "%s", local != REMAT_OK ? remat_last_error() : "");
    remat_status st = enter(d, tag, local, msg, sizeof msg);
    return st == REMAT_OK ? REMAT_OK : rmi_error(st, "%s", msg);
}

remat_status remat_dist_agree(remat_dist *d, remat_status local) { return agreed(group(d), ENTER_AGREE, local); }

remat_status remat_dist_agree_msg(remat_dist *d, remat_status local, char *msg, size_t cap)
{
    d = group(d);
    char own[MSG_CAP] = "";
    if (!msg || cap == 0) /* nothing of the caller's to carry */
        msg = own, cap = sizeof own;
    remat_status st = enter(d, ENTER_AGREE, local, msg, cap);
    return st == REMAT_OK ? REMAT_OK : rmi_error(st, "%s", msg);
}

/* ---- collectives over items ---- */

/* The arguments every collective over items shares. */
static remat_status check_items(const char *fn, const remat_dist *d, int64_t n, const int *owner)
{
    if (n < 0)
        return rmi_error(REMAT_ERR_ARG, "%s: n = %lld items", fn, (long long)n);
    if (n > 0 && !owner)
        return rmi_error(REMAT_ERR_NULL, "%s: owner is NULL", fn);
    for (int64_t i = 0; i < n; i++)
        if (owner[i] < 0 || owner[i] >= d->size)
            return rmi_error(REMAT_ERR_ARG, "%s: owner[%lld] = %d is not a rank of this %d-rank group", fn,
                             (long long)i, owner[i], d->size);
    return REMAT_OK;
}

typedef struct {
    int64_t *count, *displ; /* (size) doubles each rank sends, where they land */
    double *by_rank;        /* receivers' rank blocks when owners are not in item order, else all */
} gather_plan;

/* Everything a gather checks and allocates before its agreement. */
static remat_status gather_prepare(const char *fn, remat_dist *d, int root, int64_t n, const int *owner,
                                   const int64_t *len, const double *mine, double *all, gather_plan *g)
{
    remat_status st = check_items(fn, d, n, owner);
    if (st != REMAT_OK)
        return st;
    if (root >= d->size)
        return rmi_error(REMAT_ERR_ARG, "%s: root %d is not a rank of this %d-rank group", fn, root, d->size);
    if (n > 0 && !len)
        return rmi_error(REMAT_ERR_NULL, "%s: len is NULL", fn);
    g->count = rmi_calloc(2 * (size_t)d->size, sizeof *g->count);
    if (!g->count)
        return rmi_error(REMAT_ERR_NOMEM, "%s: out of memory for the counts of %d ranks", fn, d->size);
    g->displ = g->count + d->size;
    int64_t total = 0;
    bool in_order = true; /* owners non-decreasing: rank blocks are item order */
    for (int64_t i = 0; i < n; i++) {
        if (len[i] < 0)
            return rmi_error(REMAT_ERR_ARG, "%s: len[%lld] = %lld", fn, (long long)i, (long long)len[i]);
        g->count[owner[i]] += len[i];
        in_order = in_order && (i == 0 || owner[i] >= owner[i - 1]);
    }
    for (int r = 0; r < d->size; r++) {
        g->displ[r] = total;
        total += g->count[r];
    }
    if (d->ops->gather_limit > 0 && total > d->ops->gather_limit)
        return rmi_error(REMAT_ERR_UNSUPPORTED, "%s: a gather of %lld doubles, more than MPI's %lld", fn,
                         (long long)total, (long long)d->ops->gather_limit);
    bool receives = root < 0 || root == d->rank;
    if ((receives && total > 0 && !all) || (g->count[d->rank] > 0 && !mine))
        return rmi_error(REMAT_ERR_NULL, "%s: %s is NULL", fn, g->count[d->rank] > 0 && !mine ? "mine" : "all");
    g->by_rank = receives ? all : NULL;
    if (receives && !in_order && total > 0) {
        g->by_rank = rmi_malloc((size_t)total * sizeof *g->by_rank);
        if (!g->by_rank)
            return rmi_error(REMAT_ERR_NOMEM, "%s: out of memory for %lld doubles", fn, (long long)total);
    }
    return REMAT_OK;
}

static remat_status gather(const char *fn, int tag, remat_dist *d, int root, int64_t n, const int *owner,
                           const int64_t *len, const double *mine, double *all)
{
    gather_plan g = {0};
    remat_status st = gather_prepare(fn, d, root, n, owner, len, mine, all, &g);
    st = agreed(d, tag, st);
    if (st == REMAT_OK)
        st = d->ops->gatherv(d, root, mine, g.count, g.displ, g.by_rank);
    if (st == REMAT_OK && g.by_rank && g.by_rank != all) { /* rank blocks -> item order */
        double *dst = all;
        for (int64_t i = 0; i < n; i++) {
            memcpy(dst, g.by_rank + g.displ[owner[i]], (size_t)len[i] * sizeof *dst);
            g.displ[owner[i]] += len[i];
            dst += len[i];
        }
    }
    if (g.by_rank != all)
        rmi_free(g.by_rank);
    rmi_free(g.count);
    return st;
}

remat_status remat_dist_gather(remat_dist *d, int64_t n, const int *owner, const int64_t *len,
                               const double *mine, double *all)
{
    return gather("remat_dist_gather", ENTER_GATHER, group(d), -1, n, owner, len, mine, all);
}

remat_status remat_dist_gather_to(remat_dist *d, int root, int64_t n, const int *owner,
                                  const int64_t *len, const double *mine, double *all)
{
    d = group(d);
    if (root < 0) /* agreed too: a root that differs between ranks is a root < 0 somewhere */
        return agreed(d, ENTER_GATHER_TO, rmi_error(REMAT_ERR_ARG, "remat_dist_gather_to: root %d", root));
    return gather("remat_dist_gather_to", ENTER_GATHER_TO, d, root, n, owner, len, mine, all);
}

static remat_status sum_check(remat_dist *d, int64_t n, const int *owner, int64_t len, const double *mine,
                              double *sum)
{
    remat_status st = check_items("remat_dist_sum", d, n, owner);
    if (st != REMAT_OK)
        return st;
    if (len < 0)
        return rmi_error(REMAT_ERR_ARG, "remat_dist_sum: len = %lld", (long long)len);
    if (len > 0 && !sum)
        return rmi_error(REMAT_ERR_NULL, "remat_dist_sum: sum is NULL");
    int64_t owned = 0;
    for (int64_t i = 0; i < n; i++)
        owned += owner[i] == d->rank;
    if (owned > 0 && len > 0 && !mine)
        return rmi_error(REMAT_ERR_NULL, "remat_dist_sum: mine is NULL (this rank owns %lld items)",
                         (long long)owned);
    return REMAT_OK;
}

/* Each run of consecutive items of one rank is folded into the partial sum
 * there, which then goes to the next run's rank; the last one broadcasts.
 * Every rank walks the same runs, so sends and receives pair up in order. */
remat_status remat_dist_sum(remat_dist *d, int64_t n, const int *owner, int64_t len, const double *mine,
                            double *sum)
{
    d = group(d);
    remat_status st = agreed(d, ENTER_SUM, sum_check(d, n, owner, len, mine, sum));
    if (st != REMAT_OK)
        return st;
    if (n == 0 || len == 0) {
        for (int64_t k = 0; k < len; k++)
            sum[k] = 0;
        return REMAT_OK;
    }
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
    return d->ops->bcast(d, owner[n - 1], sum, (size_t)len * sizeof *sum);
}

remat_status remat_dist_bcast(remat_dist *d, int root, void *buf, size_t bytes)
{
    d = group(d);
    remat_status st = REMAT_OK;
    if (root < 0 || root >= d->size)
        st = rmi_error(REMAT_ERR_ARG, "remat_dist_bcast: root %d is not a rank of this %d-rank group", root,
                       d->size);
    else if (bytes > 0 && !buf)
        st = rmi_error(REMAT_ERR_NULL, "remat_dist_bcast: buf is NULL");
    st = agreed(d, ENTER_BCAST, st);
    return st == REMAT_OK ? d->ops->bcast(d, root, buf, bytes) : st;
}

/* mpi.c — the MPI group: MPI_COMM_WORLD's ranks through a duplicate
 * communicator of our own (remat's messages never match a caller's) whose
 * errors return instead of aborting, so they become statuses. */
#include <limits.h>
#include <mpi.h>
#include <stdio.h>

#include "core/alloc.h"
#include "core/error.h"
#include "dist/dist_impl.h"

typedef struct {
    MPI_Comm comm;
    bool finalize; /* we initialised MPI: we finalise it */
    int *counts;   /* (2 size) a gather's counts and displacements as MPI's ints:
                    * made when the group is, so a gather allocates nothing
                    * after the agreement it opens with (dist.c) */
} mpi_ctx;

static MPI_Comm comm_of(remat_dist *d) { return ((mpi_ctx *)d->ctx)->comm; }

static remat_status mpi_fail(const char *what, int rc)
{
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS)
        snprintf(text, sizeof text, "error %d", rc);
    return rmi_error(REMAT_ERR_BACKEND, "dist: %s failed: %s", what, text);
}

static remat_status mpi_gatherv(remat_dist *d, int root, const double *mine, const int64_t *count,
                                const int64_t *displ, double *all)
{
    /* counts past INT_MAX are refused by dist.c before its agreement */
    int *ci = ((mpi_ctx *)d->ctx)->counts, *di = ci + d->size;
    for (int r = 0; r < d->size; r++) {
        ci[r] = (int)count[r];
        di[r] = (int)displ[r];
    }
    static const double none;
    const double *send = mine ? mine : &none;
    int rc = root < 0 ? MPI_Allgatherv(send, ci[d->rank], MPI_DOUBLE, all, ci, di, MPI_DOUBLE, comm_of(d))
                      : MPI_Gatherv(send, ci[d->rank], MPI_DOUBLE, all, ci, di, MPI_DOUBLE, root, comm_of(d));
    return rc == MPI_SUCCESS ? REMAT_OK : mpi_fail(root < 0 ? "MPI_Allgatherv" : "MPI_Gatherv", rc);
}

static remat_status mpi_bcast(remat_dist *d, int root, void *buf, size_t bytes)
{
    for (size_t off = 0; off < bytes;) { /* MPI counts are ints */
        size_t k = bytes - off < (size_t)INT_MAX ? bytes - off : (size_t)INT_MAX;
        int rc = MPI_Bcast((char *)buf + off, (int)k, MPI_BYTE, root, comm_of(d));
        if (rc != MPI_SUCCESS)
            return mpi_fail("MPI_Bcast", rc);
        off += k;
    }
    return REMAT_OK;
}

enum { SUM_TAG = 0x5e3 };

static remat_status mpi_send(remat_dist *d, int to, const double *buf, int64_t n)
{
    for (int64_t off = 0; off < n;) {
        int k = n - off < INT_MAX ? (int)(n - off) : INT_MAX;
        int rc = MPI_Send(buf + off, k, MPI_DOUBLE, to, SUM_TAG, comm_of(d));
        if (rc != MPI_SUCCESS)
            return mpi_fail("MPI_Send", rc);
        off += k;
    }
    return REMAT_OK;
}

static remat_status mpi_recv(remat_dist *d, int from, double *buf, int64_t n)
{
    for (int64_t off = 0; off < n;) {
        int k = n - off < INT_MAX ? (int)(n - off) : INT_MAX;
        int rc = MPI_Recv(buf + off, k, MPI_DOUBLE, from, SUM_TAG, comm_of(d), MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS)
            return mpi_fail("MPI_Recv", rc);
        off += k;
    }
    return REMAT_OK;
}

static remat_status mpi_allreduce_min_int(remat_dist *d, int *v, int n)
{
    int rc = MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_INT, MPI_MIN, comm_of(d));
    return rc == MPI_SUCCESS ? REMAT_OK : mpi_fail("MPI_Allreduce", rc);
}

static void mpi_abort_job(remat_dist *d, int code) { MPI_Abort(comm_of(d), code); }

static void mpi_close(remat_dist *d)
{
    mpi_ctx *c = d->ctx;
    MPI_Comm_free(&c->comm);
    if (c->finalize)
        MPI_Finalize();
    rmi_free(c->counts);
    rmi_free(c);
}

static const remat_dist_ops mpi_ops = {
    .kind = "mpi",
    .gather_limit = INT_MAX,
    .gatherv = mpi_gatherv,
    .bcast = mpi_bcast,
    .send = mpi_send,
    .recv = mpi_recv,
    .allreduce_min_int = mpi_allreduce_min_int,
    .abort_job = mpi_abort_job,
    .close = mpi_close,
};

/* The group's scratch, then every rank learns whether every rank has all
 * it needs (ok: the handles were made too): a rank that could not make
 * them must not leave the others waiting in their first collective. */
static remat_status joined_together(mpi_ctx *c, remat_dist *d, bool ok)
{
    c->counts = rmi_malloc(2 * (size_t)d->size * sizeof *c->counts);
    int bad = ok && c->counts ? d->size : d->rank;
    int rc = MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MIN, c->comm);
    if (rc != MPI_SUCCESS)
        return mpi_fail("MPI_Allreduce", rc);
    if (bad < d->size)
        return rmi_error(REMAT_ERR_NOMEM, "dist: rank %d of %d: out of memory joining the group", bad, d->size);
    return REMAT_OK;
}

remat_status rmi_dist_mpi_open(int *argc, char ***argv, remat_dist *d, bool ok, bool *joined)
{
    *joined = false;
    int inited = 0, finalized = 0;
    MPI_Initialized(&inited);
    MPI_Finalized(&finalized);
    if (finalized)
        return rmi_error(REMAT_ERR_ARG, "dist: MPI was finalised already in this process");
    /* Outside a launcher a singleton MPI_Init would start a daemon for
     * nothing (and fails in some containers): a group of one rank instead. */
    if (!inited && rmi_dist_launched_size() == 0)
        return REMAT_OK;
    /* out of memory here, a rank still joins (on the stack), to fail with
     * the others instead of leaving them in MPI_Comm_dup */
    mpi_ctx *made = rmi_calloc(1, sizeof *made), on_stack = {0}, *c = made ? made : &on_stack;
    ok = ok && made;
    if (!inited) {
        int provided = 0; /* FUNNELED: remat's pool threads never call MPI */
        int rc = MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
        if (rc != MPI_SUCCESS) {
            rmi_free(made);
            return mpi_fail("MPI_Init_thread", rc);
        }
        c->finalize = true;
    }
    c->comm = MPI_COMM_NULL;
    int rc = MPI_Comm_dup(MPI_COMM_WORLD, &c->comm);
    if (rc == MPI_SUCCESS)
        rc = MPI_Comm_set_errhandler(c->comm, MPI_ERRORS_RETURN);
    if (rc == MPI_SUCCESS)
        rc = MPI_Comm_rank(c->comm, &d->rank);
    if (rc == MPI_SUCCESS)
        rc = MPI_Comm_size(c->comm, &d->size);
    remat_status st = rc == MPI_SUCCESS ? REMAT_OK : mpi_fail("joining MPI_COMM_WORLD", rc);
    if (st == REMAT_OK)
        st = joined_together(c, d, ok);
    if (st != REMAT_OK) {
        if (c->comm != MPI_COMM_NULL)
            MPI_Comm_free(&c->comm);
        rmi_free(c->counts);
        if (c->finalize)
            MPI_Finalize();
        rmi_free(made);
        return st;
    }
    d->ops = &mpi_ops;
    d->ctx = c;
    *joined = true;
    return REMAT_OK;
}

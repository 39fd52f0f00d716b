/* single.c — the group of one rank: a build without MPI, a run outside
 * mpirun, and d = NULL. Gathers copy; there is nobody to send to. */
#include <string.h>

#include "core/assert.h"
#include "dist/dist_impl.h"

static remat_status single_gatherv(remat_dist *d, int root, const double *mine, const int64_t *count,
                                   const int64_t *displ, double *all)
{
    if (all && count[0] > 0)
        memcpy(all + displ[0], mine, (size_t)count[0] * sizeof *all);
    return REMAT_OK;
}

static remat_status single_bcast(remat_dist *d, int root, void *buf, size_t bytes) { return REMAT_OK; }

static remat_status single_send(remat_dist *d, int to, const double *buf, int64_t n)
{
    REMAT_UNREACHABLE("dist: a one-rank group sends to nobody");
}

static remat_status single_recv(remat_dist *d, int from, double *buf, int64_t n)
{
    REMAT_UNREACHABLE("dist: a one-rank group receives from nobody");
}

static remat_status single_allreduce_min_int(remat_dist *d, int *v, int n) { return REMAT_OK; }

static void single_abort_job(remat_dist *d, int code)
{
    REMAT_UNREACHABLE("dist: a one-rank group is never out of step");
}

static void single_close(remat_dist *d) {}

const remat_dist_ops rmi_dist_single_ops = {
    .kind = "single",
    .gatherv = single_gatherv,
    .bcast = single_bcast,
    .send = single_send,
    .recv = single_recv,
    .allreduce_min_int = single_allreduce_min_int,
    .abort_job = single_abort_job,
    .close = single_close,
};

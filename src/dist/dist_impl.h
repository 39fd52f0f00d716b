/*
 * dist_impl.h (internal) — a process group behind the remat_dist handle.
 *
 * dist.c builds every public function (split, gather, sum, agree) on six
 * primitives of a group; single.c is the group of one rank (any build),
 * mpi.c the MPI one (REMAT_HAVE_MPI), no_mpi.c what a build without MPI
 * has in its place. Only mpi.c includes <mpi.h>.
 */
#ifndef REMAT_DIST_IMPL_H
#define REMAT_DIST_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include "remat/dist.h"

typedef struct remat_dist_ops {
    const char *kind; /* "mpi" or "single" */
    /* the most doubles one gather may move in all (MPI's counts and
     * displacements are ints); 0: no limit */
    int64_t gather_limit;
    /* Each rank sends its count[rank] doubles `mine`; root (or every rank
     * when root < 0) receives count[r] doubles of rank r at all + displ[r]. */
    remat_status (*gatherv)(remat_dist *d, int root, const double *mine, const int64_t *count,
                            const int64_t *displ, double *all);
    remat_status (*bcast)(remat_dist *d, int root, void *buf, size_t bytes);
    remat_status (*send)(remat_dist *d, int to, const double *buf, int64_t n);
    remat_status (*recv)(remat_dist *d, int from, double *buf, int64_t n);
    /* v[0..n) := the least of every rank's v[0..n), on every rank (the
     * opening agreement of every collective, dist.c) */
    remat_status (*allreduce_min_int)(remat_dist *d, int *v, int n);
    /* Ends the whole job (every rank) with exit status code: ranks found
     * out of step, where no status could bring them back. */
    void (*abort_job)(remat_dist *d, int code);
    void (*close)(remat_dist *d);
} remat_dist_ops;

struct remat_dist {
    const remat_dist_ops *ops;
    int rank, size;
    void *ctx; /* the implementation's (mpi.c: its communicator) */
};

extern const remat_dist_ops rmi_dist_single_ops;

/* Joins an MPI job when this process was started as one (mpirun, srun) or
 * MPI is initialised already: fills d and sets *joined. Otherwise (or built
 * without MPI) leaves d alone and *joined false. ok false: the caller could
 * not make its handle (d is its stand-in on the stack): the rank joins all
 * the same, and every rank fails together, the group left again. */
remat_status rmi_dist_mpi_open(int *argc, char ***argv, remat_dist *d, bool ok, bool *joined);

/* The number of ranks a launcher started this process as one of, from its
 * environment (OpenMPI, PMIx, PMI/MPICH, Slurm); 0 when none did. */
int rmi_dist_launched_size(void);

/* remat_dist_split for a group of `size` ranks (tests check every size). */
remat_status rmi_dist_split_n(int size, int64_t n, const double *cost, int *owner);

#endif

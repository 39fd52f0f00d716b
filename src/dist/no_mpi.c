/* no_mpi.c — a build without MPI (-Dmpi=disabled, or none found): every
 * process is a group of one rank. Started by a launcher as one of several
 * ranks, each copy would run the whole job alone and write the same
 * outputs: that is refused. */
#include "core/error.h"
#include "dist/dist_impl.h"

remat_status rmi_dist_mpi_open(int *argc, char ***argv, remat_dist *d, bool ok, bool *joined)
{
    (void)ok; /* one rank: nobody waits for it */
    *joined = false;
    int size = rmi_dist_launched_size();
    if (size > 1)
        return rmi_error(REMAT_ERR_UNSUPPORTED, "started as one of %d ranks (mpirun/srun), but remat was built "
                         "without MPI: configure with -Dmpi=enabled where MPI is installed (Debian: "
                         "libopenmpi-dev), or run one process", size);
    return REMAT_OK;
}

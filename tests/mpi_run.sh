#!/usr/bin/env bash
# mpi_run.sh HAVE_MPI NP TIMEOUT PROGRAM [ARGS...] — PROGRAM on NP ranks on
# this machine (mpirun --oversubscribe: CI has fewer cores than ranks),
# killed after TIMEOUT seconds (a rank that hangs in a collective must not
# hang the suite). REMAT_TEST_NP=NP tells the program how many ranks to
# expect. HAVE_MPI 0 (built without MPI): skipped, exit 77, reason printed.
set -u
[ $# -ge 4 ] || { echo "usage: mpi_run.sh HAVE_MPI NP TIMEOUT PROGRAM [ARGS...]" >&2; exit 2; }
have=$1 np=$2 limit=$3
shift 3
if [ "$have" != 1 ]; then
    echo "mpi_run: remat was built without MPI (-Dmpi=disabled, or no MPI found): skipped"
    exit 77
fi
command -v mpirun >/dev/null || { echo "mpi_run: remat was built with MPI but mpirun is not on PATH" >&2; exit 1; }
if [ "$(id -u)" -eq 0 ]; then # OpenMPI refuses root unless told twice
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export REMAT_TEST_NP=$np
# loopback only, shared memory between ranks; no CMA (containers forbid ptrace)
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_rmaps_base_oversubscribe=1
# Under AddressSanitizer: OpenMPI keeps allocations of its plugins (dlclosed
# at MPI_Finalize, so LeakSanitizer cannot name them for a suppression) to
# the end; leaks are checked in the one-rank runs (test 'dist', the CLI
# suites), memory errors here too.
[ -n "${ASAN_OPTIONS+x}" ] && export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
timeout --kill-after=5 "$limit" mpirun --oversubscribe -np "$np" -x REMAT_TEST_NP "$@"
rc=$?
[ $rc -eq 124 ] && echo "mpi_run: $* on $np ranks did not finish within ${limit}s: killed" >&2
exit $rc

#!/usr/bin/env bash
# gas_delay_mpi.sh MPI_RUN HAVE_MPI REMAT DATA — ignition delays through the
# many-process path: a profile and a three-row delay table (one experiment
# per row) on gas_ab.yaml fitted on 2 and 3 ranks gives one process's JSON (lm: bitwise,
# contract 4 of docs/design-notes.md), every experiment's fitted delay
# included: rank 0 prints those the other ranks evaluated too (gathered by
# remat_fit_delays), never "fitted": null.
set -u
MPI_RUN=$1 HAVE=$2 REMAT=$3 DATA=$4
if [ "$HAVE" != 1 ]; then
    echo "gas_delay_mpi: remat was built without MPI: skipped"
    exit 77
fi
DATA=$(cd "$DATA" && pwd)
. "$(dirname "$0")/lib.sh"
cd "$work"
# a profile first (rank 0 owns it alone on 2 ranks: no delay program there),
# then three delays
printf '# T = 1000\n# A = 1\nt,A,B\n2e-4,0.9,0.1\n4e-4,0.8,0.2\n6e-4,0.7,0.3\n8e-4,0.6,0.4\n' >profile.csv
printf '# A = 1\ntau,T\n1e-3,1000\n8e-4,1050\n6e-4,1100\n' >table.csv
args=(pfr fit --mechanism "$DATA/gas_ab.yaml" --data profile.csv --data table.csv --free m1 --max-iters 3 --json)
lacks() { ! grep -qF -- "$2" "$1" || { echo "     '$2' in $1" >&2; false; }; }
nowall() { sed -E 's/"seconds": [-0-9.eE+]+/"seconds": -/' "$1"; }
"$REMAT" "${args[@]}" >one.json 2>one.err
rc=$?
check "one process exits 0 or 3 (results printed)" test $rc -eq 0 -o $rc -eq 3
check "one process gives three fitted delays" test "$(grep -o '"fitted": [0-9]' one.json | wc -l)" -eq 3
for np in 2 3; do
    "$MPI_RUN" 1 $np 60 "$REMAT" "${args[@]}" >np$np.json 2>np$np.err
    rc=$?
    check "$np ranks exit 0 or 3" test $rc -eq 0 -o $rc -eq 3
    check "$np ranks: no delay printed as null" lacks np$np.json '"fitted": null'
    check "$np ranks give one process's JSON" same <(nowall one.json) <(nowall np$np.json)
done
exit $fail

#!/usr/bin/env bash
# conditions_mpi.sh MPI_RUN HAVE_MPI REMAT ARRHENIUS — conditions through the
# many-process path: the three-temperature fit of examples/arrhenius named by
# a --data-list (each file's '# T = ...' read on every rank) gives on 2 and 3
# ranks the JSON of one process without mpirun (lm: bitwise, contract 4 of
# docs/design-notes.md), its conditions listed per experiment.
set -u
MPI_RUN=$1 HAVE=$2 REMAT=$3 ARR=$4
if [ "$HAVE" != 1 ]; then
    echo "conditions_mpi: remat was built without MPI: skipped"
    exit 77
fi
ARR=$(cd "$ARR" && pwd)
. "$(dirname "$0")/lib.sh"
cd "$work"
printf '%s\n' "$ARR/T330.csv" "$ARR/T350.csv" "$ARR/T370.csv" >list.txt
args=(pfr fit --mechanism "$ARR/arrhenius.mech" --data-list list.txt --method rk4 --steps 20 --json)
nowall() { sed -E 's/"seconds": [-0-9.eE+]+/"seconds": -/' "$1"; }
"$REMAT" "${args[@]}" >one.json 2>one.err
check "one process exits 0" test $? -eq 0
check "one process lists the conditions" grep -qF '"conditions": [{"T": 330}, {"T": 350}, {"T": 370}]' one.json
for np in 2 3; do
    "$MPI_RUN" 1 $np 60 "$REMAT" "${args[@]}" >np$np.json 2>np$np.err
    check "$np ranks exit 0" test $? -eq 0
    check "$np ranks give one process's JSON" same <(nowall one.json) <(nowall np$np.json)
done
exit $fail

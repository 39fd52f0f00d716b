#!/usr/bin/env bash
# ensemble_mpi.sh MPI_RUN HAVE_MPI REMAT — `remat pfr ensemble` under mpirun
# (through tests/mpi_run.sh):
#   - the CSV is byte for byte the single process's on 1, 2 and 4 ranks
#     (several rounds, a short last chunk, ranks without a chunk);
#   - a bad row on 4 ranks: one message naming file:line and column, every
#     rank non-zero (mpirun's status), no output file and no temp file;
#   - a rank killed mid-run: mpirun ends non-zero within the time limit,
#     naming the rank, and neither the output file nor a temp file appears
#     (rank 0's output has no name until it commits: O_TMPFILE, cli_out.c).
# Skipped (77) in a build without MPI.
# Byte comparisons rest on contracts 4 and 5 (docs/design-notes.md, "Bitwise contracts").
set -u
MPI_RUN=$1 HAVE_MPI=$2 REMAT=$3
if [ "$HAVE_MPI" != 1 ]; then
    echo "ensemble_mpi: remat was built without MPI: skipped"
    exit 77
fi
. "$(dirname "$0")/lib.sh"
cd "$work" || exit 1
status() { test "$1" -eq "$2" || { echo "     exit status $1, expected $2" >&2; false; }; }
only() { # the directory holds exactly these names
    local got
    got=$(ls -A | sort | tr '\n' ' ' | sed 's/ $//')
    [ "$got" = "$*" ] || { echo "     files: '$got', expected '$*'" >&2; false; }
}

awk 'BEGIN { srand(12); print "k2,k1"; for (i = 0; i < 700; i++) printf "%.6g,%.6g\n", 0.1 + 1.9 * rand(), 0.1 + 3.9 * rand() }' >p.csv
args=(pfr ensemble --steps 200 --batch 64 --params-file p.csv)
mkdir out && cd out || exit 1
"$REMAT" "${args[@]/p.csv/../p.csv}" --out ../ref.csv 2>../ref.err
check "single process: exits 0" status $? 0
for np in 1 2 4; do
    "$MPI_RUN" 1 $np 60 "$REMAT" "${args[@]/p.csv/../p.csv}" --out np$np.csv >../np$np.out 2>../np$np.err
    check "$np ranks: exits 0" status $? 0
    check "$np ranks: the single process's file, byte for byte" cmp ../ref.csv np$np.csv
    check "$np ranks: stdout empty" test ! -s ../np$np.out
    rm -f np$np.csv
done
check "701 lines (header and 700 sets)" test "$(wc -l <../ref.csv)" -eq 701

# a bad row in the third round of 4 x 64 sets
awk 'NR == 600 { print "0.5,x1"; next } { print }' ../p.csv >../bad.csv
"$MPI_RUN" 1 4 60 "$REMAT" "${args[@]/p.csv/../bad.csv}" --out bad_out.csv >../bad.out 2>../bad.err
rc=$?
check "bad row on 4 ranks: non-zero" test $rc -ne 0 -a $rc -ne 124
check "bad row: the message names file:line and column" has ../bad.err "bad.csv:600: column 'k1': 'x1' is not a finite number"
check "bad row: said once" test "$(grep -c 'is not a finite number' ../bad.err)" -eq 1
check "bad row: no output or temp file" only

# a rank killed mid-run: a long run (20000 sets, 400000 steps: seconds per rank), rank 2 killed after a second
awk 'BEGIN { srand(5); print "k1,k2"; for (i = 0; i < 20000; i++) printf "%.6g,%.6g\n", 0.1 + rand(), 0.1 + rand() }' >../long.csv
# mpirun sends SIGTERM to the other ranks, then SIGKILL after
# odls_base_sigkill_timeout (1 s): on a loaded machine rank 0 may not run its
# handler (which removes the temp file) within 1 s, so give it 10
export OMPI_MCA_odls_base_sigkill_timeout=10
"$MPI_RUN" 1 4 60 "$REMAT" pfr ensemble --steps 400000 --batch 256 --params-file ../long.csv --out killed.csv \
    >../killed.out 2>../killed.err &
runner=$!
victim=""
descends() { # PID PARENT: PID is PARENT or below it
    local p=$1
    while [ -n "$p" ] && [ "$p" -gt 1 ]; do
        [ "$p" = "$2" ] && return 0
        p=$(awk '{ print $4 }' "/proc/$p/stat" 2>/dev/null)
    done
    return 1
}
for _ in $(seq 100); do # rank 2 of this run (not another test's): below $runner, its environment says so
    for p in $(pgrep -x remat); do
        if descends "$p" $runner && tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=2'; then
            victim=$p
        fi
    done 2>/dev/null
    [ -n "$victim" ] && break
    sleep 0.1
done
sleep 1
check "killed rank: found rank 2" test -n "$victim"
killed=0
[ -n "$victim" ] && kill -9 "$victim" 2>/dev/null && killed=1
check "killed rank: killed while the run was going (else make the run longer)" test $killed = 1
wait $runner
rc=$?
check "killed rank: mpirun ends non-zero, not by the time limit" test $rc -ne 0 -a $rc -ne 124
check "killed rank: the message names the rank" has ../killed.err "rank 2"
check "killed rank: no output file" test ! -e killed.csv
check "killed rank: no temp file left either" test -z "$(ls killed.csv.tmp.* 2>/dev/null)"
[ $fail = 0 ] || cat ../killed.err >&2
exit $fail

#!/usr/bin/env bash
# dist_alloc_fail.sh MPI_RUN HAVE_MPI REMAT EXAMPLES MAKE_EXPERIMENTS — one
# rank out of memory under mpirun (remat_dist_init's hook
# REMAT_TEST_ALLOC_FAIL=R:K: rank R's allocation K inside remat fails, once):
# for K spread over a whole run, on 2 ranks, `remat pfr fit` (4 synthetic
# experiments), `remat mlp train` and `remat pfr ensemble` either
#   - finish as without the hook (the allocation had a fallback with the
#     same bits, or K was past the run's last), the same output; or
#   - end, within the wrapper's limit (not killed by it), non-zero, with one
#     message (rank 0 says it; naming rank R when R is another) and nothing
#     on stdout. (Most say "out of memory"; some say what a library made of a
#     failed allocation, e.g. "input must have a features axis (got rank
#     -1)" from the network's set-up: that is the library's own message.)
# Before every collective agreed on its own preparation and the commands on
# theirs, such a rank returned while the others waited in MPI: killed at
# the limit. At least one K of each command must hit an allocation.
# The same output rests on contracts 1, 2 and 4 (docs/design-notes.md, "Bitwise contracts").
set -u
MPI_RUN=$1 HAVE=$2 REMAT=$3 EX=$4 GEN=$5
if [ "$HAVE" != 1 ]; then
    echo "dist_alloc_fail: remat was built without MPI: skipped"
    exit 77
fi
EX=$(cd "$EX" && pwd)
case $GEN in /*) ;; *) GEN=$PWD/$GEN ;; esac
. "$(dirname "$0")/lib.sh"
cd "$work"
mkdir exps
"$GEN" "$EX/van_de_vusse.mech" exps 4 >/dev/null || { echo "make_experiments failed"; exit 1; }
printf 'k1,k2\n' >sets.csv
for i in $(seq 1 40); do printf '0.%s,%s\n' "$((10 + i))" "$((4 + i % 3))" >>sets.csv; done
nowall() { sed -E 's/"seconds": [-0-9.eE+]+/"seconds": -/' "$1"; }
lines() { test "$(grep -c -- "$2" "$1")" -eq "$3" || { echo "     not $3 lines with '$2' in $1:" >&2; sed 's/^/     | /' "$1" >&2; false; }; }

declare -A args=(
    [fit]="pfr fit --mechanism $EX/van_de_vusse.mech --data-list exps/list.txt --json"
    [mlp]="mlp train --epochs 1 --layers 1 --width 8 --batch 64 --json"
    [ensemble]="pfr ensemble --mechanism $EX/van_de_vusse.mech --init A=1 --params-file sets.csv --batch 16"
)
for cmd in fit mlp ensemble; do
    # shellcheck disable=SC2086
    "$MPI_RUN" 1 2 60 "$REMAT" ${args[$cmd]} >$cmd.ref 2>$cmd.ref.err
    check "$cmd on 2 ranks without the hook exits 0" test $? -eq 0 -a -s $cmd.ref
    nowall $cmd.ref >$cmd.ref.cmp
    hit=0
    for at in 1:0 1:1 1:3 1:10 1:30 1:100 1:300 1:1000 1:3000 1:10000 0:30 0:1000; do
        start=$(date +%s)
        # shellcheck disable=SC2086
        REMAT_TEST_ALLOC_FAIL=$at "$MPI_RUN" 1 2 60 "$REMAT" ${args[$cmd]} >$cmd.$at.out 2>$cmd.$at.err
        rc=$?
        took=$(($(date +%s) - start))
        if [ $rc -eq 0 ]; then
            nowall $cmd.$at.out >$cmd.$at.cmp
            check "$cmd, allocation ${at#*:} of rank ${at%%:*} failing: finished, the same output" \
                cmp $cmd.ref.cmp $cmd.$at.cmp
            continue
        fi
        hit=1
        check "$cmd, allocation ${at#*:} of rank ${at%%:*} failing: the job ends (exit $rc, ${took} s), not by the limit" \
            test $rc -ne 124 -a $rc -ne 137
        if [ "${at%%:*}" = 0 ]; then # rank 0 speaks: its own message as it is
            check "  says why once" lines $cmd.$at.err "^remat: " 1
        else
            check "  says why once, naming rank ${at%%:*}" lines $cmd.$at.err "^remat: .*rank ${at%%:*}: " 1
        fi
        check "  nothing on stdout" test ! -s $cmd.$at.out
    done
    check "$cmd: some allocation of the sweep failed the job" test $hit -eq 1
done
exit $fail

#!/usr/bin/env bash
# dist_out_of_step.sh MPI_RUN HAVE_MPI PROGRAM — tests/dist_out_of_step.c on
# 2 ranks: ranks in different collectives (one returned early, or took
# another path) end the job within the wrapper's limit, rank 0 naming the
# two collectives; before, they waited for each other until killed.
set -u
MPI_RUN=$1 HAVE=$2 PROG=$3
if [ "$HAVE" != 1 ]; then
    echo "dist_out_of_step: remat was built without MPI: skipped"
    exit 77
fi
REMAT=$PROG
. "$(dirname "$0")/cli/lib.sh"
for case in "gather-agree:remat_dist_agree while others called remat_dist_gather" \
    "early-return:remat_dist_bcast while others called remat_dist_finalize"; do
    mode=${case%%:*} want=${case#*:}
    start=$(date +%s)
    "$MPI_RUN" 1 2 60 "$PROG" "$mode" >"$work/$mode.out" 2>"$work/$mode.err"
    rc=$?
    check "$mode: the job fails (exit $rc), not by the timeout" test $rc -ne 0 -a $rc -ne 124 -a $rc -ne 137
    check "$mode: within 30 s" test $(($(date +%s) - start)) -le 30
    check "$mode: rank 0 says the ranks are out of step" has "$work/$mode.err" "ranks out of step"
    check "$mode: and names both collectives" has "$work/$mode.err" "$want"
    check "$mode: no rank went on" test "$(grep -c 'went on' "$work/$mode.err")" -eq 0
done
exit $fail

#!/usr/bin/env bash
# ranks_inputs.sh MPI_RUN HAVE_MPI REMAT EXAMPLES DIGITS — `remat pfr fit`
# and `remat mlp train` under mpirun when a rank reads other input than rank 0 (a node whose copy
# of a file differs): every rank runs the command in its own directory
# (rank$R, chosen by a wrapper from OMPI_COMM_WORLD_RANK) with the same
# relative paths. Once such a job fitted other data on each rank and printed
# a wrong fit with exit 0. Now:
#   - --data that differs on rank 1 of 2: exit non-zero, nothing on stdout,
#     one message naming the file and "rank 1";
#   - differing on ranks 1 and 3 of 4: the message says "ranks 1, 3";
#   - a --mechanism that differs (one parameter's start value): named;
#   - a --data-list naming two files on rank 1 and one on rank 0: the list named;
#   - the same files on every rank: the fit of a run without mpirun;
#   - mlp train with --data differing on rank 1 of 2: refused, named;
#   - pfr ensemble with a --mechanism differing on rank 1 (rank 0 alone
#     reads --params-file): refused, named.
# Skipped (77) in a build without MPI.
set -u
MPI_RUN=$1 HAVE_MPI=$2 REMAT=$3 EX=$4 DIGITS=$5
if [ "$HAVE_MPI" != 1 ]; then
    echo "ranks_inputs: remat was built without MPI: skipped"
    exit 77
fi
EX=$(cd "$EX" && pwd)
. "$(dirname "$0")/lib.sh"
cd "$work" || exit 1
printf '#!/bin/sh\ncd "%s/rank${OMPI_COMM_WORLD_RANK:-0}" && exec "%s" "$@"\n' "$work" "$REMAT" >wrap.sh
chmod +x wrap.sh
for r in 0 1 2 3; do
    mkdir rank$r
    cp "$EX/van_de_vusse.mech" rank$r/model.mech
    cp "$EX/feed_5.csv" rank$r/feed.csv
    printf 'feed.csv\n' >rank$r/list.txt
done
other() { # FILE: one measured value changed (the second row's A)
    awk -F, -v OFS=, 'NR == 3 { $2 = $2 * 1.3 } { print }' "$1" >"$1.tmp" && mv "$1.tmp" "$1"
}
fit() { # NP OUT, then the fit's options
    local np=$1 out=$2
    shift 2
    "$MPI_RUN" 1 "$np" 60 "$work/wrap.sh" pfr fit --mechanism model.mech "$@" >"$out" 2>"$out.err"
}
failed() { # OUT STATUS: non-zero, and nothing on stdout
    if [ "$2" -eq 0 ]; then
        echo "     exit 0" >&2
        return 1
    fi
    if [ -s "$1" ]; then
        echo "     stdout:" >&2
        sed 's/^/     | /' "$1" >&2
        return 1
    fi
}
once() { [ "$(grep -c "^remat: " "$1")" -eq 1 ] || { sed 's/^/     | /' "$1" >&2; false; }; }

(cd rank0 && exec "$REMAT" pfr fit --mechanism model.mech --data feed.csv) >alone.out 2>alone.err
fit 2 same.out --data feed.csv
check "the same files on 2 ranks: exit 0" test $? -eq 0
nowall() { sed -E 's/program runs, [0-9.]+ s$/program runs/' "$1" >"$1.cmp"; }
nowall alone.out
nowall same.out
check "the same files on 2 ranks: the fit without mpirun (wall time aside)" same alone.out.cmp same.out.cmp

other rank1/feed.csv
fit 2 data.out --data feed.csv
failed_st=$?
check "--data differing on rank 1: fails, prints no fit" failed data.out $failed_st
check "--data differing on rank 1: named with the rank" has data.out.err \
    "remat: --data feed.csv: differs between ranks: rank 1 read other content than rank 0"
check "--data differing on rank 1: said once" once data.out.err

other rank3/feed.csv
fit 4 data4.out --data feed.csv
failed_st=$?
check "--data differing on ranks 1 and 3 of 4: fails" failed data4.out $failed_st
check "--data differing on ranks 1 and 3 of 4: both named" has data4.out.err "differs between ranks: ranks 1, 3 read"
cp rank0/feed.csv rank1/feed.csv
cp rank0/feed.csv rank3/feed.csv

sed -i 's/^param k1 = 0.1 /param k1 = 0.2 /' rank1/model.mech
grep -q '^param k1 = 0.2 ' rank1/model.mech || { echo "FAIL: the mechanism's param line was not found to change"; exit 1; }
fit 2 mech.out --data feed.csv
failed_st=$?
check "--mechanism differing on rank 1: fails" failed mech.out $failed_st
check "--mechanism differing on rank 1: named" has mech.out.err "remat: --mechanism model.mech: differs between ranks: rank 1"
cp rank0/model.mech rank1/model.mech

cp rank1/feed.csv rank1/feed2.csv
printf 'feed.csv\nfeed2.csv\n' >rank1/list.txt
fit 2 list.out --data-list list.txt
failed_st=$?
check "--data-list naming more files on rank 1: fails" failed list.out $failed_st
check "--data-list naming more files on rank 1: the list named" has list.out.err \
    "remat: --data-list list.txt: differs between ranks: rank 1"

printf 'k1,k2\n0.5,1\n0.7,2\n' >rank0/p.csv
sed -i 's/^param k1 = 0.1 /param k1 = 0.2 /' rank1/model.mech
"$MPI_RUN" 1 2 60 "$work/wrap.sh" pfr ensemble --mechanism model.mech --init A=5 --steps 50 --params-file p.csv \
    >ens.out 2>ens.out.err
failed_st=$?
check "pfr ensemble --mechanism differing on rank 1: fails, writes no row" failed ens.out $failed_st
check "pfr ensemble --mechanism differing on rank 1: named" has ens.out.err \
    "remat: pfr ensemble: --mechanism model.mech: differs between ranks: rank 1 read other content than rank 0"
cp rank0/model.mech rank1/model.mech
"$MPI_RUN" 1 2 60 "$work/wrap.sh" pfr ensemble --mechanism model.mech --init A=5 --steps 50 --params-file p.csv \
    >ens_same.out 2>ens_same.out.err
check "pfr ensemble with the same files on 2 ranks: exit 0 and rows" test $? -eq 0 -a -s ens_same.out

cp "$DIGITS" rank0/digits.csv
awk -F, -v OFS=, 'NR == 2 { $1 = $1 + 1 } { print }' "$DIGITS" >rank1/digits.csv
"$MPI_RUN" 1 2 60 "$work/wrap.sh" mlp train --data digits.csv --epochs 1 --layers 1 --width 16 >mlp.out 2>mlp.out.err
failed_st=$?
check "mlp train --data differing on rank 1: fails" test $failed_st -ne 0
check "mlp train --data differing on rank 1: named" has mlp.out.err \
    "remat: --data digits.csv: differs between ranks: rank 1 read other content than rank 0"
check "mlp train --data differing on rank 1: no epoch trained" test "$(grep -c '^epoch' mlp.out)" -eq 0
exit $fail

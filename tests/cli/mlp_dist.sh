#!/usr/bin/env bash
# mlp_dist.sh HAVE_MPI REMAT — `remat mlp train` data-parallel under MPI:
#   - --shards K: one process and mpirun -np 1, 2, 3, 4 (3 does not divide
#     K = 4: contiguous runs of shards) write the same --save-weights file
#     to the bit, and the same --json (seconds and rank count aside);
#   - without --shards, two ranks train as one process with --shards 8;
#   - errors said once, by rank 0, every rank exiting non-zero: too few
#     shards for the ranks, more shards than rows, a batch the default
#     shards or the ranks do not fit, an unreadable --data;
#   - a rank killed mid-run ends the job within seconds, naming the rank,
#     and leaves no weights file (written by rank 0 only at the very end).
# HAVE_MPI 0 (built without MPI): skipped, exit 77. The launcher's settings
# are tests/mpi_run.sh's: loopback and shared memory, oversubscribed.
# Byte comparisons rest on contract 4 (docs/design-notes.md, "Bitwise contracts").
set -u
if [ "$1" != 1 ]; then
    echo "mlp_dist: remat was built without MPI (-Dmpi=disabled, or no MPI found): skipped"
    exit 77
fi
REMAT=$2
. "$(dirname "$0")/lib.sh"
command -v mpirun >/dev/null || { echo "mlp_dist: remat was built with MPI but mpirun is not on PATH" >&2; exit 1; }
if [ "$(id -u)" -eq 0 ]; then # OpenMPI refuses root unless told twice
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1
# Under ASan, no leak check of the ranks: OpenMPI's allocations outlive
# MPI_Finalize, many from MCA components it has unloaded by then (frames of
# no module, which no suppression can name). The one-process runs here and
# cli_mlp_outputs check the same code for leaks.
MPIRUN=(env ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" mpirun --oversubscribe)
mpi() { local n=$1; shift; timeout --kill-after=5 60 "${MPIRUN[@]}" -np "$n" "$REMAT" "$@"; }
strip() { sed 's/"seconds": [0-9.e+-]*//; s/"ranks": [0-9]*//' "$1"; }
lines() { test "$(grep -c -- "$2" "$1")" -eq "$3" || { echo "     not $3 lines with '$2' in $1:" >&2; sed 's/^/     | /' "$1" >&2; false; }; }
cd "$work"

# ---- the same bits on any number of ranks ----
net="--epochs 2 --layers 1 --width 16" # an option is given once: --batch apart for the runs that change it
small="$net --batch 30"
"$REMAT" mlp train $small --shards 4 --save-weights one.csv --json >one.json 2>one.err
check "one process --shards 4 exits 0" test $? -eq 0
check "weights file: header and one row per parameter" test "$(head -n 1 one.csv)" = "parameter,index,value" -a \
    "$(wc -l <one.csv)" -eq $(($(sed -n 's/.*"parameters": \([0-9]*\).*/\1/p' one.json) + 1))
for n in 1 2 3 4; do
    mpi $n mlp train $small --shards 4 --save-weights np$n.csv --json >np$n.json 2>np$n.err
    check "-np $n --shards 4 exits 0" test $? -eq 0
    check "-np $n: weights equal one process's to the bit" cmp one.csv np$n.csv
    check "-np $n: json equals one process's (seconds, ranks aside)" cmp <(strip one.json) <(strip np$n.json)
    check "-np $n: json says $n ranks" has np$n.json "\"ranks\": $n,"
    check "-np $n: nothing on stderr" test ! -s np$n.err
done
"$REMAT" mlp train $small --save-weights whole.csv >whole.txt 2>&1
check "whole batches differ from 4 micro-shards in the last bits" test "$(cat whole.csv)" != "$(cat one.csv)"
mpi 2 mlp train $small --save-weights def2.csv >def2.txt 2>def2.err
check "-np 2 without --shards exits 0" test $? -eq 0
check "-np 2 without --shards: 8 micro-shards" has def2.txt "each batch in 8 micro-shards summed in shard order, over 2 ranks (mpi)"
check "rank 0 alone prints" lines def2.txt '^final test accuracy' 1
"$REMAT" mlp train $small --shards 8 --save-weights one8.csv >/dev/null 2>&1
check "-np 2's default = one process with --shards 8" cmp one8.csv def2.csv

# ---- the whole-step budget under a group: one choice (rank 0's times), held ----
mpi 2 mlp train --epochs 1 --layers 4 --width 16 --shards 2 --memory-budget 30k --save-weights budget.safetensors >b2.txt 2>b2.err
check "-np 2 --memory-budget exits 0" test $? -eq 0
check "  rank 0 alone names the choice" lines b2.txt '^memory budget 30720 bytes: chose ' 1
peak=$(sed -n 's/^whole-step peak (arena with snapshots and tapes) [0-9]* predicted \/ \([0-9]*\) measured.*/\1/p' b2.txt)
check "  measured peak ($peak) <= the budget" test -n "$peak" -a "${peak:-99999}" -le 30720
mpi 2 mlp train --epochs 1 --layers 4 --width 16 --shards 2 --memory-budget 1k >b3.txt 2>b3.err
check "-np 2 a budget too small exits 1" test $? -eq 1
check "  said once, naming the smallest peak" lines b3.err '^remat: --memory-budget: 1024 bytes is too small for the training step: the smallest predicted peak of the 35 candidates is [0-9]* bytes' 1

# ---- errors: once, every rank non-zero ----
mpi 4 mlp train $small --shards 2 >few.out 2>few.err
check "--shards 2 on 4 ranks exits 2" test $? -ne 0
check "  says why once" lines few.err '^remat: --shards: 2 micro-shards over 4 ranks; give every rank at least one (--shards 4 or more)$' 1
mpi 2 mlp train $small --shards 31 >many.out 2>many.err
check "--shards 31 of a batch of 30 exits non-zero" test $? -ne 0
check "  says why once" lines many.err '^remat: --shards: 31 micro-shards of a batch of 30 rows; give at most one per row$' 1
"$REMAT" mlp train $small --shards 0 >zero.out 2>zero.err
check "--shards 0 exits 2" test $? -eq 2
check "  names --shards" has zero.err "remat: --shards: 0 is out of range"
mpi 2 mlp train $net --batch 4 >defbig.out 2>defbig.err
check "-np 2 --batch 4 (the default 8 shards do not fit) exits 2" test $? -eq 2
check "  says what fits, once" lines defbig.err '^remat: --shards: the default under mpirun, 8 micro-shards, exceeds the batch of 4 rows; give --shards K with 2 <= K <= 4, or --batch 8 or more$' 1
mpi 3 mlp train $net --batch 2 >tiny.out 2>tiny.err
check "-np 3 --batch 2 (no shard count fits) exits 2" test $? -eq 2
check "  names --batch, once" lines tiny.err '^remat: --batch: a batch of 2 rows over 3 ranks; give every rank a row at least (--batch 3 or more)$' 1
mpi 2 mlp train $small --data "$work/missing.csv" >nodata.out 2>nodata.err
check "unreadable --data on 2 ranks exits non-zero" test $? -ne 0
check "  said once, naming the file" lines nodata.err "^remat: --data: .*missing.csv" 1
check "  without a rank: every rank failed alike" lines nodata.err "rank 0" 0
check "  no partial output" test ! -s nodata.out

# ---- a killed rank ----
"${MPIRUN[@]}" -np 2 "$REMAT" mlp train --epochs 100000 --layers 1 --width 8 --save-weights killed.csv \
    >killed.out 2>killed.err &
launcher=$!
for _ in $(seq 100); do grep -q '^epoch' killed.out 2>/dev/null && break; sleep 0.1; done
ranks=($(ps -o pid= --ppid $launcher))
check "two ranks under the launcher" test ${#ranks[@]} -eq 2
kill -9 "${ranks[1]}" 2>/dev/null
for _ in $(seq 150); do kill -0 $launcher 2>/dev/null || break; sleep 0.1; done
if kill -0 $launcher 2>/dev/null; then
    check "killed rank: the job ends within 15 s" false
    kill -9 $launcher
fi
wait $launcher
check "killed rank: non-zero exit" test $? -ne 0
check "killed rank: the launcher names rank 1" has killed.err "rank 1"
check "killed rank: no weights file, no temp file" test -z "$(ls killed.csv* 2>/dev/null)"
exit $fail

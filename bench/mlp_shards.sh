#!/bin/sh
# mlp_shards.sh — what micro-shards cost: `remat mlp train --json` on the
# shipped digits with whole batches and with --shards K, interleaved run by
# run, every run on CPU 1 with one OpenBLAS thread. Prints per variant the
# median and min of the summed epoch seconds (training steps and accuracy
# passes; start-up and data loading aside) and the median's ratio to whole
# batches.
#
#   bench/mlp_shards.sh [remat binary]      (default build/tools/remat)
#   RUNS=7, EPOCHS=10, SHARDS="1 2 4 8", ARGS="" (more train options: --batch 128 ...)
set -eu
REMAT=${1:-build/tools/remat}
RUNS=${RUNS:-7}
EPOCHS=${EPOCHS:-10}
SHARDS=${SHARDS:-1 2 4 8}
ARGS=${ARGS:-}
export OPENBLAS_NUM_THREADS=1
[ -x "$REMAT" ] || { echo "mlp_shards.sh: no executable '$REMAT'" >&2; exit 2; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT INT TERM
# the summed "seconds" of a --json history
secs() { sed -n 's/.*"seconds": \([0-9.]*\).*/\1/p' "$1" | awk '{ s += $1 } END { printf "%.6f\n", s }'; }
for r in $(seq "$RUNS"); do
    for v in whole $SHARDS; do
        opt=""
        [ "$v" = whole ] || opt="--shards $v"
        # shellcheck disable=SC2086
        taskset -c 1 "$REMAT" mlp train --epochs "$EPOCHS" $ARGS $opt --json >"$TMP/out.json"
        secs "$TMP/out.json" >>"$TMP/$v"
    done
done
base=$(sort -g "$TMP/whole" | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
for v in whole $SHARDS; do
    sort -g "$TMP/$v" | awk -v v="$v" -v b="$base" '{ a[NR] = $1 }
        END { m = a[int((NR + 1) / 2)]; printf "%-6s median %.4f s  min %.4f s  x%.2f\n", v, m, a[1], m / b }'
done

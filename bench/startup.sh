#!/bin/sh
# startup.sh — whole-process time of `remat pfr simulate --json`, the CLI's
# shortest useful run, and of a long one, in the states compiling can be in.
# Prints one JSON object: per binary and variant the median and min in ms,
# of the wall time and (with perf) of the process's CPU time.
#
#   bench/startup.sh [remat binary ...]     (default build/tools/remat)
#   RUNS=20 (short runs per variant), LONG_RUNS=3 (0: no long runs)
#
# Several binaries (say a build before a change and one after) are measured
# interleaved, run by run, like the variants (the machine is noisy); every
# run is on CPU 1 with one OpenBLAS thread. Variants:
#   cold         empty JIT disk cache (a fresh REMAT_CACHE_DIR per run)
#   warm         the cache as an earlier run of the same command left it
#   interpreted  REMAT_NO_JIT=1
#   warm_forced  REMAT_JIT=always over a cache holding the compiled loops
#                (loading them from disk; builds without REMAT_JIT ignore it
#                and compile, so this equals warm there)
#   long_cold / long_interpreted   `--steps 1000000`, empty cache / REMAT_NO_JIT=1
set -eu
[ $# -gt 0 ] || set -- build/tools/remat
RUNS=${RUNS:-20}
LONG_RUNS=${LONG_RUNS:-3}
export OPENBLAS_NUM_THREADS=1
unset REMAT_NO_JIT REMAT_NO_CACHE REMAT_JIT REMAT_CACHE_DEBUG REMAT_CACHE_DIR || true
for b in "$@"; do
    [ -x "$b" ] || { echo "startup.sh: no executable '$b'" >&2; exit 2; }
done
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT INT TERM
SHORT="pfr simulate --json"
LONG="pfr simulate --json --steps 1000000"

# The CPU time of the process too (perf stat's task-clock, children such as
# gcc's assembler included, when perf runs here; a run of its own, as perf's
# start would count in the wall time): on a shared machine the wall time
# counts the waits for the CPU.
PERF=""
if command -v perf >/dev/null && perf stat -x, -e task-clock -o "$TMP/p" true 2>/dev/null; then
    PERF=1
fi
# one timed run, then (with perf) one more for the CPU time: binary index,
# its path, variant, arguments, then env assignments
timed() {
    i=$1 bin=$2 v=$3 args=$4; shift 4
    t0=$(date +%s%N)
    env "$@" taskset -c 1 "$bin" $args >/dev/null 2>"$TMP/err" || { cat "$TMP/err" >&2; exit 1; }
    t1=$(date +%s%N)
    echo "$(( (t1 - t0) / 1000 ))" >>"$TMP/t.$i.$v"
    [ -n "$PERF" ] || return 0
    [ "$v" != cold ] && [ "$v" != long_cold ] || { rm -rf "$TMP/cold"; mkdir "$TMP/cold"; }
    env "$@" perf stat -x, -e task-clock -o "$TMP/p" taskset -c 1 "$bin" $args >/dev/null 2>"$TMP/err" ||
        { cat "$TMP/err" >&2; exit 1; }
    awk -F, '$3 == "task-clock" { printf "%d\n", $1 * 1000 }' "$TMP/p" >>"$TMP/c.$i.$v"
}
# median and min (ms) of a file of microseconds
med() {
    sort -n "$1" | awk '{a[NR]=$1} END {m = NR % 2 ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2;
        printf "%.2f, \"%s_min_ms\": %.2f", m / 1000, "'"$2"'", a[1] / 1000}'
}
# one binary's variant: wall and (with perf) CPU medians
stat() {
    printf '{"wall_median_ms": %s' "$(med "$TMP/t.$1.$2" wall)"
    [ -z "$PERF" ] || printf ', "cpu_median_ms": %s' "$(med "$TMP/c.$1.$2" cpu)"
    printf ', "runs": %d}' "$(wc -l <"$TMP/t.$1.$2")"
}

i=0
for b in "$@"; do
    i=$((i + 1))
    mkdir -p "$TMP/warm.$i" "$TMP/forced.$i"
    env REMAT_CACHE_DIR="$TMP/warm.$i" "$b" $SHORT >/dev/null                    # what a default run stores
    env REMAT_CACHE_DIR="$TMP/forced.$i" REMAT_JIT=always "$b" $SHORT >/dev/null # the compiled loops on disk
done
for r in $(seq "$RUNS"); do
    i=0
    for b in "$@"; do
        i=$((i + 1))
        rm -rf "$TMP/cold"; mkdir "$TMP/cold"
        timed $i "$b" cold "$SHORT" REMAT_CACHE_DIR="$TMP/cold"
        timed $i "$b" warm "$SHORT" REMAT_CACHE_DIR="$TMP/warm.$i"
        timed $i "$b" interpreted "$SHORT" REMAT_CACHE_DIR="$TMP/warm.$i" REMAT_NO_JIT=1
        timed $i "$b" warm_forced "$SHORT" REMAT_CACHE_DIR="$TMP/forced.$i" REMAT_JIT=always
    done
done
for r in $(seq "$LONG_RUNS"); do
    i=0
    for b in "$@"; do
        i=$((i + 1))
        rm -rf "$TMP/cold"; mkdir "$TMP/cold"
        timed $i "$b" long_cold "$LONG" REMAT_CACHE_DIR="$TMP/cold"
        timed $i "$b" long_interpreted "$LONG" REMAT_CACHE_DIR="$TMP/cold" REMAT_NO_JIT=1
    done
done
printf '{"command": "remat %s", "long_command": "remat %s", "results": [' "$SHORT" "$LONG"
i=0
for b in "$@"; do
    i=$((i + 1))
    [ $i -eq 1 ] || printf ','
    printf '\n {"binary": "%s",\n  "cold": %s,\n  "warm": %s,\n  "interpreted": %s,\n  "warm_forced": %s' \
        "$b" "$(stat $i cold)" "$(stat $i warm)" "$(stat $i interpreted)" "$(stat $i warm_forced)"
    if [ "$LONG_RUNS" -gt 0 ]; then
        printf ',\n  "long_cold": %s,\n  "long_interpreted": %s' "$(stat $i long_cold)" "$(stat $i long_interpreted)"
    fi
    printf '}'
done
printf '\n]}\n'

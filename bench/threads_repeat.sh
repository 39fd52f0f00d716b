#!/bin/sh
# threads_repeat.sh — the 2-thread speed-ups of bench_scan's "threads"
# array over many processes: the machine is shared and a single run's
# median swings with whatever else runs (one busy core turns a 2-thread run
# into a 1-thread one), so the figure to quote is the median over runs.
# Prints one JSON object: per case the median, quartiles, min and max of
# the runs' "speedup" (medians of wall clocks, 1 thread / N threads) and
# the median of "speedup_min" (the fastest rounds'), and how many runs met
# the target. Several binaries (a build before a change and one after) run
# interleaved, run by run, each case reported per binary.
#
#   bench/threads_repeat.sh [bench_scan binary ...]   (default build/bench/bench_scan)
#   RUNS=20, ROUNDS=15, THREADS=2; CPUS=0,1 (taskset list); SCHEDULE=S (only
#   that schedule's cases); LOAD=N: N busy loops at nice 19 on the CPUs
#   (LOAD_NICE=19: their nice value) while the runs go (a machine where another process wants the cores: a
#   compile, a second job), to see how the split fares there; ARGS: more
#   bench_scan options (--smoke: the test suite's quick run)
set -eu
[ $# -gt 0 ] || set -- build/bench/bench_scan
RUNS=${RUNS:-20}
ROUNDS=${ROUNDS:-15}
THREADS=${THREADS:-2}
CPUS=${CPUS:-0,1}
LOAD=${LOAD:-0}
for b in "$@"; do
    [ -x "$b" ] || { echo "threads_repeat.sh: no executable '$b'" >&2; exit 2; }
done
TMP=$(mktemp -d)
LOADERS=""
trap 'rm -rf "$TMP"; [ -z "$LOADERS" ] || kill $LOADERS 2>/dev/null' EXIT INT TERM
export OPENBLAS_NUM_THREADS=1
j=0
while [ "$j" -lt "$LOAD" ]; do
    taskset -c "$CPUS" nice -n "${LOAD_NICE:-19}" sh -c 'while :; do :; done' &
    LOADERS="$LOADERS $!"
    j=$((j + 1))
done
i=0
while [ "$i" -lt "$RUNS" ]; do
    for b in "$@"; do
        taskset -c "$CPUS" "$b" --threads-only --threads "$THREADS" --rounds "$ROUNDS" \
            ${SCHEDULE:+--schedule "$SCHEDULE"} ${ARGS:-} >"$TMP/run" ||
            { echo "threads_repeat.sh: run $i of $b failed" >&2; exit 1; }
        # one line per case: binary layout schedule speedup speedup_min meets_target
        sed -n 's/.*"layout":"\([^"]*\)", "schedule":"\([^"]*\)".*"speedup":\([0-9.]*\),.*"speedup_min":\([0-9.]*\),.*"meets_target":\([a-z]*\),.*/\1 \2 \3 \4 \5/p' \
            "$TMP/run" | sed "s|^|$b |" >>"$TMP/all"
    done
    i=$((i + 1))
done
[ -s "$TMP/all" ] || { echo "threads_repeat.sh: no \"threads\" cases in bench_scan's output" >&2; exit 1; }
awk -v runs="$RUNS" -v threads="$THREADS" -v load="$LOAD" '
function q(a, n, p,   k) { k = p * (n - 1); return a[int(k) + 1] + (k - int(k)) * (a[int(k) + 2] - a[int(k) + 1]) }
function sort(a, n,   i, j, t) { for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t } }
{ key = $1 " " $2 " " $3; if (!(key in n)) order[++nk] = key; n[key]++; s[key, n[key]] = $4; m[key, n[key]] = $5; if ($6 == "true") met[key]++; t[key] = $6 }
END {
    printf "{\"bench\":\"threads_repeat\", \"runs\":%d, \"threads\":%d, \"load\":%d, \"cases\":[", runs, threads, load
    for (c = 1; c <= nk; c++) {
        key = order[c]; k = n[key]; split(key, lk, " ")
        for (i = 1; i <= k; i++) { a[i] = s[key, i]; b[i] = m[key, i] }
        sort(a, k); sort(b, k); a[k + 1] = a[k]; b[k + 1] = b[k]
        printf "%s\n  {\"binary\":\"%s\", \"layout\":\"%s\", \"schedule\":\"%s\", \"speedup_median\":%.3f, \"speedup_q1\":%.3f, \"speedup_q3\":%.3f, \"speedup_lo\":%.3f, \"speedup_hi\":%.3f, \"speedup_min_median\":%.3f",
            (c > 1 ? "," : ""), lk[1], lk[2], lk[3], q(a, k, 0.5), q(a, k, 0.25), q(a, k, 0.75), a[1], a[k], q(b, k, 0.5)
        if (t[key] != "null") printf ", \"runs_meeting_target\":%d, \"runs\":%d", met[key] + 0, k
        printf "}"
    }
    print "\n]}"
}' "$TMP/all"

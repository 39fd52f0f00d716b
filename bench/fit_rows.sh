#!/bin/sh
# fit_rows.sh — peak memory (max RSS) and wall time of `remat pfr fit` as the
# data grow: one experiment of R rows (ROWS), and a --data-list of F files of
# 10 rows each (FILES). Prints one JSON object.
#
#   bench/fit_rows.sh [remat binary]      (default build/tools/remat)
#   ROWS="100 1000 10000 100000"  FILES="100 1000 10000" (either may be empty)  OPT=lm  TIMEOUT=600
#   LIMIT_KB=8000000 (address-space limit of each run; a run past it fails)
#   ARGS="--method tsit5 --dt 0.05" (more fit arguments: a fixed-step method, say)
#
# The data: A -> B : k1, B -> C : k2 (k1 = 0.7, k2 = 0.3) from A = 1, the
# exact solution at evenly spaced times in [0, 10] (files: each its own span
# of 10 rows, A0 from 0.5 to 1.5), fitted from k1 = k2 = 0.5 with the
# default adaptive tsit5. A run that fails (a message, a kill by the memory
# limit, the timeout) is reported with its exit status and the last line it
# printed; STRICT=1 makes any such run the script's failure (the smoke test).
# Each run is on one OpenBLAS thread.
set -eu
BIN=${1:-build/tools/remat}
ROWS=${ROWS-"100 1000 10000 100000"}
FILES=${FILES-"100 1000 10000"}
OPT=${OPT:-lm}
TIMEOUT=${TIMEOUT:-600}
LIMIT_KB=${LIMIT_KB:-8000000}
STRICT=${STRICT:-0}
ARGS=${ARGS:-}
FAILED=0
export OPENBLAS_NUM_THREADS=1
[ -x "$BIN" ] || { echo "fit_rows.sh: no executable '$BIN'" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "fit_rows.sh: needs /usr/bin/time (Debian package time)" >&2; exit 2; }
# a sanitizer build's shadow memory takes more address space than any
# limit worth measuring: there the runs have no limit (and their RSS says
# little); as tests/cli/input_files.sh
if grep -qa __asan_init "$BIN" || grep -qa __tsan_init "$BIN"; then
    echo "fit_rows.sh: a sanitizer build: no address-space limit" >&2
    LIMIT_KB=unlimited
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT INT TERM
cat >"$TMP/m.mech" <<'EOF'
species A, B, C
param k1 = 0.5
param k2 = 0.5
A -> B : k1
B -> C : k2
EOF

# rows n, first time t0, span, A0 -> CSV on stdout (row 0 the initial state at 0)
gen() {
    awk -v n="$1" -v a0="$2" 'BEGIN {
        k1 = 0.7; k2 = 0.3; print "t,A,B,C";
        for (i = 0; i < n; i++) {
            t = 10.0 * i / (n - 1);
            A = a0 * exp(-k1 * t); B = a0 * k1 / (k2 - k1) * (exp(-k1 * t) - exp(-k2 * t));
            printf "%.17g,%.17g,%.17g,%.17g\n", t, A, B, a0 - A - B;
        }
    }'
}

# label, then the fit's data arguments: one JSON record
run() {
    label=$1; shift
    set +e
    ( ulimit -v "$LIMIT_KB"; exec timeout "$TIMEOUT" /usr/bin/time -f "%M %e" -o "$TMP/time" \
        "$BIN" pfr fit --mechanism "$TMP/m.mech" --optimizer "$OPT" --json $ARGS "$@" ) >"$TMP/out" 2>"$TMP/err"
    rc=$?
    set -e
    [ "$rc" -eq 0 ] || FAILED=1
    rss=$(awk 'END {print $1}' "$TMP/time" 2>/dev/null || echo 0)
    wall=$(awk 'END {print $2}' "$TMP/time" 2>/dev/null || echo 0)
    k1=$(sed -n 's/.*"k1": *\([-0-9.eE+]*\).*/\1/p' "$TMP/out" | head -1)
    why=$(tail -1 "$TMP/err" | tr -d '"\\' | cut -c1-160)
    printf '    {"case": "%s", "rc": %d, "max_rss_mb": %.1f, "wall_s": %s, "k1": "%s", "stderr": "%s"}' \
        "$label" "$rc" "$(echo "${rss:-0}" | awk '{print $1 / 1024}')" "${wall:-0}" "$k1" "$why"
}

echo "{\"bench\": \"fit_rows\", \"binary\": \"$BIN\", \"optimizer\": \"$OPT\", \"args\": \"$ARGS\", \"runs\": ["
sep=""
for n in $ROWS; do
    gen "$n" 1.0 >"$TMP/rows_$n.csv"
    printf '%s' "$sep"; run "rows_$n" --data "$TMP/rows_$n.csv"; sep=",
"
    rm -f "$TMP/rows_$n.csv"
done
for n in $FILES; do
    mkdir -p "$TMP/files_$n"
    : >"$TMP/files_$n/list.txt"
    awk -v n="$n" -v d="$TMP/files_$n" 'BEGIN {
        k1 = 0.7; k2 = 0.3;
        for (e = 0; e < n; e++) {
            a0 = 0.5 + e / n; f = d "/e" e ".csv"; print "e" e ".csv" >> (d "/list.txt");
            print "t,A,B,C" > f;
            for (i = 0; i < 10; i++) {
                t = 10.0 * i / 9;
                A = a0 * exp(-k1 * t); B = a0 * k1 / (k2 - k1) * (exp(-k1 * t) - exp(-k2 * t));
                printf "%.17g,%.17g,%.17g,%.17g\n", t, A, B, a0 - A - B > f;
            }
            close(f);
        }
    }'
    printf '%s' "$sep"; run "files_$n" --data-list "$TMP/files_$n/list.txt"; sep=",
"
    rm -rf "$TMP/files_$n"
done
echo "
]}"
[ "$STRICT" != 1 ] || [ "$FAILED" -eq 0 ]

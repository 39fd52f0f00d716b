#!/usr/bin/env bash
# memory_limit.sh REMAT EXAMPLES — the tool under an address-space limit
# (ulimit -v) ends: with its output, or with an out-of-memory message naming
# the limit, never spinning. OpenBLAS retries a buffer it cannot map for
# ever: `mlp train` under 200000 KiB hung in its gemm (its load-time thread
# held one 128 MiB buffer, the caller found no room for another), and
# `pfr fit` under 100000 KiB finished but hung in exit() waiting on that
# thread, its result never printed.
#   - mlp train, 200000 KiB: trains (exit 0, the final accuracy);
#   - pfr fit on the Van de Vusse example, 100000 KiB: exit 0, the fit printed;
#   - mlp train, 100000 KiB (no room for even one buffer): exit 1 at once
#     with "out of memory" and the limit, no training line after.
# Each runs under `timeout` (124: the hang is back). A build with
# AddressSanitizer reserves terabytes of address space: no limit fits it.
set -u
REMAT=$1 EX=$2
EX=$(cd "$EX" && pwd)
. "$(dirname "$0")/lib.sh"
cd "$work"
if ldd "$REMAT" 2>/dev/null | grep -q libasan; then
    echo "SKIP: AddressSanitizer build (its shadow memory needs an unlimited address space)"
    exit 77
fi

limited() { # KiB, out, err, then the command: its exit status
    local kib=$1 out=$2 err=$3
    shift 3
    (ulimit -v "$kib" && exec timeout 120 "$@") >"$out" 2>"$err"
}
ended() { [ "$1" -ne 124 ] && [ "$1" -ne 137 ] || { echo "     timed out (status $1)" >&2; false; }; }

limited 200000 mlp.out mlp.err "$REMAT" mlp train
st=$?
check "mlp train under ulimit -v 200000 ends" ended $st
check "mlp train under ulimit -v 200000 exits 0" test $st -eq 0
check "mlp train under ulimit -v 200000 prints its accuracy" has mlp.out "final test accuracy"

limited 100000 fit.out fit.err "$REMAT" pfr fit --mechanism "$EX/van_de_vusse.mech" --data "$EX/feed_5.csv"
st=$?
check "pfr fit under ulimit -v 100000 ends" ended $st
check "pfr fit under ulimit -v 100000 exits 0" test $st -eq 0
check "pfr fit under ulimit -v 100000 prints the fit" has fit.out "k3"

limited 100000 small.out small.err "$REMAT" mlp train
st=$?
check "mlp train under ulimit -v 100000 ends" ended $st
check "mlp train under ulimit -v 100000 exits 1" test $st -eq 1
check "mlp train under ulimit -v 100000 says out of memory" has small.err "out of memory"
check "the message names the limit" has small.err "ulimit -v 100000 KiB"
check "no epoch after the error" test "$(grep -c '^epoch' small.out)" -eq 0
exit $fail

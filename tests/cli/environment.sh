#!/usr/bin/env bash
# environment.sh REMAT — the tool in an unusual environment:
#   - REMAT_NUM_THREADS that is no thread count is named on stderr, once,
#     and the run goes on with the CPU count (even a run that never splits a
#     loop across threads, where the value was silently ignored);
#   - a 32 KB stack (ulimit -s 32) runs a scan: its replay's 40 KB chunk of
#     ops is on the heap (interpreted: gcc itself needs more stack).
set -u
REMAT=$1
. "$(dirname "$0")/lib.sh"
cd "$work" || exit 1
status() { test "$1" -eq "$2" || { echo "     exit status $1, expected $2" >&2; false; }; }

for bad in abc 0 -3 9999 2x; do
    REMAT_NUM_THREADS=$bad "$REMAT" pfr simulate --steps 10 >out.txt 2>err.txt
    check "REMAT_NUM_THREADS=$bad: the run goes on" status $? 0
    check "REMAT_NUM_THREADS=$bad: named on stderr" has err.txt "remat: REMAT_NUM_THREADS=$bad is not a thread count"
    check "REMAT_NUM_THREADS=$bad: once" test "$(grep -c REMAT_NUM_THREADS err.txt)" -eq 1
done
REMAT_NUM_THREADS=2 "$REMAT" pfr simulate --steps 10 >out.txt 2>err.txt
check "REMAT_NUM_THREADS=2: nothing said" test ! -s err.txt

(ulimit -s 32 && REMAT_NO_JIT=1 exec "$REMAT" pfr simulate --steps 200) >out.txt 2>err.txt
check "ulimit -s 32: pfr simulate runs" status $? 0
check "ulimit -s 32: and prints its outlet" has out.txt "outlet"
exit $fail

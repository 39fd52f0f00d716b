#!/usr/bin/env bash
# seed_outputs.sh REMAT EXPECTED — the default runs of `remat pfr`, which the
# README gives as the main job, against their committed output:
#   - `remat pfr optimize` prints seed 004's Adam table byte for byte (the
#     expected file is what the seed's Python print statements write);
#   - `remat pfr simulate` prints the seed's outlet and gradient;
#   - --json carries the same numbers in full precision, --out writes the
#     profile (header, 1001 rows, last row = outlet), and --plot draws it when
#     the tool has PLplot.
set -u
REMAT=$1 EXPECTED=$2
EXPECTED=$(cd "$EXPECTED" && pwd)
. "$(dirname "$0")/lib.sh"

cd "$work"
"$REMAT" pfr optimize >optimize.txt 2>optimize.err
check "pfr optimize exits 0" test $? -eq 0
check "pfr optimize prints seed 004's table" same "$EXPECTED/pfr_optimize.txt" optimize.txt
"$REMAT" pfr simulate >simulate.txt 2>simulate.err
check "pfr simulate exits 0" test $? -eq 0
check "pfr simulate prints the seed's outlet and gradient" same_but_residue "$EXPECTED/pfr_simulate.txt" simulate.txt

# without an assembler and linker on PATH, libgccjit cannot compile the
# scan loops: the tool says so once and interprets them, same numbers
# (REMAT_JIT=always: a run this short would not compile; REMAT_NO_CACHE: the
# disk cache would serve the loops the run above compiled)
PATH=/nonexistent REMAT_NO_CACHE=1 REMAT_JIT=always "$REMAT" pfr simulate >simulate-nojit.txt 2>simulate-nojit.err
check "pfr simulate without as/ld exits 0" test $? -eq 0
# interpreted against compiled: the same bits on one machine (contract 2 of
# docs/design-notes.md, "Bitwise contracts"), residue included
check "pfr simulate without as/ld prints the same" same simulate.txt simulate-nojit.txt
if "$REMAT" --version | grep -q "compiled scan loops: libgccjit"; then
    check "pfr simulate without as/ld says why" has simulate-nojit.err "scan loops will be interpreted"
    # loops in the disk cache load without gcc, as or ld
    PATH=/nonexistent REMAT_JIT=always "$REMAT" pfr simulate >simulate-cached.txt 2>simulate-cached.err
    check "pfr simulate from the disk cache needs no as/ld" test ! -s simulate-cached.err
    check "pfr simulate from the disk cache prints the same" same simulate.txt simulate-cached.txt
else
    check "pfr simulate without libgccjit is quiet" test ! -s simulate-nojit.err
fi

"$REMAT" pfr simulate --json --out profile.csv >simulate.json 2>simulate.err
check "pfr simulate --json --out exits 0" test $? -eq 0
for want in '"A": 4.3171247410658' '"B": 0.0132215946628' '"C": 0.98673523408974' \
    '"k1": 0.01234944825050' '"k2": 0.1073049228116' '"profile": "profile.csv"'; do
    check "json has $want" has simulate.json "$want"
done
check "profile header" test "$(head -n 1 profile.csv)" = "z,A,B,C"
check "profile has the inlet and 1000 steps" test "$(wc -l <profile.csv)" -eq 1002
check "profile ends at the outlet" has profile.csv "10,4.3171247410658"
check "the seed default is not adaptive" has simulate.json '"integrator": {"method": "euler", "adaptive": false, "accepted": 1000'
near() { awk -v a="$1" -v b="$2" -v r="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= r * b) }' ||
    { echo "     $1 is not within $3 of $2" >&2; false; }; }
# adaptive Tsit5 on the seed reactor: C_B(10) = 2 (e^-5 - e^-10) = 0.0133850941386
"$REMAT" pfr simulate --method tsit5 --rtol 1e-8 --atol 1e-12 --json --out adaptive.csv >adaptive.json 2>adaptive.err
check "pfr simulate --method tsit5 exits 0" test $? -eq 0
check "--method tsit5 alone integrates adaptively" has adaptive.json '"integrator": {"method": "tsit5", "adaptive": true'
check "adaptive C_B(10) within 1e-7 of the closed form" \
    near "$(sed -n 's/.*"outlet": {[^}]*"B": \([-0-9.eE+]*\).*/\1/p' adaptive.json)" 0.0133850941386 1e-7
check "the adaptive profile has the inlet and 100 intervals" test "$(wc -l <adaptive.csv)" -eq 102
"$REMAT" pfr optimize --json >optimize.json 2>optimize.err
check "pfr optimize --json exits 0" test $? -eq 0
check "json optimum" has optimize.json '"optimum": {"params": {"k1": 0.888'

if "$REMAT" pfr simulate --plot probe.png >/dev/null 2>plot.err; then
    check "profile plot drawn" test -s probe.png
    "$REMAT" pfr optimize --plot objective.svg >/dev/null 2>plot.err
    check "objective plot drawn" test -s objective.svg
else
    check "without PLplot, --plot says so" has plot.err "without PLplot"
fi
check "no temporary files left" test -z "$(find . -name '*.tmp.*')"
exit $fail

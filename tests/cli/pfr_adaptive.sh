#!/usr/bin/env bash
# pfr_adaptive.sh REMAT — `remat pfr optimize` and `remat pfr compare` with
# --method tsit5|dopri5|rodas5 (adaptive, --rtol/--atol as in fit and
# simulate), on the seed's built-in A->B->C reactor:
#   - optimize: --json says adaptive with the tolerances; at rtol 1e-10 the
#     optimum's C_B equals the one from 4000 fixed RK4 steps to 1e-8, and it
#     moves off the seed's 1000 Euler steps (the default, unchanged);
#   - compare: the problem names the adaptive method and its attempts, every
#     schedule's gradient is bitwise the store-all one, and --method rodas5
#     works too;
#   - the default of both stays the seed's 1000 fixed Euler steps.
# The bitwise gradients rest on contract 3 (docs/design-notes.md, "Bitwise contracts").
set -u
REMAT=$1
. "$(dirname "$0")/lib.sh"
cd "$work"
num() { sed -n "s/.*\"$1\": \([-0-9.eE+]*\).*/\1/p" "$2" | tail -n 1; }
near() { awk -v a="$1" -v b="$2" -v r="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= r * (b < 0 ? -b : b)) }' ||
    { echo "     $1 is not within $3 of $2" >&2; false; }; }

"$REMAT" pfr optimize --method tsit5 --rtol 1e-10 --atol 1e-13 --json >opt_tsit5.json 2>opt_tsit5.err
check "optimize --method tsit5 exits 0" test $? -eq 0
check "optimize --json says adaptive" has opt_tsit5.json '"adaptive": true'
check "optimize --json gives rtol" near "$(num rtol opt_tsit5.json)" 1e-10 1e-12
check "optimize --json names tsit5" has opt_tsit5.json '"method": "tsit5"'
"$REMAT" pfr optimize --method rk4 --steps 4000 --json >opt_rk4.json 2>opt_rk4.err
check "optimize --method rk4 --steps 4000 exits 0" test $? -eq 0
check "optimize fixed --json says not adaptive" has opt_rk4.json '"adaptive": false'
check "adaptive tsit5's optimum equals fine fixed rk4's" near "$(num concentration opt_tsit5.json)" "$(num concentration opt_rk4.json)" 1e-8
"$REMAT" pfr optimize --json >opt_default.json 2>opt_default.err
check "optimize default exits 0" test $? -eq 0
check "optimize default stays 1000 Euler steps" has opt_default.json '"steps": 1000'
check "optimize default is euler" has opt_default.json '"method": "euler"'

"$REMAT" pfr compare --method dopri5 --rtol 1e-8 --schedules store-all,per-step,binomial:4,online:4 --repeat 1 --json >cmp.json 2>cmp.err
check "compare --method dopri5 exits 0" test $? -eq 0
check "compare runs every schedule" test "$(grep -c '"schedule"' cmp.json)" -eq 4
check "compare: every gradient bitwise the store-all one" test "$(grep -c '"bitwise_equal": true' cmp.json)" -eq 4
"$REMAT" pfr compare --method dopri5 --rtol 1e-8 --schedules store-all,online:4 --repeat 1 >cmp.txt 2>&1
check "compare's table names the adaptive method and its attempts" has cmp.txt 'adaptive dopri5 (rtol 1e-08, atol 1e-09:'
"$REMAT" pfr compare --method rodas5 --schedules store-all,binomial:4 --repeat 1 --json >cmp_rodas.json 2>cmp_rodas.err
check "compare --method rodas5 exits 0" test $? -eq 0
check "compare rodas5: gradients bitwise" test "$(grep -c '"bitwise_equal": true' cmp_rodas.json)" -eq 2
"$REMAT" pfr compare --schedules store-all,online:4 --repeat 1 --json >cmp_default.json 2>cmp_default.err
check "compare default stays 1000 steps" has cmp_default.json '"steps": 1000'
# simulate's help says what it does: adaptive by default with --mechanism
# (net.mech runs adaptive tsit5), euler for the built-in mechanism
"$REMAT" pfr simulate --help >sim_help.txt 2>&1
check "simulate --help: tsit5 is the default with --mechanism" has sim_help.txt "tsit5 (default with"
check "simulate --help: euler is the default for the built-in mechanism only" has sim_help.txt "euler (default for the built-in mechanism)"
check "simulate --help does not call euler the default outright" bash -c '! grep -qF "euler (default), rk4" sim_help.txt'
printf 'param k = 1\nA -> B : k\n' >ab.mech
"$REMAT" pfr simulate --mechanism ab.mech --init A=1 >sim_mech.txt 2>&1
check "simulate --mechanism runs adaptive tsit5, as its help says" has sim_mech.txt "adaptive tsit5 over L = 10"
exit $fail

#!/usr/bin/env bash
# pfr_adjoints.sh REMAT EXAMPLES — the backsolve (continuous) adjoint from the
# tool, on the seed's built-in A->B->C reactor and the Van de Vusse example:
#   - `pfr compare --adjoints --method tsit5 --dt 0.01` prints seed 004 §8's
#     table: recursive, backsolve and direct rows, each with C_B 0.013385,
#     dC_B/dk1 -0.012477, dC_B/dk2 -0.107989 and 1000 steps; backsolve keeps
#     less for its reverse pass than the direct adjoint's store;
#   - with the seed's Euler steps the rows differ as diffrax's do: backsolve
#     -0.011254 (diffrax BacksolveAdjoint -0.0112542), recursive -0.012349;
#   - --adjoint backsolve on simulate, optimize and fit gives the discrete
#     adjoint's gradient and optimum to the methods' error (adaptive steps:
#     to the tolerance), and --json says which adjoint ran;
#   - the interpolating adjoint's row (checkpoints, bounded store) has the
#     seed's digits too; `compare --adjoints --json` is JSON (python3 parses
#     it) with the same numbers; --adjoint interpolating on simulate,
#     optimize and fit, adaptive fits included (dense-output rows), reaches
#     the discrete adjoint's answers.
set -u
REMAT=$1 EX=$2
EX=$(cd "$EX" && pwd)
. "$(dirname "$0")/lib.sh"
cd "$work"
num() { sed -n "s/.*\"$1\": \([-0-9.eE+]*\).*/\1/p" "$2" | tail -n 1; }
near() { awk -v a="$1" -v b="$2" -v r="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= r * (b < 0 ? -b : b)) }' ||
    { echo "     $1 is not within $3 of $2" >&2; false; }; }
# column c of the row whose label starts the line: 1 C_B, 2 dk1, 3 dk2, 4 steps, 5 store
col() { awk -v p="$1" -v c="$2" 'index($0, p) == 1 { print $(NF - 7 + c); exit }' "$3"; }

"$REMAT" pfr compare --adjoints --method tsit5 --dt 0.01 --repeat 1 >seed.txt 2>seed.err
check "compare --adjoints exits 0" test $? -eq 0
for r in "recursive (binomial:10)" backsolve interpolating "direct (store-all)"; do
    check "$r row: C_B 0.013385" test "$(col "$r" 1 seed.txt)" = 0.013385
    check "$r row: dC_B/dk1 -0.012477" test "$(col "$r" 2 seed.txt)" = -0.012477
    check "$r row: dC_B/dk2 -0.107989" test "$(col "$r" 3 seed.txt)" = -0.107989
    check "$r row: 1000 steps" test "$(col "$r" 4 seed.txt)" = 1000
done
check "backsolve keeps less than store-all" test "$(col backsolve 5 seed.txt)" -lt "$(col direct 5 seed.txt)"
check "the table names the integration" has seed.txt "1000 tsit5 steps over [0, 10] (h = 0.01)"
check "interpolating keeps less than store-all" test "$(col interpolating 5 seed.txt)" -lt "$(col direct 5 seed.txt)"

"$REMAT" pfr compare --adjoints --method tsit5 --dt 0.01 --repeat 1 --json >seed.json 2>seed_json.err
check "compare --adjoints --json exits 0" test $? -eq 0
check "compare --adjoints --json is JSON with the seed's four rows" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["steps"] == 1000 and d["method"] == "tsit5" and d["species"] == "B", d
rows = d["rows"]
assert [r["adjoint"] for r in rows] == ["discrete", "backsolve", "interpolating", "discrete"], rows
for r in rows:
    assert "%.6f" % r["concentration"] == "0.013385", r
    assert "%.6f" % r["gradient"]["k1"] == "-0.012477", r
    assert "%.6f" % r["gradient"]["k2"] == "-0.107989", r
    assert r["store_bytes"] > 0 and r["seconds"] > 0, r
' seed.json

"$REMAT" pfr compare --adjoints --dt 0.01 --schedule online:4 --repeat 1 >euler.txt 2>euler.err
check "compare --adjoints with Euler exits 0" test $? -eq 0
check "Euler backsolve is diffrax's -0.011254" test "$(col backsolve 2 euler.txt)" = -0.011254
check "Euler recursive is the discrete -0.012349" test "$(col "recursive (online:4)" 2 euler.txt)" = -0.012349
check "Euler direct equals recursive" test "$(col direct 2 euler.txt)" = -0.012349

for a in discrete backsolve interpolating; do
    "$REMAT" pfr simulate --method tsit5 --dt 0.01 --adjoint $a --json >sim_$a.json 2>sim_$a.err
    check "simulate --adjoint $a exits 0" test $? -eq 0
    check "simulate --json says adjoint $a" has sim_$a.json "\"adjoint\": \"$a\""
    "$REMAT" pfr optimize --method rk4 --dt 0.05 --adjoint $a --json >opt_$a.json 2>opt_$a.err
    check "optimize --adjoint $a exits 0" test $? -eq 0
    check "optimize --json says adjoint $a" has opt_$a.json "\"adjoint\": \"$a\""
    "$REMAT" pfr fit --mechanism "$EX/van_de_vusse.mech" --data "$EX/feed_10.csv" --data "$EX/feed_5.csv" \
        --method tsit5 --dt 0.01 --optimizer lbfgs-b --adjoint $a --json >fit_$a.json 2>fit_$a.err
    check "fit --adjoint $a exits 0" test $? -eq 0
done
check "simulate: backsolve's gradient is the discrete one (tsit5)" near "$(num k1 sim_backsolve.json)" "$(num k1 sim_discrete.json)" 1e-9
check "optimize: backsolve's optimum is the discrete one" near "$(num concentration opt_backsolve.json)" "$(num concentration opt_discrete.json)" 1e-7
check "fit: backsolve reaches the discrete minimum" near "$(num objective fit_backsolve.json)" "$(num objective fit_discrete.json)" 1e-9
check "simulate: interpolating's gradient is the discrete one (tsit5)" near "$(num k1 sim_interpolating.json)" "$(num k1 sim_discrete.json)" 1e-7
check "optimize: interpolating's optimum is the discrete one" near "$(num concentration opt_interpolating.json)" "$(num concentration opt_discrete.json)" 1e-7
check "fit: interpolating reaches the discrete minimum" near "$(num objective fit_interpolating.json)" "$(num objective fit_discrete.json)" 1e-9
# adaptive fits (dense-output rows at the data times, a value of the
# programs): interpolating reads the times when it runs
for a in discrete backsolve interpolating; do
    "$REMAT" pfr fit --mechanism "$EX/van_de_vusse.mech" --data "$EX/feed_10.csv" --data "$EX/feed_5.csv" \
        --method tsit5 --optimizer lbfgs-b --adjoint $a --json >fit_ad_$a.json 2>fit_ad_$a.err
    check "adaptive fit --adjoint $a exits 0" test $? -eq 0
done
check "adaptive fit: backsolve reaches the discrete minimum" near "$(num objective fit_ad_backsolve.json)" "$(num objective fit_ad_discrete.json)" 1e-9
check "adaptive fit: interpolating reaches the discrete minimum" near "$(num objective fit_ad_interpolating.json)" "$(num objective fit_ad_discrete.json)" 1e-9
check "adaptive fit: interpolating's parameters are the discrete ones to 1e-6" python3 -c '
import json, sys
a, b = (json.load(open(f))["params"] for f in sys.argv[1:])
assert a.keys() == b.keys() and all(abs(a[k] - b[k]) <= 1e-6 * abs(b[k]) for k in a), (a, b)
' fit_ad_interpolating.json fit_ad_discrete.json
# adaptive (tsit5, rtol 1e-6 by default): the backward solve's own error control
"$REMAT" pfr simulate --method tsit5 --adjoint backsolve --json >sim_ad_b.json 2>sim_ad_b.err
check "simulate adaptive --adjoint backsolve exits 0" test $? -eq 0
"$REMAT" pfr simulate --method tsit5 --json >sim_ad_d.json 2>sim_ad_d.err
check "adaptive backsolve's gradient is the discrete one to the tolerance" near "$(num k1 sim_ad_b.json)" "$(num k1 sim_ad_d.json)" 1e-4
# rodas5: the backward Rosenbrock steps on the augmented system
"$REMAT" pfr simulate --method rodas5 --steps 200 --adjoint backsolve --json >sim_ros_b.json 2>sim_ros_b.err
check "simulate rodas5 --adjoint backsolve exits 0" test $? -eq 0
"$REMAT" pfr simulate --method rodas5 --steps 200 --json >sim_ros_d.json 2>sim_ros_d.err
check "rodas5 backsolve's gradient is the discrete one" near "$(num k1 sim_ros_b.json)" "$(num k1 sim_ros_d.json)" 1e-6
"$REMAT" pfr compare --help >help.txt 2>&1
check "compare --help gives the seed's command" has help.txt "--adjoints --method tsit5 --dt 0.01"
"$REMAT" pfr simulate --help >sim_help.txt 2>&1
check "simulate --help has --adjoint" has sim_help.txt "--adjoint A"
exit $fail

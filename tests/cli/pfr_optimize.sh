#!/usr/bin/env bash
# pfr_optimize.sh REMAT DATA — `remat pfr optimize` as an engineering
# optimizer (issue 21): the temperature Top that maximizes B at the outlet of
# an Arrhenius A -> B -> C reactor (DATA/top.mech, A1..E2 fixed):
#   - lbfgs-b (the default with --mechanism) and slsqp find it, converged by
#     their stated test, under a header naming the decision variable; the
#     optimum is checked independently of the optimizer: a scan of C_B with
#     `pfr simulate` (1 K, then 0.01 K steps) peaks within 0.01 K of it, the
#     gradient simulate reports there is ~0 and the bounds [300, 400] are
#     inactive;
#   - --free Top and --fix A1,E1,A2,E2 are the same problem; --json carries the
#     decision variables, the convergence test and every evaluation;
#   - --iters too small: "stopped", with a warning, not a silent optimum;
#   - Adam stays available (--optimizer adam) and is the built-in default;
#   - a declared negative lower bound (negative_bound.mech: k in [-1, 2]) is
#     kept, not raised to --min-param's 0.01, by every optimizer; so is a
#     declared -inf below a declared upper bound (upper_bound_only.mech: s in
#     [-inf, 0], the optimum s = log k1 near -2 inside), which --min-param
#     once replaced (an error: 0.01 above the upper bound 0).
set -u
REMAT=$1
DATA=$2
case $DATA in /*) ;; *) DATA=$PWD/$DATA ;; esac
. "$(dirname "$0")/lib.sh"
cd "$work"
num() { sed -n "s/.*\"$1\": \([-0-9.eE+]*\).*/\1/p" "$2" | tail -n 1; }
near() { [ -n "$1" ] && [ -n "$2" ] && awk -v a="$1" -v b="$2" -v d="$3" 'BEGIN { x = a - b; if (x < 0) x = -x; exit !(x <= d) }' ||
    { echo "     $1 is not within $3 of $2" >&2; false; }; }
top=(--mechanism "$DATA/top.mech" --init A=1 --maximize B)

"$REMAT" pfr optimize "${top[@]}" --free Top >lb.txt 2>lb.err
check "lbfgs-b exits 0" test $? -eq 0
check "the header names the decision variable" has lb.txt \
    "Optimizing Top (A1, E1, A2, E2 fixed) to maximize intermediate B with lbfgs-b:"
check "lbfgs-b says which test held" has lb.txt "converged: projected gradient below gtol after"
T=$(sed -n 's/^Optimal: Top=//p' lb.txt)
check "lbfgs-b prints the optimum" test -n "$T"

# the optimum, independently: C_B from pfr simulate on a scan
cb() { "$REMAT" pfr simulate "${top[@]}" --params "Top=$1" --json |
    sed -n 's/.*"outlet": {.*"B": \([-0-9.eE+]*\),.*/\1/p'; }
scan() { # from, step, count: the Top of the largest C_B
    awk -v a="$1" -v h="$2" -v n="$3" 'BEGIN { for (i = 0; i < n; i++) printf "%.6f\n", a + i * h }' |
        while read -r x; do echo "$x $(cb "$x")"; done | sort -g -k2 | tail -n 1 | cut -d' ' -f1
}
coarse=$(scan 300 1 101)
fine=$(scan "$(awk -v c="$coarse" 'BEGIN { print c - 1 }')" 0.01 201)
check "a 1 K scan peaks within 1 K of the optimum" near "$T" "$coarse" 1
check "a 0.01 K scan peaks within 0.01 K of the optimum" near "$T" "$fine" 0.01
check "the optimum lies inside the bounds [300, 400]" awk -v t="$T" 'BEGIN { exit !(t > 300.5 && t < 399.5) }'
"$REMAT" pfr optimize "${top[@]}" --fix A1,E1,A2,E2 --json >fix.json 2>fix.err
check "--fix A1,E1,A2,E2 exits 0" test $? -eq 0
Tj=$(num Top fix.json) # full precision
"$REMAT" pfr simulate "${top[@]}" --params "Top=$Tj" --json >at_opt.json # as optimize integrates: adaptive tsit5
g=$(sed -n 's/.*"Top": \([-0-9.eE+]*\)}}.*/\1/p' at_opt.json)
check "the gradient at the optimum is ~0 (|dC_B/dTop| Top / C_B < 1e-7)" \
    awk -v g="${g:-nan}" -v t="$T" 'BEGIN { g = g < 0 ? -g : g; exit !(g + 0 == g && g * t / 0.32 < 1e-7) }'

check "--fix is --free Top" near "$(num Top fix.json)" "$T" 1e-4
check "--json names the decision variables" has fix.json '"decision_variables": ["Top"]'
check "--json names the fixed ones" has fix.json '"fixed": ["A1", "E1", "A2", "E2"]'
check "--json says converged" has fix.json '"converged": true'
check "--json gives the history" has fix.json '{"evaluation": 0, "concentration": '
"$REMAT" pfr optimize "${top[@]}" --free Top --optimizer slsqp >sq.txt 2>sq.err
check "slsqp exits 0" test $? -eq 0
check "slsqp converges" has sq.txt "converged: "
check "slsqp finds the same optimum" near "$(sed -n 's/^Optimal: Top=//p' sq.txt)" "$T" 1e-3

"$REMAT" pfr optimize "${top[@]}" --free Top --iters 3 >few.txt 2>few.err
check "--iters 3 exits 0" test $? -eq 0
check "--iters 3 says it stopped" has few.txt "stopped: max evaluations reached after 3 evaluations"
check "--iters 3 warns" has few.err "warning: stopped"

"$REMAT" pfr optimize "${top[@]}" --free Top --optimizer adam >adam.txt 2>adam.err
check "--optimizer adam exits 0" test $? -eq 0
check "adam's header names it" has adam.txt "Optimizing Top (A1, E1, A2, E2 fixed) to maximize intermediate B with adam:"
"$REMAT" pfr optimize --json >seed.json 2>seed.err
check "the built-in problem still runs Adam" has seed.json '"optimizer": {"name": "adam"'

neg=(--mechanism "$DATA/negative_bound.mech" --init A=1 --minimize B --fix k2)
for o in lbfgs-b slsqp adam; do
    "$REMAT" pfr optimize "${neg[@]}" --optimizer $o >neg_$o.txt 2>neg_$o.err
    check "$o exits 0 on negative_bound.mech" test $? -eq 0
    check "$o keeps the declared lower bound -1" grep -qE '^Optimal: k=-1(\.0000)?$' neg_$o.txt
done
up=(--mechanism "$DATA/upper_bound_only.mech" --init A=1 --maximize B)
for o in lbfgs-b slsqp adam; do
    extra=()
    [ $o = adam ] && extra=(--iters 300)
    "$REMAT" pfr optimize "${up[@]}" --optimizer $o "${extra[@]}" >up_$o.txt 2>up_$o.err
    check "$o exits 0 on upper_bound_only.mech" test $? -eq 0
    s=$(sed -n 's/^Optimal: s=//p' up_$o.txt)
    check "$o finds s < -1 (below --min-param, inside the declared bounds)" \
        awk -v s="${s:-nan}" 'BEGIN { exit !(s + 0 == s && s < -1) }'
done
# a gas mechanism's T is a temperature, its species mole fractions (not "T concentration", "C_T")
gas=(--mechanism "$DATA/gas_ab.yaml" --init A=1 --cond T=1000 --length 0.004 --free m1 --iters 3)
REMAT_JIT=never "$REMAT" pfr optimize "${gas[@]}" --maximize T >gasT.txt 2>gasT.err
check "gas: --maximize T reports a temperature in K" grep -qE '^Maximum T: [0-9.]+ K$' gasT.txt
check "gas: its column is 'T (K)'" grep -qE '^Evaluation m1 +T \(K\) +rel. gradient' gasT.txt
REMAT_JIT=never "$REMAT" pfr optimize "${gas[@]}" --maximize B >gasB.txt 2>gasB.err
check "gas: --maximize B reports a mole fraction" grep -qE '^Maximum B mole fraction: ' gasB.txt
check "gas: its column is X_B" grep -qE '^Evaluation m1 +X_B ' gasB.txt
"$REMAT" pfr optimize --help >help.txt
check "--help says declared bounds win over --min-param" has help.txt "declared bounds (even -inf) win"
exit $fail

#!/usr/bin/env bash
# netterm.sh REMAT NETTERM — a network in a mechanism fitted by pfr fit
# (remat/mechanism.h "Networks"; examples/netterm):
#   - with a rate constant k, every parameter free: the fit drives the
#     sum of squares down by orders of magnitude, also under a binomial
#     schedule and fixed rk4 steps, with the same result as store-all;
#   - --free f fits the weights alone (k keeps its start), --fix f the
#     rate constant alone (every weight keeps its start);
#   - --params takes weights by name, negative values included; pfr
#     ensemble varies weights per row (a parameter set per batch entry);
#   - the universal-differential-equation example (run.sh) in a short
#     version: 30 lm iterations recover the held-out profiles to 5e-3.
set -u
REMAT=$1 EX=$2
EX=$(cd "$EX" && pwd)
. "$(dirname "$0")/lib.sh"
cd "$work"
# the numbers of one parameter in a fit's JSON
param() { sed -n "s/.*\"params\": {[^}]*\"$1\": \([-0-9.eE+]*\).*/\1/p" "$2" | head -n 1; }
num() { sed -n "s/.*\"$1\": \([-0-9.eE+]*\).*/\1/p" "$2" | head -n 1; }
near() { awk -v a="$1" -v b="$2" -v r="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; if (b < 0) b = -b; exit !(d <= r * b + 1e-300) }' ||
    { echo "     $1 is not within $3 of $2" >&2; false; }; }
below() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a < b) }' || { echo "     $1 is not below $2" >&2; false; }; }
cat >k.mech <<'M'
param k = 1
net f = mlp(inputs: 2, width: 4, depth: 1, activation: tanh, seed: 1)
A + B -> C : rate = k * A * B * exp(f(A, B))
M
data="--data $EX/train_1.csv --data $EX/train_3.csv --data $EX/train_4.csv"
fit() { # NAME OPTIONS...: NAME.json, NAME.err; exit status 3 (not converged in 25 iterations) is fine
    local name=$1
    shift
    "$REMAT" pfr fit --mechanism k.mech $data --max-iters 25 --json "$@" >"$name.json" 2>"$name.err"
    [ $? -le 3 ] || { sed 's/^/     | /' "$name.err" >&2; return 1; }
}

start=$("$REMAT" pfr fit --mechanism k.mech $data --max-iters 1 2>/dev/null | sed -n 's/.*(start \([-0-9.eE+]*\)).*/\1/p')
check "fit all: store-all" fit all --schedule store-all
check "fit all: SSE down 1000x" below "$(num objective all.json)" "$(awk -v s="$start" 'BEGIN { print s / 1000 }')"
check "fit all: binomial schedule" fit binomial --schedule binomial:2
check "fit all: binomial = store-all" near "$(num objective binomial.json)" "$(num objective all.json)" 1e-6
check "fit all: rk4 steps" fit rk4 --method rk4 --steps 50
check "fit all: rk4 SSE down 1000x" below "$(num objective rk4.json)" "$(awk -v s="$start" 'BEGIN { print s / 1000 }')"

check "--free f" fit free --free f
check "--free f: k kept" test "$(param k free.json)" = 1
check "--free f: weights fitted" test "$(param 'f.Dense_1.bias\[0\]' free.json)" != 0
check "--fix f" fit fix --fix f
check "--fix f: k fitted" test "$(param k fix.json)" != 1
check "--fix f: weights kept" test "$(param 'f.Dense_1.bias\[0\]' fix.json)" = 0
check "--free f.Dense_1 (a layer)" fit layer --free f.Dense_1
check "--free f.Dense_1: Dense_0 kept" test "$(param 'f.Dense_0.bias\[0\]' layer.json)" = 0

# --params names weights, negative values included
"$REMAT" pfr simulate --mechanism k.mech --init A=1,B=1 --length 1 --out p0.csv >/dev/null
"$REMAT" pfr simulate --mechanism k.mech --init A=1,B=1 --length 1 --params 'f.Dense_1.bias[0]=-0.5' \
    --out p1.csv >out.txt 2>&1
check "--params weight=-0.5" has out.txt "f.Dense_1.bias[0] = -0.5"
check "--params weight: slower" below "$(tail -1 p1.csv | cut -d, -f4)" "$(tail -1 p0.csv | cut -d, -f4)"

# pfr ensemble: a parameter set per row (batched weights) equals simulate's outlet
printf 'k,f.Dense_1.bias[0]\n1,0\n2,-0.5\n' >sets.csv
"$REMAT" pfr ensemble --mechanism k.mech --params-file sets.csv --init A=1,B=1 --length 1 --steps 20 \
    --out ens.csv >/dev/null 2>&1
"$REMAT" pfr simulate --mechanism k.mech --init A=1,B=1 --length 1 --steps 20 --params 'k=2,f.Dense_1.bias[0]=-0.5' \
    --out s2.csv >/dev/null 2>&1
check "ensemble row 2 = simulate" near "$(sed -n 3p ens.csv | cut -d, -f5)" "$(tail -1 s2.csv | cut -d, -f4)" 1e-12
# pfr optimize: the weights are declared unbounded (their 'net' line), so
# --min-param (default 0.01) neither refuses the negative starting weights
# nor bounds a weight from below
"$REMAT" pfr optimize --mechanism k.mech --init A=1,B=1 --length 1 --maximize C --fix k --iters 5 --json \
    >opt.json 2>opt.err
check "optimize with negative starting weights: runs" test $? -eq 0
check "optimize: a weight's lower bound is -inf (null), not --min-param" \
    grep -q '"lower_bounds": {"k": 1, "f.Dense_0.kernel\[0\]\[0\]": null' opt.json
check "UDE example, short" "$EX/run.sh" "$REMAT" "$work/ude" 0.005 30
exit $fail

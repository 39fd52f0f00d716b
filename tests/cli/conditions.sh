#!/usr/bin/env bash
# conditions.sh REMAT ARRHENIUS — experiments with conditions (mechanism
# 'cond', data files' '# T = ...' lines and condition columns, --cond):
#   - the three-temperature Arrhenius fit of examples/arrhenius (T a
#     condition set by each file's '# T = ...', initial values by '# A = 1')
#     gives the estimates and standard errors of the same model written the
#     old way, T a state (T' = 0) set by each file's first row, to 1e-9;
#   - T is never data: 120 measured values and 118 degrees of freedom, also
#     when a lab file repeats T on every row as a column (the old way counts
#     that column as data);
#   - the conditions per experiment in the table and --json; --cond is the
#     default of files that set none; a file's own value wins;
#   - a condition column that changes within a file is an error naming
#     file:line; pfr simulate --cond changes the outlet;
#   - --free / --fix, and fit --out writing each experiment's profile
#     (%.17g, named after its data file, nothing written on an error).
set -u
REMAT=$1 ARR=$2
ARR=$(cd "$ARR" && pwd)
. "$(dirname "$0")/lib.sh"
cd "$work"
num() { sed -n "s/.*\"$1\": \([-0-9.eE+]*\).*/\1/p" "$2" | head -n 1; }
near() { awk -v a="$1" -v b="$2" -v r="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; if (b < 0) b = -b; exit !(d <= r * b) }' ||
    { echo "     $1 is not within $3 of $2" >&2; false; }; }
# the numbers of one parameter in a fit's JSON: fitted value, standard error
param() { sed -n "s/.*\"params\": {[^}]*\"$1\": \([-0-9.eE+]*\).*/\1/p" "$2" | head -n 1; }
se() { sed -n "s/.*\"std_errors\": {[^}]*\"$1\": \([-0-9.eE+]*\).*/\1/p" "$2" | head -n 1; }
fit() { "$REMAT" pfr fit --method rk4 --steps 20 "$@"; }
temps="330 350 370"

# the old way: T a state; row 0 at t = 0 is the initial state (T given
# there only), the other rows the same data
for T in $temps; do
    awk -F, -v T="$T" '/^#/ { next } /^t,/ { print "t,A,B,T"; print "0,1,0," T; next } { print $0 "," }' \
        "$ARR/T$T.csv" >"old$T.csv"
    # a lab file repeating T on every row: a condition column for arrhenius.mech
    awk -F, -v T="$T" '/^# T/ { next } /^t,/ { print "t,A,B,T"; next } /^#/ { print; next } { print $0 "," T }' \
        "$ARR/T$T.csv" >"lab$T.csv"
done
fit --mechanism "$ARR/arrhenius.mech" --data "$ARR/T330.csv" --data "$ARR/T350.csv" --data "$ARR/T370.csv" \
    --json >cond.json 2>cond.err
check "the fit with conditions exits 0" test $? -eq 0
fit --mechanism "$ARR/arrhenius_state.mech" --data old330.csv --data old350.csv --data old370.csv \
    --json >state.json 2>state.err
check "the fit with T as a state exits 0" test $? -eq 0
for p in kref E; do
    check "$p: the same estimate as T as a state" near "$(param $p cond.json)" "$(param $p state.json)" 1e-9
    check "$p: the same standard error as T as a state" near "$(se $p cond.json)" "$(se $p state.json)" 1e-9
done
check "kref is recovered (0.5)" near "$(param kref cond.json)" 0.5 0.01
check "E is recovered (6)" near "$(param E cond.json)" 6 0.01
check "T is not data: 120 measured values" has cond.json '"n_residuals": 120'
check "T is not data: 118 degrees of freedom" has cond.json '"dof": 118,'
check "the old way has as many residuals" has state.json '"n_residuals": 120'
check "--json lists each experiment's conditions" has cond.json '"conditions": [{"T": 330}, {"T": 350}, {"T": 370}]'

fit --mechanism "$ARR/arrhenius.mech" --data lab330.csv --data lab350.csv --data lab370.csv --json >lab.json 2>lab.err
check "a condition column: the fit exits 0" test $? -eq 0
check "a condition column is not data: 118 degrees of freedom" has lab.json '"dof": 118,'
check "a condition column gives the same estimate" near "$(param E lab.json)" "$(param E cond.json)" 1e-12
fit --mechanism "$ARR/arrhenius.mech" --data lab330.csv --json >lab1.json 2>&1
check "one lab file with conditions: 38 degrees of freedom" has lab1.json '"dof": 38,'
fit --mechanism "$ARR/arrhenius_state.mech" --data lab330.csv --init A=1,T=330 --json >labstate.json 2>&1
check "the old way counts a repeated T column as data (58)" has labstate.json '"dof": 58,'

fit --mechanism "$ARR/arrhenius.mech" --data "$ARR/T330.csv" --data "$ARR/T370.csv" >table.txt 2>&1
check "the table names each experiment's conditions" has table.txt "experiment 2 ($ARR/T370.csv): T = 370"

# --cond: the default of a file that sets none; a file's own value wins
grep -v '^# T' "$ARR/T370.csv" >noT.csv
fit --mechanism "$ARR/arrhenius.mech" --data "$ARR/T330.csv" --data noT.csv --cond T=370 --json >dflt.json 2>&1
check "--cond sets the condition of a file without one" has dflt.json '"conditions": [{"T": 330}, {"T": 370}]'
fit --mechanism "$ARR/arrhenius.mech" --data "$ARR/T330.csv" --data "$ARR/T370.csv" --cond T=999 --json >win.json 2>&1
check "a file's own '# T = ...' wins over --cond" has win.json '"conditions": [{"T": 330}, {"T": 370}]'

# a condition column that changes within the file
awk -F, '/^t,/ { print "t,A,B,T"; next } /^#/ { next } NR == 9 { print $0 ",351"; next } { print $0 ",350" }' \
    "$ARR/T350.csv" >changing.csv
fit --mechanism "$ARR/arrhenius.mech" --data changing.csv >chg.out 2>chg.err
check "a changing condition column exits 2" test $? -eq 2
check "a changing condition column is named with file:line" has chg.err "changing.csv:5: column 'T': condition 'T' is 351 here but 350 at line 2"

# pfr simulate --cond: a hotter reactor converts more
sim() { "$REMAT" pfr simulate --mechanism "$ARR/arrhenius.mech" --init A=1 --length 5 --json "$@"; }
sim --cond T=330 >cold.json 2>&1
sim --cond T=370 >hot.json 2>&1
a_cold=$(sed -n 's/.*"outlet": {"A": \([-0-9.eE+]*\).*/\1/p' cold.json)
a_hot=$(sed -n 's/.*"outlet": {"A": \([-0-9.eE+]*\).*/\1/p' hot.json)
check "simulate --json names the conditions" has hot.json '"conditions": {"T": 370}'
"$REMAT" pfr simulate --mechanism "$ARR/arrhenius.mech" --init A=1 --length 5 >table.sim 2>&1
check "simulate's table names the conditions (the default)" has table.sim "  conditions T = 350"
check "simulate --cond T=370 converts more A than T=330" awk -v c="$a_cold" -v h="$a_hot" 'BEGIN { exit !(h < c && h > 0) }'

# pfr ensemble / optimize / compare --cond: the condition reaches the rates,
# and optimize moves the parameters only
printf 'kref\n0.5\n' >sets.csv
for T in 330 370; do
    "$REMAT" pfr ensemble --mechanism "$ARR/arrhenius.mech" --init A=1 --length 5 --steps 200 \
        --params-file sets.csv --cond T=$T --out ens$T.csv >/dev/null 2>&1
done
check "ensemble --cond: T=370 converts more A than T=330" \
    awk -F, 'NR == FNR && FNR == 2 { c = $2 } NR != FNR && FNR == 2 { exit !($2 < c) }' ens330.csv ens370.csv
"$REMAT" pfr optimize --mechanism "$ARR/arrhenius.mech" --init A=1 --length 5 --maximize B --cond T=370 \
    --json >opt.json 2>&1
check "optimize --cond exits 0" test $? -eq 0
check "optimize moves the parameters only" has opt.json '"start": {"kref": 0.29999999999999999, "E": 5}'
check "optimize --json gives the run's conditions" has opt.json '"conditions": {"T": 370}'
"$REMAT" pfr optimize --mechanism "$ARR/arrhenius.mech" --init A=1 --length 5 --maximize B --cond T=330 \
    --json >opt330.json 2>&1
# the concentration at the start: lbfgs-b's evaluation 0 (the default with
# --mechanism), or Adam's iteration 0 (before its first update)
c0() { sed -n 's/.*"\(evaluation\|iteration\)": 0, "concentration[_a-z]*": \([-0-9.eE+]*\).*/\2/p' "$1"; }
check "optimize --cond reaches the rates (T=370 starts with more B)" \
    awk -v a="$(c0 opt330.json)" -v b="$(c0 opt.json)" 'BEGIN { exit !(b > a && a > 0) }'
for T in 330 370; do
    "$REMAT" pfr compare --mechanism "$ARR/arrhenius.mech" --init A=1 --length 5 --maximize B --cond T=$T \
        --json >cmp$T.json 2>&1
done
loss() { sed -n 's/.*"loss": \([-0-9.eE+]*\).*/\1/p' "$1" | head -n 1; }
check "compare --cond reaches the rates (T=370 makes more B: a lower loss)" \
    awk -v a="$(loss cmp330.json)" -v b="$(loss cmp370.json)" 'BEGIN { exit !(b < a && a < 0) }'

# --free / --fix
fit --mechanism "$ARR/arrhenius.mech" --data "$ARR/T330.csv" --data "$ARR/T370.csv" --free E --json >free.json 2>&1
check "--free E keeps kref at its start" has free.json '"params": {"kref": 0.3, '
check "--free E: one free parameter, 79 degrees of freedom" has free.json '"dof": 79,'
fit --mechanism "$ARR/arrhenius.mech" --data "$ARR/T330.csv" --data "$ARR/T370.csv" --fix kref --json >fix.json 2>&1
check "--fix kref is --free E" same <(param E free.json) <(param E fix.json)

# --plot-residuals: a file whose '# A = 1', '# B = 0' give the initial state
# has residuals on its first row too (each residual drawn at its own cell)
fit --mechanism "$ARR/arrhenius.mech" --data "$ARR/T330.csv" --data "$ARR/T370.csv" --plot-residuals res.svg \
    >res.out 2>res.err
check "--plot-residuals with initial values from comments exits 0" test $? -eq 0
check "--plot-residuals draws" test -s res.svg

# --out DIR: each experiment's profile named after its data file
mkdir out
fit --mechanism "$ARR/arrhenius.mech" --data "$ARR/T330.csv" --data "$ARR/T370.csv" --out out >out.txt 2>&1
check "--out exits 0" test $? -eq 0
check "--out writes T330.csv" test -f out/T330.csv
check "--out's header names the species" same <(head -n 1 out/T370.csv) <(echo "t,A,B")
check "--out has a row per data row" test "$(wc -l <out/T370.csv)" -eq 21
check "--out writes %.17g" awk -F, 'NR == 2 { exit !(length($2) >= 17) }' out/T370.csv
mkdir out2
fit --mechanism "$ARR/arrhenius.mech" --data "$ARR/T330.csv" --data changing.csv --out out2 >/dev/null 2>&1
check "--out writes nothing on an error" test -z "$(ls out2)"
exit $fail

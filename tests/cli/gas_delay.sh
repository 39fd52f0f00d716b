#!/usr/bin/env bash
# gas_delay.sh REMAT MECHANISMS GOLDENS — `remat pfr fit` on ignition delays
# (remat/fit.h "Ignition delays"): one file per experiment whose first
# column is tau, its T, P and composition in comments; then the same three
# delays as one table (a row per experiment) give the same estimates. Cantera's delays of
# h2o2.yaml at 1000, 1100 and 1300 K (tests/goldens/cantera_h2o2.json, T0 +
# 400 K) fitted with m3, m11 free from 0.7, 1.4: both must come back to the
# mechanism's 1 within 1e-5 (remat's delays are within 2e-7 of Cantera's);
# --json names each experiment's T and P, counts three residuals and gives
# each measured and fitted delay.
set -u
REMAT=$1
MECH=$2
GOLD=$3
. "$(dirname "$0")/lib.sh"
cd "$work"
num() { sed -n "s/.*\"$1\": \([-0-9.eE+]*\).*/\1/p" "$2" | head -n 1; }
near() { awk -v a="$1" -v b="$2" -v r="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= r * (b < 0 ? -b : b)) }' ||
    { echo "     '$1' is not within $3 of $2" >&2; false; }; }
grep -o '"delay": [0-9.eE+-]*' "$GOLD/cantera_h2o2.json" | sed 's/"delay": //' >delays.txt
check "the goldens give three delays" test "$(wc -l <delays.txt)" -eq 3
i=0
for T in 1000 1100 1300; do
    i=$((i + 1))
    { printf '# T = %s\n# P = 101325\n# H2 = 2\n# O2 = 1\n# N2 = 3.76\ntau\n' $T; sed -n "${i}p" delays.txt; } >d$T.csv
done
"$REMAT" pfr fit --mechanism "$MECH/h2o2.yaml" --data d1000.csv --data d1100.csv --data d1300.csv \
    --free m3,m11 --params m3=0.7,m11=1.4 --weighting relative --json >fit.json 2>fit.err
check "fit exits 0 (converged)" test $? -eq 0
check "m3 back to 1 within 1e-5" near "$(num m3 fit.json)" 1 1e-5
check "m11 back to 1 within 1e-5" near "$(num m11 fit.json)" 1 1e-5
check "three residuals, one per delay" has fit.json '"n_residuals": 3,'
tau=$(sed -n 1p delays.txt)
fitted=$(sed -n 's/.*"delays": \[{"measured": [0-9.eE+-]*, "fitted": \([0-9.eE+-]*\)}.*/\1/p' fit.json)
check "--json gives each experiment's measured and fitted delay" has fit.json "\"delays\": [{\"measured\": $tau, \"fitted\": "
check "... the fitted 1000 K delay within 1e-6 of Cantera's" near "$fitted" "$tau" 1e-6
check "--json gives each experiment's T and P" has fit.json \
    '"conditions": [{"T": 1000, "P": 101325}, {"T": 1100, "P": 101325}, {"T": 1300, "P": 101325}]'
# the same three delays as a table (remat/dataset.h "Ignition-delay tables"):
# one file, one experiment per row, T a column, P and the composition
# comments for every row: the estimates of the three files
{ printf '# P = 101325\n# H2 = 2\n# O2 = 1\n# N2 = 3.76\ntau,T\n'; paste -d, delays.txt <(printf '1000\n1100\n1300\n'); } >table.csv
"$REMAT" pfr fit --mechanism "$MECH/h2o2.yaml" --data table.csv \
    --free m3,m11 --params m3=0.7,m11=1.4 --weighting relative --json >tfit.json 2>tfit.err
check "a table's fit exits 0 (converged)" test $? -eq 0
check "... m3 the three files' within 1e-9" near "$(num m3 tfit.json)" "$(num m3 fit.json)" 1e-9
check "... m11 the three files' within 1e-9" near "$(num m11 tfit.json)" "$(num m11 fit.json)" 1e-9
check "... three residuals" has tfit.json '"n_residuals": 3,'
check "... each row an experiment named FILE:LINE" has tfit.json '"data": ["table.csv:6", "table.csv:7", "table.csv:8"]'
check "... with its own T and P" has tfit.json \
    '"conditions": [{"T": 1000, "P": 101325}, {"T": 1100, "P": 101325}, {"T": 1300, "P": 101325}]'
tfitted=$(sed -n 's/.*"delays": \[{"measured": [0-9.eE+-]*, "fitted": \([0-9.eE+-]*\)}.*/\1/p' tfit.json)
check "... the fitted 1000 K delay the files' within 1e-9" near "$tfitted" "$fitted" 1e-9
# the table: each experiment's conditions, measured and fitted delay
"$REMAT" pfr fit --mechanism "$MECH/h2o2.yaml" --data d1000.csv --data d1100.csv --data d1300.csv \
    --free m3,m11 --weighting relative --max-iters 1 >table.txt 2>table.err
check "fit --max-iters 1 exits 0 or 3 (results printed)" test $? -eq 0 -o $? -eq 3
check "the table names experiment 1's conditions and delays" grep -qE \
    '^experiment 1 \(d1000.csv\): T = 1000, P = 101325; ignition delay 0.0003111377586 s, fitted 0.000311137[0-9]+ s$' \
    table.txt
exit $fail

#!/usr/bin/env bash
# fit_report.sh REMAT BATTERY — what `remat pfr fit` reports besides the fit:
#   - standard errors, 95% intervals, degrees of freedom and correlations at
#     the optimum, in the table and in --json, matching NIST's certified
#     standard errors for Misra1a (bench/battery/misra1a);
#   - a warning naming the parameters the data cannot identify;
#   - --json leaves the per-iteration history out unless --history;
#   - --starts N --seed S: N starts, the spread, the same seed the same starts;
#   - --sigma (or a sigma_<species> data column) divides residuals (SSE /
#     sigma^2, standard errors unchanged),
#     --weighting relative is named in --json;
#   - --plot-residuals writes its plot.
# Equal starts rest on contract 1 (docs/design-notes.md, "Bitwise contracts").
set -u
REMAT=$1 BAT=$2
BAT=$(cd "$BAT" && pwd)
. "$(dirname "$0")/lib.sh"
cd "$work"
num() { sed -n "s/.*\"$1\": \([-0-9.eE+]*\).*/\1/p" "$2" | head -n 1; }
near() { awk -v a="$1" -v b="$2" -v r="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= r * b) }' ||
    { echo "     $1 is not within $3 of $2" >&2; false; }; }
# NIST certifies the closed form; the fit integrates it, and its data times are
# reached by dense output (one adaptive loop, rows interpolated), whose error
# at the default rtol 1e-6 moves the SSE by ~4e-5 relative: the comparisons
# to NIST's digits integrate at rtol 1e-8.
TIGHT="--rtol 1e-8 --atol 1e-11"
misra() { "$REMAT" pfr fit --mechanism "$BAT/misra1a.mech" --data "$BAT/misra1a.csv" $TIGHT "$@"; }

misra >table.txt 2>table.err
check "misra1a exits 0" test $? -eq 0
check "the table has standard errors and intervals" has table.txt "std. error       95% CI low      95% CI high"
check "the table gives the degrees of freedom" has table.txt "degrees of freedom 12,"
check "the table gives b1's standard error (NIST 2.7070075241)" has table.txt " 2.707 "
check "the table has the correlation matrix" has table.txt "correlation"

misra --json >fit.json 2>fit.err
check "--json exits 0" test $? -eq 0
check "--json has the statistics" has fit.json '"statistics": {"available": true, "dof": 12,'
sed -n 's/.*"std_errors": {"b1": \([-0-9.eE+]*\), "b2": \([-0-9.eE+]*\)}.*/\1 \2/p' fit.json >se.txt
read -r se1 se2 <se.txt
check "b1's standard error is NIST's within 1e-6" near "$se1" 2.7070075241 1e-6
check "b2's standard error is NIST's within 1e-6" near "$se2" 7.2668688436e-06 1e-6
check "--json without --history has no history" sh -c "! grep -q '\"history\"' fit.json"
misra --json --history >hist.json 2>hist.err
check "--json --history has the history" has hist.json '"history": ['

misra --json --starts 4 --seed 5 >s1.json 2>s1.err
check "--starts exits 0" test $? -eq 0
check "--json has the starts" has s1.json '"starts": {"n": 4, "seed": 5,'
misra --json --starts 4 --seed 5 >s2.json 2>s2.err
grep '"objectives"' s1.json >o1.txt
grep '"objectives"' s2.json >o2.txt
check "the same seed gives the same starts" same o1.txt o2.txt
misra --starts 4 --seed 5 >s.txt 2>s.err
check "the table gives the spread" has s.txt "starts: 4 (seed 5), "

misra --json --sigma y=0.1 >w.json 2>w.err
check "--sigma exits 0" test $? -eq 0
check "--sigma divides the SSE by sigma^2" near "$(num objective w.json)" 12.455138894 1e-6
sed -n 's/.*"std_errors": {"b1": \([-0-9.eE+]*\),.*/\1/p' w.json >sew.txt
check "--sigma leaves the standard errors (scaled by s^2) as they were" near "$(cat sew.txt)" "$se1" 1e-6
awk -F, 'NR == 1 { print $0 ",sigma_y"; next } { print $0 "," (NR == 2 ? "" : "0.1") }' "$BAT/misra1a.csv" >sig.csv
"$REMAT" pfr fit --mechanism "$BAT/misra1a.mech" --data sig.csv $TIGHT --json >wc.json 2>wc.err
check "a sigma_y column in the data weights like --sigma y=0.1" near "$(num objective wc.json)" 12.455138894 1e-6
misra --json --weighting relative >rel.json 2>rel.err
check "--weighting relative exits 0" test $? -eq 0
check "--json names the weighting" has rel.json '"weighting": "relative"'

# k1 and k2 appear only as their product
sed 's/^param b2 = 1e-4/param b2 = 1e-4\nparam c = 1/; s/^y. = b2 \* (b1 - y)/y'"'"' = b2 * c * (b1 - y)/' \
    "$BAT/misra1a.mech" | grep -v '^# @' >prod.mech
"$REMAT" pfr fit --mechanism prod.mech --data "$BAT/misra1a.csv" --max-iters 5 >prod.txt 2>prod.err
check "a product of two constants: both named not identifiable" has prod.txt \
    "warning: not identifiable from these data: b2, c"

if "$REMAT" --version | grep -q "plots: PLplot"; then
    misra --plot-residuals res.png >/dev/null 2>res.err
    check "--plot-residuals exits 0" test $? -eq 0
    check "--plot-residuals writes a PNG" sh -c "head -c 4 res.png | grep -q PNG"
else
    echo "note: this remat has no PLplot; --plot-residuals not drawn"
fi
exit $fail

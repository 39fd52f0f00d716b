#!/usr/bin/env bash
# plot_options.sh REMAT ROBERTSON_DIR — --log-x, --log-y and --species on the
# plots of `remat pfr simulate`, `fit` and `optimize` (issue 21), with
# Robertson's stiff kinetics, whose data span t = 1e-4 .. 1e5:
#   - the options are taken and the file is written;
#   - the SVG's tick labels are decades (PLplot's "10" with the exponent as
#     a superscript): the fit's time axis spans the decades from the first
#     to the last data time of the CSV (read here, not assumed), labelled
#     every k-th (the multiples of the least k leaving at most 6 labels per
#     axis: 10 decades wrote 10^-10 over 10^-11), as is its log y axis; an
#     axis of few decades labels every one; the profile of simulate, which
#     starts at z = 0, is not stretched down to 1e-300 by the inlet (its
#     smallest x label is the first profile point's);
#   - --species draws only the species listed (the legend names them);
#   - unknown species are refused (tests/cli/bad_inputs.txt has the rows);
#   - a gas mechanism's T is drawn in a panel of its own ("T (K)"), its
#     species on a "mole fraction" axis, in fit and simulate; the fit's T
#     residuals (kelvin) in a panel of their own too, never on the species'
#     residual axis;
#   - each fit panel's title gives its experiment's conditions; simulate's
#     gives the file's name, its gas axis the residence time (s);
#   - up to ten curves get ten colours (then dashes).
# Without PLplot the tool refuses every --plot: the test is skipped.
set -u
REMAT=$1
EX=$2
. "$(dirname "$0")/lib.sh"
case $EX in /*) ;; *) EX=$PWD/$EX ;; esac
GAS=$(cd "$(dirname "$0")/data" && pwd) # tests/cli/data: a gas mechanism
cd "$work"
if "$REMAT" pfr optimize --plot probe.svg 2>&1 | grep -q "without PLplot"; then
    echo "SKIP: this remat has no PLplot"
    exit 77
fi
# the text of an SVG PLplot wrote, one node per line (it writes every
# character as &#xHH;)
svgtext() {
    grep -o '>[^<]*<' "$1" | sed 's/^>//; s/<$//' | grep -v '^[[:space:]]*$' |
        sed 's/&#x\([0-9a-fA-F]\{2\}\);/\\u00\1/g; s/&#x\([0-9a-fA-F]\{4\}\);/\\u\1/g' |
        while IFS= read -r l; do printf '%b\n' "$l"; done
}
# the exponents of the decade labels, in order ("10" then the exponent)
decades() { svgtext "$1" | awk 'prev == "10" && $0 ~ /^-?[0-9]+$/ { printf "%s ", $0 } { prev = $0 }'; }
fit=(pfr fit --mechanism "$EX/robertson.mech" --data "$EX/robertson.csv" --init A=1 --params k1=0.1,k2=1e7,k3=3e3
    --method rodas5 --weighting relative)

"$REMAT" "${fit[@]}" --plot fit.svg --log-x --log-y --plot-residuals res.svg >/dev/null 2>fit.err
check "fit --log-x --log-y exits 0" test $? -eq 0
check "fit --plot written" test -s fit.svg
check "fit --plot-residuals written" test -s res.svg
# the decades of the data's times, from the CSV
# floor and ceiling of log10, forgiving awk's rounding of log(1000) / log(10)
LOG10='function fl(x, a) { a = log(x) / log(10) + 1e-9; return (a >= 0 || a == int(a)) ? int(a) : int(a) - 1 }
function cl(x) { return -fl(1 / x) }'
span=$(awk -F, "$LOG10"'
    NR > 1 && $1 > 0 { if (lo == "" || $1 < lo) lo = $1; if ($1 > hi) hi = $1 }
    END { for (e = fl(lo); e <= cl(hi); e++) printf "%d ", e }' "$EX/robertson.csv")
check "the data span more than 8 decades ($span)" test "$(echo "$span" | wc -w)" -gt 8
# the decades labelled: the multiples of the least k leaving at most 6
labelled() { echo "$1" | awk '{ for (k = 1; ; k++) { n = 0; s = ""
    for (i = 1; i <= NF; i++) if ($i % k == 0) { n++; s = s $i " " }
    if (n <= 6) { printf "%s", s; exit } } }'; }
want=$(labelled "$span")
check "the time axis labels every k-th decade, k > 1 ($want)" test "$(echo "$want" | wc -w)" -lt "$(echo "$span" | wc -w)"
got=$(decades fit.svg)
check "the fit's time axis labels the decades $want (got $got)" test "${got#"$want"}" != "$got"
check "the residuals' time axis too" test "$(decades res.svg)" = "$want"
# the y labels: those past the x axis's, evenly spaced, at most 6
ylab=${got#"$want"}
check "the fit's y axis is log too (labels past the x decades: $ylab)" test -n "$ylab"
check "the fit's y axis labels 6 decades at most ($ylab)" test "$(labelled "$ylab")" = "$ylab"
check "fit legend names A, B, C" test "$(svgtext fit.svg | grep -cxE 'A|B|C')" -eq 3

"$REMAT" "${fit[@]}" --plot fitc.svg --species C,A --log-x >/dev/null 2>fitc.err
check "fit --species C,A exits 0" test $? -eq 0
check "fit --species: A and C only" test "$(svgtext fitc.svg | grep -xE 'A|B|C' | tr '\n' ' ')" = "A C "
check "fit --log-x alone: a linear y axis (no decade labels past x's)" test "$(decades fitc.svg)" = "$want"

"$REMAT" pfr simulate --mechanism "$EX/robertson.mech" --init A=1 --method rodas5 --length 1e5 \
    --plot sim.svg --log-x --log-y --species A,C --out sim.csv >/dev/null 2>sim.err
check "simulate --log-x --log-y --species exits 0" test $? -eq 0
check "simulate --plot written" test -s sim.svg
check "simulate --species: A and C only" test "$(svgtext sim.svg | grep -xE 'A|B|C' | tr '\n' ' ')" = "A C "
# the first x label: the decade below the first profile point after the inlet
z1=$(awk -F, 'NR == 3 { print $1 }' sim.csv)
first=$(awk -v z="$z1" "$LOG10"' BEGIN { print fl(z) }')
check "simulate's log x axis starts at the decade of z = $z1, not at the inlet's 0" \
    test "$(decades sim.svg | cut -d' ' -f1)" = "$first"
check "simulate's x axis of few decades labels every one" \
    test "$(decades sim.svg | cut -d' ' -f1-3)" = "$first $((first + 1)) $((first + 2))"

"$REMAT" pfr optimize --plot opt.svg --log-y >/dev/null 2>opt.err
check "optimize --log-y exits 0" test $? -eq 0
check "optimize --plot written" test -s opt.svg

# a gas mechanism: T (K) in a panel of its own, off the mole-fraction axis
# (it was drawn on the species' "concentration" axis, flattening them);
# interpreted loops: how a loop runs is not what this checks
ylabels() { svgtext "$1" | grep -xE 'concentration|mole fraction|T \(K\)' | tr '\n' '|'; }
REMAT_JIT=never "$REMAT" pfr fit --mechanism "$GAS/gas_ab.yaml" --data "$GAS/gas_ab_BT.csv" --free m1 --params m1=0.7 \
    --plot gasfit.svg >/dev/null 2>gasfit.err
check "gas fit --plot exits 0" test $? -eq 0
check "gas fit: B on a mole-fraction axis, T on its own" test "$(ylabels gasfit.svg)" = "mole fraction|T (K)|"
# each experiment's panel is titled with its conditions (the issue's "conditions in the legend")
svgtext gasfit.svg >gasfit.txt
check "gas fit: the panel's title gives the experiment's T and P" \
    has gasfit.txt "gas_ab_BT.csv (T = 1000, P = 101325): fit (lines) and data (points)"
"$REMAT" pfr fit --mechanism "$GAS/cond.mech" --data "$GAS/good_cond.csv" --plot condfit.svg >/dev/null 2>condfit.err
check "a fit with a 'cond' exits 0" test $? -eq 0
svgtext condfit.svg >condfit.txt
check "its panel's title gives the file's '# T = 340'" has condfit.txt "good_cond.csv (T = 340): fit (lines) and data (points)"
REMAT_JIT=never "$REMAT" pfr fit --mechanism "$GAS/gas_ab.yaml" --data "$GAS/gas_ab_BT.csv" --free m1 --params m1=0.7 \
    --plot gasfitT.svg --species T >/dev/null 2>gasfitT.err
check "gas fit --species T: the T panel alone" test "$(ylabels gasfitT.svg)" = "T (K)|"
REMAT_JIT=never "$REMAT" pfr simulate --mechanism "$GAS/gas_ab.yaml" --cond T=1000 --init A=1 --length 0.004 \
    --plot gassim.svg >/dev/null 2>gassim.err
check "gas simulate --plot exits 0" test $? -eq 0
check "gas simulate: A and B on a mole-fraction axis, T on its own" \
    test "$(ylabels gassim.svg)" = "mole fraction|T (K)|"
check "gas simulate: the legend names A and B" test "$(svgtext gassim.svg | grep -xE 'A|B' | tr '\n' ' ')" = "A B "
svgtext gassim.svg >gassim.txt
check "gas simulate: titled by the file's name (not its path, which overflowed the panel)" \
    has gassim.txt "PFR profiles: gas_ab.yaml"
check "gas simulate: its axis is the residence time in s" has gassim.txt "residence time t (s)"
# seven species, seven colours (the palette had five: the 1st and 6th curves were one colour)
printf 'species A, B, C, D, E, F, G\nparam k = 1\nA -> B : k\nB -> C : k\nC -> D : k\nD -> E : k\nE -> F : k\nF -> G : k\n' \
    >seven.mech
"$REMAT" pfr simulate --mechanism seven.mech --init A=1 --plot seven.svg >/dev/null 2>seven.err
check "seven species: simulate --plot exits 0" test $? -eq 0
colours=$(grep -o 'stroke="#[0-9a-fA-F]*"' seven.svg | grep -viE '#000000|#ffffff' | sort -u | wc -l)
check "seven species are drawn in seven colours (got $colours)" test "$colours" -eq 7
REMAT_JIT=never "$REMAT" pfr simulate --mechanism "$GAS/gas_ab.yaml" --cond T=1000 --init A=1 --length 0.004 \
    --plot gassimB.svg --species B >/dev/null 2>gassimB.err
check "gas simulate --species B: no T panel" test "$(ylabels gassimB.svg)" = "mole fraction|"

# --plot-residuals of a gas fit: the species' residuals on one axis, T's
# (kelvin, or weighted) on a panel of its own; in drawing order, each
# panel's y label then its legend (the residuals of T were drawn among the
# species', and the plot aborted on a gas fit's first row, which is data)
rlabels() { svgtext "$1" | grep -xE 'residual|T residual \((K|weighted)\)|B|T' | tr '\n' '|'; }
gasfit=(pfr fit --mechanism "$GAS/gas_ab.yaml" --data "$GAS/gas_ab_BT.csv" --free m1 --params m1=0.7)
REMAT_JIT=never "$REMAT" "${gasfit[@]}" --plot-residuals gasres.svg >/dev/null 2>gasres.err
check "gas fit --plot-residuals exits 0" test $? -eq 0
check "gas fit --plot-residuals: nothing on stderr" test ! -s gasres.err
check "gas residuals: B on the residual axis, T on its own in kelvin" \
    test "$(rlabels gasres.svg)" = "residual|B|T residual (K)|T|"
REMAT_JIT=never "$REMAT" "${gasfit[@]}" --weighting relative --plot-residuals gasresw.svg >/dev/null 2>gasresw.err
check "gas fit --weighting relative --plot-residuals exits 0" test $? -eq 0
check "weighted gas residuals: T's panel says weighted, not kelvin" \
    test "$(rlabels gasresw.svg)" = "residual|B|T residual (weighted)|T|"
REMAT_JIT=never "$REMAT" "${gasfit[@]}" --species T --plot-residuals gasresT.svg >/dev/null 2>gasresT.err
check "gas residuals --species T: the T panel alone" test "$(rlabels gasresT.svg)" = "T residual (K)|T|"
REMAT_JIT=never "$REMAT" "${gasfit[@]}" --species B --plot-residuals gasresB.svg >/dev/null 2>gasresB.err
check "gas residuals --species B: no T panel" test "$(rlabels gasresB.svg)" = "residual|B|"
exit $fail

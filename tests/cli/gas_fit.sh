#!/usr/bin/env bash
# gas_fit.sh REMAT MECHANISMS — `remat pfr fit` on a gas mechanism
# (remat/gas.h): rate multipliers recovered from noise-free ignition profiles
# at two temperatures. The data: T profiles of h2o2.yaml (H2/O2/N2 2:1:3.76,
# 1000 K and 1100 K) written by `pfr simulate --out` with m3 = 1.3 and
# m11 = 0.8 (O + H2 <=> H + OH, H + O2 <=> O + OH). The 1000 K file gives its
# temperature and composition in '# NAME = VALUE' comments (amounts twice
# the others', normalised to the same mole fractions); the 1100 K file has
# none and takes --cond T=1100 and --init. A third experiment at 1200 K and
# five atmospheres gives its pressure as '# P = 506625' (its own: the
# others stay at one atmosphere; shared, the fit could not match it).
# `fit --free m3,m11` from 1, 1 must find both within 1e-4 relative, the
# others fixed at their start values; --json names each experiment's T and P
# among its conditions; the table too, and lists the free parameters only.
# A file that sets P while P is free is refused naming its line.
set -u
REMAT=$1
MECH=$2
. "$(dirname "$0")/lib.sh"
cd "$work"
num() { sed -n "s/.*\"$1\": \([-0-9.eE+]*\).*/\1/p" "$2" | head -n 1; }
near() { awk -v a="$1" -v b="$2" -v r="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= r * (b < 0 ? -b : b)) }' ||
    { echo "     '$1' is not within $3 of $2" >&2; false; }; }
for T in 1000 1100; do
    L=$([ $T = 1000 ] && echo 6.22e-4 || echo 1.78e-4)
    "$REMAT" pfr simulate --mechanism "$MECH/h2o2.yaml" --init H2=2,O2=1,N2=3.76 --cond T=$T --length $L \
        --params m3=1.3,m11=0.8 --out p$T.csv >/dev/null 2>p$T.err
    check "simulate --out at $T K exits 0" test $? -eq 0
done
"$REMAT" pfr simulate --mechanism "$MECH/h2o2.yaml" --init H2=2,O2=1,N2=3.76 --cond T=1200,P=506625 --length 6e-5 \
    --params m3=1.3,m11=0.8 --out p1200.csv >/dev/null 2>p1200.err
check "simulate --out at 1200 K and 5 atm exits 0" test $? -eq 0
{ printf '# T = 1000\n# H2 = 4\n# O2 = 2\n# N2 = 7.52\n'; awk -F, '{ print $1 "," $NF }' p1000.csv; } >e1000.csv
{ printf '# T = 1200\n# P = 506625\n# H2 = 2\n# O2 = 1\n# N2 = 3.76\n'; awk -F, '{ print $1 "," $NF }' p1200.csv; } >e1200.csv
awk -F, '{ print $1 "," $NF }' p1100.csv >e1100.csv
check "the data files' header is t,T" has e1100.csv "t,T"
"$REMAT" pfr fit --mechanism "$MECH/h2o2.yaml" --data e1000.csv --data e1100.csv --data e1200.csv --free m3,m11 \
    --cond T=1100 --init H2=2,O2=1,N2=3.76 --rtol 1e-7 --atol 1e-13 --json >fit.json 2>fit.err
check "fit exits 0 (converged)" test $? -eq 0
check "fit --json names rodas5, the gas default" has fit.json '"method": "rodas5"'
check "m3 recovered within 1e-4" near "$(num m3 fit.json)" 1.3 1e-4
check "m11 recovered within 1e-4" near "$(num m11 fit.json)" 0.8 1e-4
check "--json gives each experiment's T and P" has fit.json \
    '"conditions": [{"T": 1000, "P": 101325}, {"T": 1100, "P": 101325}, {"T": 1200, "P": 506625}]'
check "m1 stays fixed at 1" test "$(num m1 fit.json)" = 1
check "the parameter P stays at its start, one atmosphere" has fit.json '"params": {"P": 101325, "m1": 1,'
# the table: each experiment's T and P; the free parameters only (115 of h2o2's 117 are fixed)
"$REMAT" pfr fit --mechanism "$MECH/h2o2.yaml" --data e1000.csv --data e1100.csv --free m3,m11 \
    --cond T=1100 --init H2=2,O2=1,N2=3.76 --rtol 1e-7 --atol 1e-13 --max-iters 1 >table.txt 2>table.err
check "fit --max-iters 1 exits 3 (not converged, results printed)" test $? -eq 3
check "the table names experiment 1's T and P" has table.txt "experiment 1 (e1000.csv): T = 1000, P = 101325"
check "the table names experiment 2's T (--cond)" has table.txt "experiment 2 (e1100.csv): T = 1100, P = 101325"
check "the table says how many parameters it leaves out" has table.txt \
    "(115 more parameters fixed at their start values; --json lists them)"
check "the table has no row for a fixed multiplier" test "$(grep -c '^m1 ' table.txt)" -eq 0
check "the correlation has the free parameters only" grep -qE '^ +m3 +m11$' table.txt
# P free: one fitted value for all experiments, which a file cannot set
"$REMAT" pfr fit --mechanism "$MECH/h2o2.yaml" --data e1200.csv --free m3,P --max-iters 1 >freeP.out 2>freeP.err
check "a file's '# P' with P free exits 2" test $? -eq 2
check "... naming the file's line and the way out" has freeP.err \
    "e1200.csv:2: the file sets the pressure P of its experiment, but P is a fitted parameter (free)"
check "... and prints no result" test ! -s freeP.out
exit $fail

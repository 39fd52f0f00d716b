#!/bin/sh
# Regenerates the three experiments from remat itself: the profile of
# arrhenius.mech at kref = 0.5, E = 6 (Ea = 49.9 kJ/mol) at T = 330, 350,
# 370 K (remat pfr simulate --cond), rows every 0.5 up to 5, then a seeded
# deterministic noise of about 1% (a linear congruential generator, seed 21)
# so that the fit has residuals and standard errors.
# usage: make_data.sh REMAT   (writes T330.csv T350.csv T370.csv here)
set -eu
remat=$1
here=$(dirname "$0")
seed=21
for T in 330 350 370; do
    "$remat" pfr simulate --mechanism "$here/arrhenius.mech" --init A=1 --params kref=0.5,E=6 \
        --cond T=$T --length 5 --method rk4 --steps 1000 --out "$here/raw.csv" >/dev/null
    awk -F, -v T=$T -v seed=$seed 'BEGIN { s = seed; OFS = "," }
        function u() { s = (1103515245 * s + 12345) % 2147483648; return s / 2147483648 - 0.5 }
        NR == 1 { print "# A -> B at one temperature (examples/arrhenius/make_data.sh)"; print "# T = " T;
                  print "# A = 1"; print "# B = 0"; print "t,A,B"; next }
        { i = NR - 2 } i > 0 && i % 50 == 0 { printf "%g,%.6f,%.6f\n", $1, $2 + 0.02 * u(), $3 + 0.02 * u() }' \
        "$here/raw.csv" >"$here/T$T.csv"
    seed=$((seed + 1))
done
rm -f "$here/raw.csv"

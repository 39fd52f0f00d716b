#!/bin/sh
# Regenerates the profiles of the universal-differential-equation example
# from remat itself: truth.mech (rate 2 A B / (1 + 3 A)) at ten inlets,
# rk4 with 400 steps over z in [0, 4], rows every 0.25, no noise. Eight
# inlets train (train_*.csv); two are held out (heldout_*.csv): along a
# profile A - B stays A0 - B0, and theirs (0.3, 0.2) is no training one's.
# usage: make_data.sh REMAT   (writes the CSV files here)
set -eu
remat=$1
here=$(dirname "$0")
make() { # NAME A0 B0
    "$remat" pfr simulate --mechanism "$here/truth.mech" --init "A=$2,B=$3" --length 4 --method rk4 \
        --steps 400 --out "$here/raw.csv" >/dev/null
    awk -F, -v a="$2" -v b="$3" 'BEGIN { OFS = "," }
        NR == 1 { print "# A + B -> C, rate 2 A B / (1 + 3 A) (examples/netterm/make_data.sh)";
                  print "# A = " a; print "# B = " b; print "# C = 0"; print "t,A,B,C"; next }
        { i = NR - 2 } i > 0 && i % 25 == 0 { printf "%g,%.9f,%.9f,%.9f\n", $1, $2, $3, $4 }' \
        "$here/raw.csv" >"$here/$1.csv"
}
make train_1 1 1
make train_2 2 2
make train_3 2 0.5
make train_4 0.5 2
make train_5 2 1
make train_6 1 2
make train_7 1 0.5
make train_8 0.5 1
make heldout_1 1.5 1.2
make heldout_2 0.8 0.6
rm -f "$here/raw.csv"

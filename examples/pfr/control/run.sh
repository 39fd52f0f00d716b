#!/bin/sh
# run.sh [REMAT] — the optimal temperature profile along the reactor against
# the best isothermal operation: `remat pfr optimize` on each mechanism
# (lbfgs-b, adaptive Tsit5 at rtol 1e-10, whose steps end at the profile's
# knots), then the three optimal C_B side by side.
set -e
REMAT=${1:-remat}
DIR=$(dirname "$0")
TOL="--rtol 1e-10 --atol 1e-12"
for m in isothermal profile linear; do
    echo "== $m.mech"
    "$REMAT" pfr optimize --mechanism "$DIR/$m.mech" --init A=1 --maximize B $TOL | sed -n '/^converged\|^stopped\|^Optimal\|^Maximum/p'
done

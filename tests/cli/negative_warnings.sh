#!/usr/bin/env bash
# negative_warnings.sh REMAT DATA — concentrations an integration made
# negative are warned about, never printed silently as results:
#   - pfr simulate: the species and the first z below zero, with or
#     without --out (the profile is run to find it), exit 0;
#   - pfr ensemble: how many sets and the first one's line and species;
#   - pfr fit: the experiment file, species and time of the fitted model's;
#   - legitimate runs (the seed's defaults, 30 Euler steps at k1 = 3, the
#     ensemble's stable sets) warn about nothing.
set -u
REMAT=$1 DATA=$2
. "$(dirname "$0")/lib.sh"
cd "$work"
quiet() { [ ! -s "$1" ] || { echo "     $1 is not empty:" >&2; sed 's/^/     | /' "$1" >&2; false; }; }

"$REMAT" pfr simulate --mechanism "$DATA/rate_over_a.mech" --init A=1 --method rk4 >sim.txt 2>sim.err
check "simulate rk4 on k/A exits 0" test $? -eq 0
check "simulate warns" has sim.err "warning: $DATA/rate_over_a.mech: the concentration of 'A' is -0.17834 at t = 0.51"
check "simulate still prints the outlet" has sim.txt "-7.05442191"
"$REMAT" pfr simulate --mechanism "$DATA/rate_over_a.mech" --init A=1 --method rk4 --out prof.csv >sim2.txt 2>sim2.err
check "simulate --out warns the same" has sim2.err "'A' is -0.17834 at t = 0.51"
"$REMAT" pfr simulate --steps 16 --params k1=3 >osc.txt 2>osc.err
check "Euler's stable overshoot (h k1 = 1.875) is warned" has osc.err "'A' is -0.875 at z = 0.625"

"$REMAT" pfr simulate >seed.txt 2>seed.err
check "the seed's simulate warns about nothing" quiet seed.err
"$REMAT" pfr simulate --steps 30 --params k1=3 >ok30.txt 2>ok30.err
check "30 Euler steps at k1 = 3 warn about nothing" quiet ok30.err
"$REMAT" pfr simulate --mechanism "$DATA/net.mech" --init A=1 >net.txt 2>net.err
check "an adaptive run warns about nothing" quiet net.err

printf 'k1,k2\n1,0.5\n0.8,0.5\n' >stable.csv
printf 'k1,k2\n1,0.5\n3,0.5\n300,0.5\n' >sets.csv
"$REMAT" pfr ensemble --params-file stable.csv --steps 10 --out stable_out.csv 2>ens_ok.err
check "a stable ensemble exits 0" test $? -eq 0
check "a stable ensemble warns about nothing" quiet ens_ok.err
"$REMAT" pfr ensemble --params-file sets.csv --steps 10 --out sets_out.csv 2>ens.err
check "ensemble with unstable sets exits 0" test $? -eq 0
check "ensemble warns: how many, the first line and species" has ens.err "2 sets gave negative outlet concentrations, below zero by more than rounding (the first at sets.csv:3, 'B')"

if "$REMAT" pfr fit --help >/dev/null 2>&1; then
    "$REMAT" pfr fit --mechanism "$DATA/rate_over_a.mech" --data "$DATA/rate_over_a.csv" --method rk4 --steps 100 >fit.txt 2>fit.err
    check "fit warns: file, species and time" has fit.err "warning: $DATA/rate_over_a.csv: the fitted model's 'A' is -0.126106 at t = 0.505"
    "$REMAT" pfr fit --mechanism "$DATA/net.mech" --data "$DATA/good.csv" >fitok.txt 2>fitok.err
    check "a good fit warns about nothing" quiet fitok.err
else
    echo "note: this remat has no 'pfr fit' command; its rows are not run"
fi
exit $fail

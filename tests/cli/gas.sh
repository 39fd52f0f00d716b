#!/usr/bin/env bash
# gas.sh REMAT MECHANISMS GOLDENS — `remat pfr simulate` on gas mechanisms
# (remat/gas.h): h2o2.yaml at 1100 K reaches Cantera's temperature at the
# end of its golden profile (tests/goldens/cantera_h2o2.json) with the
# defaults (adaptive rodas5, rtol 1e-8, atol 1e-14); the CHEMKIN twin with
# --thermo gives the same; --json has the outlet by species name and T and
# the gradient of T to every multiplier; --energy isothermal keeps T;
# --out writes the profile from one integration's dense output: under
# ulimit -v 250000 KiB (one loop per interval ran out of memory there, 218 MB
# resident), its T within 1e-6 of Cantera's profile at every golden time;
# --method bdf reaches Cantera's T and prints its counts (steps, right-hand
# sides, Jacobians, LU factorisations).
set -u
REMAT=$1
MECH=$2
GOLD=$3
. "$(dirname "$0")/lib.sh"
cd "$work"
num() { sed -n "s/.*\"$1\": \([-0-9.eE+]*\).*/\1/p" "$2" | tail -n 1; }
near() { awk -v a="$1" -v b="$2" -v r="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= r * (b < 0 ? -b : b)) }' ||
    { echo "     $1 is not within $3 of $2" >&2; false; }; }
# Cantera's T at the end of the 1100 K case, and its length
read -r L TEND < <(python3 - "$GOLD/cantera_h2o2.json" <<'PY' 2>/dev/null || awk 'BEGIN{print "0 0"}'
import json, sys
c = [c for c in json.load(open(sys.argv[1]))["cases"] if c["T0"] == 1100.0][0]
print(repr(c["length"]), repr(c["T"][-1]))
PY
)
"$REMAT" pfr simulate --mechanism "$MECH/h2o2.yaml" --init H2=2,O2=1,N2=3.76 --cond T=1100,P=101325 \
    --length "$L" --minimize T --json >yaml.json 2>yaml.err
check "simulate h2o2.yaml exits 0" test $? -eq 0
check "--json names rodas5" has yaml.json '"method": "rodas5"'
check "--json has the outlet's T" has yaml.json '"T": '
check "--json has gradient.m29" has yaml.json '"m29": '
check "T at the end within 1e-5 of Cantera's" near "$(sed -n 's/.*"outlet".*"T": \([-0-9.eE+]*\).*/\1/p' yaml.json)" "$TEND" 1e-5
"$REMAT" pfr simulate --mechanism "$MECH/h2o2.ck" --thermo "$MECH/h2o2_thermo.dat" --init H2=2,O2=1,N2=3.76 \
    --cond T=1100 --length "$L" --json >ck.json 2>ck.err
check "simulate h2o2.ck --thermo exits 0" test $? -eq 0
check "the CHEMKIN twin's T equals the YAML's" near "$(sed -n 's/.*"outlet".*"T": \([-0-9.eE+]*\).*/\1/p' ck.json)" \
    "$(sed -n 's/.*"outlet".*"T": \([-0-9.eE+]*\).*/\1/p' yaml.json)" 1e-9
"$REMAT" pfr simulate --mechanism "$MECH/h2o2.yaml" --init H2=2,O2=1,N2=3.76 --cond T=1100 --length 1e-5 \
    --energy isothermal >iso.txt 2>iso.err
check "isothermal exits 0" test $? -eq 0
check "isothermal keeps T" grep -qE '^T +1100 +1100$' iso.txt
check "the table sums mole fractions, not T" grep -qE '^sum +1 ' iso.txt
# pfr ensemble: fixed rodas5 steps by default for a gas mechanism; a lane agrees with
# simulate's fixed-step run of its set to rounding (the ensemble's batched parameters take
# the expression lowering, simulate the vector one: not bit for bit, docs/DESIGN.md contract 5)
printf 'm1\n1\n2\n' >sets.csv
"$REMAT" pfr ensemble --mechanism "$MECH/h2o2.yaml" --init H2=2,O2=1,N2=3.76 --cond T=1100 --length 1e-4 --steps 200 \
    --params-file sets.csv >ens.csv 2>ens.err
check "ensemble on a gas mechanism exits 0" test $? -eq 0
check "ensemble has a C_T column" grep -q ',C_T,' ens.csv
"$REMAT" pfr simulate --mechanism "$MECH/h2o2.yaml" --init H2=2,O2=1,N2=3.76 --cond T=1100 --length 1e-4 --steps 200 \
    --method rodas5 --json >fixed.json 2>fixed.err
check "ensemble's first lane T equals simulate's" near "$(awk -F, 'NR == 2 { print $12 }' ens.csv)" \
    "$(sed -n 's/.*"outlet".*"T": \([-0-9.eE+]*\).*/\1/p' fixed.json)" 1e-10
# --method bdf: the forward solve by the variable-order BDF (remat/ode.h), its counts in --json
# and the table; T at the end within 1e-5 of Cantera's (its defaults: rtol 1e-8, atol 1e-14)
"$REMAT" pfr simulate --mechanism "$MECH/h2o2.yaml" --init H2=2,O2=1,N2=3.76 --cond T=1100 --length "$L" \
    --method bdf --json >bdf.json 2>bdf.err
check "simulate --method bdf exits 0" test $? -eq 0
check "--json names bdf" has bdf.json '"method": "bdf"'
for k in steps error_test_failures newton_failures rhs_evals jacobians lu; do
    check "--json has bdf's $k" grep -qE "\"$k\": [0-9]+" bdf.json
done
check "bdf reuses its Jacobian (fewer than a tenth of the steps)" \
    awk -v j="$(num jacobians bdf.json)" -v s="$(num steps bdf.json)" 'BEGIN { exit !(j > 0 && 10 * j < s) }'
check "bdf's T at the end within 1e-5 of Cantera's" near "$(sed -n 's/.*"outlet".*"T": \([-0-9.eE+]*\).*/\1/p' bdf.json)" "$TEND" 1e-5
check "bdf: no objective, no gradient" has bdf.json '"objective": null'
"$REMAT" pfr simulate --mechanism "$MECH/h2o2.ck" --thermo "$MECH/h2o2_thermo.dat" --init H2=2,O2=1,N2=3.76 \
    --cond T=1100 --length "$L" --method bdf >bdf.txt 2>bdf_ck.err
check "simulate h2o2.ck --method bdf exits 0" test $? -eq 0
check "the table prints bdf's counts" grep -qE 'bdf: [0-9]+ steps, .* right-hand sides, [0-9]+ Jacobians, [0-9]+ LU' bdf.txt
# --out: one integration, the rows from its dense output (remat/pfr.h)
if ldd "$REMAT" 2>/dev/null | grep -q libasan; then
    echo "SKIP: --out under ulimit -v: AddressSanitizer reserves terabytes of address space"
else
    (ulimit -v 250000 && exec "$REMAT" pfr simulate --mechanism "$MECH/h2o2.yaml" --init H2=2,O2=1,N2=3.76 \
        --cond T=1100 --length "$L" --out prof.csv >prof.txt 2>prof.err)
    check "simulate --out under ulimit -v 250000 exits 0" test $? -eq 0
    check "--out has 101 rows and the header" test "$(wc -l <prof.csv)" -eq 102
    # the largest relative difference of T from Cantera's at the 101 golden times
    worst=$(python3 - "$GOLD/cantera_h2o2.json" prof.csv <<'PY' 2>/dev/null || echo 1
import csv, json, sys
c = [c for c in json.load(open(sys.argv[1]))["cases"] if c["T0"] == 1100.0][0]
rows = list(csv.reader(open(sys.argv[2])))[1:]
assert len(rows) == len(c["T"])
print(max(abs(float(r[-1]) - t) / t for r, t in zip(rows, c["T"])))
PY
)
    check "--out's T within 1e-6 of Cantera's at every time ($worst)" awk -v w="$worst" 'BEGIN { exit !(w <= 1e-6) }'
fi
exit $fail

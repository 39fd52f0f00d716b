#!/usr/bin/env bash
# ensemble_stiff.sh REMAT MECHANISMS VDV — `pfr ensemble` on a mechanism whose
# adaptive integration crosses a stiff transient (issue 21, "one set of
# defaults"):
#   - h2o2.yaml at 1100 K over 1e-4 s ignites: the adaptive rodas5 run takes
#     tiny steps in the transient only, and no count of equal steps near its
#     count matches it. The search for equal steps went on to 2^22 steps
#     (nine minutes) and failed; now it stops at 64x the adaptive count, and
#     the ensemble integrates each set adaptively as pfr simulate does
#     (well inside 60 s), saying so on stderr: every set's outlet is
#     simulate's for the same multipliers (the same reactor: bit for bit,
#     held to simulate's tolerance), and dT/dm1, dT/dm2 simulate's
#     --minimize T gradient;
#   - the Van de Vusse .mech ensemble, which equal steps do follow, still
#     takes them: its stderr line is the one it was.
set -u
REMAT=$1
MECH=$2
VDV=$3
case $MECH in /*) ;; *) MECH=$PWD/$MECH ;; esac
case $VDV in /*) ;; *) VDV=$PWD/$VDV ;; esac
. "$(dirname "$0")/lib.sh"
cd "$work"

printf 'm1,m2\n1,1\n0.9,1.1\n1.1,0.95\n' >gp.csv
timeout 60 "$REMAT" pfr ensemble --params-file gp.csv --mechanism "$MECH/h2o2.yaml" --init H2=2,O2=1,N2=3.76 \
    --cond T=1100 --length 1e-4 --species T --out ens.csv >ens.out 2>ens.err
rc=$?
check "gas ensemble ends within 60 s (rc $rc; 124 is the timeout)" test $rc -ne 124
check "gas ensemble exits 0" test $rc -eq 0
check "stderr says equal steps cannot follow the stiff transient" has ens.err \
    "equal rodas5 steps cannot follow this integration's stiff transient in $MECH/h2o2.yaml"
check "stderr says each member was integrated adaptively" has ens.err \
    "each of the 3 members integrated adaptively with rodas5 (rtol 1e-08, atol 1e-14), as pfr simulate integrates it"
check "one line on stderr" test "$(wc -l <ens.err)" -eq 1
check "the header: sets, every outlet, dT/dm1 and dT/dm2" \
    test "$(head -n 1 ens.csv)" = "m1,m2,C_H2,C_H,C_O,C_O2,C_OH,C_H2O,C_HO2,C_H2O2,C_AR,C_N2,C_T,dT/dm1,dT/dm2"
check "three rows" test "$(wc -l <ens.csv)" -eq 4
row=1
for p in m1=1,m2=1 m1=0.9,m2=1.1 m1=1.1,m2=0.95; do
    row=$((row + 1))
    "$REMAT" pfr simulate --mechanism "$MECH/h2o2.yaml" --init H2=2,O2=1,N2=3.76 --cond T=1100 --length 1e-4 \
        --params "$p" --minimize T --json >sim.json 2>sim.err
    # simulate's outlet (by name, in the mechanism's order) and gradient m1, m2
    sim=$(sed -n 's/.*"outlet": {\([^}]*\)}.*/\1/p' sim.json | sed 's/"[A-Za-z0-9]*": //g; s/,//g')
    g=$(sed -n 's/.*"gradient": {\([^}]*\)}.*/\1/p' sim.json | tr ',' '\n' |
        sed -n 's/^ *"m1": \(.*\)/\1/p; s/^ *"m2": \(.*\)/\1/p' | tr '\n' ' ')
    ens=$(awk -F, -v r=$row 'NR == r { for (i = 3; i <= NF; i++) printf "%s ", $i }' ens.csv)
    check "set $p: outlet and dT/dm within simulate's tolerance of simulate's" \
        awk -v s="$sim $g" -v e="$ens" 'BEGIN { ns = split(s, a, " "); ne = split(e, b, " ")
            if (ns != 13 || ne != 13) { print "     " ns " vs " ne " numbers" > "/dev/stderr"; exit 1 }
            for (i = 1; i <= 13; i++) { d = a[i] - b[i]; d = d < 0 ? -d : d; m = a[i] < 0 ? -a[i] : a[i]
                if (!(d <= 1e-8 * m + 1e-14)) { print "     column " i ": " a[i] " vs " b[i] > "/dev/stderr"; exit 1 } } }'
done

printf 'k1,k2\n0.1,5\n0.5,2\n1,0.3\n' >sets.csv
"$REMAT" pfr ensemble --mechanism "$VDV" --init A=1 --params-file sets.csv --out vdv.csv 2>vdv.err
check "Van de Vusse ensemble exits 0" test $? -eq 0
cat >vdv.expected <<'TXT'
remat: pfr ensemble: tsit5 with 74 equal steps: pfr simulate's adaptive tsit5 (rtol 1e-06, atol 1e-09; 37 steps) at the base parameters, matched with fixed steps for the lanes, which step together
TXT
check "Van de Vusse still takes equal steps: its stderr line unchanged" same vdv.expected vdv.err
check "Van de Vusse writes its three sets" test "$(wc -l <vdv.csv)" -eq 4
exit $fail

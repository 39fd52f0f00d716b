#!/usr/bin/env bash
# ensemble_stiff.sh REMAT MECHANISMS VDV — `pfr ensemble` on a mechanism whose
# adaptive integration crosses a stiff transient (issue 21, "one set of
# defaults"):
#   - h2o2.yaml at 1100 K over 1e-4 s ignites: the adaptive rodas5 run takes
#     tiny steps in the transient only, and no count of equal steps near its
#     count matches it. The search for equal steps went on to 2^22 steps
#     (nine minutes) before it failed; now it stops at 64x the adaptive count
#     (well inside 60 s) with a message that says equal steps cannot follow
#     the stiff transient, names the mechanism and the ways out, and leaves
#     no --out file;
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
    --cond T=1100 --length 1e-4 --out ens.csv >ens.out 2>ens.err
rc=$?
check "gas ensemble ends within 60 s (rc $rc; 124 is the timeout)" test $rc -ne 124
check "gas ensemble exits 2" test $rc -eq 2
check "the error says equal steps cannot follow the stiff transient" has ens.err \
    "equal rodas5 steps cannot follow this integration's stiff transient in $MECH/h2o2.yaml"
check "the error gives the adaptive count and the tolerance" grep -qE \
    'its adaptive stepping takes [0-9]+ steps \(rtol 1e-08, atol 1e-14\), and no count of equal steps from [0-9]+ to [0-9]+ \(64x\)' ens.err
check "the error says the ways out" has ens.err "give --steps N or --dt H"
check "one line on stderr" test "$(wc -l <ens.err)" -eq 1
check "no --out file is left" test ! -e ens.csv
check "nothing on stdout" test ! -s ens.out

printf 'k1,k2\n0.1,5\n0.5,2\n1,0.3\n' >sets.csv
"$REMAT" pfr ensemble --mechanism "$VDV" --init A=1 --params-file sets.csv --out vdv.csv 2>vdv.err
check "Van de Vusse ensemble exits 0" test $? -eq 0
cat >vdv.expected <<'TXT'
remat: pfr ensemble: tsit5 with 74 equal steps: pfr simulate's adaptive tsit5 (rtol 1e-06, atol 1e-09; 37 steps) at the base parameters, matched with fixed steps for the lanes, which step together
TXT
check "Van de Vusse still takes equal steps: its stderr line unchanged" same vdv.expected vdv.err
check "Van de Vusse writes its three sets" test "$(wc -l <vdv.csv)" -eq 4
exit $fail

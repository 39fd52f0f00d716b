#!/usr/bin/env bash
# rate_traps.sh REMAT DATA — the mechanism language's traps of issue 21 are
# warned about, naming file:line:col and the reading taken, and the negative
# concentrations they make are reported (stderr and a "negative" field in
# --json), never printed silently:
#   - 'A -> B : k1 * 2' (an expression taken as the whole rate): simulate,
#     fit and ensemble warn about the rate and about A below zero;
#   - 'A -> B : k0*exp(-Ea/(R*T))' and 'let r = k*A' then 'A -> B : r';
#   - the explicit spelling ': k = k1 * 2' warns about nothing, stays >= 0
#     ("negative": null), and equals arrhenius(...) written as a built-in.
# Interpreted loops (REMAT_JIT=never, not the suites' always): what this
# checks is the parser's warnings and the negative-concentration reports,
# which do not depend on how a loop runs (a compiled loop gives the
# interpreter's bits: test_scan_jit); with a cold cache under load the fit's
# compiles alone took 138 s, past the test's timeout; interpreted the whole
# script takes 0.6 s.
export REMAT_JIT=never
set -u
REMAT=$1 DATA=$2
DATA=$(cd "$DATA" && pwd)
. "$(dirname "$0")/lib.sh"
cd "$work"
quiet() { [ ! -s "$1" ] || { echo "     $1 is not empty:" >&2; sed 's/^/     | /' "$1" >&2; false; }; }
trap=$DATA/trap_whole_rate.mech

"$REMAT" pfr simulate --mechanism "$trap" --init A=1 --json >sim.json 2>sim.err
check "simulate of the trap exits 0" test $? -eq 0
check "simulate warns about the rate at file:line:col" has sim.err \
    "remat: $trap:3:10: warning: the rate 'k1 * 2' names none of the reactants (A), so it is taken as the whole rate"
check "the warning shows the constant's spelling" has sim.err "write ': k = k1 * 2' for a rate constant"
check "simulate warns that A goes negative" has sim.err "the concentration of 'A' is -0.2 at t = 0.6"
check "simulate --json has the negative field" has sim.json '"negative": {"species": "A", "value": -0.199999999999999'  # -0.2 to ~1e-15 (the profile's rows come from dense output)
"$REMAT" pfr fit --mechanism "$trap" --data "$DATA/trap.csv" --json >fit.json 2>fit.err
check "fit warns about the rate" has fit.err "$trap:3:10: warning: the rate 'k1 * 2'"
check "fit warns that the fitted A goes negative" has fit.err "trap.csv: the fitted model's 'A' is"
check "fit --json has the negative field naming the data" has fit.json "\"negative\": {\"species\": \"A\", \"value\": -"
check "fit --json's negative names the file" has fit.json "\"data\": \"$DATA/trap.csv\"}"
"$REMAT" pfr ensemble --mechanism "$trap" --init A=1 --params-file "$DATA/trap_sets.csv" --steps 100 \
    --out ens.csv >ens.out 2>ens.err
check "ensemble warns about the rate" has ens.err "$trap:3:10: warning: the rate 'k1 * 2'"
check "ensemble warns about the negative outlet" has ens.err "1 set gave negative outlet concentrations"

"$REMAT" pfr simulate --mechanism "$DATA/trap_arrhenius.mech" --init A=1 >arr.out 2>arr.err
check "k0*exp(-Ea/(R*T)) is warned about" has arr.err \
    "trap_arrhenius.mech:5:10: warning: the rate 'k0*exp(-Ea/(R*T))' names none of the reactants (A)"
"$REMAT" pfr simulate --mechanism "$DATA/trap_let.mech" --init A=1 >let.out 2>let.err
check "a let with a reactant used as a rate constant is warned about" has let.err \
    "trap_let.mech:3:10: warning: the rate constant 'r' reads reactant 'A' through its let, and mass action"

"$REMAT" pfr simulate --mechanism "$DATA/trap_fixed.mech" --init A=1 --json >fixed.json 2>fixed.err
check "': k = k1 * 2' warns about nothing" quiet fixed.err
check "': k = k1 * 2' has no negative concentration" has fixed.json '"negative": null'
# arrhenius(A0, Ea) alone is a rate constant: the outlet equals the let written out
printf 'cond T = 350\nparam A0 = 1e3\nparam Ea = 2e4\nA -> B : arrhenius(A0, Ea)\n' >builtin.mech
printf 'cond T = 350\nparam A0 = 1e3\nparam Ea = 2e4\nlet k = A0 * exp(-Ea / (8.314462618 * T))\nA -> B : k\n' >let.mech
for f in builtin let; do
    "$REMAT" pfr simulate --mechanism $f.mech --init A=1 --cond T=360 --method rk4 --steps 200 --json >$f.json 2>$f.err
done
check "arrhenius() warns about nothing" quiet builtin.err
check "arrhenius() converts A" has builtin.json '"outlet": {"A": 3.59766'
check "arrhenius(A0, Ea) is the rate constant A0 exp(-Ea/(R T)) (mass action)" \
    same <(grep '"outlet"' let.json) <(grep '"outlet"' builtin.json)
exit $fail

#!/usr/bin/env bash
# mech_functions.sh REMAT DATA — the mechanism language's functions past exp,
# log, sqrt, min and max (tanh, sin, cos, erf, logistic/sigmoid, log1p,
# expm1, abs, log10, pow; remat/mechanism.h, FUNC): functions.mech has one
# species per function, X' = fn(t), and pfr simulate's outlet at t = 2 must
# equal the closed-form integrals (computed here by awk, erf(2) a constant of
# the tables) within the integrator's error.
set -u
REMAT=$1 DATA=$2
DATA=$(cd "$DATA" && pwd)
. "$(dirname "$0")/lib.sh"
cd "$work"
init=Th=0,Si=0,Co=0,Er=0,Lg=0,Sg=0,Lp=0,Em=0,Ab=0,Lt=0,Pw=0
"$REMAT" pfr simulate --mechanism "$DATA/functions.mech" --init $init --length 2 --method rk4 --steps 4000 \
    --json >sim.json 2>sim.err
check "simulate exits 0" test $? -eq 0
outlet() { sed -n "s/.*\"outlet\": {[^}]*\"$1\": \([-0-9.eE+]*\).*/\1/p" sim.json; }
# near: species, the closed form's value (awk expression of t = 2)
near() {
    local got
    got=$(outlet "$1")
    awk -v g="$got" "BEGIN { t = 2; pi = atan2(0, -1); erf2 = 0.99532226501895273; w = $2;
        d = g - w; if (d < 0) d = -d; if (g == \"\" || d > 1e-7 * (1 + (w < 0 ? -w : w))) {
        printf \"     %s: got '%s', expected %.17g\\n\", \"$1\", g, w > \"/dev/stderr\"; exit 1 } }"
}
check "tanh" near Th "log((exp(t) + exp(-t)) / 2)"
check "cos" near Si "sin(t)"
check "sin" near Co "cos(t) - 1"
check "erf" near Er "t * erf2 + (exp(-t * t) - 1) / sqrt(pi)"
check "logistic" near Lg "log(1 + exp(t)) - log(2)"
check "sigmoid" near Sg "log(2) - log(1 + exp(-t))"
check "log1p" near Lp "(1 + t) * log(1 + t) - t"
check "expm1" near Em "exp(t) - 1 - t"
check "abs" near Ab "1"
check "log10" near Lt "((1 + t) * log(1 + t) - t) / log(10)"
check "pow" near Pw "2 / 3 * ((1 + t) ^ 1.5 - 1)"
exit $fail

#!/usr/bin/env bash
# help_options.sh REMAT — each `remat pfr COMMAND --help` tells the truth
# about its options (issue 21's audit):
#   - every option its synopsis shows is described below it, and every
#     option described is in the synopsis (fit's left out --cond, --free,
#     --fix, --out and the plot and gas options; simulate, optimize, compare
#     and ensemble --cond and --adjoint);
#   - every option described is one the command knows (never "unknown
#     option"), and the gas options that every command takes (--thermo,
#     --energy) are described by each;
#   - ensemble, whose sensitivities come from forward mode and which refuses
#     --adjoint, does not describe it;
#   - compare's "(default for the built-in mechanism: --maximize B ...)"
#     follows --minimize (it sat under --max-steps);
#   - `remat pfr --help` does not call optimize "Adam on the parameters":
#     with --mechanism it runs bounded L-BFGS-B (or SLSQP).
set -u
REMAT=$1
. "$(dirname "$0")/lib.sh"
cd "$work"
for c in simulate optimize fit compare ensemble; do
    "$REMAT" pfr $c --help >$c.help 2>&1
    awk 'NR == 1, /^$/' $c.help | grep -o -- '--[a-z][a-z-]*' | sort -u >$c.synopsis
    awk 'f; /^$/ {f = 1}' $c.help | grep -o -- '^  --[a-z][a-z-]*' | sed 's/^ *//' | sort -u >$c.described
    check "$c: every option described is in the synopsis" \
        test -z "$(comm -13 $c.synopsis $c.described | tee $c.missing)"
    [ -s $c.missing ] && sed 's/^/     not in the synopsis: /' $c.missing >&2
    check "$c: every option of the synopsis is described" \
        test -z "$(comm -23 $c.synopsis $c.described | tee $c.extra)"
    [ -s $c.extra ] && sed 's/^/     not described: /' $c.extra >&2
    unknown=""
    while read -r opt; do
        # a value that no option takes, then an option no command knows: the command stops at
        # one of them before any work, and must not call $opt unknown
        "$REMAT" pfr $c "$opt" @bogus@ --no-such-option-zz >opt.out 2>opt.err </dev/null
        grep -qF "unknown option '$opt'" opt.err && unknown="$unknown $opt"
    done <$c.described
    check "$c: every option described is known to it" test -z "$unknown"
    [ -n "$unknown" ] && echo "     unknown:$unknown" >&2
    check "$c: describes the gas options --thermo and --energy" \
        grep -qx -- '--thermo' $c.described
    check "$c: describes --energy" grep -qx -- '--energy' $c.described
done
check "ensemble: does not describe --adjoint, which it refuses" bash -c "! grep -qx -- --adjoint ensemble.described"
printf 'k1\n1\n' >p.csv
"$REMAT" pfr ensemble --params-file p.csv --adjoint backsolve >ens.out 2>ens.err
check "ensemble: refuses --adjoint (why it is not described)" has ens.err "takes no adjoint"
check "compare: the objective's default follows --minimize" \
    bash -c "grep -A1 -- '^  --minimize S' compare.help | grep -q 'default for the built-in mechanism: --maximize B'"
"$REMAT" pfr --help >pfr.help 2>&1
check "pfr --help: optimize is not 'Adam on the parameters'" bash -c "! grep -q 'Adam on the parameters' pfr.help"
check "pfr --help: optimize names L-BFGS-B" has pfr.help "optimize  the parameters that maximize or minimize an outlet (L-BFGS-B"
exit $fail

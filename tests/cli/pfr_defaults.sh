#!/usr/bin/env bash
# pfr_defaults.sh REMAT MECH — one set of defaults (issue 21):
#   - `pfr ensemble --mechanism` integrates as `pfr simulate --mechanism`
#     does: every outlet of the shipped Van de Vusse mechanism, for the base
#     parameters and two sets around them, within simulate's tolerance
#     (rtol |C| + atol at simulate's rtol 1e-6, atol 1e-9; twice that off
#     the base set, where the steps were not matched) of simulate's outlet;
#     stderr says the method and the steps; --steps keeps the fixed steps
#     asked for; the built-in problem stays bitwise simulate's 1000 Euler
#     steps (tests/cli/ensemble.sh);
#   - `pfr compare --method tsit5 --memory-budget 8k`: the adaptive loop's
#     predicted peak is a bound, said so in the table and in --json, and a
#     schedule is over budget exactly when its measured peak is; the
#     budget's own pick is not; the fixed-step default still has predicted
#     peaks equal to the measured ones.
set -u
REMAT=$1
MECH=$2
case $MECH in /*) ;; *) MECH=$PWD/$MECH ;; esac
. "$(dirname "$0")/lib.sh"
cd "$work"

printf 'k1,k2\n0.1,5\n0.5,2\n1,0.3\n' >sets.csv
"$REMAT" pfr ensemble --mechanism "$MECH" --init A=1 --params-file sets.csv --out ens.csv 2>ens.err
check "ensemble --mechanism exits 0" test $? -eq 0
check "ensemble says its method and steps on stderr" grep -qE '^remat: pfr ensemble: tsit5 with [0-9]+ equal steps' ens.err
row=1
for p in k1=0.1,k2=5 k1=0.5,k2=2 k1=1,k2=0.3; do
    row=$((row + 1))
    "$REMAT" pfr simulate --mechanism "$MECH" --init A=1 --params "$p" --json >sim.json 2>sim.err
    f=$([ $row -eq 2 ] && echo 1 || echo 2)
    # outlet A, B, C, D of simulate and of the ensemble (columns C_A..C_D follow k1, k2)
    sim=$(sed -n 's/.*"outlet": {"A": \([^,]*\), "B": \([^,]*\), "C": \([^,]*\), "D": \([^}]*\)}.*/\1 \2 \3 \4/p' sim.json)
    ens=$(awk -F, -v r=$row 'NR == r { print $3, $4, $5, $6 }' ens.csv)
    check "set $p: ensemble's outlet within ${f}x simulate's tolerance of simulate's" \
        awk -v s="$sim" -v e="$ens" -v f=$f 'BEGIN { ns = split(s, a, " "); ne = split(e, b, " ")
            if (ns != 4 || ne != 4) exit 1
            for (i = 1; i <= 4; i++) { d = a[i] - b[i]; d = d < 0 ? -d : d; m = a[i] < 0 ? -a[i] : a[i]
                if (!(d <= f * (1e-6 * m + 1e-9))) { print "     species " i ": " a[i] " vs " b[i] > "/dev/stderr"; exit 1 } } }'
done
"$REMAT" pfr ensemble --mechanism "$MECH" --init A=1 --params-file sets.csv --method rk4 --steps 500 >rk4.csv 2>rk4.err
check "ensemble --steps 500 exits 0" test $? -eq 0
check "ensemble with --steps says nothing of matching" test ! -s rk4.err
"$REMAT" pfr simulate --mechanism "$MECH" --init A=1 --method rk4 --steps 500 --json >rk4.json
check "ensemble --method rk4 --steps 500: simulate's outlet bit for bit (contract 5)" test \
    "$(awk -F, 'NR == 2 { print $3 }' rk4.csv)" = "$(sed -n 's/.*"outlet": {"A": \([^,]*\),.*/\1/p' rk4.json)"

"$REMAT" pfr compare --method tsit5 --memory-budget 8k --repeat 1 >cmp.txt 2>cmp.err
check "compare --method tsit5 --memory-budget 8k exits 0" test $? -eq 0
check "the table says the adaptive prediction is a bound" has cmp.txt "the predicted peak bytes are a bound"
check "the table's column says bound" has cmp.txt "peak bytes meas/bound"
"$REMAT" pfr compare --method tsit5 --memory-budget 8k --repeat 1 --json >cmp.json 2>cmp.err
check "--json says the prediction is a bound" test "$(grep -c '"peak_bytes_predicted_is_bound": true' cmp.json)" -eq 7
check "over budget exactly where the measured peak is over 8192" awk '/"schedule"/ {
        p = $0; sub(/.*"peak_bytes": /, "", p); sub(/,.*/, "", p)
        o = $0; sub(/.*"over_budget": /, "", o); sub(/,.*/, "", o)
        if ((p + 0 > 8192) != (o == "true")) bad = 1; n++ }
    END { exit bad || n != 7 }' cmp.json
check "some schedule is over and some under (the test sees both)" \
    bash -c 'grep -q "\"over_budget\": true" cmp.json && grep -q "\"over_budget\": false" cmp.json'
check "the budget's pick is not over budget" grep -q '"from_budget": true, .*"over_budget": false' cmp.json
"$REMAT" pfr compare --memory-budget 8k --repeat 1 --json >fixed.json 2>fixed.err
check "fixed steps: the prediction is the peak" test "$(grep -c '"peak_bytes_predicted_is_bound": false' fixed.json)" -eq 7
check "fixed steps: predicted equals measured" awk '/"schedule"/ {
        p = $0; sub(/.*"peak_bytes": /, "", p); sub(/,.*/, "", p)
        q = $0; sub(/.*"peak_bytes_predicted": /, "", q); sub(/,.*/, "", q)
        if (p != q) bad = 1 } END { exit bad }' fixed.json
exit $fail

#!/usr/bin/env bash
# ensemble.sh REMAT DATA — `remat pfr ensemble` against `remat pfr simulate`
# run on each set alone:
#   - every outlet concentration is simulate's, bit for bit (the same
#     integration, one lane of a batched loop);
#   - every sensitivity dS/dk (forward mode) is simulate's reverse-mode
#     gradient of -C_S (--maximize S) negated, to 1e-12 of the column's scale;
#   - the output is the same file whatever --batch (lanes) and whatever the
#     loops (compiled or interpreted); --species keeps the named columns;
#     --out holds what stdout would; an unstable set is nan with a warning.
# On the seed (Euler), on a mechanism whose rates read z (rk4, one parameter
# left out of the file) and through rodas5's fixed steps.
# Byte comparisons rest on contracts 5 (lanes), 2 (interpreted loops) and 1
# (docs/design-notes.md, "Bitwise contracts").
set -u
REMAT=$1 DATA=$2
DATA=$(cd "$DATA" && pwd)
. "$(dirname "$0")/lib.sh"
cd "$work" || exit 1

# value KEY SPECIES_OR_PARAM FILE: one number of simulate's JSON
value() {
    sed -n "s/.*\"$1\": {\([^}]*\)}.*/\1/p" "$3" | tr ',' '\n' | sed -n "s/^ *\"$2\": //p"
}

# compare ENS_CSV BASE SIM_ARGS...: each row of ENS_CSV against simulate
# with --params BASE (parameters the file leaves out; "" none) and the set
compare() {
    local ens=$1 base=$2 ok=1
    shift 2
    local header cols
    header=$(head -1 "$ens")
    IFS=, read -r -a cols <<<"$header"
    local nrow=0
    while IFS=, read -r -a v; do
        nrow=$((nrow + 1))
        local params=$base j=0 # the set: the columns before the first C_
        while [ $j -lt ${#cols[@]} ] && [ "${cols[$j]#C_}" = "${cols[$j]}" ]; do
            params="$params${params:+,}${cols[$j]}=${v[$j]}"
            j=$((j + 1))
        done
        local nq=$j
        for ((c = nq; c < ${#cols[@]}; c++)); do
            local name=${cols[$c]} got=${v[$c]}
            case $name in
            C_*)
                local sp=${name#C_}
                "$REMAT" pfr simulate "$@" --params "$params" --maximize "$sp" --json >sim_$sp.json 2>sim.err ||
                    { cat sim.err >&2; ok=0; continue; }
                local want
                want=$(value outlet "$sp" sim_$sp.json)
                [ "$got" = "$want" ] || { echo "     row $nrow $name: $got, simulate $want" >&2; ok=0; } ;;
            d*/d*)
                local sp=${name%%/*} k=${name#*/d}
                sp=${sp#d}
                local want
                want=$(value gradient "$k" sim_$sp.json)
                awk -v g="$got" -v w="$want" -v s="${SCALE:-1}" 'BEGIN {
                    d = g + w; if (d < 0) d = -d; a = w < 0 ? -w : w; if (a < s) a = s
                    exit !(d <= 1e-12 * a) }' ||
                    { echo "     row $nrow $name: $got, simulate's -d(-C_$sp)/d$k $want" >&2; ok=0; } ;;
            esac
        done
    done < <(tail -n +2 "$ens")
    [ $ok = 1 ] && [ $nrow -gt 0 ]
}

# ---- the seed: Euler, both parameters, blank lines and CRLF ----
"$REMAT" pfr ensemble --params-file "$DATA/ens_crlf.csv" >seed.csv 2>seed.err
check "seed: exits 0, nothing on stderr" test $? -eq 0 -a ! -s seed.err
check "seed: header" has seed.csv "k1,k2,C_A,C_B,C_C,dA/dk1,dA/dk2,dB/dk1,dB/dk2,dC/dk1,dC/dk2"
check "seed: one row per set" test "$(wc -l <seed.csv)" -eq 4
check "seed: rows against pfr simulate" compare seed.csv ""
for b in 1 2 3; do
    "$REMAT" pfr ensemble --params-file "$DATA/ens_crlf.csv" --batch $b >seed_b$b.csv 2>/dev/null
    check "seed: --batch $b writes the same file" cmp seed.csv seed_b$b.csv
done
REMAT_NO_JIT=1 "$REMAT" pfr ensemble --params-file "$DATA/ens_crlf.csv" >seed_interp.csv 2>/dev/null
check "seed: interpreted loops write the same file" cmp seed.csv seed_interp.csv
"$REMAT" pfr ensemble --params-file "$DATA/ens_crlf.csv" --out out.csv >stdout.txt 2>/dev/null
check "seed: --out holds what stdout holds" cmp seed.csv out.csv
check "seed: --out leaves stdout empty" test ! -s stdout.txt
"$REMAT" pfr ensemble --params-file "$DATA/ens_crlf.csv" --species C,B >bc.csv 2>/dev/null
cut -d, -f1-5,10,11,8,9 seed.csv >bc_want.csv
check "seed: --species C,B: its columns in its order" \
    test "$(head -1 bc.csv)" = "k1,k2,C_A,C_B,C_C,dC/dk1,dC/dk2,dB/dk1,dB/dk2"
check "seed: --species C,B: the values of the full file" \
    cmp <(cut -d, -f6- bc.csv) <(cut -d, -f10,11 seed.csv | paste -d, - <(cut -d, -f8,9 seed.csv))

# ---- a mechanism whose rates read z: rk4, k2 left at --params' value ----
printf 'a,k\n0.3,0.8\n0.1,2\n0.7,0.25\n0,1.5\n1.1,0.4\n' >net.csv
net=(--mechanism "$DATA/net.mech" --init A=1,B=0.2 --method rk4 --steps 200 --length 3)
"$REMAT" pfr ensemble "${net[@]}" --params k2=0.9 --params-file net.csv --batch 2 >net_out.csv 2>net.err
check "net (reads z): exits 0" test $? -eq 0 -a ! -s net.err
check "net: header in the file's order" has net_out.csv "a,k,C_A,C_B,C_C,dA/da,dA/dk,dB/da,dB/dk,dC/da,dC/dk"
check "net: rows against pfr simulate" compare net_out.csv k2=0.9 "${net[@]}"

# ---- rodas5's fixed steps (a Jacobian per step, batched parameters) ----
printf 'k1\n1\n40\n' >stiff.csv
rodas=(--method rodas5 --steps 20)
"$REMAT" pfr ensemble "${rodas[@]}" --params k2=3 --params-file stiff.csv >rodas.csv 2>rodas.err
check "rodas5: exits 0" test $? -eq 0 -a ! -s rodas.err
check "rodas5: rows against pfr simulate" compare rodas.csv k2=3 "${rodas[@]}"

# ---- an unstable set: nan, a warning naming its line, the others intact ----
printf 'k1,k2\n1,0.5\n3000,0.5\n2,0.25\n' >unstable.csv
"$REMAT" pfr ensemble --params-file unstable.csv >unstable_out.csv 2>unstable.err
check "unstable set: exits 0" test $? -eq 0
check "unstable set: the warning names the file and line" has unstable.err "unstable.csv:3"
check "unstable set: its row is nan" test "$(sed -n 3p unstable_out.csv | cut -d, -f3)" = nan
check "unstable set: the others as alone" cmp <(sed -n '2p;4p' unstable_out.csv) <(sed -n '2p;3p' seed.csv)

exit $fail

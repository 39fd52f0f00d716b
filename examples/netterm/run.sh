#!/bin/sh
# The universal-differential-equation example: fit the network rate law of
# ude.mech to the four training profiles, then check it on the two held-out
# inlets and against the true law 2 A B / (1 + 3 A) on a grid of (A, B).
# usage: run.sh REMAT WORKDIR [MAX_ERROR [ITERS]]   (exit 1 when a held-out
# profile is further than MAX_ERROR, default 0.01, from the data, or the
# grid 10 MAX_ERROR from the truth; ITERS: lm's most iterations, default 200)
set -eu
remat=$1
work=$2
bound=${3:-0.01}
iters=${4:-200}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$work"
start=$(date +%s.%N)
# exit status 3: lm stopped at ITERS before its convergence test passed, results printed
rc=0
"$remat" pfr fit --mechanism "$here/ude.mech" $(for i in 1 2 3 4 5 6 7 8; do echo "--data $here/train_$i.csv"; done) \
    --max-iters "$iters" --json >"$work/fit.json" \
    2>"$work/fit.err" || rc=$?
[ "$rc" = 0 ] || [ "$rc" = 3 ] || { cat "$work/fit.err" >&2; exit 1; }
end=$(date +%s.%N)
# the fitted weights as --params NAME=VALUE,...
params=$(sed -n 's/.*"params": {\([^}]*\)}.*/\1/p' "$work/fit.json" | sed 's/"\([^"]*\)": \([^,]*\)/\1=\2/g; s/, /,/g')
[ -n "$params" ] || { echo "run.sh: no fitted parameters in $work/fit.json" >&2; exit 1; }
printf 'training: %s s (lm, at most %s iterations, 8 profiles, %s)\n' \
    "$(echo "$start $end" | awk '{ printf "%.2f", $2 - $1 }')" "$iters" \
    "$(sed -n 's/.*"objective": \([^,]*\),.*/SSE \1/p' "$work/fit.json")"
worst=0
for h in heldout_1 heldout_2; do
    a=$(sed -n 's/^# A = //p' "$here/$h.csv")
    b=$(sed -n 's/^# B = //p' "$here/$h.csv")
    "$remat" pfr simulate --mechanism "$here/ude.mech" --params "$params" --init "A=$a,B=$b" --length 4 \
        --method rk4 --steps 400 --out "$work/$h.csv" >/dev/null
    # the model at the held-out rows (every 25th step) against the data
    err=$(awk -F, 'FNR == NR { if ($1 ~ /^[0-9.]+$/ && NR > 1) { m[$1 + 0] = $2 " " $3 " " $4 }; next }
                   $1 ~ /^[0-9.]+$/ && ($1 + 0) in m { split(m[$1 + 0], v, " ");
                       for (i = 2; i <= 4; i++) { d = $i - v[i - 1]; d = d < 0 ? -d : d; if (d > e) e = d } }
                   END { printf "%.3g", e }' "$work/$h.csv" "$here/$h.csv")
    echo "held-out $h (A0 = $a, B0 = $b): largest error $err"
    worst=$(echo "$worst $err" | awk '{ print ($2 > $1 ? $2 : $1) }')
done
# the learned law against the truth inside the training range
gerr=0
for a in 0.25 0.5 1 1.5 2; do
    for b in 0.25 0.5 1 1.5 2; do
        "$remat" pfr simulate --mechanism "$here/probe.mech" --params "$params" --init "A=$a,B=$b" --length 1 \
            --method euler --steps 1 --out "$work/probe.csv" >/dev/null
        got=$(tail -1 "$work/probe.csv" | cut -d, -f4)
        gerr=$(echo "$a $b $got $gerr" | awk '{ t = 2 * $1 * $2 / (1 + 3 * $1); d = $3 - t; d = d < 0 ? -d : d;
                                               print (d > $4 ? d : $4) }')
    done
done
echo "rate law on the grid A, B in {0.25, 0.5, 1, 1.5, 2}: largest |f(A, B) - 2 A B / (1 + 3 A)| = $gerr"
echo "$worst $gerr $bound" | awk '{ if ($1 > $3 || $2 > 10 * $3) { print "run.sh: above the bound " $3; exit 1 } }'

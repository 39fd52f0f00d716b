#!/usr/bin/env bash
# mlp_budget.sh REMAT — `remat mlp train --memory-budget B` bounds the
# training step's whole peak (the arena with the scan's snapshots and tapes):
#   - at several budgets on 16 blocks of width 64 (where the budget once
#     bounded only snapshots and tapes: 100k picked periodic:4 and peaked at
#     163840 bytes of arena) the measured peak is <= B and equals the
#     predicted one, and the run names its choice;
#   - the choice is the fastest fitting one: a generous budget may pick an
#     unrolled network, a tight one must scan;
#   - --json carries the choice and the peaks;
#   - a budget below the smallest peak fails naming that peak, and that peak
#     itself is taken;
#   - --policy fixes the policy: the choice keeps it;
#   - `remat mlp compare --memory-budget B` marks the fastest listed variant
#     that fits, and fails naming the smallest peak when none does; it
#     prints progress on stderr (a line per variant; on a terminal one live
#     line) and residual bytes without the weights.
set -u
REMAT=$1
. "$(dirname "$0")/lib.sh"
num() { sed -n "s/.*\"$1\": \([-0-9.eE+]*\).*/\1/p" "$2" | head -n 1; }
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "" && a + 0 <= b + 0) }' || { echo "     $1 > $2" >&2; false; }; }
cd "$work"

net="--epochs 1 --layers 16 --width 64"
for b in 102400 98304 120000 200000 1000000; do
    "$REMAT" mlp train $net --memory-budget $b >b$b.txt 2>b$b.err
    check "budget $b: exits 0" test $? -eq 0
    check "budget $b: names its choice" has b$b.txt "memory budget $b bytes: chose policy "
    peaks=$(sed -n 's/^whole-step peak (arena with snapshots and tapes) \([0-9]*\) predicted \/ \([0-9]*\) measured, budget.*/\1 \2/p' b$b.txt)
    check "budget $b: whole-step peak line" test -n "$peaks"
    check "budget $b: measured peak <= budget" le "${peaks#* }" $b
    check "budget $b: predicted = measured" test "${peaks% *}" = "${peaks#* }"
done
# unrolled programs hold their activations in the gradient buffers until those
# are written (src/exec/out_scratch.c), so at this size no scan is the leanest:
# a budget under the no-checkpoint peak (16384) and over the smallest (8192)
# must give up speed for memory
"$REMAT" mlp train $net --memory-budget 12000 >b12000.txt 2>b12000.err
check "a tight budget recomputes" has b12000.txt "memory budget 12000 bytes: chose policy nothing_saveable, "

"$REMAT" mlp train $net --memory-budget 100k --json >b.json 2>b.err
check "--json exits 0" test $? -eq 0
check "--json has the choice" has b.json '"budget_choice": {"policy": "'
check "--json: measured arena <= 102400" le "$(num arena_bytes_measured b.json)" 102400
check "--json: choice's peak = predicted arena" test "$(num peak_bytes_predicted b.json)" = "$(num arena_bytes_predicted b.json)"

"$REMAT" mlp train $net --memory-budget 1000 >small.txt 2>small.err
check "a budget below every peak exits 1" test $? -eq 1
least=$(sed -n 's/.*give at least \([0-9]*\)$/\1/p' small.err)
check "the error names the smallest peak" has small.err "1000 bytes is too small for the training step: the smallest predicted peak of the 55 candidates is $least bytes"
check "nothing on stdout" test ! -s small.txt
"$REMAT" mlp train $net --memory-budget "$least" >least.txt 2>least.err
check "that smallest peak is taken" test $? -eq 0
check "  and held" has least.txt "$least predicted / $least measured, budget $least bytes"

"$REMAT" mlp train $net --policy nothing_saveable --memory-budget 200k >pol.txt 2>pol.err
check "--policy with a budget exits 0" test $? -eq 0
check "  keeps the policy" has pol.txt "chose policy nothing_saveable, "
# ---- mlp compare: the choice among the listed variants, progress, residuals without weights ----
cmp="--layers 4 --width 32 --batch 8 --repeat 1"
"$REMAT" mlp compare $cmp --memory-budget 20k >cmp.txt 2>cmp.err
check "compare --memory-budget exits 0" test $? -eq 0
check "compare names its choice" has cmp.txt "memory budget 20480 bytes: chose "
peaks=$(sed -n 's/.*(whole-step peak \([0-9]*\) predicted \/ \([0-9]*\) measured.*/\1 \2/p' cmp.txt)
check "compare: the choice's measured peak <= budget" le "${peaks#* }" 20480
check "compare: progress, one line per variant and the reference" test "$(grep -c '^remat: mlp compare: [0-9]/7 ' cmp.err)" -eq 7
check "compare: the weights said once" has cmp.txt "weights 26536 bytes (not in the residual bytes below)"
# on a terminal (script(1) gives one): one live line, rewritten in place, ended once
script -qec "\"$REMAT\" mlp compare $cmp >/dev/null" /dev/null >tty.out 2>&1
check "compare on a terminal: the live line is rewritten per variant" test "$(grep -o $'\r\033\\[K' tty.out | wc -l)" -eq 7
check "  and ends with one newline" test "$(grep -c 'remat: mlp compare: ' tty.out)" -eq 1
"$REMAT" mlp compare $cmp --memory-budget 20k --json >cmp.json 2>/dev/null
check "compare --json: one variant chosen" test "$(grep -c '"budget_choice": true' cmp.json)" -eq 1
res=$(grep '"variant": "unrolled nothing_saveable"' cmp.json | sed -n 's/.*"residual_bytes": \([0-9]*\).*/\1/p')
check "compare: residual bytes without the weights (nothing_saveable keeps less than the 26536 weight bytes)" le "$res" 26535
"$REMAT" mlp compare $cmp --memory-budget 1000 >none.txt 2>none.err
check "compare: no variant fits exits 1" test $? -eq 1
# 1152: the plan without the bias broadcasts' buffers (fused groups read them in place: DESIGN.md "Compiled fusion")
# and without the loss's squared output (its sum ends the group: 1280 before)
check "  naming the smallest peak" has none.err "1000 bytes is too small for every listed variant: the smallest predicted peak is 1152 bytes (unrolled none); give at least 1152"
exit $fail

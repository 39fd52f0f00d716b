#!/usr/bin/env bash
# mlp_outputs.sh REMAT — `remat mlp train` and `remat mlp compare` end to end:
#   - a small train run prints its header, one line per epoch, the final
#     accuracy and the memory plan (predicted arena peak = measured), and
#     --json carries the config, the history, the accuracy and the plan;
#   - the default run on the shipped digits reaches >= 0.95 test accuracy;
#   - two runs with the same seed print the same JSON (the per-epoch seconds
#     aside), --schedule trains a scanned network and --memory-budget names
#     its choice (tests/cli/mlp_budget.sh holds it to the budget);
#   - `remat mlp compare` at small sizes exits 0, every variant's gradient
#     equals the unrolled one without checkpointing (max |dgrad| 0) and the
#     predicted arena and snapshot peaks equal the measured ones;
#   - --plot draws the curves / the frontier when the tool has PLplot, and
#     the frontier's log axis of less than a decade has labels between its
#     decades (2 x 10^k, 5 x 10^k).
# Equal JSON and zero gradient differences rest on contracts 1 and 3
# (docs/design-notes.md, "Bitwise contracts").
set -u
REMAT=$1
. "$(dirname "$0")/lib.sh"
lines() { test "$(grep -c -- "$2" "$1")" -eq "$3" || { echo "     not $3 lines with '$2' in $1" >&2; false; }; }
# a number from the JSON: field name, file
num() { sed -n "s/.*\"$1\": \([-0-9.eE+]*\).*/\1/p" "$2" | head -n 1; }
ge() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 >= b + 0) }'; }
cd "$work"

# ---- a small train run: the text ----
small="--epochs 3 --layers 1 --width 16"
"$REMAT" mlp train $small >small.txt 2>small.err
check "mlp train (small) exits 0" test $? -eq 0
check "header names the shipped digits" has small.txt "1797 rows, 64 features, 10 classes; pixels scaled by 1/16; 1437 train, 360 test rows"
check "header names the network" has small.txt "network Dense(16) -> 1 mlp blocks (relu) -> Dense(10)"
check "three epoch lines" lines small.txt '^epoch  *[0-9]*  loss [0-9.]*  train acc [0-9.]*  test acc [0-9.]*  [0-9.]* s$' 3
check "final accuracy line" lines small.txt '^final test accuracy 0\.[0-9]* ([0-9]* of 360)$' 1
check "memory plan line" has small.txt "memory plan of the training step (batch 32): residuals "
peaks=$(sed -n 's/.*arena peak \([0-9]*\) predicted \/ \([0-9]*\) measured.*/\1 \2/p' small.txt)
check "arena peak predicted = measured" test -n "$peaks" -a "${peaks% *}" = "${peaks#* }"
check "nothing on stderr" test ! -s small.err

# ---- --json: fields, and the same seed gives the same JSON ----
"$REMAT" mlp train $small --seed 7 --json >a.json 2>a.err
check "mlp train --json exits 0" test $? -eq 0
for want in '"config": {' '"layers": 1' '"width": 16' '"block": "mlp"' '"policy": "none"' '"scanned": false' \
    '"optimizer": "adam"' '"epochs": 3' '"batch": 32' '"seed": 7' '"history": [' '{"epoch": 3, "loss": ' \
    '"train_accuracy": ' '"test_accuracy": ' '"plan": {"batch": 32, "residual_bytes": ' '"measured": true'; do
    check "json has $want" has a.json "$want"
done
check "json has 3 epochs" lines a.json '"epoch": ' 3
check "json: arena predicted = measured" test "$(num arena_bytes_predicted a.json)" = "$(num arena_bytes_measured a.json)"
"$REMAT" mlp train $small --seed 7 --json >b.json 2>b.err
strip() { sed 's/"seconds": [0-9.e+-]*//' "$1"; }
check "same seed, same JSON (seconds aside)" cmp -s <(strip a.json) <(strip b.json)
"$REMAT" mlp train $small --seed 8 --json >c.json 2>c.err
check "another seed, another history" test "$(strip a.json)" != "$(strip c.json)"

# ---- scanned: a schedule, a budget ----
"$REMAT" mlp train --epochs 2 --layers 4 --width 16 --schedule binomial:2 --json >scan.json 2>scan.err
check "mlp train --schedule exits 0" test $? -eq 0
check "scanned with binomial:2" has scan.json '"scanned": true, "schedule": "binomial:2"'
check "scan snapshots predicted = measured" test "$(num snapshot_bytes_predicted scan.json)" = "$(num snapshot_bytes_measured scan.json)"
check "scan snapshots > 0" ge "$(num snapshot_bytes_measured scan.json)" 1
"$REMAT" mlp train --epochs 2 --layers 4 --width 16 --memory-budget 1M --json >budget.json 2>budget.err
check "mlp train --memory-budget exits 0" test $? -eq 0
check "a budget names its choice" has budget.json '"budget_choice": {"policy": '
"$REMAT" mlp train --epochs 2 --layers 2 --width 16 --block ffn --policy dots_saveable --optimizer sgd >ffn.txt 2>ffn.err
check "ffn blocks with a policy and sgd exit 0" test $? -eq 0
check "ffn network named" has ffn.txt "2 ffn blocks (gelu)"

# ---- the default run on the digits ----
start=$(date +%s)
"$REMAT" mlp train --json >digits.json 2>digits.err
check "default mlp train exits 0" test $? -eq 0
acc=$(sed -n 's/.*"test_accuracy": \([0-9.eE+-]*\), "test_correct".*/\1/p' digits.json)
echo "     default digits run: test accuracy $acc in $(( $(date +%s) - start )) s"
check "default digits run reaches 0.95 test accuracy" ge "${acc:-0}" 0.95

# ---- compare at small sizes ----
"$REMAT" mlp compare --layers 4 --width 32 --batch 8 --repeat 1 --json >cmp.json 2>cmp.err
check "mlp compare exits 0" test $? -eq 0
check "six variants" lines cmp.json '"variant": ' 6
check "every gradient equals no checkpointing" lines cmp.json '"max_abs_grad_diff": 0}' 6
awk '/"variant"/ {
    a = $0; sub(/.*"arena_bytes_predicted": /, "", a); sub(/,.*/, "", a)
    b = $0; sub(/.*"arena_bytes_measured": /, "", b); sub(/,.*/, "", b)
    c = $0; sub(/.*"snapshot_bytes_predicted": /, "", c); sub(/,.*/, "", c)
    d = $0; sub(/.*"snapshot_bytes_measured": /, "", d); sub(/,.*/, "", d)
    if (a != b || c != d) bad = 1 } END { exit bad }' cmp.json
check "every predicted peak = measured" test $? -eq 0
check "nothing_saveable is among the variants" has cmp.json '"policy": "nothing_saveable", "schedule": null'
"$REMAT" mlp compare --layers 3 --width 16 --batch 4 --repeat 1 --block ffn --policies none,everything_saveable,dots_saveable \
    --schedules per-step,two-level >cmp.txt 2>cmp.err
check "mlp compare (ffn) exits 0" test $? -eq 0
check "table: five variants with max|dgrad| 0" test "$(grep -c '^\(unrolled\|scan\) .* 0$' cmp.txt)" -eq 5
# JAX's alias names are the same policies: the same residual bytes as their first names
"$REMAT" mlp compare --layers 3 --width 16 --batch 4 --repeat 1 --schedules '' \
    --policies dots_saveable,checkpoint_dots,dots_with_no_batch_dims_saveable,checkpoint_dots_with_no_batch_dims \
    --json >alias.json 2>alias.err
check "mlp compare with JAX's alias names exits 0" test $? -eq 0
res() { grep "\"policy\": \"$1\"" alias.json | sed 's/.*"residual_bytes": \([0-9]*\),.*/\1/'; }
check "checkpoint_dots keeps dots_saveable's residual bytes" test -n "$(res dots_saveable)" -a "$(res dots_saveable)" = "$(res checkpoint_dots)"
check "checkpoint_dots_with_no_batch_dims keeps dots_with_no_batch_dims_saveable's" \
    test -n "$(res checkpoint_dots_with_no_batch_dims)" -a "$(res dots_with_no_batch_dims_saveable)" = "$(res checkpoint_dots_with_no_batch_dims)"

# ---- plots ----
if "$REMAT" --version | grep -q "plots: PLplot"; then
    "$REMAT" mlp train $small --plot curves.png >/dev/null 2>&1
    check "mlp train --plot draws the curves" test -s curves.png
    "$REMAT" mlp compare --layers 2 --width 8 --batch 4 --repeat 1 --plot frontier.svg >/dev/null 2>&1
    check "mlp compare --plot draws the frontier" test -s frontier.svg
    # its log x axis spans less than a decade of arena bytes: PLplot labels
    # only the two decades around it, so 2 x 10^k and 5 x 10^k are labelled too
    # (PLplot writes every character of the SVG as &#xHH;: 0xd7 is the x sign)
    check "the frontier's short log axis has labels between its decades" \
        test "$(grep -o '>[^<]*<' frontier.svg | tr -d '\n' | grep -o '&#x3[25];&#xd7;&#x31;&#x30;' | wc -l)" -ge 2
fi
# ---- the table's columns line up whatever the variants' names ----
# (a label longer than the old fixed 44 columns pushed its row's numbers right)
mkdir -p "$work/tier"
"$REMAT" mlp compare --layers 3 --width 16 --batch 4 --repeat 1 --schedules per-step --disk-dir "$work/tier" \
    --policies 'none,offload_dot_with_no_batch_dims(device, pinned_host)' >wide.txt 2>wide.err
check "mlp compare with a long policy name exits 0" test $? -eq 0
# the header and every variant's row; cells are set apart by two spaces or
# more (single spaces sit inside a cell): every row ends each cell at the
# header's columns (the numbers are right-aligned)
aligned() {
    awk '(/^variant / || /^(unrolled|scan) /) && !/: offloaded residuals/ {
            line = $0; ends = ""; pos = 0; k = 0
            while (match(line, /[^ ]( [^ ]|[^ ])*/)) {
                pos += RSTART + RLENGTH - 1
                if (k++) ends = ends " " pos   # the first cell, the label, is left-aligned
                line = substr(line, RSTART + RLENGTH)
            }
            rows++
            if (rows == 1) want = ends
            else if (ends != want) { printf "     row %d ends its cells at%s, the header at%s\n", rows, ends, want > "/dev/stderr"; bad = 1 }
         }
         END { exit bad || rows < 3 }' "$1"
}
check "mlp compare: every row's cells end at the header's columns" aligned wide.txt
check "  and the long label is whole" grep -q '^unrolled offload_dot_with_no_batch_dims(device, pinned_host)  ' wide.txt
check "no temporary files left" test -z "$(find . -name '*.tmp.*')"
exit $fail

#!/usr/bin/env bash
# mlp_offload.sh REMAT — `remat mlp train --policy <offload policy> --disk-dir DIR`:
#   - JAX's offload policies by name, read by the one policy parser;
#   - the training is the saving policy's to the bit (same losses and
#     accuracies printed with 17 digits in --json, same weights);
#   - the offloaded bytes, predicted = measured, are the dots' outputs (4
#     layers of a (32, 64) f32 batch), and the RAM arena is smaller by them
#     less what comes back for the backward;
#   - nothing is left in the directory.
set -u
REMAT=$1
. "$(dirname "$0")/lib.sh"
cd "$work"
mkdir tier
common="--epochs 2 --layers 4 --width 64 --json"
"$REMAT" mlp train $common --policy 'offload_dot_with_no_batch_dims(device, pinned_host)' --disk-dir "$work/tier" \
    --save-weights off.csv >off.json 2>off.err
check "offloading exits 0" test $? -eq 0
"$REMAT" mlp train $common --policy dots_with_no_batch_dims_saveable --save-weights save.csv >save.json 2>save.err
check "saving exits 0" test $? -eq 0
strip() { sed 's/"seconds": [0-9.e+-]*//g; s/"policy": "[^"]*"//; s/"offload_bytes_[a-z]*": [0-9]*//g; s/"arena_bytes_[a-z]*": [0-9]*//g' "$1"; }
check "the history is the saving policy's to the bit" test "$(strip off.json | grep -c epoch)" -gt 0 -a \
    "$(strip off.json | grep epoch)" = "$(strip save.json | grep epoch)"
check "the weights are the saving policy's to the bit" cmp -s off.csv save.csv
op=$(sed -n 's/.*"offload_bytes_predicted": \([0-9]*\).*/\1/p' off.json)
om=$(sed -n 's/.*"offload_bytes_measured": \([0-9]*\).*/\1/p' off.json)
check "offloaded bytes predicted = measured = 4 x 32 x 64 x 4 ($op, $om)" test "$op" = 32768 -a "$om" = 32768
ao=$(sed -n 's/.*"arena_bytes_measured": \([0-9]*\).*/\1/p' off.json)
as=$(sed -n 's/.*"arena_bytes_measured": \([0-9]*\).*/\1/p' save.json)
check "the RAM arena shrinks ($as -> $ao bytes)" test "${ao:-0}" -gt 0 -a "${ao:-0}" -lt "${as:-0}"
check "saving offloads nothing" grep -q '"offload_bytes_predicted": 0, "offload_bytes_measured": 0' save.json
check "nothing left in the tier's directory" test -z "$(ls -A tier)"
"$REMAT" mlp train --epochs 1 --layers 4 --width 64 \
    --policy 'save_and_offload_only_these_names(names_which_can_be_saved=[], names_which_can_be_offloaded=[h], offload_src=device, offload_dst=pinned_host)' \
    --disk-dir "$work/tier" >text.out 2>text.err
check "a names policy with JAX's keywords runs" test $? -eq 0
"$REMAT" mlp train --epochs 1 --layers 4 --width 64 --policy 'offload_dot_with_no_batch_dims(device, pinned_host)' \
    --disk-dir "$work/tier" >text.out 2>text.err
check "the text names the slow tier's bytes and the RAM arena" \
    grep -q "^offloaded residuals 32768 bytes predicted / 32768 measured in the slow tier ($work/tier); RAM: arena peak [0-9]* bytes$" text.out
# mlp compare: a list whose items hold commas; the offloading variant's gradient is the reference's
"$REMAT" mlp compare --layers 4 --width 64 --repeat 1 --schedules '' --disk-dir "$work/tier" --json \
    --policies 'dots_with_no_batch_dims_saveable,offload_dot_with_no_batch_dims(device, pinned_host)' >cmp.json 2>cmp.err
check "compare with an offload policy exits 0" test $? -eq 0
off=$(grep '"policy": "offload_dot_with_no_batch_dims(device, pinned_host)"' cmp.json)
check "compare: the offloading variant's gradient is the reference's" grep -q '"max_abs_grad_diff": 0}' <<<"$off"
check "compare: offloaded bytes predicted = measured = 4 x 64 x 64 x 4" \
    grep -q '"offload_bytes_predicted": 65536, "offload_bytes_measured": 65536,' <<<"$off"
check "nothing left in the tier's directory after compare" test -z "$(ls -A tier)"
exit $fail

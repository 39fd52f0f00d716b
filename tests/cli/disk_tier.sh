#!/usr/bin/env bash
# disk_tier.sh REMAT — `remat compare --memory-budget RAM --disk-budget D`:
#   - the budget's pick is a two-tier schedule (a RAM budget of a few
#     carries, a disk tier of many, cheap costs), it runs with its slow
#     snapshots in --disk-dir, and its gradient is store-all's to the bit;
#   - its measured forward evaluations and RAM peak equal the predicted ones;
#   - nothing is left in the directory;
#   - with dear disk costs the pick stays RAM-only.
set -u
REMAT=$1
. "$(dirname "$0")/lib.sh"
cd "$work"
mkdir tier
"$REMAT" compare --problem sin --steps 100 --schedules binomial:4 --memory-budget 10k --disk-budget 4M \
    --disk-dir "$work/tier" --disk-costs 0.05:0.05 --repeat 1 --json >cmp.json 2>cmp.err
check "compare with a disk tier exits 0" test $? -eq 0
check "the budget's pick is two-tier" grep -q '"schedule": "budget: two-tier:[0-9]*:[0-9]*:0.05:0.05", "from_budget": true' cmp.json
check "every gradient is store-all's to the bit" test "$(grep -c '"bitwise_equal": true' cmp.json)" -eq 2
two=$(grep '"from_budget": true' cmp.json)
ev=$(echo "$two" | sed 's/.*"forward_evals": \([0-9]*\),.*/\1/')
evp=$(echo "$two" | sed 's/.*"forward_evals_predicted": \([0-9]*\),.*/\1/')
pk=$(echo "$two" | sed 's/.*"peak_bytes": \([0-9]*\),.*/\1/')
pkp=$(echo "$two" | sed 's/.*"peak_bytes_predicted": \([0-9]*\),.*/\1/')
check "two-tier: forward evaluations measured = predicted ($ev)" test -n "$ev" -a "$ev" = "$evp"
check "two-tier: RAM peak measured = predicted ($pk), within the budget" test -n "$pk" -a "$pk" = "$pkp" -a "${pk:-99999}" -le 10240
check "nothing left in the tier's directory" test -z "$(ls -A tier)"
"$REMAT" compare --problem sin --steps 100 --schedules binomial:4 --memory-budget 10k --disk-budget 4M \
    --disk-dir "$work/tier" --disk-costs 1000:1000 --repeat 1 --json >dear.json 2>dear.err
check "dear disk: exits 0" test $? -eq 0
check "dear disk: the pick stays in RAM" grep -q '"schedule": "budget: binomial:[0-9]*", "from_budget": true' dear.json
exit $fail

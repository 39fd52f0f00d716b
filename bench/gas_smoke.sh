#!/bin/sh
# bench_gas's comparison with Cantera from a file of gas_cantera.py's JSON
# (the suite has no Cantera): vs_cantera's ratios are remat's CPU medians over
# the file's CPU medians ("median_cpu_ms", never its wall "median_ms"), and a
# file without the CPU medians (one from a wall-clock-only gas_cantera.py) is
# an error; the BDF forward run's counts and its ratio (vs_cantera_bdf) are
# there too.
# usage: gas_smoke.sh BENCH_GAS SOURCE_ROOT
set -eu
bench=$1
root=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '{"forward": {"T": 1, "median_ms": 1, "median_cpu_ms": 1e9}, %s\n' \
    '"sensitivities_all_multipliers": {"T": 1, "median_ms": 2, "median_cpu_ms": 1e9}}' >"$tmp/c.json"
"$bench" "$root/data/mechanisms/h2o2.yaml" H2=2,O2=1,N2=3.76 1100 2e-5 1e-5 1e-6 1e-12 1 "$tmp/c.json" >"$tmp/out.json"
want='"vs_cantera": {"cantera_forward_cpu_ms": 1000000000.000, "cantera_sensitivities_cpu_ms": 1000000000.000, '
want="$want"'"forward_time_ratio": [0-9.e-]*, "sensitivity_speedup": [0-9.e+]*}'
bdf='"forward_bdf": {"T_end": [0-9.e+]*, "steps": [1-9][0-9]*, "rejected": [0-9]*, "newton_failures": [0-9]*, '
bdf="$bdf"'"rhs_evals": [1-9][0-9]*, "jacobians": [1-9][0-9]*, "lu": [1-9][0-9]*, '
grep -q "$bdf" "$tmp/out.json" && grep -q '"vs_cantera_bdf": {"cantera_forward_cpu_ms": 1000000000.000, "forward_time_ratio": ' "$tmp/out.json" || {
    cat "$tmp/out.json"
    echo "gas_smoke: no forward_bdf counts or vs_cantera_bdf" >&2
    exit 1
}
grep -q "$want" "$tmp/out.json" || {
    cat "$tmp/out.json"
    echo "gas_smoke: no vs_cantera ratios" >&2
    exit 1
}
printf '{"forward": {"T": 1, "median_ms": 1}, "sensitivities_all_multipliers": {"T": 1, "median_ms": 1}}\n' \
    >"$tmp/bad.json"
if "$bench" "$root/data/mechanisms/h2o2.yaml" H2=2,O2=1,N2=3.76 1100 2e-5 1e-5 1e-6 1e-12 1 "$tmp/bad.json" \
    >"$tmp/out2.json" 2>"$tmp/err"; then
    echo "gas_smoke: a Cantera file without medians was accepted" >&2
    exit 1
fi
grep -q 'no forward and sensitivities_all_multipliers median_cpu_ms' "$tmp/err"
echo ok

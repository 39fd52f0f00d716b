#!/usr/bin/env bash
# fit_ranks.sh BUILD [ROUNDS [N]] — wall time of `remat pfr fit` on N (64)
# synthetic experiments (make_experiments, seeded) on 1, 2 and 4 ranks
# (mpirun --oversubscribe), the rank counts interleaved round by round, and
# the median per rank count: the fit's own seconds (remat_fit_run on rank
# 0, from its JSON) and the job's wall time (mpirun, MPI start-up, reading,
# compiling). JSON on stdout:
#   {"experiments": 64, "residuals": ..., "params": 3, "iterations": ...,
#    "fit_s": {"1": [s...], ...}, "wall_s": {...}, "median_fit_s": {"1": s, ...},
#    "median_wall_s": {...}, "efficiency_fit": {"2": T1/(2 T2), "4": T1/(4 T4)},
#    "cores": nproc}
# The fit is lm (auto) with its default Jacobian; the JSON of every run must
# be the 1-rank one (bitwise, wall time aside) or the script fails.
set -eu
BUILD=$(cd "$1" && pwd) ROUNDS=${2:-5} N=${3:-64}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/fit_ranks.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/exps"
"$BUILD/bench/make_experiments" "$SRC/examples/pfr/data/van_de_vusse.mech" "$work/exps" "$N"
runs() { # NP ROUND: one fit, its wall time on stdout
    local t0 t1
    t0=$(date +%s.%N)
    OPENBLAS_NUM_THREADS=1 REMAT_NUM_THREADS=1 "$SRC/tests/mpi_run.sh" 1 "$1" 600 "$BUILD/tools/remat" pfr fit \
        --mechanism "$SRC/examples/pfr/data/van_de_vusse.mech" --data-list "$work/exps/list.txt" --json \
        >"$work/out.$1.$2.json" 2>"$work/err" || { cat "$work/err" >&2; exit 1; }
    t1=$(date +%s.%N)
    sed -E 's/"seconds": [-0-9.eE+]+//' "$work/out.$1.$2.json" >"$work/cmp.$1.$2"
    cmp -s "$work/cmp.1.1" "$work/cmp.$1.$2" 2>/dev/null || [ "$1.$2" = 1.1 ] ||
        { echo "fit_ranks: the JSON on $1 ranks differs from 1 rank's" >&2; exit 1; }
    # the fit's own time (remat_fit_run on rank 0) and the job's wall time
    echo "$(sed -n 's/.*"seconds": \([-0-9.eE+]*\).*/\1/p' "$work/out.$1.$2.json")" \
        "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')"
}
declare -A T W
for r in $(seq 1 "$ROUNDS"); do
    for np in 1 2 4; do
        read -r fit wall < <(runs $np $r)
        T[$np]="${T[$np]:-} $fit"
        W[$np]="${W[$np]:-} $wall"
    done
done
median() { printf '%s\n' $1 | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
j=$work/out.1.1.json
num() { sed -n "s/.*\"$1\": \([-0-9.eE+]*\).*/\1/p" "$j" | head -n 1; }
m1=$(median "${T[1]}") m2=$(median "${T[2]}") m4=$(median "${T[4]}")
w1=$(median "${W[1]}") w2=$(median "${W[2]}") w4=$(median "${W[4]}")
list() { printf '%s\n' $1 | awk 'BEGIN { ORS = "" } { printf "%s%.4f", (NR > 1 ? ", " : ""), $1 }'; }
printf '{"experiments": %d, "residuals": %s, "params": 3, "iterations": %s, "evaluations": %s,\n' \
    "$N" "$(num n_residuals)" "$(num iterations)" "$(num evaluations)"
printf ' "fit_s": {"1": [%s], "2": [%s], "4": [%s]},\n' "$(list "${T[1]}")" "$(list "${T[2]}")" "$(list "${T[4]}")"
printf ' "wall_s": {"1": [%s], "2": [%s], "4": [%s]},\n' "$(list "${W[1]}")" "$(list "${W[2]}")" "$(list "${W[4]}")"
printf ' "median_fit_s": {"1": %.4f, "2": %.4f, "4": %.4f},\n' "$m1" "$m2" "$m4"
printf ' "median_wall_s": {"1": %.4f, "2": %.4f, "4": %.4f},\n' "$w1" "$w2" "$w4"
printf ' "efficiency_fit": {"2": %.3f, "4": %.3f}, "cores": %d}\n' \
    "$(awk -v a="$m1" -v b="$m2" 'BEGIN { print a / (2 * b) }')" "$(awk -v a="$m1" -v b="$m4" 'BEGIN { print a / (4 * b) }')" "$(nproc)"

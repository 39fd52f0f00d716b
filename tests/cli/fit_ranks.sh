#!/usr/bin/env bash
# fit_ranks.sh MPI_RUN HAVE_MPI REMAT EXAMPLES MAKE_EXPERIMENTS — `remat pfr
# fit` under mpirun (tests/mpi_run.sh) on 8 synthetic experiments
# (bench/dist/make_experiments.c):
#   - the fit JSON is bitwise the same on 1, 2 and 4 ranks (cmp, the wall
#     time left out): lm (residual and Jacobian blocks gathered), lbfgs-b
#     (objective and gradient summed per experiment in order), --starts
#     spread over ranks; lm's is also the one of a run without mpirun;
#   - --plot-residuals on 2 ranks ends, draws, and changes no number;
#   - a missing data file named by LIST:line, printed once (rank 0), every
#     rank non-zero, nothing on stdout;
#   - a rank that dies mid-fit (REMAT_TEST_KILL_RANK) ends the job in
#     bounded time, mpirun names the rank, no output.
# Byte comparisons rest on contract 4 (docs/design-notes.md, "Bitwise contracts").
set -u
MPI_RUN=$1 HAVE=$2 REMAT=$3 EX=$4 GEN=$5
if [ "$HAVE" != 1 ]; then
    echo "fit_ranks: remat was built without MPI: skipped"
    exit 77
fi
EX=$(cd "$EX" && pwd)
case $GEN in /*) ;; *) GEN=$PWD/$GEN ;; esac
. "$(dirname "$0")/lib.sh"
cd "$work"
mkdir exps
"$GEN" "$EX/van_de_vusse.mech" exps 8 || { echo "make_experiments failed"; exit 1; }
fit() { # NP OUT args...
    local np=$1 out=$2
    shift 2
    "$MPI_RUN" 1 "$np" 60 "$REMAT" pfr fit --mechanism "$EX/van_de_vusse.mech" --data-list exps/list.txt \
        --json "$@" >"$out" 2>"$out.err"
}
nowall() { sed -E 's/"seconds": [-0-9.eE+]+/"seconds": -/' "$1" >"$1.cmp"; }

for case in "lm" "lbfgs-b --optimizer lbfgs-b" "starts --starts 5 --seed 3"; do
    name=${case%% *} args=${case#"$name"}
    for np in 1 2 4; do
        # shellcheck disable=SC2086
        fit $np $name.$np.json $args
        check "$name on $np ranks exits 0 or 3" test $? -le 3 -a -s $name.$np.json
        nowall $name.$np.json
    done
    check "$name: 2 ranks write 1 rank's JSON bit for bit" cmp $name.1.json.cmp $name.2.json.cmp
    check "$name: 4 ranks write 1 rank's JSON bit for bit" cmp $name.1.json.cmp $name.4.json.cmp
done
check "lm converges on 8 experiments" has lm.1.json '"converged": true'
check "--starts reports its 5 starts" has starts.4.json '"starts": {"n": 5,'
"$REMAT" pfr fit --mechanism "$EX/van_de_vusse.mech" --data-list exps/list.txt --json >alone.json 2>alone.err
nowall alone.json
check "lm under mpirun is lm without it, bit for bit" cmp alone.json.cmp lm.2.json.cmp

# --plot-residuals: its residuals are a collective (the blocks are gathered
# from the ranks), so every rank computes them, not rank 0 alone (it would
# wait in the gather for ranks that went on to finish: killed at the timeout)
if "$REMAT" --version | grep -q "plots: PLplot"; then
    fit 2 plotres.json --plot-residuals plotres.png
    rc=$?
    check "--plot-residuals on 2 ranks exits 0 (exit $rc; 124: a rank hung)" test $rc -eq 0
    check "--plot-residuals on 2 ranks writes a PNG" sh -c "head -c 4 plotres.png | grep -q PNG"
    nowall plotres.json
    check "--plot-residuals on 2 ranks: the JSON of the run without it" cmp lm.2.json.cmp plotres.json.cmp
else
    echo "note: this remat has no PLplot; --plot-residuals under mpirun not drawn"
fi

# a missing file: one message naming the list's line, every rank fails
sed 's/exp_05.csv/missing.csv/' exps/list.txt >exps/bad.txt
"$MPI_RUN" 1 4 60 "$REMAT" pfr fit --mechanism "$EX/van_de_vusse.mech" --data-list exps/bad.txt --json \
    >bad.json 2>bad.err
rc=$?
check "a missing data file fails the job (exit $rc)" test $rc -ne 0 -a $rc -ne 124
check "the message names the list's line and the file" has bad.err "--data-list: exps/bad.txt:6: "
check "the message names the missing file" has bad.err "missing.csv"
check "it is printed once, by rank 0" test "$(grep -c 'missing.csv' bad.err)" -eq 1
check "nothing on stdout" test ! -s bad.json

# a rank killed at its 3rd iteration: the job ends, no output
start=$(date +%s)
REMAT_TEST_KILL_RANK=1 fit 2 killed.json
rc=$?
check "a killed rank fails the job (exit $rc), not by the timeout" test $rc -ne 0 -a $rc -ne 124
check "within 30 s" test $(($(date +%s) - start)) -le 30
check "mpirun names the rank that died" grep -q "Process name: \[\[[0-9]*,[0-9]*\],1\]" killed.json.err
check "no partial output" test ! -s killed.json
exit $fail

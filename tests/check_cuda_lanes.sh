#!/usr/bin/env bash
# check_cuda_lanes.sh TOOL PTXAS ARCH TEST... — runs the scan suites with
# REMAT_DUMP_LANES, so that every lane program they translate for the CPU
# lands in a scratch directory (one file per distinct program), then
# compiles each one to PTX (NVRTC) and sm_ARCH SASS (ptxas) with TOOL
# (tests/cuda_lanes_ptx.c). Fails on any compile error or a failing suite;
# exits 77 (skip) only when no program was translated, saying why.
set -u
tool=$1 ptxas=$2 arch=$3
shift 3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
unset REMAT_NO_JIT
for t in "$@"; do
    if ! REMAT_DUMP_LANES="$dir" "$t" >"$dir/log" 2>&1; then
        echo "check_cuda_lanes: $t failed while dumping lane programs:" >&2
        tail -20 "$dir/log" >&2
        exit 1
    fi
done
rm -f "$dir/log"
n=$(find "$dir" -name 'lanes-*.txt' | wc -l)
if [ "$n" -eq 0 ]; then
    echo "SKIP: the scan suites translated no lane program (remat built without libgccjit: scan bodies are interpreted)"
    exit 77
fi
echo "check_cuda_lanes: $n distinct lane programs from $# suites"
exec "$tool" --ptxas "$ptxas" --arch "$arch" "$dir"

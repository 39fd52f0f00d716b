#!/usr/bin/env bash
# check_env_reads.sh ROOT — the library reads its configuration from the
# environment in one place, src/core/config.c (remat_compile_options_from_env,
# include/remat/exec.h): every other getenv of src/ and kernels/ must read a
# variable ALLOWED lists, each with its reason (the debugging aids exec.h
# names, which stay environment-only and are read where they act, and what
# the launcher or a test sets). A knob read deep inside the library cannot be
# set per call: it belongs in remat_compile_options, filled by config.c.
# check_env_reads.sh --self-test plants a forbidden read and fails unless it
# is caught.
set -u

# variable|reason
ALLOWED=(
    "REMAT_JIT_DEBUG|debugging aid (exec.h)"
    "REMAT_JIT_DUMP|debugging aid (exec.h)"
    "REMAT_CACHE_DEBUG|debugging aid (exec.h)"
    "REMAT_DUMP_LANES|debugging aid (exec.h)"
    "REMAT_PLAN_DUMP|debugging aid (exec.h): the arena plan's buffers on stderr"
    "REMAT_GCCJIT_LIB|debugging aid (exec.h): which libgccjit to dlopen"
    "REMAT_NVRTC|debugging aid (exec.h): which NVRTC to dlopen"
    "REMAT_NO_BCAST_FUSION|debugging aid (DESIGN.md \"Compiled fusion\"): broadcasts materialised, for measuring"
    "REMAT_NO_REDUCE_FUSION|debugging aid (DESIGN.md \"Compiled fusion\"): reductions unfused, for measuring"
    "PATH|finding the assembler libgccjit runs"
    "OMPI_COMM_WORLD_SIZE|set by the MPI launcher (dist.c: was this process launched by mpirun?)"
    "PMIX_SIZE|set by the MPI launcher"
    "PMI_SIZE|set by the MPI launcher"
    "MPI_LOCALNRANKS|set by the MPI launcher"
    "SLURM_NTASKS|set by the MPI launcher"
    "PMIX_RANK|set by the MPI launcher"
    "REMAT_TEST_ALLOC_FAIL|test hook of dist.h"
    "REMAT_NCCL|the data-parallel trainer's NCCL switch (nn/train_shards.c; nn_train.h)"
)

allowed() {
    local e
    for e in "${ALLOWED[@]}"; do [ "${e%%|*}" = "$1" ] && return 0; done
    return 1
}

check() { # ROOT
    local root=$1 bad=0 f line var
    while IFS= read -r f; do
        case $f in */src/core/config.c) continue ;; esac
        while IFS= read -r line; do
            var=$(printf '%s\n' "$line" | sed -n 's/.*getenv("\([^"]*\)").*/\1/p')
            if [ -z "$var" ]; then
                # getenv(vars[i]) over a table: each string of the file's tables must be allowed
                continue
            fi
            allowed "$var" && continue
            echo "$f: reads $var from the environment: configuration is read in src/core/config.c (remat_compile_options)"
            bad=1
        done < <(grep -n 'getenv(' "$f")
    done < <(find "$root/src" "$root/kernels" -name '*.c' -o -name '*.h' -o -name '*.cu' 2>/dev/null | sort)
    return $bad
}

if [ "${1:-}" = --self-test ]; then
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/check_env.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT
    mkdir -p "$tmp/src/core" "$tmp/kernels/cuda"
    printf 'const char *a(void) { return getenv("REMAT_NO_JIT"); }\n' >"$tmp/src/core/config.c"
    printf 'const char *b(void) { return getenv("REMAT_JIT_DUMP"); }\n' >"$tmp/kernels/cuda/ok.c"
    check "$tmp" >/dev/null || { echo "self-test: allowed reads refused" >&2; exit 1; }
    printf 'int c(void) { const char *e = getenv("REMAT_NO_JIT"); return e != 0; }\n' >"$tmp/kernels/cuda/lanes.c"
    if check "$tmp" >/dev/null; then
        echo "self-test: getenv(\"REMAT_NO_JIT\") outside config.c was not caught" >&2
        exit 1
    fi
    echo "self-test: a configuration read outside config.c is caught"
    exit 0
fi

[ $# -eq 1 ] || { echo "usage: check_env_reads.sh ROOT | --self-test" >&2; exit 2; }
check "$1" && echo "src/ and kernels/: the environment's configuration read in src/core/config.c only"

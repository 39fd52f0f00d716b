#!/usr/bin/env bash
# check_includes.sh ROOT — the module boundaries of docs/DESIGN.md section 3
# (the layers and the module map), checked on every #include "..." of the
# *.c, *.h, *.cu and *.cuh files of every folder under ROOT/src and
# ROOT/kernels. A header's folder is its path's directory ("ad/hop.h" is in
# ad, "kernels/cuda/lanes.h" in kernels/cuda); a name without a directory is
# in the including file's own folder. An include is allowed when
#   1. it is in the file's own folder; or
#   2. it is a listed exception (EXCEPTIONS below, each with its reason) —
#      the only way to reach another folder's *_impl.h; or
#   3. it is not a *_impl.h and RULES lets the folder include it: a folder
#      name there allows that folder's headers, a path that one header.
# Everything else is a violation: another folder's internals (*_impl.h: a
# missing door is made, not bypassed) or a header the folder's layer may not
# use. A folder under src/ or kernels/ with sources but no row in RULES is an
# error too: a new folder gets its row (and its DESIGN.md row).
# check_includes.sh --self-test plants, in a scratch tree, one include each
# rule forbids and fails unless every one is caught.
set -u

# folder: what it may include besides its own folder (see DESIGN.md 3.2)
PUBLIC_TYPES="remat/op.h remat/graph.h remat/exec.h remat/dist_device.h remat/status.h remat/tensor.h remat/export.h"
MODEL_CORE="core/error.h core/assert.h core/file.h core/arena.h core/alloc.h"
declare -A RULES=(
    [core]="remat"
    [adjoint]="core remat"
    [dist]="core remat"
    [ad]="core remat"
    [backend]="core $PUBLIC_TYPES"
    [backend/cpu]="core backend $PUBLIC_TYPES"
    [kernels/cuda]="core backend $PUBLIC_TYPES"
    [exec]="core remat ad/node.h ad/graph_view.h"
    [lanes]="core $PUBLIC_TYPES ad/node.h backend/lane.h backend/lane_io.h"
    [scan]="core remat ad/hop.h ad/hop_vjp.h ad/node.h exec/hop.h backend/lane.h backend/lane_io.h lanes/lanes.h"
    [models]="remat $MODEL_CORE"
    [models/data]="remat $MODEL_CORE"
    [models/fit]="remat $MODEL_CORE"
    [models/kinetics]="remat $MODEL_CORE"
    [models/nn]="remat $MODEL_CORE"
    [models/ode]="remat $MODEL_CORE"
    [models/optim]="remat $MODEL_CORE"
    [models/pfr]="remat $MODEL_CORE"
)
# folder|header|reason: the documented reads of another folder's internals
EXCEPTIONS=(
    "exec|backend/backend_impl.h|the backend vtable: the backends' interface to the module that drives them"
    "scan|backend/backend_impl.h|the backend vtable, handed to higher-order primitives by exec/hop.h"
    "lanes|backend/backend_impl.h|the backend vtable: the translator asks the backend to compile lane programs"
    "backend/cpu|backend/backend_impl.h|the backend vtable the CPU backend implements"
    "kernels/cuda|backend/backend_impl.h|the backend vtable the CUDA backend implements"
)

# folder|level 1|level 2|...: the layers inside a folder, lowest first, each
# a list of file globs (a file takes the first level one of its globs
# matches; every file of the folder must match one). A file may include the
# folder's headers of its own level or lower, a header only those of lower
# levels: the folder's headers cannot include each other in a cycle.
LAYERS=(
    "models/fit|objective.h vars.h vars.c|optimize.h run.c opt_*.c|fit_impl.h *.c"
)
# folder|call prefix|files|reason: only those files of the folder call it
ONLY_CALLS=(
    "models/fit|remat_dist_|spread.c|the MPI spread is the one wrapper of the objective that talks to ranks (DESIGN.md, fit/ as a chain)"
)
# folder|word|reason: a word (C identifier or keyword) no file of the folder uses
FORBIDDEN_WORDS=(
    "kernels/cuda|thread_local|the device is passed in a remat_exec_ctx, not thread-current (DESIGN.md 4)"
    "kernels/cuda|_Thread_local|the device is passed in a remat_exec_ctx, not thread-current (DESIGN.md 4)"
    "kernels/cuda|__thread|the device is passed in a remat_exec_ctx, not thread-current (DESIGN.md 4)"
    "kernels/cuda|rmi_cuda_enter|the device is passed in a remat_exec_ctx, not thread-current (DESIGN.md 4)"
    "backend|enter|a backend entry is handed its context (remat_exec_ctx), never bound to the thread first"
)

folder_of_file() { # ROOT FILE -> the folder name includes use: src/ad/x.c -> ad, kernels/cuda/x.c -> kernels/cuda
    local d=${2%/*}
    d=${d#"$1"/}
    case $d in src/*) d=${d#src/} ;; esac
    printf '%s\n' "$d"
}

layers_of() { # FOLDER: prints its LAYERS row without the folder, or nothing
    local e
    for e in "${LAYERS[@]}"; do
        [ "${e%%|*}" = "$1" ] && { printf '%s\n' "${e#*|}"; return 0; }
    done
    return 1
}

level_of() { # LAYERS_ROW NAME: prints the 1-based level whose glob matches NAME, or nothing
    local row=$1 name=$2 lvl=0 g level
    local - # set -f below: the globs are patterns, not file names
    set -f
    local IFS='|'
    for level in $row; do
        lvl=$((lvl + 1))
        IFS=' '
        for g in $level; do
            # shellcheck disable=SC2254
            case $name in $g) printf '%s\n' "$lvl"; return 0 ;; esac
        done
        IFS='|'
    done
    return 1
}

check_layers() { # ROOT: the LAYERS and ONLY_CALLS rows; prints each violation, returns 1 if any
    local root=$1 bad=0 e folder dir row f name lf inc li
    for e in "${LAYERS[@]}"; do
        folder=${e%%|*}
        row=${e#*|}
        case $folder in kernels/*) dir=$root/$folder ;; *) dir=$root/src/$folder ;; esac
        [ -d "$dir" ] || continue
        for f in "$dir"/*.c "$dir"/*.h; do
            [ -e "$f" ] || continue
            name=${f##*/}
            if ! lf=$(level_of "$row" "$name"); then
                echo "$f: in no layer of $folder: add it to its LAYERS row in tests/check_includes.sh"
                bad=1
                continue
            fi
            while IFS= read -r inc; do
                case $inc in
                "$folder"/*) inc=${inc#"$folder"/} ;;
                */*) continue ;;
                esac
                [ -e "$dir/$inc" ] || continue
                li=$(level_of "$row" "$inc") || continue
                if [ "$li" -gt "$lf" ] || { [ "${name##*.}" = h ] && [ "$li" -ge "$lf" ]; }; then
                    echo "$f: includes $inc (layer $li of $folder) from layer $lf: a layer includes only lower ones"
                    bad=1
                fi
            done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f")
        done
    done
    local prefix files reason rest
    for e in "${ONLY_CALLS[@]}"; do
        folder=${e%%|*}; rest=${e#*|}
        prefix=${rest%%|*}; rest=${rest#*|}
        files=${rest%%|*}; reason=${rest#*|}
        case $folder in kernels/*) dir=$root/$folder ;; *) dir=$root/src/$folder ;; esac
        [ -d "$dir" ] || continue
        for f in "$dir"/*.c "$dir"/*.h; do
            [ -e "$f" ] || continue
            case " $files " in *" ${f##*/} "*) continue ;; esac
            if grep -q "${prefix}[A-Za-z0-9_]*[[:space:]]*(" "$f"; then
                echo "$f: calls ${prefix}*: only $files of $folder may ($reason)"
                bad=1
            fi
        done
    done
    # the forbidden words, one grep per file of a folder that has any
    local -A words=()
    for e in "${FORBIDDEN_WORDS[@]}"; do
        folder=${e%%|*}; rest=${e#*|}
        words[$folder]+="${words[$folder]:+|}${rest%%|*}"
    done
    local word
    for folder in "${!words[@]}"; do
        case $folder in kernels/*) dir=$root/$folder ;; *) dir=$root/src/$folder ;; esac
        [ -d "$dir" ] || continue
        for f in "$dir"/*.c "$dir"/*.h "$dir"/*.cu "$dir"/*.cuh; do
            [ -e "$f" ] || continue
            # code only: block comments, // comments and strings dropped
            while IFS= read -r word; do
                for e in "${FORBIDDEN_WORDS[@]}"; do
                    [ "$e" = "${e#"$folder|$word|"}" ] && continue
                    echo "$f: uses '$word': not in $folder (${e#"$folder|$word|"})"
                    bad=1
                done
            done < <(perl -0pe 's{/\*.*?\*/}{}gs; s{//[^\n]*}{}g; s{"(?:[^"\\\n]|\\.)*"}{}g' "$f" |
                grep -owE -- "${words[$folder]}" | sort -u)
        done
    done
    return $bad
}

exception_of() { # FOLDER INC: prints the reason if listed
    local e
    for e in "${EXCEPTIONS[@]}"; do
        if [ "${e%%|*}" = "$1" ]; then
            local rest=${e#*|}
            [ "${rest%%|*}" = "$2" ] && { printf '%s\n' "${rest#*|}"; return 0; }
        fi
    done
    return 1
}

allowed_by_rule() { # FOLDER INC_FOLDER INC
    local r
    for r in ${RULES[$1]}; do
        [ "$r" = "$2" ] || [ "$r" = "$3" ] && return 0
    done
    return 1
}

check() { # ROOT: prints each violation, returns 1 if any
    local root=$1 bad=0 f inc d folder incdir
    shopt -s nullglob
    local dirs=()
    while IFS= read -r d; do dirs+=("$d"); done < <(find "$root/src" "$root/kernels" -type d 2>/dev/null | sort)
    if [ ${#dirs[@]} -eq 0 ]; then
        echo "check_includes: no folders under $root/src or $root/kernels" >&2
        return 2
    fi
    local nfiles=0
    for d in "${dirs[@]}"; do
        local files=("$d"/*.c "$d"/*.h "$d"/*.cu "$d"/*.cuh)
        [ ${#files[@]} -eq 0 ] && continue
        folder=$(folder_of_file "$root" "${files[0]}")
        if [ -z "${RULES[$folder]+x}" ]; then
            echo "$d: no include rule for folder $folder: add its row to tests/check_includes.sh and docs/DESIGN.md"
            bad=1
            continue
        fi
        for f in "${files[@]}"; do
            nfiles=$((nfiles + 1))
            while IFS= read -r inc; do
                case $inc in
                */*) incdir=${inc%/*} ;;
                *) incdir=$folder ;; # next to the file
                esac
                [ "$incdir" = "$folder" ] && continue
                exception_of "$folder" "$inc" >/dev/null && continue
                case $inc in
                *_impl.h)
                    echo "$f: includes $inc, another folder's internals: add a narrow header to that folder instead"
                    bad=1
                    continue ;;
                esac
                allowed_by_rule "$folder" "$incdir" "$inc" && continue
                echo "$f: includes $inc: $folder may include only its own headers and: ${RULES[$folder]}"
                bad=1
            done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f")
        done
    done
    if [ $nfiles -eq 0 ]; then
        echo "check_includes: no sources under $root/src or $root/kernels" >&2
        return 2
    fi
    check_layers "$root" || bad=1
    return $bad
}

self_test() {
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/check_includes.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT
    local folder dir e
    # every folder with a file that includes what its row allows
    for folder in "${!RULES[@]}"; do
        case $folder in kernels/*) dir=$tmp/$folder ;; *) dir=$tmp/src/$folder ;; esac
        mkdir -p "$dir"
        {
            printf '#include <stdlib.h>\n#include "own.h"\n#include "own_impl.h"\n'
            for e in ${RULES[$folder]}; do
                case $e in */*.h) printf '#include "%s"\n' "$e" ;; *) printf '#include "%s/x.h"\n' "$e" ;; esac
            done
            for e in "${EXCEPTIONS[@]}"; do
                [ "${e%%|*}" = "$folder" ] && { local r=${e#*|}; printf '#include "%s"\n' "${r%%|*}"; }
            done
        } >"$dir/ok.c"
    done
    check "$tmp" >"$tmp/out" || { echo "self-test: allowed includes were refused:" >&2; cat "$tmp/out" >&2; return 1; }
    # folder|include: one forbidden include per rule (planted alone, each must fail)
    local planted=(
        "scan|scan/../ad/graph_impl.h"
        "scan|ad/graph_impl.h"
        "scan|ad/vjp_impl.h"
        "scan|ad/ops_internal.h"
        "scan|ad/flatten.h"
        "scan|exec/program_impl.h"
        "scan|exec/passes.h"
        "scan|lanes/lanes_impl.h"
        "scan|lanes/lanes_solve.h"
        "lanes|scan/scan_impl.h"
        "lanes|scan/scan_rt.h"
        "lanes|exec/hop.h"
        "core|ad/node.h"
        "core|backend/lane.h"
        "adjoint|ad/graph_impl.h"
        "adjoint|exec/hop.h"
        "dist|backend/backend_impl.h"
        "dist|ad/node.h"
        "ad|exec/hop.h"
        "ad|backend/backend_impl.h"
        "ad|scan/scan_impl.h"
        "backend|ad/node.h"
        "backend|backend/cpu/cpu_kernels.h"
        "backend|remat/ad.h"
        "backend/cpu|ad/node.h"
        "backend/cpu|exec/hop.h"
        "backend/cpu|kernels/cuda/cuda_kernels.h"
        "kernels/cuda|backend/cpu/cpu_kernels.h"
        "kernels/cuda|backend/cpu/copy_op.h"
        "kernels/cuda|ad/graph_impl.h"
        "kernels/cuda|remat/ad.h"
        "exec|scan/scan_impl.h"
        "exec|scan/scan.h"
        "exec|ad/vjp_impl.h"
        "exec|ad/hop.h"
        "exec|ad/graph_impl.h"
        "exec|ad/flatten.h"
        "exec|backend/lane.h"
        "exec|backend/cpu/cpu_kernels.h"
        "models|exec/program_impl.h"
        "models/nn|ad/node.h"
        "models/nn|models/data/labeled_impl.h"
        "models/data|models/nn/nn_impl.h"
        "models/fit|core/pool.h"
        "models/pfr|backend/backend_impl.h"
        "models/kinetics|ad/graph_impl.h"
        "models/ode|scan/loop_rt.h"
        "models/optim|exec/exec_op.h"
    )
    local p inc
    for p in "${planted[@]}"; do
        folder=${p%%|*}
        inc=${p#*|}
        case $folder in kernels/*) dir=$tmp/$folder ;; *) dir=$tmp/src/$folder ;; esac
        printf '#include <stdlib.h>\n  #  include "%s"  /* x */\n' "$inc" >"$dir/bad.h"
        if check "$tmp" >/dev/null; then
            echo "self-test: #include \"$inc\" in $folder was not caught" >&2
            return 1
        fi
        rm "$dir/bad.h"
    done
    # every folder has a planted case
    for folder in "${!RULES[@]}"; do
        local seen=0
        for p in "${planted[@]}"; do [ "${p%%|*}" = "$folder" ] && seen=1; done
        [ $seen -eq 1 ] || { echo "self-test: no planted include for folder $folder" >&2; return 1; }
    done
    # the layers inside a folder: a lower layer including a higher one, a
    # header including one of its own layer, a file in no layer, a call
    # only one file may make
    local layer_cases=(
        "models/fit|opt_lm.c|#include \"models/fit/fit_impl.h\""
        "models/fit|run.c|#include \"fit_impl.h\""
        "models/fit|objective.h|#include \"models/fit/vars.h\""
        "models/fit|vars.h|#include \"models/fit/optimize.h\""
        "models/fit|notes.h|/* a header in no layer: *.c is the top layer's glob, not *.h */"
        "models/fit|problem.c|int f(void) { return remat_dist_agree(0, 0); }"
        "kernels/cuda|memory.cu|static thread_local int cur_device = -1;"
        "kernels/cuda|dot.cu|static _Thread_local void *handles[64];"
        "kernels/cuda|state.c|static __thread int cur;"
        "kernels/cuda|lower.c|void rmi_cuda_enter(int device, void *state);"
        "backend|backend_impl.h|typedef struct { void (*enter)(void *be, void *state); } iface;"
    )
    mkdir -p "$tmp/src/models/fit" "$tmp/kernels/cuda" "$tmp/src/backend"
    for e in objective.h vars.h optimize.h fit_impl.h; do : >"$tmp/src/models/fit/$e"; done
    # the words are caught in code, not in comments or strings
    printf '/* no thread_local state; enter nothing */\n// __thread\nconst char *s = "rmi_cuda_enter";\n' \
        >"$tmp/kernels/cuda/prose.c"
    printf '/* callers enter here */\n' >"$tmp/src/backend/prose.h"
    check "$tmp" >"$tmp/out" || { echo "self-test: the layered folder was refused:" >&2; cat "$tmp/out" >&2; return 1; }
    local c file text
    for c in "${layer_cases[@]}"; do
        folder=${c%%|*}; file=${c#*|}; text=${file#*|}; file=${file%%|*}
        case $folder in kernels/*) dir=$tmp/$folder ;; *) dir=$tmp/src/$folder ;; esac
        printf '%s\n' "$text" >"$dir/$file"
        if check "$tmp" >/dev/null; then
            echo "self-test: $text in $folder/$file was not caught" >&2
            return 1
        fi
        case $file in objective.h | vars.h) : >"$dir/$file" ;; *) rm "$dir/$file" ;; esac
    done
    # a folder without a row is refused
    mkdir -p "$tmp/src/newmod" && echo '#include "core/error.h"' >"$tmp/src/newmod/a.c"
    if check "$tmp" >/dev/null; then
        echo "self-test: a folder without a rule was not refused" >&2
        return 1
    fi
    echo "self-test: every forbidden include caught (${#planted[@]} planted, ${#RULES[@]} folders)"
}

if [ "${1:-}" = --self-test ]; then
    self_test
    exit
fi

[ $# -eq 1 ] || { echo "usage: check_includes.sh ROOT | --self-test" >&2; exit 2; }
check "$1" && echo "src/ and kernels/: every include within its folder's rule"

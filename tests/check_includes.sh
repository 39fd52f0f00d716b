#!/usr/bin/env bash
# check_includes.sh SRC — the module boundaries of docs/design-notes.md
# ("Adding a higher-order primitive"), checked on every #include "..." of
# SRC/scan/*.c and *.h:
#   - no *_impl.h of another folder: a missing door is made, not bypassed.
#     One exception: backend/backend_impl.h, the backend vtable, which is
#     the backends' interface to every module that drives one (exec/hop.h
#     hands it to higher-order primitives too);
#   - of src/ad only the doors for higher-order primitives: ad/hop.h
#     (building HOP nodes, the body's cut VJP), ad/hop_vjp.h (reverse-mode
#     rules) and ad/node.h (reading a graph's nodes).
# check_includes.sh --self-test runs the check on a scratch tree with one
# forbidden include per rule and fails unless each is caught.
set -u

check() { # SRC: prints each violation, returns 1 if any
    local src=$1 bad=0 f inc
    shopt -s nullglob
    local files=("$src"/scan/*.c "$src"/scan/*.h)
    if [ ${#files[@]} -eq 0 ]; then
        echo "check_includes: no files under $src/scan" >&2
        return 2
    fi
    for f in "${files[@]}"; do
        while IFS= read -r inc; do
            case $inc in
            scan/*) ;;                                   # its own folder
            backend/backend_impl.h) ;;                   # the backend vtable (see above)
            ad/hop.h | ad/hop_vjp.h | ad/node.h) ;;      # the HOP doors of src/ad
            ad/*)
                echo "$f: includes $inc: src/ad offers higher-order primitives ad/hop.h, ad/hop_vjp.h and ad/node.h only"
                bad=1 ;;
            *_impl.h)
                echo "$f: includes $inc, another folder's internals: add a narrow header to that folder instead"
                bad=1 ;;
            esac
        done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f")
    done
    return $bad
}

if [ "${1:-}" = --self-test ]; then
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/check_includes.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT
    mkdir -p "$tmp/scan"
    printf '#include "scan/scan_impl.h"\n#include "ad/hop.h"\n#include "backend/backend_impl.h"\n' >"$tmp/scan/ok.c"
    check "$tmp" >/dev/null || { echo "self-test: allowed includes were refused" >&2; exit 1; }
    for inc in ad/graph_impl.h ad/vjp_impl.h ad/ops_internal.h ad/flatten.h exec/program_impl.h; do
        printf '#include <stdlib.h>\n  #  include "%s"  /* x */\n' "$inc" >"$tmp/scan/bad.h"
        if check "$tmp" >/dev/null; then
            echo "self-test: #include \"$inc\" was not caught" >&2
            exit 1
        fi
    done
    echo "self-test: every forbidden include caught"
    exit 0
fi

[ $# -eq 1 ] || { echo "usage: check_includes.sh SRC | --self-test" >&2; exit 2; }
check "$1" && echo "src/scan: no other folder's internals included"

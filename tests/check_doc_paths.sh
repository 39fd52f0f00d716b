#!/usr/bin/env bash
# check_doc_paths.sh ROOT — every repository path a comment or a document
# names (src/..., tests/..., tools/... ending in .c, .h, .cu, .sh or .py, in
# the C sources and headers, the meson files, README.md and docs/DESIGN.md
# and docs/STYLE.md) is a file of the tree: a file renamed or moved takes the
# comments that name it along. docs/design-notes.md is a history and may name
# files that have since moved. check_doc_paths.sh --self-test plants a
# comment naming a missing file and fails unless it is caught.
set -u

PATHS='(^|[^A-Za-z0-9_$/.-])(src|tests|tools|include|kernels|bench|examples)/[A-Za-z0-9_./-]*[A-Za-z0-9_]\.(c|h|cu|sh|py)($|[^A-Za-z0-9_])'

check() { # ROOT
    local root=$1 bad=0 f p
    while IFS=: read -r f p; do
        p=$(printf '%s\n' "$p" | grep -oE '(src|tests|tools|include|kernels|bench|examples)/[A-Za-z0-9_./-]*\.(c|h|cu|sh|py)')
        [ -e "$root/$p" ] && continue
        echo "${f#"$root"/}: names $p, which is not a file of the tree"
        bad=1
    done < <(
        {
            find "$root/src" "$root/include" "$root/tests" "$root/tools" "$root/kernels" "$root/bench" \
                "$root/examples" \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name meson.build \) 2>/dev/null
            for d in "$root/meson.build" "$root/README.md" "$root/docs/DESIGN.md" "$root/docs/STYLE.md"; do
                [ -f "$d" ] && echo "$d"
            done
        } | sort | xargs -d '\n' grep -oHE "$PATHS" | sort -u
    )
    return $bad
}

if [ "${1:-}" = --self-test ]; then
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/check_paths.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT
    mkdir -p "$tmp/src/core" "$tmp/tests"
    printf '/* tests/test_a.c checks it */\n' >"$tmp/src/core/a.c"
    printf 'int main(void) { return 0; }\n' >"$tmp/tests/test_a.c"
    check "$tmp" >/dev/null || { echo "self-test: a comment naming an existing file refused" >&2; exit 1; }
    printf '/* tests/test_b.c checks it */\n' >"$tmp/src/core/b.c"
    if check "$tmp" >/dev/null; then
        echo "self-test: a comment naming the missing tests/test_b.c was not caught" >&2
        exit 1
    fi
    echo "self-test: a comment naming a missing file is caught"
    exit 0
fi

[ $# -eq 1 ] || { echo "usage: check_doc_paths.sh ROOT | --self-test" >&2; exit 2; }
check "$1" && echo "every repository path named in the sources, meson files, README.md and docs/DESIGN.md exists"

#!/usr/bin/env bash
# check_null_sweep.sh CC INCLUDE TEST_C — every function declared in
# INCLUDE/remat/*.h is named in TEST_C (tests/test_hostile_null.c) either by
# a row of null_table ({"remat_x", ...}) or in null_exempt (functions with no
# pointer argument): a new public function cannot go without its NULL case.
# Also fails on a name of either list that no header declares (a row left
# behind by a rename). The declarations are read from CC's preprocessed
# headers, so comments and macros do not fool it.
# check_null_sweep.sh --self-test CC INCLUDE TEST_C: a scratch header with
# one more function must be caught.
set -u

# declared CC INCLUDE: the public functions (tests/public_api.sh)
# shellcheck source=tests/public_api.sh
. "$(dirname "$0")/public_api.sh"
declared() { public_functions "$@"; }

listed() { # TEST_C: the names of null_table's rows and of null_exempt
    local t=$1
    {
        sed -n 's/^[[:space:]]*{"\(remat_[A-Za-z0-9_]*\)",.*/\1/p' "$t"
        sed -n '/null_exempt\[\] = {/,/^};/p' "$t" | grep -o '"remat_[A-Za-z0-9_]*"' | tr -d '"'
    } | sort -u
}

check() { # CC INCLUDE TEST_C
    local d l missing stale
    d=$(declared "$1" "$2") || return 2
    [ -n "$d" ] || { echo "check_null_sweep: no function found in $2/remat/*.h" >&2; return 2; }
    l=$(listed "$3")
    missing=$(comm -23 <(echo "$d") <(echo "$l"))
    stale=$(comm -13 <(echo "$d") <(echo "$l"))
    for f in $missing; do
        echo "$f: declared in $2/remat but not in $3's null_table (or null_exempt, if it takes no pointer)"
    done
    for f in $stale; do
        echo "$f: listed in $3 but declared in no header of $2/remat"
    done
    [ -z "$missing" ] && [ -z "$stale" ]
}

if [ "${1:-}" = --self-test ]; then
    shift
    [ $# -eq 3 ] || { echo "usage: check_null_sweep.sh --self-test CC INCLUDE TEST_C" >&2; exit 2; }
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/check_null_sweep.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT
    cp -r "$2/remat" "$tmp/remat"
    printf '#include <stdint.h>\n/* remat_in_comment(x); */\nint64_t\n  remat_zz_new_function(const void *p,\n  int n);\n' \
        >"$tmp/remat/zz_extra.h"
    out=$(check "$1" "$tmp" "$3")
    case $out in
    *"remat_zz_new_function: declared"*) ;;
    *) echo "self-test: a new function was not caught: $out" >&2; exit 1 ;;
    esac
    case $out in
    *remat_in_comment*) echo "self-test: a name in a comment was taken for a function" >&2; exit 1 ;;
    esac
    echo "self-test: an uncovered function is caught"
    exit 0
fi

[ $# -eq 3 ] || { echo "usage: check_null_sweep.sh CC INCLUDE TEST_C | --self-test CC INCLUDE TEST_C" >&2; exit 2; }
check "$@" && echo "every function of $2/remat/*.h has a NULL case or an exemption"

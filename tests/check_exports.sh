#!/usr/bin/env bash
# check_exports.sh CC INCLUDE LIBSO — the library's boundary: the dynamic
# symbols LIBSO defines are exactly the functions and variables declared in
# INCLUDE/remat/*.h (static inline functions excepted). Fails naming every
# exported symbol that no public header declares (an internal that lost its
# hidden visibility) and every public declaration that is not exported (a
# declaration without REMAT_API, include/remat/export.h).
# check_exports.sh CC INCLUDE LIBSO LIBA also holds the prefix to the public
# API: no global symbol of the static library LIBA (which tests and tools
# link, internals included) is named remat_* unless a public header declares
# it; internal names take rmi_*.
# check_exports.sh --self-test CC INCLUDE: a scratch library that exports
# an undeclared symbol, hides a declared function and names an internal one
# remat_* must have all three caught.
set -u
here=$(dirname "$0")

if [ "${1:-}" = --self-test ]; then
    [ $# -eq 3 ] || { echo "usage: check_exports.sh --self-test CC INCLUDE" >&2; exit 2; }
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/check_exports.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT
    mkdir -p "$tmp/include/remat"
    cp "$3/remat/export.h" "$tmp/include/remat/"
    # remat_zz_hidden: REMAT_API forgotten; remat_zz_leak: an internal made
    # visible; remat_zz_internal: hidden but named like the API
    printf '#include "export.h"\nREMAT_API int remat_zz_kept(void);\nint remat_zz_hidden(void);\n' \
        >"$tmp/include/remat/zz.h"
    printf '%s\n' '#include "remat/zz.h"' 'int remat_zz_kept(void) { return 1; }' \
        'int remat_zz_hidden(void) { return 2; }' \
        '__attribute__((visibility("default"))) int remat_zz_leak(void);' 'int remat_zz_leak(void) { return 3; }' \
        'int remat_zz_internal(void);' 'int remat_zz_internal(void) { return 4; }' >"$tmp/zz.c"
    "$2" -std=c11 -fPIC -fvisibility=hidden -I "$tmp/include" -c "$tmp/zz.c" -o "$tmp/zz.o" &&
        "$2" -shared -o "$tmp/libzz.so" "$tmp/zz.o" && ar rcs "$tmp/libzz.a" "$tmp/zz.o" || exit 2
    out=$("$0" "$2" "$tmp/include" "$tmp/libzz.so" "$tmp/libzz.a")
    for want in "remat_zz_leak: exported" "remat_zz_hidden: declared" "remat_zz_internal: internal"; do
        case $out in
        *"$want"*) ;;
        *) echo "self-test: '$want' was not reported: $out" >&2; exit 1 ;;
        esac
    done
    case $out in
    *remat_zz_kept*) echo "self-test: the declared, exported remat_zz_kept was reported: $out" >&2; exit 1 ;;
    esac
    echo "self-test: a leaked, a hidden and a misnamed symbol are caught"
    exit 0
fi

[ $# -eq 3 ] || [ $# -eq 4 ] || { echo "usage: check_exports.sh CC INCLUDE LIBSO [LIBA] | --self-test CC INCLUDE" >&2; exit 2; }
cc=$1 inc=$2 lib=$3 liba=${4:-}
# shellcheck source=tests/public_api.sh
. "$here/public_api.sh"

public=$( {
    public_statements "$cc" "$inc" | awk '!/^static/ && match($0, /[A-Za-z_][A-Za-z0-9_]*[ \t]*\(/) {
        name = substr($0, RSTART, RLENGTH); sub(/[ \t]*\($/, "", name); print name }'
    public_data "$cc" "$inc"
} | sort -u)
[ -n "$public" ] || { echo "check_exports: nothing declared in $inc/remat/*.h" >&2; exit 2; }
# AddressSanitizer adds an ODR indicator beside each exported global
# (__odr_asan.<name>): the sanitizer's, not the library's
exported=$(nm -D --defined-only "$lib" |
    awk 'NF == 3 && $2 ~ /[A-TV-Z]/ && $3 !~ /^__odr_asan[.]/ { sub(/@.*/, "", $3); print $3 }' | sort -u)
[ -n "$exported" ] || { echo "check_exports: $lib exports nothing (nm failed?)" >&2; exit 2; }

internal=$(comm -13 <(echo "$public") <(echo "$exported"))
hidden=$(comm -23 <(echo "$public") <(echo "$exported"))
for s in $internal; do
    echo "$s: exported by $lib but declared in no header of $inc/remat"
done
for s in $hidden; do
    echo "$s: declared in $inc/remat but not exported by $lib (REMAT_API missing?)"
done
bad=$internal$hidden
if [ -n "$liba" ]; then
    globals=$(nm -g --defined-only "$liba" 2>/dev/null | awk 'NF == 3 && $3 ~ /^remat_/ { print $3 }' | sort -u)
    [ -n "$globals" ] || { echo "check_exports: no remat_* symbol in $liba (nm failed?)" >&2; exit 2; }
    prefixed=$(comm -13 <(echo "$public") <(echo "$globals"))
    for s in $prefixed; do
        echo "$s: internal symbol of $liba named like the public API (internal names are rmi_*)"
    done
    bad=$bad$prefixed
fi
[ -z "$bad" ] || exit 1
echo "$lib exports the $(echo "$public" | wc -l) functions and variables of $inc/remat/*.h, nothing else${liba:+; $liba names no internal symbol remat_*}"

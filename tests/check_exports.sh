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
set -u
[ $# -eq 3 ] || [ $# -eq 4 ] || { echo "usage: check_exports.sh CC INCLUDE LIBSO [LIBA]" >&2; exit 2; }
cc=$1 inc=$2 lib=$3 liba=${4:-}
. "$(dirname "$0")/public_api.sh"

public=$( {
    public_statements "$cc" "$inc" | awk '!/^static/ && match($0, /[A-Za-z_][A-Za-z0-9_]*[ \t]*\(/) {
        name = substr($0, RSTART, RLENGTH); sub(/[ \t]*\($/, "", name); print name }'
    public_data "$cc" "$inc"
} | sort -u)
[ -n "$public" ] || { echo "check_exports: nothing declared in $inc/remat/*.h" >&2; exit 2; }
exported=$(nm -D --defined-only "$lib" | awk 'NF == 3 && $2 ~ /[A-TV-Z]/ { sub(/@.*/, "", $3); print $3 }' | sort -u)
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

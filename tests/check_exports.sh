#!/usr/bin/env bash
# check_exports.sh CC INCLUDE LIBSO — the library's boundary: the dynamic
# symbols LIBSO defines are exactly the functions and variables declared in
# INCLUDE/remat/*.h (static inline functions excepted). Fails naming every
# exported symbol that no public header declares (an internal that lost its
# hidden visibility) and every public declaration that is not exported (a
# declaration without REMAT_API, include/remat/export.h).
set -u
[ $# -eq 3 ] || { echo "usage: check_exports.sh CC INCLUDE LIBSO" >&2; exit 2; }
cc=$1 inc=$2 lib=$3
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
[ -z "$internal" ] && [ -z "$hidden" ] || exit 1
echo "$lib exports the $(echo "$public" | wc -l) functions and variables of $inc/remat/*.h, nothing else"

# shellcheck shell=bash
# public_api.sh — sourced by the checks of the public API: the functions and
# variables that include/remat/*.h declare, read from CC's preprocessed
# headers (comments and macros do not fool it; REMAT_API, the visibility
# attribute of include/remat/export.h, is taken out).

public_statements() { # CC INCLUDE: the top-level declarations, one a line
    local cc=$1 inc=$2 h
    for h in "$inc"/remat/*.h; do
        printf '#include "%s"\n' "$h"
    done | $cc -std=c11 -E -I "$inc" -x c - |
        awk -v dir="$inc/remat/" '
            /^# [0-9]+ "/ { keep = index($3, dir) == 2; next }   # line markers: only our headers
            keep { gsub(/__attribute__[ \t]*\(\(visibility\("default"\)\)\)/, ""); printf "%s ", $0 }' |
        # struct/enum bodies and inline function bodies out, then one
        # declaration per statement
        awk '{
            out = ""; depth = 0
            for (i = 1; i <= length($0); i++) {
                c = substr($0, i, 1)
                if (c == "{") { if (depth++ == 0) out = out ";"; continue }
                if (c == "}") { depth--; continue }
                if (depth == 0) out = out c
            }
            n = split(out, st, ";")
            for (i = 1; i <= n; i++) {
                s = st[i]
                sub(/^[ \t]+/, "", s)
                if (s ~ /^typedef/ || s ~ /^extern "C"/ || s == "") continue
                print s
            }
        }'
}

public_functions() { # CC INCLUDE: the function names, one a line
    public_statements "$1" "$2" | awk '
        match($0, /[A-Za-z_][A-Za-z0-9_]*[ \t]*\(/) {
            name = substr($0, RSTART, RLENGTH)
            sub(/[ \t]*\($/, "", name)
            if (name ~ /^remat_/) print name
        }' | sort -u
}

public_data() { # CC INCLUDE: the variables (extern declarations), one a line
    public_statements "$1" "$2" | awk '/^extern / && !/\(/ {
        s = $0; sub(/[ \t]*(\[[^]]*\][ \t]*)*$/, "", s)
        n = split(s, w, /[^A-Za-z0-9_]+/); print w[n] }' | sort -u
}

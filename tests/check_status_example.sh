#!/usr/bin/env bash
# check_status_example.sh CC INCLUDE — the usage example that ends the comment
# opening include/remat/status.h (its last paragraph, indented " *   ")
# compiles without a warning against the real declarations: calls in it take
# their arguments in the order the headers declare. The variables it uses
# are declared here.
set -eu
cc=$1 inc=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
{
    echo '#include <stdio.h>'
    echo '#include "remat/remat.h"'
    echo 'void example(remat_program *prog, remat_tensor *in, remat_tensor *out);'
    echo 'void example(remat_program *prog, remat_tensor *in, remat_tensor *out)'
    echo '{'
    echo '    remat_stats stats;'
    # the opening comment's last paragraph (after its last " *" line)
    sed -n '1,/\*\//p' "$inc/remat/status.h" |
        awk '/^ \*$/ { n = 0; next } /^ \*   / { block[n++] = substr($0, 6) } END { for (i = 0; i < n; i++) print block[i] }'
    echo '}'
} > "$tmp/example.c"
if ! grep -q remat_run "$tmp/example.c"; then
    echo "check_status_example: no example found in $inc/remat/status.h" >&2
    exit 2
fi
$cc -std=c11 -Wall -Wextra -Werror -fsyntax-only -I "$inc" "$tmp/example.c"

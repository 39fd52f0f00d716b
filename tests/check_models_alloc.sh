#!/usr/bin/env bash
# check_models_alloc.sh ROOT — the models (src/models) allocate through the
# injectable allocator of src/core/alloc.h (rmi_malloc, rmi_calloc,
# rmi_realloc, rmi_strdup, rmi_free), so the failure-injection tests
# (tests/test_nomem_fit.c) reach every allocation they make: a raw malloc,
# calloc, realloc, strdup, strndup or free there is reported with file:line.
# Comments are not code: a line whose call sits after `/*`, `*` or `//` is
# skipped. check_models_alloc.sh --self-test plants raw calls and fails
# unless each is caught.
set -u

check() { # ROOT
    local root=$1 bad=0 hits
    hits=$(grep -rnE '(^|[^_a-zA-Z0-9])(malloc|calloc|realloc|strdup|strndup|free)\(' "$root/src/models" \
        --include='*.c' --include='*.h' | grep -vE '^[^:]+:[0-9]+:\s*(/\*|\*|//)' || true)
    if [ -n "$hits" ]; then
        printf '%s\n' "$hits" | sed 's/$/   <- raw allocation in src\/models: use core\/alloc.h (rmi_*)/'
        bad=1
    fi
    return $bad
}

if [ "${1:-}" = --self-test ]; then
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/check_alloc.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT
    mkdir -p "$tmp/src/models/fit"
    fails=0
    for call in 'malloc(8)' 'calloc(1, 8)' 'realloc(p, 8)' 'strdup("a")' 'strndup("a", 1)' 'free(p)'; do
        printf 'void f(void *p) { (void)%s; }\n' "$call" >"$tmp/src/models/fit/x.c"
        if check "$tmp" >/dev/null; then
            echo "self-test: a planted $call was not caught"
            fails=1
        fi
    done
    printf 'void f(void *p) { rmi_free(p); rmi_malloc(8); }\n/* malloc(0) in a comment */\n' >"$tmp/src/models/fit/x.c"
    if ! check "$tmp" >/dev/null; then
        echo "self-test: rmi_* calls or a comment were reported"
        fails=1
    fi
    exit $fails
fi

check "${1:?usage: check_models_alloc.sh ROOT | --self-test}"

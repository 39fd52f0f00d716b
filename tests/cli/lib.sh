# lib.sh — what the CLI test scripts share, sourced after they set REMAT:
# REMAT made absolute, a scratch directory $work (removed on exit, the
# current directory of nothing), LeakSanitizer told about the libraries
# that keep caches to the end of the process (fontconfig and libltdl,
# loaded by PLplot; libgccjit, the compiled scan loops), and the checks.
case $REMAT in /*) ;; *) REMAT=$PWD/$REMAT ;; esac
work=$(mktemp -d "${TMPDIR:-/tmp}/remat-cli.XXXXXX")
trap 'rm -rf "$work"' EXIT
printf 'leak:libfontconfig\nleak:libltdl\nleak:libplplot\nleak:libgccjit.so\n' >"$work/lsan.supp"
export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$work/lsan.supp"
fail=0
check() { # name, then a command whose failure fails the test
    local name=$1
    shift
    if "$@"; then echo "ok   $name"; else echo "FAIL $name"; fail=1; fi
}
same() { diff -u "$1" "$2" >&2; }
has() { grep -qF -- "$2" "$1" || { echo "     no '$2' in $1:" >&2; sed 's/^/     | /' "$1" >&2; false; }; }

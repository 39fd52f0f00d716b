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
# same_but_residue EXPECTED GOT: the same text, except that the mass balance's
# rounding residue ('outlet - inlet = X') is rounding, not a result: it may
# differ by CPU and compiler (docs/design-notes.md, "Bitwise contracts") and is
# held to |X| <= 1e-12 instead of to its digits.
same_but_residue() {
    local pat='s/(outlet - inlet = )[-+0-9.eE]+/\1RESIDUE/'
    diff -u <(sed -E "$pat" "$1") <(sed -E "$pat" "$2") >&2 || return 1
    local r
    r=$(sed -nE 's/.*outlet - inlet = ([-+0-9.eE]+).*/\1/p' "$2")
    [ -n "$r" ] && awk -v r="$r" 'BEGIN { exit !(r <= 1e-12 && r >= -1e-12) }' ||
        { echo "     mass balance residue '$r' is not within 1e-12" >&2; false; }
}
has() { grep -qF -- "$2" "$1" || { echo "     no '$2' in $1:" >&2; sed 's/^/     | /' "$1" >&2; false; }; }

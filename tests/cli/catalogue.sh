#!/usr/bin/env bash
# catalogue.sh REMAT TABLE DATA — runs every bad input of TABLE through the
# remat tool and checks, for each, that
#   - it exits with a non-zero status and is not killed by a signal (a crash,
#     or a sanitizer's abort);
#   - stderr contains every expected fragment: the message names the option,
#     or the file:line of the bad input;
#   - no sanitizer reported anything;
#   - nothing was written: the scratch directory it ran in (its cwd, where
#     every output path of the table points) is still empty — no output file,
#     no half-written *.tmp.* — and so is the directory around it.
#
# TABLE lines: name | fragment && fragment ... | arguments
# In the arguments @DATA@ is the DATA directory (fixtures) and @WORK@ the
# scratch directory. Arguments are split on spaces; none contains one.
# A row whose name starts with "fit_" needs `remat pfr fit`; it is skipped,
# with a line saying so, when the tool has no fit command. A tool built
# without PLplot refuses every --plot before anything else: then the rows
# named plot_* expect that refusal, and the others run without their --plot.
set -u
REMAT=$1 TABLE=$2 DATA=$3
[ -x "$REMAT" ] || { echo "catalogue: $REMAT is not an executable" >&2; exit 2; }
[ -r "$TABLE" ] || { echo "catalogue: cannot read $TABLE" >&2; exit 2; }
DATA=$(cd "$DATA" && pwd)
case $REMAT in /*) ;; *) REMAT=$PWD/$REMAT ;; esac

have_fit=0
"$REMAT" pfr fit --help >/dev/null 2>&1 && have_fit=1

root=$(mktemp -d "${TMPDIR:-/tmp}/remat-catalogue.XXXXXX")
trap 'rm -rf "$root"' EXIT
have_plplot=1
"$REMAT" pfr optimize --plot "$root/probe.unknown" 2>&1 | grep -q "without PLplot" && have_plplot=0
[ $have_plplot = 0 ] && echo "note: this remat has no PLplot; --plot is dropped from the rows not about plots"
pass=0 fail=0 skip=0 n=0
while IFS= read -r line || [ -n "$line" ]; do
    case $line in '#'* | '') continue ;; esac
    name=$(printf '%s' "${line%%|*}" | sed 's/^ *//; s/ *$//')
    rest=${line#*|}
    expect=$(printf '%s' "${rest%%|*}" | sed 's/^ *//; s/ *$//')
    args=$(printf '%s' "${rest#*|}" | sed 's/^ *//; s/ *$//')
    n=$((n + 1))
    if [ "${name#fit_}" != "$name" ] && [ $have_fit = 0 ]; then
        echo "SKIP $name: this remat has no 'pfr fit' command"
        skip=$((skip + 1))
        continue
    fi
    if [ $have_plplot = 0 ]; then
        if [ "${name#plot_}" != "$name" ]; then
            expect="--plot && without PLplot"
        else
            args=$(printf '%s' "$args" | sed 's/ --plot [^ ]*//')
        fi
    fi
    box="$root/$name" work="$root/$name/work"
    mkdir -p "$work"
    args=${args//@DATA@/$DATA}
    args=${args//@WORK@/$work}
    set -f
    # shellcheck disable=SC2086 # the arguments are meant to be split
    (cd "$work" && exec "$REMAT" $args) >"$box.out" 2>"$box.err" </dev/null
    rc=$?
    set +f
    why=""
    if [ $rc -eq 0 ]; then
        why="exit status 0"
    elif [ $rc -ge 128 ]; then
        why="killed by signal $((rc - 128))"
    fi
    if grep -qE 'Sanitizer|runtime error:' "$box.err"; then
        why="${why:+$why; }sanitizer report"
    fi
    rest=$expect
    while [ -n "$rest" ]; do
        frag=${rest%% && *}
        [ "$frag" = "$rest" ] && rest="" || rest=${rest#* && }
        frag=${frag//@DATA@/$DATA}
        frag=${frag//@WORK@/$work}
        grep -qF -- "$frag" "$box.err" || why="${why:+$why; }no '$frag' in the message"
    done
    left=$(cd "$box" && find . -mindepth 1 ! -path ./work | sed 's|^\./||')
    [ -n "$left" ] && why="${why:+$why; }left behind: $(echo $left)"
    if [ -z "$why" ]; then
        echo "ok   $name: $(head -n 1 "$box.err")"
        pass=$((pass + 1))
    else
        echo "FAIL $name: $why"
        echo "     remat $args  (exit $rc)"
        sed 's/^/     | /' "$box.err"
        fail=$((fail + 1))
    fi
    rm -rf "$box" "$box.out" "$box.err"
done <"$TABLE"
echo "catalogue: $n bad inputs, $pass rejected cleanly, $fail failed, $skip skipped"
[ $n -gt 0 ] && [ $fail -eq 0 ]

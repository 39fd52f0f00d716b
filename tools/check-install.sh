#!/usr/bin/env bash
# check-install.sh [BUILD] — what `meson install` of BUILD (default: build)
# gives a user, checked in a scratch directory (nothing is installed on the
# machine): a program built against it with pkg-config, linked with the
# shared library (libremat.so.0) and with the static one (pkg-config
# --static), computes a gradient right; the installed `remat` runs from
# another directory with its defaults, the training on the data it installed
# (<datadir>/remat), and says which file that is. .ci/run calls it.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
build=$(cd "${1:-build}" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/check-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
say() { echo "check-install: $*"; }
die() { echo "check-install: FAIL $*" >&2; exit 1; }

dest=$tmp/dest
meson install -C "$build" --no-rebuild --quiet --destdir "$dest" >/dev/null
prefix=$dest$(meson introspect "$build" --buildoptions | python3 -c \
    'import json, sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "prefix"))')
pc=$(find "$prefix" -name remat.pc -path '*/pkgconfig/*' | head -n 1)
[ -n "$pc" ] || die "no remat.pc installed under $prefix"
libdir=$(dirname "$(dirname "$pc")")
# remat.pc as an install with --prefix=$prefix would have it (the packages
# it requires keep their own prefixes)
mkdir "$tmp/pc"
sed "s|^prefix=.*|prefix=$prefix|" "$pc" >"$tmp/pc/remat.pc"
export PKG_CONFIG_PATH=$tmp/pc${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
pkgc() { pkg-config "$@" remat; }

# the library: versioned soname, the development link, the data
[ -f "$libdir/libremat.a" ] || die "no libremat.a in $libdir"
soname=$(objdump -p "$libdir/libremat.so" | awk '$1 == "SONAME" { print $2 }')
[ "$soname" = libremat.so.0 ] || die "libremat.so's SONAME is '$soname', not libremat.so.0"
[ -e "$libdir/libremat.so.0" ] || die "no libremat.so.0 in $libdir"
data=$prefix/share/remat/digits/digits.csv
[ -f "$data" ] || die "the data is not installed ($data missing)"
say "SONAME $soname; pkg-config --libs: $(pkgc --libs)"
static_libs=$(pkgc --static --libs) || die "pkg-config --static --libs remat fails"
say "pkg-config --static --libs: $static_libs"

# a user's program: deep_sin and the helper header, as the examples say
mkdir "$tmp/user"
cp "$src/examples/seeds/deep_sin.c" "$src/examples/seeds/example_util.h" "$tmp/user/"
cd "$tmp/user"
# shellcheck disable=SC2046 # word splitting of pkg-config's flags is wanted
${CC:-cc} -std=c11 -o shared deep_sin.c $(pkgc --cflags --libs) -lm
# the static library in place of the shared one, and what it needs
static_libs=${static_libs/-lremat /$libdir/libremat.a }
# shellcheck disable=SC2046,SC2086 # word splitting of pkg-config's flags is wanted
${CC:-cc} -std=c11 -o static deep_sin.c $(pkgc --cflags) $static_libs -lm
# (outputs go to files first: under pipefail, grep -q leaving early would
# fail the pipeline with the writer's SIGPIPE)
readelf -d shared >shared.dyn
readelf -d static >static.dyn
grep -q 'NEEDED.*\[libremat\.so\.0\]' shared.dyn || die "the shared build does not need libremat.so.0"
if grep -q 'NEEDED.*libremat' static.dyn; then die "the static build needs libremat.so"; fi
LD_LIBRARY_PATH=$libdir ./shared >shared.out || die "the program linked with libremat.so.0 failed: $(cat shared.out)"
./static >static.out || die "the program linked with libremat.a failed: $(cat static.out)"
cmp -s shared.out static.out || die "shared and static builds print different results"
say "deep_sin against the installed library: shared and static OK"

# the installed tool, from another directory, with its defaults
remat=$prefix/bin/remat
export LD_LIBRARY_PATH=$libdir
"$remat" pfr simulate >simulate.out || die "remat pfr simulate failed"
"$remat" mlp train --help >help.out || die "remat mlp train --help failed"
grep -qF "$data" help.out || die "remat mlp train --help does not name $data"
"$remat" mlp train --epochs 1 >train.out || die "remat mlp train --epochs 1 failed"
grep -q '1797 rows' train.out || die "remat mlp train did not read the shipped digits: $(head -3 train.out)"
say "installed remat: pfr simulate, mlp train --epochs 1 on $data OK"

#!/bin/sh
# Installs the Debian packages remat needs (when missing), then configures and
# builds it in ./build. Safe to run again: it only does what is not done yet.
set -eu
cd "$(dirname "$0")/.."

# libgccjit's header lives in gcc's own include directory, so take the one of
# the C compiler's major version (Debian 12: libgccjit-12-dev).
GCC_MAJOR=$(gcc -dumpversion 2>/dev/null | cut -d. -f1)
PKGS="gcc meson ninja-build pkg-config libopenblas-dev libgsl-dev libnlopt-dev libcmocka-dev libcjson-dev libgccjit-${GCC_MAJOR:-12}-dev libsundials-dev libplplot-dev plplot-driver-cairo fonts-dejavu-core"
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
    echo "bootstrap: installing$missing" >&2
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

[ -f build/build.ninja ] || meson setup build --buildtype=release >/dev/null
ninja -C build >/dev/null
echo "bootstrap: built in ./build" >&2

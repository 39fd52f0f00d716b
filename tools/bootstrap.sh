#!/bin/sh
# Installs the Debian packages remat needs (when missing), then configures and
# builds it in ./build. Safe to run again: it only does what is not done yet.
set -eu
cd "$(dirname "$0")/.."

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
updated=""
install() { # the packages of "$@" not installed yet
    missing=""
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
    done
    [ -n "$missing" ] || return 0
    echo "bootstrap: installing$missing" >&2
    [ -n "$updated" ] || { $SUDO apt-get update -qq; updated=1; }
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
}

# openmpi-bin, libopenmpi-dev: MPI for src/dist (the 'mpi' suite runs mpirun --oversubscribe)
install gcc meson ninja-build pkg-config libopenblas-dev libgsl-dev libnlopt-dev libcmocka-dev libcjson-dev libyaml-dev \
    openmpi-bin libopenmpi-dev \
    libsundials-dev libplplot-dev plplot-driver-cairo fonts-dejavu-core nettle-dev libsleef-dev
# libgccjit (compiled scan loops) keeps its header in gcc's own include
# directory: take the one of the C compiler's major version (Debian 12: 12).
install "libgccjit-$(gcc -dumpversion | cut -d. -f1)-dev"
# the Python package (pip install ./python): Python's headers and venv; pip
# brings meson-python and NumPy from PyPI
install python3-dev python3-venv

[ -f build/build.ninja ] || meson setup build --buildtype=release >/dev/null
ninja -C build >/dev/null
echo "bootstrap: built in ./build" >&2

#!/bin/sh
# netterm_compare.sh REMAT [PYTHON] — examples/netterm's training, remat
# (pfr fit, lm) then JAX/diffrax/optimistix (bench/netterm_diffrax.py),
# back to back on the same machine; wall and CPU seconds of each.
set -eu
remat=$1
py=${2:-.venv-goldens/bin/python}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
/usr/bin/time -f "remat: %e s wall, %U s CPU (fit, held-out and grid checks)" \
    "$here/../examples/netterm/run.sh" "$remat" "$work"
"$py" "$here/netterm_diffrax.py" 2>/dev/null

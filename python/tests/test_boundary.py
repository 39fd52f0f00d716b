"""The binding uses the public C API only (include/remat/*.h): a file of
python/src that included a header of src/ would break when the library's
internals change."""

import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
ALLOWED = re.compile(r'#include\s+(<(remat/[a-z_]+\.h|Python\.h|numpy/arrayobject\.h|[a-z]+\.h)>|"pyremat\.h")')
OWN = re.compile(r'#include\s+"([a-z_]+\.h)"')  # a header of python/src itself (graph.h)


def allowed(line):
    own = OWN.match(line)
    return ALLOWED.match(line) or (own and (SRC / own.group(1)).is_file())


def test_only_public_headers():
    files = sorted(SRC.glob("*.[ch]"))
    assert files
    bad = [f"{f.name}:{i}: {line.strip()}" for f in files for i, line in enumerate(f.read_text().splitlines(), 1)
           if line.lstrip().startswith("#include") and not allowed(line.strip())]
    assert bad == []

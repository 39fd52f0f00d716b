"""Shared fixtures: the repository's data files and the remat tool built by
tools/bootstrap.sh (build/tools/remat, or $REMAT_CLI), against which the
binding's numbers are compared."""

import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VDV = ROOT / "examples" / "pfr" / "data"


def cli_path() -> str:
    p = os.environ.get("REMAT_CLI") or str(ROOT / "build" / "tools" / "remat")
    if not os.access(p, os.X_OK):
        pytest.fail(f"the remat tool is not at {p}: run tools/bootstrap.sh first (or set REMAT_CLI)")
    return p


def run_cli(*args: str) -> dict:
    """remat ARGS --json, parsed."""
    out = subprocess.run([cli_path(), *args, "--json"], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


@pytest.fixture
def abc_text() -> str:
    return "param k1 = 1.0\nparam k2 = 0.5\nA -> B : k1\nB -> C : k2\n"


@pytest.fixture
def abc_file(tmp_path, abc_text) -> Path:
    p = tmp_path / "abc.mech"
    p.write_text(abc_text)
    return p

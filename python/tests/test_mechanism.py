import math

import numpy as np
import pytest

import remat
from conftest import VDV


def test_from_file_collections():
    m = remat.Mechanism.from_file(VDV / "van_de_vusse.mech")
    assert m.species == ("A", "B", "C", "D")
    assert m.indep == "tau"
    assert list(m.params) == ["k1", "k2", "k3"]
    assert m.params["k2"] == remat.Param("k2", 5.0, -math.inf, math.inf)
    assert m.param_values.tolist() == [0.1, 5.0, 0.05]
    assert len(m.reactions) == 3
    assert m.reactions[2].stoich == {"A": -2.0, "D": 1.0}
    assert m.rhs["B"]  # a formatted expression


def test_from_string_bounds_consts_lets():
    m = remat.Mechanism.from_string(
        "const R = 8.314\nparam Ea = 5 in [0, 100]\nlet k = exp(-Ea / R)\nA -> B : k\n", name="arrh")
    assert m.source == "arrh"
    assert m.consts == {"R": 8.314}
    assert list(m.lets) == ["k"]
    assert m.params["Ea"].lo == 0 and m.params["Ea"].hi == 100


def test_eval_rhs_matches_hand(abc_text):
    m = remat.Mechanism.from_string(abc_text)
    d = m.eval_rhs(0.0, {"A": 1.0, "B": 0.5}, {"k1": 2.0})
    assert d.tolist() == [-2.0, 2.0 - 0.25, 0.25]
    assert d.dtype == np.float64 and d.flags.owndata


def test_parse_error_names_place():
    with pytest.raises(remat.ParseError, match=r"mine:2:\d+: .*'k3'") as e:
        remat.Mechanism.from_string("param k1 = 1\nA -> B : k3\n", name="mine")
    assert e.value.status == remat.ParseError.status
    assert isinstance(e.value, remat.Error) and isinstance(e.value, ValueError)


def test_missing_file_is_file_error(tmp_path):
    with pytest.raises(remat.FileError, match="nope.mech"):
        remat.Mechanism.from_file(tmp_path / "nope.mech")

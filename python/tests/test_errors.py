"""Every error a caller can cause is an exception with remat's message:
one class per remat_status (all subclasses of remat.Error), and a table of
bad calls, each with the class and the words its message must hold. None may
crash the interpreter."""

import numpy as np
import pytest

import remat
from conftest import VDV

ABC = "param k1 = 1.0\nparam k2 = 0.5\nA -> B : k1\nB -> C : k2\n"
M = remat.Mechanism.from_string(ABC, name="abc")
V = remat.Mechanism.from_file(VDV / "van_de_vusse.mech")
DATA = VDV / "feed_5.csv"
GOOD = {"tau": np.array([0.0, 0.5, 1.0]), "A": np.array([5.0, 3.0, 2.0])}


def test_one_class_per_status():
    classes = list(remat.ERRORS.values())
    assert len(set(classes)) == remat._remat.STATUS_COUNT - 1  # every status but REMAT_OK
    for st, cls in remat.ERRORS.items():
        assert issubclass(cls, remat.Error) and cls.status == st
        assert cls.status_name == remat._remat.status_name(st)


def exp(**cols):
    d = dict(GOOD)
    d.update(cols)
    return d


F = np.zeros((4, 2))[:, 0]  # a non-contiguous view
CASES = [
    # mechanisms
    ("unknown name", lambda: remat.Mechanism.from_string("param k1 = 1\nA -> B : k3\n", "m"), remat.ParseError,
     r"m:2:\d+: .*'k3'"),
    ("text not str", lambda: remat.Mechanism.from_string(123), remat.ArgumentError, "must be a str"),
    ("NUL in text", lambda: remat.Mechanism.from_string("A -> B : 1\x00"), remat.ParseError, "NUL"),
    ("empty text", lambda: remat.Mechanism.from_string(""), remat.ParseError, "reaction"),
    ("missing file", lambda: remat.Mechanism.from_file("/nonexistent/x.mech"), remat.FileError, "x.mech"),
    ("directory", lambda: remat.Mechanism.from_file(VDV), remat.FileError, "data"),
    ("raw constructor", lambda: remat.Mechanism(None), remat.ArgumentError, "from_file"),
    ("rhs y length", lambda: M.eval_rhs(0, [1, 2]), remat.ShapeError, "eval_rhs: y: axis 0 has 2"),
    ("rhs y dtype", lambda: M.eval_rhs(0, np.array([1, 0, 0])), remat.DtypeError, "float64.*int64"),
    ("rhs y layout", lambda: M.eval_rhs(0, np.zeros((3, 2))[:, 1]), remat.ShapeError, "not C-contiguous"),
    ("rhs unknown species", lambda: M.eval_rhs(0, {"Q": 1}), remat.ArgumentError, "'Q' is not a species of abc"),
    ("rhs params text", lambda: M.eval_rhs(0, [1, 0, 0], ["a", "b"]), remat.DtypeError, "params"),
    # simulate
    ("inlet NaN", lambda: remat.simulate(M, [np.nan, 0, 0]), remat.BadValueError, "inlet: entry 0 is NaN"),
    ("inlet inf", lambda: remat.simulate(M, [1, np.inf, 0]), remat.BadValueError, "entry 1 is infinite"),
    ("inlet length", lambda: remat.simulate(M, [1, 0]), remat.ShapeError, "inlet: axis 0 has 2 entries, expected 3"),
    ("inlet float32", lambda: remat.simulate(M, np.ones(3, np.float32)), remat.DtypeError, "float32"),
    ("inlet layout", lambda: remat.simulate(M, np.ones((3, 3))[:, 0]), remat.ShapeError, "C-contiguous"),
    ("inlet species", lambda: remat.simulate(M, {"X": 1}), remat.ArgumentError, r"'X' is not a species of abc \(species: A, B, C\)"),
    ("inlet 2-D", lambda: remat.simulate(M, np.ones((1, 3))), remat.ShapeError, "expected 1 dimension"),
    ("params NaN", lambda: remat.simulate(M, {"A": 1}, params=[np.nan, 1]), remat.BadValueError, "params"),
    ("params shape", lambda: remat.simulate(M, {"A": 1}, params=np.ones((2, 2))), remat.ShapeError, "params"),
    ("params name", lambda: remat.simulate(M, {"A": 1}, params={"k9": 1}), remat.ArgumentError,
     "'k9' is not a parameter"),
    ("params value", lambda: remat.simulate(M, {"A": 1}, params={"k1": "fast"}), remat.DtypeError, "k1"),
    ("steps and dt", lambda: remat.simulate(M, {"A": 1}, steps=10, dt=0.1), remat.ArgumentError, "exclude"),
    ("steps 0", lambda: remat.simulate(M, {"A": 1}, steps=0), remat.ArgumentError, "steps"),
    ("steps float", lambda: remat.simulate(M, {"A": 1}, steps=10.5), remat.ArgumentError, "steps"),
    ("dt negative", lambda: remat.simulate(M, {"A": 1}, dt=-1.0), remat.BadValueError, "dt"),
    ("length 0", lambda: remat.simulate(M, {"A": 1}, length=0), remat.BadValueError, "length"),
    ("length NaN", lambda: remat.simulate(M, {"A": 1}, length=float("nan")), remat.BadValueError, "length"),
    ("method", lambda: remat.simulate(M, {"A": 1}, method="leapfrog"), remat.ParseError, "leapfrog"),
    ("schedule", lambda: remat.simulate(M, {"A": 1}, steps=10, schedule="binomial:x"), remat.ParseError, "binomial:x"),
    ("goal species", lambda: remat.simulate(M, {"A": 1}, maximize="Z"), remat.ArgumentError, "'Z'"),
    ("two goals", lambda: remat.simulate(M, {"A": 1}, maximize="B", minimize="C"), remat.ArgumentError, "exclude"),
    ("rtol fixed", lambda: remat.simulate(M, {"A": 1}, steps=10, rtol=1e-3), remat.ArgumentError, "adaptive"),
    ("not a mechanism", lambda: remat.simulate("abc", {"A": 1}), remat.ArgumentError, "remat.Mechanism"),
    ("unstable step", lambda: remat.simulate(M, {"A": 1}, steps=2, params={"k1": 100.0}), remat.NumericError,
     "step"),
    ("profile points", lambda: remat.simulate(M, {"A": 1}, profile_points=-1), remat.ArgumentError, "profile"),
    ("rtol zero", lambda: remat.simulate(M, {"A": 1}, rtol=0.0), remat.BadValueError, "rtol"),
    # optimize
    ("optimize goal", lambda: remat.optimize(M, {"A": 1}, [0.5, 0.3]), remat.ArgumentError, "maximize or minimize"),
    ("optimize iters", lambda: remat.optimize(M, {"A": 1}, [0.5, 0.3], maximize="B", iters=0), remat.ArgumentError,
     "iters"),
    ("optimize start", lambda: remat.optimize(M, {"A": 1}, [np.nan, 0.3], maximize="B"), remat.BadValueError,
     "start: entry 0 is NaN"),
    ("optimize lr", lambda: remat.optimize(M, {"A": 1}, [0.5, 0.3], maximize="B", lr=-1.0), remat.BadValueError,
     "learning rate -1"),
    # ensemble
    ("ens 1-D", lambda: remat.ensemble(M, np.ones(2), inlet={"A": 1}), remat.ShapeError, "expected 2 dimensions"),
    ("ens columns", lambda: remat.ensemble(M, np.ones((4, 3)), inlet={"A": 1}), remat.ShapeError,
     "axis 1 has 3 entries, expected 2"),
    ("ens dtype", lambda: remat.ensemble(M, np.ones((4, 2), np.int32), inlet={"A": 1}), remat.DtypeError, "int32"),
    ("ens layout", lambda: remat.ensemble(M, np.ones((2, 4)).T, inlet={"A": 1}), remat.ShapeError, "C-contiguous"),
    ("ens NaN", lambda: remat.ensemble(M, np.array([[1.0, 0.5], [np.nan, 1]]), inlet={"A": 1}),
     remat.BadValueError, "set 1"),
    ("ens vary", lambda: remat.ensemble(M, np.ones((1, 1)), inlet={"A": 1}, vary=["k7"]), remat.ArgumentError,
     "'k7'"),
    ("ens lanes", lambda: remat.ensemble(M, np.ones((1, 2)), inlet={"A": 1}, lanes=0), remat.BadValueError, "lanes"),
    ("ens lanes type", lambda: remat.ensemble(M, np.ones((1, 2)), inlet={"A": 1}, lanes="8"), remat.ArgumentError,
     "lanes"),
    # fit
    ("no experiments", lambda: remat.fit(V, []), remat.ArgumentError, "at least one"),
    ("data file", lambda: remat.fit(V, ["/nonexistent/d.csv"]), remat.FileError, "d.csv"),
    ("one column", lambda: remat.fit(V, {"tau": np.zeros(3)}), remat.ShapeError, "at least one species"),
    ("text column", lambda: remat.fit(V, exp(A=np.array(["a", "b", "c"]))), remat.DtypeError, "'A'"),
    ("column lengths", lambda: remat.fit(V, exp(A=np.ones(2))), remat.ShapeError, "'A' has 2 rows"),
    ("NaN time", lambda: remat.fit(V, exp(tau=np.array([0, np.nan, 1.0]))), remat.BadValueError, "'tau'"),
    ("inf cell", lambda: remat.fit(V, exp(A=np.array([5, np.inf, 1.0]))), remat.BadValueError, "infinite"),
    ("2-D column", lambda: remat.fit(V, exp(A=np.ones((3, 1)))), remat.ShapeError, "'A'"),
    ("unknown column", lambda: remat.fit(V, exp(Q=np.ones(3))), remat.ParseError, r"experiments\[0\].*Q"),
    ("time order", lambda: remat.fit(V, exp(tau=np.array([0, 1.0, 0.5]))), remat.ParseError,
     r"experiments\[0\]"),
    ("experiment type", lambda: remat.fit(V, [42]), remat.ArgumentError, r"experiments\[0\]"),
    ("fixed name", lambda: remat.fit(V, DATA, fixed=["kx"]), remat.ArgumentError, "'kx'"),
    ("start NaN", lambda: remat.fit(V, DATA, start=[np.nan, 1, 1]), remat.BadValueError, "start"),
    ("sigma length", lambda: remat.fit(V, DATA, sigma=[1.0]), remat.ShapeError, "sigma"),
    ("sigma zero", lambda: remat.fit(V, DATA, sigma={"A": 0.0}), remat.BadValueError, "sigma"),
    ("optimizer", lambda: remat.fit(V, DATA, optimizer="newton"), remat.ArgumentError, "newton"),
    ("jacobian", lambda: remat.fit(V, DATA, jacobian="sideways"), remat.ArgumentError, "sideways"),
    ("weighting", lambda: remat.fit(V, DATA, weighting="heavy"), remat.ArgumentError, "heavy"),
    ("budget sign", lambda: remat.fit(V, DATA, memory_budget=-1), remat.ArgumentError, "memory_budget"),
    ("budget small", lambda: remat.fit(V, DATA, steps=50, method="rk4", memory_budget=16), remat.BudgetError,
     "budget"),
    ("budget and schedule", lambda: remat.fit(V, DATA, memory_budget=1 << 20, schedule="store-all"),
     remat.ArgumentError, "not both"),
    ("callback", lambda: remat.fit(V, DATA, callback=5), remat.ArgumentError, "callable"),
    ("scale", lambda: remat.fit(V, DATA, scale={"k1": "cubic"}), remat.ArgumentError, "cubic"),
    ("y0 count", lambda: remat.fit(V, DATA, y0=[None, None]), remat.ShapeError, "y0"),
    ("y0 NaN", lambda: remat.fit(V, DATA, y0=[[np.nan, 0, 0, 0]]), remat.BadValueError, "y0"),
    ("max_iters", lambda: remat.fit(V, DATA, max_iters=-1), remat.ArgumentError, "max_iters"),
    ("rtol with steps", lambda: remat.fit(V, DATA, steps=10, atol=1e-3), remat.ArgumentError, "adaptive"),
    ("fit mechanism", lambda: remat.fit(None, DATA), remat.ArgumentError, "remat.Mechanism"),
]


@pytest.mark.parametrize("name,call,cls,words", CASES, ids=[c[0] for c in CASES])
def test_bad_call(name, call, cls, words):
    with pytest.raises(cls, match=words) as e:
        call()
    assert isinstance(e.value, remat.Error)
    assert str(e.value)  # remat's message, never empty


def test_table_size():
    assert len(CASES) >= 40

"""remat.fit against `remat pfr fit --json --history`: the same remat_fit
calls on the same files, so every number is equal bit for bit (contract 1,
determinism); experiments
given as columns are written to CSV exactly (repr), so they fit the same."""

import csv

import numpy as np
import pytest

import remat
from conftest import VDV, run_cli

MECH = VDV / "van_de_vusse.mech"
DATA = [VDV / "feed_5.csv", VDV / "feed_10.csv"]


def columns(path):
    """A CSV as a dict of float64 columns, NaN where a cell is empty (as pandas.read_csv gives)."""
    with open(path) as f:
        rows = list(csv.reader(f))
    head, body = rows[0], rows[1:]
    return {h: np.array([float(r[i]) if r[i].strip() else np.nan for r in body]) for i, h in enumerate(head)}


@pytest.fixture(scope="module")
def cli():
    return run_cli("pfr", "fit", "--mechanism", str(MECH), "--data", str(DATA[0]), "--data", str(DATA[1]),
                   "--history")


@pytest.fixture(scope="module")
def res():
    return remat.fit(remat.Mechanism.from_file(MECH), DATA)


def test_same_numbers_as_cli(cli, res):
    names = list(res.param_names)
    assert names == ["k1", "k2", "k3"]
    assert res.objective == cli["objective"]
    assert res.params.tolist() == [cli["params"][n] for n in names]
    assert (res.iterations, res.evaluations, res.n_residuals) == (cli["iterations"], cli["evaluations"],
                                                                  cli["n_residuals"])
    assert res.converged and res.optimizer == cli["optimizer"] and res.jacobian == cli["jacobian"]
    assert res.message == cli["message"]
    st = cli["statistics"]
    assert res.standard_errors.tolist() == [st["std_errors"][n] for n in names]
    assert res.ci_lo.tolist() == [st["ci95_low"][n] for n in names]
    assert res.ci_hi.tolist() == [st["ci95_high"][n] for n in names]
    assert res.correlation.tolist() == st["correlation"]
    assert (res.dof, res.s2, res.t95, res.cond) == (st["dof"], st["s2"], st["t95"], st["condition_number"])
    assert res.history_objective.tolist() == [h["objective"] for h in cli["history"]]
    assert res.history_params.tolist() == [[h["params"][n] for n in names] for h in cli["history"]]


def test_result_arrays(res):
    P = len(res.params)
    se = res.standard_errors
    np.testing.assert_allclose(res.covariance, res.correlation * np.outer(se, se), rtol=1e-15)
    np.testing.assert_allclose(np.sqrt(np.diag(res.covariance)), se, rtol=1e-15)
    assert res.history_params.shape == (res.iterations + 1, P)
    assert res.residuals.shape == (res.n_residuals,)
    assert float(res.residuals @ res.residuals) == pytest.approx(res.objective, rel=1e-12)
    assert len(res.fitted) == 2
    expect = []
    for (t, y), path in zip(res.fitted, DATA):
        d = columns(path)
        assert t.tolist() == d["tau"].tolist() and y.shape == (len(t), 4)
        for i in range(1, len(t)):  # row 0 is the initial state, not a measurement
            expect += [y[i, s] - d[sp][i] for s, sp in enumerate("ABCD") if not np.isnan(d[sp][i])]
    # remat_fit_predict and the residual program: two programs, equal to rounding
    np.testing.assert_allclose(res.residuals, expect, rtol=1e-9, atol=1e-12)
    assert res.values == dict(zip(res.param_names, res.params.tolist()))


def test_columns_fit_like_files(res):
    exps = [columns(p) for p in DATA]
    r = remat.fit(remat.Mechanism.from_file(MECH), exps)
    assert r.params.tolist() == res.params.tolist() and r.objective == res.objective


class FrameLike:
    """Column access and .columns, as a pandas.DataFrame."""

    def __init__(self, d):
        self._d = d
        self.columns = list(d)

    def __getitem__(self, k):
        return self._d[k]


def test_dataframe_like_and_options():
    m = remat.Mechanism.from_file(MECH)
    r = remat.fit(m, FrameLike(columns(DATA[0])), start={"k1": 0.5}, optimizer="bfgs", memory_budget=1 << 20)
    cli = run_cli("pfr", "fit", "--mechanism", str(MECH), "--data", str(DATA[0]), "--params", "k1=0.5",
                  "--optimizer", "bfgs", "--memory-budget", str(1 << 20))
    assert r.optimizer == "bfgs" == cli["optimizer"]
    assert r.params.tolist() == [cli["params"][n] for n in r.param_names]


def test_fixed_parameter():
    m = remat.Mechanism.from_file(MECH)
    r = remat.fit(m, [DATA[0]], fixed=["k3"], start=np.array([0.5, 5.0, 0.07]))
    assert r.params[2] == 0.07 and np.isnan(r.standard_errors[2]) and not np.isnan(r.standard_errors[0])


def test_fixed_steps_and_callback():
    m = remat.Mechanism.from_file(MECH)
    seen = []
    r = remat.fit(m, DATA, steps=20, callback=lambda p: seen.append((p["iteration"], p["objective"])))
    cli = run_cli("pfr", "fit", "--mechanism", str(MECH), "--data", str(DATA[0]), "--data", str(DATA[1]),
                  "--steps", "20")
    assert cli["method"] == "rk4" and r.params.tolist() == [cli["params"][n] for n in r.param_names]
    assert [s[0] for s in seen] == list(range(len(seen))) and len(seen) == r.iterations + 1
    assert seen[-1][1] == r.objective


def test_callback_stops():
    m = remat.Mechanism.from_file(MECH)
    r = remat.fit(m, DATA, callback=lambda p: p["iteration"] >= 2)
    assert r.stopped and not r.converged and r.iterations == 2

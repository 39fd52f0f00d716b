"""remat.simulate against `remat pfr simulate --json`: the same remat_pfr
calls, so the numbers are equal bit for bit (contract 1, determinism: the
same program on the same inputs; the JSON prints %.17g)."""

import numpy as np
import pytest

import remat
from conftest import VDV, run_cli


def test_fixed_steps_equal_cli(abc_file):
    m = remat.Mechanism.from_file(abc_file)
    sim = remat.simulate(m, {"A": 1.0}, steps=1000, maximize="B")
    cli = run_cli("pfr", "simulate", "--mechanism", str(abc_file), "--init", "A=1", "--steps", "1000",
                  "--maximize", "B")
    assert sim.outlet.tolist() == [cli["outlet"][s] for s in m.species]
    assert sim.objective == cli["objective"]["value"]
    assert sim.gradient.tolist() == [cli["objective"]["gradient"][p] for p in m.params]
    assert sim.steps == cli["steps"] == 1000 and sim.step_size == cli["step_size"]
    # the seed's numbers (remat/pfr.h)
    np.testing.assert_allclose(sim.outlet, [0.000043, 0.013222, 0.986735], atol=5e-7)
    np.testing.assert_allclose(sim.gradient, [0.012349, 0.107305], atol=5e-7)


def test_profile_shape_and_last_row_is_outlet(abc_file):
    m = remat.Mechanism.from_file(abc_file)
    sim = remat.simulate(m, [1.0, 0.0, 0.0], steps=200, method="rk4")
    assert sim.profile.shape == (201, 3) and sim.z.shape == (201,)
    assert sim.profile[-1].tolist() == sim.outlet.tolist()
    assert sim.profile[0].tolist() == [1.0, 0.0, 0.0]
    assert sim.gradient is None and sim.objective is None
    assert sim.profile.flags.c_contiguous and sim.profile.flags.owndata


def test_adaptive_default_equal_cli():
    m = remat.Mechanism.from_file(VDV / "van_de_vusse.mech")
    sim = remat.simulate(m, {"A": 5.0}, length=2.0, params={"k1": 0.8}, minimize="C", schedule="store-all")
    cli = run_cli("pfr", "simulate", "--mechanism", str(VDV / "van_de_vusse.mech"), "--init", "A=5",
                  "--length", "2", "--params", "k1=0.8", "--minimize", "C", "--schedule", "store-all")
    assert sim.adaptive and cli["integrator"]["adaptive"]
    assert sim.outlet.tolist() == [cli["outlet"][s] for s in m.species]
    assert sim.gradient.tolist() == [cli["objective"]["gradient"][p] for p in m.params]
    assert sim.accepted == cli["integrator"]["accepted"]


def test_schedule_changes_nothing(abc_file):
    m = remat.Mechanism.from_file(abc_file)
    a = remat.simulate(m, {"A": 1}, steps=500, maximize="B", schedule="store-all", profile=False)
    b = remat.simulate(m, {"A": 1}, steps=500, maximize="B", schedule="binomial:3", profile=False)
    assert a.gradient.tolist() == b.gradient.tolist()  # contract 3
    assert a.profile is None


def test_gradient_against_central_differences(abc_file):
    m = remat.Mechanism.from_file(abc_file)
    k = np.array([1.0, 0.5])
    g = remat.simulate(m, {"A": 1}, steps=400, maximize="B", params=k).gradient
    h = 1e-6
    for i in range(2):
        kp, km = k.copy(), k.copy()
        kp[i] += h
        km[i] -= h
        fp = -remat.simulate(m, {"A": 1}, steps=400, params=kp).outlet[1]
        fm = -remat.simulate(m, {"A": 1}, steps=400, params=km).outlet[1]
        assert g[i] == pytest.approx((fp - fm) / (2 * h), rel=1e-6)


def test_optimize_equals_cli():
    """remat.optimize and `remat pfr optimize --json` (the seed's Adam): the
    same remat_pfr_adam call, bit for bit (contract 1)."""
    m = remat.Mechanism.from_string("param k1 = 1.0\nparam k2 = 0.5\nA -> B : k1\nB -> C : k2\n", "abc")
    o = remat.optimize(m, {"A": 1.0}, [0.5, 0.3], maximize="B", lr=0.1, iters=50, min_param=0.01)
    cli = run_cli("pfr", "optimize")
    assert o.conc_before.tolist() == [h["concentration_before"] for h in cli["history"]]
    assert o.params_after.tolist() == [[h["params_after"]["k1"], h["params_after"]["k2"]] for h in cli["history"]]
    assert o.params.tolist() == o.params_after[-1].tolist()


def test_optimize_keeps_declared_bounds():
    """Declared bounds win over min_param, as in the tool: s is declared in
    [-inf, 0] (min_param 0.01 above its upper bound would pin it there), k2 in
    [0.4, 0.45] (min_param would let it leave); k1 declared without bounds
    gets [min_param, inf)."""
    m = remat.Mechanism.from_string("param s = -0.5 in [-inf, 0]\nparam k1 = 0.5\nparam k2 = 0.42 in [0.4, 0.45]\n"
                                    "A -> B : k = exp(s) * k1\nB -> C : k = k2\n", "bounds")
    o = remat.optimize(m, {"A": 1.0}, [-0.5, 0.5, 0.42], minimize="A", lr=0.5, iters=40, min_param=0.01)
    s, k1, k2 = o.params_after.T
    assert (s <= 0).all() and (0.4 <= k2).all() and (k2 <= 0.45).all() and (k1 >= 0.01).all()
    assert s[-1] == 0.0  # minimising A pushes exp(s) up to the declared bound
    o = remat.optimize(m, {"A": 1.0}, [-0.5, 0.5, 0.42], maximize="A", lr=0.5, iters=40, min_param=0.01)
    assert o.params[0] < -2 and o.params[1] == 0.01  # s below min_param: its -inf is kept


def test_reactor_kept_between_calls(abc_file):
    """remat.Reactor runs the same remat_pfr calls as simulate: bit for bit (contract 1)."""
    m = remat.Mechanism.from_file(abc_file)
    r = remat.Reactor(m, {"A": 1.0}, steps=1000, maximize="B")
    for k in ([1.0, 0.5], np.array([2.0, 0.25]), {"k1": 0.7}):
        sim = remat.simulate(m, {"A": 1.0}, steps=1000, maximize="B", params=k)
        assert r.outlet(k).tolist() == sim.outlet.tolist()
        value, grad = r.objective(k)
        assert value == sim.objective and grad.tolist() == sim.gradient.tolist()
        z, y = r.profile(k)
        assert z.tolist() == sim.z.tolist() and y.tolist() == sim.profile.tolist()
    assert (r.steps, r.step_size) == (1000, 0.01)
    with pytest.raises(remat.BadValueError, match="params: entry 1 is NaN"):
        r.outlet([1.0, np.nan])
    with pytest.raises(remat.ArgumentError, match="without a goal|goal"):
        remat.Reactor(m, {"A": 1.0}, steps=10).objective()

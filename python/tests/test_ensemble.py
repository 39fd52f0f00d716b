"""remat.ensemble: each lane's outlet is remat_pfr_outlet's for its set, bit
for bit (remat/pfr.h; contract 5), so it equals remat.simulate's; the Jacobian is forward
mode and agrees with the reverse-mode gradient to rounding."""

import numpy as np

import remat


def test_outlets_and_jacobian(abc_file):
    m = remat.Mechanism.from_file(abc_file)
    sets = np.array([[1.0, 0.5], [2.0, 0.25], [0.3, 0.9]])
    ens = remat.ensemble(m, sets, inlet={"A": 1.0}, steps=300, lanes=2)  # two runs: 2 + 1 sets
    assert ens.outlet.shape == (3, 3) and ens.jacobian.shape == (3, 3, 2)
    for i, k in enumerate(sets):
        sim = remat.simulate(m, {"A": 1.0}, steps=300, params=k, maximize="B")
        assert ens.outlet[i].tolist() == sim.outlet.tolist()
        np.testing.assert_allclose(-ens.jacobian[i, 1], sim.gradient, rtol=1e-12, atol=1e-15)


def test_vary_subset_and_base(abc_file):
    m = remat.Mechanism.from_file(abc_file)
    ens = remat.ensemble(m, np.array([[0.7], [0.2]]), inlet={"A": 1.0}, vary=["k2"], base={"k1": 3.0},
                         steps=100, jacobian=False)
    assert ens.jacobian is None and ens.vary == ("k2",)
    sim = remat.simulate(m, {"A": 1.0}, steps=100, params={"k1": 3.0, "k2": 0.2})
    assert ens.outlet[1].tolist() == sim.outlet.tolist()

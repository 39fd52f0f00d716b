#!/usr/bin/env python3
"""Generate tests/goldens/cantera_<mech>.json: constant-pressure ignition with
Cantera's IdealGasConstPressureReactor, for tests/test_gas_cantera.c; and the
CHEMKIN twins of the mechanisms (Cantera's yaml2ck) under data/mechanisms/.

    python3 -m venv .venv-goldens && .venv-goldens/bin/pip install cantera
    .venv-goldens/bin/python tools/goldens/gen_cantera_goldens.py [h2o2|gri30 ...]   # from the repository root

Per case (mechanism, initial T, P, composition):
  - T and mole fractions at n + 1 equally spaced times over [0, length]
    (CVODES at rtol 1e-12, atol 1e-20);
  - the ignition delay: the time T reaches T0 + 400 K, interpolated linearly
    between CVODES' own steps (at rtol 1e-12 they are far finer than 1e-4);
  - T at a pre-ignition time t_pre = 0.8 delay and its derivative with respect
    to every rate multiplier m_i (Cantera's set_multiplier), by central
    differences of relative step 1e-4.
"""

import json
import os
import subprocess
import sys

import cantera as ct
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MECH = os.path.join(ROOT, "data", "mechanisms")
GOLD = os.path.join(ROOT, "tests", "goldens")
RTOL, ATOL = 1e-12, 1e-20
NPOINTS = 100
CD_STEP = 1e-4

CASES = {
    "h2o2": {"composition": "H2:2,O2:1,N2:3.76", "P": ct.one_atm, "T0": [1000.0, 1100.0, 1300.0], "grad_T0": [1100.0]},
    "gri30": {"composition": "CH4:1,O2:2,N2:7.52", "P": ct.one_atm, "T0": [1300.0, 1500.0, 1700.0], "grad_T0": [1500.0]},
}


def reactor(gas, T0, P, comp, mult=None):
    gas.TPX = T0, P, comp
    gas.set_multiplier(1.0)
    if mult is not None:
        i, v = mult
        gas.set_multiplier(v, i)
    r = ct.IdealGasConstPressureReactor(gas, clone=True)
    net = ct.ReactorNet([r])
    net.rtol, net.atol = RTOL, ATOL
    net.max_steps = 10**6
    return r, net


def delay(gas, T0, P, comp):
    r, net = reactor(gas, T0, P, comp)
    target = T0 + 400.0
    t_prev, T_prev = 0.0, T0
    while True:
        t = net.step()
        T = r.phase.T
        if T >= target:
            return t_prev + (target - T_prev) * (t - t_prev) / (T - T_prev)
        t_prev, T_prev = t, T


def T_at(gas, T0, P, comp, t, mult=None):
    r, net = reactor(gas, T0, P, comp, mult)
    net.advance(t)
    return r.phase.T


def case(name, gas, T0, P, comp, with_grad):
    tau = delay(gas, T0, P, comp)
    length = float("%.3g" % (2.0 * tau))
    times = [length * i / NPOINTS for i in range(NPOINTS + 1)]
    r, net = reactor(gas, T0, P, comp)
    Ts, Xs = [], []
    for t in times:
        if t > 0:
            net.advance(t)
        Ts.append(r.phase.T)
        Xs.append([float(x) for x in r.phase.X])
    out = {
        "mechanism": name + ".yaml",
        "composition": comp.replace(":", "="),
        "P": P,
        "T0": T0,
        "length": length,
        "times": times,
        "species": gas.species_names,
        "T": Ts,
        "X": Xs,
        "delay": tau,
    }
    if with_grad:
        t_pre = 0.8 * tau
        out["t_pre"] = t_pre
        out["T_pre"] = T_at(gas, T0, P, comp, t_pre)
        grad = []
        for i in range(gas.n_reactions):
            hi = T_at(gas, T0, P, comp, t_pre, (i, 1 + CD_STEP))
            lo = T_at(gas, T0, P, comp, t_pre, (i, 1 - CD_STEP))
            grad.append((hi - lo) / (2 * CD_STEP))
        out["dT_dm"] = grad
    return out


def chemkin_twin(name):
    src = os.path.join(MECH, name + ".yaml")
    dst = os.path.join(MECH, name + ".ck")
    subprocess.run([sys.executable, "-m", "cantera.yaml2ck", src, "--mechanism", dst,
                    "--thermo", os.path.join(MECH, name + "_thermo.dat"), "--transport",
                    os.path.join("/tmp", name + "_tran.dat"), "--overwrite", "--no-validate"], check=True)


def main():
    names = sys.argv[1:] or list(CASES)
    for name in names:
        spec = CASES[name]
        gas = ct.Solution(os.path.join(MECH, name + ".yaml"))
        cases = [case(name, gas, T0, spec["P"], spec["composition"], T0 in spec["grad_T0"]) for T0 in spec["T0"]]
        doc = {
            "generator": {"cantera": ct.__version__, "numpy": np.__version__, "rtol": RTOL, "atol": ATOL,
                          "cd_step": CD_STEP, "delay_definition": "T = T0 + 400 K"},
            "cases": cases,
        }
        with open(os.path.join(GOLD, "cantera_%s.json" % name), "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
        chemkin_twin(name)
        print(name, [(c["T0"], c["delay"]) for c in cases])


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Generate tests/goldens/backsolve.json: diffrax's BacksolveAdjoint (the
continuous adjoint) against RecursiveCheckpointAdjoint (the discrete one) on
seed 004's A->B->C and a four-species network, float64, for
tests/test_models_backsolve.c.

    python3 -m venv .venv-goldens && .venv-goldens/bin/pip install jax diffrax
    .venv-goldens/bin/python tools/goldens/gen_backsolve_goldens.py

Each case: the mechanism (the C test parses the same text), y0, params,
output times, method, fixed steps (dt0, ConstantStepSize; one output time,
so the grid is remat's t0 + j h) or adaptive (rtol, atol, PIDController with
step_ts = output times, dt0 given); the weights w of loss = sum(w * ys), and
for each adjoint the loss and its gradient with respect to params and y0.
With BacksolveAdjoint the backward solve uses the same solver and step size
controller as the forward one (diffrax's semantics): for ConstantStepSize
the same grid walked back, for PIDController its own error control.
"""

import json
import os

import numpy as np
import jax

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
import diffrax  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(os.path.dirname(os.path.dirname(HERE)), "tests", "goldens", "backsolve.json")


def abc(t, y, k):
    r1, r2 = k[0] * y[0], k[1] * y[1]
    return jnp.stack([-r1, r1 - r2, r2])


def bimol(t, y, k):
    # A + B -> C : k1 ; C -> D : k2 ; D -> A : k3 (mass action)
    r1, r2, r3 = k[0] * y[0] * y[1], k[1] * y[2], k[2] * y[3]
    return jnp.stack([-r1 + r3, -r1, r1 - r2, r2 - r3])


MECH = {
    "abc": ("A -> B : k1\nB -> C : k2\nparam k1 = 1.0\nparam k2 = 0.5", abc),
    "bimol": ("A + B -> C : k1\nC -> D : k2\nD -> A : k3\nparam k1 = 2.0\nparam k2 = 0.7\nparam k3 = 0.3", bimol),
}

SOLVER = {"euler": diffrax.Euler, "tsit5": diffrax.Tsit5, "dopri5": diffrax.Dopri5}
ADJOINT = {"backsolve": diffrax.BacksolveAdjoint, "recursive": diffrax.RecursiveCheckpointAdjoint}

CASES = [
    # seed 004: the Euler numbers (backsolve -0.0112542, discrete -0.0123494 for dC_B/dk1)
    dict(name="abc_euler_fixed", mech="abc", method="euler", y0=[1.0, 0.0, 0.0], k=[1.0, 0.5], ts=[10.0],
         dt0=0.01, w=[[0.0, 1.0, 0.0]]),
    # seed 004 §8: Tsit5, dt0 = 0.01
    dict(name="abc_tsit5_fixed", mech="abc", method="tsit5", y0=[1.0, 0.0, 0.0], k=[1.0, 0.5], ts=[10.0],
         dt0=0.01, w=[[0.0, 1.0, 0.0]]),
    dict(name="abc_tsit5_fixed_coarse", mech="abc", method="tsit5", y0=[1.0, 0.0, 0.0], k=[1.0, 0.5], ts=[10.0],
         dt0=0.5, w=[[0.3, 1.0, -0.2]]),
    dict(name="bimol_euler_fixed", mech="bimol", method="euler", y0=[1.0, 0.8, 0.1, 0.0], k=[2.0, 0.7, 0.3],
         ts=[3.0], dt0=0.05, w=[[0.5, -1.0, 2.0, 0.25]]),
    dict(name="bimol_tsit5_fixed", mech="bimol", method="tsit5", y0=[1.0, 0.8, 0.1, 0.0], k=[2.0, 0.7, 0.3],
         ts=[3.0], dt0=0.1, w=[[0.5, -1.0, 2.0, 0.25]]),
    # adaptive: the backward solve with its own error control
    dict(name="abc_tsit5_adaptive", mech="abc", method="tsit5", y0=[1.0, 0.0, 0.0], k=[1.0, 0.5],
         ts=[1.0, 4.0, 10.0], rtol=1e-6, atol=1e-9, dt0=0.01,
         w=[[0.1, 0.2, 0.3], [0.0, 1.0, 0.0], [-0.5, 1.0, 0.25]]),
    dict(name="bimol_tsit5_adaptive", mech="bimol", method="tsit5", y0=[1.0, 0.8, 0.1, 0.0], k=[2.0, 0.7, 0.3],
         ts=[0.5, 3.0], rtol=1e-8, atol=1e-10, dt0=0.01,
         w=[[0.5, -1.0, 2.0, 0.25], [1.0, 0.0, -1.0, 0.5]]),
]


def loss_fn(case, adjoint):
    rhs = MECH[case["mech"]][1]
    ts = jnp.array(case["ts"])
    w = jnp.array(case["w"])
    term = diffrax.ODETerm(lambda t, y, a: rhs(t, y, a))
    solver = SOLVER[case["method"]]()
    if "rtol" in case:
        ctl = diffrax.PIDController(rtol=case["rtol"], atol=case["atol"], step_ts=ts)
    else:
        ctl = diffrax.ConstantStepSize()

    def loss(k, y0):
        sol = diffrax.diffeqsolve(term, solver, t0=0.0, t1=ts[-1], dt0=case["dt0"], y0=y0, args=k,
                                  saveat=diffrax.SaveAt(ts=ts), stepsize_controller=ctl,
                                  adjoint=ADJOINT[adjoint](), max_steps=100000)
        return jnp.sum(w * sol.ys)

    return loss


def main():
    out = {"generator": {"jax": jax.__version__, "diffrax": diffrax.__version__,
                         "script": "tools/goldens/gen_backsolve_goldens.py"},
           "cases": []}
    for case in CASES:
        c = dict(case)
        c["mechanism"] = MECH[case["mech"]][0]
        k, y0 = jnp.array(case["k"]), jnp.array(case["y0"])
        for adj in ("backsolve", "recursive"):
            f = loss_fn(case, adj)
            v, (gk, gy) = jax.value_and_grad(f, argnums=(0, 1))(k, y0)
            c[adj] = {"loss": float(v), "grad_params": np.asarray(gk).tolist(), "grad_y0": np.asarray(gy).tolist()}
        out["cases"].append(c)
        print(case["name"], "backsolve", c["backsolve"]["grad_params"], "recursive", c["recursive"]["grad_params"])
    e = out["cases"][0]
    # the numbers, dC_B/dk1 with Euler steps
    assert f"{e['backsolve']['grad_params'][0]:.7f}" == "-0.0112542", e["backsolve"]
    assert f"{e['recursive']['grad_params'][0]:.7f}" == "-0.0123494", e["recursive"]
    t = out["cases"][1]
    assert [f"{x:.6f}" for x in t["backsolve"]["grad_params"]] == ["-0.012477", "-0.107989"], t["backsolve"]
    with open(OUT, "w") as fh:
        json.dump(out, fh, indent=1)
        fh.write("\n")
    print("wrote", OUT)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Generate tests/goldens/adaptive.json: diffrax adaptive solves (Tsit5,
Dopri5, PIDController, steps clipped to the output times) with
RecursiveCheckpointAdjoint gradients, float64, for
tests/test_models_adaptive.c.

    python3 -m venv /tmp/venv-adaptive && /tmp/venv-adaptive/bin/pip install jax diffrax
    /tmp/venv-adaptive/bin/python tools/goldens/gen_adaptive_goldens.py

Each case: the mechanism (the C test parses the same text), y0, params,
output times, method, rtol, atol; diffrax's states at the output times,
accepted and rejected step counts, and the gradient of
loss = sum(w * states) with respect to params and y0 (w given).
The output times go to PIDController(step_ts=...) so steps land on them,
as remat's do, and SaveAt(ts=...) reads the states there.

The first step: diffrax's PIDController.init runs Hairer's selection
(_select_initial_step) only when `terms` is an ODETerm, but diffeqsolve has
wrapped every term in a WrapTerm by then, so with dt0=None diffrax 0.7.2
starts every ODE at dt0 = 0.01. remat implements the selection as that
function computes it; the goldens call it on the unwrapped ODETerm and pass
its value as dt0 (stop_gradient, as PIDController.init does), so what is
compared is the selection and the controller, not the 0.01 fallback.
"""

import json
import os

import numpy as np
import jax

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
import diffrax  # noqa: E402
import optimistix as optx  # noqa: E402
from diffrax._step_size_controller.pid import _select_initial_step  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(os.path.dirname(os.path.dirname(HERE)), "tests", "goldens", "adaptive.json")


def abc(t, y, k):
    r1, r2 = k[0] * y[0], k[1] * y[1]
    return jnp.stack([-r1, r1 - r2, r2])


def bimol(t, y, k):
    # A + B -> C : k1 ; C -> D : k2 ; D -> A : k3 (mass action)
    r1, r2, r3 = k[0] * y[0] * y[1], k[1] * y[2], k[2] * y[3]
    return jnp.stack([-r1 + r3, -r1, r1 - r2, r2 - r3])


def oscill(t, y, k):
    # Lotka–Volterra as a mechanism: A -> 2 A : k1 ; A + B -> 2 B : k2 ; B -> : k3
    r1, r2, r3 = k[0] * y[0], k[1] * y[0] * y[1], k[2] * y[1]
    return jnp.stack([r1 - r2, r2 - r3])


MECH = {
    "abc": ("A -> B : k1\nB -> C : k2\nparam k1 = 1.0\nparam k2 = 0.5", abc),
    "bimol": ("A + B -> C : k1\nC -> D : k2\nD -> A : k3\nparam k1 = 2.0\nparam k2 = 0.7\nparam k3 = 0.3", bimol),
    "oscill": ("A -> 2 A : k1\nA + B -> 2 B : k2\nB -> : k3\nparam k1 = 1.0\nparam k2 = 0.5\nparam k3 = 1.2",
               oscill),
}

SOLVER = {"tsit5": diffrax.Tsit5, "dopri5": diffrax.Dopri5}


def solve(rhs, method, y0, k, ts, rtol, atol, max_steps=4096):
    ctl = diffrax.PIDController(rtol=rtol, atol=atol, step_ts=ts)
    term, solver = diffrax.ODETerm(lambda t, y, a: rhs(t, y, a)), SOLVER[method]()
    dt0 = jax.lax.stop_gradient(
        _select_initial_step(term, 0.0, y0, k, solver.func, solver.order(term), rtol, atol, optx.rms_norm))
    return diffrax.diffeqsolve(
        term,
        solver,
        t0=0.0,
        t1=ts[-1],
        dt0=dt0,
        y0=y0,
        args=k,
        saveat=diffrax.SaveAt(ts=ts),
        stepsize_controller=ctl,
        adjoint=diffrax.RecursiveCheckpointAdjoint(),
        max_steps=max_steps,
    )


_COMPILED = {}


def solver_fn(mech, method):
    """One compiled (value, aux) and gradient per mechanism and method: ts,
    tolerances and weights are traced arguments, so cases share it."""
    key = (mech, method)
    if key not in _COMPILED:
        rhs = MECH[mech][1]

        def loss(k, y0, ts, rtol, atol, w):
            sol = solve(rhs, method, y0, k, ts, rtol, atol)
            aux = (sol.ys, sol.stats["num_accepted_steps"], sol.stats["num_rejected_steps"])
            return jnp.sum(w * sol.ys), aux

        _COMPILED[key] = jax.jit(jax.value_and_grad(loss, argnums=(0, 1), has_aux=True))
    return _COMPILED[key]


def case(name, mech, method, y0, k, ts, rtol, atol):
    text = MECH[mech][0]
    w = np.round(np.linspace(-1.0, 1.5, len(ts) * len(y0)).reshape(len(ts), len(y0)), 3)
    f = solver_fn(mech, method)
    (val, (ys, acc, rej)), (gk, gy0) = f(jnp.asarray(k, dtype=jnp.float64), jnp.asarray(y0, dtype=jnp.float64),
                                         jnp.asarray(ts, dtype=jnp.float64), jnp.float64(rtol), jnp.float64(atol),
                                         jnp.asarray(w))
    return {
        "name": name,
        "mechanism": text,
        "method": method,
        "y0": list(map(float, y0)),
        "params": list(map(float, k)),
        "times": list(map(float, ts)),
        "rtol": rtol,
        "atol": atol,
        "ys": np.asarray(ys).reshape(-1).tolist(),
        "accepted": int(acc),
        "rejected": int(rej),
        "w": w.reshape(-1).tolist(),
        "loss": float(val),
        "grad_params": np.asarray(gk).tolist(),
        "grad_y0": np.asarray(gy0).tolist(),
    }


def main():
    cases = []
    for method in ("tsit5", "dopri5"):
        for rtol, atol in ((1e-6, 1e-9), (1e-3, 1e-6), (1e-9, 1e-12)):
            tag = f"{method}_{rtol:g}"
            cases.append(case(f"abc_outlet_{tag}", "abc", method, [1.0, 0.0, 0.0], [1.0, 0.5], [10.0], rtol, atol))
            cases.append(case(f"abc_grid_{tag}", "abc", method, [1.0, 0.0, 0.0], [1.0, 0.5],
                              [0.4, 1.0, 2.5, 6.0, 10.0], rtol, atol))
            cases.append(case(f"bimol_{tag}", "bimol", method, [1.0, 0.8, 0.0, 0.1], [2.0, 0.7, 0.3],
                              [0.3, 1.0, 2.5, 6.0], rtol, atol))
            cases.append(case(f"oscill_{tag}", "oscill", method, [1.0, 0.5], [1.0, 0.5, 1.2],
                              [1.0, 3.0, 7.5, 12.0], rtol, atol))
    doc = {
        "generator": {
            "script": "tools/goldens/gen_adaptive_goldens.py",
            "jax": jax.__version__,
            "diffrax": diffrax.__version__,
            "optimistix": optx.__version__,
            "controller": "PIDController(rtol, atol, step_ts=times) defaults: pcoeff 0, icoeff 1, dcoeff 0",
            "dt0": "_select_initial_step on the unwrapped ODETerm (diffeqsolve with dt0=None starts at 0.01)",
            "adjoint": "RecursiveCheckpointAdjoint",
        },
        "cases": cases,
    }
    with open(OUT, "w") as fh:
        json.dump(doc, fh, indent=1)
        fh.write("\n")
    for c in cases:
        print(c["name"], c["accepted"], c["rejected"])


if __name__ == "__main__":
    main()

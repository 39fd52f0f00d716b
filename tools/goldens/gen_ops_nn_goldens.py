#!/usr/bin/env python3
"""Generate tests/goldens/ops_nn.json with real JAX: forward + VJP in float64
of the primitives deep-network layers need (erf for gelu, reduce_max for a
stable softmax) and the other transcendentals of issue #24 (log1p, expm1,
logistic, erf_inv), in the format of ops.json (see gen_goldens.py).

How to run (from the repository root; the venv is gitignored):

    python3 -m venv .venv-ops
    .venv-ops/bin/pip install "jax[cpu]"          # or .venv-goldens, as the other scripts
    .venv-ops/bin/python tools/goldens/gen_ops_nn_goldens.py

Cases: erf over a spread of points (0, tiny, both tails, a NaN-free grid);
reduce_max over axes (0,), (1,) and all of a (4,5) input with ties (2 and 3
equal maxima in some runs, a -0/+0 pair), where JAX shares the cotangent
equally among the tied positions (its reduce_chooser rule). The C side reads
it in tests/test_ad_ops.c.
"""

import json
import os
import sys

import numpy as np
import jax
import jax.numpy as jnp
from jax import lax

jax.config.update("jax_enable_x64", True)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
OUT = os.path.join(ROOT, "tests", "goldens", "ops_nn.json")


def arr(x):
    x = np.asarray(x)
    return {"shape": list(x.shape), "dtype": str(x.dtype), "data": [float(v) for v in x.reshape(-1)]}


def main():
    import jaxlib
    rng = np.random.default_rng(7)
    cases = []

    def add(name, primitive, f, x, params, note=None):
        out, vjp = jax.vjp(f, jnp.asarray(x))
        ct = np.round(rng.uniform(-1.0, 1.0, out.shape), 3)
        (g,) = vjp(jnp.asarray(ct))
        case = {
            "name": name, "primitive": primitive, "params": params,
            "inputs": [dict(arr(x), name="x")],
            "out": arr(out), "ct": arr(ct), "vjp": [dict(arr(g), wrt="x")],
            "jaxpr": str(jax.make_jaxpr(f)(jnp.asarray(x))),
        }
        if note:
            case["note"] = note
        cases.append(case)

    xe = np.array([[0.0, 1e-8, -0.3, 0.5, 1.0, -1.0],
                   [2.0, -2.5, 3.7, -5.9, 6.1, 0.047]])
    add("erf", "erf", lax.erf, xe, {})
    xr = np.round(rng.uniform(-3.0, 3.0, (3, 4)), 3)
    add("erf_random", "erf", lax.erf, xr, {})

    # row 0: a triple tie at 2.0; row 1: a pair at 1.5; row 2: no tie;
    # row 3: -0 and +0 as the max (equal: a tie); column 4 has a pair too
    xm = np.array([[2.0, -1.0, 2.0, 0.5, 2.0],
                   [1.5, 1.5, -3.0, 0.25, 1.25],
                   [-0.5, 0.75, 1.0, -2.0, 1.25],
                   [-0.0, -1.5, 0.0, -4.0, -2.0]])
    note = "ties share the cotangent equally (JAX's reduce_chooser rule)"
    for axes, name in (((0,), "reduce_max_axis0"), ((1,), "reduce_max_axis1"), ((0, 1), "reduce_max_all")):
        add(name, "reduce_max", lambda v, a=axes: lax.reduce_max(v, a), xm, {"axes": list(axes)}, note)
    xa = np.array([[1.0, 3.0, 3.0], [3.0, 3.0, 2.0]])
    add("reduce_max_all_ties", "reduce_max", lambda v: lax.reduce_max(v, (0, 1)), xa, {"axes": [0, 1]},
        "four positions hold the max: each gets a quarter")

    # (after the cases above, whose cotangents the rng keeps as they were)
    # tiny arguments (where log(1 + x) and exp(x) - 1 lose every digit),
    # moderate and large ones, and logistic's tails (exp(-x) overflowing)
    xl = np.array([[1e-12, -1e-12, 0.0, 0.3, -0.5, -0.9],
                   [2.0, 10.0, 1e3, 1e-300, -0.999, 7.5]])
    add("log1p", "log1p", lax.log1p, xl, {})
    xx = np.array([[1e-12, -1e-12, 0.0, 0.3, -0.5, -3.0],
                   [2.0, 10.0, -40.0, 1e-300, 30.0, 0.75]])
    add("expm1", "expm1", lax.expm1, xx, {})
    xs = np.array([[0.0, 1e-9, -0.3, 2.0, -5.0, 20.0],
                   [-40.0, 700.0, -700.0, 36.5, -36.5, 0.25]])
    add("logistic", "logistic", lax.logistic, xs, {})
    # |y| <= 0.999: closer to 1, XLA's erf_inv (Giles' f64 polynomial) is
    # itself 2e-14 (0.99999) to 1.3e-11 (1 - 1e-9) off the exact value
    # (mpmath), beyond these goldens' 1e-13; remat's tail is checked against
    # long double in tests/test_cpu_kernels_vmath.c instead
    xi = np.array([[0.0, 1e-12, -0.3, 0.5, 0.9, -0.99],
                   [0.999, -0.998, 1e-300, 0.25, -0.75, 0.95]])
    add("erf_inv", "erf_inv", lax.erf_inv, xi, {})

    doc = {
        "generator": {
            "script": "tools/goldens/gen_ops_nn_goldens.py",
            "jax": jax.__version__, "jaxlib": jaxlib.__version__, "numpy": np.__version__,
            "python": sys.version.split()[0], "backend": jax.default_backend(),
        },
        "about": "float64 forward + VJP of erf, log1p, expm1, logistic, erf_inv and reduce_max, as ops.json: arrays flattened row-major, "
                 "ct = fixed cotangent, 'vjp' the cotangent of x.",
        "cases": cases,
    }
    with open(OUT, "w") as f:
        json.dump(doc, f, indent=2, allow_nan=False)
        f.write("\n")
    print(f"wrote {OUT} ({os.path.getsize(OUT)} bytes), jax {jax.__version__}")


if __name__ == "__main__":
    main()

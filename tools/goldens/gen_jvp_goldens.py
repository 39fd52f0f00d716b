#!/usr/bin/env python3
"""Generate tests/goldens/jvp.json: jax.jvp of every differentiable primitive
(float64), for tests/test_ad_jvp.c.

    .venv-goldens/bin/python tools/goldens/gen_jvp_goldens.py   # from the repository root

Each case: a name (the C test builds the same function from it), inputs,
one tangent per input, the primal output and its tangent. Inputs include
ties (max, min, reduce_max) and relu at 0, where central differences cannot
tell the rule, only JAX can.
"""

import json
import os
import sys

import numpy as np
import jax

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(os.path.dirname(os.path.dirname(HERE)), "tests", "goldens", "jvp.json")


def arr(x):
    x = np.asarray(x, dtype=np.float64)
    return {"shape": list(x.shape), "data": [float(v) for v in x.reshape(-1)]}


rng = np.random.default_rng(10)


def rnd(*shape, lo=-2.0, hi=2.0):
    return np.round(rng.uniform(lo, hi, size=shape), 3)


def pos(*shape):
    return rnd(*shape, lo=0.2, hi=3.0)


tie_a = np.array([[1.0, -0.5, 2.0], [0.25, 0.0, -1.0]])
tie_b = np.array([[1.0, 0.5, -2.0], [0.25, 3.0, -1.0]])
rmax_x = np.array([[[1.0, 2.0, 2.0, 0.5], [-1.0, -1.0, -3.0, -1.0], [0.0, 4.0, 1.0, 4.0]],
                   [[3.0, 3.0, 3.0, 3.0], [0.5, 0.25, 0.125, 1.5], [2.0, -2.0, 2.0, -2.0]]])
pred = np.array([[1.0, 0.0, 0.0], [1.0, 1.0, 0.0]])

CASES = [
    ("add", lambda x, y: x + y, [rnd(2, 3), rnd(2, 3)]),
    ("sub", lambda x, y: x - y, [rnd(2, 3), rnd(2, 3)]),
    ("mul", lambda x, y: x * y, [rnd(2, 3), rnd(2, 3)]),
    ("div", lambda x, y: x / y, [rnd(2, 3), pos(2, 3)]),
    ("max_ties", lambda x, y: lax.max(x, y), [tie_a, tie_b]),
    ("min_ties", lambda x, y: lax.min(x, y), [tie_a, tie_b]),
    ("neg", lambda x: -x, [rnd(2, 3)]),
    ("exp", jnp.exp, [rnd(2, 3)]),
    ("log", jnp.log, [pos(2, 3)]),
    ("sin", jnp.sin, [rnd(2, 3)]),
    ("cos", jnp.cos, [rnd(2, 3)]),
    ("tanh", jnp.tanh, [rnd(2, 3)]),
    ("relu_at_zero", jax.nn.relu, [np.array([[0.0, -1.0, 2.0], [-0.0, 0.5, 0.0]])]),
    ("square", lax.square, [rnd(2, 3)]),
    ("sqrt", jnp.sqrt, [pos(2, 3)]),
    ("erf", lax.erf, [rnd(2, 3)]),
    ("integer_pow_3", lambda x: lax.integer_pow(x, 3), [rnd(2, 3)]),
    ("integer_pow_-2", lambda x: lax.integer_pow(x, -2), [pos(2, 3)]),
    ("integer_pow_0", lambda x: lax.integer_pow(x, 0), [rnd(2, 3)]),
    ("pow_2.5", lambda x: lax.pow(x, 2.5), [pos(2, 3)]),
    ("select", lambda x, y: lax.select(pred != 0, x, y), [rnd(2, 3), rnd(2, 3)]),
    ("reduce_sum_axes_0_2", lambda x: jnp.sum(x, axis=(0, 2)), [rnd(2, 3, 4)]),
    ("reduce_max_ties_axis_2", lambda x: jnp.max(x, axis=2), [rmax_x]),
    ("reduce_max_ties_all", lambda x: jnp.max(x), [rmax_x]),
    ("broadcast_in_dim", lambda x: lax.broadcast_in_dim(x, (2, 3, 4), (1,)), [rnd(3)]),
    ("reshape", lambda x: jnp.reshape(x, (6, 4)), [rnd(2, 3, 4)]),
    ("transpose", lambda x: jnp.transpose(x, (2, 0, 1)), [rnd(2, 3, 4)]),
    ("slice_strided", lambda x: lax.slice(x, (1, 0), (4, 6), (2, 3)), [rnd(4, 6)]),
    ("pad_interior", lambda x: lax.pad(x, 0.0, ((1, 0, 1), (0, 2, 1))), [rnd(2, 3)]),
    ("concatenate", lambda a, b, c: jnp.concatenate([a, b, c], axis=1), [rnd(2, 3), rnd(2, 2), rnd(2, 1)]),
    ("matmul", lambda a, b: a @ b, [rnd(3, 4), rnd(4, 2)]),
    ("dot_general_batched", lambda a, b: lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,)))),
     [rnd(2, 3, 4), rnd(2, 4, 5)]),
]


def step(c, x_t, k):
    return c + (jnp.sin(x_t) - k * c) * 0.1, c * c


def scan_net(c0, xs, k):
    cout, ys = lax.scan(lambda c, x: step(c, x, k), c0, xs)
    return cout, ys


def main():
    cases = []
    for name, fn, inputs in CASES:
        tangents = [rnd(*np.shape(x), lo=-1.0, hi=1.0) for x in inputs]
        out, tout = jax.jvp(fn, tuple(jnp.asarray(x) for x in inputs), tuple(jnp.asarray(t) for t in tangents))
        cases.append({"name": name, "inputs": [arr(x) for x in inputs], "tangents": [arr(t) for t in tangents],
                      "out": arr(out), "tangent_out": arr(tout)})
    inputs = [rnd(3, lo=-1, hi=1), rnd(20, 3, lo=-1, hi=1), rnd(3, lo=-1, hi=1)]
    tangents = [rnd(*np.shape(x), lo=-1.0, hi=1.0) for x in inputs]
    (c, ys), (tc, tys) = jax.jvp(scan_net, tuple(map(jnp.asarray, inputs)), tuple(map(jnp.asarray, tangents)))
    cases.append({"name": "scan", "inputs": [arr(x) for x in inputs], "tangents": [arr(t) for t in tangents],
                  "out": [arr(c), arr(ys)], "tangent_out": [arr(tc), arr(tys)]})
    import jaxlib
    doc = {"generator": {"script": "tools/goldens/gen_jvp_goldens.py", "jax": jax.__version__,
                         "jaxlib": jaxlib.__version__, "numpy": np.__version__,
                         "python": sys.version.split()[0], "backend": jax.default_backend()},
           "about": "jax.jvp of each primitive in float64: inputs, tangents, primal out, tangent out",
           "cases": cases}
    with open(OUT, "w") as f:
        json.dump(doc, f, indent=1, allow_nan=False)
        f.write("\n")
    print(f"wrote {OUT} ({len(cases)} cases)")


if __name__ == "__main__":
    main()

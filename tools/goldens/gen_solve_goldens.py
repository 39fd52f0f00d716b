#!/usr/bin/env python3
"""Generate tests/goldens/linear_solve.json: jnp.linalg.solve in float64 —
the solution, its VJP (cotangents of A and b for a cotangent of x) and its
JVP (the tangent of x for tangents of A and b) — for tests/test_ad_solve.c.

    python3 -m venv /tmp/solve-venv && /tmp/solve-venv/bin/pip install "jax[cpu]"
    /tmp/solve-venv/bin/python tools/goldens/gen_solve_goldens.py

Batched vector right-hand sides go through vmap of the 1-D solve: NumPy 2
semantics (which jnp follows) read a b of rank > 1 as a stack of matrices,
remat's rank rule (rank(A) - 1: vectors) is explicit. Matrices are
rows-rotated R + n I, so every case pivots; n = 10 runs remat's LAPACK
kernel, the others its elimination.
"""

import json
import os
import sys

import numpy as np
import jax

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(os.path.dirname(os.path.dirname(HERE)), "tests", "goldens", "linear_solve.json")

rng = np.random.default_rng(10)


def arr(x):
    x = np.asarray(x, dtype=np.float64)
    return {"shape": list(x.shape), "data": [float(v) for v in x.reshape(-1)]}


def rnd(*shape, lo=-2.0, hi=2.0):
    return np.round(rng.uniform(lo, hi, size=shape), 3)


def system(batch, n):
    a = rnd(*batch, n, n, lo=-1.0, hi=1.0) + n * np.eye(n)
    flat = a.reshape(-1, n, n)
    for s in range(flat.shape[0]):
        flat[s] = np.roll(flat[s], (s + 1) % n, axis=0)
    return flat.reshape(*batch, n, n)


def solve_vec(a, b):
    """A (..., n, n), b (..., n): one vector per matrix"""
    f = jnp.linalg.solve
    for _ in range(a.ndim - 2):
        f = jax.vmap(f)
    return f(a, b)


def solve_mat(a, b):
    """A (..., n, n), b (..., n, k)"""
    return jnp.linalg.solve(a, b)


def solve_t(a, b):
    """A^T x = b, remat_linear_solve(f, transpose(A), b)"""
    return solve_vec(jnp.swapaxes(a, -1, -2), b)


# name, function, batch dims, n, k (0: vector)
CASES = [
    ("n3", solve_vec, (), 3, 0),
    ("n3_k2", solve_mat, (), 3, 2),
    ("batch2_n4", solve_vec, (2,), 4, 0),
    ("batch2x3_n3_k3", solve_mat, (2, 3), 3, 3),
    ("n10_lapack", solve_vec, (), 10, 0),
    ("batch2_n12_k3_lapack", solve_mat, (2,), 12, 3),
    ("transposed_n4", solve_t, (), 4, 0),
]


def main():
    cases = []
    for name, fn, batch, n, k in CASES:
        a = system(batch, n)
        b = rnd(*batch, n, *((k,) if k else ()))
        x, vjp = jax.vjp(fn, jnp.asarray(a), jnp.asarray(b))
        w = rnd(*x.shape, lo=-1.0, hi=1.0)
        abar, bbar = vjp(jnp.asarray(w))
        ta, tb = rnd(*a.shape, lo=-1.0, hi=1.0), rnd(*b.shape, lo=-1.0, hi=1.0)
        _, tx = jax.jvp(fn, (jnp.asarray(a), jnp.asarray(b)), (jnp.asarray(ta), jnp.asarray(tb)))
        cases.append({"name": name, "transpose": fn is solve_t, "A": arr(a), "b": arr(b), "x": arr(x),
                      "cotangent": arr(w), "A_bar": arr(abar), "b_bar": arr(bbar),
                      "A_dot": arr(ta), "b_dot": arr(tb), "x_dot": arr(tx)})
    import jaxlib
    doc = {"generator": {"script": "tools/goldens/gen_solve_goldens.py", "jax": jax.__version__,
                         "jaxlib": jaxlib.__version__, "numpy": np.__version__,
                         "python": sys.version.split()[0], "backend": jax.default_backend()},
           "about": "jnp.linalg.solve in float64: x, VJP (A_bar, b_bar for cotangent), JVP (x_dot for A_dot, b_dot)",
           "cases": cases}
    with open(OUT, "w") as f:
        json.dump(doc, f, indent=1, allow_nan=False)
        f.write("\n")
    print(f"wrote {OUT} ({len(cases)} cases)")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The training of examples/netterm (a network rate law fitted to eight PFR
profiles) in JAX/Flax/diffrax/optimistix, for a time against remat's.

    python3 -m venv .venv-goldens && .venv-goldens/bin/pip install "jax[cpu]" flax diffrax
    .venv-goldens/bin/python bench/netterm_diffrax.py [ITERS]
    examples/netterm/run.sh build/tools/remat /tmp/ude          # remat's figure

The same model as examples/netterm/ude.mech: rate A B exp(f(A, B)), f
Flax's Dense(8) -> tanh -> Dense(1) initialised from PRNGKey(0); the same
residuals (model - data at every data row and species, eight experiments);
adaptive Tsit5 with rtol 1e-6, atol 1e-9 (diffrax's PIDController,
ForwardMode for the forward-mode Jacobian); Levenberg-Marquardt
(optimistix, rtol = atol = 1e-10, at most ITERS steps, default 200) as
remat's default fit is (GSL). Prints the SSE at the start and the end,
the time of the first call (tracing and XLA compilation) and of the solve,
and the held-out errors as run.sh does.
"""

import csv
import os
import sys
import time

import numpy as np
import jax

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
import diffrax  # noqa: E402
import flax.linen as nn  # noqa: E402
import optimistix as optx  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
EX = os.path.join(os.path.dirname(HERE), "examples", "netterm")


class Net(nn.Module):
    @nn.compact
    def __call__(self, x):
        h = jnp.tanh(nn.Dense(8)(x))  # Dense_0: constructed first (Flax names modules as they are made)
        return nn.Dense(1)(h)


def read(name):
    y0, rows = {}, []
    with open(os.path.join(EX, name)) as fp:
        for line in fp:
            if line.startswith("# ") and " = " in line:
                k, v = line[2:].split(" = ")
                y0[k.strip()] = float(v)
            elif not line.startswith("#") and not line.startswith("t,"):
                rows.append([float(c) for c in line.split(",")])
    rows = np.array(rows)
    return np.array([y0["A"], y0["B"], y0["C"]]), rows[:, 0], rows[:, 1:]


net = Net()
params0 = net.init(jax.random.PRNGKey(0), jnp.zeros((2,), jnp.float32))
params0 = jax.tree_util.tree_map(lambda a: jnp.asarray(a, jnp.float64), params0)


def rhs(t, y, p):
    r = y[0] * y[1] * jnp.exp(net.apply(p, jnp.stack([y[0], y[1]]))[0])
    return jnp.stack([-r, -r, r])


def solve(p, y0, ts):
    sol = diffrax.diffeqsolve(diffrax.ODETerm(rhs), diffrax.Tsit5(), t0=0.0, t1=ts[-1], dt0=None, y0=y0, args=p,
                              stepsize_controller=diffrax.PIDController(rtol=1e-6, atol=1e-9),
                              saveat=diffrax.SaveAt(ts=ts), adjoint=diffrax.ForwardMode(), max_steps=4096)
    return sol.ys


def main():
    iters = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    train = [read(f"train_{i}.csv") for i in range(1, 9)]
    y0s = jnp.array(np.stack([t[0] for t in train]))
    tss = jnp.array(np.stack([t[1] for t in train]))
    data = jnp.array(np.stack([t[2] for t in train]))

    def residuals(p, _):
        return jax.vmap(lambda y0, ts: solve(p, y0, ts))(y0s, tss) - data

    sse0 = float(jnp.sum(residuals(params0, None) ** 2))
    solver = optx.LevenbergMarquardt(rtol=1e-10, atol=1e-10)
    def run(p):
        sol = optx.least_squares(residuals, solver, p, max_steps=iters, throw=False)
        return sol.value, sol.stats["num_steps"]

    fit = jax.jit(run)
    t0, c0 = time.perf_counter(), time.process_time()
    jax.block_until_ready(fit(params0))
    t1, c1 = time.perf_counter(), time.process_time()
    value, steps = jax.block_until_ready(fit(params0))
    t2, c2 = time.perf_counter(), time.process_time()
    sse = float(jnp.sum(residuals(value, None) ** 2))
    steps = int(steps)
    print(f"diffrax + optimistix LM: SSE {sse0:.6g} -> {sse:.6g} in {steps} steps (at most {iters})")
    print(f"  first call (trace + compile + solve) {t1 - t0:.2f} s wall, {c1 - c0:.2f} s CPU; "
          f"solve alone {t2 - t1:.2f} s wall, {c2 - c1:.2f} s CPU")
    for h in ("heldout_1.csv", "heldout_2.csv"):
        y0, ts, d = read(h)
        err = float(jnp.max(jnp.abs(solve(value, jnp.array(y0), jnp.array(ts)) - d)))
        print(f"  held-out {h}: largest error {err:.3g}")


if __name__ == "__main__":
    main()

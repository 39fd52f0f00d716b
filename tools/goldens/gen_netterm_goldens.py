#!/usr/bin/env python3
"""Generate tests/goldens/netterm.json: a PFR whose rate holds a network
(remat/mechanism.h, "Networks"), in JAX/Flax/diffrax, float64, for
tests/test_models_netterm.c.

    python3 -m venv .venv-goldens && .venv-goldens/bin/pip install "jax[cpu]" flax diffrax
    .venv-goldens/bin/python tools/goldens/gen_netterm_goldens.py

The mechanism (the C test parses the same text):

    param k = 1.5
    net f = mlp(inputs: 2, width: 8, depth: 2, activation: tanh, seed: 0)
    A + B -> C : rate = k * A * B * exp(f(A, B))

f is Flax's module below (depth Dense(width) + tanh layers, then
Dense(outputs); names Dense_0 .. Dense_depth), initialised as
`Net().init(jax.random.PRNGKey(seed), jnp.zeros((inputs,), jnp.float32))`:
float32 draws, widened to float64 for the solve as remat widens them. The
parameters are listed in remat's order and names: k, then per layer its
kernel row-major ("f.Dense_0.kernel[i][j]") and its bias ("f.Dense_0.bias[j]").

The PFR: inlet (A, B, C) = (1, 0.5, 0), z in [0, 2], Tsit5 with 40 constant
steps (diffrax.ConstantStepSize), RecursiveCheckpointAdjoint; the objective
is C at the outlet (remat's REMAT_PFR_MINIMIZE of C) and its gradient with
respect to every parameter.
"""

import json
import os

import numpy as np
import jax

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
import diffrax  # noqa: E402
import flax  # noqa: E402
import flax.linen as nn  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(os.path.dirname(os.path.dirname(HERE)), "tests", "goldens", "netterm.json")

INPUTS, WIDTH, DEPTH, SEED = 2, 8, 2, 0
MECH = ("param k = 1.5\n"
        f"net f = mlp(inputs: {INPUTS}, width: {WIDTH}, depth: {DEPTH}, activation: tanh, seed: {SEED})\n"
        "A + B -> C : rate = k * A * B * exp(f(A, B))\n")
INLET = [1.0, 0.5, 0.0]
LENGTH, STEPS = 2.0, 40


class Net(nn.Module):
    width: int
    depth: int
    outputs: int = 1

    @nn.compact
    def __call__(self, x):
        for _ in range(self.depth):
            x = jnp.tanh(nn.Dense(self.width)(x))
        return nn.Dense(self.outputs)(x)


def flatten(params):
    """remat's order and names: per layer the kernel row-major, then the bias."""
    names, values = [], []
    for layer in range(DEPTH + 1):
        d = params["params"][f"Dense_{layer}"]
        kern, bias = np.asarray(d["kernel"], np.float64), np.asarray(d["bias"], np.float64)
        for i in range(kern.shape[0]):
            for j in range(kern.shape[1]):
                names.append(f"f.Dense_{layer}.kernel[{i}][{j}]")
                values.append(kern[i, j])
        for j in range(bias.shape[0]):
            names.append(f"f.Dense_{layer}.bias[{j}]")
            values.append(bias[j])
    return names, values


def unflatten(template, flat):
    out, o = {}, 0
    for layer in range(DEPTH + 1):
        d = template["params"][f"Dense_{layer}"]
        kshape, bshape = d["kernel"].shape, d["bias"].shape
        kn, bn = int(np.prod(kshape)), int(np.prod(bshape))
        out[f"Dense_{layer}"] = {"kernel": flat[o:o + kn].reshape(kshape), "bias": flat[o + kn:o + kn + bn]}
        o += kn + bn
    return {"params": out}


def main():
    net = Net(WIDTH, DEPTH)
    template = net.init(jax.random.PRNGKey(SEED), jnp.zeros((INPUTS,), jnp.float32))
    wnames, wvalues = flatten(template)
    names = ["k"] + wnames
    p0 = jnp.array([1.5] + wvalues, jnp.float64)

    def rhs(t, y, p):
        w = unflatten(template, p[1:])
        r = p[0] * y[0] * y[1] * jnp.exp(net.apply(w, jnp.stack([y[0], y[1]]))[0])
        return jnp.stack([-r, -r, r])

    def outlet(p):
        sol = diffrax.diffeqsolve(diffrax.ODETerm(rhs), diffrax.Tsit5(), t0=0.0, t1=LENGTH, dt0=LENGTH / STEPS,
                                  y0=jnp.array(INLET, jnp.float64), args=p,
                                  stepsize_controller=diffrax.ConstantStepSize(),
                                  saveat=diffrax.SaveAt(t1=True), adjoint=diffrax.RecursiveCheckpointAdjoint(),
                                  max_steps=STEPS + 1)
        return sol.ys[-1]

    out = outlet(p0)
    obj, grad = jax.value_and_grad(lambda p: outlet(p)[2])(p0)
    doc = {
        "generator": {"script": "tools/goldens/gen_netterm_goldens.py", "jax": jax.__version__,
                      "flax": flax.__version__, "diffrax": diffrax.__version__},
        "cases": [{
            "name": "pfr_tsit5",
            "mechanism": MECH,
            "param_names": names,
            "params": [float(v) for v in p0],
            "inlet": INLET,
            "length": LENGTH,
            "steps": STEPS,
            "outlet": [float(v) for v in out],
            "objective": float(obj),
            "gradient": [float(v) for v in grad],
        }],
    }
    with open(OUT, "w") as fp:
        json.dump(doc, fp, indent=1)
        fp.write("\n")
    print(f"wrote {OUT}: C(L) = {float(obj):.12g}, |grad| = {float(jnp.linalg.norm(grad)):.6g}")


if __name__ == "__main__":
    main()

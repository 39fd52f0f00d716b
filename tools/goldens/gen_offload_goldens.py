"""Goldens of JAX's offload policies: print_saved_residuals of a stack of
checkpointed layers under save_and_offload_only_these_names and
offload_dot_with_no_batch_dims, written to tests/goldens/offload_residuals.json
and read by tests/test_ad_offload.c (which builds the same network in remat).

JAX lists an offloaded residual as the output of the device_put that moves it
("f32<host>[4,6] output of device_put from ..."): its type carries the memory
space, its name and primitive are gone. Each case records the report's lines
split into type and source (locations dropped: they point into this file)
and the gradient with respect to w (float32, compared with a tolerance).

Run: python3 -m venv .venv-goldens && .venv-goldens/bin/pip install "jax[cpu]"
     && .venv-goldens/bin/python tools/goldens/gen_offload_goldens.py
"""
import json
import os
import re

import jax
import jax.numpy as jnp
import numpy as np
from jax._src.ad_checkpoint import saved_residuals
from jax.ad_checkpoint import checkpoint_name

cp = jax.checkpoint_policies
B, D, L = 4, 6, 2


def layer(h, w, b):
    z = checkpoint_name(h @ w, "z")
    a = checkpoint_name(jnp.tanh(z + b), "h")
    return jnp.sin(a) + h


# remat's text form of each policy (remat_policy_named) beside JAX's object
CASES = [
    ("save_and_offload_only_these_names([], [h], device, pinned_host)",
     cp.save_and_offload_only_these_names(names_which_can_be_saved=[], names_which_can_be_offloaded=["h"],
                                          offload_src="device", offload_dst="pinned_host")),
    ("save_and_offload_only_these_names([h], [z], device, pinned_host)",
     cp.save_and_offload_only_these_names(names_which_can_be_saved=["h"], names_which_can_be_offloaded=["z"],
                                          offload_src="device", offload_dst="pinned_host")),
    ("offload_dot_with_no_batch_dims(device, pinned_host)", cp.offload_dot_with_no_batch_dims("device", "pinned_host")),
]


def net_of(policy):
    blk = jax.checkpoint(layer, policy=policy)

    def net(x, w, b):
        for _ in range(L):
            x = blk(x, w, b)
        return jnp.sum(x * x)
    return net


def inputs():
    x = (np.arange(B * D, dtype=np.float32).reshape(B, D) % 7 - 3) * np.float32(0.1)
    w = (np.arange(D * D, dtype=np.float32).reshape(D, D) % 5 - 2) * np.float32(0.15)
    b = (np.arange(D, dtype=np.float32) - 2) * np.float32(0.05)
    return x, w, b


def main():
    x, w, b = inputs()
    cases = []
    for text, pol in CASES:
        net = net_of(pol)
        lines = []
        for aval, src in saved_residuals(net, x, w, b):
            src = re.sub(r" from \S+:\d+:\d+ \(.*\)$", "", src)  # locations point into this file
            lines.append({"type": aval.str_short(short_dtypes=True), "source": src})
        g = jax.grad(net, 1)(x, w, b)
        cases.append({"name": text, "residuals": lines,
                      "grad_w": {"shape": list(g.shape), "dtype": "float32", "data": np.asarray(g, np.float64).ravel().tolist()}})
    doc = {"generator": {"script": "tools/goldens/gen_offload_goldens.py", "jax": jax.__version__},
           "network": {"B": B, "D": D, "L": L,
                       "x": x.astype(np.float64).ravel().tolist(), "w": w.astype(np.float64).ravel().tolist(),
                       "b": b.astype(np.float64).ravel().tolist()},
           "cases": cases}
    out = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "goldens", "offload_residuals.json")
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print("wrote", os.path.normpath(out))


if __name__ == "__main__":
    main()

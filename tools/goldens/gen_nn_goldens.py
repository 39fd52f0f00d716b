#!/usr/bin/env python3
"""Generate tests/goldens/nn_random.json and tests/goldens/nn_flax.json with
real JAX and Flax (CPU), for the C PRNG / Flax initialisation of
include/remat/random.h and the network modules of include/remat/nn.h.

How to run (from the repository root):

    python3 -m venv .venv-goldens
    .venv-goldens/bin/pip install "jax[cpu]" flax
    .venv-goldens/bin/python tools/goldens/gen_nn_goldens.py

Versions (jax, jaxlib, flax, numpy) and the PRNG settings
(jax_threefry_partitionable, jax_enable_x64) are stored under "generator".

f32 arrays are stored as {"shape", "dtype", "data", "bits"}: "data" are the
float64 reprs of the f32 values, "bits" their uint32 patterns (exact).

nn_random.json: PRNGKey words, split, fold_in, bits (also with
  jax_threefry_partitionable=False, under "original"), uniform, normal,
  truncated_normal(-2, 2), lecun_normal.
nn_flax.json: the seed-002 MLP under nn.remat over a grid of seeds and
  sizes (inputs, outputs, some params), its print_saved_residuals report,
  the FFN/Net blocks (plain and nn.remat), activations and LayerNorm.
The residual lines name source locations in this file; compare the other
parts (dtype, shape, kind, primitive).
"""

import contextlib
import io
import json
import math
import os
import re
import sys

import numpy as np
import jax
import jax.numpy as jnp
import flax
import flax.linen as nn
from jax.ad_checkpoint import print_saved_residuals

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from gen_goldens import parse_line, sanitize  # noqa: E402  (one parser for residual lines)

ROOT = os.path.dirname(os.path.dirname(HERE))
OUT_DIR = os.path.join(ROOT, "tests", "goldens")

SEEDS = [0, 1, 42, 2**31 - 1, 7, 2**32 + 5]


def generator_info():
    import jaxlib
    return {
        "script": "tools/goldens/gen_nn_goldens.py",
        "jax": jax.__version__,
        "jaxlib": jaxlib.__version__,
        "flax": flax.__version__,
        "numpy": np.__version__,
        "python": sys.version.split()[0],
        "backend": jax.default_backend(),
        "jax_threefry_partitionable": bool(jax.config.jax_threefry_partitionable),
        "jax_enable_x64": bool(jax.config.jax_enable_x64),
        "flax_fix_rng_separator": bool(flax.config.flax_fix_rng_separator),
    }


def write_json(name, obj):
    """Pretty JSON with every list of numbers on one line."""
    path = os.path.join(OUT_DIR, name)
    text = json.dumps(obj, indent=1, allow_nan=False)
    text = re.sub(r"\[\s*([-+0-9.eE,\s]*?)\s*\]",
                  lambda m: "[" + ", ".join(m.group(1).replace(",", " ").split()) + "]", text)
    with open(path, "w") as f:
        f.write(text + "\n")
    print(f"wrote {path} ({os.path.getsize(path)} bytes)")


def words(k):
    return [int(v) for v in np.asarray(jax.random.key_data(k)).reshape(-1)]


def f32(x, data=True):
    x = np.asarray(x, dtype=np.float32)
    d = {"shape": list(x.shape), "dtype": "float32",
         "bits": [int(v) for v in x.reshape(-1).view(np.uint32)]}
    if data:
        d["data"] = [float(v) for v in x.reshape(-1)]
    return d


def u32(x):
    x = np.asarray(x)
    assert x.dtype == np.uint32
    return {"shape": list(x.shape), "dtype": "uint32", "data": [int(v) for v in x.reshape(-1)]}


# ---------------------------------------------------------------------------
# nn_random.json
# ---------------------------------------------------------------------------

BITS_SHAPES = [(1,), (5,), (3, 4), (2, 3, 5)]


def prng_cases(partitionable):
    jax.config.update("jax_threefry_partitionable", partitionable)
    out = {"split": [], "bits": []}
    for s in SEEDS:
        k = jax.random.PRNGKey(s)
        for n in (2, 3):
            out["split"].append({"seed": s, "n": n, "keys": [words(c) for c in jax.random.split(k, n)]})
        for shp in BITS_SHAPES + [(7,), (0,), ()]:
            out["bits"].append({"seed": s, "shape": list(shp),
                                "bits": u32(jax.random.bits(k, shp, jnp.uint32))})
    jax.config.update("jax_threefry_partitionable", True)
    return out


def make_random():
    assert jax.config.jax_threefry_partitionable, "expected JAX's default partitionable threefry"
    doc = {"generator": generator_info(),
           "about": ("jax.random with the default threefry2x32 (partitionable) unless under 'original'; "
                     "keys are key_data words; f32 arrays carry their uint32 bit patterns")}
    doc["keys"] = [{"seed": s, "key": words(jax.random.PRNGKey(s))} for s in SEEDS]
    doc["fold_in"] = []
    for s in SEEDS:
        for d in (0, 1, 7, 12345, 2**31, 2**32 - 1):
            doc["fold_in"].append({"seed": s, "data": d,
                                   "key": words(jax.random.fold_in(jax.random.PRNGKey(s), d))})
    part = prng_cases(True)
    doc["split"], doc["bits"] = part["split"], part["bits"]
    doc["original"] = prng_cases(False)
    doc["original"]["about"] = "jax_threefry_partitionable=False"
    # chained: split of a split, fold_in of a split
    k = jax.random.PRNGKey(42)
    a, b = jax.random.split(k)
    doc["chain"] = {"seed": 42, "split_then_split_second": [words(c) for c in jax.random.split(b, 3)],
                    "split_first_fold_in_9": words(jax.random.fold_in(a, 9))}

    doc["uniform"], doc["normal"], doc["truncated_normal"], doc["lecun_normal"] = [], [], [], []
    for s in SEEDS:
        k = jax.random.PRNGKey(s)
        for shp in [(5,), (3, 4), (2, 3, 5)]:
            doc["uniform"].append({"seed": s, "shape": list(shp), "lo": 0.0, "hi": 1.0,
                                   "value": f32(jax.random.uniform(k, shp, jnp.float32))})
            doc["truncated_normal"].append({"seed": s, "shape": list(shp), "lower": -2.0, "upper": 2.0,
                                            "value": f32(jax.random.truncated_normal(k, -2, 2, shp, jnp.float32))})
        doc["uniform"].append({"seed": s, "shape": [7], "lo": -3.5, "hi": 2.25,
                               "value": f32(jax.random.uniform(k, (7,), jnp.float32, -3.5, 2.25))})
        doc["normal"].append({"seed": s, "shape": [64],
                              "value": f32(jax.random.normal(k, (64,), jnp.float32))})
        big = 4096 if s == 0 else 512  # the tails of erf_inv: many draws from one key
        doc["truncated_normal"].append({"seed": s, "shape": [big], "lower": -2.0, "upper": 2.0,
                                        "value": f32(jax.random.truncated_normal(k, -2, 2, (big,), jnp.float32),
                                                     data=False)})
        doc["truncated_normal"].append({"seed": s, "shape": [256], "lower": -1.0, "upper": 3.5,
                                        "value": f32(jax.random.truncated_normal(k, -1.0, 3.5, (256,), jnp.float32),
                                                     data=False)})
        for shp in [(3, 8), (17, 65), (1, 1), (2, 3, 4)]:
            doc["lecun_normal"].append({"seed": s, "shape": list(shp),
                                        "value": f32(nn.initializers.lecun_normal()(k, shp, jnp.float32),
                                                     data=math.prod(shp) < 100)})
    # the key Flax hands an initialiser is any key; one derived key too
    kd = jax.random.fold_in(jax.random.PRNGKey(0), 3141592653)
    doc["lecun_normal"].append({"key": words(kd), "shape": [64, 64],
                                "value": f32(nn.initializers.lecun_normal()(kd, (64, 64), jnp.float32),
                                             data=False)})
    doc["normal_init"] = [{"seed": s, "stddev": 0.02, "shape": [6, 5],
                           "value": f32(nn.initializers.normal(0.02)(jax.random.PRNGKey(s), (6, 5), jnp.float32))}
                          for s in (0, 42)]
    return doc


# ---------------------------------------------------------------------------
# nn_flax.json
# ---------------------------------------------------------------------------

class MLP(nn.Module):
    features: int

    @nn.compact
    def __call__(self, x):
        x = nn.Dense(self.features)(x)
        x = nn.relu(x)
        x = nn.Dense(self.features)(x)
        x = nn.relu(x)
        return nn.Dense(self.features)(x)


RematMLP = nn.remat(MLP, policy=jax.checkpoint_policies.dots_with_no_batch_dims_saveable)


class FFN(nn.Module):
    width: int

    @nn.compact
    def __call__(self, x):
        h = nn.LayerNorm()(x)
        h = nn.Dense(4 * self.width)(h)
        h = nn.gelu(h)
        h = nn.Dense(self.width)(h)
        return x + h


class Net(nn.Module):
    width: int
    depth: int
    remat_blocks: bool = False

    @nn.compact
    def __call__(self, x):
        block = nn.remat(FFN) if self.remat_blocks else FFN
        for _ in range(self.depth):
            x = block(self.width)(x)
        return nn.Dense(10)(x)


def flat_params(variables, data=True):
    flat = flax.traverse_util.flatten_dict(variables["params"], sep="/")
    return {k: f32(v, data) for k, v in sorted(flat.items())}


def mlp_x(D, F):
    return np.random.default_rng(1000 * D + F).standard_normal(D).astype(np.float32)


def residual_report(f, *args):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        print_saved_residuals(f, *args)
    lines = [sanitize(l) for l in buf.getvalue().splitlines() if l.strip()]
    return {"lines": lines, "parsed": [parse_line(l) for l in lines]}


def same_tree(a, b):
    fa = flax.traverse_util.flatten_dict(a["params"], sep="/")
    fb = flax.traverse_util.flatten_dict(b["params"], sep="/")
    return sorted(fa) == sorted(fb) and all(
        np.array_equal(np.asarray(fa[k]).view(np.uint32), np.asarray(fb[k]).view(np.uint32)) for k in fa)


def make_flax():
    doc = {"generator": generator_info()}
    grid = []
    remat_equal = True
    keep_params = {(0, 3, 8), (42, 17, 65), (7, 1, 1)}
    for seed in [0, 1, 42, 2147483647, 7]:
        for D in (1, 3, 17):
            for F in (1, 8, 65):
                x = mlp_x(D, F)
                model = RematMLP(features=F)
                variables = model.init(jax.random.PRNGKey(seed), x)
                plain = MLP(features=F).init(jax.random.PRNGKey(seed), x)
                remat_equal = remat_equal and same_tree(variables, plain)
                y = model.apply(variables, x).ravel()
                case = {"seed": seed, "D": D, "F": F, "x": f32(x), "output": f32(y)}
                if (seed, D, F) in keep_params:
                    case["params"] = flat_params(variables, data=(seed, D, F) == (0, 3, 8))
                grid.append(case)
    doc["mlp"] = {
        "about": ("RematMLP = nn.remat(MLP, policy=dots_with_no_batch_dims_saveable); "
                  "variables = RematMLP(F).init(PRNGKey(seed), x); output = apply(variables, x).ravel(); "
                  "x = numpy default_rng(1000*D+F).standard_normal(D) as f32; params kept for some cases "
                  "(seed 0, D 3, F 8 with data, others bits only)"),
        "remat_params_equal_plain": bool(remat_equal),
        "cases": grid,
    }

    x = mlp_x(3, 8)
    model = RematMLP(features=8)
    variables = model.init(jax.random.PRNGKey(0), x)
    rep = residual_report(lambda p: jnp.sum(model.apply(p, x) ** 2), variables)
    rep["about"] = ("print_saved_residuals(lambda p: jnp.sum(model.apply(p, x) ** 2), variables), "
                    "seed 0, D 3, F 8, RematMLP")
    doc["mlp_residuals"] = rep

    # blocks
    xb = np.random.default_rng(4).standard_normal((2, 4)).astype(np.float32)
    nets = {}
    for label, rb in (("net", False), ("net_remat", True)):
        m = Net(width=4, depth=3, remat_blocks=rb)
        v = m.init(jax.random.PRNGKey(3), xb)
        nets[label] = v
        doc[label] = {"width": 4, "depth": 3, "seed": 3, "x": f32(xb),
                      "params": flat_params(v), "output": f32(m.apply(v, xb))}
    fa = flax.traverse_util.flatten_dict(nets["net"]["params"], sep="/")
    fb = flax.traverse_util.flatten_dict(nets["net_remat"]["params"], sep="/")
    ren = {k.replace("CheckpointFFN_", "FFN_"): v for k, v in fb.items()}
    doc["net_remat"]["about"] = "Net with nn.remat(FFN) blocks: children are named CheckpointFFN_i"
    doc["net_remat"]["same_values_as_net_after_renaming"] = bool(
        sorted(ren) == sorted(fa) and all(np.array_equal(np.asarray(ren[k]), np.asarray(fa[k])) for k in fa))
    doc["net_remat"]["outputs_equal_net"] = doc["net_remat"]["output"]["bits"] == doc["net"]["output"]["bits"]
    doc["net"]["about"] = ("FFN: LayerNorm -> Dense(4w) -> gelu (tanh) -> Dense(w) -> +x; "
                           "Net: FFN_0..FFN_{depth-1}, Dense_0(10); init PRNGKey(3) on x (2, 4)")

    # activations and LayerNorm
    v = np.array([-6.0, -3.0, -1.5, -1.0, -0.5, -0.1, -1e-3, 0.0, 1e-3, 0.1, 0.5, 1.0, 1.5, 3.0, 6.0, 12.0],
                 dtype=np.float32)
    act = {"x": f32(v)}
    act["gelu_tanh"] = f32(nn.gelu(v, approximate=True))
    act["gelu_erf"] = f32(nn.gelu(v, approximate=False))
    act["tanh"] = f32(jnp.tanh(v))
    act["silu"] = f32(nn.silu(v))
    act["relu"] = f32(nn.relu(v))
    act["about"] = "nn.gelu (approximate=True is Flax's default), jnp.tanh, nn.silu, nn.relu on x (f32)"
    doc["activations"] = act
    xl = np.random.default_rng(5).standard_normal((3, 6)).astype(np.float32) * 3 + 1
    ln = nn.LayerNorm()
    lv = ln.init(jax.random.PRNGKey(0), xl)
    doc["layernorm"] = {
        "about": "nn.LayerNorm() defaults on x (3, 6): scale ones, bias zeros",
        "epsilon": ln.epsilon, "use_fast_variance": ln.use_fast_variance,
        "x": f32(xl), "output": f32(ln.apply(lv, xl)),
    }
    return doc


def main():
    print("jax", jax.__version__, "flax", flax.__version__,
          "partitionable", jax.config.jax_threefry_partitionable)
    write_json("nn_random.json", make_random())
    write_json("nn_flax.json", make_flax())


if __name__ == "__main__":
    main()

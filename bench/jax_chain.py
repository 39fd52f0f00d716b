"""jax_chain.py — the JAX side of bench_elementwise.c: seed 004 sec. 6's chain,

  f(x) = sum(layer^L(x)),  layer(x) = sin(x) + 0.1 * x,  x = ones(N), float64

as jax.jit(jax.grad(f)), L = 200, N = 500; variants none and checkpoint
(each layer jax.checkpoint'ed). Timed as jax_ffn.py times (round robin over
the variants, a sample repeating the call to ~20 ms, medians of wall and of
process CPU time), one JSON object on stdout; its jax_ms_arg (the CPU
medians: on a shared machine time spent descheduled is not the code's, and
bench_elementwise compares its own thread CPU medians) is what
bench_elementwise takes with --jax-ms:

  taskset -c 1 .venv-goldens/bin/python bench/jax_chain.py [--reps 21]
  taskset -c 1 ./build/bench/bench_elementwise --jax-ms none=MS,checkpoint=MS

XLA_FLAGS=--xla_cpu_multi_thread_eigen=false unless XLA_FLAGS is set.
"""
import argparse
import json
import os
import statistics
import sys
import time

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false")
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

jax.config.update("jax_enable_x64", True)


def variants(L):
    def layer(x):
        return jnp.sin(x) + 0.1 * x

    def chain(lay):
        def f(x):
            for _ in range(L):
                x = lay(x)
            return jnp.sum(x)
        return f

    return {"none": jax.jit(jax.grad(chain(layer))),
            "checkpoint": jax.jit(jax.grad(chain(jax.checkpoint(layer))))}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=21)
    ap.add_argument("--layers", type=int, default=200)
    ap.add_argument("--n", type=int, default=500)
    a = ap.parse_args()
    x = jnp.ones((a.n,), jnp.float64)
    v = variants(a.layers)
    inner = {}
    for name, f in v.items():
        for _ in range(2):
            jax.block_until_ready(f(x))
        t0 = time.perf_counter()
        jax.block_until_ready(f(x))
        dt = time.perf_counter() - t0
        inner[name] = max(1, int(0.02 / max(dt, 1e-9)))
    times = {name: [] for name in v}
    cpu = {name: [] for name in v}
    for _ in range(a.reps):
        for name, f in v.items():
            t0, c0 = time.perf_counter(), time.process_time()
            for _ in range(inner[name]):
                r = f(x)
            jax.block_until_ready(r)
            times[name].append(1e3 * (time.perf_counter() - t0) / inner[name])
            cpu[name].append(1e3 * (time.process_time() - c0) / inner[name])
    g = v["none"](x)
    res = {"bench": "jax_chain", "jax": jax.__version__, "xla_flags": os.environ.get("XLA_FLAGS"),
           "layers": a.layers, "n": a.n, "reps": a.reps, "grad_norm": float(jnp.linalg.norm(g)), "variants": []}
    for name in v:
        res["variants"].append({"variant": name, "median_ms": round(statistics.median(times[name]), 4),
                                "min_ms": round(min(times[name]), 4),
                                "cpu_median_ms": round(statistics.median(cpu[name]), 4)})
    res["jax_ms_arg"] = ",".join("%s=%s" % (r["variant"], r["cpu_median_ms"]) for r in res["variants"])
    json.dump(res, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()

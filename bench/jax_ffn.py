"""jax_ffn.py — the JAX/Flax side of bench_ffn.c and bench_mlp.c: the same
networks and gradients as jax.jit(jax.grad(loss)), timed the same way
(round robin over the variants, medians), one JSON object on stdout.

  ffn: h_{l+1} = h_l + Dense(W)(gelu(Dense(4W)(LayerNorm(h_l)))), l < L,
       loss = sum(h_L^2), gradient w.r.t. every parameter (Flax linen FFN as
       remat_nn_ffn); variants none, and nn.remat per block with
       nothing_saveable and dots_with_no_batch_dims_saveable.
  mlp: h_{l+1} = relu(h_l @ w_l), l < D, no bias, loss = sum(h_D^2),
       gradient w.r.t. w_0..w_{D-1} (bench_mlp.c's network and sizes).

Single-threaded, as the C benchmarks are run:

  OPENBLAS_NUM_THREADS=1 taskset -c 1 .venv-goldens/bin/python bench/jax_ffn.py [--reps 5]
  OPENBLAS_NUM_THREADS=1 taskset -c 1 ./build/bench/bench_ffn --reps 5
  OPENBLAS_NUM_THREADS=1 taskset -c 1 ./build/bench/bench_mlp --reps 5

The script sets XLA_FLAGS=--xla_cpu_multi_thread_eigen=false (before jax is
imported) unless XLA_FLAGS is already set; taskset keeps XLA's own thread
pool on one core. Times are wall clock of a blocked call after two untimed
runs (compilation excluded), and the process's CPU time (cpu_median_ms: on a
shared machine the time descheduled is not the code's); jax_ms_arg holds the
FFN rows' CPU medians in the form bench_ffn --jax-ms takes. temp_bytes is XLA's memory_analysis() of the
compiled gradient: its scratch buffers, the counterpart of remat's arena (neither counts the outputs, and both
keep activations in the weight-gradient outputs until those are written); temp_bytes_arg holds the FFN rows'
in the form bench_ffn --xla-temp-bytes takes (bench_mlp --xla-temp-bytes takes mlp/none's).
The venv .venv-goldens (at the repository root, git-ignored) has jax 0.10.2 and flax 0.12.8.
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
import flax.linen as nn  # noqa: E402


class FFN(nn.Module):
    width: int
    hidden: int

    @nn.compact
    def __call__(self, x):
        h = nn.Dense(self.hidden)(nn.LayerNorm()(x))
        return x + nn.Dense(self.width)(nn.gelu(h))


class Net(nn.Module):
    layers: int
    width: int
    policy: object = None  # None: no remat; else nn.remat(FFN, policy=...)
    remat: bool = False

    @nn.compact
    def __call__(self, x):
        block = nn.remat(FFN, policy=self.policy) if self.remat else FFN
        for _ in range(self.layers):
            x = block(self.width, 4 * self.width)(x)
        return x


def ffn_variants(L, W, B):
    x = jax.random.uniform(jax.random.PRNGKey(42), (B, W), jnp.float32, -1.0, 1.0)
    params = Net(L, W).init(jax.random.PRNGKey(0), x)
    out = {}
    pols = {"none": (False, None),
            "nothing_saveable": (True, jax.checkpoint_policies.nothing_saveable),
            "dots_with_no_batch_dims_saveable": (True, jax.checkpoint_policies.dots_with_no_batch_dims_saveable)}
    for name, (remat, pol) in pols.items():
        net = Net(L, W, policy=pol, remat=remat)
        # nn.remat renames FFN_k to CheckpointFFN_k; same values, other names
        p = params if not remat else {
            "params": {k.replace("FFN", "CheckpointFFN"): v for k, v in params["params"].items()}}

        def loss(p, x, net=net):
            return jnp.sum(net.apply(p, x) ** 2)

        out["ffn/" + name] = (jax.jit(jax.grad(loss)), (p, x))
    return out


def mlp_variant(D, W, B):
    k = jax.random.split(jax.random.PRNGKey(1), D + 1)
    x = jax.random.uniform(k[0], (B, W), jnp.float32, -1.0, 1.0)
    s = (6.0 / W) ** 0.5
    ws = [jax.random.uniform(k[l + 1], (W, W), jnp.float32, -s, s) for l in range(D)]

    def loss(ws, x):
        h = x
        for w in ws:
            h = jax.nn.relu(h @ w)
        return jnp.sum(h ** 2)

    return {"mlp/none": (jax.jit(jax.grad(loss)), (ws, x))}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--only", choices=["ffn", "mlp"])
    ap.add_argument("--layers", type=int, default=32)
    ap.add_argument("--width", type=int, default=512)
    ap.add_argument("--batch", type=int, default=256)
    a = ap.parse_args()
    ffn = (4, 16, 8) if a.smoke else (a.layers, a.width, a.batch)
    mlp = (2, 16, 8) if a.smoke else (16, 512, 256)  # bench_mlp.c's defaults
    v = {}
    if a.only != "mlp":
        v.update(ffn_variants(*ffn))
    if a.only != "ffn":
        v.update(mlp_variant(*mlp))
    temp = {}
    for name, (f, args) in v.items():
        try:
            ma = f.lower(*args).compile().memory_analysis()
            temp[name] = int(ma.temp_size_in_bytes)
        except Exception:  # memory_analysis is best effort on CPU
            temp[name] = None
        for _ in range(2):
            jax.block_until_ready(f(*args))
    times = {name: [] for name in v}
    cpu = {name: [] for name in v}
    for _ in range(a.reps):
        for name, (f, args) in v.items():
            t0, c0 = time.perf_counter(), time.process_time()
            jax.block_until_ready(f(*args))
            times[name].append(1e3 * (time.perf_counter() - t0))
            cpu[name].append(1e3 * (time.process_time() - c0))
    res = {"bench": "jax_ffn", "jax": jax.__version__, "xla_flags": os.environ.get("XLA_FLAGS"),
           "reps": a.reps, "ffn": {"layers": ffn[0], "width": ffn[1], "batch": ffn[2]},
           "mlp": {"layers": mlp[0], "width": mlp[1], "batch": mlp[2]}, "variants": []}
    for name in v:
        res["variants"].append({"variant": name, "median_ms": round(statistics.median(times[name]), 2),
                                "min_ms": round(min(times[name]), 2), "temp_bytes": temp[name],
                                "cpu_median_ms": round(statistics.median(cpu[name]), 2)})
    # bench_ffn --jax-ms: the CPU medians of the FFN rows, by bench_ffn's variant names
    res["jax_ms_arg"] = ",".join("%s=%s" % (r["variant"][4:], r["cpu_median_ms"])
                                 for r in res["variants"] if r["variant"].startswith("ffn/"))
    # bench_ffn --xla-temp-bytes: XLA's temp bytes of the FFN rows (bench_mlp takes mlp/none's alone)
    res["temp_bytes_arg"] = ",".join("%s=%s" % (r["variant"][4:], r["temp_bytes"])
                                     for r in res["variants"] if r["variant"].startswith("ffn/") and r["temp_bytes"])
    json.dump(res, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()

"""vs_peers.py — remat from Python against remat from C and against scipy and
JAX on two problems, measured interleaved in one process; one JSON object on
stdout.

  pinene_fit: the five rate constants of alpha-pinene isomerization
      (bench/battery/pinene.mech, 40 measurements in pinene.csv; start: the
      declared values, box [0, 1]) by least squares, each tool integrating
      at rtol 1e-6, atol 1e-9 and stopping at xtol = gtol (= ftol) 1e-12:
    remat_python  remat.fit(m, [csv]): lm, adaptive Tsit5, forward-mode
                  Jacobian, then statistics, residuals, fitted profiles
    remat_c       the same calls from C (c_peers.c: what the binding does)
    remat_cli     `remat pfr fit --json`, a process per fit (its start
                  included; only with --cli, tools/remat in --build)
    scipy_fd      scipy.optimize.least_squares (trf, bounds) on residuals
                  from scipy.integrate.solve_ivp (RK45 = Dormand-Prince),
                  Jacobian by finite differences (least_squares' 2-point)
    scipy_sens    the same with the Jacobian from the forward sensitivity
                  equations integrated alongside (30 states)
    scipy_jax     least_squares on jax.jit residuals from
                  jax.experimental.ode.odeint (Dormand-Prince) and the
                  Jacobian from jax.jacrev through it (its adjoint); JAX's
                  compilation is excluded and reported separately
  seed_reactor_gradient: seed 004's plug-flow reactor, A -> B -> C with
      k = (1, 0.5), 1000 explicit Euler steps over L = 10, the value and
      gradient of -C_B(L) with respect to k, per call:
    remat_python  remat.Reactor(...).objective(k) (binomial:10 snapshots)
    remat_c       remat_pfr_objective from C (c_peers.c)
    jax           jax.jit(jax.value_and_grad(f)), f the seed's lax.scan
    jax_checkpoint  the same with jax.checkpoint on the step (the seed's
                  use_cp variant: recomputation as remat's schedule does)
      scipy has no counterpart: it has no reverse mode and no fixed-step
      Euler; a gradient from solve_ivp would be another problem.

Every repetition runs every variant once (fits) or a batch of --calls calls
(reactor), in an order shuffled per repetition (seeded; a rotation would
keep each tool behind the same one, whose cache traces it inherits: it put
remat_python behind JAX every time and doubled its overhead); the figures
are medians over --reps repetitions of the wall time (perf_counter; C: CLOCK_MONOTONIC) and
of the process's CPU time (process_time; C: CLOCK_PROCESS_CPUTIME_ID; the
CLI: its children's rusage), which other processes on a busy machine
inflate less; ratios are medians over remat_c's. python_overhead_us is
remat_python's median minus remat_c's (and _cpu_us the same in CPU time). Before timing, the results are
compared and the script exits 1 (JSON with "ok": false, the reason on
stderr) if they disagree: remat Python, C and CLI bit for bit (one engine);
the peers' fitted constants within 1e-4 relative and SSE within 1e-5
relative of remat's (the integrators differ: Tsit5 and Dormand-Prince at
rtol 1e-6 land up to 1e-5 apart; the standard errors are 1e-2 to 0.2 of
the constants), JAX's reactor value and gradient within 1e-12 relative (the
same Euler arithmetic, XLA's fused order).

Single core, as bench/jax_ffn.py: the script pins itself to --cpu (default
1) and sets OPENBLAS_NUM_THREADS=1, REMAT_NUM_THREADS=1 and
XLA_FLAGS=--xla_cpu_multi_thread_eigen=false before numpy and jax load
(unless already set). It also sets REMAT_JIT=always (unless set): under the
default, auto, remat decides per loop body whether compiling pays
(docs/design-notes.md, "Compiling only where it pays"), so a fresh process
runs its first fits interpreted until the body's account or the disk cache
says otherwise, and the figures would depend on the cache's state (one run
here: C fits at 20 ms until the 17th, which compiled, 240 ms, then 11 ms;
with the cache warm, 4.5 ms from the first). With always, the untimed warm
run compiles (or loads from the cache) and every timed run is the steady
state; REMAT_JIT=auto measures the default instead. Interpreted and compiled
loops give the same bits. From the repository root, after building the C
library (meson setup build --buildtype=release && ninja -C build):

  python3 -m venv .venv-peers
  .venv-peers/bin/pip install ./python scipy "jax[cpu]"
  OPENBLAS_NUM_THREADS=1 taskset -c 1 .venv-peers/bin/python python/bench/vs_peers.py [--reps 21] [--cli]

The test suite never needs scipy or JAX: this script is a benchmark only.
"""
import argparse
import json
import os
import platform
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("REMAT_NUM_THREADS", "1")
os.environ.setdefault("REMAT_JIT", "always")
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false")
os.environ.setdefault("JAX_PLATFORMS", "cpu")

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MECH = os.path.join(ROOT, "bench", "battery", "pinene.mech")
CSV = os.path.join(ROOT, "bench", "battery", "pinene.csv")
RTOL, ATOL, STOP = 1e-6, 1e-9, 1e-12
FIT_PARAM_RTOL, FIT_SSE_RTOL, GRAD_RTOL = 1e-4, 1e-5, 1e-12


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=21, help="repetitions (medians over them)")
    ap.add_argument("--calls", type=int, default=200, help="reactor calls per repetition and variant")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="meson build of the C library")
    ap.add_argument("--cpu", type=int, default=1, help="the core to pin to (-1: no pinning)")
    ap.add_argument("--cli", action="store_true", help="also time the remat tool, a process per fit")
    return ap.parse_args()


ARGS = parse_args()
if ARGS.cpu >= 0:
    os.sched_setaffinity(0, {ARGS.cpu})  # before numpy/jax start their threads

import ctypes  # noqa: E402

import numpy as np  # noqa: E402
import scipy  # noqa: E402
from scipy.integrate import solve_ivp  # noqa: E402
from scipy.optimize import least_squares  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.experimental.ode import odeint  # noqa: E402

import remat  # noqa: E402

jax.config.update("jax_enable_x64", True)


class Disagree(Exception):
    pass


def timed(fn, n=1):
    """(wall s, CPU s) per call of n calls of fn, and fn's last result."""
    c0, t0 = time.process_time(), time.perf_counter()
    for _ in range(n):
        r = fn()
    return ((time.perf_counter() - t0) / n, (time.process_time() - c0) / n), r


# ---------------------------------------------------------------- C side
def load_c(build):
    lib = os.path.join(build, "libremat.so")
    if not os.path.exists(lib):
        sys.exit(f"vs_peers.py: {lib} not found: build the C library first (meson setup build && ninja -C build)")
    out = os.path.join(tempfile.mkdtemp(prefix="vs-peers-"), "c_peers.so")
    src = os.path.join(ROOT, "python", "bench", "c_peers.c")
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-I" + os.path.join(ROOT, "include"), src, "-L" + build,
                    "-lremat", "-Wl,-rpath," + build, "-o", out], check=True)
    c = ctypes.CDLL(out)
    dp, ip = ctypes.POINTER(ctypes.c_double), ctypes.POINTER(ctypes.c_int)
    c.peers_fit_setup.argtypes = [ctypes.c_char_p]
    c.peers_fit.argtypes = [ctypes.c_char_p, dp, dp, dp, ip]
    c.peers_reactor_setup.argtypes = []
    c.peers_reactor.argtypes = [dp, ctypes.c_int, dp, dp, dp]
    c.remat_last_error.restype = ctypes.c_char_p
    for st in (c.peers_fit_setup(MECH.encode()), c.peers_reactor_setup()):
        if st:
            sys.exit(f"vs_peers.py: C setup failed: {c.remat_last_error().decode()}")
    return c


def c_check(c, st):
    if st:
        raise RuntimeError(f"remat (C): {c.remat_last_error().decode()}")


# ---------------------------------------------------------------- pinene
def pinene_problem():
    d = np.loadtxt(CSV, delimiter=",", skiprows=1)
    m = remat.Mechanism.from_file(MECH)
    x0 = np.array([m.params[n].value for n in m.param_names])
    lo = np.array([m.params[n].lo for n in m.param_names])
    hi = np.array([m.params[n].hi for n in m.param_names])
    return m, d[:, 0], d[:, 1:], x0, (lo, hi)


def pinene_matrix(k):
    """dy/dt = A(k) y for y1 -> y2 (k1), y1 -> y3 (k2), y3 -> y4 (k3), y3 <=> y5 (k4, k5)."""
    k1, k2, k3, k4, k5 = k
    return np.array([[-(k1 + k2), 0, 0, 0, 0], [k1, 0, 0, 0, 0], [k2, 0, -(k3 + k4), 0, k5], [0, 0, k3, 0, 0],
                     [0, 0, k4, 0, -k5]])


# dA/dk_j, for the sensitivity equations dS/dt = A S + (dA/dk_j) y
DA = np.zeros((5, 5, 5))
for j, entries in enumerate([((0, 0, -1), (1, 0, 1)), ((0, 0, -1), (2, 0, 1)), ((2, 2, -1), (3, 2, 1)),
                             ((2, 2, -1), (4, 2, 1)), ((2, 4, 1), (4, 4, -1))]):
    for r, col, v in entries:
        DA[j, r, col] = v


def scipy_fits(t, Y, x0, bounds):
    tm, Ym, y0 = t[1:], Y[1:], Y[0]  # the t = 0 row is the charge, not a measurement

    def residuals(k):
        A = pinene_matrix(k)
        s = solve_ivp(lambda _, y: A @ y, (0.0, tm[-1]), y0, t_eval=tm, rtol=RTOL, atol=ATOL)
        return (s.y.T - Ym).ravel()

    def with_sens(k):
        A = pinene_matrix(k)

        def f(_, z):
            y, S = z[:5], z[5:].reshape(5, 5)  # S[:, j] = dy/dk_j
            return np.concatenate([A @ y, (A @ S + np.einsum("jab,b->aj", DA, y)).ravel()])
        s = solve_ivp(f, (0.0, tm[-1]), np.concatenate([y0, np.zeros(25)]), t_eval=tm, rtol=RTOL, atol=ATOL)
        return (s.y[:5].T - Ym).ravel(), s.y[5:].T.reshape(len(tm) * 5, 5)

    def fit_fd():
        return least_squares(residuals, x0, bounds=bounds, xtol=STOP, ftol=STOP, gtol=STOP)

    def fit_sens():
        memo = {}

        def get(k):
            if memo.get("k") is None or not np.array_equal(memo["k"], k):
                memo["k"], memo["rj"] = k.copy(), with_sens(k)
            return memo["rj"]
        return least_squares(lambda k: get(k)[0], x0, jac=lambda k: get(k)[1], bounds=bounds, xtol=STOP,
                             ftol=STOP, gtol=STOP)

    def rhs(y, _, k):
        k1, k2, k3, k4, k5 = k[0], k[1], k[2], k[3], k[4]
        return jnp.stack([-(k1 + k2) * y[0], k1 * y[0], k2 * y[0] - (k3 + k4) * y[2] + k5 * y[4], k3 * y[2],
                          k4 * y[2] - k5 * y[4]])

    tj, y0j = jnp.asarray(t), jnp.asarray(y0)

    def jres(k):
        return (odeint(rhs, y0j, tj, k, rtol=RTOL, atol=ATOL)[1:] - Ym).ravel()
    jr, jj = jax.jit(jres), jax.jit(jax.jacrev(jres))
    t0 = time.perf_counter()
    jr(x0).block_until_ready()
    jj(x0).block_until_ready()
    compile_s = time.perf_counter() - t0

    def fit_jax():
        return least_squares(lambda k: np.asarray(jr(k)), x0, jac=lambda k: np.asarray(jj(k)), bounds=bounds,
                             xtol=STOP, ftol=STOP, gtol=STOP)
    return {"scipy_fd": fit_fd, "scipy_sens": fit_sens, "scipy_jax": fit_jax}, compile_s


def pinene_variants(c, build, with_cli):
    m, t, Y, x0, bounds = pinene_problem()
    v = {}

    def py():
        s, r = timed(lambda: remat.fit(m, [CSV]))
        return s, {"params": r.params.tolist(), "sse": r.objective, "iterations": r.iterations}
    v["remat_python"] = py

    def cfit():
        s, sse, it, p = (ctypes.c_double * 2)(), ctypes.c_double(), ctypes.c_int(), (ctypes.c_double * 5)()
        c_check(c, c.peers_fit(CSV.encode(), s, p, ctypes.byref(sse), ctypes.byref(it)))
        return tuple(s), {"params": list(p), "sse": sse.value, "iterations": it.value}
    v["remat_c"] = cfit

    if with_cli:
        tool = os.path.join(build, "tools", "remat")
        if not os.access(tool, os.X_OK):
            sys.exit(f"vs_peers.py: --cli: no remat tool at {tool} (ninja -C build)")

        def child_cpu():
            u = resource.getrusage(resource.RUSAGE_CHILDREN)
            return u.ru_utime + u.ru_stime

        def cli():
            c0, t0 = child_cpu(), time.perf_counter()
            out = subprocess.run([tool, "pfr", "fit", "--mechanism", MECH, "--data", CSV, "--json"], check=True,
                                 capture_output=True, text=True).stdout
            s = (time.perf_counter() - t0, child_cpu() - c0)
            j = json.loads(out)
            return s, {"params": [j["params"][n] for n in m.param_names], "sse": j["objective"],
                       "iterations": j["iterations"]}
        v["remat_cli"] = cli

    fits, compile_s = scipy_fits(t, Y, x0, bounds)
    for name, f in fits.items():
        def run(f=f):
            s, r = timed(f)
            return s, {"params": r.x.tolist(), "sse": 2 * r.cost, "iterations": int(r.nfev), "njev": int(r.njev)}
        v[name] = run
    return v, {"jax_compile_s": compile_s, "start": x0.tolist(), "names": list(m.param_names)}


def check_fits(res):
    ref = res["remat_python"]
    for name, r in res.items():
        if name in ("remat_c", "remat_cli"):
            if r["params"] != ref["params"] or r["sse"] != ref["sse"]:
                raise Disagree(f"pinene: {name} {r} differs from remat_python {ref} (must be bit for bit)")
        else:
            dp = max(abs(a - b) / abs(b) for a, b in zip(r["params"], ref["params"]))
            ds = abs(r["sse"] - ref["sse"]) / ref["sse"]
            r["max_param_rel_diff"], r["sse_rel_diff"] = dp, ds
            if not (dp <= FIT_PARAM_RTOL and ds <= FIT_SSE_RTOL):
                raise Disagree(f"pinene: {name} params {r['params']} SSE {r['sse']} vs remat {ref['params']} "
                               f"SSE {ref['sse']}: {dp:.2e} / {ds:.2e} relative, above "
                               f"{FIT_PARAM_RTOL:g} / {FIT_SSE_RTOL:g}")


# ---------------------------------------------------------------- seed reactor
L, STEPS, K = 10.0, 1000, np.array([1.0, 0.5])


def seed_objective(p, use_cp):
    """Seed 004's code (tools/goldens/gen_goldens.py, pfr_euler)."""
    k1, k2, dt = p[0], p[1], L / STEPS

    def step(C, _):
        r1, r2 = k1 * C[0], k2 * C[1]
        C_new = C + dt * jnp.array([-r1, r1 - r2, r2])
        return C_new, C_new
    if use_cp:
        step = jax.checkpoint(step)
    final, _ = jax.lax.scan(step, jnp.array([1.0, 0.0, 0.0]), None, length=STEPS)
    return -final[1]


def reactor_variants(c, calls):
    m = remat.Mechanism.from_string("param k1 = 1\nparam k2 = 0.5\nA -> B : k1\nB -> C : k2\n")
    r = remat.Reactor(m, {"A": 1.0}, steps=STEPS, maximize="B")
    v = {}

    def py():
        s, (val, g) = timed(lambda: r.objective(K), calls)
        return s, {"value": float(val), "gradient": g.tolist()}
    v["remat_python"] = py

    kc = (ctypes.c_double * 2)(*K)

    def cr():
        s, val, g = (ctypes.c_double * 2)(), ctypes.c_double(), (ctypes.c_double * 2)()
        c_check(c, c.peers_reactor(kc, calls, s, ctypes.byref(val), g))
        return (s[0] / calls, s[1] / calls), {"value": val.value, "gradient": list(g)}
    v["remat_c"] = cr

    compile_s = {}
    for name, cp in (("jax", False), ("jax_checkpoint", True)):
        f = jax.jit(jax.value_and_grad(lambda p, cp=cp: seed_objective(p, cp)))
        kj = jnp.asarray(K)
        t0 = time.perf_counter()
        jax.block_until_ready(f(kj))
        compile_s[name] = time.perf_counter() - t0

        def jr(f=f, kj=kj):
            s, (val, g) = timed(lambda: jax.block_until_ready(f(kj)), calls)
            return s, {"value": float(val), "gradient": np.asarray(g).tolist()}
        v[name] = jr
    return v, {"jax_compile_s": compile_s, "calls_per_rep": calls}


def check_reactor(res):
    ref = res["remat_python"]
    for name, r in res.items():
        if name == "remat_c":
            if r != ref:
                raise Disagree(f"reactor: remat_c {r} differs from remat_python {ref} (must be bit for bit)")
        elif name != "remat_python":
            a = np.array([r["value"], *r["gradient"]])
            b = np.array([ref["value"], *ref["gradient"]])
            d = float(np.max(np.abs(a - b) / np.abs(b)))
            r["max_rel_diff"] = d
            if not d <= GRAD_RTOL:
                raise Disagree(f"reactor: {name} {r} vs remat {ref}: {d:.2e} relative, above {GRAD_RTOL:g}")


# ---------------------------------------------------------------- timing
def interleaved(variants, reps, check):
    names = list(variants)
    first = {n: variants[n]()[1] for n in names}  # warm: JIT caches, allocations
    check(first)
    wall, cpu = {n: [] for n in names}, {n: [] for n in names}
    for rep in range(reps):
        order = random.Random(rep).sample(names, len(names))  # a rotation would keep each tool's neighbour
        for n in order:
            s, out = variants[n]()
            key = "params" if "params" in out else "gradient"
            if out[key] != first[n][key]:
                raise Disagree(f"{n}: a repetition gave {out}, the first run {first[n]}")
            wall[n].append(s[0])
            cpu[n].append(s[1])
    mw = {n: statistics.median(wall[n]) for n in names}
    mc = {n: statistics.median(cpu[n]) for n in names}
    tools = {n: {"median_s": mw[n], "cpu_median_s": mc[n], "min_s": min(wall[n]),
                 "ratio_to_remat_c": mw[n] / mw["remat_c"], "cpu_ratio_to_remat_c": mc[n] / mc["remat_c"],
                 "wall_s": wall[n], "cpu_s": cpu[n], **first[n]} for n in names}
    return {"tools": tools, "python_overhead_us": (mw["remat_python"] - mw["remat_c"]) * 1e6,
            "python_overhead_cpu_us": (mc["remat_python"] - mc["remat_c"]) * 1e6}


def main():
    c = load_c(ARGS.build)
    out = {"ok": False, "command": " ".join([os.path.basename(sys.executable)] + sys.argv),
           "machine": {"cpu": platform.processor() or platform.machine(), "pinned_cpu": ARGS.cpu,
                       "affinity": sorted(os.sched_getaffinity(0)), "loadavg": os.getloadavg()},
           "versions": {"python": platform.python_version(), "numpy": np.__version__, "scipy": scipy.__version__,
                        "jax": jax.__version__, "remat": getattr(remat, "__version__", "?")},
           "reps": ARGS.reps, "remat_jit": os.environ["REMAT_JIT"],
           "tolerances": {"integration_rtol": RTOL, "integration_atol": ATOL, "stop_xtol_gtol_ftol": STOP,
                          "fit_param_rel": FIT_PARAM_RTOL, "fit_sse_rel": FIT_SSE_RTOL, "gradient_rel": GRAD_RTOL,
                          "remat_python_vs_c": "bitwise"}}
    try:
        v, info = pinene_variants(c, ARGS.build, ARGS.cli)
        out["pinene_fit"] = {**info, **interleaved(v, ARGS.reps, check_fits)}
        v, info = reactor_variants(c, ARGS.calls)
        out["seed_reactor_gradient"] = {**info, **interleaved(v, ARGS.reps, check_reactor)}
        out["ok"] = True
    except Disagree as e:
        out["error"] = str(e)
        print(json.dumps(out, indent=1))
        print(f"vs_peers.py: results disagree: {e}", file=sys.stderr)
        sys.exit(1)
    finally:
        c.peers_teardown()
    out["machine"]["loadavg_after"] = os.getloadavg()
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()

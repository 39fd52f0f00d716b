"""Per-call overhead of the binding: wall time of a call from Python minus
the time remat_run itself reports (remat_stats.seconds), for a program whose
work is tiny (overhead-bound) and one whose work is not; and the seed
reactor's gradient (remat.simulate, 1000 Euler steps) per call.

    python python/bench/overhead.py        (after pip install ./python)
"""

import statistics
import time

import numpy as np

import remat


def per_call(fn, n):
    fn()  # warm
    t = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        t.append(time.perf_counter() - t0)
    return statistics.median(t)


def program(size):
    f = remat.Fn("f")
    x = f.arg("x", (size,))
    f.output(remat.sum(remat.sin(x) * 2.0))
    return remat.compile(remat.value_and_grad(f, 0)), np.ones(size)


def main():
    for size in (1, 100000):
        p, x = program(size)
        wall = per_call(lambda: p(x), 2000 if size == 1 else 200)
        inner = statistics.median(p.run(x)[1]["seconds"] for _ in range(200))
        print(f"value_and_grad(sum(2 sin x)), x f64[{size}]: {wall * 1e6:9.1f} us per call from Python, "
              f"remat_run {inner * 1e6:9.1f} us, overhead {(wall - inner) * 1e6:6.1f} us")
    m = remat.Mechanism.from_string("param k1 = 1\nparam k2 = 0.5\nA -> B : k1\nB -> C : k2\n")
    wall = per_call(lambda: remat.simulate(m, {"A": 1.0}, steps=1000, maximize="B", profile=False), 50)
    print(f"seed reactor outlet + gradient (1000 Euler steps, remat.simulate): {wall * 1e6:9.1f} us per call "
          "(a new reactor each call: options checked, programs compiled)")
    r = remat.Reactor(m, {"A": 1.0}, steps=1000, maximize="B")
    k = np.array([1.0, 0.5])
    wall = per_call(lambda: r.objective(k), 500)
    print(f"seed reactor gradient, remat.Reactor.objective (compiled once):       {wall * 1e6:9.1f} us per call")


if __name__ == "__main__":
    main()

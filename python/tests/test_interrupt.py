"""Long runs release the GIL, and Ctrl-C stops a fit at its next iteration:
SIGINT sent from another thread while the fit runs raises KeyboardInterrupt
in the caller, with the best point reached as its .result."""

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import remat
from conftest import VDV

V = remat.Mechanism.from_file(VDV / "van_de_vusse.mech")
DATA = [VDV / "feed_5.csv"]
# adam at a tiny learning rate with 2000 rk4 steps per data interval: it
# never converges, and its 5000 iterations take about 20 s uninterrupted
LONG = dict(steps=2000, optimizer="adam", lr=1e-4, max_iters=5000, statistics=False)


def test_sigint_stops_fit_at_next_iteration():
    # Another thread sends the signal while the fit is paused in its
    # callback at iteration 1, so that the time it takes is the fit's. (It
    # once had to miss the JIT compiles too: libgccjit's driver's SIGINT
    # handler ended the process, rc 130, until libgccjit ran gcc's driver
    # as a process of its own, src/backend/cpu/jit_tmp.h; the test below and
    # tests/test_jit_cache.c's sigint_from_a_thread case cover that.) A fixed
    # 0.5 s delay also raced the first compile on a loaded machine.
    iterating, sent_ev = threading.Event(), threading.Event()
    sent = []

    def interrupt():
        iterating.wait(60)
        sent.append(time.monotonic())
        os.kill(os.getpid(), signal.SIGINT)
        sent_ev.set()

    def cb(p):
        if p["iteration"] == 1:
            iterating.set()
            sent_ev.wait(60)

    threading.Thread(target=interrupt, daemon=True).start()
    with pytest.raises(KeyboardInterrupt) as e:
        remat.fit(V, DATA, callback=cb, **LONG)
    assert sent and time.monotonic() - sent[0] < 5.0
    res = e.value.result
    assert isinstance(res, remat.FitResult) and not res.converged
    assert 0 < res.iterations < 1000
    assert res.history_params.shape == (res.iterations + 1, 3)


def test_callback_exception_propagates_with_result():
    def cb(p):
        if p["iteration"] == 3:
            raise RuntimeError("enough")

    with pytest.raises(RuntimeError, match="enough") as e:
        remat.fit(V, DATA, steps=20, callback=cb)
    assert e.value.result.iterations == 3


def test_fit_releases_the_gil():
    count = [0]
    done = threading.Event()

    def spin():
        while not done.is_set():
            count[0] += 1

    th = threading.Thread(target=spin)
    th.start()
    try:
        before = count[0]
        remat.fit(V, DATA, steps=2000, optimizer="adam", lr=1e-4, max_iters=60, statistics=False)  # ~0.2 s
        during = count[0] - before
    finally:
        done.set()
        th.join()
    # holding the GIL, the fit would let the thread run only at switch intervals (5 ms)
    assert during > 100000


def test_simulate_from_two_threads():
    m = remat.Mechanism.from_string("param k1 = 1\nparam k2 = 0.5\nA -> B : k1\nB -> C : k2\n")
    results = []

    def run():
        results.append(remat.simulate(m, {"A": 1.0}, steps=200000, maximize="B", profile=False).outlet)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(results) == 2 and results[0].tolist() == results[1].tolist()


def test_sigint_during_jit_compiles_reaches_the_handler(tmp_path):
    # A thread sends SIGINT again and again while the fit's loops compile
    # (REMAT_JIT=always, an empty cache): the program's handler runs each
    # time and the fit ends normally. gcc's driver, once run inside
    # libgccjit, had its own handler in place while as and ld ran, which
    # ended the whole process (rc -2) when another thread took the signal. In a child process, so
    # that such an ending cannot take pytest down.
    script = textwrap.dedent(f"""
        import os, signal, threading, time
        import remat
        seen = [0]
        signal.signal(signal.SIGINT, lambda s, f: seen.__setitem__(0, seen[0] + 1))
        stop = threading.Event()

        def send():
            while not stop.is_set():
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.0005)

        t = threading.Thread(target=send, daemon=True)
        t.start()
        V = remat.Mechanism.from_file({str(VDV / "van_de_vusse.mech")!r})
        res = remat.fit(V, [{str(DATA[0])!r}], steps=50, max_iters=3, statistics=False)
        stop.set()
        t.join()
        print("fit", res.iterations, "signals", seen[0])
    """)
    cache, tmp = tmp_path / "cache", tmp_path / "tmp"
    cache.mkdir(mode=0o700)
    tmp.mkdir()
    env = dict(os.environ, REMAT_JIT="always", REMAT_CACHE_DIR=str(cache), TMPDIR=str(tmp))
    env.pop("REMAT_NO_JIT", None)
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, (out.returncode, out.stderr[-2000:])
    assert out.stdout.startswith("fit ") and int(out.stdout.split()[-1]) > 0
    assert any(p.name.startswith("lanes-") for p in cache.iterdir())  # it did compile
    assert not [p.name for p in cache.iterdir() if p.name.startswith(".")]
    assert not [p.name for p in tmp.iterdir() if p.name.startswith("libgccjit-")]

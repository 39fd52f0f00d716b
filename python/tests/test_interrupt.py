"""Long runs release the GIL, and Ctrl-C stops a fit at its next iteration:
SIGINT sent from another thread while the fit runs raises KeyboardInterrupt
in the caller, with the best point reached as its .result."""

import os
import signal
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
    # callback at iteration 1, so that it cannot land inside a JIT compile:
    # there, libgccjit's driver has its own SIGINT handler, which kills the
    # process when another thread takes a process-directed signal (seen in
    # CI as rc 130; a known bug, see the closing note of this stop). A fixed
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

"""The graph builder: jax.numpy/lax names, transforms and compiled programs
on NumPy arrays. Gradients are checked against central differences in f64;
bitwise assertions name their contract (docs/DESIGN.md, section 5)."""

import numpy as np
import pytest

import remat

RNG = np.random.default_rng(7)


def model():
    """loss(x (3, 4), w (4, 5), b (5,)) with most ops of the builder."""
    f = remat.Fn("model")
    x = f.arg("x", (3, 4))
    w = f.arg("w", (4, 5))
    b = f.arg("b", (5,))
    h = remat.tanh(x @ w + b)                                    # matmul, broadcasting add
    g = remat.dot_general(h, h, (((0,), (0,)), ((), ())))        # h^T h: (5, 5)
    s = remat.sum(remat.exp(-remat.square(g) / 10.0), axis=1)    # (5,)
    t = remat.concatenate([s, remat.reshape(b, (5,)) ** 2], 0)  # (10,)
    u = remat.where(t > 0.5, remat.sin(t), remat.sqrt(t * t + 1.0))
    v = remat.max(remat.transpose(remat.reshape(h, (5, 3))), axis=0) / (1.0 + remat.sum(u))
    f.output(remat.sum(v * 2.0) + remat.sum(remat.slice(u, (2,), (8,), (2,))) + remat.sum(x ** 3) * 0.01)
    return f


def inputs():
    return [RNG.standard_normal((3, 4)), RNG.standard_normal((4, 5)) * 0.5, RNG.standard_normal(5)]


def central(fwd, args, i, h=1e-6):
    g = np.zeros_like(args[i])
    for k in np.ndindex(args[i].shape):
        p = [a.copy() for a in args]
        m = [a.copy() for a in args]
        p[i][k] += h
        m[i][k] -= h
        g[k] = (fwd(*p) - fwd(*m)) / (2 * h)
    return g


def test_grad_against_central_differences():
    f = model()
    fwd = remat.compile(f)
    args = inputs()
    grads = remat.compile(remat.grad(f, argnums=(0, 1, 2)))(*args)
    for i, g in enumerate(grads):
        assert g.shape == args[i].shape and g.dtype == np.float64
        np.testing.assert_allclose(g, central(fwd, args, i), rtol=1e-6, atol=1e-8)


def test_log1p_expm1_logistic():
    """lax.log1p, lax.expm1 and lax.logistic (jax.nn.sigmoid) by their names: values and gradients."""
    f = remat.Fn("l1p")
    x = f.arg("x", (4,))
    f.output(remat.sum(remat.log1p(x) + remat.expm1(x) * 0.5 + remat.sigmoid(x * 3.0)))
    assert remat.logistic is remat.sigmoid
    x0 = np.array([1e-20, -0.5, 0.3, 2.0])
    y = remat.compile(f)(x0)
    want = np.sum(np.log1p(x0) + np.expm1(x0) * 0.5 + 1.0 / (1.0 + np.exp(-3.0 * x0)))
    np.testing.assert_allclose(y, want, rtol=1e-14)
    g = remat.compile(remat.grad(f))(x0)
    g = g[0] if isinstance(g, (tuple, list)) else g
    s = 1.0 / (1.0 + np.exp(-3.0 * x0))
    np.testing.assert_allclose(g, 1.0 / (1.0 + x0) + np.exp(x0) * 0.5 + 3.0 * s * (1.0 - s), rtol=1e-13)


def test_erf_inv():
    """lax.erf_inv: erf of it gives y back; its gradient is sqrt(pi)/2 exp(erf_inv(y)^2)."""
    import math
    f = remat.Fn("erf_inv")
    x = f.arg("x", (4,))
    f.output(remat.sum(remat.erf_inv(x)))
    y0 = np.array([-0.9, -0.25, 1e-12, 0.6])
    fwd = remat.Fn("erf_inv_v")
    xv = fwd.arg("x", (4,))
    fwd.output(remat.erf_inv(xv))
    v = remat.compile(fwd)(y0)
    np.testing.assert_allclose([math.erf(t) for t in v], y0, rtol=1e-15)
    g = remat.compile(remat.grad(f))(y0)
    g = g[0] if isinstance(g, (tuple, list)) else g
    np.testing.assert_allclose(g, math.sqrt(math.pi) / 2 * np.exp(v * v), rtol=1e-14)


def test_value_and_grad_and_jvp():
    f = model()
    args = inputs()
    value = remat.compile(f)(*args)
    vg = remat.compile(remat.value_and_grad(f, argnums=1))(*args)
    np.testing.assert_allclose(vg[0], value, rtol=1e-15)
    v = RNG.standard_normal((4, 5))
    out, tangent = remat.compile(remat.jvp(f, argnums=1))(*args, v)
    assert out.tolist() == value.tolist()  # contract 5: a JVP's primal outputs are f's
    np.testing.assert_allclose(tangent, np.sum(vg[1] * v), rtol=1e-12)  # J v = grad . v


def block():
    f = remat.Fn("block")
    x = f.arg("x", (4, 4))
    w = f.arg("w", (4, 4))
    f.output(remat.sin(remat.sin(x @ w)))  # BLOCK
    return f


def net(policy):
    ckpt = remat.checkpoint(block(), policy=policy)
    n = remat.Fn("net")
    h = n.arg("x", (4, 4))
    w = n.arg("w", (4, 4))
    for _ in range(3):
        h = ckpt(h, w)
    n.output(remat.sum(h))
    return n


def test_policies_and_saved_residuals():
    line = next(i for i, text in enumerate(open(__file__), 1) if text.rstrip().endswith("# BLOCK"))
    at = f"test_graph.py:{line}"
    args = ["f64[4,4] from the argument 'x'", "f64[4,4] from the argument 'w'"]
    none = net(remat.checkpoint_policies.nothing_saveable).saved_residuals(1)
    dots = net(remat.checkpoint_policies.dots_with_no_batch_dims_saveable).saved_residuals(1)
    # as jax.ad_checkpoint.print_saved_residuals: the regions' inputs, and
    # under dots_with_no_batch_dims_saveable each region's dot_general
    assert none[:2] == args and [x.split(" at ")[0] for x in none[2:]] == ["f64[4,4] output of sin"] * 2
    assert dots[:2] == args and [x.split(" at ")[0] for x in dots[2:]] == \
        ["f64[4,4] output of dot_general", "f64[4,4] output of sin"] * 2 + ["f64[4,4] output of dot_general"]
    assert all(x.endswith(at) for x in none[2:] + dots[2:])  # the Python source of the op
    # contract 3: policies change memory, never the gradient
    args = [RNG.standard_normal((4, 4)), RNG.standard_normal((4, 4)) * 0.3]
    g1 = remat.compile(remat.grad(net(remat.checkpoint_policies.nothing_saveable), 1))(*args)
    g2 = remat.compile(remat.grad(net(remat.checkpoint_policies.dots_with_no_batch_dims_saveable), 1))(*args)
    g3 = remat.compile(remat.grad(net(remat.checkpoint_policies.save_only_these_names("none")), 1))(*args)
    assert g1.tolist() == g2.tolist() == g3.tolist()


def test_checkpoint_name_policy():
    b = remat.Fn("b")
    x = b.arg("x", (3,))
    b.output(remat.sin(remat.checkpoint_name(remat.exp(x), "e")))
    c = remat.checkpoint(b, remat.checkpoint_policies.save_only_these_names("e"))
    n = remat.Fn("n")
    y = n.arg("y", (3,))
    n.output(remat.sum(c(y)))
    lines = n.saved_residuals()
    assert any("named 'e'" in line for line in lines)


def test_offload_policies():
    """JAX's offload policies by their names: the offloaded residual is
    marked in the report, the gradient is the saving policy's to the bit."""
    cp = remat.checkpoint_policies

    def net(policy):
        b = remat.Fn("b")
        x = b.arg("x", (3,))
        b.output(remat.sin(remat.checkpoint_name(remat.exp(x), "e")))
        c = remat.checkpoint(b, policy)
        n = remat.Fn("n")
        y = n.arg("y", (3,))
        n.output(remat.sum(c(y)))
        return n

    off = cp.save_and_offload_only_these_names(names_which_can_be_saved=[], names_which_can_be_offloaded=["e"],
                                               offload_src="device", offload_dst="pinned_host")
    lines = net(off).saved_residuals()
    assert any(line.startswith("f64<host>[3] output of device_put (named 'e' at ") and
               line.endswith(", offloaded to pinned_host)") for line in lines)
    assert not any("offloaded" in line for line in net(cp.save_only_these_names("e")).saved_residuals())
    y = RNG.standard_normal(3)
    g_off = remat.compile(remat.grad(net(off), 0))(y)
    g_save = remat.compile(remat.grad(net(cp.save_only_these_names("e")), 0))(y)
    assert g_off.tolist() == g_save.tolist()
    assert cp.offload_dot_with_no_batch_dims("device", "pinned_host") == \
        "offload_dot_with_no_batch_dims('device', 'pinned_host')"
    with pytest.raises(remat.ArgumentError, match="offload_dst 'ssd'"):
        net(cp.offload_dot_with_no_batch_dims("device", "ssd"))


def euler(schedule, unroll=1):
    """y' = -k y over 1000 steps, loss = y(T)^2: a scan and its gradient."""
    body = remat.Fn("step")
    y = body.arg("y", (2,))
    k = body.arg("k", (2,))
    body.output(y - (k * y) * 0.001)
    f = remat.Fn("ode")
    y0 = f.arg("y0", (2,))
    k = f.arg("k", (2,))
    (yT,), _ = remat.scan(body, [y0], consts=[k], length=1000, schedule=schedule, unroll=unroll)
    f.output(remat.sum(yT * yT))
    return f


def test_scan_schedules_and_plan():
    y0, k = np.array([1.0, 2.0]), np.array([0.5, 3.0])
    exact = np.sum((y0 * (1 - 0.001 * k) ** 1000) ** 2)
    assert remat.compile(euler(None))(y0, k) == pytest.approx(exact, rel=1e-12)
    progs = {s: remat.compile(remat.grad(euler(s), argnums=1)) for s in ("store-all", "binomial:5", "per-step")}
    grads = {s: p(y0, k) for s, p in progs.items()}
    # contract 3: every schedule gives store-all's gradient
    assert grads["store-all"].tolist() == grads["binomial:5"].tolist() == grads["per-step"].tolist()
    g = -2 * 1000 * 0.001 * y0 ** 2 * (1 - 0.001 * k) ** 1999
    np.testing.assert_allclose(grads["store-all"], g, rtol=1e-10)
    assert progs["binomial:5"].plan["peak_snapshot_bytes"] < progs["store-all"].plan["peak_snapshot_bytes"]
    _, stats = progs["binomial:5"].run(y0, k)
    assert stats["forward_evals"] > 1000  # recomputation under 5 snapshots


def test_scan_unroll_keeps_bits():
    """lax.scan's unroll: the interpreter runs that many bodies per loop
    iteration (plan's unrolled_loops), values and gradients to the bit."""
    y0, k = np.array([1.0, 2.0]), np.array([0.5, 3.0])
    # interpreted (compiled loops ignore unroll)
    ref = remat.compile(remat.value_and_grad(euler("binomial:5"), argnums=1), jit="never")
    want = ref(y0, k)
    assert ref.plan["unrolled_loops"] == 0
    for unroll in (2, 3, 7):
        p = remat.compile(remat.value_and_grad(euler("binomial:5", unroll=unroll), argnums=1), jit="never")
        got = p(y0, k)
        assert p.plan["unrolled_loops"] >= 1
        assert float(got[0]) == float(want[0]) and got[1].tolist() == want[1].tolist()
    for bad in (0, -2, 2.0, True):
        with pytest.raises(remat.ArgumentError, match="unroll"):
            euler(None, unroll=bad)


def test_float32_and_inputs_in_place():
    f = remat.Fn("f32")
    x = f.arg("x", (2, 3), dtype=np.float32)
    f.output(remat.sum(x * x, axis=1))
    out = remat.compile(f)(np.ones((2, 3), np.float32))
    assert out.dtype == np.float32 and out.tolist() == [3.0, 3.0]


BAD = [
    ("matmul shapes", lambda f, x, w: x @ remat.reshape(w, (2, 8)), remat.ShapeError, "dot_general|matmul"),
    ("bad axis", lambda f, x, w: remat.sum(x, axis=5), remat.AxisError, r"test_graph.py:\d+: reduce_sum: axis 5"),
    ("reshape size", lambda f, x, w: remat.reshape(x, (3, 3)), remat.ShapeError, "reshape"),
    ("other fn", lambda f, x, w: x + remat.Fn("g").arg("y", (4, 4)), remat.ArgumentError, "belongs to"),
    ("dtype", lambda f, x, w: f.arg("z", (2,), dtype=np.int32), remat.DtypeError, "int32"),
    ("policy", lambda f, x, w: remat.checkpoint(f, "most_things"), remat.ArgumentError, "most_things"),
    ("schedule", lambda f, x, w: remat.scan(f, [x], length=3, schedule="revolve"), remat.ParseError, "revolve"),
    ("transpose perm", lambda f, x, w: remat.transpose(x, (0,)), remat.AxisError, "permutation"),
    ("dot dims", lambda f, x, w: remat.dot_general(x, w, (((1,), ()), ((), ()))), remat.AxisError, "contracting"),
]


@pytest.mark.parametrize("name,build,cls,words", BAD, ids=[b[0] for b in BAD])
def test_build_errors(name, build, cls, words):
    f = remat.Fn("f")
    x = f.arg("x", (4, 4))
    w = f.arg("w", (4, 4))
    with pytest.raises(cls, match=words):
        build(f, x, w)
    f.output(remat.sum(x * w))  # the function goes on after an error
    assert remat.compile(f)(np.ones((4, 4)), np.ones((4, 4))) == 16.0


def test_run_input_errors():
    f = remat.Fn("f")
    x = f.arg("x", (2, 2))
    f.output(remat.sum(x))
    p = remat.compile(f)
    with pytest.raises(remat.ShapeError):
        p(np.ones((3, 2)))
    with pytest.raises(remat.DtypeError):
        p(np.ones((2, 2), np.float32))
    with pytest.raises(remat.ShapeError, match="C-contiguous"):
        p(np.ones((2, 4))[:, ::2])
    with pytest.raises(remat.ArgumentError, match="2 inputs given, the function takes 1"):
        p(np.ones((2, 2)), np.ones((2, 2)))


def test_one_program_from_many_threads():
    """A program runs on one thread at a time (remat/exec.h): the binding
    releases the GIL in run() and serialises the threads on the program's
    lock, so every thread gets the single-thread result (contract 1)."""
    import threading

    f = euler("binomial:5")
    prog = remat.compile(remat.grad(f, argnums=1))
    y0, k = np.array([1.0, 2.0]), np.array([0.5, 3.0])
    want = prog(y0, k).tolist()
    bad = []

    def work():
        for _ in range(100):
            if prog(y0, k).tolist() != want:
                bad.append(1)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not bad

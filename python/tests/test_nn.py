"""Networks: Flax's names and initial values (the committed goldens made by
tools/goldens/gen_nn_goldens.py with real Flax), nn.remat and scan over
layers, training on NumPy arrays, and mlp_compare against `remat mlp
compare --json`."""

import json
import subprocess

import numpy as np
import pytest

import remat
from remat import nn
from conftest import ROOT, cli_path

GOLD = json.loads((ROOT / "tests" / "goldens" / "nn_flax.json").read_text())


def f32(t):
    return np.array(t["bits"], dtype=np.uint32).view(np.float32).reshape(t["shape"])


def apply_fn(module, params, x_shape, dtype=np.float32):
    f = remat.Fn("apply")
    pv = params.args(f)  # (params..., x), as the loss functions take them
    x = f.arg("x", x_shape, dtype)
    f.output(module.apply(f, x, params, pv))
    return remat.compile(f)


def test_flax_names_and_initial_values():
    case = next(c for c in GOLD["mlp"]["cases"] if (c["seed"], c["D"], c["F"]) == (0, 3, 8))
    net = nn.remat(nn.MLP(8, 3), policy=remat.checkpoint_policies.dots_with_no_batch_dims_saveable)
    p = net.init(seed=0, input_shape=(3,))
    assert sorted(p.keys()) == sorted(case["params"])
    for k, v in case["params"].items():  # contract 0: Flax's seeded values, bit for bit
        assert p[k].dtype == np.float32 and p[k].view(np.uint32).tolist() == f32(v).view(np.uint32).tolist()
    y = apply_fn(net, p, (3,))(*p.values(), f32(case["x"]))
    np.testing.assert_allclose(y, f32(case["output"]), rtol=1e-6, atol=1e-7)  # through BLAS: a tolerance
    plain = nn.MLP(8, 3).init(0, (3,))  # nn.remat at the root keeps the parameters
    assert all(a.tolist() == b.tolist() for a, b in zip(plain.values(), p.values()))
    assert net.class_name == "CheckpointMLP" and p.out_shape == (8,) and p.numel == 3 * 8 + 8 + 2 * (64 + 8)


def test_params_are_views():
    p = nn.Dense(4).init(1, (2,))
    assert p.keys() == ["kernel", "bias"]  # the root has no name (Flax)
    k = p["kernel"]
    assert not k.flags.owndata and k.flags.writeable
    q = p.copy()
    k[...] = 0.0
    assert (p.values()[0] == 0).all() and not (q.values()[0] == 0).all()


def test_scan_equals_unrolled():
    unrolled = nn.Sequential([nn.Dense(6)] + [nn.MLPBlock(6) for _ in range(4)] + [nn.Dense(3)])
    scanned = nn.Sequential([nn.Dense(6), nn.scan(nn.MLPBlock(6), 4, schedule="binomial:2"), nn.Dense(3)])
    pu, ps = unrolled.init(3, (5,)), scanned.init(3, (5,))
    assert ps["ScanMLPBlock_0/Dense_0/kernel"].shape == (4, 6, 6)
    x = np.random.default_rng(0).standard_normal((7, 5)).astype(np.float32)
    yu = apply_fn(unrolled, pu, (7, 5))(*pu.values(), x)
    ys = apply_fn(scanned, ps, (7, 5))(*ps.values(), x)
    assert yu.tolist() == ys.tolist()  # contract 3: a scan over identical layers is the layers unrolled


def test_training_reduces_the_loss():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((64, 4)).astype(np.float32)
    y = np.eye(3, dtype=np.float32)[(x[:, 0] > 0).astype(int) + (x[:, 1] > 0.5).astype(int)]
    net = nn.Sequential([nn.Dense(16), nn.Activation("relu"), nn.Dense(3)])
    p = net.init(0, (4,))
    t = nn.Trainer(net, p, 4, 3, loss="softmax_cross_entropy", optimizer="adam", lr=0.05, batch=64)
    losses = [t.step(x, y) for _ in range(60)]
    assert losses[-1] < 0.5 * losses[0]
    acc = (t.predict(x).argmax(1) == y.argmax(1)).mean()
    assert acc > 0.9
    assert t.plan["residual_bytes"] > 0


def test_loss_fn_gradient_central_differences():
    net = nn.Sequential([nn.Dense(3), nn.Activation("tanh"), nn.Dense(2)])
    p = net.init(0, (4,), dtype=np.float64)
    f = nn.loss_fn(net, p, "mse", 5, 4, 2)
    rng = np.random.default_rng(2)
    x, y = rng.standard_normal((5, 4)), rng.standard_normal((5, 2))
    fwd = remat.compile(f)
    vals = p.values()
    g = remat.compile(remat.grad(f, argnums=0))(*vals, x, y)
    k = vals[0].copy()
    num = np.zeros_like(k)
    for i in np.ndindex(k.shape):
        kp, km = k.copy(), k.copy()
        kp[i] += 1e-6
        km[i] -= 1e-6
        num[i] = (fwd(kp, *vals[1:], x, y) - fwd(km, *vals[1:], x, y)) / 2e-6
    np.testing.assert_allclose(g, num, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("args", [dict(layers=2, width=16, batch=8), dict(layers=3, width=8, batch=5, block="ffn")])
def test_mlp_compare_equals_cli(args):
    rows = nn.mlp_compare(repeat=1, **args)
    cmd = [cli_path(), "mlp", "compare", "--repeat", "1", "--json"]
    for k, v in args.items():
        cmd += ["--" + k, str(v)]
    cli = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    assert [r["variant"] for r in rows] == [c["variant"] for c in cli]
    for r, c in zip(rows, cli):
        assert set(r) == set(c)
        for k in r:
            if k == "loss":
                assert r[k] == pytest.approx(c[k], rel=1e-6)  # the tool prints %.7g
            elif k != "seconds":
                assert r[k] == c[k], (r["variant"], k)
        assert r["max_abs_grad_diff"] == 0.0  # contract 3


def test_nn_errors():
    with pytest.raises(remat.BadValueError, match="swish"):
        nn.Activation("swish")
    net = nn.Dense(2)
    p = net.init(0, (3,))
    t = nn.Trainer(net, p, 3, 2, loss="mse", batch=4)
    with pytest.raises(remat.DtypeError, match="float32"):
        t.step(np.zeros((4, 3)), np.zeros((4, 2)))
    with pytest.raises(remat.ShapeError):
        t.step(np.zeros((4, 5), np.float32), np.zeros((4, 2), np.float32))
    with pytest.raises(remat.ShapeError, match="batch is 4"):
        t.step(np.zeros((8, 3), np.float32), np.zeros((8, 2), np.float32))
    with pytest.raises(remat.ArgumentError, match="loss"):
        nn.Trainer(net, p, 3, 2, loss="hinge")
    with pytest.raises(remat.Error):
        nn.Sequential([nn.Dense(4), nn.MLPBlock(3)]).init(0, (2,))
    f = remat.Fn("f")
    vals = p.args(f)
    with pytest.raises(remat.ArgumentError, match="1 parameter values for 2"):
        net.apply(f, f.arg("x", (3,), np.float32), p, vals[:1])

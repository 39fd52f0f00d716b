"""Seed 004's printed numbers from Python: the checkpoint basics, policies,
hierarchical and scan sections, the PFR Euler values, the Adam table and the
diffrax-adjoint comparison (Tsit5 with a constant step), with the remat
package. python/tests/test_seed_004.py checks every number against
tests/goldens/seed_values.json.

    python python/examples/seed_004.py
"""

import numpy as np

import remat

POL = remat.checkpoint_policies


def grad_norm(f, *args, argnums=0):
    g = remat.compile(remat.grad(f, argnums))(*args)
    return float(np.linalg.norm(g))


# ---- 1. checkpoint basics: 100 layers of x = sin(x) + 0.1 x ----
def deep_sin(checkpointed):
    layer = remat.Fn("layer")
    x = layer.arg("x", (1000,))
    layer.output(remat.sin(x) + x * 0.1)
    if checkpointed:
        layer = remat.checkpoint(layer)
    f = remat.Fn("deep_sin")
    h = f.arg("x", (1000,))
    for _ in range(100):
        h = layer(h)
    f.output(remat.sum(h))
    return grad_norm(f, np.ones(1000))


# ---- 2. policies: 5 layers of W^T cos(W sin(x)) ----
def heavy(policy):
    layer = remat.Fn("layer")
    x = layer.arg("x", (50,))
    w = layer.arg("w", (50, 50))
    layer.output(remat.transpose(w) @ remat.cos(w @ remat.sin(x)))
    if policy != "none":
        layer = remat.checkpoint(layer, policy)
    f = remat.Fn("heavy")
    h = f.arg("x", (50,))
    wf = f.arg("w", (50, 50))
    for _ in range(5):
        h = layer(h, wf)
    f.output(remat.sum(h))
    w0 = 0.9 * np.eye(50) + 0.01 * np.ones((50, 50))
    return grad_norm(f, np.ones(50), w0)


# ---- 3. hierarchical: 10 checkpointed blocks of 10 tanh layers ----
def hierarchical():
    blk = remat.Fn("block")
    x = blk.arg("x", (100,))
    h = x
    for _ in range(10):
        h = remat.tanh(h * 1.01 + 0.01)
    blk.output(h)
    ck = remat.checkpoint(blk)
    f = remat.Fn("hierarchical")
    h = f.arg("x", (100,))
    for _ in range(10):
        h = ck(h)
    f.output(remat.sum(h))
    return grad_norm(f, np.ones(100))


# ---- 4. scan: 100 steps of carry = sin(carry) + 0.1 carry ----
def scan_sin(policy):
    body = remat.Fn("step")
    c = body.arg("c", (100,))
    body.output(remat.sin(c) + c * 0.1)
    f = remat.Fn("scan_sin")
    x = f.arg("x", (100,))
    (cT,), _ = remat.scan(body, [x], length=100, policy=policy)
    f.output(remat.sum(cT))
    return grad_norm(f, np.ones(100))


# ---- 5. checkpoint(block) inside a network: d net / d w ----
def block_net(policy):
    blk = remat.Fn("block")
    x = blk.arg("x", (4, 4))
    w = blk.arg("w", (4, 4))
    blk.output(remat.sin(remat.sin(x @ w)))
    if policy is not None:
        blk = remat.checkpoint(blk, policy)
    f = remat.Fn("net")
    h = f.arg("x", (4, 4))
    wn = f.arg("w", (4, 4))
    for _ in range(3):
        h = blk(h, wn)
    f.output(remat.sum(h))
    return remat.compile(remat.grad(f, 1))(np.ones((4, 4)), 0.5 * np.eye(4))


ABC = "param k1 = 1.0\nparam k2 = 0.5\nA -> B : k1\nB -> C : k2\n"


def run():
    """Every number of the seed, by section."""
    m = remat.Mechanism.from_string(ABC, "A->B->C")
    out = {}
    out["deep_sin"] = {"plain": deep_sin(False), "checkpointed": deep_sin(True)}
    out["heavy_computation"] = {p: heavy(p) for p in ("none", POL.everything_saveable, POL.dots_saveable,
                                                       POL.nothing_saveable)}
    out["hierarchical_tanh"] = hierarchical()
    out["scan_sin"] = {"plain": scan_sin(None), "checkpointed body": scan_sin(POL.nothing_saveable)}
    out["remat_block_net"] = {"plain": block_net(None),
                              "checkpoint": block_net(POL.dots_with_no_batch_dims_saveable)}
    sim = remat.simulate(m, {"A": 1.0}, steps=1000, maximize="B")  # 1000 Euler steps over L = 10
    out["pfr_euler"] = {"final": sim.outlet_dict(), "mass_balance": float(sim.outlet.sum()),
                        "grad": dict(zip(sim.param_names, sim.gradient.tolist()))}
    opt = remat.optimize(m, {"A": 1.0}, [0.5, 0.3], maximize="B", lr=0.1, iters=50, min_param=0.01)
    out["pfr_adam_fit"] = {"table": [[i, *opt.params_after[i].tolist(), float(opt.conc_before[i])]
                                     for i in range(0, 50, 10)] + [[49, *opt.params_after[49].tolist(),
                                                                    float(opt.conc_before[49])]],
                           "final": {"k1": float(opt.params[0]), "k2": float(opt.params[1]),
                                     "C_B": opt.conc_final}}
    # diffrax: Tsit5, ConstantStepSize(0.01); its adjoints (recursive checkpoint,
    # direct) are schedules here: binomial and store-all give the same numbers
    tsit = {}
    for schedule in ("binomial:10", "store-all"):
        s = remat.simulate(m, {"A": 1.0}, method="tsit5", steps=1000, minimize="B", schedule=schedule,
                           profile=False)
        tsit[schedule] = {"C_B": float(s.outlet[1]), "dC_B_dk1": float(s.gradient[0]),
                          "dC_B_dk2": float(s.gradient[1])}
    out["pfr_tsit5_fixed"] = tsit
    return out


def main():
    r = run()
    print("1. checkpoint basics, 100 x sin layers: |grad| =", *(f"{k} {v:.10g}" for k, v in r["deep_sin"].items()))
    print("2. policies, W^T cos(W sin x) x 5: |grad| =",
          ", ".join(f"{k} {v:.11g}" for k, v in r["heavy_computation"].items()))
    print(f"3. hierarchical tanh blocks: |grad| = {r['hierarchical_tanh']:.10g}")
    print("4. scan of sin: |grad| =", ", ".join(f"{k} {v:.10g}" for k, v in r["scan_sin"].items()))
    print("5. checkpoint(block) x 3: d/dw every entry =",
          ", ".join(f"{k} {v[0, 0]:.16g}" for k, v in r["remat_block_net"].items()))
    e = r["pfr_euler"]
    print("6. PFR Euler:", ", ".join(f"{k} = {v:.6f}" for k, v in e["final"].items()),
          f"(sum {e['mass_balance']:.6f}); d(-C_B)/dk:", ", ".join(f"{k} {v:.6f}" for k, v in e["grad"].items()))
    print("7. Adam: iteration, k1, k2 after the update, C_B before it")
    for it, k1, k2, cb in r["pfr_adam_fit"]["table"]:
        print(f"   {it:3d}  {k1:.4f}  {k2:.4f}  {cb:.6f}")
    f = r["pfr_adam_fit"]["final"]
    print(f"   final k1 = {f['k1']:.4f}, k2 = {f['k2']:.4f}, C_B = {f['C_B']:.6f}")
    for s, v in r["pfr_tsit5_fixed"].items():
        print(f"8. Tsit5 dt = 0.01 ({s}): C_B = {v['C_B']:.6f}, dC_B/dk1 = {v['dC_B_dk1']:.6f}, "
              f"dC_B/dk2 = {v['dC_B_dk2']:.6f}")


if __name__ == "__main__":
    main()

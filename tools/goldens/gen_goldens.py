#!/usr/bin/env python3
"""Generate the JSON golden files under tests/goldens/ with real JAX.

The C test suite only *reads* these JSON files; it never needs JAX.

How to run (from the repository root):

    python3 -m venv .venv-goldens
    .venv-goldens/bin/pip install "jax[cpu]"
    .venv-goldens/bin/python tools/goldens/gen_goldens.py

Committed files were produced with jax 0.10.2 / jaxlib 0.10.2 / numpy 2.4.6
(CPU backend, Python 3.11).  The script prints the versions it ran with and
stores them in every file under "generator".

Files written (all pretty JSON, floats printed with Python's repr, i.e. the
shortest string that round-trips the float64 exactly):

  residuals.json   - jax.ad_checkpoint.print_saved_residuals lines (float32),
                     parsed, counted by kind, plus the jaxpr of each function
                     and the dot_general dimension numbers found in it.
  gradients.json   - float64 gradients of the seed examples, checked against
                     tests/goldens/seed_values.json (asserts; the seed documents' numbers).
  dot_general.json - lax.dot_general forward + VJP for many dimension numbers.
  ops.json         - forward + VJP for elementwise / structural primitives.

Notes for readers of residuals.json: the source locations in the lines
("gen_goldens.py:LINE:COL (fn)") refer to this file, so they change when this
file is edited; compare the other parts of a line (dtype, shape, kind,
primitive, name), not the location.
"""

import json
import os
import re
import sys
import io
import contextlib

import numpy as np
import jax
import jax.extend
import jax.numpy as jnp
from jax import lax
from jax.ad_checkpoint import print_saved_residuals, checkpoint_name

cp = jax.checkpoint_policies

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
OUT_DIR = os.path.join(ROOT, "tests", "goldens")
# the seed documents' printed numbers, as the user gave them (a copy kept with the goldens)
SEED_VALUES = os.path.join(OUT_DIR, "seed_values.json")


def generator_info():
    import jaxlib
    return {
        "script": "tools/goldens/gen_goldens.py",
        "jax": jax.__version__,
        "jaxlib": jaxlib.__version__,
        "numpy": np.__version__,
        "python": sys.version.split()[0],
        "backend": jax.default_backend(),
    }


def write_json(name, obj):
    path = os.path.join(OUT_DIR, name)
    with open(path, "w") as f:
        json.dump(obj, f, indent=2, allow_nan=False)
        f.write("\n")
    print(f"wrote {path} ({os.path.getsize(path)} bytes)")


def arr(x):
    """Array -> {"shape", "dtype", "data" (flattened row-major)}."""
    x = np.asarray(x)
    if x.dtype == np.bool_:
        data = [bool(v) for v in x.reshape(-1)]
    elif np.issubdtype(x.dtype, np.integer):
        data = [int(v) for v in x.reshape(-1)]
    else:
        data = [float(v) for v in x.reshape(-1)]
    return {"shape": list(x.shape), "dtype": str(x.dtype), "data": data}


def sanitize(text):
    """Replace absolute file paths by their basename, drop object addresses."""
    text = re.sub(r"(/[^\s:()'\"]+/)([^/\s:()'\"]+\.py)", r"\2", text)
    text = re.sub(r" at 0x[0-9a-fA-F]+", "", text)
    return text


# ---------------------------------------------------------------------------
# 1. residuals.json (float32)
# ---------------------------------------------------------------------------

LINE_RE = re.compile(r"^(?P<dtype>[a-z]+[0-9]*)\[(?P<shape>[0-9,]*)\] (?P<src>.*)$")


def parse_line(line):
    m = LINE_RE.match(line)
    assert m, line
    shape = [int(s) for s in m.group("shape").split(",") if s]
    src = m.group("src")
    rec = {"dtype": m.group("dtype"), "shape": shape, "kind": None,
           "arg": None, "primitive": None, "name": None, "source": None}
    if src.startswith("from the argument "):
        rec["kind"] = "argument"
        rec["arg"] = src[len("from the argument "):]
    elif src.startswith("output of jitted function "):
        mm = re.match(r"output of jitted function '([^']*)' from (.*)$", src)
        rec["kind"] = "jitted"
        rec["primitive"] = "jit"
        rec["name"] = mm.group(1)
        rec["source"] = mm.group(2)
    elif src.startswith("output of "):
        mm = re.match(r"output of (\S+) from (.*)$", src)
        rec["kind"] = "output"
        rec["primitive"] = mm.group(1)
        rec["source"] = mm.group(2)
    elif src.startswith("named "):
        mm = re.match(r"named '([^']*)' from (.*)$", src)
        rec["kind"] = "named"
        rec["name"] = mm.group(1)
        rec["source"] = mm.group(2)
    elif src == "from a literal":
        rec["kind"] = "literal"
    elif src == "from a constant":
        rec["kind"] = "constant"
    else:
        rec["kind"] = "other"
        rec["source"] = src
    return rec


def collect_dots(jaxpr, out):
    """Recursively collect dot_general equations (including inside remat2,
    pjit, scan, custom_jvp bodies)."""
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "dot_general":
            (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
            out.append({
                "lhs_shape": list(eqn.invars[0].aval.shape),
                "rhs_shape": list(eqn.invars[1].aval.shape),
                "out_shape": list(eqn.outvars[0].aval.shape),
                "contracting": [list(lc), list(rc)],
                "batch": [list(lb), list(rb)],
                "repr": str(eqn.params["dimension_numbers"]),
            })
        for sub in jax.extend.core.jaxprs_in_params(eqn.params):
            collect_dots(sub, out)
    return out


def residual_case(name, f, args, extra=None):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        print_saved_residuals(f, *args)
    lines = [sanitize(l) for l in buf.getvalue().splitlines() if l.strip()]
    parsed = [parse_line(l) for l in lines]
    counts = {}
    for p in parsed:
        counts[p["kind"]] = counts.get(p["kind"], 0) + 1
    closed = jax.make_jaxpr(f)(*args)
    case = {
        "name": name,
        "arg_shapes": [list(a.shape) for a in args],
        "arg_dtypes": [str(a.dtype) for a in args],
        "lines": lines,
        "parsed": parsed,
        "count": len(lines),
        "count_by_kind": counts,
        "jaxpr": sanitize(str(closed)),
        # forward pass as JAX linearizes it: the outputs after the primal
        # result are exactly the residuals listed in "lines", in that order
        # (print_saved_residuals is built on this same jaxpr).
        "vjp_jaxpr": sanitize(str(jax.make_jaxpr(lambda *a: jax.vjp(f, *a))(*args))),
        "dot_dimension_numbers": collect_dots(closed.jaxpr, []),
    }
    if extra:
        case.update(extra)
    for a in args:
        assert a.dtype == jnp.float32, (name, a.dtype)
    return case


# 1a. seed 003 block net
def block(x, w):
    return jnp.sin(jnp.sin(x @ w))


def net(x, w):
    for _ in range(3):
        x = block(x, w)
    return x.sum()


ckpt_block = jax.checkpoint(block, policy=cp.dots_with_no_batch_dims_saveable)


def net_remat(x, w):
    for _ in range(3):
        x = ckpt_block(x, w)
    return x.sum()


# 1b. seed 000 loss with a named hidden value
def loss(w1, w2, x):
    hidden = checkpoint_name(jax.nn.relu(x @ w1), "hidden")
    output = hidden @ w2
    return jnp.sum(output ** 2)


POLICIES = [
    ("none", None),
    ("nothing_saveable", cp.nothing_saveable),
    ("everything_saveable", cp.everything_saveable),
    ("dots_saveable", cp.dots_saveable),
    ("dots_with_no_batch_dims_saveable", cp.dots_with_no_batch_dims_saveable),
    ('save_only_these_names("hidden")', cp.save_only_these_names("hidden")),
    ('save_any_names_but_these("hidden")', cp.save_any_names_but_these("hidden")),
    # the brief calls it save_from_both; JAX's name is save_from_both_policies
    ('save_from_both_policies(save_only_these_names("hidden"), dots_saveable)',
     cp.save_from_both_policies(cp.save_only_these_names("hidden"), cp.dots_saveable)),
]


def policy_case_name(pname):
    short = pname.split("(")[0]
    if short == "save_from_both_policies":
        short = "save_from_both"
    return "policy_" + short


# 1c. batched dots
def batched(a, b):
    return jnp.sum(jnp.sin(jnp.einsum("bnd,bdf->bnf", a, b)))


def nd_matmul(x, w):
    return jnp.sum(jnp.sin(x @ w))


# 1d. hierarchical
def single_layer(x):
    return jnp.tanh(x * 1.01 + 0.01)


ckpt_layer = jax.checkpoint(single_layer)  # default policy == nothing_saveable


def block_flat(x):
    for _ in range(3):
        x = single_layer(x)
    return x


def block_nested(x):
    for _ in range(3):
        x = ckpt_layer(x)
    return x


ckpt_block_flat = jax.checkpoint(block_flat, policy=cp.nothing_saveable)
ckpt_block_nested = jax.checkpoint(block_nested, policy=cp.nothing_saveable)


def hier_flat(x):
    for _ in range(2):
        x = ckpt_block_flat(x)
    return x.sum()


def hier_nested(x):
    for _ in range(2):
        x = ckpt_block_nested(x)
    return x.sum()


def make_residuals():
    assert not jax.config.jax_enable_x64
    f32 = jnp.float32
    cases = []

    x = jnp.ones((4, 4), f32)
    w = jnp.eye(4, dtype=f32) * 0.5
    blk = {"inputs": {"x": arr(x), "w": arr(w)}}
    cases.append(residual_case("block_net_plain", net, (x, w), dict(
        blk, description="seed 003: block(x,w)=sin(sin(x@w)); net=sum(block applied 3 times); no checkpoint")))
    cases.append(residual_case("block_net_remat", net_remat, (x, w), dict(
        blk, description="seed 003: each block wrapped in jax.checkpoint(block, policy=dots_with_no_batch_dims_saveable)")))

    w1 = ((np.arange(9, dtype=np.float32).reshape(3, 3) - 4.0) / 4.0).astype(np.float32)
    w2 = ((np.arange(9, dtype=np.float32).reshape(3, 3)[::-1] - 3.0) / 5.0).astype(np.float32)
    xx = ((np.arange(6, dtype=np.float32).reshape(2, 3) - 2.0) / 3.0).astype(np.float32)
    w1, w2, xx = jnp.asarray(w1), jnp.asarray(w2), jnp.asarray(xx)
    inputs = {"w1": arr(w1), "w2": arr(w2), "x": arr(xx)}
    for pname, pol in POLICIES:
        f = loss if pol is None else jax.checkpoint(loss, policy=pol)
        desc = ("seed 000 loss(w1,w2,x)=sum((relu(x@w1)@w2)**2) with hidden=checkpoint_name(relu(x@w1),'hidden'); "
                + ("no checkpoint" if pol is None else f"jax.checkpoint(loss, policy={pname})"))
        cases.append(residual_case(policy_case_name(pname), f, (w1, w2, xx), {
            "policy": pname, "description": desc, "inputs": inputs,
            "value": float(f(w1, w2, xx))}))

    a = jnp.asarray(np.linspace(-1, 1, 24, dtype=np.float32).reshape(2, 3, 4))
    b = jnp.asarray(np.linspace(-0.5, 1, 40, dtype=np.float32).reshape(2, 4, 5))
    for cname, pname, pol in [
            ("batched_dots_with_no_batch_dims", "dots_with_no_batch_dims_saveable", cp.dots_with_no_batch_dims_saveable),
            ("batched_dots_saveable", "dots_saveable", cp.dots_saveable)]:
        cases.append(residual_case(cname, jax.checkpoint(batched, policy=pol), (a, b), {
            "policy": pname,
            "description": f"f(a,b)=sum(sin(einsum('bnd,bdf->bnf',a,b))), a (2,3,4), b (2,4,5), checkpoint policy={pname}",
            "inputs": {"a": arr(a), "b": arr(b)}}))
    xw = jnp.asarray(np.linspace(-1, 1, 24, dtype=np.float32).reshape(2, 3, 4))
    ww = jnp.asarray(np.linspace(-0.5, 1, 20, dtype=np.float32).reshape(4, 5))
    cases.append(residual_case("nd_matmul_no_batch",
                               jax.checkpoint(nd_matmul, policy=cp.dots_with_no_batch_dims_saveable), (xw, ww), {
        "policy": "dots_with_no_batch_dims_saveable",
        "description": "g(x,w)=sum(sin(x@w)), x (2,3,4) 3-D, w (4,5); checkpoint policy=dots_with_no_batch_dims_saveable",
        "inputs": {"x": arr(xw), "w": arr(ww)}}))

    xh = jnp.ones((100,), f32)
    cases.append(residual_case("hier_flat", hier_flat, (xh,), {
        "description": "x=ones(100); 2 blocks jax.checkpoint(policy=nothing_saveable), each 3 layers x=tanh(x*1.01+0.01); loss=sum",
        "inputs": {"x": {"shape": [100], "dtype": "float32", "fill": 1.0}}}))
    cases.append(residual_case("hier_nested", hier_nested, (xh,), {
        "description": "as hier_flat but each layer inside a block is also wrapped in jax.checkpoint (default policy)",
        "inputs": {"x": {"shape": [100], "dtype": "float32", "fill": 1.0}}}))

    doc = {
        "generator": generator_info(),
        "about": ("print_saved_residuals(f, *args) output (float32, differentiating w.r.t. all args). "
                  "'lines' are the raw printed lines with absolute paths reduced to the basename; "
                  "source locations refer to tools/goldens/gen_goldens.py and are not meaningful for C. "
                  "Line order is JAX's: literals, constants, arguments (in argument order), then equation outputs in jaxpr order. "
                  "kind: argument | output | named | jitted | literal | constant. "
                  "'jaxpr' = str(jax.make_jaxpr(f)(*args)); 'vjp_jaxpr' = jaxpr of lambda *a: jax.vjp(f, *a), whose "
                  "outputs after the primal value are the residuals in the order of 'lines'."),
        "cases": cases,
    }
    write_json("residuals.json", doc)
    return cases


# ---------------------------------------------------------------------------
# 2. gradients.json (float64)
# ---------------------------------------------------------------------------

def ndecimals(s):
    s = s.lower()
    if "e" in s:
        mant, exp = s.split("e")
        d = len(mant.split(".")[1]) if "." in mant else 0
        return d - int(exp)
    return len(s.split(".")[1]) if "." in s else 0


def check_printed(label, ours, printed_value, printed_text=None, report=None):
    """Assert `ours` agrees with a printed number to its printed digits."""
    text = printed_text if printed_text is not None else repr(printed_value)
    nd = ndecimals(text)
    tol = 0.5 * 10.0 ** (-nd) * (1 + 1e-9)
    diff = abs(ours - printed_value)
    ok = diff <= tol
    line = f"  check {label}: ours={ours!r} printed={text} |diff|={diff:.3e} tol={tol:.1e} {'OK' if ok else 'MISMATCH'}"
    print(line)
    if report is not None:
        report.append({"what": label, "ours": ours, "printed": printed_value,
                       "abs_diff": diff, "tol": tol, "ok": bool(ok)})
    assert ok, line


def check_close(label, ours, ref, rtol, report=None):
    diff = abs(ours - ref)
    rel = diff / abs(ref) if ref else diff
    ok = rel <= rtol
    line = f"  check {label}: ours={ours!r} ref={ref!r} rel={rel:.3e} rtol={rtol:.0e} {'OK' if ok else 'MISMATCH'}"
    print(line)
    if report is not None:
        report.append({"what": label, "ours": ours, "printed": ref,
                       "rel_diff": rel, "rtol": rtol, "ok": bool(ok)})
    assert ok, line


def flt(x):
    return float(np.asarray(x))


def make_gradients():
    assert jax.config.jax_enable_x64
    with open(SEED_VALUES) as f:
        seed = json.load(f)
    # raw text, to know how many digits were printed
    with open(SEED_VALUES) as f:
        seed_text = f.read()

    def printed_text(value_key_regex):
        m = re.search(value_key_regex, seed_text, re.S)
        return m.group(1)

    report = []
    out = {"generator": generator_info(),
           "about": "float64 (jax_enable_x64) gradients of the seed examples; vectors flattened row-major."}
    f64 = jnp.float64

    # --- deep_sin
    print("deep_sin")

    def expensive_layer(x):
        return jnp.sin(x) + 0.1 * x

    def deep_no_cp(x):
        for _ in range(100):
            x = expensive_layer(x)
        return x.sum()

    ck = jax.checkpoint(expensive_layer)

    def deep_cp(x):
        for _ in range(100):
            x = ck(x)
        return x.sum()

    x = jnp.ones((1000,), f64)
    g = np.asarray(jax.jit(jax.grad(deep_no_cp))(x))
    g2 = np.asarray(jax.jit(jax.grad(deep_cp))(x))
    g_nojit = np.asarray(jax.grad(deep_no_cp)(x))
    norm = float(np.linalg.norm(g))
    out["deep_sin"] = {
        "problem": "x = ones(1000); 100 times x = sin(x) + 0.1*x; loss = sum(x); gradient wrt x (jit(grad), no checkpoint)",
        "grad_norm": norm,
        "grad_first5": [float(v) for v in g[:5]],
        "grad_entries_0_1_999": [float(g[0]), float(g[1]), float(g[999])],
        "max_abs_diff_checkpointed": float(np.max(np.abs(g - g2))),
        "max_abs_diff_not_jitted": float(np.max(np.abs(g - g_nojit))),
    }
    check_printed("deep_sin.grad_norm", norm, seed["deep_sin"]["grad_norm"],
                  printed_text(r'"deep_sin".*?"grad_norm": ([0-9.e+-]+)'), report)
    check_close("deep_sin.grad_norm_more_digits", norm, seed["deep_sin"]["grad_norm_more_digits"], 1e-12, report)

    # --- heavy_computation
    print("heavy_computation")

    def heavy(x):
        W = jnp.eye(len(x)) * 0.9 + jnp.ones((len(x), len(x))) * 0.01
        x = jnp.sin(x)
        x = W @ x
        x = jnp.cos(x)
        x = W.T @ x
        return x

    def custom_policy(prim, *args, **kwargs):
        return prim.name in {"dot_general", "conv_general_dilated"}

    def loss_fn(layer_fn):
        def l(x):
            for _ in range(5):
                x = layer_fn(x)
            return x.sum()
        return l

    x = jnp.ones((50,), f64)
    g = np.asarray(jax.grad(loss_fn(heavy))(x))
    variants = {
        "everything_saveable": jax.checkpoint(heavy, policy=cp.everything_saveable),
        "dots_saveable": jax.checkpoint(heavy, policy=cp.dots_saveable),
        "custom_dot_general": jax.checkpoint(heavy, policy=custom_policy),
        "nothing_saveable": jax.checkpoint(heavy, policy=cp.nothing_saveable),
    }
    vdiff = {k: float(np.max(np.abs(g - np.asarray(jax.grad(loss_fn(v))(x))))) for k, v in variants.items()}
    norm = float(np.linalg.norm(g))
    out["heavy_computation"] = {
        "problem": "x = ones(50); W = 0.9*I + 0.01*ones(50,50); layer(x) = W.T @ cos(W @ sin(x)); 5 layers; loss = sum; grad wrt x (no checkpoint)",
        "grad": [float(v) for v in g],
        "grad_norm": norm,
        "max_abs_diff_by_policy": vdiff,
    }
    check_printed("heavy_computation.grad_norm", norm, seed["heavy_computation"]["grad_norm"],
                  printed_text(r'"heavy_computation".*?"grad_norm": ([0-9.e+-]+)'), report)

    # --- hierarchical_tanh
    print("hierarchical_tanh")

    def make_block(n_layers):
        def blk(x):
            for _ in range(n_layers):
                x = single_layer(x)
            return x
        return jax.checkpoint(blk)

    def deep_hier(x):
        cb = make_block(10)
        for _ in range(10):
            x = cb(x)
        return x.sum()

    def deep_plain(x):
        for _ in range(100):
            x = single_layer(x)
        return x.sum()

    x = jnp.ones((100,), f64)
    g = np.asarray(jax.grad(deep_hier)(x))
    gp = np.asarray(jax.grad(deep_plain)(x))
    norm = float(np.linalg.norm(g))
    out["hierarchical_tanh"] = {
        "problem": "x = ones(100); 10 checkpointed blocks of 10 layers x = tanh(x*1.01 + 0.01); loss = sum; grad wrt x",
        "grad_norm": norm,
        "grad_first": float(g[0]),
        "max_abs_diff_no_checkpoint": float(np.max(np.abs(g - gp))),
    }
    check_printed("hierarchical_tanh.grad_norm", norm, seed["hierarchical_tanh"]["grad_norm"],
                  printed_text(r'"hierarchical_tanh".*?"grad_norm": ([0-9.e+-]+)'), report)
    check_close("hierarchical_tanh.grad_norm_more_digits", norm,
                seed["hierarchical_tanh"]["grad_norm_more_digits"], 1e-12, report)

    # --- scan_sin
    print("scan_sin")

    def scan_body(carry, _):
        x = jnp.sin(carry) + 0.1 * carry
        return x, x

    def seq(body):
        def l(x):
            final, _ = lax.scan(body, x, None, length=100)
            return final.sum()
        return l

    x = jnp.ones((100,), f64)
    g = np.asarray(jax.grad(seq(scan_body))(x))
    gc = np.asarray(jax.grad(seq(jax.checkpoint(scan_body)))(x))
    norm = float(np.linalg.norm(g))
    out["scan_sin"] = {
        "problem": "x = ones(100); lax.scan 100 steps of carry = sin(carry) + 0.1*carry (ys = carry); loss = sum(final carry); grad wrt x",
        "grad_norm": norm,
        "grad_first": float(g[0]),
        "max_abs_diff_checkpointed_body": float(np.max(np.abs(g - gc))),
    }
    check_printed("scan_sin.grad_norm", norm, seed["scan_sin"]["grad_norm"],
                  printed_text(r'"scan_sin".*?"grad_norm": ([0-9.e+-]+)'), report)
    check_close("scan_sin.grad_norm_more_digits", norm, seed["scan_sin"]["grad_norm_more_digits"], 1e-12, report)

    # --- remat_block_net (float64)
    print("remat_block_net")
    x = jnp.ones((4, 4), f64)
    w = jnp.eye(4, dtype=f64) * 0.5
    g = np.asarray(jax.grad(net, 1)(x, w))
    gr = np.asarray(jax.grad(net_remat, 1)(x, w))
    out["remat_block_net"] = {
        "problem": "seed 003 in float64: grad wrt w of net(x,w)=sum(block^3(x)), block=sin(sin(x@w)); x=ones(4,4), w=0.5*I",
        "grad_w": arr(g),
        "max_abs_diff_remat": float(np.max(np.abs(g - gr))),
    }
    ref = seed["remat_block_net"]["grad_w_every_entry"]
    worst = max(range(g.size), key=lambda i: abs(g.reshape(-1)[i] - ref))
    check_close(f"remat_block_net.grad_w (worst entry, [{worst}] of {g.size})", float(g.reshape(-1)[worst]),
                ref, 1e-14, report)

    # --- pfr_euler (exactly the seed-004 code)
    print("pfr_euler")

    def pfr_rates(C, k1, k2):
        r1 = k1 * C[0]
        r2 = k2 * C[1]
        return jnp.array([-r1, r1 - r2, r2])

    def euler_step(C, args):
        k1, k2, dt = args
        C_new = C + dt * pfr_rates(C, k1, k2)
        return C_new, C_new

    euler_step_cp = jax.checkpoint(euler_step)
    C0 = jnp.array([1.0, 0.0, 0.0], f64)
    L, n_steps = 10.0, 1000

    def simulate(k1, k2, use_cp=False):
        dt = L / n_steps
        step = euler_step_cp if use_cp else euler_step
        final, _ = lax.scan(lambda c, _: step(c, (k1, k2, dt)), C0, None, length=n_steps)
        return final

    def objective(params, use_cp=False):
        k1, k2 = params
        return -simulate(k1, k2, use_cp)[1]

    params = jnp.array([1.0, 0.5], f64)
    final = np.asarray(simulate(params[0], params[1]))
    J = flt(objective(params))
    gk = np.asarray(jax.grad(objective)(params))
    gkc = np.asarray(jax.grad(lambda p: objective(p, True))(params))
    out["pfr_euler"] = {
        "problem": "A->B->C, dy/dt=[-k1 A, k1 A - k2 B, k2 B], k1=1, k2=0.5, y0=[1,0,0], 1000 explicit Euler steps dt=L/n=0.01 via lax.scan; J=-B_final",
        "final": {"A": float(final[0]), "B": float(final[1]), "C": float(final[2])},
        "mass_balance": float(final.sum()),
        "J": J,
        "dJ_dk1": float(gk[0]),
        "dJ_dk2": float(gk[1]),
        "max_abs_diff_checkpointed_step": float(np.max(np.abs(gk - gkc))),
    }
    for k, i in (("A", 0), ("B", 1), ("C", 2)):
        check_printed(f"pfr_euler.final.{k}", float(final[i]), seed["pfr_euler"]["final"][k],
                      printed_text(r'"pfr_euler".*?"' + k + r'": ([0-9.e+-]+)'), report)
    check_printed("pfr_euler.mass_balance", float(final.sum()), seed["pfr_euler"]["final"]["mass_balance"],
                  printed_text(r'"mass_balance": ([0-9.e+-]+)'), report)
    check_printed("pfr_euler.dJ_dk1", float(gk[0]), seed["pfr_euler"]["grad"]["k1"],
                  printed_text(r'"pfr_euler".*?"k1": ([0-9.e+-]+)'), report)
    check_printed("pfr_euler.dJ_dk2", float(gk[1]), seed["pfr_euler"]["grad"]["k2"],
                  printed_text(r'"pfr_euler".*?"k2": ([0-9.e+-]+)'), report)

    out["seed_value_checks"] = report
    write_json("gradients.json", out)
    return report


# ---------------------------------------------------------------------------
# 3. dot_general.json (float64)
# ---------------------------------------------------------------------------

DOT_CASES = [
    # name, lhs shape, rhs shape, ((lc),(rc)), ((lb),(rb)), einsum-ish description
    ("matmul", (3, 4), (4, 5), ((1,), (0,)), ((), ()), "ij,jk->ik"),
    ("contract_lhs0_rhs0", (4, 3), (4, 5), ((0,), (0,)), ((), ()), "ji,jk->ik"),
    ("contract_lhs1_rhs1", (3, 4), (5, 4), ((1,), (1,)), ((), ()), "ij,kj->ik"),
    ("batch_leading", (2, 3, 4), (2, 4, 5), ((2,), (1,)), ((0,), (0,)), "bij,bjk->bik"),
    ("batch_not_leading_lhs", (3, 2, 4), (2, 4, 5), ((2,), (1,)), ((1,), (0,)), "ibj,bjk->bik"),
    ("batch_two_dims_permuted", (2, 3, 4), (3, 2, 4, 5), ((2,), (2,)), ((0, 1), (1, 0)), "abj,bajk->abk"),
    ("two_contracting", (3, 4, 5), (4, 5, 6), ((1, 2), (0, 1)), ((), ()), "ijk,jkl->il"),
    ("two_contracting_swapped_order", (4, 5, 3), (5, 4, 6), ((0, 1), (1, 0)), ((), ()), "jki,kjl->il"),
    ("vector_inner", (5,), (5,), ((0,), (0,)), ((), ()), "i,i->"),
    ("outer_product", (3,), (4,), ((), ()), ((), ()), "i,j->ij"),
    ("nd_lhs_matmul", (2, 3, 4), (4, 5), ((2,), (0,)), ((), ()), "bij,jk->bik (no batch dims)"),
    ("attention_bhqd_bhkd", (2, 3, 4, 5), (2, 3, 6, 5), ((3,), (3,)), ((0, 1), (0, 1)), "bhqd,bhkd->bhqk"),
]


def make_dot_general():
    assert jax.config.jax_enable_x64
    rng = np.random.default_rng(0)
    cases = []
    for name, ls, rs, contr, batch, desc in DOT_CASES:
        lhs = rng.standard_normal(ls)
        rhs = rng.standard_normal(rs)
        dn = (contr, batch)
        f = lambda a, b: lax.dot_general(a, b, dn, precision=lax.Precision.HIGHEST)
        out, vjp = jax.vjp(f, jnp.asarray(lhs), jnp.asarray(rhs))
        ct = rng.standard_normal(out.shape)
        dl, dr = vjp(jnp.asarray(ct))
        cases.append({
            "name": name,
            "description": desc,
            "dimension_numbers": {"contracting": [list(contr[0]), list(contr[1])],
                                  "batch": [list(batch[0]), list(batch[1])]},
            "lhs": arr(lhs), "rhs": arr(rhs),
            "out": arr(out), "ct": arr(ct),
            "d_lhs": arr(dl), "d_rhs": arr(dr),
            "jaxpr": sanitize(str(jax.make_jaxpr(f)(lhs, rhs))),
        })
        assert dl.shape == lhs.shape and dr.shape == rhs.shape
    # numpy cross-check for a few (einsum strings known)
    chk = {"matmul": "ij,jk->ik", "batch_not_leading_lhs": "ibj,bjk->bik",
           "batch_two_dims_permuted": "abj,bajk->abk", "attention_bhqd_bhkd": "bhqd,bhkd->bhqk",
           "two_contracting_swapped_order": "jki,kjl->il", "outer_product": "i,j->ij",
           "contract_lhs0_rhs0": "ji,jk->ik", "contract_lhs1_rhs1": "ij,kj->ik", "batch_leading": "bij,bjk->bik",
           "two_contracting": "ijk,jkl->il", "vector_inner": "i,i->", "nd_lhs_matmul": "bij,jk->bik"}
    for c in cases:
        if c["name"] in chk:
            l = np.array(c["lhs"]["data"]).reshape(c["lhs"]["shape"])
            r = np.array(c["rhs"]["data"]).reshape(c["rhs"]["shape"])
            o = np.array(c["out"]["data"]).reshape(c["out"]["shape"])
            assert np.allclose(np.einsum(chk[c["name"]], l, r), o, rtol=1e-12, atol=1e-12), c["name"]
            # independent VJP: d_lhs = einsum(ct, rhs -> lhs), d_rhs = einsum(lhs, ct -> rhs)
            ins, os_ = chk[c["name"]].split("->")
            ls_, rs_ = ins.split(",")
            t = np.array(c["ct"]["data"]).reshape(c["ct"]["shape"])
            dl = np.array(c["d_lhs"]["data"]).reshape(c["lhs"]["shape"])
            dr = np.array(c["d_rhs"]["data"]).reshape(c["rhs"]["shape"])
            assert np.allclose(np.einsum(f"{os_},{rs_}->{ls_}", t, r), dl, rtol=1e-12, atol=1e-12), c["name"]
            assert np.allclose(np.einsum(f"{ls_},{os_}->{rs_}", l, t), dr, rtol=1e-12, atol=1e-12), c["name"]
    write_json("dot_general.json", {
        "generator": generator_info(),
        "about": ("lax.dot_general float64 (precision HIGHEST). Arrays flattened row-major. Output dims: batch dims "
                  "(in lhs batch order), then lhs free dims, then rhs free dims. lhs/rhs/ct from numpy default_rng(0) "
                  "standard_normal drawn in order lhs, rhs, ct per case. d_lhs, d_rhs from jax.vjp with cotangent ct."),
        "cases": cases,
    })


# ---------------------------------------------------------------------------
# 4. ops.json (float64)
# ---------------------------------------------------------------------------

def make_ops():
    assert jax.config.jax_enable_x64
    rng = np.random.default_rng(1)
    f64 = np.float64

    def R(*shape, lo=-2.0, hi=2.0):
        return np.round(rng.uniform(lo, hi, shape), 3).astype(f64)

    cases = []

    def add(name, primitive, f, inputs, params=None, diff=None, note=None):
        """inputs: list of (name, np array). diff: indices of differentiable inputs."""
        names = [n for n, _ in inputs]
        vals = [v for _, v in inputs]
        if diff is None:
            diff = list(range(len(vals)))
        def fd(*dv):
            full = list(vals)
            for i, v in zip(diff, dv):
                full[i] = v
            return f(*full)
        out, vjp = jax.vjp(fd, *[jnp.asarray(vals[i]) for i in diff])
        ct = np.round(rng.uniform(-1.0, 1.0, out.shape), 3).astype(f64)
        grads = vjp(jnp.asarray(ct))
        case = {
            "name": name, "primitive": primitive, "params": params or {},
            "inputs": [dict(arr(v), name=n) for n, v in inputs],
            "out": arr(out), "ct": arr(ct),
            "vjp": [dict(arr(g), wrt=names[i]) for i, g in zip(diff, grads)],
            "jaxpr": sanitize(str(jax.make_jaxpr(fd)(*[jnp.asarray(vals[i]) for i in diff]))),
        }
        if note:
            case["note"] = note
        cases.append(case)
        return case

    x = R(2, 3); y = R(2, 3)
    add("add", "add", lax.add, [("x", x), ("y", y)])
    add("sub", "sub", lax.sub, [("x", x), ("y", y)])
    add("mul", "mul", lax.mul, [("x", x), ("y", y)])
    yd = np.array([[1.5, -0.75, 2.0], [-1.25, 0.5, 4.0]])
    add("div", "div", lax.div, [("x", x), ("y", yd)])
    a = np.array([1.0, 2.0, 3.0, -1.0, 0.0, -2.5])
    b = np.array([3.0, 2.0, 1.0, -1.0, 0.0, 1.5])
    c = add("max_ties", "max", lax.max, [("x", a), ("y", b)],
            note="indices 1,3,4 are ties: JAX splits the cotangent 0.5/0.5")
    c = add("min_ties", "min", lax.min, [("x", a), ("y", b)],
            note="indices 1,3,4 are ties: JAX splits the cotangent 0.5/0.5")
    u = R(2, 3)
    add("neg", "neg", lax.neg, [("x", u)])
    add("exp", "exp", lax.exp, [("x", u)])
    pos = R(2, 3, lo=0.2, hi=3.0)
    add("log", "log", lax.log, [("x", pos)])
    add("sin", "sin", lax.sin, [("x", u)])
    add("cos", "cos", lax.cos, [("x", u)])
    add("tanh", "tanh", lax.tanh, [("x", u)])
    r = np.array([-1.5, -0.0, 0.0, 0.25, 2.0, -3.0])
    add("relu_at_zero", "relu (jax.nn.relu: custom_jvp around max(x,0))", jax.nn.relu, [("x", r)],
        note="x contains -0.0 and 0.0: jax.nn.relu gradient at 0 is 0")
    add("square", "square", lax.square, [("x", u)])
    add("sqrt", "sqrt", lax.sqrt, [("x", pos)])
    add("integer_pow_3", "integer_pow", lambda v: lax.integer_pow(v, 3), [("x", u)], params={"y": 3})
    add("pow_2_5", "pow", lambda v, e: lax.pow(v, e), [("x", pos), ("y", np.full(pos.shape, 2.5))],
        note="lax.pow(x, y) with y = 2.5 everywhere; VJP w.r.t. both x and y (d/dy = log(x) * x**y)")
    pred = np.array([[True, False, True], [False, False, True]])
    add("select", "select_n", lambda p, t, f: lax.select(p, t, f),
        [("pred", pred), ("on_true", x), ("on_false", y)], diff=[1, 2],
        note="lax.select(pred, on_true, on_false) == select_n(pred, on_false, on_true); pred not differentiated")
    s = R(2, 3, 4)
    add("reduce_sum_axes_0_2", "reduce_sum", lambda v: jnp.sum(v, axis=(0, 2)), [("x", s)], params={"axes": [0, 2]})
    add("reduce_sum_all", "reduce_sum", lambda v: jnp.sum(v), [("x", s)], params={"axes": [0, 1, 2]})
    v3 = R(3)
    add("broadcast_in_dim", "broadcast_in_dim",
        lambda v: lax.broadcast_in_dim(v, (2, 3, 4), (1,)), [("x", v3)],
        params={"shape": [2, 3, 4], "broadcast_dimensions": [1]})
    v31 = R(3, 1)
    add("broadcast_in_dim_size1", "broadcast_in_dim",
        lambda v: lax.broadcast_in_dim(v, (2, 3, 4), (1, 2)), [("x", v31)],
        params={"shape": [2, 3, 4], "broadcast_dimensions": [1, 2]},
        note="operand dim of size 1 expanded to 4")
    add("transpose", "transpose", lambda v: lax.transpose(v, (2, 0, 1)), [("x", s)], params={"permutation": [2, 0, 1]})
    m = R(4, 6)
    add("slice_strided", "slice", lambda v: lax.slice(v, (1, 0), (4, 6), (2, 3)), [("x", m)],
        params={"start_indices": [1, 0], "limit_indices": [4, 6], "strides": [2, 3]})
    add("pad_interior", "pad", lambda v: lax.pad(v, 0.0, ((1, 0, 1), (0, 2, 1))), [("x", x)],
        params={"padding_value": 0.0, "padding_config": [[1, 0, 1], [0, 2, 1]]},
        note="padding_config per dim = (low, high, interior); padding value not differentiated")
    add("pad_negative_low", "pad", lambda v: lax.pad(v, 0.0, ((-1, 1, 0), (1, -1, 1))), [("x", x)],
        params={"padding_value": 0.0, "padding_config": [[-1, 1, 0], [1, -1, 1]]},
        note="negative low/high padding crops")
    z = R(2, 2)
    add("concatenate", "concatenate", lambda p, q: lax.concatenate([p, q], 1), [("x", x), ("y", z)],
        params={"dimension": 1})
    add("reshape", "reshape", lambda v: lax.reshape(v, (6, 4)), [("x", s)], params={"new_sizes": [6, 4]})

    # sanity checks of documented conventions
    byname = {c["name"]: c for c in cases}
    mx = byname["max_ties"]
    ctv = mx["ct"]["data"]
    for i in (1, 3, 4):
        assert mx["vjp"][0]["data"][i] == 0.5 * ctv[i] and mx["vjp"][1]["data"][i] == 0.5 * ctv[i]
    rl = byname["relu_at_zero"]
    assert rl["vjp"][0]["data"][1] == 0.0 and rl["vjp"][0]["data"][2] == 0.0

    write_json("ops.json", {
        "generator": generator_info(),
        "about": ("float64 forward + VJP per primitive. Arrays flattened row-major. Inputs drawn from numpy "
                  "default_rng(1) uniform rounded to 3 decimals (some fixed by hand); ct = fixed cotangent. "
                  "'vjp' lists the cotangent for each differentiated input ('wrt')."),
        "cases": cases,
    })


def main():
    print("jax", jax.__version__, "numpy", np.__version__)
    os.makedirs(OUT_DIR, exist_ok=True)
    cases = make_residuals()
    for c in cases:
        print(f"== {c['name']}  ({c['count']} residuals, {c['count_by_kind']})")
        for l in c["lines"]:
            print("   " + l)
    jax.config.update("jax_enable_x64", True)
    make_gradients()
    make_dot_general()
    make_ops()
    total = sum(os.path.getsize(os.path.join(OUT_DIR, n)) for n in os.listdir(OUT_DIR))
    print(f"total size of tests/goldens: {total} bytes")
    assert total < 1_000_000


if __name__ == "__main__":
    main()

"""Networks (remat/nn.h, remat/nn_train.h) with Flax linen's names and initial values.

    from remat import nn
    net = nn.remat(nn.MLP(64, 3), policy="dots_with_no_batch_dims_saveable")   # nn.remat(MLP)
    params = net.init(seed=0, input_shape=(32,))    # = model.init(PRNGKey(0), x) in Flax, float32
    params["Dense_0/kernel"]                        # a NumPy view of remat's values (no copy)
    t = nn.Trainer(net, params, in_features=32, n_out=64, loss="mse", lr=1e-3, batch=16)
    t.step(x, y)                                    # updates params in place; returns the loss

Parameter arrays are views of the memory remat owns (writable; a trainer's
step updates them in place); ``Params.copy()`` makes independent ones.
"""

from __future__ import annotations

import statistics
import time
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from . import _remat
from .graph import Fn, Value, _dtype, compile, value_and_grad

IN_FEATURES = 64  # remat mlp compare's input features and classes
CLASSES = 10


class Module:
    """A network module (remat_nn_module): holds no values."""

    def __init__(self, handle: Any) -> None:
        self._h = handle

    @property
    def class_name(self) -> str:
        """Flax's class name ("Dense", "CheckpointMLP", "ScanFFN", ...)."""
        return self._h.class_name()

    def init(self, seed: int = 0, input_shape: Sequence[int] = (1,), dtype: Any = np.float32) -> "Params":
        """``model.init(jax.random.PRNGKey(seed), x)`` for an x of ``input_shape``
        (the last axis the features): Flax's names and values (float64: the
        float32 draws widened)."""
        return Params(_remat.nn_init(self._h, int(seed), tuple(input_shape), _dtype(dtype)))

    def apply(self, fn: Fn, x: Value, params: "Params", values: Optional[Sequence[Value]] = None) -> Value:
        """Emits the module applied to x into ``fn`` (Flax's ``model.apply``),
        reading the parameters from ``values`` (values of fn, one per entry of
        ``params``, e.g. from :meth:`Params.args`; default: declared here)."""
        if not isinstance(params, Params):
            raise _remat.ArgumentError(f"apply: expected the module's Params, got {type(params).__name__}")
        if values is None:
            values = params.args(fn)
        values = list(values)
        if len(values) != len(params):
            raise _remat.ArgumentError(f"apply: {len(values)} parameter values for {len(params)} parameters")
        return Value(fn, _remat.nn_apply(self._h, fn._h, x.id, [v.id for v in values]))

    def __repr__(self) -> str:
        return f"<remat.nn.{self.class_name}>"


class Params:
    """A module's parameters by Flax path, in remat's order; values are views."""

    def __init__(self, handle: Any) -> None:
        self._h = handle

    def items(self) -> List[Tuple[str, np.ndarray]]:
        return self._h.items()

    def keys(self) -> List[str]:
        return [k for k, _ in self.items()]

    def values(self) -> List[np.ndarray]:
        return [v for _, v in self.items()]

    def __getitem__(self, path: str) -> np.ndarray:
        for k, v in self.items():
            if k == path:
                return v
        raise KeyError(path)

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def __len__(self) -> int:
        return len(self.items())

    @property
    def numel(self) -> int:
        return self._h.info()["numel"]

    @property
    def nbytes(self) -> int:
        return self._h.info()["bytes"]

    @property
    def out_shape(self) -> Tuple[int, ...]:
        return self._h.info()["out_shape"]

    def copy(self) -> "Params":
        return Params(self._h.copy())

    def args(self, fn: Fn) -> List[Value]:
        """One argument of fn per parameter, named by its path (remat_nn_params_args)."""
        return [fn.arg(k, v.shape, v.dtype) for k, v in self.items()]


def Dense(features: int, use_bias: bool = True) -> Module:
    """nn.Dense: x @ kernel + bias; kernel lecun_normal, bias zeros."""
    return Module(_remat.nn_dense(int(features), bool(use_bias)))


def LayerNorm(epsilon: float = 1e-6) -> Module:
    """nn.LayerNorm over the last axis (scale ones, bias zeros)."""
    return Module(_remat.nn_layer_norm(float(epsilon)))


def Activation(name: str) -> Module:
    """relu, gelu (approximate, Flax's nn.gelu), gelu_erf, tanh, silu, identity as a module."""
    return Module(_remat.nn_act(name))


def Sequential(layers: Sequence[Module]) -> Module:
    """nn.Sequential: the layers inline in the enclosing scope."""
    return Module(_remat.nn_sequential([m._h for m in layers]))


def Residual(inner: Module) -> Module:
    """x + inner(x)."""
    return Module(_remat.nn_residual(inner._h))


def Block(class_name: str, body: Module) -> Module:
    """A named class owning a scope (``class_name``_k in its parent)."""
    return Module(_remat.nn_block(class_name, body._h))


def MLP(features: int, depth: int, activation: str = "relu") -> Module:
    """class MLP: depth Dense(features) layers, the activation between them."""
    return Module(_remat.nn_mlp(int(features), int(depth), activation))


def FFN(width: int, hidden: int, activation: str = "gelu") -> Module:
    """class FFN: x + Dense(width)(act(Dense(hidden)(LayerNorm()(x))))."""
    return Module(_remat.nn_ffn(int(width), int(hidden), activation))


def MLPBlock(width: int, activation: str = "relu") -> Module:
    """class MLPBlock: x + act(Dense(width)(x))."""
    return Module(_remat.nn_mlp_block(int(width), activation))


def remat(module: Module, policy: Any = None) -> Module:
    """nn.remat(module, policy=...): one checkpoint region per application
    (policy names as remat.checkpoint_policies; None: nothing_saveable)."""
    return Module(_remat.nn_remat(module._h, policy))


def scan(block: Module, length: int, schedule: Optional[str] = None) -> Module:
    """nn.scan over layers: ``length`` copies of a shape-preserving block as one
    scan over stacked parameters; ``schedule`` picks the layer inputs the
    backward keeps ("store-all", "per-step", "binomial:S", ...)."""
    return Module(_remat.nn_scan(block._h, int(length), schedule))


def loss_fn(module: Module, params: Params, loss: str, rows: int, in_features: int, n_out: int) -> Fn:
    """The loss the trainer differentiates as an Fn: args (params..., x (rows,
    in_features), y (rows, n_out)), one scalar output ("softmax_cross_entropy" or "mse")."""
    return Fn(_handle=_remat.nn_loss_fn(module._h, params._h, loss, int(rows), int(in_features), int(n_out)))


class Trainer:
    """Mini-batch training (remat_nn_trainer): one compiled value-and-gradient
    program, optax's Adam or SGD per parameter. x and y are arrays of the
    parameters' dtype (float32 by default), C-contiguous, read in place."""

    def __init__(self, module: Module, params: Params, in_features: int, n_out: int, *,
                 loss: str = "softmax_cross_entropy", optimizer: str = "adam", lr: float = 1e-3,
                 momentum: float = 0.0, nesterov: bool = False, batch: int = 32, shards: int = 0) -> None:
        self.module, self.params = module, params
        self._h = _remat.nn_trainer(module._h, params._h, int(in_features), int(n_out), loss=loss,
                                    optimizer=optimizer, lr=float(lr), momentum=float(momentum),
                                    nesterov=bool(nesterov), batch=int(batch), shards=int(shards))

    def step(self, x: np.ndarray, y: np.ndarray) -> float:
        """One optimiser step on the rows of x, y; returns the loss before the update."""
        return self._h.step(x, y)

    def predict(self, x: np.ndarray) -> np.ndarray:
        return self._h.predict(x)

    @property
    def plan(self) -> dict:
        return self._h.plan()


def _canonical(path: str, layers: int, value: np.ndarray) -> Iterator[Tuple[tuple, np.ndarray]]:
    """A parameter as (block class, layer, rest) keys: unrolled "CheckpointMLPBlock_3/..."
    and scanned "ScanMLPBlock_0/..."[3] meet at ("MLPBlock", 3, "...")."""
    head, _, rest = path.partition("/")
    cls, _, k = head.rpartition("_")
    if cls.startswith("Scan"):
        for layer in range(layers):
            yield (cls[4:], layer, rest), value[layer]
    elif cls.endswith(("MLPBlock", "FFN")) and rest:
        yield (cls[10:] if cls.startswith("Checkpoint") else cls, int(k), rest), value
    else:
        yield (path,), value


def mlp_compare(layers: int = 16, width: int = 256, batch: int = 64, block: str = "mlp",
                activation: Optional[str] = None,
                policies: Sequence[str] = ("none", "nothing_saveable", "dots_with_no_batch_dims_saveable"),
                schedules: Sequence[str] = ("store-all", "per-step", "binomial:4"), repeat: int = 5,
                seed: int = 0) -> List[Dict[str, Any]]:
    """``remat mlp compare`` as a list of records (its --json objects): one
    gradient of Dense(width) -> layers blocks -> Dense(10) on the tool's
    seeded batch, per checkpoint policy (blocks unrolled, each in nn.remat)
    and per schedule (blocks scanned), with the memory plan, the measured
    peaks, recomputation, the median time and the largest difference from
    the unrolled gradient without checkpointing (0: schedules and policies
    change memory and time, never the gradient). ``residual_bytes`` are the
    activations the backward keeps, without the arguments (weights and batch:
    ``weight_bytes`` apart); ``budget_choice`` is the tool's mark of the
    variant its --memory-budget picks (no budget here: False)."""
    act = activation or ("gelu" if block == "ffn" else "relu")
    if block not in ("mlp", "ffn"):
        raise _remat.ArgumentError(f"block '{block}': expected mlp or ffn")
    x, y = _remat.splitmix_batch(int(seed) ^ 0x6D6C702D62617463, int(batch), IN_FEATURES, CLASSES)

    def make_block() -> Module:
        return FFN(width, 4 * width, act) if block == "ffn" else MLPBlock(width, act)

    variants = [("unrolled none", False, "none", None)]
    variants += [(f"unrolled {p}", False, p, None) for p in policies if p != "none"]
    variants += [(f"scan {s}", True, None, s) for s in schedules]
    runs: List[Dict[str, Any]] = []
    weights: Dict[tuple, np.ndarray] = {}
    for label, scanned, policy, schedule in variants:
        if scanned:
            mid = [scan(make_block(), layers, schedule)]
        else:
            mid = [make_block() if policy == "none" else remat(make_block(), policy) for _ in range(layers)]
        net = Sequential([Dense(width)] + mid + [Dense(CLASSES)])
        params = net.init(seed, (IN_FEATURES,))
        # every variant starts from the same weights: nn.remat renames a block
        # (CheckpointMLPBlock_k), and Flax's RNG streams follow the names
        if runs:
            for k, v in params.items():
                for key, view in _canonical(k, layers, v):
                    view[...] = weights[key]
        else:
            weights = {key: view.copy() for k, v in params.items() for key, view in _canonical(k, layers, v)}
        f = loss_fn(net, params, "softmax_cross_entropy", batch, IN_FEATURES, CLASSES)
        prog = compile(value_and_grad(f, argnums=list(range(len(params)))))
        times, out, stats = [], None, None
        for _ in range(max(1, int(repeat))):
            t = time.perf_counter()
            out, stats = prog.run(*params.values(), x, y)
            times.append(time.perf_counter() - t)
        grads = {}
        for (k, _), g in zip(params.items(), out[1:]):
            for key, v in _canonical(k, layers, g):
                grads[key] = v
        plan = prog.plan
        runs.append(dict(variant=label, scanned=scanned, policy=policy, schedule=schedule, layers=layers,
                         width=width, batch=batch, block=block, activation=act, seed=seed,
                         residual_bytes=plan["residual_bytes"] - plan["residual_arg_bytes"],
                         weight_bytes=sum(v.nbytes for v in weights.values()), budget_choice=False,
                         arena_bytes_predicted=plan["arena_bytes"],
                         arena_bytes_measured=stats["peak_arena_bytes"],
                         snapshot_bytes_predicted=plan["peak_snapshot_bytes"],
                         snapshot_bytes_measured=stats["peak_snapshot_bytes"],
                         recomputed_ops=stats["recomputed_ops"],
                         recompute_instructions=plan["recompute_instructions"],
                         scan_body_evals=stats["forward_evals"], seconds=statistics.median(times),
                         loss=float(out[0]), offload_bytes_predicted=plan["offload_bytes"],
                         offload_bytes_measured=stats["offload_bytes"], _grads=grads))
    ref = runs[0]["_grads"]
    for r in runs:
        g = r.pop("_grads")
        r["max_abs_grad_diff"] = float(max(np.max(np.abs(g[k] - ref[k])) for k in ref))
    if "none" not in policies:
        runs = runs[1:]
    return runs

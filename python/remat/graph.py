"""The core graph builder (remat/graph.h, remat/ad.h, remat/scan.h, remat/exec.h).

Names follow jax.numpy and jax.lax where they mean the same::

    import numpy as np, remat

    f = remat.Fn("loss")
    x = f.arg("x", (4, 4))                      # float64 unless dtype= says float32
    w = f.arg("w", (4, 4))
    f.output(remat.sum(remat.sin(remat.sin(x @ w))))
    g = remat.grad(f, argnums=1)                # d loss / d w, a new Fn
    (dw,) = remat.compile(g)(np.eye(4), np.ones((4, 4)))

A :class:`Value` belongs to one :class:`Fn`; ops on values record the
caller's file:line, so errors and :meth:`Fn.saved_residuals` name the Python
source. A build error (shapes that do not fit, a bad axis) raises at once
with remat's message (``remat.ShapeError``, ...). Compiled programs read
their inputs in place (float64 or float32 as declared, C-contiguous) and
return new arrays.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Iterable, Optional, Sequence, Tuple, Union

import numpy as np

from . import _remat

_HERE = os.path.dirname(os.path.abspath(__file__))
Scalar = Union[int, float]


def _loc() -> Tuple[str, int]:
    """The first frame outside this package: the user's file and line."""
    f = sys._getframe(1)
    while f is not None and os.path.dirname(os.path.abspath(f.f_code.co_filename)) == _HERE:
        f = f.f_back
    if f is None:
        return ("<python>", 0)
    return (f.f_code.co_filename, f.f_lineno)


def _dtype(dtype: Any) -> str:
    d = np.dtype(dtype)
    if d == np.float64:
        return "float64"
    if d == np.float32:
        return "float32"
    raise _remat.DtypeError(f"dtype {d}: remat has float32 and float64")


class Value:
    """A value of a :class:`Fn` (an op's output or an argument); arithmetic
    operators build ops: ``+ - * / @ ** -x``, comparisons ``< <= > >=``."""

    __slots__ = ("fn", "id")

    def __init__(self, fn: "Fn", vid: int) -> None:
        self.fn = fn
        self.id = vid

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(self.fn._h.aval(self.id)[0])

    @property
    def shape(self) -> Tuple[int, ...]:
        return self.fn._h.aval(self.id)[1]

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def op(self) -> str:
        """The primitive that made it ("dot_general", "argument", ...)."""
        return self.fn._h.aval(self.id)[2]

    def __repr__(self) -> str:
        return f"<remat.Value {self.dtype.name}{list(self.shape)} {self.op} in {self.fn.name}>"

    def _bin(self, name: str, other: Any, swap: bool = False) -> "Value":
        if isinstance(other, Value):
            a, b = (other, self) if swap else (self, other)
            return _binary(name, a, b)
        if isinstance(other, (int, float, np.floating, np.integer)) and not isinstance(other, bool):
            if not swap:
                return Value(self.fn, self.fn._h.binary_scalar(_loc(), name, self.id, float(other)))
            c = full((), float(other), self.dtype, fn=self.fn)
            return _binary(name, c, self)
        return NotImplemented

    def __add__(self, o: Any) -> "Value": return self._bin("add", o)
    def __radd__(self, o: Any) -> "Value": return self._bin("add", o, True)
    def __sub__(self, o: Any) -> "Value": return self._bin("sub", o)
    def __rsub__(self, o: Any) -> "Value": return self._bin("sub", o, True)
    def __mul__(self, o: Any) -> "Value": return self._bin("mul", o)
    def __rmul__(self, o: Any) -> "Value": return self._bin("mul", o, True)
    def __truediv__(self, o: Any) -> "Value": return self._bin("div", o)
    def __rtruediv__(self, o: Any) -> "Value": return self._bin("div", o, True)
    def __gt__(self, o: Any) -> "Value": return self._bin("gt", o)
    def __ge__(self, o: Any) -> "Value": return self._bin("ge", o)
    def __lt__(self, o: Any) -> "Value": return self._bin("lt", o)
    def __le__(self, o: Any) -> "Value": return self._bin("le", o)
    def __neg__(self) -> "Value": return negative(self)
    def __matmul__(self, o: "Value") -> "Value": return matmul(self, o)
    def __pow__(self, p: Scalar) -> "Value": return power(self, p)

    def __getitem__(self, i: int) -> "Value":
        if not isinstance(i, (int, np.integer)):
            raise _remat.ArgumentError("Value[i]: only an int index along axis 0 (lax.index_in_dim); "
                                       "use remat.slice for ranges")
        return Value(self.fn, self.fn._h.index(_loc(), self.id, int(i)))

    @property
    def T(self) -> "Value":
        return transpose(self)

    def reshape(self, *shape: Any) -> "Value":
        return reshape(self, shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape)

    def sum(self, axis: Any = None) -> "Value":
        return sum(self, axis)

    def max(self, axis: Any = None) -> "Value":
        return max(self, axis)

    def astype(self, dtype: Any) -> "Value":
        return Value(self.fn, self.fn._h.convert(_loc(), self.id, _dtype(dtype)))


class Fn:
    """A function under construction (remat_fn): arguments, ops, outputs."""

    def __init__(self, name: str = "fn", _handle: Any = None) -> None:
        self._h = _handle if _handle is not None else _remat.Fn(name)

    @property
    def name(self) -> str:
        return self._h.info()["name"]

    def arg(self, name: str, shape: Sequence[int] = (), dtype: Any = np.float64) -> Value:
        """A new argument (jax: a traced input) of the shape and dtype."""
        return Value(self, self._h.arg(_loc(), name, _dtype(dtype), tuple(shape)))

    def const(self, array: Any) -> Value:
        """A constant copied from an array (float32 or float64; others become float64)."""
        a = np.asarray(array)
        if a.dtype not in (np.float32, np.float64):
            a = a.astype(np.float64)
        return Value(self, self._h.const(_loc(), a))

    def output(self, *values: Value) -> None:
        """Declares the outputs, in order."""
        for v in values:
            _check(self, v)
            self._h.output(_loc(), v.id)

    @property
    def args(self) -> Tuple[Value, ...]:
        return tuple(Value(self, i) for _, i in self._h.info()["args"])

    @property
    def arg_names(self) -> Tuple[str, ...]:
        return tuple(n for n, _ in self._h.info()["args"])

    @property
    def outputs(self) -> Tuple[Value, ...]:
        return tuple(Value(self, i) for i in self._h.info()["outputs"])

    def __call__(self, *args: Value) -> Any:
        """Calls this function inside another (the caller's values as
        arguments): inlined, or a checkpoint region for a :func:`checkpoint`
        function. One output: a Value; several: a tuple."""
        if not args or not all(isinstance(a, Value) for a in args):
            raise _remat.ArgumentError(f"{self.name}(...): call it with Values of the calling function; "
                                       "to run it on arrays, compile it")
        caller = args[0].fn
        for a in args:
            _check(caller, a)
        outs = caller._h.call(_loc(), self._h, [a.id for a in args])
        vals = tuple(Value(caller, o) for o in outs)
        return vals[0] if len(vals) == 1 else vals

    def text(self) -> str:
        """A jaxpr-like listing (remat_fn_print)."""
        return self._h.text()

    def compile(self, jit: str = "auto") -> "Program":
        return compile(self, jit)

    def saved_residuals(self, argnums: Union[int, Sequence[int], None] = None) -> list:
        """What the VJP with respect to ``argnums`` (default: all) keeps from
        the forward pass, one line per value, as print_saved_residuals prints."""
        return saved_residuals(self, argnums)

    def __repr__(self) -> str:
        info = self._h.info()
        return f"<remat.Fn {info['name']}: {len(info['args'])} args, {len(info['outputs'])} outputs>"


def _check(fn: Fn, v: Any) -> None:
    if not isinstance(v, Value):
        raise _remat.ArgumentError(f"expected a remat.Value, got {type(v).__name__}")
    if v.fn._h is not fn._h:
        raise _remat.ArgumentError(f"the value belongs to {v.fn.name}, not to {fn.name}")


def _unary(name: str, x: Value) -> Value:
    _check(x.fn, x)
    return Value(x.fn, x.fn._h.unary(_loc(), name, x.id))


def _binary(name: str, a: Any, b: Any) -> Value:
    if not isinstance(a, Value):
        a, b = b, a
        if not isinstance(a, Value):
            raise _remat.ArgumentError(f"{name}: at least one operand must be a remat.Value")
        return a._bin(name, b, swap=True)
    if not isinstance(b, Value):
        return a._bin(name, b)
    _check(a.fn, b)
    return Value(a.fn, a.fn._h.binary(_loc(), name, a.id, b.id))


def _axes(x: Value, axis: Any) -> Optional[list]:
    if axis is None:
        return None
    axes = [axis] if isinstance(axis, (int, np.integer)) else list(axis)
    return [int(a) + x.ndim if int(a) < 0 else int(a) for a in axes]


# ---- jax.numpy names ----
def sin(x: Value) -> Value: return _unary("sin", x)
def cos(x: Value) -> Value: return _unary("cos", x)
def exp(x: Value) -> Value: return _unary("exp", x)
def log(x: Value) -> Value: return _unary("log", x)
def tanh(x: Value) -> Value: return _unary("tanh", x)
def sqrt(x: Value) -> Value: return _unary("sqrt", x)
def square(x: Value) -> Value: return _unary("square", x)
def negative(x: Value) -> Value: return _unary("neg", x)
def relu(x: Value) -> Value: return _unary("relu", x)
def erf(x: Value) -> Value: return _unary("erf", x)
def log1p(x: Value) -> Value: return _unary("log1p", x)
def expm1(x: Value) -> Value: return _unary("expm1", x)
def logistic(x: Value) -> Value:
    """lax.logistic (jax.nn.sigmoid): 1 / (1 + exp(-x))."""
    return _unary("logistic", x)
sigmoid = logistic
def erf_inv(x: Value) -> Value: return _unary("erf_inv", x)
def add(a: Any, b: Any) -> Value: return _binary("add", a, b)
def subtract(a: Any, b: Any) -> Value: return _binary("sub", a, b)
def multiply(a: Any, b: Any) -> Value: return _binary("mul", a, b)
def divide(a: Any, b: Any) -> Value: return _binary("div", a, b)
def maximum(a: Any, b: Any) -> Value: return _binary("max", a, b)
def minimum(a: Any, b: Any) -> Value: return _binary("min", a, b)
def greater(a: Any, b: Any) -> Value: return _binary("gt", a, b)
def greater_equal(a: Any, b: Any) -> Value: return _binary("ge", a, b)
def less(a: Any, b: Any) -> Value: return _binary("lt", a, b)
def less_equal(a: Any, b: Any) -> Value: return _binary("le", a, b)
def equal(a: Any, b: Any) -> Value: return _binary("eq", a, b)
def not_equal(a: Any, b: Any) -> Value: return _binary("ne", a, b)


def power(x: Value, p: Scalar) -> Value:
    """x ** p: lax.integer_pow for an int p, lax.pow otherwise."""
    _check(x.fn, x)
    if isinstance(p, (int, np.integer)) and not isinstance(p, bool):
        return Value(x.fn, x.fn._h.integer_pow(_loc(), x.id, int(p)))
    return Value(x.fn, x.fn._h.pow(_loc(), x.id, float(p)))


def where(cond: Value, x: Value, y: Value) -> Value:
    """cond != 0 ? x : y (lax.select, broadcasting)."""
    _check(cond.fn, x)
    _check(cond.fn, y)
    return Value(cond.fn, cond.fn._h.select(_loc(), cond.id, x.id, y.id))


def matmul(a: Value, b: Value) -> Value:
    """a @ b: a's last axis with b's first (b of rank 1 or 2)."""
    _check(a.fn, b)
    return Value(a.fn, a.fn._h.matmul(_loc(), a.id, b.id))


def dot_general(lhs: Value, rhs: Value, dimension_numbers: Any) -> Value:
    """lax.dot_general with ``((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))``."""
    _check(lhs.fn, rhs)
    (lc, rc), (lb, rb) = dimension_numbers
    return Value(lhs.fn, lhs.fn._h.dot_general(_loc(), lhs.id, rhs.id, list(lc), list(rc), list(lb), list(rb)))


def sum(x: Value, axis: Any = None) -> Value:  # noqa: A001 (jnp.sum)
    """jnp.sum over ``axis`` (None: all, giving a scalar)."""
    return Value(x.fn, x.fn._h.sum(_loc(), x.id, _axes(x, axis)))


def max(x: Value, axis: Any = None) -> Value:  # noqa: A001 (jnp.max)
    """lax.reduce_max over ``axis`` (None: all)."""
    return Value(x.fn, x.fn._h.reduce_max(_loc(), x.id, _axes(x, axis)))


def reshape(x: Value, shape: Sequence[int]) -> Value:
    return Value(x.fn, x.fn._h.reshape(_loc(), x.id, tuple(shape)))


def broadcast_to(x: Value, shape: Sequence[int]) -> Value:
    return Value(x.fn, x.fn._h.reshape(_loc(), x.id, tuple(shape), True))


def broadcast_in_dim(x: Value, shape: Sequence[int], broadcast_dimensions: Sequence[int]) -> Value:
    return Value(x.fn, x.fn._h.broadcast_in_dim(_loc(), x.id, tuple(shape), tuple(broadcast_dimensions)))


def transpose(x: Value, axes: Optional[Sequence[int]] = None) -> Value:
    perm = list(reversed(range(x.ndim))) if axes is None else list(axes)
    return Value(x.fn, x.fn._h.transpose(_loc(), x.id, perm))


def slice(x: Value, start_indices: Sequence[int], limit_indices: Sequence[int],  # noqa: A001 (lax.slice)
          strides: Optional[Sequence[int]] = None) -> Value:
    return Value(x.fn, x.fn._h.slice(_loc(), x.id, list(start_indices), list(limit_indices),
                                     None if strides is None else list(strides)))


def concatenate(values: Sequence[Value], axis: int = 0) -> Value:
    values = list(values)
    if not values:
        raise _remat.ArgumentError("concatenate: no values")
    for v in values:
        _check(values[0].fn, v)
    return Value(values[0].fn, values[0].fn._h.concatenate(_loc(), [v.id for v in values], int(axis)))


def stop_gradient(x: Value) -> Value:
    return Value(x.fn, x.fn._h.stop_gradient(_loc(), x.id))


def checkpoint_name(x: Value, name: str) -> Value:
    """jax.ad_checkpoint.checkpoint_name: tags x for save_only_these_names policies."""
    return Value(x.fn, x.fn._h.name(_loc(), x.id, name))


def solve(a: Value, b: Value) -> Value:
    """jnp.linalg.solve."""
    _check(a.fn, b)
    return Value(a.fn, a.fn._h.solve(_loc(), a.id, b.id))


def full(shape: Sequence[int], value: float, dtype: Any = np.float64, *, fn: Fn) -> Value:
    """jnp.full in ``fn``."""
    return Value(fn, fn._h.fill(_loc(), _dtype(dtype), tuple(shape), float(value)))


# ---- checkpoint policies (jax.checkpoint_policies) ----
class checkpoint_policies:
    """Policies by name, as jax.checkpoint_policies."""

    nothing_saveable = "nothing_saveable"
    everything_saveable = "everything_saveable"
    dots_saveable = "dots_saveable"
    dots_with_no_batch_dims_saveable = "dots_with_no_batch_dims_saveable"
    checkpoint_dots = "checkpoint_dots"  # JAX's alias of dots_saveable
    checkpoint_dots_with_no_batch_dims = "checkpoint_dots_with_no_batch_dims"

    @staticmethod
    def save_only_these_names(*names: str) -> tuple:
        return ("save_only_these_names", list(names))

    @staticmethod
    def save_any_names_but_these(*names: str) -> tuple:
        return ("save_any_names_but_these", list(names))

    @staticmethod
    def save_anything_except_these_names(*names: str) -> tuple:
        return ("save_anything_except_these_names", list(names))

    # JAX's offload policies: an offloaded residual goes to the slow tier
    # (compile option tier_dir) after the forward and comes back for the
    # backward; the text form is read by remat_policy_named.
    @staticmethod
    def save_and_offload_only_these_names(*, names_which_can_be_saved: Sequence[str],
                                          names_which_can_be_offloaded: Sequence[str], offload_src: str,
                                          offload_dst: str) -> str:
        def names(v: Sequence[str]) -> str:
            return "[" + ", ".join(repr(str(n)) for n in v) + "]"
        return (f"save_and_offload_only_these_names({names(names_which_can_be_saved)}, "
                f"{names(names_which_can_be_offloaded)}, {offload_src!r}, {offload_dst!r})")

    @staticmethod
    def offload_dot_with_no_batch_dims(offload_src: str, offload_dst: str) -> str:
        return f"offload_dot_with_no_batch_dims({offload_src!r}, {offload_dst!r})"


def _argnums(fn: Fn, argnums: Union[int, Sequence[int], None]) -> list:
    if argnums is None:
        return []
    if isinstance(argnums, (int, np.integer)):
        return [int(argnums)]
    return [int(a) for a in argnums]


def _transform(kind: str, fn: Fn, argnums: Any) -> Fn:
    if not isinstance(fn, Fn):
        raise _remat.ArgumentError(f"{kind}: expected a remat.Fn, got {type(fn).__name__}")
    return Fn(_handle=getattr(_remat, kind)(fn._h, _argnums(fn, argnums)))


def grad(fn: Fn, argnums: Union[int, Sequence[int]] = 0) -> Fn:
    """jax.grad: a new Fn taking fn's args and returning d out / d args[argnums] (one scalar output)."""
    return _transform("grad", fn, argnums)


def value_and_grad(fn: Fn, argnums: Union[int, Sequence[int]] = 0) -> Fn:
    """jax.value_and_grad: outputs (value, gradients...)."""
    return _transform("value_and_grad", fn, argnums)


def vjp(fn: Fn, argnums: Union[int, Sequence[int], None] = None) -> Fn:
    """The VJP as one Fn: takes (args..., output cotangents...), returns (outputs..., arg cotangents...)."""
    return _transform("vjp", fn, argnums)


def jvp(fn: Fn, argnums: Union[int, Sequence[int], None] = None) -> Fn:
    """jax.jvp as one Fn: takes (args..., tangents of argnums...), returns (outputs..., output tangents...)."""
    return _transform("jvp", fn, argnums)


def jacfwd(fn: Fn, argnums: Union[int, Sequence[int]] = 0) -> Fn:
    return _transform("jacfwd", fn, argnums)


def hvp(fn: Fn, argnums: Union[int, Sequence[int]] = 0) -> Fn:
    return _transform("hvp", fn, argnums)


def checkpoint(fn: Fn, policy: Any = None) -> Fn:
    """jax.checkpoint(fn, policy=...): a region; call it inside another Fn.
    policy: None (nothing_saveable), a name of :class:`checkpoint_policies`,
    or save_only_these_names(...)."""
    if not isinstance(fn, Fn):
        raise _remat.ArgumentError(f"checkpoint: expected a remat.Fn, got {type(fn).__name__}")
    return Fn(_handle=_remat.checkpoint(fn._h, policy))


remat = checkpoint  # jax.remat


def saved_residuals(fn: Fn, argnums: Union[int, Sequence[int], None] = None) -> list:
    """jax.ad_checkpoint.print_saved_residuals as a list of its lines
    ("f64[4,4] output of sin at model.py:12"); ``argnums`` default: all."""
    _, _, text = _remat.saved_residuals(fn._h, _argnums(fn, argnums))
    return text.splitlines()


def print_saved_residuals(fn: Fn, argnums: Union[int, Sequence[int], None] = None) -> None:
    for line in saved_residuals(fn, argnums):
        print(line)


def _unroll(unroll: Any) -> int:
    if not isinstance(unroll, (int, np.integer)) or isinstance(unroll, bool):
        raise _remat.ArgumentError(f"scan: unroll: expected an int, got {type(unroll).__name__}")
    if not 1 <= unroll <= 1 << 20:
        raise _remat.ArgumentError(f"scan: unroll: {unroll}; expected 1 to {1 << 20} (lax.scan's unroll)")
    return int(unroll)


def scan(body: Fn, init: Sequence[Value], xs: Sequence[Value] = (), consts: Sequence[Value] = (), *,
         length: Optional[int] = None, reverse: bool = False, schedule: Optional[str] = None,
         policy: Any = None, unroll: int = 1) -> Tuple[Tuple[Value, ...], Tuple[Value, ...]]:
    """lax.scan: body(carry..., x_t..., consts...) -> (carry'..., y_t...).

    Returns (final carries, stacked ys). ``schedule`` is the reverse pass's
    checkpoint schedule by name ("store-all" default, "per-step",
    "periodic:K", "two-level", "binomial:S", "online:S"); ``policy`` makes
    the body a checkpoint region (scan(checkpoint(body, policy))). ``unroll``
    (lax.scan's, an int >= 1) runs that many bodies per iteration of the
    interpreted loop; results are unchanged to the bit (compiled loops ignore
    it)."""
    init, xs, consts = list(init), list(xs), list(consts)
    vals = init + xs + consts
    if not vals:
        raise _remat.ArgumentError("scan: needs at least one carry")
    f = vals[0].fn
    for v in vals:
        _check(f, v)
    if length is None:
        if not xs:
            raise _remat.ArgumentError("scan: length is required without xs")
        length = xs[0].shape[0]
    carry, ys = f._h.scan(_loc(), body._h, int(length), [v.id for v in init], [v.id for v in xs],
                          [v.id for v in consts], schedule, bool(reverse), policy, _unroll(unroll))
    return tuple(Value(f, c) for c in carry), tuple(Value(f, y) for y in ys)


class Program:
    """A compiled Fn (remat_program). Call it on arrays: one output returns
    an array, several a tuple. :meth:`run` returns the run's stats too."""

    def __init__(self, handle: Any) -> None:
        self._h = handle
        self.inputs, self.outputs = handle.signature()

    @property
    def plan(self) -> dict:
        """The static memory plan (bytes known before the run)."""
        return self._h.plan()

    def run(self, *arrays: Any) -> Tuple[tuple, dict]:
        return self._h.run(list(arrays))

    def __call__(self, *arrays: Any) -> Any:
        outs, _ = self._h.run(list(arrays))
        return outs[0] if len(outs) == 1 else outs


def compile(fn: Fn, jit: str = "auto") -> Program:  # noqa: A001
    """remat_compile on the CPU; ``jit``: "auto", "always" or "never" (compiled scan loops)."""
    if not isinstance(fn, Fn):
        raise _remat.ArgumentError(f"compile: expected a remat.Fn, got {type(fn).__name__}")
    return Program(_remat.compile(fn._h, jit))

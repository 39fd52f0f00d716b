"""Chemical kinetics: mechanisms, plug-flow reactors, ensembles and fits.

The same engine as ``remat pfr simulate|ensemble|fit`` (remat/pfr.h,
remat/fit.h), with NumPy arrays in and out. Arrays given to remat are read in
place when they are float64 and C-contiguous; an array of another dtype or
layout raises (``remat.DtypeError``, ``remat.ShapeError``) rather than being
copied behind your back. Lists, tuples and dicts are converted (small copies).
Every result array is a new array that owns its memory.
"""

from __future__ import annotations

import contextlib
import math
import os
import tempfile
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, NamedTuple, Optional, Sequence, Union

import numpy as np

from . import _remat

ArrayLike = Union[np.ndarray, Sequence[float]]
Values = Union[ArrayLike, Mapping[str, float]]
PathLike = Union[str, "os.PathLike[str]"]


class Param(NamedTuple):
    """A parameter as declared: ``param k1 = 1.0 in [0, 100]``."""

    name: str
    value: float
    lo: float
    hi: float


class Reaction(NamedTuple):
    """A reaction: its net rate as text, net stoichiometry by species, its file line."""

    rate: str
    stoich: dict
    line: int


class Mechanism:
    """A reaction mechanism (remat/mechanism.h's format).

    Made by :meth:`from_file` or :meth:`from_string`; its species, parameters,
    constants and reactions are plain Python collections, read once.
    """

    def __init__(self, handle: Any) -> None:
        if not isinstance(handle, _remat.Mechanism):
            raise _remat.ArgumentError("Mechanism: use Mechanism.from_file(path) or Mechanism.from_string(text)")
        self._h = handle
        info = handle.info()
        self.source: str = info["source"]
        self.indep: str = info["indep"]
        self.species: tuple = tuple(info["species"])
        self.params: dict = {p[0]: Param(*p) for p in info["params"]}
        self.consts: dict = dict(info["consts"])
        self.lets: dict = dict(info["lets"])
        self.rhs: dict = dict(zip(self.species, info["rhs"]))
        self.reactions: list = [Reaction(*r) for r in info["reactions"]]
        self.uses_indep: bool = bool(info["uses_indep"])

    @classmethod
    def from_file(cls, path: PathLike) -> "Mechanism":
        """Reads a mechanism file; errors (``remat.ParseError``, ``remat.FileError``) name path:line:column."""
        return cls(_remat.parse_file(os.fspath(path)))

    @classmethod
    def from_string(cls, text: str, name: Optional[str] = None) -> "Mechanism":
        """Parses mechanism text; ``name`` (default ``<string>``) prefixes error messages."""
        if not isinstance(text, str):
            raise _remat.ArgumentError(f"Mechanism.from_string: text must be a str, got {type(text).__name__}")
        return cls(_remat.parse_string(text, name))

    @property
    def param_names(self) -> tuple:
        return tuple(self.params)

    @property
    def param_values(self) -> np.ndarray:
        """The declared values, in declaration order (a new array)."""
        return np.array([p.value for p in self.params.values()], dtype=np.float64)

    def species_index(self, name: str) -> int:
        if name not in self.species:
            raise _remat.ArgumentError(
                f"'{name}' is not a species of {self.source} (species: {', '.join(self.species) or 'none'})")
        return self.species.index(name)

    def param_index(self, name: str) -> int:
        if name not in self.params:
            raise _remat.ArgumentError(
                f"'{name}' is not a parameter of {self.source} (parameters: {', '.join(self.params) or 'none'})")
        return list(self.params).index(name)

    def eval_rhs(self, t: float, y: Values, params: Optional[Values] = None) -> np.ndarray:
        """dy/dt at (t, y, params) by the double reference evaluator."""
        return self._h.eval_rhs(float(t), _species_vector(self, y, "y"), _param_vector(self, params, "params"))

    def __repr__(self) -> str:
        return f"<remat.Mechanism {self.source!r}: species {list(self.species)}, params {list(self.params)}>"


def _named(mech: Mechanism, values: Mapping[str, float], what: str, names: Sequence[str], base: np.ndarray,
           kind: str) -> np.ndarray:
    out = base.copy()
    for k, v in values.items():
        if k not in names:
            raise _remat.ArgumentError(
                f"{what}: '{k}' is not a {kind} of {mech.source} "
                f"({'species' if kind == 'species' else kind + 's'}: {', '.join(names) or 'none'})")
        try:
            out[list(names).index(k)] = float(v)
        except (TypeError, ValueError):
            raise _remat.DtypeError(f"{what}: {k} = {v!r} is not a number") from None
    return out


def _species_vector(mech: Mechanism, v: Values, what: str) -> Any:
    """A dict by species name (others 0), or an array given as is (checked in C)."""
    if isinstance(v, Mapping):
        return _named(mech, v, what, mech.species, np.zeros(len(mech.species)), "species")
    return v


def _param_vector(mech: Mechanism, v: Optional[Values], what: str) -> Any:
    """None: the declared values; a dict by parameter name (others declared); an array as is."""
    if v is None:
        return mech.param_values
    if isinstance(v, Mapping):
        return _named(mech, v, what, list(mech.params), mech.param_values, "parameter")
    return v


def _integrator(method: Optional[str], steps: Optional[int], dt: Optional[float], tol_given: bool,
                fixed_default: str) -> tuple:
    """(method, adaptive) as the remat tool chooses them (pfr_cli_setup)."""
    if steps is not None and dt is not None:
        raise _remat.ArgumentError("steps and dt exclude each other: give the number of steps or the step size")
    fixed = steps is not None or dt is not None
    if method is None:
        method = fixed_default if fixed else "tsit5"
    if not isinstance(method, str):
        raise _remat.ArgumentError(f"method: expected a name such as 'tsit5', got {type(method).__name__}")
    adaptive = not fixed and method in ("tsit5", "dopri5", "rodas5")
    if tol_given and not adaptive:
        raise _remat.ArgumentError(
            "rtol, atol and max_steps apply to adaptive stepping (method tsit5, dopri5 or rodas5 without steps or "
            "dt); " + ("steps/dt ask for fixed steps" if fixed else f"{method} has no error estimate"))
    return method, adaptive


def _steps_arg(steps: Optional[int], dt: Optional[float], adaptive: bool, default_steps: int) -> tuple:
    if adaptive:
        return 0, 0.0
    if dt is not None:
        dt = float(dt)
        if not dt > 0 or not math.isfinite(dt):
            raise _remat.BadValueError(f"dt: {dt} is not a positive step")
        return 0, dt
    if steps is None:
        return default_steps, 0.0
    if not isinstance(steps, (int, np.integer)) or isinstance(steps, bool) or steps < 1:
        raise _remat.ArgumentError(f"steps: {steps!r} is not a positive int")
    return int(steps), 0.0


def _goal(mech: Mechanism, maximize: Optional[str], minimize: Optional[str]) -> tuple:
    if maximize is not None and minimize is not None:
        raise _remat.ArgumentError("maximize and minimize exclude each other")
    if maximize is not None:
        return 1, mech.species_index(maximize)
    if minimize is not None:
        return 2, mech.species_index(minimize)
    return 0, 0


def _reactor_kw(mech: Mechanism, inlet: Values, length: float, method: Optional[str], steps: Optional[int],
                dt: Optional[float], rtol: Optional[float], atol: Optional[float], max_steps: Optional[int],
                schedule: Optional[str], fixed_default: str, default_steps: int, adaptive_ok: bool = True) -> dict:
    if not isinstance(mech, Mechanism):
        raise _remat.ArgumentError(f"mechanism: expected a remat.Mechanism, got {type(mech).__name__}")
    tol_given = rtol is not None or atol is not None or max_steps is not None
    if adaptive_ok:
        method, adaptive = _integrator(method, steps, dt, tol_given, fixed_default)
    else:
        method, adaptive = (method or fixed_default), False
    n, h = _steps_arg(steps, dt, adaptive, default_steps)
    length = float(length)
    if not (length > 0 and math.isfinite(length)):
        raise _remat.BadValueError(f"length: {length} is not a positive finite reactor length")
    return dict(mechanism=mech._h, inlet=_species_vector(mech, inlet, "inlet"), method=method, length=length,
                steps=n, dt=h, adaptive=adaptive,
                rtol=float(rtol if rtol is not None else 1e-6), atol=float(atol if atol is not None else 1e-9),
                max_steps=int(max_steps or 0), schedule=schedule)


@dataclass
class Simulation:
    """A reactor run: ``z`` (rows,), ``profile`` (rows, species), ``outlet`` (species,),
    the objective and its ``gradient`` (params,) when a goal was given (else None)."""

    species: tuple
    param_names: tuple
    outlet: np.ndarray
    z: Optional[np.ndarray]
    profile: Optional[np.ndarray]
    objective: Optional[float]
    gradient: Optional[np.ndarray]
    method: str
    adaptive: bool
    steps: int
    step_size: float
    accepted: int
    rejected: int
    negative: Optional[tuple] = None  # (row, species name): a negative concentration no rounding explains

    def outlet_dict(self) -> dict:
        return dict(zip(self.species, self.outlet.tolist()))


def simulate(mechanism: Mechanism, inlet: Values, *, params: Optional[Values] = None, length: float = 10.0,
             method: Optional[str] = None, steps: Optional[int] = None, dt: Optional[float] = None,
             rtol: Optional[float] = None, atol: Optional[float] = None, max_steps: Optional[int] = None,
             maximize: Optional[str] = None, minimize: Optional[str] = None, schedule: str = "binomial:10",
             profile_points: int = 0, profile: bool = True) -> Simulation:
    """Integrates ``mechanism`` along a plug-flow reactor of ``length`` (``remat pfr simulate``).

    inlet: concentrations at z = 0 (a dict by species name, others 0, or an
    array); params: a dict (others keep their declared values) or an array.
    Integrator as the tool: without ``steps``/``dt``, adaptive ``tsit5``
    (``rtol`` 1e-6, ``atol`` 1e-9); with them, fixed ``euler`` steps unless
    ``method`` says otherwise. ``maximize``/``minimize`` a species gives the
    objective (-C_s(L) or C_s(L)) and its gradient by reverse mode through the
    integration under ``schedule`` ("store-all", "binomial:10", ...: memory
    and time change, never the numbers). The profile has steps + 1 rows (its
    last row is the outlet bit for bit); adaptive: ``profile_points`` intervals
    (0: 100).
    """
    kw = _reactor_kw(mechanism, inlet, length, method, steps, dt, rtol, atol, max_steps, schedule, "euler", 1000)
    goal, sp = _goal(mechanism, maximize, minimize)
    if not isinstance(profile_points, (int, np.integer)) or profile_points < 0:
        raise _remat.ArgumentError(f"profile_points: {profile_points!r} is not an int >= 0")
    r = _remat.pfr_simulate(**kw, profile_points=int(profile_points), goal=goal, species=sp,
                            params=_param_vector(mechanism, params, "params"), profile=bool(profile))
    neg = r["negative"]
    return Simulation(species=mechanism.species, param_names=mechanism.param_names, outlet=r["outlet"], z=r["z"],
                      profile=r["profile"], objective=None if r["gradient"] is None else r["objective"],
                      gradient=r["gradient"], method=kw["method"], adaptive=kw["adaptive"], steps=r["steps"],
                      step_size=r["step_size"], accepted=int(r["accepted"]), rejected=int(r["rejected"]),
                      negative=None if neg is None else (neg[0], mechanism.species[neg[1]]))


@dataclass
class Ensemble:
    """Outlets (n, species) of n parameter sets and, unless turned off, the
    Jacobian (n, species, len(vary)): d C_s(L) / d p_vary[j] by forward mode."""

    species: tuple
    vary: tuple
    outlet: np.ndarray
    jacobian: Optional[np.ndarray]


def ensemble(mechanism: Mechanism, params: np.ndarray, *, inlet: Values, vary: Optional[Sequence[str]] = None,
             base: Optional[Values] = None, length: float = 10.0, method: str = "euler", steps: Optional[int] = None,
             dt: Optional[float] = None, lanes: int = 1024, jacobian: bool = True) -> Ensemble:
    """Runs every row of ``params`` (n, len(vary)) through one compiled reactor
    (``remat pfr ensemble``, remat_pfr_ensemble): fixed steps only (default 1000
    Euler steps), ``lanes`` sets per run. ``vary`` names the parameters the
    columns give (default: all, in declaration order); the others take
    ``base`` (default: the declared values). ``params`` is read in place (a
    float64 C-contiguous array); a set that blows up gives non-finite numbers
    (an ensemble screens sets), a non-finite input raises."""
    kw = _reactor_kw(mechanism, inlet, length, method, steps, dt, None, None, None, None, "euler", 1000,
                     adaptive_ok=False)
    del kw["rtol"], kw["atol"], kw["max_steps"], kw["adaptive"]
    names = list(mechanism.params) if vary is None else list(vary)
    idx = [mechanism.param_index(n) for n in names]
    if not isinstance(lanes, (int, np.integer)) or isinstance(lanes, bool):
        raise _remat.ArgumentError(f"lanes: expected an int, got {type(lanes).__name__}")
    r = _remat.pfr_ensemble(**kw, adaptive=False, rtol=0.0, atol=0.0, max_steps=0, profile_points=0, goal=0,
                            species=0, vary=idx, base=_param_vector(mechanism, base, "base"), sets=params,
                            lanes=int(lanes), jacobian=bool(jacobian))
    return Ensemble(species=mechanism.species, vary=tuple(names), outlet=r["outlet"], jacobian=r["jacobian"])


@dataclass
class FitResult:
    """A fit's outcome (remat_fit_result and remat_fit_stats as arrays).

    ``params`` (P,) natural scale, fixed ones included; ``history_params``
    (iterations + 1, P); ``residuals`` (N,) model - data (weighted) at the
    optimum, one per measured cell (a first row that gives the initial state
    is not a measurement), experiment by experiment, row by row, species in
    mechanism order;
    ``fitted[e]`` = (times, model (rows, species)) at experiment e's data
    times. Statistics (NaN for fixed parameters): ``standard_errors``, 95%
    intervals ``ci_lo``/``ci_hi``, ``covariance``, ``correlation``; None with
    ``statistics_error`` saying why when they cannot be computed (dof < 1).
    """

    param_names: tuple
    params: np.ndarray
    objective: float
    converged: bool
    message: str
    iterations: int
    evaluations: int
    optimizer: str
    jacobian: Optional[str]
    n_residuals: int
    history_objective: np.ndarray
    history_params: np.ndarray
    n_starts: int
    starts_at_best: int
    starts_failed: int
    start_objectives: np.ndarray
    stopped: bool = False
    residuals: Optional[np.ndarray] = None
    fitted: Optional[list] = None
    standard_errors: Optional[np.ndarray] = None
    ci_lo: Optional[np.ndarray] = None
    ci_hi: Optional[np.ndarray] = None
    covariance: Optional[np.ndarray] = None
    correlation: Optional[np.ndarray] = None
    dof: Optional[int] = None
    s2: Optional[float] = None
    t95: Optional[float] = None
    cond: Optional[float] = None
    unidentifiable: tuple = ()
    statistics_error: Optional[str] = None

    @property
    def values(self) -> dict:
        """The parameters by name."""
        return dict(zip(self.param_names, self.params.tolist()))


def _columns(exp: Any, e: int) -> list:
    """(name, float64 column) pairs of a dict or a DataFrame-like, in column order."""
    if hasattr(exp, "columns") and not isinstance(exp, Mapping):
        names = list(exp.columns)
    elif isinstance(exp, Mapping) or hasattr(exp, "keys"):
        names = list(exp.keys())
    else:
        raise _remat.ArgumentError(
            f"experiments[{e}]: expected a CSV path or columns (a dict or DataFrame of arrays), "
            f"got {type(exp).__name__}")
    if len(names) < 2:
        raise _remat.ShapeError(f"experiments[{e}]: needs the independent variable and at least one species column")
    cols = []
    for n in names:
        try:
            col = np.asarray(exp[n])
        except Exception as x:  # a column access that fails: name it
            raise _remat.ArgumentError(f"experiments[{e}]: column {n!r}: {x}") from None
        if col.dtype.kind not in "fiu" or col.dtype.kind == "f" and col.dtype.itemsize > 8:
            raise _remat.DtypeError(f"experiments[{e}]: column {n!r} has dtype {col.dtype}, not numbers")
        if col.ndim != 1:
            raise _remat.ShapeError(f"experiments[{e}]: column {n!r} has shape {col.shape}, expected one dimension")
        cols.append((str(n), col.astype(np.float64, copy=False)))
    rows = len(cols[0][1])
    for n, c in cols:
        if len(c) != rows:
            raise _remat.ShapeError(f"experiments[{e}]: column {n!r} has {len(c)} rows, column "
                                    f"{cols[0][0]!r} has {rows}")
    if not np.all(np.isfinite(cols[0][1])):
        raise _remat.BadValueError(f"experiments[{e}]: the independent variable {cols[0][0]!r} has NaN or "
                                   "infinite entries (NaN marks a missing measurement only in species columns)")
    for n, c in cols[1:]:
        if np.any(np.isinf(c)):
            raise _remat.BadValueError(f"experiments[{e}]: column {n!r} has an infinite entry")
    return cols


def _write_csv(path: str, cols: list) -> None:
    """remat/dataset.h's CSV; repr() of a float reads back bit for bit, NaN is an empty cell."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(",".join(n for n, _ in cols) + "\n")
        for row in zip(*(c.tolist() for _, c in cols)):
            f.write(",".join("" if v != v else repr(v) for v in row) + "\n")


def fit(mechanism: Mechanism, experiments: Iterable[Any], *, y0: Optional[Sequence[Optional[Values]]] = None,
        start: Optional[Values] = None, fixed: Iterable[str] = (), scale: Optional[Mapping[str, str]] = None,
        optimizer: str = "auto", method: Optional[str] = None, steps: Optional[int] = None,
        dt: Optional[float] = None, rtol: Optional[float] = None, atol: Optional[float] = None,
        max_steps: Optional[int] = None, t0: float = 0.0, schedule: Optional[str] = None,
        memory_budget: Optional[int] = None, max_iters: int = 0, lr: float = 0.0, xtol: float = 0.0,
        gtol: float = 0.0, ftol: float = 0.0, starts: int = 1, seed: int = 0,
        sigma: Optional[Values] = None, weighting: str = "none", jacobian: str = "auto",
        lm_more_scaling: bool = False, callback: Optional[Callable[[dict], Any]] = None,
        statistics: bool = True) -> FitResult:
    """Least-squares fit of the mechanism's parameters to measured profiles (``remat pfr fit``).

    experiments: each a CSV path (remat/dataset.h) or columns: a dict or
    DataFrame-like whose first column is the independent variable and the
    others species (NaN: not measured) or ``sigma_<species>``. Columns are
    written to a temporary CSV file (a copy; exact: floats as repr()) that is
    deleted after the fit. y0: per experiment None (its first row) or the
    initial state (a dict by species or an array). start, sigma: dicts or
    arrays; fixed: names kept at their start; scale: name -> "auto", "log",
    "linear". Integrator as the tool: adaptive tsit5 by default, fixed rk4
    steps with ``steps``/``dt``. ``memory_budget`` (bytes) picks the schedule.

    ``callback(progress)`` runs after every iteration with a dict (iteration,
    objective, grad_norm, params, param_names, optimizer); a true return stops
    the fit (``converged`` False, ``stopped`` True). The fit runs without the
    GIL; Ctrl-C (SIGINT) stops it at the next iteration and raises
    KeyboardInterrupt, whose ``result`` attribute holds the best point reached
    (a FitResult without residuals or statistics); an exception raised by the
    callback is re-raised the same way.
    """
    if not isinstance(mechanism, Mechanism):
        raise _remat.ArgumentError(f"mechanism: expected a remat.Mechanism, got {type(mechanism).__name__}")
    if isinstance(experiments, (str, os.PathLike, Mapping)) or hasattr(experiments, "columns"):
        experiments = [experiments]
    experiments = list(experiments)
    tol_given = rtol is not None or atol is not None or max_steps is not None
    method, adaptive = _integrator(method, steps, dt, tol_given, "rk4")
    n, h = _steps_arg(steps, dt, adaptive, 0)
    P = len(mechanism.params)
    for name in fixed:
        mechanism.param_index(name)
    fixed_flags = [name in set(fixed) for name in mechanism.params] if fixed else None
    scales = None
    if scale:
        for name in scale:
            mechanism.param_index(name)
        scales = [scale.get(name, "auto") for name in mechanism.params]
    y0s = None
    if y0 is not None:
        y0s = [None if v is None else _species_vector(mechanism, v, "y0") for v in y0]
    sig = None
    if sigma is not None:
        sig = _named(mechanism, sigma, "sigma", mechanism.species, np.ones(len(mechanism.species)), "species") \
            if isinstance(sigma, Mapping) else sigma
    budget = 0
    if memory_budget is not None:
        if not isinstance(memory_budget, (int, np.integer)) or memory_budget <= 0:
            raise _remat.ArgumentError(f"memory_budget: {memory_budget!r} is not a positive number of bytes")
        if schedule is not None:
            raise _remat.ArgumentError("schedule and memory_budget: give one of them, not both")
        budget = int(memory_budget)
    for name, v in (("starts", starts), ("max_iters", max_iters), ("seed", seed)):
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 0:
            raise _remat.ArgumentError(f"{name}: {v!r} is not an int >= 0")
    columns_given = any(not isinstance(exp, (str, os.PathLike)) for exp in experiments)
    # paths are read in place: a temporary directory (a few ms to make and
    # remove on a busy file system) only when some experiment is columns
    with tempfile.TemporaryDirectory(prefix="remat-fit-") if columns_given else contextlib.nullcontext() as tmp:
        paths, shown = [], {}
        for e, exp in enumerate(experiments):
            if isinstance(exp, (str, os.PathLike)):
                paths.append(os.fspath(exp))
                continue
            p = os.path.join(tmp, f"experiment_{e}.csv")
            _write_csv(p, _columns(exp, e))
            paths.append(p)
            shown[p] = f"experiments[{e}]"
        try:
            r = _remat.fit(mechanism._h, paths, optimizer=optimizer, method=method, adaptive=adaptive, dt=h,
                           steps=n, rtol=float(rtol if rtol is not None else 1e-6),
                           atol=float(atol if atol is not None else 1e-9), max_steps=int(max_steps or 0),
                           t0=float(t0), schedule=schedule, memory_budget=budget, y0=y0s,
                           start=None if start is None else _param_vector(mechanism, start, "start"),
                           fixed=fixed_flags, scale=scales, max_iters=int(max_iters), lr=float(lr),
                           xtol=float(xtol), gtol=float(gtol), ftol=float(ftol), starts=int(starts),
                           seed=int(seed), sigma=sig, weighting=weighting, jacobian=jacobian,
                           lm_more_scaling=bool(lm_more_scaling), callback=callback, statistics=bool(statistics))
        except _remat.Error as x:  # name the caller's experiment, not the temporary file
            msg = str(x.args[0]) if x.args else ""
            for p, s in shown.items():
                msg = msg.replace(p, s)
            raise type(x)(msg) from None
    res = _result(r, P)
    if r["exception"] is not None:
        exc = r["exception"]
        exc.result = res
        raise exc
    return res


def _result(r: dict, P: int) -> FitResult:
    names = tuple(r["param_names"])
    res = FitResult(param_names=names, params=r["params"], objective=r["objective"], converged=r["converged"],
                    message=r["message"], iterations=r["iterations"], evaluations=r["evaluations"],
                    optimizer=r["optimizer"], jacobian=r["jacobian"], n_residuals=r["n_residuals"],
                    history_objective=r["history_objective"], history_params=r["history_params"],
                    n_starts=r["n_starts"], starts_at_best=r["starts_at_best"], starts_failed=r["starts_failed"],
                    start_objectives=r["start_objectives"], stopped=r["stopped"], residuals=r["residuals"],
                    fitted=r["fitted"])
    st = r["statistics"]
    if st is not None and "error" in st:
        res.statistics_error = st["error"]
    elif st is not None:
        res.standard_errors, res.ci_lo, res.ci_hi = st["se"], st["ci_lo"], st["ci_hi"]
        res.covariance, res.correlation = st["covariance"], st["correlation"]
        res.dof, res.s2, res.t95, res.cond = st["dof"], st["s2"], st["t95"], st["cond"]
        res.unidentifiable = tuple(names[i] for i in st["unidentifiable"])
    return res


@dataclass
class Optimization:
    """Adam on a reactor's objective (``remat pfr optimize``): ``params`` at the
    end, ``conc_before[i]`` = C_s(L) before update i, ``params_after[i]`` after it."""

    param_names: tuple
    params: np.ndarray
    conc_before: np.ndarray
    params_after: np.ndarray
    conc_final: float


def optimize(mechanism: Mechanism, inlet: Values, start: Values, *, maximize: Optional[str] = None,
             minimize: Optional[str] = None, lr: float = 0.1, iters: int = 50, min_param: Optional[float] = None,
             b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8, length: float = 10.0,
             method: Optional[str] = None, steps: Optional[int] = None, dt: Optional[float] = None,
             schedule: str = "binomial:10") -> Optimization:
    """optax.adam(lr) on the objective from ``start``, as a JAX loop does it
    (remat_pfr_adam): gradient by reverse mode through the integration, one
    update per iteration, each parameter projected on its box: the bounds
    its mechanism declares ("in [lo, hi]", even -inf; a network's weights are
    unbounded), [min_param, inf) for a parameter declared without any (no
    bound when min_param is None), as ``remat pfr optimize``."""
    if steps is None and dt is None and method is None:
        steps = 1000  # the tool's optimize: fixed Euler steps
    kw = _reactor_kw(mechanism, inlet, length, method, steps, dt, None, None, None, schedule, "euler", 1000)
    goal, sp = _goal(mechanism, maximize, minimize)
    if goal == 0:
        raise _remat.ArgumentError("optimize: maximize or minimize a species")
    if not isinstance(iters, (int, np.integer)) or isinstance(iters, bool):
        raise _remat.ArgumentError(f"iters: expected an int, got {type(iters).__name__}")
    r = _remat.pfr_adam(**kw, profile_points=0, goal=goal, species=sp,
                        start=_param_vector(mechanism, start, "start"), lr=float(lr), iters=int(iters),
                        lo=-math.inf if min_param is None else float(min_param), b1=float(b1), b2=float(b2),
                        eps=float(eps))
    return Optimization(param_names=mechanism.param_names, params=r["params"], conc_before=r["conc_before"],
                        params_after=r["params_after"], conc_final=r["conc_final"])


class Reactor:
    """A reactor kept between calls (remat_pfr): its outlet, objective and
    profile programs compile on first use and are reused, so repeated
    evaluations (an optimiser of your own, a parameter scan) cost the
    integration only. Options as :func:`simulate`; one thread at a time runs
    it (calls from several threads wait for each other)."""

    def __init__(self, mechanism: Mechanism, inlet: Values, *, length: float = 10.0,
                 method: Optional[str] = None, steps: Optional[int] = None, dt: Optional[float] = None,
                 rtol: Optional[float] = None, atol: Optional[float] = None, max_steps: Optional[int] = None,
                 maximize: Optional[str] = None, minimize: Optional[str] = None, schedule: str = "binomial:10",
                 profile_points: int = 0) -> None:
        kw = _reactor_kw(mechanism, inlet, length, method, steps, dt, rtol, atol, max_steps, schedule, "euler",
                         1000)
        goal, sp = _goal(mechanism, maximize, minimize)
        if not isinstance(profile_points, (int, np.integer)) or profile_points < 0:
            raise _remat.ArgumentError(f"profile_points: {profile_points!r} is not an int >= 0")
        self.mechanism = mechanism
        self.method, self.adaptive = kw["method"], kw["adaptive"]
        self._h = _remat.pfr_reactor(**kw, profile_points=int(profile_points), goal=goal, species=sp)
        info = self._h.info()
        self.steps, self.step_size = info["steps"], info["step_size"]

    def outlet(self, params: Optional[Values] = None) -> np.ndarray:
        """C(L) at params (default: the declared values)."""
        return self._h.outlet(_param_vector(self.mechanism, params, "params"))

    def objective(self, params: Optional[Values] = None) -> tuple:
        """(objective, gradient) at params: -C_s(L) to maximize, C_s(L) to minimize."""
        return self._h.objective(_param_vector(self.mechanism, params, "params"))

    def profile(self, params: Optional[Values] = None) -> tuple:
        """(z (rows,), C (rows, species)); the last row is the outlet bit for bit."""
        return self._h.profile(_param_vector(self.mechanism, params, "params"))

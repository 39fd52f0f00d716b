"""remat: reverse-mode gradients of long computations under a memory budget.

The Python binding of the C library (include/remat/*.h): NumPy arrays in and
out, remat's errors as exceptions (``remat.Error`` and one subclass per
``remat_status``, each carrying remat's message).

    import remat
    m = remat.Mechanism.from_string("param k1 = 1\\nparam k2 = 0.5\\nA -> B : k1\\nB -> C : k2")
    sim = remat.simulate(m, {"A": 1.0}, steps=1000, maximize="B")
    sim.outlet, sim.gradient
"""

from . import _remat
from ._remat import (
    ArgumentError,
    AxisError,
    BackendError,
    BadValueError,
    BudgetError,
    DtypeError,
    Error,
    FileError,
    NoMemoryError,
    NullError,
    NumericError,
    ParseError,
    ShapeError,
    UnsupportedError,
)
from .kinetics import (
    Ensemble, FitResult, Mechanism, Optimization, Param, Reaction, Reactor, Simulation, ensemble, fit, optimize,
    simulate,
)
from .graph import (
    Fn, Program, Value, add, broadcast_in_dim, broadcast_to, checkpoint, checkpoint_name, checkpoint_policies,
    compile, concatenate, cos, divide, dot_general, equal, erf, erf_inv, exp, expm1, full, grad, greater, greater_equal, hvp,
    jacfwd, jvp, less, less_equal, log, log1p, logistic, matmul, max, maximum, minimum, multiply, negative, not_equal, power,
    print_saved_residuals, relu, remat, reshape, saved_residuals, scan, sigmoid, sin, slice, solve, sqrt, square,
    stop_gradient, subtract, sum, tanh, transpose, value_and_grad, vjp, where,
)

from . import nn

__version__ = "0.1.0"

#: remat_status number -> exception class (REMAT_OK has none)
ERRORS = {cls.status: cls for cls in (
    NullError, ShapeError, DtypeError, AxisError, ArgumentError, BadValueError, NoMemoryError, FileError,
    ParseError, UnsupportedError, BudgetError, NumericError, BackendError)}

__all__ = [
    "Error", "NullError", "ShapeError", "DtypeError", "AxisError", "ArgumentError", "BadValueError",
    "NoMemoryError", "FileError", "ParseError", "UnsupportedError", "BudgetError", "NumericError", "BackendError",
    "ERRORS", "Mechanism", "Param", "Reaction", "Simulation", "Ensemble", "FitResult", "simulate", "ensemble", "fit",
    "Optimization", "optimize", "Reactor",
    "Fn", "Program", "Value", "add", "broadcast_in_dim", "broadcast_to", "checkpoint", "checkpoint_name",
    "checkpoint_policies", "compile", "concatenate", "cos", "divide", "dot_general", "equal", "erf", "erf_inv", "exp", "expm1", "full",
    "grad", "greater", "greater_equal", "hvp", "jacfwd", "jvp", "less", "less_equal", "log", "log1p", "logistic", "matmul", "max",
    "maximum", "minimum", "multiply", "negative", "not_equal", "power", "print_saved_residuals", "relu", "remat",
    "reshape", "saved_residuals", "scan", "sigmoid", "sin", "slice", "solve", "sqrt", "square", "stop_gradient", "subtract",
    "sum", "tanh", "transpose", "value_and_grad", "vjp", "where", "nn",
]

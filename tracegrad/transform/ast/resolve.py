"""Name resolution: what a call in the user's function refers to, decided once at
transformation time against the function's closure, globals and builtins.

A callee is one of:

* ``Direct(prim)`` -- an operator, a NumPy ufunc, ``np.sum(x)``/``np.mean(x)`` without
  options, a :mod:`math` function: one rule-table primitive whose derivative the
  adjoint writes out as the rule's own expression;
* ``Generic`` -- any other function the tape can trace (NumPy with options, tracegrad
  functions, methods, ``custom_vjp`` functions): differentiated through the tape;
* ``User(fn)`` -- a Python function of the user's: transformed recursively into its own
  adjoint;
* ``Constant`` -- a function whose result has no derivative (``len``, ``range``,
  ``stop_gradient``, ``float``...).
"""
import ast
import builtins
import math
import types
import weakref

import numpy as np  # identifies NumPy's functions in the user's namespace

from ...rules import TABLE
from ..tape.numpy_map import UFUNCS
from ..tape.numpy_map.construct import numpy_own
from ..tape.sweeps import stop_gradient
from .on_tape import is_on_tape

__all__ = ["Resolver", "Direct", "Generic", "User", "Constant", "OPERATORS", "UNARY", "method_primitive",
           "on_device", "host_function", "VALUE_TAKING"]

OPERATORS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.Pow: "pow",
             ast.MatMult: "matmul", ast.Mod: "remainder"}
UNARY = {ast.USub: "neg"}

_MATH = {math.exp: "exp", math.log: "log", math.sin: "sin", math.cos: "cos", math.tan: "tan",
         math.tanh: "tanh", math.sqrt: "sqrt", math.sinh: "sinh", math.cosh: "cosh",
         math.atan: "atan", math.log1p: "log1p", math.expm1: "expm1"}
_ONE_ARG = {np.sum: "sum", np.mean: "mean"}
_CONSTANT = {len, range, int, bool, float, isinstance, type, print, str, repr, id, hash,
             stop_gradient, np.shape, np.ndim, np.size, np.zeros, np.ones, np.empty, np.eye,
             np.arange, np.full, np.argmax, np.argmin, np.isnan, np.isinf,
             np.isfinite, np.result_type, np.dtype, math.floor, math.ceil,
             np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64, np.bool_}
# constant callees whose result depends differentiably on a value argument: a value being
# differentiated passed to one is refused (see activity.refuse_lost_derivatives)
VALUE_TAKING = {float, complex, np.full, np.arange, np.logspace, np.geomspace}
_CONSTANT |= VALUE_TAKING - {float}


def on_device(values, xp):
    """Those of ``values`` (a namespace: name -> object) that are NumPy -- the module, its
    submodules, its functions -- as array namespace ``xp``'s (CuPy's) instead: generated
    code run with these globals computes the user's plain-NumPy lines on the device."""
    out = {}
    for name, v in values.items():
        if v is np:
            out[name] = xp
        elif isinstance(v, types.ModuleType) and v.__name__.startswith("numpy."):
            sub = getattr(xp, v.__name__.split(".")[1], None)
            if sub is not None:
                out[name] = sub
        elif callable(v) and numpy_own(getattr(np, getattr(v, "__name__", ""), None)) is numpy_own(v) \
                and hasattr(xp, v.__name__):
            out[name] = getattr(xp, v.__name__)
    return out


def host_function(fn):
    """The NumPy function that a device namespace's function stands for (CuPy's
    ``concatenate`` -> NumPy's): what the tape traces, as tracers answer NumPy's dispatch
    protocols, not CuPy's. Other functions are returned as they are."""
    from ... import backend
    from ...scipy.special import counterpart  # scipy.special.logsumexp -> tracegrad.scipy's
    from ...scipy.integrate import counterpart as integrate_counterpart  # (and odeint)
    twin = counterpart(fn) or integrate_counterpart(fn)
    if twin is not None:
        return twin
    name = getattr(fn, "__name__", None)
    host = getattr(np, name, None) if isinstance(name, str) else None
    if host is None or host is fn:
        return fn
    if any(getattr(xp, name, None) is fn for xp in backend.loaded() if xp is not backend.cpu):
        return host
    return fn


_METHODS = {"sum": "sum", "mean": "mean"}  # x.sum(), x.mean() without options


def method_primitive(call):
    """The primitive name of a method call the adjoint writes out (``x.sum()``), or None."""
    if call.args or call.keywords or not isinstance(call.func, ast.Attribute):
        return None
    return _METHODS.get(call.func.attr)


class Direct:
    def __init__(self, prim):
        self.prim = prim


class Generic:
    pass


class User:
    def __init__(self, fn):
        self.fn = fn


class Constant:
    pass


GENERIC, CONSTANT = Generic(), Constant()
_NOTHING = object()   # (a free name that refers to nothing)


class Resolver:
    """Resolves names of ``fn`` that are not its locals."""

    def __init__(self, fn, local_names):
        self.fn = fn
        self.locals = set(local_names)
        code = fn.__code__
        cells = fn.__closure__ or ()
        self.closure = {}
        for name, cell in zip(code.co_freevars, cells):
            try:
                self.closure[name] = cell.cell_contents
            except ValueError:  # not yet bound (a recursive inner function)
                pass
        self.globals = fn.__globals__
        self.reads = {}   # free name -> what it referred to (_NOTHING: nothing; see reuse.py)
        self.attribute_reads = []  # (module or class, attribute, what it referred to)

    def lookup(self, name):
        """``(found, value)`` of a free name. (Every object found is passed through
        :func:`numpy_own`: while a tape records, on any thread, ``numpy`` holds stand-ins
        for some of its functions, which the tables here, keyed by NumPy's own, must not
        meet.)"""
        if name in self.locals:
            return False, None
        for scope in (self.closure, self.globals, vars(builtins)):
            if name in scope:
                found = self.reads[name] = numpy_own(scope[name])
                return True, found
        self.reads.setdefault(name, _NOTHING)
        return False, None

    def value(self, node):
        """The object a Name or dotted Attribute chain of free names refers to, or
        ``(False, None)`` when it is not one (a local, a method of a value)."""
        if hasattr(node, "_bound"):  # a name the transformation itself bound (np.asarray)
            return True, numpy_own(node._bound)
        if isinstance(node, ast.Name):
            return self.lookup(node.id)
        if isinstance(node, ast.Attribute):
            ok, base = self.value(node.value)
            if ok and isinstance(base, (types.ModuleType, type)):
                try:
                    found = numpy_own(getattr(base, node.attr))
                except AttributeError:
                    return False, None
                self.attribute_reads.append((base, node.attr, found))
                return True, found
        return False, None

    def callee(self, call):
        """What ``call`` (an ``ast.Call``) calls; None for a method of a local value."""
        ok, obj = self.value(call.func)
        if not ok:
            return None
        nargs, kws = len(call.args), call.keywords
        if is_on_tape(obj):  # (a statement made a function: see on_tape.py)
            return GENERIC
        try:
            if obj in _CONSTANT or getattr(obj, "constant_result", False):
                return CONSTANT
        except TypeError:  # unhashable callable
            pass
        if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in kws):
            return User(obj) if isinstance(obj, types.FunctionType) and not _library(obj) else GENERIC
        if isinstance(obj, np.ufunc) and not kws and nargs == obj.nin:
            prim = UFUNCS.get(obj.__name__)
            # (written out only if right for complex values: others go through the tape,
            # which refuses complex values they cannot differentiate)
            if prim is not None and prim.differentiable and prim.complex:
                return Direct(prim)
        name = _hashable_get(_MATH, obj) or (_hashable_get(_ONE_ARG, obj) if nargs == 1 and not kws else None)
        if name is not None:
            return Direct(TABLE[name])
        if obj is abs and nargs == 1 and not kws:
            return Direct(TABLE["abs"])
        if isinstance(obj, types.FunctionType) and not _library(obj):
            return User(obj)
        return GENERIC


def _hashable_get(table, obj):
    try:
        return table.get(obj)
    except TypeError:
        return None


def _library(fn):
    """Whether ``fn`` belongs to NumPy or tracegrad (differentiated through the tape, not
    transformed)."""
    mod = (fn.__name__ if isinstance(fn, types.ModuleType) else getattr(fn, "__module__", "")) or ""
    return mod.split(".")[0] in ("numpy", "tracegrad", "cupy", "scipy")


def structure(resolver):
    """What the generated code was written for, as ``(now, then)`` pairs: the functions,
    classes and modules the function's free names and module attributes referred to
    (``sq`` in ``np.sum(sq(x))``: its adjoint is written into the code). Values (numbers,
    arrays) are read again at each call instead (see driver.Generated.refresh)."""
    out = []
    cells = dict(zip(resolver.fn.__code__.co_freevars, resolver.fn.__closure__ or ()))
    for name, then in resolver.reads.items():
        if then is _NOTHING or not _shapes_code(then):
            continue
        if name in cells:
            now = cell_reader(cells[name])
        elif name in resolver.globals:
            now = (lambda scope, key: lambda: scope.get(key, _NOTHING))(resolver.globals, name)
        else:
            continue  # (a builtin)
        out.append((now, _held(then)))
    for base, attr, then in resolver.attribute_reads:
        if _shapes_code(then) and not _library(base):
            out.append(((lambda b, a: lambda: getattr(b, a, _NOTHING))(base, attr), _held(then)))
    return out


def cell_reader(cell):
    """``structure``'s reader of a closure cell (marked: another function of the same code,
    see reuse.py, has cells of its own)."""
    def now():
        return _contents(cell)
    now.cell = True
    return now


def cell_structure(fn):
    """``structure``'s pairs for the closure cells of ``fn`` that hold functions, classes
    or modules."""
    out = []
    for cell in fn.__closure__ or ():
        then = _contents(cell)
        if then is not _NOTHING and _shapes_code(then):
            out.append((cell_reader(cell), _held(then)))
    return out


def still_written_for(pairs):
    """Whether every object in ``structure``'s pairs is still the one referred to."""
    return all(numpy_own(now()) is then() for now, then in pairs)


def _shapes_code(obj):
    return (callable(obj) or isinstance(obj, types.ModuleType)) and not _library(obj)


def _held(obj):
    """A weak reference to ``obj`` where it takes one (the caches hold user functions
    weakly), else a function returning it."""
    try:
        return weakref.ref(obj)
    except TypeError:
        return lambda: obj


def _contents(cell):
    try:
        return cell.cell_contents
    except ValueError:
        return _NOTHING

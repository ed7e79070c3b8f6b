"""What every part of the NumPy map shares: the primitives by name (``P``), NumPy's
``axis`` as the table's ``dim``, dtypes of tracers, the error for what has no rule, and
the registry (``FUNCTIONS``, ``UFUNCS``) that the other modules of the package fill."""
import math

import numpy as np

from ....rules import TABLE
from ..tape import TracerError, shape_of

FUNCTIONS = {}  # NumPy function -> what it records (filled by the modules of this package)
UFUNCS = {}     # ufunc name -> primitive (see ufuncs.py)


class _Table:
    """``P.tanh`` is ``TABLE["tanh"]``: the primitives, by name."""

    def __getattr__(self, name):
        try:
            return TABLE[name]
        except KeyError:
            raise AttributeError(name) from None

P = _Table()


def unsupported(what):
    return TracerError(
        f"{what} cannot be traced onto a tape: the rule table has no entry for it. Write "
        "it with differentiable NumPy functions (see tracegrad.transform.tape.numpy_map), or "
        "register a rule with tracegrad.custom_vjp")


def dims(axis, ndim):
    """NumPy's ``axis`` (None, int or tuple, negatives allowed) as the table's ``dim``."""
    if axis is None:
        return None
    if ndim == 0 and not isinstance(axis, (tuple, list)) and int(axis) in (0, -1):
        return None  # (NumPy's allowance for a 0-d input: an int axis 0 or -1, not (0,))
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    out = []
    for a in axes:
        a = int(a)
        if not -ndim <= a < max(ndim, 1):
            raise np.exceptions.AxisError(a, ndim)
        out.append(a % max(ndim, 1))
    return tuple(sorted(out))


def npdtype(x):
    """The NumPy dtype of a tracer, array (of any device) or number."""
    d = getattr(x, "npdtype", None)
    if d is not None:
        return d
    d = getattr(x, "dtype", None)  # (a device array: read, never handed to NumPy)
    return d if isinstance(d, np.dtype) else np.result_type(x)


def as_float(x):
    """Integers and bools computed as float64, as NumPy's mean/std/var do."""
    return x.astype(np.float64) if npdtype(x).kind in "biu" else x


def no_more(kwargs, what):
    if kwargs:
        raise unsupported(f"{what} with {', '.join(sorted(kwargs))}=")


def cast(x, dtype):
    if dtype is None:
        return x
    return astype(x, dtype)


def astype(x, dtype, copy=True):
    dtype = np.dtype(dtype)
    if npdtype(x) == dtype:
        return P.clone(x) if copy else x
    return P.cast(x, dtype=dtype, src_dtype=npdtype(x))


def ndim(a):
    return len(shape_of(a))


def is_traced(x):
    from ..tape import Var
    return isinstance(x, Var)


def xp_of(a):
    from ....backend import namespace_of
    return namespace_of(a.value) if is_traced(a) else namespace_of(a)


def constant(a, value):
    """A constant made from a traced ``a`` (its values do not depend on ``a``'s): a traced
    constant, so that ``out = np.zeros_like(x); out[i] = ...`` can be recorded."""
    if is_traced(a):
        from ..tracing import active_tape
        return active_tape().new_var(value, "const")
    return value


def as_arrays(arrays):
    """A sequence of operands to join, Python numbers among them made the 0-d arrays
    NumPy makes of them."""
    return [a if is_traced(a) or hasattr(a, "shape") else np.asarray(a) for a in arrays]


def _reversed_axes(a):
    """``a`` with its axes reversed (``a.T``): Fortran order read as C order."""
    n = len(shape_of(a))
    return P.permute(a, dims=tuple(range(n - 1, -1, -1))) if n > 1 else a


def _check_order(order, name):
    """``order`` "C" or "F"; "A" and "K" follow the memory layout of the value, which a
    replayed tape does not keep: refused."""
    if order not in ("C", "F", None):
        raise unsupported(f"numpy.{name}(..., order={order!r}) (only 'C' and 'F')")


def _as_numpy_would(a, out, reshape):
    """``out`` (a reshape of tracer ``a``) as NumPy makes it: a copy where NumPy copies (a
    strided column's ravel; the kernel, reshaping to the same shape, kept a view), so that
    a later write into ``a`` does not reach it, nor one into it ``a``."""
    if is_traced(a) and is_traced(out):
        from ..aliasing import numpy_copies
        if numpy_copies(a, reshape):
            return P.clone(out)
    return out


def ravel(a, order="C"):
    _check_order(order, "ravel")
    src = a
    if order == "F":
        a = _reversed_axes(a)
    out = P.reshape(a, shape=(math.prod(shape_of(a)),))
    return _as_numpy_would(src, out, lambda arr: arr.ravel(order=order))


def reshape(a, *shape, newshape=None, order="C", **kw):
    shape = shape[0] if len(shape) == 1 else shape
    if newshape is not None:
        shape = newshape
    shape = kw.pop("shape", shape)
    _check_order(order, "reshape")
    shape = (shape,) if isinstance(shape, int) else tuple(int(s) for s in shape)
    if -1 in shape:
        known = math.prod(s for s in shape if s != -1)
        size = math.prod(a.shape)
        shape = tuple(size // known if s == -1 and known else s for s in shape)
    if order == "F":  # (a.T reshaped to the reversed shape, read back reversed)
        out = _reversed_axes(P.reshape(_reversed_axes(a), shape=shape[::-1]))
    else:
        out = P.reshape(a, shape=shape)
    return _as_numpy_would(a, out, lambda arr: arr.reshape(shape, order=order))


def call_function(func, args, kwargs):
    fn = FUNCTIONS.get(func)
    if fn is None:
        mod = getattr(func, "__module__", "numpy") or "numpy"
        raise unsupported(f"{mod.replace('numpy.lib', 'numpy').split('._')[0]}.{func.__name__}")
    return fn(*args, **kwargs)


def register(*funcs):
    """Decorator: ``fn`` records each of the NumPy functions ``funcs`` (skipping names
    that this NumPy version lacks, given as None)."""
    def put(fn):
        for f in funcs:
            if f is not None:
                FUNCTIONS[f] = fn
        return fn
    return put

"""What a tracer (:class:`~.tape.Var`) answers to: Python operators, NumPy's protocols,
ndarray methods and attributes, and -- for functions written with tracegrad Tensors --
Tensor methods. Every answer records rule-table primitives; every conversion to a Python
value (``bool``, ``int``, ``float``, ``.item()``) records a guard."""
import dis
import math
import sys

import numpy as np

from ...backend import is_array as is_array_value
from ...rules import index as I
from ...runtime.tensor import Tensor
from . import numpy_map as NM
from .numpy_map import P
from .numpy_map.construct import ArrayConversion

from . import aliasing, python_numbers
from .sweeps import spread_activity
from .tape import TracerError, Var
from .tracing import active_tape, guard, written_under_no_grad

__all__ = ["Var"]


def _npdtype(a):
    if isinstance(a, Var):
        return a.npdtype
    if isinstance(a, Tensor):
        return a._data.dtype
    return NM.npdtype(a)


def _binary(prim, reflected=False):
    if reflected:
        return lambda self, other: prim(other, self)
    return lambda self, other: prim(self, other)


_OPERATORS = {
    "add": P.add, "sub": P.sub, "mul": P.mul, "truediv": P.div, "pow": P.pow,
    "matmul": P.matmul, "floordiv": P.floor_divide, "mod": P.remainder,
}
for _name, _prim in _OPERATORS.items():  # (Python's meaning for tracers of Python floats)
    setattr(Var, f"__{_name}__", python_numbers.arithmetic(_prim))
    setattr(Var, f"__r{_name}__", python_numbers.arithmetic(_prim, reflected=True))
for _name, _prim in {"lt": P.lt, "le": P.le, "gt": P.gt, "ge": P.ge, "eq": P.eq, "ne": P.ne}.items():
    setattr(Var, f"__{_name}__", _binary(_prim))


def _logical(name):
    def op(self, other):
        if self.npdtype.kind == "b" and _npdtype(other).kind == "b":
            return getattr(P, "logical_" + name)(self, other)
        return getattr(P, "bitwise_" + name)(self, other)
    return op


for _name in ("and", "or", "xor"):
    setattr(Var, f"__{_name}__", _logical(_name))
    setattr(Var, f"__r{_name}__", _logical(_name))
Var.__neg__ = python_numbers.unary(P.neg)
Var.__pos__ = lambda self: self
Var.__abs__ = python_numbers.unary(P.abs)
Var.__invert__ = lambda self: P.logical_not(self) if self.npdtype.kind == "b" else P.bitwise_not(self)


# -- conversions to Python values: guards -------------------------------------------------

_STORE_SUBSCR = dis.opmap["STORE_SUBSCR"]


def _python(kind, convert, numeric=False):
    """A conversion to a Python value, recorded as a guard. A ``numeric`` one (``float()``,
    ``complex()``) of a value being differentiated is refused: the Python number
    (``math.exp(x)`` makes one) would carry no derivative, a silent zero gradient."""
    def method(self):
        self = aliasing.current(self)
        caller = sys._getframe(1)
        if caller.f_code.co_code[caller.f_lasti] == _STORE_SUBSCR and kind != "index":
            # NumPy converting the value of ``buf[i] = traced`` for a plain array ``buf``:
            # the result would silently stop depending on the traced value. NumPy turns
            # the error into its own ValueError, so the tape keeps it for the transform.
            try:
                _array(self)
            except TracerError as e:
                self.tape.poison = e
                raise
        if numeric and _differentiated(self):
            raise _number_of_differentiated(self, f"{kind}()", "(math.exp(x), math.sin(x) and "
                                            "float(x) do this)")
        return guard(self, kind, convert(self.value))
    return method


def _number_of_differentiated(var, what, how=""):
    """The error for a Python number made of a value being differentiated."""
    return TracerError(
        f"{what} of a value being differentiated ({var!r}) makes it a Python number that "
        f"carries no derivative{' ' + how if how else ''}: a gradient through it would silently "
        "be zero. Keep it an array: use np.exp / np.sin (or tracegrad's functions) instead of "
        "math's, compare arrays directly (if np.sum(x) > 0:); if a constant is meant (a number "
        "to print or log, too), write tracegrad.stop_gradient(x) first")


def _differentiated(var):
    """Whether ``var`` depends differentiably on a value a transform is differentiating
    with respect to (activity is followed along the tape as it grows)."""
    tape = var.tape
    if tape.marked_upto < len(tape.eqns):
        spread_activity(tape.eqns[tape.marked_upto:], tape.marked)
        tape.marked_upto = len(tape.eqns)
    return var.id in tape.marked


Var.__bool__ = _python("bool", bool)
Var.__int__ = _python("int", int)
Var.__index__ = _python("index", lambda v: v.__index__())
Var.__float__ = _python("float", float, numeric=True)
Var.__complex__ = _python("complex", complex, numeric=True)
def _item(self, *args):
    """NumPy's ``.item()``: a Python number, refused for a value being differentiated
    (as ``float()`` is); a traced Tensor's ``.item()`` keeps torch's meaning (a number
    with no history, guarded)."""
    self = aliasing.current(self)
    if not getattr(self, "is_traced_tensor", False) and _differentiated(self):
        raise _number_of_differentiated(self, ".item()")
    return guard(self, "item", self.value.item(*args), args)


def _tolist(self):
    """NumPy's ``.tolist()``: Python numbers, refused for a value being differentiated (as
    ``.item()`` is: ``max(x.tolist())`` would carry no derivative); a traced Tensor's keeps
    torch's meaning (numbers with no history, guarded)."""
    self = aliasing.current(self)
    if not getattr(self, "is_traced_tensor", False) and _differentiated(self):
        raise _number_of_differentiated(self, ".tolist()")
    return guard(self, "tolist", self.value.tolist() if hasattr(self.value, "tolist") else list(self.value))


Var.item = _item
Var.tolist = _tolist


def _len(self):
    if not self.shape:
        raise TypeError("len() of unsized object")
    return self.shape[0]


def _iter(self):
    if not self.shape:
        raise TypeError("iteration over a 0-d array")
    return (self[i] for i in range(self.shape[0]))


def _array(self, dtype=None, copy=None):
    """NumPy asks for a concrete array. ``np.array``/``np.asarray`` (of the tracer, or of
    lists and tuples holding tracers) catch this error and record the array instead (see
    :mod:`.numpy_map.construct`). An integer or bool array asked for by the traced code
    (``np.int64(x)``) carries no derivative anyway: it is given, guarded (a replay is
    valid only while the same cast gives the same integers). Anywhere else the error
    stands."""
    integers = _integer_cast(self, dtype, sys._getframe(1))
    if integers is not None:
        return integers
    raise ArrayConversion(
        f"a traced value ({self!r}) was converted to a NumPy array (by a function outside "
        "the rule table, by a NumPy function given a list or tuple holding it, as in "
        "np.mean([a, b]), or by assigning it into a NumPy array, as in buf[i] = traced); a "
        "tape cannot follow that. Make the list an array first (np.mean(np.array([a, b]))), "
        "build arrays with np.array([...]), np.stack or np.concatenate, and write into a "
        "traced array (np.zeros_like(x) of a traced x is one)")


def _integer_cast(var, dtype, caller):
    """The guarded integer array of ``var`` NumPy asks for with integer or bool ``dtype``
    from ``caller`` (a frame), or None: not for another dtype, nor for tracegrad's own
    constructors (``np.array(x, dtype=int)`` records the cast), nor for ``buf[i] = traced``
    (a write the tape would lose)."""
    if dtype is None or np.dtype(dtype).kind not in "biu" or var.npdtype.kind == "c":
        return None
    if caller.f_globals.get("__name__") == ArrayConversion.__module__ or \
            caller.f_code.co_code[caller.f_lasti] == _STORE_SUBSCR:
        return None
    var = aliasing.current(var)
    if not isinstance(var.value, (np.ndarray, np.generic)):
        return None  # (a device's value: NumPy cannot take it)
    cast = NM.astype(var, dtype, copy=False)
    guard(cast, "tolist", cast.value.tolist())
    return np.array(cast.value, dtype=dtype)


Var.__len__ = _len
Var.__iter__ = _iter
Var.__array__ = _array
Var.__hash__ = object.__hash__


# -- NumPy's protocols ---------------------------------------------------------------------

def _array_ufunc(self, ufunc, method, *inputs, **kwargs):
    return NM.call_ufunc(ufunc, method, inputs, kwargs)


def _array_function(self, func, types, args, kwargs):
    return NM.call_function(func, args, kwargs)


Var.__array_ufunc__ = _array_ufunc
Var.__array_function__ = _array_function
# The array API's namespace of a tracer is NumPy's own: libraries written to it (SciPy's
# logsumexp, softmax...) then call NumPy's functions, which reach the tracer as above.
Var.__array_namespace__ = lambda self, api_version=None: np


# -- indexing ----------------------------------------------------------------------------------

def split_index(self, index):
    """``(structure, arrays)``: the index with index arrays replaced by ``I.ARRAY``."""
    parts = index if isinstance(index, tuple) else (index,)
    structure, arrays = [], []
    for p in parts:
        if isinstance(p, Var) and p.npdtype.kind in "iu" and p.shape == ():
            p = int(p)  # a traced scalar index: its value, guarded
        if p is None or p is Ellipsis or isinstance(p, slice):
            structure.append(p)
        elif isinstance(p, (int, np.integer)) and not isinstance(p, (bool, np.bool_)):
            structure.append(int(p))
        else:  # an index array -- and, as in NumPy, anything else that is one: a list or a
            # tuple inside the index tuple, a range, a scalar bool (a 0-d mask)
            if isinstance(p, Tensor):
                p = p._data
            elif not isinstance(p, Var) and not is_array_value(p):  # (a device's stays there)
                p = np.asarray(p)
            if _npdtype(p).kind not in "iub":
                raise IndexError("arrays used as indices must be of integer (or boolean) type")
            structure.append(I.ARRAY)
            arrays.append(p)
    return tuple(structure), arrays


def _getitem(self, index):
    structure, arrays = split_index(self, index)
    if not arrays:
        return P.basic_index(self, index=structure)
    out = P.advanced_index(self, *arrays, index=structure)
    if any(getattr(a, "dtype", None) is not None and _npdtype(a).kind == "b" and isinstance(a, Var) for a in arrays):
        guard(out, "shape", out.shape)  # a traced mask: the result's size depends on values
    return out


def _setitem(self, index, value):
    """``x[index] = value`` on a tracer: recorded as a functional update whose result takes
    over ``x``'s identity (see :func:`take_over`); views of ``x``, and the array ``x`` is a
    view of, follow as NumPy's memory would (see :mod:`.aliasing`)."""
    aliasing.before_write(self)
    structure, arrays = split_index(self, index)
    take_over(self, P.index_put(self, value, *arrays, index=structure))
    aliasing.after_write(self)


def take_over(var, new):
    """Make tracer ``var`` (the object the user's code holds) stand for ``new``, the value
    just recorded, as an in-place write does: the eqns recorded since ``var`` was made
    (``var.at`` on -- none before can use it, which keeps a loop of writes linear) are
    renamed to a fresh object for the old value, and ``new`` is retired. Under ``no_grad()``
    the write changes the value, not the derivative (see :func:`written_under_no_grad`)."""
    tape = active_tape()
    new = written_under_no_grad(var, new)
    old = type(var).__new__(type(var))
    for slot in ("tape", "id", "value", "kind", "name", "hint", "at"):
        setattr(old, slot, getattr(var, slot))
    aliasing.settle(old)  # (a dirty view's old value is an SSA value like any other)
    for k in range(var.at, len(tape.eqns)):
        e = tape.eqns[k]
        if any(a is var for a in e.ins):
            e.ins = tuple(old if a is var else a for a in e.ins)
        if any(o is var for o in e.outs):
            e.outs = tuple(old if o is var else o for o in e.outs)
    if var.kind == "input":
        tape.inputs = [old if v is var else v for v in tape.inputs]
    if var.kind == "input" or var.id in tape.argument_ids:
        tape.writes_inputs = True
    if var.kind == "const":  # the capture cache hands out the old value from now on
        for k, (arr, v, snapshot) in list(tape._consts.items()):
            if v is var:
                tape._consts[k] = (arr, old, snapshot)
    tape.renamed[old.id] = old  # transforms find the variables they marked by id
    aliasing.keep_layout(var)  # (the NumPy array var stands for keeps its strides)
    var.id, var.value, var.kind, var.name, var.hint = new.id, new.value, "op", None, new.hint
    var.at = new.at
    for k in range(new.at, len(tape.eqns)):  # (``new`` is made by the last eqns)
        e = tape.eqns[k]
        if any(o is new for o in e.outs):
            e.outs = tuple(var if o is new else o for o in e.outs)
        if any(a is new for a in e.ins):
            e.ins = tuple(var if a is new else a for a in e.ins)


Var.__getitem__ = _getitem
Var.__setitem__ = _setitem


def _inplace(prim):
    """``x += y`` changes the array ``x`` in place (every name of it, and its views, see
    the change), not just rebinds the name ``x``: a write of ``x + y`` into all of ``x``."""
    def op(self, other):
        if type(self.value) is not np.ndarray and not is_array_value(self.value) \
                or self.id in self.tape.immutable:
            return NotImplemented  # a number (NumPy scalar, Python float): ``x = x + y``
        _setitem(self, Ellipsis, prim(aliasing.current(self), other))
        return self
    return op


for _name, _prim in _OPERATORS.items():
    setattr(Var, f"__i{_name}__", _inplace(_prim))


def _fill(self, value):
    _setitem(self, Ellipsis, value)


def _in_place_method(name):
    def method(self, *args, **kwargs):
        raise TracerError(
            f"ndarray.{name}() changes a traced array in place, which the tape does not record; "
            f"use the function that returns a new array instead (np.{name}(x, ...) where the "
            "rule table has it), or assign the result (x[...] = new_values)")
    return method


Var.fill = _fill
for _name in ("itemset", "resize", "setfield", "byteswap", "setflags"):
    setattr(Var, _name, _in_place_method(_name))


def _written(func):
    """An in-place ndarray method (``x.sort()``): NumPy's function of the same name, its
    result written into all of ``x``, as NumPy's memory would change (views follow)."""
    def method(self, *args, **kwargs):
        _setitem(self, Ellipsis, NM.FUNCTIONS[func](aliasing.current(self), *args, **kwargs))
    return method


Var.sort = _written(np.sort)
Var.partition = _written(np.partition)
Var.put = lambda self, *args, **kwargs: NM.FUNCTIONS[np.put](self, *args, **kwargs)


# -- ndarray attributes and methods ---------------------------------------------------------

def _method(func):
    return lambda self, *args, **kwargs: NM.FUNCTIONS[func](self, *args, **kwargs)


for _name, _func in {"sum": np.sum, "prod": np.prod, "mean": np.mean, "max": np.max, "min": np.min,
                     "all": np.all, "any": np.any, "std": np.std, "var": np.var,
                     "argmax": np.argmax, "argmin": np.argmin, "cumsum": np.cumsum,
                     "cumprod": np.cumprod, "dot": np.dot, "squeeze": np.squeeze,
                     "ravel": np.ravel, "diagonal": np.diagonal, "trace": np.trace,
                     "swapaxes": np.swapaxes, "take": np.take, "clip": np.clip,
                     "repeat": np.repeat, "compress": np.compress, "argsort": np.argsort,
                     "argpartition": np.argpartition, "round": np.round}.items():
    setattr(Var, _name, _method(_func))

Var.reshape = lambda self, *shape, **kw: NM.FUNCTIONS[np.reshape](self, *shape, **kw)
Var.transpose = lambda self, *axes: NM.FUNCTIONS[np.transpose](
    self, axes[0] if len(axes) == 1 and not isinstance(axes[0], int) else (axes or None))
Var.T = property(lambda self: NM.FUNCTIONS[np.transpose](self))
Var.mT = property(lambda self: P.transpose(self, dim0=self.ndim - 2, dim1=self.ndim - 1))
Var.flatten = lambda self, order="C": P.clone(NM.FUNCTIONS[np.ravel](self, order=order))  # (always a copy)
Var.copy = lambda self, order="C": P.clone(self)
Var.astype = lambda self, dtype, copy=True, **kw: NM.astype(self, dtype, copy)
Var.size = property(lambda self: math.prod(self.shape))
Var.itemsize = property(lambda self: self.npdtype.itemsize)
def _part(function):
    """``z.real`` / ``z.imag``: the part, a view of z as in NumPy (see aliasing.PART_VIEWS);
    assigned (``z.imag = v``, and ``z.imag *= x``, which assigns what it changed) it is
    written into z."""
    def read(self):
        return NM.FUNCTIONS[function](self)

    def write(self, value):
        part = NM.FUNCTIONS[function](self)
        if part is self:  # (the real part of a real array is the array)
            _setitem(self, Ellipsis, value)
        else:
            part[...] = value
    return property(read, write)


Var.real = _part(np.real)
Var.imag = _part(np.imag)
Var.conj = Var.conjugate = lambda self: P.conj(self)


# -- Tensor-flavoured tracers ---------------------------------------------------------------

class TensorVar(Var):
    """The tracer of a function called with tracegrad Tensors: it answers like a Tensor
    (``x.sum(dim=0)``, ``x.size()``, a tracegrad ``dtype``); any torch-style method is the
    tracegrad function of the same name applied to it."""

    __slots__ = ()

    @property
    def dtype(self):
        from ...runtime.tensor import dtype_of
        return dtype_of(self.npdtype)

    @property
    def device(self):
        from ...backend import device_of
        return device_of(self.value)

    is_traced_tensor = True  # accepted where tracegrad functions require a Tensor
    requires_grad = False
    is_leaf = True
    grad_fn = None

    def size(self, dim=None):
        from ...runtime.tensor import Size
        return Size(self.shape) if dim is None else self.shape[dim]

    def dim(self):
        return self.ndim

    ndimension = dim

    def numel(self):
        return math.prod(self.shape)

    def detach(self):
        from .sweeps import stop_gradient
        return stop_gradient(self)

    def view(self, *shape):
        return NM.FUNCTIONS[np.reshape](self, *shape)

    reshape = view

    def stride(self, dim=None):
        strides = [1] * self.ndim  # a traced value is laid out as if contiguous
        for i in range(self.ndim - 2, -1, -1):
            strides[i] = strides[i + 1] * self.shape[i + 1]
        return tuple(strides) if dim is None else strides[dim]

    def is_contiguous(self, memory_format=None):
        return True  # (laid out as if contiguous, as stride() says)

    def __getattr__(self, name):
        fn = _torch_function(name)
        if fn is None:
            raise AttributeError(f"'Tensor' (traced) has no attribute {name!r}")
        return lambda *args, **kwargs: fn(self, *args, **kwargs)


def _torch_function(name):
    from ...ops import FUNCTIONS
    from ...ops.conversion import METHODS  # .to(), .cuda(), .float()...
    return FUNCTIONS.get(name) or METHODS.get(name)


def _torch(name):
    fn = _torch_function(name)
    return lambda self, *args, **kwargs: fn(self, *args, **kwargs)


for _name in ("sum", "prod", "mean", "max", "min", "all", "any", "std", "var", "argmax", "argmin",
              "cumsum", "cumprod", "squeeze", "diagonal", "trace", "clip", "transpose", "flatten"):
    if _torch_function(_name) is not None:
        setattr(TensorVar, _name, _torch(_name))
# methods whose receiver is not the function's first argument (``x.where(c, y)`` is
# ``where(c, x, y)``): as Tensor's, not the function of the name applied to ``self``
TensorVar.where = lambda self, condition, other: _torch_function("where")(condition, self, other)
TensorVar.polygamma = lambda self, n: _torch_function("polygamma")(n, self)
TensorVar.T = property(lambda self: P.permute(self, dims=tuple(reversed(range(self.ndim)))))

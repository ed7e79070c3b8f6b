"""The ``meta`` device: tensors with a shape and a dtype and no values.

PyTorch programs use it to describe a model without memory -- ``copy.deepcopy(model).to(
'meta')`` as the stateless skeleton ``torch.func.functional_call`` fills with real
parameters, ``with torch.device('meta'): model = Net()`` to build a large model before
``model.to_empty(device=...)`` and loading its weights -- and to learn the shapes a
computation gives. A meta tensor holds a :class:`MetaArray`: its shape and dtype.

Shapes and dtypes are inferred by running NumPy itself on stand-in arrays: the same
function on arrays of zeros of the right shapes and dtypes, each one value broadcast
(``numpy.broadcast_to``: no memory of their own), whose results give the shapes and
dtypes and are then dropped. So every operation tracegrad's kernels perform works on
meta tensors with NumPy's own shape and dtype rules, at the cost of computing on the
zeros (an operation on a huge meta tensor takes the time it would take on real data).
Writes into a meta tensor (``uniform_``, ``copy_``, ``x[i] = v``) do nothing, as in
PyTorch; reading a value (``item()``, ``bool()``, ``numpy()``) raises, and moving a meta
tensor off the device raises PyTorch's "no data" error. Mixing meta tensors with
tensors of another device raises, as every mix of devices does.
"""
import math
import operator

import numpy as _np

from . import cpu as _cpu

__all__ = ["MetaArray"]

name = "meta"
_NO_DATA = "Cannot copy out of meta tensor; no data!"


class MetaArray:
    """A meta tensor's storage: a shape and a dtype (C-contiguous, no values)."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype):
        self.shape, self.dtype = tuple(int(s) for s in shape), _np.dtype(dtype)

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: math.prod(self.shape))
    itemsize = property(lambda self: self.dtype.itemsize)
    nbytes = property(lambda self: self.size * self.dtype.itemsize)
    base = property(lambda self: None)
    strides = property(lambda self: _contiguous_strides(self.shape, self.dtype.itemsize))
    flags = property(lambda self: _np.lib.stride_tricks.as_strided(  # (a view of one element:
        _np.zeros(1, self.dtype), self.shape, self.strides).flags)   # the flags of the layout)

    def copy(self, order="C"):
        return MetaArray(self.shape, self.dtype)

    def fill(self, value):
        """Nothing to write."""

    def __setitem__(self, index, value):
        """A write into a meta tensor: there is nothing to write (PyTorch's meta kernels
        do nothing either); the index is still checked against the shape."""
        _stand_in(self)[index]  # noqa: B018

    def __array__(self, dtype=None, copy=None):
        raise RuntimeError("Tensor.item() cannot be called on meta tensors")

    # A kernel's reading of its own values (``if finite.all():``, ``int(idx.max()) < n``,
    # choosing a fast path or checking bounds) reads the stand-in's zeros: it takes one
    # branch, and the branches give the same shapes. (The user's reading -- a Tensor's
    # ``item()``, ``bool()`` -- raises PyTorch's error: see ``Tensor.item``.)
    __bool__ = lambda self: bool(_stand_in(self))  # noqa: E731
    __int__ = __index__ = lambda self: int(_stand_in(self))  # noqa: E731
    __float__ = lambda self: float(_stand_in(self))  # noqa: E731
    __complex__ = lambda self: complex(_stand_in(self))  # noqa: E731

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return _inferred(getattr(ufunc, method), inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        return _inferred(func, args, kwargs)

    def __getattr__(self, attr):  # the ndarray methods: reshape, sum, astype, T...
        if attr.startswith("_"):  # (never the stand-in's memory: ``__array_interface__``
            raise AttributeError(attr)  # would let NumPy read its zeros as the values)
        value = getattr(_stand_in(self), attr)
        if callable(value):
            return lambda *args, **kwargs: _inferred(lambda *a, **k: getattr(_unmeta(self), attr)(*a, **k),
                                                     args, kwargs)
        return _meta_of(value)

    def __repr__(self):
        return f"MetaArray(shape={self.shape}, dtype={self.dtype})"


def _operator(op, reflected=False):
    def method(self, *other):
        args = (other[0], self) if reflected else (self, *other)
        return _inferred(op, args, {})
    return method


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor",
              "lshift", "rshift", "lt", "le", "gt", "ge", "eq", "ne"):
    _op = getattr(operator, _name + "_") if _name in ("and", "or") else getattr(operator, _name)
    setattr(MetaArray, f"__{_name}__", _operator(_op))
    if _name not in ("lt", "le", "gt", "ge", "eq", "ne"):
        setattr(MetaArray, f"__r{_name}__", _operator(_op, reflected=True))
        setattr(MetaArray, f"__i{_name}__", lambda self, other: self)  # (an in-place write: nothing to write)
for _name in ("neg", "pos", "abs", "invert"):
    setattr(MetaArray, f"__{_name}__", _operator(getattr(operator, _name)))
MetaArray.__getitem__ = _operator(operator.getitem)
MetaArray.__hash__ = None

ndarray = MetaArray


def _contiguous_strides(shape, itemsize):
    strides, step = [], itemsize
    for s in reversed(shape):
        strides.append(step)
        step *= max(s, 1)
    return tuple(reversed(strides))


def _stand_in(a):
    """Zeros of ``a``'s shape and dtype that take no memory (one value, broadcast)."""
    return _np.broadcast_to(_np.zeros((), a.dtype), a.shape)


def _unmeta(x):
    """``x`` with its meta arrays (in lists, tuples and dicts too) replaced by stand-ins.
    (Tensors of other devices never get here: the dispatch refuses mixing devices; host
    arrays a kernel makes itself -- indices, constants -- are used as they are.)"""
    if isinstance(x, MetaArray):
        return _stand_in(x)
    if isinstance(x, (list, tuple)):
        return type(x)(_unmeta(v) for v in x)
    if isinstance(x, dict):
        return {k: _unmeta(v) for k, v in x.items()}
    return x


def _meta_of(x):
    """A result of NumPy on stand-ins as meta: arrays and NumPy scalars become meta arrays."""
    if isinstance(x, (_np.ndarray, _np.generic)):
        return MetaArray(_np.shape(x), x.dtype)
    if isinstance(x, tuple):
        return tuple(_meta_of(v) for v in x)
    if isinstance(x, list):
        return [_meta_of(v) for v in x]
    return x


def _inferred(func, args, kwargs):
    """``func(*args, **kwargs)``'s result as meta arrays, computed on stand-ins. An ``out=``
    meta array is the result (nothing is written into it)."""
    out = kwargs.pop("out", None)
    with _np.errstate(all="ignore"):
        result = _meta_of(func(*_unmeta(args), **_unmeta(kwargs)))
    if out is not None:
        return out[0] if isinstance(out, tuple) and len(out) == 1 else out
    return result


# -- the namespace: NumPy's functions on meta arrays, plus what every tracegrad namespace has ---

def _shape(shape):
    return (shape,) if isinstance(shape, int) else tuple(shape)


def empty(shape, dtype=float, **_):
    return MetaArray(_shape(shape), dtype)


zeros = ones = empty


def full(shape, fill_value, dtype=None, **_):
    return MetaArray(_shape(shape), dtype if dtype is not None else _np.asarray(fill_value).dtype)


def asarray(a, dtype=None, **_):
    """A meta array of ``a``'s shape and dtype (its values are dropped)."""
    if isinstance(a, MetaArray):
        return a if dtype is None or _np.dtype(dtype) == a.dtype else MetaArray(a.shape, dtype)
    a = _np.asarray(a)
    return MetaArray(a.shape, a.dtype if dtype is None else dtype)


array = ascontiguousarray = asarray


def from_host(a, dtype=None):
    return asarray(a, dtype)


def to_host(a):
    raise NotImplementedError(_NO_DATA)


def owns_data(a):
    return True


def storage_offset(a):
    return 0


def current_index():
    return None


def device_index(a):
    return None


def synchronize():
    """Nothing to wait for."""


def seed(value):
    """Nothing to seed: meta draws have no values."""


def scatter_add(target, index, values):
    """``target[index] += values``: nothing to write (the index is checked)."""
    target[index]  # noqa: B018


class _Draws:
    """The meta device's random stream: draws of the right shape and dtype, no values."""

    def __getattr__(self, method):
        def draw(*args, size=None, dtype=_np.float64, **kwargs):
            if size is None:
                size = args[0] if args and not _np.isscalar(args[0]) else ()
            return MetaArray(_shape(size), dtype)
        return draw


def rng():
    return _Draws()


def new_rng(value):
    return _Draws()


def randperm(generator, n):
    return MetaArray((n,), _np.int64)


class _Ufunc:
    """A NumPy ufunc on meta arrays: the call and its methods (``reduce``, ``accumulate``,
    ``outer``, ``at``) run on stand-ins."""

    def __init__(self, ufunc):
        self._ufunc = ufunc

    def __call__(self, *args, **kwargs):
        return _inferred(self._ufunc, args, kwargs)

    def __getattr__(self, attr):
        value = getattr(self._ufunc, attr)
        if attr == "at":  # (an in-place write: nothing to write)
            return lambda a, *args, **kwargs: None
        if callable(value):
            return lambda *args, **kwargs: _inferred(value, args, kwargs)
        return value


def __getattr__(attr):
    """The CPU namespace's names (NumPy's, and what tracegrad adds to it): functions run on
    stand-ins (their results as meta arrays); constants, dtypes and submodules as they are."""
    if attr.startswith("__"):
        raise AttributeError(attr)
    value = getattr(_cpu, attr)
    if isinstance(value, _np.ufunc):
        return _Ufunc(value)
    if callable(value) and not isinstance(value, type):
        return lambda *args, **kwargs: _inferred(value, args, kwargs)
    return value

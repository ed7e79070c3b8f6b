"""The ``meta`` device: tensors with a shape and a dtype and no values.

PyTorch programs use it to describe a model without memory -- ``copy.deepcopy(model).to(
'meta')`` as the stateless skeleton ``torch.func.functional_call`` fills with real
parameters, ``with torch.device('meta'): model = Net()`` to build a large model before
``model.to_empty(device=...)`` and loading its weights -- and to learn the shapes a
computation gives. A meta tensor holds a :class:`MetaArray`: its shape and dtype.

Shapes and dtypes are NumPy's own. An elementwise operation (a ufunc, an operator) and
``matmul`` take their shape from broadcasting (``matmul``'s rule) and their dtype from
the same call on one-element arrays, so nothing of the full size is made. Any other
function runs on stand-in arrays -- zeros of the right shapes and dtypes, each one value
broadcast (``numpy.broadcast_to``: no memory of their own) -- whose results give the
shapes and dtypes and are dropped (a reduction over a huge meta tensor takes the time it
would take on data). What a stand-in cannot stand for is refused with NotImplementedError:
a function whose result's size depends on the values (``nonzero``, ``unique``, boolean
masks...) and a value read as a number (``int(idx.max())``, a size or bound); a kernel's
truth test of its own values (``if finite.all():``) reads the zeros and takes one branch.
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
        do nothing either); the index and the value's shape are still checked."""
        target = _stand_in(self)[_unmeta(index)]
        shape = _np.shape(value) if not isinstance(value, MetaArray) else value.shape
        _np.broadcast_to(_np.zeros((), _np.int8), shape)  # (a valid shape)
        if _np.broadcast_shapes(shape, target.shape) != target.shape:
            raise ValueError(f"could not broadcast input array from shape {shape} into shape {target.shape}")

    def __array__(self, dtype=None, copy=None):
        raise RuntimeError("Tensor.item() cannot be called on meta tensors")

    # A kernel's test of its own values (``if finite.all():``, choosing a fast path) reads
    # the stand-in's zeros and takes one branch: a branch that changed a shape would need
    # an operation whose result's size depends on values, and those are refused below.
    # A value read as a number -- a size (``int(idx.max()) + 1``), a bound -- raises: no
    # stand-in number is right. (The user's reads raise PyTorch's error: ``Tensor.item``.)
    __bool__ = lambda self: bool(_stand_in(self))  # noqa: E731

    def __int__(self):
        _refuse_values("a value read as a number (a size, a bound)")

    __index__ = __float__ = __complex__ = __int__

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method == "__call__":
            return _ufunc_call(ufunc, inputs, kwargs)
        if method == "at":
            return None  # (an in-place write: nothing to write)
        return _inferred(getattr(ufunc, method), inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        return _inferred(func, args, kwargs)

    def __getattr__(self, attr):  # the ndarray methods: reshape, sum, astype, T...
        if attr.startswith("_"):  # (never the stand-in's memory: ``__array_interface__``
            raise AttributeError(attr)  # would let NumPy read its zeros as the values)
        value = getattr(_stand_in(self), attr)
        if callable(value):
            def method(*args, **kwargs):
                _check_sized_by_values(attr, args, kwargs)
                return _inferred(lambda *a, **k: getattr(_unmeta(self), attr)(*a, **k), args, kwargs)
            return method
        return _meta_of(value)

    def __repr__(self):
        return f"MetaArray(shape={self.shape}, dtype={self.dtype})"


_OPERATORS = {"add": "add", "sub": "subtract", "mul": "multiply", "truediv": "true_divide",
              "floordiv": "floor_divide", "mod": "remainder", "pow": "power", "matmul": "matmul",
              "and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor", "lshift": "left_shift",
              "rshift": "right_shift", "lt": "less", "le": "less_equal", "gt": "greater",
              "ge": "greater_equal", "eq": "equal", "ne": "not_equal"}


def _binary(ufunc, reflected=False, inplace=False):
    def method(self, other):
        result = _ufunc_call(ufunc, (other, self) if reflected else (self, other), {})
        if inplace:
            return _written(self, result)
        return result
    return method


for _name, _ufunc_name in _OPERATORS.items():
    _uf = getattr(_np, _ufunc_name)
    setattr(MetaArray, f"__{_name}__", _binary(_uf))
    if _name not in ("lt", "le", "gt", "ge", "eq", "ne"):
        setattr(MetaArray, f"__r{_name}__", _binary(_uf, reflected=True))
        setattr(MetaArray, f"__i{_name}__", _binary(_uf, inplace=True))
for _name, _ufunc_name in (("neg", "negative"), ("pos", "positive"), ("abs", "absolute"), ("invert", "invert")):
    setattr(MetaArray, f"__{_name}__", (lambda uf: lambda self: _ufunc_call(uf, (self,), {}))(getattr(_np, _ufunc_name)))


def _getitem(self, index):
    """Indexing: basic indices and integer arrays give NumPy's shapes; a boolean meta mask
    is refused (how many elements it selects depends on its values)."""
    for part in (index if isinstance(index, tuple) else (index,)):
        if isinstance(part, MetaArray) and part.dtype.kind == "b":
            _refuse_values("indexing with a boolean mask (its size depends on the values)")
    return _inferred(operator.getitem, (self, index), {})


MetaArray.__getitem__ = _getitem
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


# NumPy functions whose result's size depends on the values: refused (a stand-in of zeros
# would give a size that real data would not).
_VALUE_SIZED = frozenset({"nonzero", "flatnonzero", "argwhere", "unique", "unique_all", "unique_counts",
                          "unique_inverse", "unique_values", "compress", "extract", "bincount", "trim_zeros",
                          "histogram", "histogram_bin_edges", "histogramdd", "histogram2d", "repeat"})


def _refuse_values(what):
    raise NotImplementedError(f"tracegrad: {what} on a meta tensor: meta tensors have a shape and a dtype but "
                              "no values")


def _check_sized_by_values(name, rest, kwargs):
    """Refuse ``name`` when its result's size would depend on a meta array's values (for
    ``repeat``: only when the repeat counts are a meta array; ``rest``: the arguments
    after the array)."""
    if name not in _VALUE_SIZED:
        return
    if name == "repeat" and not isinstance(kwargs.get("repeats", rest[0] if rest else None), MetaArray):
        return
    _refuse_values(f"numpy.{name} (its result's size depends on the values)")


def _written(out, result):
    """``out`` after an in-place write of ``result`` into it: nothing is written, but the
    result must fit, as a real write's must."""
    for r in (result if isinstance(result, tuple) else (result,)):
        shape = getattr(r, "shape", ())
        if _np.broadcast_shapes(shape, out.shape) != out.shape:
            raise ValueError(f"non-broadcastable output operand with shape {out.shape} doesn't match the "
                             f"broadcast shape {shape}")
    return out


def _inferred(func, args, kwargs):
    """``func(*args, **kwargs)``'s result as meta arrays, computed on stand-ins. An ``out=``
    meta array is the result (nothing is written into it; the result's shape must fit)."""
    _check_sized_by_values(getattr(func, "__name__", ""), args[1:], kwargs)
    out = kwargs.pop("out", None)
    with _np.errstate(all="ignore"):
        result = _meta_of(func(*_unmeta(args), **_unmeta(kwargs)))
    if out is not None:
        out = out[0] if isinstance(out, tuple) and len(out) == 1 else out
        return _written(out, result) if isinstance(out, MetaArray) else out
    return result


def _one_element(a):
    """A one-element array of ``a``'s dims and dtype (numbers as they are): what a ufunc's
    result dtype is computed from, NumPy's weak Python numbers included."""
    if isinstance(a, (MetaArray, _np.ndarray)):
        return _np.zeros((1,) * a.ndim, a.dtype)
    return a


def _matmul_shape(a, b):
    """The shape of ``a @ b`` (NumPy's rules: 1-d operands gain a dim that is dropped)."""
    if not a or not b:
        raise ValueError("matmul: Input operand does not have enough dimensions")
    a2, b2 = (1,) + a if len(a) == 1 else a, b + (1,) if len(b) == 1 else b
    if a2[-1] != b2[-2]:
        raise ValueError(f"matmul: Input operand 1 has a mismatch in its core dimension 0, with gufunc signature "
                         f"(n?,k),(k,m?)->(n?,m?) (size {b2[-2]} is different from {a2[-1]})")
    shape = _np.broadcast_shapes(a2[:-2], b2[:-2]) + (a2[-2], b2[-1])
    if len(a) == 1:
        shape = shape[:-2] + shape[-1:]
    if len(b) == 1:
        shape = shape[:-1]
    return shape


def _ufunc_call(ufunc, args, kwargs):
    """A ufunc called on meta arrays: the shape by broadcasting (matmul by its own rule),
    the dtype from the same call on one-element arrays -- nothing of the full size is made."""
    out = kwargs.pop("out", None)
    shapes = [_np.shape(a) if not isinstance(a, MetaArray) else a.shape for a in args]
    with _np.errstate(all="ignore"):
        small = ufunc(*[_one_element(a) for a in args], **_unmeta(kwargs))
    if ufunc is _np.matmul:
        shape = _matmul_shape(*shapes)
    else:
        shape = _np.broadcast_shapes(*shapes)
    result = tuple(MetaArray(shape, r.dtype) for r in small) if isinstance(small, tuple) else \
        MetaArray(shape, _np.result_type(small))
    if out is not None:
        out = out[0] if isinstance(out, tuple) and len(out) == 1 else out
        return _written(out, result) if isinstance(out, MetaArray) else out
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
        return _ufunc_call(self._ufunc, args, kwargs)

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

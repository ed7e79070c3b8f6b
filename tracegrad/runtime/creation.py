"""Creating tensors: ``tensor``, ``as_tensor``, ``from_numpy``, the factories, randomness.

Dtypes are inferred as PyTorch does: Python floats take the default float dtype (not
float64 as NumPy would), ints int64, bools bool; NumPy arrays keep their dtype.
"""
import builtins
import collections.abc
import functools
import math
import warnings

from .. import backend
from ..backend import dtypes as _dt
from . import dispatch, grad_mode
from .int_fit import fit_array, fit_int
from .shapes import shape_args
from .tensor import Size, Tensor, mark_inference, wrap
from .vmapped import is_vmapped

__all__ = ["tensor", "as_tensor", "from_numpy", "zeros", "ones", "full", "empty", "eye",
           "arange", "linspace", "logspace", "rand", "randn", "randint", "randperm", "normal",
           "zeros_like", "ones_like", "full_like", "empty_like", "rand_like", "randn_like",
           "randint_like", "manual_seed", "seed", "initial_seed", "Generator", "default_generator",
           "legacy_tensor_data", "parse_size"]


def _finish(data, requires_grad):
    t = wrap(data)
    if grad_mode.state.mode == grad_mode.INFERENCE:
        mark_inference(t)
    if requires_grad:
        if data.dtype.kind not in "fc":
            raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
        t._requires_grad = True
    return t


def _infer_dtype(data):
    """PyTorch's dtype for nested Python data: the highest kind present, default widths."""
    rank = -1
    found = None
    stack = [data]
    while stack:
        x = stack.pop()
        if isinstance(x, Tensor):
            found = x.dtype if found is None else _dt.promote_types(found, x.dtype)
        elif backend.python_scalar(x) is not None or backend.is_array(x):  # NumPy keeps its dtype
            d = _dt.from_numpy_dtype(backend.cpu.asarray(x).dtype)
            found = d if found is None else _dt.promote_types(found, d)
        elif isinstance(x, (list, tuple)) or _other_sequence(x):
            stack.extend(x)
        elif isinstance(x, bool):
            rank = max(rank, 0)
        elif isinstance(x, int):
            rank = max(rank, 1)
        elif isinstance(x, float):
            rank = max(rank, 2)
        elif isinstance(x, complex):
            rank = max(rank, 3)
        elif hasattr(x, "dtype"):
            d = _dt.from_numpy_dtype(backend.cpu.asarray(x).dtype)
            found = d if found is None else _dt.promote_types(found, d)
        elif isinstance(x, (str, bytes, bytearray)):
            raise TypeError(f"new(): invalid data type '{type(x).__name__}'")
        else:
            raise RuntimeError(f"Could not infer dtype of {type(x).__name__}")
    if rank < 0:
        return found if found is not None else _dt.get_default_dtype()
    inferred = _dt.category_default(rank)
    return inferred if found is None else _dt.promote_types(found, inferred)


def _other_sequence(x):
    """Whether ``x`` is a sequence other than a list or tuple that PyTorch reads as one
    (a ``deque``, a ``range``, an ``array.array``...): not a string, not a mapping or set."""
    return isinstance(x, collections.abc.Sequence) and not isinstance(x, (str, bytes, bytearray))


def _unwrap_nested(data):
    if isinstance(data, Tensor):
        if is_vmapped(data):
            raise RuntimeError("vmap: tensor() of a list holding a Tensor inside vmap is not supported "
                               "(it has one value per sample): use tracegrad.stack instead")
        return backend.namespace_of(data._data).to_host(data._data)
    if isinstance(data, (list, tuple)) or _other_sequence(data):
        return [_unwrap_nested(x) for x in data]
    if type(data) is _NDARRAY and data.ndim and not _ndarrays_in_list[0]:
        _ndarrays_in_list[0] = True  # (tensor() warns, once per process)
    return data


_NDARRAY = backend.cpu.ndarray
# [met an array of at least one dim inside nested lists, warned]: PyTorch warns once per
# process that building a tensor from a list of arrays is slow (a rollout's observations)
_ndarrays_in_list = [False, False]
_LIST_OF_ARRAYS = ("Creating a tensor from a list of numpy.ndarrays is extremely slow. Please consider converting "
                   "the list to a single numpy.ndarray with numpy.array() before converting to a tensor.")


def _warn_list_of_arrays():
    if _ndarrays_in_list[0] and not _ndarrays_in_list[1]:
        _ndarrays_in_list[1] = True
        warnings.warn(_LIST_OF_ARRAYS, UserWarning, stacklevel=4)


# While a vmap runs (tracegrad/func/_vmap.py): what a random draw does under it, called
# with the factory (rand, randn...) or with None for a draw made elsewhere (dropout).
random_hook = None
_SIZE_FACTORIES = {"zeros", "ones", "empty", "rand", "randn"}  # (*size, or size=)
_RANDOM_FACTORIES = {"rand", "randn", "randint", "randperm", "normal", "rand_like", "randn_like",
                     "randint_like"}


def _recorded(factory):
    """A factory that shows up in a running profile as ``tracegrad::<name>`` (so the
    memory it allocates is counted). With no profiler the cost is one extra Python call
    and a test (about 0.3 us), small next to building a tensor."""
    name = "tracegrad::" + factory.__name__
    random = factory.__name__ in _RANDOM_FACTORIES
    sized = factory.__name__ in _SIZE_FACTORIES

    @functools.wraps(factory)
    def recorded(*args, **kwargs):
        if sized and "size" in kwargs:  # zeros(size=(2, 3)): the shape by keyword
            if args:
                raise TypeError(f"{factory.__name__}() got multiple values for argument 'size'")
            args = (kwargs.pop("size"),)
        if kwargs.get("out") is not None:
            kwargs = _dtype_of_out(kwargs)
        if random and random_hook is not None:  # under vmap: its randomness= decides
            return random_hook(factory, args, kwargs)
        observer = dispatch.observer
        if observer is None:
            return factory(*args, **kwargs)
        return observer.span(name, factory, args, args, kwargs)
    return recorded


@_recorded
def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A new tensor holding a copy of ``data`` (nested lists, numbers, arrays, Tensors)."""
    if is_vmapped(data):  # inside vmap: a copy of every sample
        return _batched_copy(data, dtype, device, requires_grad)
    xp = backend.namespace_for(device)
    if isinstance(data, Tensor):
        warnings.warn("To copy construct from a tensor, it is recommended to use sourceTensor.detach().clone() "
                      "or sourceTensor.detach().clone().requires_grad_(True), rather than "
                      "torch.tensor(sourceTensor).", UserWarning, stacklevel=2)
    if isinstance(data, Tensor) or backend.is_array(data):  # stays on its device unless told
        arr = data._data if isinstance(data, Tensor) else backend.namespace_of(data).asarray(data)
        d = _dt.as_dtype(dtype) if dtype is not None else _dt.from_numpy_dtype(arr.dtype)
        arr = backend.move(arr, xp) if device is not None else arr
        return _finish(arr.astype(d.np, copy=True), requires_grad)
    if type(data).__module__.startswith("numpy"):  # a NumPy scalar
        host = backend.cpu.asarray(data)
        d = _dt.as_dtype(dtype) if dtype is not None else _dt.from_numpy_dtype(host.dtype)
        return _finish(xp.asarray(host, dtype=d.np).copy(), requires_grad)
    d = _dt.as_dtype(dtype) if dtype is not None else _infer_dtype(data)
    if not _ndarrays_in_list[1]:
        _ndarrays_in_list[0] = False
    try:
        host = backend.cpu.asarray(_unwrap_nested(data), dtype=d.np)
    except OverflowError:  # a Python int beyond d: PyTorch wraps a negative one or refuses
        if d.np.kind not in "iu":
            raise
        host = fit_array(_unwrap_nested(data), d.np)
    except ValueError as e:
        ragged = _ragged(data)
        raise ValueError(ragged or f"tensor(): could not build a tensor from the data given: {e}") from None
    _warn_list_of_arrays()
    return _finish(xp.asarray(host), requires_grad)


def _ragged(data, dim=0):
    """PyTorch's message for nested lists of unequal lengths ("expected sequence of length
    2 at dim 1 (got 1)"), found depth first as PyTorch walks them; None where they are not."""
    if not isinstance(data, (list, tuple)) or not data or not all(isinstance(v, (list, tuple)) for v in data):
        return None
    want = len(data[0])
    for v in data:
        if len(v) != want:
            return f"expected sequence of length {want} at dim {dim + 1} (got {len(v)})"
    for v in data:
        found = _ragged(v, dim + 1)
        if found:
            return found
    return None


def _batched_copy(data, dtype, device, requires_grad):
    """``tensor(x)`` for ``x`` batched by vmap: its values copied (through the batching
    rules, since its ``_data`` is one sample), without history or tangent."""
    from . import forward, grad_mode
    with grad_mode.no_grad(), forward.suspended():
        out = data.to(device=device, dtype=dtype, copy=True)
    return out.requires_grad_(True) if requires_grad else out


def as_tensor(data, dtype=None, device=None):
    """Like :func:`tensor`, but shares memory with a Tensor or a NumPy/CuPy array when it
    can (same device, same dtype)."""
    if isinstance(data, Tensor):
        if (dtype is None or _dt.as_dtype(dtype) == data.dtype) and (device is None or backend.device(device) == data.device):
            return data
        return data.to(device=device, dtype=dtype)
    if backend.is_array(data) and (dtype is None or _dt.as_dtype(dtype).np == data.dtype) and (
            device is None or backend.namespace_for(device) is backend.namespace_of(data)):
        return wrap(_shareable(data))
    return tensor(data, dtype=dtype, device=device)


def from_numpy(ndarray):
    """A tensor sharing memory with ``ndarray`` (writes to one show in the other)."""
    if not isinstance(ndarray, backend.cpu.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    _dt.from_numpy_dtype(ndarray.dtype)
    return wrap(_shareable(ndarray))


_warned_read_only = [False]


def _shareable(array):
    """``array``, checked as PyTorch checks an array a tensor will share: no negative strides
    (ValueError); a read-only one warns, once per program, that writes will fail."""
    if any(s < 0 for s in array.strides):
        raise ValueError("At least one stride in the given numpy array is negative, and tensors with negative "
                         "strides are not currently supported. (You can probably work around this by making a "
                         "copy of your array  with array.copy().) ")
    if not getattr(array.flags, "writeable", True) and not _warned_read_only[0]:  # (CuPy: always writable)
        _warned_read_only[0] = True
        warnings.warn("The given NumPy array is not writable, and PyTorch does not support non-writable tensors. "
                      "This means writing to this tensor will result in undefined behavior. You may want to copy "
                      "the array to protect its data or make it writable before converting it to a tensor. This "
                      "type of warning will be suppressed for the rest of this program.", UserWarning, stacklevel=3)
    return array


def parse_size(size):
    """The shape a factory was asked for (see :func:`shapes.shape_args`), none negative."""
    shape = shape_args(size)
    for s in shape:
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(shape)}")
    return shape


def _float_dtype(dtype):
    return _dt.as_dtype(dtype) if dtype is not None else _dt.get_default_dtype()


@_recorded
def zeros(*size, dtype=None, device=None, requires_grad=False, out=None):
    xp = backend.namespace_for(device)
    return _into(out, _finish(xp.zeros(parse_size(size), dtype=_float_dtype(dtype).np), requires_grad))


@_recorded
def ones(*size, dtype=None, device=None, requires_grad=False, out=None):
    xp = backend.namespace_for(device)
    return _into(out, _finish(xp.ones(parse_size(size), dtype=_float_dtype(dtype).np), requires_grad))


@_recorded
def empty(*size, dtype=None, device=None, requires_grad=False, memory_format=None, out=None):
    """Uninitialised in PyTorch; zero-filled here, so results never depend on garbage."""
    return zeros(*size, dtype=dtype, device=device, requires_grad=requires_grad, out=out)


@_recorded
def full(size, fill_value, *, dtype=None, device=None, requires_grad=False, out=None):
    xp = backend.namespace_for(device)
    if isinstance(fill_value, (Tensor, backend.cpu.generic)):
        fill_value = fill_value.item()  # (a NumPy scalar fills as a Python number, as in PyTorch)
    d = _dt.as_dtype(dtype) if dtype is not None else _infer_dtype(fill_value)
    if type(fill_value) is int and d.np.kind in "iu":  # (PyTorch's range and wrap, not NumPy's)
        fill_value = fit_int(fill_value, d.np)
    return _into(out, _finish(xp.full(parse_size((size,)), fill_value, dtype=d.np), requires_grad))


@_recorded
def eye(n, m=None, *, dtype=None, device=None, requires_grad=False, out=None):
    xp = backend.namespace_for(device)
    return _into(out, _finish(xp.eye(n, n if m is None else m, dtype=_float_dtype(dtype).np), requires_grad))


@_recorded
def arange(start=0, end=None, step=1, *, dtype=None, device=None, requires_grad=False, out=None):
    """``arange(end)`` or ``arange(start, end, step)``; int64 for integer arguments."""
    if end is None:
        start, end = 0, start
    values = [v.item() if isinstance(v, Tensor) else v for v in (start, end, step)]
    if step == 0:
        raise RuntimeError("step must be nonzero")
    d = _dt.as_dtype(dtype) if dtype is not None else _infer_dtype(values)
    xp = backend.namespace_for(device)
    return _into(out, _finish(xp.arange(*values).astype(d.np), requires_grad))


def _space_args(start, end, dtype):
    """The endpoints as Python numbers (0-d tensors too: ``linspace(x.min(), x.max(), n)``)
    and the dtype: the default float one, or the default complex one for complex ends."""
    start, end = (v.item() if isinstance(v, Tensor) else v for v in (start, end))
    if dtype is None and (isinstance(start, complex) or isinstance(end, complex)):
        return start, end, _dt.complex128 if _dt.get_default_dtype() is _dt.float64 else _dt.complex64
    return start, end, _float_dtype(dtype)


@_recorded
def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False, out=None):
    xp = backend.namespace_for(device)
    start, end, d = _space_args(start, end, dtype)
    return _into(out, _finish(xp.linspace(start, end, steps).astype(d.np), requires_grad))


@_recorded
def logspace(start, end, steps, base=10.0, *, dtype=None, device=None, requires_grad=False):
    xp = backend.namespace_for(device)
    start, end, d = _space_args(start, end, dtype)
    return _finish(xp.logspace(start, end, steps, base=base).astype(d.np), requires_grad)


# -- randomness ----------------------------------------------------------------------------------

class Generator:
    """A random number generator, like ``torch.Generator``. The default generator (what
    ``manual_seed`` seeds) drives every device's default stream; a Generator you create
    has a stream of its own for its device, used by the ``generator=`` arguments."""

    _SEED_RANGE = 2 ** 64

    def __init__(self, device="cpu"):
        self.device = backend.device(device)
        self._xp = backend.namespace_for(self.device)
        self._seed = 67280421310721
        self._rng = self._xp.new_rng(self._seed)

    def manual_seed(self, value):
        value = int(value) % self._SEED_RANGE  # PyTorch accepts negative seeds this way
        self._rng = self._xp.new_rng(value)
        self._seed = value
        return self

    def seed(self):
        import random
        return self.manual_seed(random.getrandbits(63)).initial_seed()

    def initial_seed(self):
        return self._seed

    def get_state(self):
        """The generator's state as a uint8 tensor, for :meth:`set_state` (its bit
        generator's state: see :mod:`tracegrad.random`; not PyTorch's byte layout)."""
        from ..random import rng_state, state_tensor
        state = rng_state(self.stream(self._xp), self.device.type)
        return state_tensor(dict(state, seed=self._seed))  # (its initial seed travels too)

    def set_state(self, new_state):
        """Continue from a state :meth:`get_state` returned (of any CPU generator)."""
        from ..random import state_of
        state = dict(state_of(new_state, "set_state"))
        seed = state.pop("seed", None)
        try:
            self.stream(self._xp).bit_generator.state = state
        except (ValueError, TypeError, KeyError) as e:
            raise RuntimeError(f"set_state: not a state returned by get_state ({e})") from None
        if isinstance(seed, int):
            self._seed = seed
        return self

    def clone_state(self):
        """A new generator on the same device, continuing from this one's state."""
        return Generator(self.device).set_state(self.get_state())

    def stream(self, xp):
        """The numpy/cupy random generator to draw from for namespace ``xp``."""
        if xp is not self._xp:
            raise RuntimeError(f"Expected a '{xp.name}' device type for generator but found "
                               f"'{self.device.type}'")
        return self._rng

    def __repr__(self):
        return f"<tracegrad.Generator object at {id(self):#x}>"


class _DefaultGenerator(Generator):
    """``tracegrad.default_generator``: seeds and draws from each device's own stream."""

    def manual_seed(self, value):
        value = int(value) % self._SEED_RANGE
        backend.seed_all(value)
        self._seed = value
        return self

    def stream(self, xp):
        return xp.rng()


default_generator = _DefaultGenerator()


def manual_seed(value):
    """Seed the random number generators of every device; returns the default generator."""
    return default_generator.manual_seed(value)


def seed():
    return default_generator.seed()


def initial_seed():
    return default_generator.initial_seed()


def _stream(generator, xp):
    if random_hook is not None:
        random_hook(None, (), {})
    return (generator or default_generator).stream(xp)


def _dtype_of_out(kwargs):
    """A factory given ``out=`` makes ``out``'s dtype unless told another, which must match."""
    out, dtype = kwargs["out"], kwargs.get("dtype")
    if dtype is None:
        return {**kwargs, "dtype": out.dtype}
    if _dt.as_dtype(dtype) != out.dtype:
        raise RuntimeError(f"dtype {_dt.as_dtype(dtype).scalar_name} does not match dtype of out parameter "
                           f"({out.dtype.scalar_name})")
    return kwargs


def _into(out, t):
    """Honour ``out=``: write result ``t`` into ``out`` (see :mod:`tracegrad.ops.out`)."""
    if out is None:
        return t
    from ..ops.out import write_out
    return write_out(out, t, warn=False)  # PyTorch's factories resize out silently


@_recorded
def rand(*size, generator=None, dtype=None, device=None, requires_grad=False, out=None):
    """Uniform on [0, 1); for a complex dtype, the real and imaginary parts each (PyTorch's)."""
    xp = backend.namespace_for(device)
    d = _float_dtype(dtype)
    return _into(out, _finish(_draw(xp, _stream(generator, xp).random, parse_size(size), d, 1.0), requires_grad))


@_recorded
def randn(*size, generator=None, dtype=None, device=None, requires_grad=False, out=None):
    """Standard normal; for a complex dtype, the complex normal of variance 1 (each part's
    variance 1/2, as PyTorch's)."""
    xp = backend.namespace_for(device)
    d = _float_dtype(dtype)
    sample = _draw(xp, _stream(generator, xp).standard_normal, parse_size(size), d, math.sqrt(0.5))
    return _into(out, _finish(sample, requires_grad))


def _draw(xp, method, shape, d, complex_scale):
    """``method(shape)`` (a generator's random or standard_normal) drawn for dtype ``d``: a
    complex ``d`` takes two real draws per element, its parts, scaled by ``complex_scale``."""
    if not d.is_complex:
        return xp.asarray(method(shape, dtype=_sampling_dtype(d))).astype(d.np, copy=False)
    real = d.to_real()
    parts = xp.asarray(method(tuple(shape) + (2,), dtype=_sampling_dtype(real))).astype(real.np, copy=False)
    if complex_scale != 1.0:
        parts *= real.np.type(complex_scale)
    return xp.ascontiguousarray(parts).view(d.np)[..., 0]


def _sampling_dtype(d):
    if not d.is_floating_point:
        raise RuntimeError(f"random sampling of floating values is not implemented for {d}")
    return "float32" if d is not _dt.float64 else "float64"


@_recorded
def randint(low=0, high=None, size=None, *, generator=None, dtype=None, device=None,
            requires_grad=False, out=None):
    """``randint(high, size)`` or ``randint(low, high, size)``: ints in [low, high)."""
    if size is None:  # randint(high, size) by position
        low, high, size = 0, low, high
    elif high is None:  # randint(high, size=...)
        low, high = 0, low
    if high is None or size is None:
        raise TypeError("randint() expects (high, size) or (low, high, size)")
    xp = backend.namespace_for(device)
    d = _dt.as_dtype(dtype) if dtype is not None else _dt.int64
    sample = _stream(generator, xp).integers(low, high, parse_size((size,)))
    return _into(out, _finish(xp.asarray(sample).astype(d.np), requires_grad))


@_recorded
def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False, out=None):
    xp = backend.namespace_for(device)
    d = _dt.as_dtype(dtype) if dtype is not None else _dt.int64
    return _into(out, _finish(xp.randperm(_stream(generator, xp), n).astype(d.np), requires_grad))


@_recorded
def normal(mean=0.0, std=1.0, size=None, *, generator=None, dtype=None, device=None,
           requires_grad=False, out=None):
    like = mean if isinstance(mean, Tensor) else (std if isinstance(std, Tensor) else None)
    if like is not None:
        noise = randn(like.shape, generator=generator, dtype=like.dtype, device=like.device)
        return _into(out, noise * std + mean)
    noise = randn(size, generator=generator, dtype=dtype, device=device)
    return _into(out, _finish((noise * std + mean)._data, requires_grad))


# -- *_like ------------------------------------------------------------------------------------

def _like(fn, t, dtype, device, **kw):
    return fn(t.shape, dtype=dtype if dtype is not None else t.dtype,
              device=device if device is not None else t.device, **kw)


def _batched_as(input, t, requires_grad):
    """A ``*_like`` result ``t``: batched when ``input`` is (under vmap, as in torch, so that
    per-sample values can be written into it)."""
    if is_vmapped(input):
        from ..func._samples import batched_like
        t = batched_like(t, input)
    return t.requires_grad_(True) if requires_grad else t


@_recorded
def zeros_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None):
    return _batched_as(input, _like(zeros, input, dtype, device), requires_grad)


@_recorded
def ones_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None):
    return _batched_as(input, _like(ones, input, dtype, device), requires_grad)


@_recorded
def empty_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None):
    return _batched_as(input, _like(empty, input, dtype, device), requires_grad)


@_recorded
def full_like(input, fill_value, *, dtype=None, device=None, requires_grad=False, memory_format=None):
    return _batched_as(input, full(input.shape, fill_value, dtype=dtype if dtype is not None else input.dtype,
                                   device=device if device is not None else input.device), requires_grad)


@_recorded
def rand_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None):
    return _like(rand, input, dtype, device, requires_grad=requires_grad)


@_recorded
def randn_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None):
    return _like(randn, input, dtype, device, requires_grad=requires_grad)


@_recorded
def randint_like(input, low=0, high=None, *, dtype=None, device=None, requires_grad=False):
    if high is None:
        low, high = 0, low
    return randint(low, high, input.shape, dtype=dtype if dtype is not None else input.dtype,
                   device=device if device is not None else input.device)


# -- the legacy constructor --------------------------------------------------------------------

def legacy_tensor_data(args, device, dtype):
    """The array behind ``Tensor(...)``: data, a shape, or nothing; default float dtype."""
    d = _float_dtype(dtype)
    xp = backend.namespace_for(device)
    if not args:
        return xp.zeros((0,), dtype=d.np)
    if len(args) == 1 and not isinstance(args[0], (int, Size)) or (
            len(args) == 1 and isinstance(args[0], bool)):
        data = args[0]
        if isinstance(data, Tensor):
            return data._data
        return tensor(data, dtype=d, device=device)._data
    if builtins.all(isinstance(a, int) and not isinstance(a, bool) for a in args) or isinstance(args[0], Size):
        return xp.zeros(parse_size(args), dtype=d.np)
    raise TypeError(f"Tensor() takes data or a size, got {args!r}")

"""The CUDA array namespace: CuPy, plus the few kernels NumPy and CuPy spell differently.

Imported only when a CUDA device is first asked for (see
:func:`tracegrad.backend.namespace_for`), so CPU users never need CuPy. Every function
:mod:`tracegrad.backend.cpu` adds to NumPy has its twin here with the same signature;
``tests/backend/stub_device.py`` holds both to that on machines without a GPU.
"""
from cupy import *  # noqa: F401,F403 -- the CUDA namespace *is* CuPy's
import weakref as _weakref

import cupy as _cp
import cupyx as _cpx
from cupy.lib import stride_tricks as _stride_tricks
from cupyx.scipy.special import erf  # noqa: F401 -- exact, one kernel (NumPy has none)

from .atomic import scatter_add_any as _scatter_add_any

name = "cuda"
ndarray = _cp.ndarray
_rng = None  # made on first use: creating a generator touches the GPU
# The views as_strided made, by id (CuPy arrays are unhashable): CuPy gives them no .base,
# so owns_data could not tell them from arrays of their own otherwise.
_STRIDED_VIEWS = _weakref.WeakValueDictionary()


def device_count():
    """How many CUDA devices CuPy sees (0 without a driver or GPU)."""
    try:
        return _cp.cuda.runtime.getDeviceCount()
    except _cp.cuda.runtime.CUDARuntimeError:
        return 0


def current_index():
    return _cp.cuda.Device().id


def device_index(a):
    return a.device.id


def synchronize():
    """Wait until every kernel queued on the current device has finished."""
    _cp.cuda.Device().synchronize()


def scatter_add(target, index, values):
    """``target[index] += values`` with repeated indices accumulated (one atomic-add kernel;
    dtypes CUDA's atomicAdd lacks go through one it has, see :mod:`.atomic`)."""
    _scatter_add_any(_cp, _cpx.scatter_add, target, index, values)


def to_host(a):
    """A NumPy array with ``a``'s values (copied from device memory)."""
    return _cp.asnumpy(a)


def from_host(a, dtype=None):
    return _cp.asarray(a, dtype=dtype)


def where(condition, x=None, y=None):
    """CuPy's ``where``, taking a Python bool (or number) condition as NumPy's does."""
    if x is None and y is None:
        return _cp.where(condition)
    if not isinstance(condition, _cp.ndarray):
        condition = _cp.asarray(condition)
    return _cp.where(condition, x, y)


def storage_offset(a):
    """Elements from the start of ``a``'s memory block to its first element. Every view
    shares its array's block (``a.data.mem``), also those ``as_strided`` makes, which have
    no ``.base``. (An empty view reads 0, as on the CPU.)"""
    if a.size == 0:
        return 0
    return (a.data.ptr - a.data.mem.ptr) // a.itemsize


def owns_data(a):
    """True when ``a`` is not a view of another array (so a gradient may adopt it)."""
    return a.base is None and _STRIDED_VIEWS.get(id(a)) is not a


def as_strided(x, shape=None, strides=None):
    """CuPy's ``as_strided``, remembering its result as a view (see :func:`owns_data`)."""
    return _remember_view(_stride_tricks.as_strided(x, shape, strides))


def sliding_window_view(x, window_shape, axis=None):
    """CuPy's ``sliding_window_view`` (an ``as_strided`` view), remembered as a view."""
    return _remember_view(_stride_tricks.sliding_window_view(x, window_shape, axis))


def _remember_view(view):
    _STRIDED_VIEWS[id(view)] = view
    return view


def seed(value):
    """Reseed this device's default random generator."""
    global _rng
    _rng = _cp.random.default_rng(value)


def rng():
    """This device's default random generator."""
    global _rng
    if _rng is None:
        _rng = _cp.random.default_rng()
    return _rng


def new_rng(value):
    """A random generator of this device's own, seeded with ``value``."""
    return _cp.random.default_rng(value)


def randperm(generator, n):
    """A random permutation of ``0..n-1`` (CuPy's generators have no ``permutation``)."""
    return _cp.argsort(generator.random(n))

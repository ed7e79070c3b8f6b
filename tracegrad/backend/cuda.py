"""The CUDA array namespace: CuPy, plus the few kernels NumPy and CuPy spell differently.

Imported only when a CUDA device is first asked for (see
:func:`tracegrad.backend.namespace_for`), so CPU users never need CuPy. Every function
:mod:`tracegrad.backend.cpu` adds to NumPy has its twin here with the same signature;
``tests/backend/stub_device.py`` holds both to that on machines without a GPU.
"""
from cupy import *  # noqa: F401,F403 -- the CUDA namespace *is* CuPy's
import cupy as _cp
import cupyx as _cpx
from cupy.lib.stride_tricks import as_strided, sliding_window_view  # noqa: F401
from cupyx.scipy.special import erf  # noqa: F401 -- exact, one kernel (NumPy has none)

name = "cuda"
ndarray = _cp.ndarray
_rng = None  # made on first use: creating a generator touches the GPU


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
    """``target[index] += values`` with repeated indices accumulated (one atomic-add kernel)."""
    _cpx.scatter_add(target, index, values)


def to_host(a):
    """A NumPy array with ``a``'s values (copied from device memory)."""
    return _cp.asnumpy(a)


def from_host(a, dtype=None):
    return _cp.asarray(a, dtype=dtype)


def storage_offset(a):
    """Elements from the start of ``a``'s memory block (its owning array) to its first
    element."""
    root = a
    while root.base is not None:
        root = root.base
    if a.size == 0:
        return 0
    return (a.data.ptr - root.data.ptr) // a.itemsize


def owns_data(a):
    """True when ``a`` is not a view of another array (so a gradient may adopt it)."""
    return a.base is None


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

"""The CPU array namespace: NumPy, plus the few kernels NumPy and CuPy spell differently.

Kernels never import NumPy; they receive this module as ``xp`` (see
:func:`tracegrad.backend.namespace_of`), so the CUDA namespace can stand in unchanged.
"""
from numpy import *  # noqa: F401,F403 -- the CPU namespace *is* NumPy's

import numpy as _np
from numpy import where  # noqa: F401 -- NumPy's own (the CUDA namespace wraps CuPy's)
from numpy.lib.stride_tricks import as_strided, sliding_window_view  # noqa: F401

from . import cpu_erf as _cpu_erf

name = "cpu"
ndarray = _np.ndarray
_rng = _np.random.default_rng()


def scatter_add(target, index, values):
    """``target[index] += values`` with repeated indices accumulated (not overwritten).

    ``np.add.at`` with an index that picks whole rows (``index`` is ``(rows,)``, as in an
    embedding's backward) goes row by row through its slow general path: the embedding
    backward of a tiny nanoGPT cost more than the model's matrix products. The same
    additions on the flattened target, with one flat index per element, take NumPy's
    fast one-dimensional path (1.5-2.5x faster), in the same order, so the sums are the
    same bits."""
    rows = index[0] if type(index) is tuple and len(index) == 1 else index
    if (isinstance(rows, _np.ndarray) and rows.dtype.kind in "iu" and rows.size > 1 and target.ndim >= 2
            and target.flags.c_contiguous and isinstance(values, _np.ndarray)
            and values.shape == rows.shape + target.shape[1:]):
        rows = rows.reshape(-1)
        if 0 <= rows.min() and rows.max() < target.shape[0]:  # (else add.at: negatives, errors)
            width = target.size // target.shape[0]
            flat = (rows[:, None] * width + _np.arange(width)).reshape(-1)
            _np.add.at(target.reshape(-1), flat, values.reshape(-1))
            return
    _np.add.at(target, index, values)


def to_host(a):
    """A NumPy array with ``a``'s values (a no-op on the CPU)."""
    return _np.asarray(a)


def from_host(a, dtype=None):
    return _np.asarray(a, dtype=dtype)


def storage_offset(a):
    """Elements from the start of ``a``'s memory block (its owning array) to its first
    element. (NumPy keeps no start address for an empty view, so that reads 0.)"""
    root = a
    while getattr(root, "base", None) is not None:
        root = root.base
    if not isinstance(root, _np.ndarray) or a.size == 0:
        return 0
    start = a.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    return start // a.itemsize


def owns_data(a):
    """True when ``a`` is not a view of another array (so a gradient may adopt it)."""
    return a.base is None


def current_index():
    """The index of the device new arrays go to (the CPU has one)."""
    return 0


def synchronize():
    """Wait for queued work: NumPy's calls return when done, so nothing waits."""


def seed(value):
    """Reseed this device's default random generator."""
    global _rng
    _rng = _np.random.default_rng(value)


def rng():
    """This device's default random generator."""
    return _rng


def new_rng(value):
    """A random generator of this device's own, seeded with ``value``."""
    return _np.random.default_rng(value)


def randperm(generator, n):
    """A random permutation of ``0..n-1`` drawn from ``generator``."""
    return generator.permutation(n)


_erf_kernel = []


def erf(x):
    """The error function (NumPy has none). float32: one rational function evaluated in
    float64 (:func:`.cpu_erf.erf_float32`, within 1 ulp, 2.5x faster than SciPy's: GELU
    calls it twice per step). Other dtypes: SciPy's C ufunc when SciPy is installed (about
    5x faster than the fallback), else fdlibm's algorithm vectorised in NumPy
    (:mod:`.cpu_erf`, within 1 ulp). SciPy's is within 3 ulp in float64.
    SciPy is looked for on first use, so importing tracegrad does not import it."""
    x = _np.asarray(x)
    if x.dtype == _np.float32:
        return _cpu_erf.erf_float32(x)
    if not _erf_kernel:
        try:
            from scipy.special import erf as kernel
        except ImportError:
            kernel = _cpu_erf.erf
        _erf_kernel.append(kernel)
    out = _erf_kernel[0](x)
    if x.dtype.kind == "f" and out.dtype != x.dtype:  # SciPy computes float16 in float64
        out = out.astype(x.dtype)
    return out

"""Array namespaces per device, dtypes and device objects.

Every kernel in the rule table receives an array namespace ``xp`` (NumPy's on the CPU,
CuPy's on CUDA) and calls only that: this package is the one place that knows which
array library backs which device.
"""
import warnings as _warnings

import numpy as _np

from . import cpu
from .allocator import keep_freed_memory as _keep_freed_memory
from .device import CPU, device
from .dtypes import (as_dtype, from_numpy_dtype, get_default_dtype, promote_types,  # noqa: F401
                     result_type, set_default_dtype)

_keep_freed_memory()  # NumPy temporaries reuse freed memory instead of page-faulting it in (see allocator.py)

__all__ = ["cpu", "device", "namespace_of", "namespace_for", "device_of", "is_array",
           "register", "unregister", "loaded", "move", "seed_all", "ARRAY_TYPES",
           "ARRAY_TYPE_SET", "as_dtype", "from_numpy_dtype", "get_default_dtype",
           "set_default_dtype", "promote_types", "result_type"]

# PyTorch computes log(0) = -inf or 0/0 = nan silently; NumPy warns. Silence the floating
# point warnings raised inside tracegrad's own kernels only (the user's NumPy code keeps
# its warnings), at no cost per operation. Where the program made NumPy raise, or made
# warnings errors in front of this filter, the operations run again quietly: quiet.py.
_warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"tracegrad\.")

# Exact type -> namespace. NumPy scalars (what NumPy returns from 0-d reductions) and
# Python numbers belong to the CPU namespace.
_NS_BY_TYPE = {_np.ndarray: cpu, float: cpu, int: cpu, bool: cpu, complex: cpu}
for _t in (_np.bool_, _np.uint8, _np.int8, _np.int16, _np.int32, _np.int64, _np.float16,
           _np.float32, _np.float64, _np.complex64, _np.complex128):
    _NS_BY_TYPE[_t] = cpu

# Array classes a Tensor may hold (a set shared with the runtime, filled in place); the
# CUDA namespace adds cupy.ndarray when it is loaded.
ARRAY_TYPE_SET = {_np.ndarray}
ARRAY_TYPES = (_np.ndarray,)
_NS_BY_DEVICE_TYPE = {"cpu": cpu}
_seed = [None]   # the last seed given to every device (a namespace loaded later gets it too)


def register(ns, array_types):
    """Make ``ns`` (a module-like array namespace named after its device type, e.g.
    ``'cuda'``) the namespace of its device and of values of ``array_types``."""
    global ARRAY_TYPES
    for t in array_types:
        _NS_BY_TYPE[t] = ns
        ARRAY_TYPE_SET.add(t)
    ARRAY_TYPES = tuple(ARRAY_TYPE_SET)
    _NS_BY_DEVICE_TYPE[ns.name] = ns
    if _seed[0] is not None:
        ns.seed(_seed[0])


def unregister(ns):
    """Undo :func:`register` (tests stand a stub namespace in for CUDA, then take it away)."""
    global ARRAY_TYPES
    for t, owner in list(_NS_BY_TYPE.items()):
        if owner is ns:
            del _NS_BY_TYPE[t]
            ARRAY_TYPE_SET.discard(t)
    ARRAY_TYPES = tuple(ARRAY_TYPE_SET)
    if _NS_BY_DEVICE_TYPE.get(ns.name) is ns:
        del _NS_BY_DEVICE_TYPE[ns.name]


def loaded():
    """The array namespaces in use so far (CPU, and CUDA once asked for) -- those with
    values and random streams: not the meta device's."""
    return [ns for ns in _NS_BY_DEVICE_TYPE.values() if ns is not _meta]


def seed_all(value):
    """Reseed every device's default random stream (and those of devices loaded later)."""
    _seed[0] = value
    for ns in loaded():
        ns.seed(value)


from . import meta as _meta  # noqa: E402  (the meta device: shapes and dtypes, no values)

register(_meta, (_meta.MetaArray,))


def _load_cuda():
    """Import the CuPy namespace on first use, so CPU users never need CuPy."""
    try:
        from . import cuda
    except ImportError as e:
        raise RuntimeError("CUDA is not available: tracegrad runs on CUDA through CuPy, which "
                           "needs the gpu extra (pip install 'tracegrad[gpu]') and an NVIDIA "
                           f"GPU ({e})") from None
    if cuda.device_count() == 0:
        raise RuntimeError("CUDA is not available: CuPy is installed but found no NVIDIA GPU "
                           "(or no driver for it)")
    register(cuda, (cuda.ndarray,))
    return cuda


def namespace_of(value):
    """The array namespace that computes on ``value`` (an array, NumPy scalar or number)."""
    try:
        return _NS_BY_TYPE[type(value)]
    except KeyError:
        if isinstance(value, (_np.ndarray, _np.generic, float, complex)):  # (and their subclasses)
            return cpu
        if _unloaded_cupy_array(value):
            return _load_cuda()
        raise TypeError(f"no array backend for values of type {type(value).__name__}") from None


_default_device = [None]  # set_default_device's device: where factories put tensors (None: CPU)


def namespace_for(dev):
    """The array namespace of a device (``'cpu'``, ``'cuda'``, a device object, or None:
    the default device, see ``tracegrad.set_default_device``)."""
    if dev is None:
        dev = _default_device[0]
        if dev is None:
            return cpu
    dev = dev if isinstance(dev, device) else device(dev)
    ns = _NS_BY_DEVICE_TYPE.get(dev.type)
    if ns is None:
        ns = _load_cuda()
    if dev.index not in (None, ns.current_index()):
        raise RuntimeError(f"tracegrad computes on the current {dev.type} device "
                           f"({dev.type}:{ns.current_index()}); {dev} is not it (make it current "
                           "with cupy.cuda.Device(n).use() first)")
    return ns


def device_of(array):
    """The device an array lives on."""
    ns = namespace_of(array)
    return CPU if ns is cpu else device(ns.name, ns.device_index(array))


def move(array, ns):
    """``array``'s values as an array of namespace ``ns``: itself when already there, else
    a copy through host memory (NumPy and CuPy arrays do not mix in one operation)."""
    src = namespace_of(array)
    return array if src is ns else ns.from_host(src.to_host(array))


def memory_root(a):
    """The array whose memory ``a`` uses: itself, or the end of its chain of ``.base``."""
    base = getattr(a, "base", None)
    while base is not None:
        a, base = base, getattr(base, "base", None)
    return a


def is_array(value):
    """True for an array a Tensor may hold (NumPy's, or a device's: a CuPy array loads
    the CUDA namespace, as in :func:`namespace_of`)."""
    if isinstance(value, ARRAY_TYPES):
        return True
    if type(value) in _NS_BY_TYPE or not _unloaded_cupy_array(value):
        return False  # (numbers and NumPy scalars answer at once)
    _load_cuda()
    return isinstance(value, ARRAY_TYPES)


def _unloaded_cupy_array(value):
    """True when ``value`` is a CuPy array and the CUDA namespace is not loaded yet (a
    CuPy array made before tracegrad was asked for the CUDA device)."""
    t = type(value)
    return ("cuda" not in _NS_BY_DEVICE_TYPE and t.__module__.startswith("cupy")
            and hasattr(t, "__cuda_array_interface__"))


def python_scalar(value):
    """A NumPy scalar (np.float64(2.5)...) as the Python number PyTorch treats it as;
    None for anything else."""
    return value.item() if isinstance(value, _np.generic) else None

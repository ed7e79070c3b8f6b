"""Array namespaces per device, dtypes and device objects.

Every kernel in the rule table receives an array namespace ``xp`` (NumPy's on the CPU,
CuPy's on CUDA) and calls only that: this package is the one place that knows which
array library backs which device.
"""
import warnings as _warnings

import numpy as _np

from . import cpu
from .device import CPU, device
from .dtypes import (as_dtype, from_numpy_dtype, get_default_dtype, promote_types,  # noqa: F401
                     result_type, set_default_dtype)

__all__ = ["cpu", "device", "namespace_of", "namespace_for", "device_of", "is_array",
           "ARRAY_TYPES", "as_dtype", "from_numpy_dtype", "get_default_dtype",
           "set_default_dtype", "promote_types", "result_type"]

# PyTorch computes log(0) = -inf or 0/0 = nan silently; NumPy warns. Silence the floating
# point warnings raised inside tracegrad's own kernels only (the user's NumPy code keeps
# its warnings), at no cost per operation.
_warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"tracegrad\.")

# Exact type -> namespace. NumPy scalars (what NumPy returns from 0-d reductions) and
# Python numbers belong to the CPU namespace.
_NS_BY_TYPE = {_np.ndarray: cpu, float: cpu, int: cpu, bool: cpu, complex: cpu}
for _t in (_np.bool_, _np.uint8, _np.int8, _np.int16, _np.int32, _np.int64, _np.float16,
           _np.float32, _np.float64, _np.complex64, _np.complex128):
    _NS_BY_TYPE[_t] = cpu

# Array classes a Tensor may hold; the CUDA namespace adds cupy.ndarray when loaded.
ARRAY_TYPES = (_np.ndarray,)
_NS_BY_DEVICE_TYPE = {"cpu": cpu}


def namespace_of(value):
    """The array namespace that computes on ``value`` (an array, NumPy scalar or number)."""
    try:
        return _NS_BY_TYPE[type(value)]
    except KeyError:
        if isinstance(value, _np.ndarray) or isinstance(value, _np.generic):
            return cpu
        raise TypeError(f"no array backend for values of type {type(value).__name__}") from None


def namespace_for(dev):
    """The array namespace of a device (``'cpu'``, ``'cuda'``, a device object, or None)."""
    if dev is None:
        return cpu
    kind = dev.type if isinstance(dev, device) else device(dev).type
    try:
        return _NS_BY_DEVICE_TYPE[kind]
    except KeyError:
        raise RuntimeError(f"device '{kind}' is not available: tracegrad runs on CUDA through "
                           "CuPy, which needs the gpu extra (pip install 'tracegrad[gpu]') and an "
                           "NVIDIA GPU") from None


def device_of(array):
    """The device an array lives on."""
    ns = namespace_of(array)
    return CPU if ns is cpu else device(ns.name, 0)


def is_array(value):
    return isinstance(value, ARRAY_TYPES)


def python_scalar(value):
    """A NumPy scalar (np.float64(2.5)...) as the Python number PyTorch treats it as;
    None for anything else."""
    return value.item() if isinstance(value, _np.generic) else None

"""The torch-style functions (``tracegrad.sum``, ``tracegrad.cat``...) and Tensor methods.

Each submodule maps PyTorch's signatures onto rule-table primitives and lists its public
functions (``FUNCTIONS``) and Tensor methods (``METHODS``); this package attaches the
methods to :class:`~tracegrad.runtime.tensor.Tensor`.
"""
from ..runtime.tensor import Tensor
from . import activation, arrays, complex_, conversion, indexing, linalg, pointwise, reduction, shape
from . import special
from . import compat_functions, compat_tensor, distance, histogram, order_stats, out, sampling, sorting
from . import extrema, foreach, integer, quantize, scatter_reduce, spectral, storage

MODULES = (pointwise, reduction, shape, arrays, indexing, linalg, activation, conversion, complex_, special)
MODULES += (sorting, histogram, sampling, distance, order_stats)
MODULES += (scatter_reduce, extrema, integer, storage, foreach, spectral, quantize)
from . import linalg_legacy, lowrank  # noqa: E402  (over tracegrad.linalg, which needs the modules above)
MODULES += (linalg_legacy, lowrank)
MODULES += (compat_tensor, compat_functions)  # composed from the above: last, and must not shadow them

FUNCTIONS = {}
for _m in MODULES:
    FUNCTIONS.update(getattr(_m, "FUNCTIONS", {}))
    for _name, _fn in _m.METHODS.items():
        setattr(Tensor, _name, _fn)
out.install(FUNCTIONS)

__all__ = ["FUNCTIONS", "MODULES"]

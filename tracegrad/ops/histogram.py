"""Counting with PyTorch's signatures and checks: ``bincount``, ``histc`` and
``histogram``. The kernels (:mod:`tracegrad.rules.counting`) have no derivative, so the
results never require grad -- except ``bincount``'s sums of ``weights`` that require grad,
which are a ``scatter_add`` (so the weights' gradient is not silently dropped)."""
import math

from .. import backend
from ..rules import counting as C
from ..runtime.creation import zeros
from ..runtime.tensor import Tensor, wrap
from . import return_types
from .no_derivative import refusing_backward


def bincount(input, weights=None, minlength=0):
    if input.dtype.is_floating_point or input.dtype.is_complex or input.dtype.name == "bool":
        raise NotImplementedError(f"\"bincount_cpu\" not implemented for '{input.dtype.scalar_name}'")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if input.ndim != 1 or (input.numel() and int(input.min()) < 0):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if weights is not None and (weights.ndim != 1 or weights.shape[0] != input.shape[0]):
        raise RuntimeError("weights should be 1-d and have the same length as input")
    if input.numel() == 0:  # (PyTorch counts nothing as int64 zeros, weights or not)
        weights = None
    if weights is not None and weights.dtype.is_floating_point and _differentiated(weights):
        size = max(int(minlength), int(input.max()) + 1)
        return zeros(size, dtype=weights.dtype, device=weights.device).scatter_add(0, input, weights)
    return C.bincount(input, weights, minlength=int(minlength))


def _differentiated(t):
    """Whether a gradient (reverse) or a tangent (forward AD) is taken through ``t``."""
    from ..autograd import forward_ad
    return t.requires_grad or forward_ad.unpack_dual(t).tangent is not None


def _float_only(input, kernel):
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{input.dtype.scalar_name}'")


def _c_number(v):
    """A float as C++'s ``<<`` prints it in PyTorch's messages (``1``, ``0.5``, ``inf``)."""
    return "nan" if math.isnan(v) else "inf" if v == math.inf else "-inf" if v == -math.inf else f"{v:g}"


def _linear_edges(input, bins, lo, hi):
    """``bins + 1`` evenly spaced edges from ``lo`` to ``hi`` in the input's dtype, on its device."""
    xp = backend.namespace_of(input._data)
    return xp.linspace(lo, hi, bins + 1).astype(input._data.dtype)


def _data_range(input):
    if input.numel() == 0:
        return 0.0, 0.0
    return float(input.min()), float(input.max())


def histc(input, bins=100, min=0, max=0):
    """Counts in ``bins`` equal bins over ``[min, max]`` (the data's range when both are
    equal, widened by 1 on each side when that is a single value)."""
    _float_only(input, "histogram_cpu")
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    lo, hi = float(min), float(max)
    if lo > hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    if lo == hi:
        lo, hi = _data_range(input)
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise RuntimeError(f"torch.histc: range of [{_c_number(lo)}, {_c_number(hi)}] is not finite")
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    edges = wrap(_linear_edges(input, bins, lo, hi))
    return C.histogram_counts(input.detach(), edges, linear=True)  # (no grad_fn: PyTorch's histc has none)


def histogram(input, bins, *, range=None, weight=None, density=False):
    """``(hist, bin_edges)``: counts (or summed ``weight``) in ``bins`` equal bins over
    ``range`` (the data's by default, widened by 0.5 each side when a single value), or
    between the edges of a tensor ``bins``; ``density`` divides by total times width."""
    _float_only(input, "histogramdd")
    if weight is not None and tuple(weight.shape) != tuple(input.shape):
        raise RuntimeError("torch.histogramdd: if weight tensor is provided it should have the same shape as "
                           "the input tensor excluding its innermost dimension, but got input with shape "
                           f"{[input.numel(), 1]} and weight with shape {list(weight.shape)}")
    if isinstance(bins, Tensor):
        edges = bins.detach()
    else:
        if bins <= 0:
            raise RuntimeError(f"torch.histogramdd(): bins must be > 0, but got {bins} for dimension 0")
        if range is not None:
            lo, hi = float(range[0]), float(range[1])
        else:
            lo, hi = _data_range(input) if input.numel() else (0.0, 1.0)
        if lo > hi:
            raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min {_c_number(lo)} "
                               f"max {_c_number(hi)} for dimension 0")
        if not (math.isfinite(lo) and math.isfinite(hi)):
            raise RuntimeError(f"torch.histogramdd: dimension 0's range [{_c_number(lo)}, {_c_number(hi)}] "
                               "is not finite")
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        edges = wrap(_linear_edges(input, int(bins), lo, hi))
    w = None if weight is None else weight.detach()
    hist = C.histogram_counts(input.detach(), edges, w)
    if density:
        widths = edges[1:] - edges[:-1]
        hist = hist / (hist.sum() * widths)
    return return_types.histogram(refusing_backward("histogram", hist, input, weight), edges)


FUNCTIONS = {n: globals()[n] for n in ("bincount", "histc", "histogram")}
METHODS = dict(FUNCTIONS)

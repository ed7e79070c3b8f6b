"""Counting with PyTorch's signatures and checks: ``bincount``, ``histc``, ``histogram``
and ``histogramdd``. The kernels (:mod:`tracegrad.rules.counting`) have no derivative, so
the results never carry a gradient -- except ``bincount``'s sums of ``weights`` that
require grad, which are a ``scatter_add`` (so the weights' gradient is not silently
dropped); ``histogram`` and ``histogramdd`` results that an input requiring grad went into
require grad as in PyTorch, and a backward through them raises (:mod:`.no_derivative`)."""
import builtins
import math
import numbers
import operator

from .. import backend
from ..backend.dtypes import int64
from ..rules import counting as C
from ..runtime.creation import zeros
from ..runtime.tensor import Tensor, wrap
from . import return_types
from .no_derivative import not_implemented
from .linalg import _c as _c_name


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
    return t.requires_grad or _has_tangent(t)


def _has_tangent(t):
    from ..autograd import forward_ad
    return forward_ad.unpack_dual(t).tangent is not None


def _float_only(input, kernel):
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{input.dtype.scalar_name}'")


def _c_number(v):
    """A float as C++'s ``<<`` prints it in PyTorch's messages (``1``, ``0.5``, ``inf``)."""
    return "nan" if math.isnan(v) else "inf" if v == math.inf else "-inf" if v == -math.inf else f"{v:g}"


def _linear_edges(input, bins, lo, hi):
    """``bins + 1`` evenly spaced edges from ``lo`` to ``hi`` in the input's dtype, on its
    device, rounded as PyTorch's ``linspace`` rounds them (so that a value on an edge falls
    in PyTorch's bin): each half stepped from its own end, ``start + step * i`` with one
    rounding (a fused multiply-add, computed wider here), or with float16 one per operation.
    Computed on the host (where ``longdouble`` is) and moved: edges are few."""
    xp = backend.cpu
    dtype = xp.dtype(input._data.dtype)
    n = bins + 1
    start, end = dtype.type(lo), dtype.type(hi)
    step = (end - start) / dtype.type(max(n - 1, 1))
    i = xp.arange(n)
    if dtype.itemsize < 4:
        up, down = start + step * i.astype(dtype), end - step * (n - 1 - i).astype(dtype)
    else:
        wide = xp.longdouble
        up, down = wide(start) + wide(step) * i, wide(end) - wide(step) * (n - 1 - i)
    edges = xp.where(i < n // 2, up, down).astype(dtype)
    return backend.move(edges, backend.namespace_of(input._data))


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
    hist, edges = not_implemented("histogram", [hist, edges],
                                  [input, weight] + ([bins] if isinstance(bins, Tensor) else []))
    return return_types.histogram(hist, edges)


def histogramdd(input, bins, *, range=None, weight=None, density=False):
    """``(hist, bin_edges)`` of the points in the rows of ``input`` (its last dim is the
    number of dimensions D, the others are flattened): counts (or summed ``weight``) in a
    D-dimensional grid of bins. ``bins`` gives each dimension's edges (D 1-D tensors,
    returned as they are) or its number of equal bins (one int for all, or D ints) over
    ``range`` (each dimension's min and max, 2*D floats) or else over the data's range,
    widened by 0.5 each side when a single value. Points outside the grid or with a NaN are
    not counted; ``density`` divides by the total and by each bin's volume. Checks and
    their order, dtypes and what requires grad follow PyTorch."""
    if not isinstance(input, Tensor):
        raise TypeError(f"histogramdd(): argument 'input' must be Tensor, not {type(input).__name__}")
    counts, edges = _dd_bins(bins)
    _dd_optional_args(range, weight)
    if isinstance(counts, int) and input.ndim == 0:
        raise IndexError("Dimension specified as -1 but tensor has no dimensions")
    op = "_histogramdd_from_bin_tensors" if edges is not None else "_histogramdd_bin_edges"
    if any(t is not None and _has_tangent(t) for t in (input, weight, *(edges or ()))):
        raise NotImplementedError(f"Trying to use forward AD with aten::{op} that does not support it.")
    if input.ndim < 2:
        raise RuntimeError("torch.histogramdd: input tensor should have at least 2 dimensions")
    dims = input.shape[-1]
    points = input.detach().reshape(math.prod(input.shape[:-1]), dims)
    if edges is None:
        edges = _dd_linear_edges(points, [counts] * dims if isinstance(counts, int) else counts, range)
    elif len(edges) != dims:
        raise RuntimeError(f"torch.histogramdd: expected {dims} sequences of bin edges for a {dims}-dimensional "
                           f"histogram but got {len(edges)}")
    _dd_check(input, edges, weight)
    hist = _dd_counts(points, [e.detach() for e in edges], None if weight is None else weight.detach())
    if density:
        hist = hist / hist.sum()
        for d, e in enumerate(edges):
            hist = hist / e.detach().diff().reshape([-1 if k == d else 1 for k in builtins.range(dims)])
    inputs = [t for t in (input, weight) if t is not None]
    if op == "_histogramdd_bin_edges":
        edges = not_implemented(op, edges, inputs)
        op = "_histogramdd_from_bin_cts"
    else:
        inputs += edges
    hist, = not_implemented(op, [hist], inputs)
    return return_types.histogramdd(hist, tuple(edges))


def _as_int(v):
    """``v`` as a bin count (an int, a NumPy int or a 0-d integer tensor), or None."""
    if isinstance(v, bool):
        return None
    if isinstance(v, Tensor):
        return int(v) if v.ndim == 0 and not (v.dtype.is_floating_point or v.dtype.is_complex
                                               or v.dtype.name == "bool") else None
    try:
        return operator.index(v)
    except TypeError:
        return None


def _dd_bins(bins):
    """``(counts, None)`` for an int or a sequence of ints, ``(None, edges)`` for a sequence of
    tensors; anything else is a TypeError, as PyTorch's argument parser makes it."""
    n = _as_int(bins)
    if n is not None:
        return n, None
    if not isinstance(bins, (list, tuple)):
        raise TypeError("histogramdd(): argument 'bins' must be an int, a sequence of ints or a sequence of "
                        f"1-D tensors of bin edges, not {type(bins).__name__}")
    counts = [_as_int(b) for b in bins]
    if None not in counts:
        return counts, None
    for i, b in enumerate(bins):
        if not isinstance(b, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 1, but got {type(b).__name__}")
    return None, list(bins)


def _dd_optional_args(range, weight):
    if range is not None and not (isinstance(range, (list, tuple)) and all(
            isinstance(v, numbers.Real) and not isinstance(v, Tensor) for v in range)):
        raise TypeError(f"histogramdd(): argument 'range' must be a sequence of floats, not {range!r}")
    if weight is not None and not isinstance(weight, Tensor):
        raise TypeError(f"histogramdd(): argument 'weight' must be Tensor, not {type(weight).__name__}")


def _dd_linear_edges(points, counts, range):
    """Each dimension's ``counts[d] + 1`` equal-width edges over its ``range`` or the data's."""
    dims = points.shape[1]
    if range is not None:
        if len(range) != 2 * dims:
            raise RuntimeError(f"torch.histogramdd: for a {dims}-dimensional histogram range should have "
                               f"{2 * dims} elements, but got {len(range)}")
        bounds = [(float(range[2 * d]), float(range[2 * d + 1])) for d in builtins.range(dims)]
    elif points.numel():
        if points.dtype.name not in ("float32", "float64"):
            raise NotImplementedError(f"\"histogramdd\" not implemented for '{points.dtype.scalar_name}'")
        bounds = list(zip(points.amin(0).tolist(), points.amax(0).tolist()))
    else:
        bounds = [(0.0, 1.0)] * dims
    for d, (lo, hi) in enumerate(bounds):
        if not (math.isfinite(lo) and math.isfinite(hi)):
            raise RuntimeError(f"torch.histogramdd: dimension {d}'s range [{_c_number(lo)}, {_c_number(hi)}] "
                               "is not finite")
        if lo > hi:
            raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min {_c_number(lo)} "
                               f"max {_c_number(hi)} for dimension {d}")
        if lo == hi:
            bounds[d] = (lo - 0.5, hi + 0.5)
    if len(counts) != dims:
        raise RuntimeError("histogramdd: The size of bins must be equal to the innermost dimension of the input.")
    edges = []
    for n, (lo, hi) in zip(counts, bounds):
        if n < -1:
            raise RuntimeError("number of steps must be non-negative")
        if points.dtype.name == "bool":
            raise NotImplementedError("\"linspace_cpu\" not implemented for 'Bool'")
        if points.dtype.is_floating_point:
            edges.append(wrap(_linear_edges(points, n, lo, hi)))
        else:  # (any values: the kernel's dtype check refuses these after the other checks)
            edges.append(zeros(n + 1, dtype=points.dtype, device=points.device))
    return edges


def _dd_check(input, edges, weight):
    """PyTorch's checks of the edges and the weight, in its order."""
    for d, e in enumerate(edges):
        if e.dtype != input.dtype:
            raise RuntimeError("torch.histogramdd: input tensor and bins tensors should have the same dtype, but "
                               f"got input with dtype {_c_name(input)} and bins for dimension {d} with dtype "
                               f"{_c_name(e)}")
        if e.ndim != 1:
            raise RuntimeError(f"torch.histogramdd: bins tensor should have one dimension, but got {e.ndim} "
                               f"dimensions in the bins tensor for dimension {d}")
        if e.numel() == 0:
            raise RuntimeError("torch.histogramdd: bins tensor should have at least 1 element, but got 0 elements "
                               f"in the bins tensor for dimension {d}")
    if weight is not None:
        if weight.dtype != input.dtype:
            raise RuntimeError("torch.histogramdd: if weight tensor is provided, input tensor and weight tensor "
                               f"should have the same dtype, but got input({_c_name(input)}), and "
                               f"weight({_c_name(weight)})")
        if tuple(weight.shape) != tuple(input.shape[:-1]):
            raise RuntimeError("torch.histogramdd: if weight tensor is provided it should have the same shape as "
                               "the input tensor excluding its innermost dimension, but got input with shape "
                               f"{list(input.shape)} and weight with shape {list(weight.shape)}")
    for d, e in enumerate(edges):
        if e.numel() < 2:
            raise RuntimeError(f"torch.histogram(): bins must be > 0, but got 0 for dimension {d}")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"histogram_cpu\" not implemented for '{input.dtype.scalar_name}'")


def _dd_counts(points, edges, weight):
    """Counts (or summed ``weight``) of the rows of ``points`` (N, D) in the grid of bins
    between each dimension's ``edges``. A point counts where each coordinate lies within
    its dimension's first and last edge (NaN never does); the last bin holds its right
    edge. A coordinate's bin comes from the ``searchsorted`` rule, PyTorch's upper-bound
    search over the edges as given, so unsorted or NaN edges bin as in PyTorch."""
    shape = [e.shape[0] - 1 for e in edges]
    if not edges or points.numel() == 0:  # (without dimensions too, PyTorch counts nothing)
        return zeros(shape, dtype=points.dtype, device=points.device)
    inside = True
    for d, e in enumerate(edges):
        inside = inside & (points[:, d] >= e[0]) & (points[:, d] <= e[-1])
    cell = zeros(int(inside.sum()), dtype=int64, device=points.device)
    for d, e in enumerate(edges):
        pos = C.searchsorted(e, points[:, d][inside], right=True) - 1
        cell = cell * shape[d] + pos.clamp(max=shape[d] - 1)
    w = None if weight is None else weight.reshape(-1)[inside]
    return C.bincount(cell, w, minlength=math.prod(shape)).to(points.dtype).reshape(shape)


FUNCTIONS = {n: globals()[n] for n in ("bincount", "histc", "histogram", "histogramdd")}
METHODS = {n: FUNCTIONS[n] for n in ("bincount", "histc", "histogram")}

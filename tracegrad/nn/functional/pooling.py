"""The pooling forms beyond :mod:`.conv`'s 1-d and 2-d ones, composed from the pooling rules of
:mod:`tracegrad.rules.pool` and from tensor ops, with PyTorch's checks and messages.

Pooling over a (D, H, W) box is separable: the box's maximum is the maximum over D of the
maxima over (H, W) (and the first maximum in (d, h, w) scan order is the first d whose
plane maximum is it, at that plane's first maximum, so PyTorch's indices follow), and its
average is the average over D of the averages over (H, W), the divisors being products of
per-dim counts. So the 3-d forms are the 2-d rules over (H, W), then over D on a
``(..., 1, D)`` view. Adaptive max pooling finds its indices on the input's device (per dim, first
maximum first) and picks the values with one differentiable ``gather``; max unpooling is the
``scatter`` of the values to their indices. Adaptive average pooling is separable (a box average is the average, along one dim, of the
averages along the others), so the 3-d form is the 2-d rule over (H, W) and then over D.
"""
import math

from ... import backend
from ...backend import (
    cpu as host,  # host-side arithmetic on shapes and on indices copied off the device
)
from ...ops.activation import relu
from ...ops._args import on_samples
from ...ops.linalg import _legacy, _tensor
from ...rules import pool as _pool
from ...runtime import creation
from ...runtime.tensor import wrap
from .conv import (
    _adaptive_size,
    _dim_range,
    _ints,
    _sizes,
    _trunc_half,
    avg_pool1d,
    avg_pool2d,
    max_pool1d,
    max_pool2d,
)

__all__ = ["adaptive_avg_pool3d", "max_pool3d", "max_pool3d_with_indices", "avg_pool3d",
           "adaptive_max_pool1d", "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d",
           "adaptive_max_pool2d_with_indices", "lp_pool1d", "lp_pool2d", "max_unpool1d", "max_unpool2d",
           "adaptive_max_pool3d", "adaptive_max_pool3d_with_indices", "lp_pool3d", "max_unpool3d"]


def _check_adaptive_input(input, fn, n):
    if input.ndim not in (n + 1, n + 2):
        raise RuntimeError(f"{fn}(): Expected {n + 1}D or {n + 2}D tensor, but got {_sizes(input.shape)}")
    for i in range(input.ndim - n, input.ndim):
        if input.shape[i] <= 0:
            raise RuntimeError(f"{fn}(): Expected input to have non-zero size for non-batch dimensions, but "
                               f"input has sizes {_sizes(input.shape)} with dimension {i} being empty")


def adaptive_avg_pool3d(input, output_size):
    """Average over windows tiling (D, H, W) into ``output_size`` cells."""
    fn = "adaptive_avg_pool3d"
    _tensor(input, fn, "input", 1)
    od, oh, ow = _adaptive_size(input, output_size, fn, 3)
    if min(od, oh, ow) < 0:
        raise RuntimeError(f"{fn}: elements of output_size must be greater than or equal to 0 but received "
                           f"{{{od}, {oh},{ow}}}")
    _check_adaptive_input(input, fn, 3)
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"adaptive_avg_pool3d_cpu\" not implemented for '{_legacy(input)}'")
    if (od, oh, ow) == (1, 1, 1):
        return input.mean((-3, -2, -1), keepdim=True)
    planes = _pool.adaptive_avg_pool2d(input, output_size=(oh, ow))        # (..., D, oh, ow)
    depth_last = planes.movedim(-3, -1).unsqueeze(-2)                      # (..., oh, ow, 1, D)
    pooled = _pool.adaptive_avg_pool2d(depth_last, output_size=(1, od))    # (..., oh, ow, 1, od)
    return pooled.squeeze(-2).movedim(-1, -3)


# -- 3-d max and average pooling: the 2-d rules over (H, W), then over D --------------------------------

def _three(fn, value, arg, pos, message, allow_empty=False):
    values = [] if value is None else _ints(value, fn, arg, pos, 3)
    if len(values) not in ((0, 1, 3) if allow_empty else (1, 3)):
        raise RuntimeError(f"{fn}: {message}")
    return tuple(values) * 3 if len(values) == 1 else tuple(values)


def _pool3d_arguments(fn, input, kernel_size, stride, padding, dilation, ceil_mode, either):
    """PyTorch's argument and shape checks of max_pool3d / avg_pool3d: 3-tuples and the output size."""
    _tensor(input, fn, "input", 1)
    kernel = _three(fn, kernel_size, "kernel_size", 2, f"kernel_size must {either}a single int, or a tuple of "
                    "three ints")
    stride = _three(fn, stride, "stride", 3, "stride must either be omitted, a single int, or a tuple of three "
                    "ints", allow_empty=True) or kernel
    padding = _three(fn, padding, "padding", 4, "padding must either be a single int, or a tuple of three ints")
    dilation = _three(fn, dilation, "dilation", 5, "dilation must be either a single int, or a tuple of three "
                      "ints")
    if input.ndim not in (4, 5) or any(n == 0 for n in input.shape[-4:]):
        raise RuntimeError("non-empty 4D or 5D (batch mode) tensor expected for input")
    out = []
    for n, k, s, p, d in zip(input.shape[-3:], kernel, stride, padding, dilation):
        if s == 0:
            raise RuntimeError("stride should not be zero")
        if p > _trunc_half((k - 1) * d + 1):
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={p}, "
                               f"kernel_size={k} and dilation={d}")
        out.append(_pool.pool_output_size(n, k, s, p, d, ceil_mode))
    if min(out) < 1:
        planes, (t, h, w) = input.shape[-4], input.shape[-3:]
        if fn == "avg_pool3d":
            raise RuntimeError(f"input image (T: {t} H: {h} W: {w}) smaller than kernel size (kT: {kernel[0]} "
                               f"kH: {kernel[1]} kW: {kernel[2]})")
        raise RuntimeError(f"Given input size: ({planes}x{t}x{h}x{w}). Calculated output size: "
                           f"({planes}x{out[0]}x{out[1]}x{out[2]}). Output size is too small")
    return kernel, stride, padding, dilation


def _depth_last(x):
    """(..., D, h, w) -> (..., h, w, 1, D): D pooled by a 2-d rule over the last two dims."""
    return x.movedim(-3, -1).unsqueeze(-2)


def _depth_back(x):
    return x.squeeze(-2).movedim(-1, -3)


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    """(values, indices): each box's maximum and its flat position in the input's D * H * W."""
    kernel, stride, padding, dilation = _pool3d_arguments("max_pool3d", input, kernel_size, stride, padding,
                                                          dilation, ceil_mode, "either be ")
    if input.dtype.name == "bool":
        raise NotImplementedError("\"max_pool3d\" not implemented for 'Bool'")
    planes_params = dict(kernel_size=kernel[1:], stride=stride[1:], padding=padding[1:], dilation=dilation[1:],
                         ceil_mode=bool(ceil_mode))
    plane_idx = _pool.max_pool2d_indices(input.detach(), **planes_params)
    planes = _pool.max_pool2d(input, plane_idx, **planes_params)                  # (..., D, oh, ow)
    depth_params = dict(kernel_size=(1, kernel[0]), stride=(1, stride[0]), padding=(0, padding[0]),
                        dilation=(1, dilation[0]), ceil_mode=bool(ceil_mode))
    columns = _depth_last(planes)
    depth_idx = _pool.max_pool2d_indices(columns.detach(), **depth_params)
    values = _depth_back(_pool.max_pool2d(columns, depth_idx, **depth_params))  # (..., od, oh, ow)
    depth = _depth_back(depth_idx)
    within = plane_idx.gather(-3, depth)  # the chosen plane's (h, w) position
    h, w = input.shape[-2:]
    return values, depth * (h * w) + within


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    values, indices = max_pool3d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    return (values, indices) if return_indices else values


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    fn = "avg_pool3d"
    kernel, stride, padding, _ = _pool3d_arguments(fn, input, kernel_size, stride, padding, 1, ceil_mode, "be ")
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    common = dict(ceil_mode=bool(ceil_mode), count_include_pad=bool(count_include_pad))
    # with an override, the first pass sums (divisor 1) and the second divides by it
    first, second = (None, None) if divisor_override is None else (1, divisor_override)
    planes = _pool.avg_pool2d(input, kernel_size=kernel[1:], stride=stride[1:], padding=padding[1:],
                              divisor_override=first, **common)
    pooled = _pool.avg_pool2d(_depth_last(planes), kernel_size=(1, kernel[0]), stride=(1, stride[0]),
                              padding=(0, padding[0]), divisor_override=second, **common)
    return _depth_back(pooled)


# -- adaptive max pooling: indices found on the device, values by one gather -------------------------------------

def _adaptive_windows(n, m):
    """(m, K) input positions of each output's window (floor(i n/m) to ceil((i+1) n/m)), short
    windows padded with their last position (a repeat does not change which one is first);
    worked out on the host from the sizes alone."""
    i = host.arange(m)
    start, end = (i * n) // m, -((-(i + 1) * n) // m)
    width = int((end - start).max()) if m else 0
    return host.minimum(start[:, None] + host.arange(width), end[:, None] - 1)


def _first_max(xp, a, windows, axis):
    """Along ``axis`` (negative) of the device array ``a``: for each window (a row of the
    device array ``windows``), the position of its first maximum, a NaN counting as the
    largest value."""
    picked = xp.take(a, windows, axis=axis)   # ``axis`` becomes (window, tap): the tap axis is ``axis``
    if picked.dtype.kind == "f":
        picked = xp.where(xp.isnan(picked), xp.inf, picked)
    best = xp.expand_dims(xp.argmax(picked, axis=axis), axis)
    where = windows.reshape(windows.shape + (1,) * (-axis - 1))
    return xp.take_along_axis(xp.broadcast_to(where, picked.shape), best, axis=axis).squeeze(axis)


def _adaptive_max(input, size):
    """(values, flat indices) of adaptive max pooling over the last ``len(size)`` dims: the
    first maximum found dim by dim (last dim first), its coordinates resolved back outward.
    The search runs on the input's device (its namespace ``xp``); only the windows, built
    from the sizes, come from the host."""
    indices = on_samples(lambda x: _adaptive_max_indices(x, size), input, leading=True)
    values = input.flatten(-len(size)).gather(-1, indices.flatten(-len(size))).view(indices.shape)
    return values, indices


def _adaptive_max_indices(input, size):
    """The flat indices of adaptive max pooling (any leading dims)."""
    xp = backend.namespace_of(input._data)
    current = input._data
    k = len(size)
    sizes = current.shape[-k:]
    stages = []
    for axis in range(-1, -k - 1, -1):
        windows = xp.asarray(_adaptive_windows(sizes[axis], size[axis]), dtype=host.int64)
        idx = _first_max(xp, current, windows, axis)
        current = xp.take_along_axis(current, idx, axis=axis)
        stages.append((axis, idx))
    flat = 0
    for j, (axis, idx) in enumerate(stages):
        for later_axis, later_idx in stages[j + 1:]:  # pick the rows the outer dims chose
            idx = xp.take_along_axis(idx, later_idx, axis=later_axis)
        flat = flat + idx * math.prod(sizes[axis:][1:])
    return wrap(xp.asarray(flat, dtype=host.int64))


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    """(values, indices) of the maximum over windows tiling (H, W) into ``output_size`` cells."""
    fn = "adaptive_max_pool2d"
    _tensor(input, fn, "input", 1)
    size = _adaptive_size(input, output_size, fn, 2) if isinstance(output_size, (list, tuple)) else \
        [output_size] * 2
    if len(size) != 2:
        raise RuntimeError(f"{fn}(): internal error: output_size.size() must be 2")
    if input.ndim not in (3, 4):
        raise RuntimeError(f"{fn}(): Expected 3D or 4D tensor, but got: {_sizes(input.shape)}")
    _check_adaptive_input(input, fn, 2)
    return _adaptive_max(input, size)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    values, indices = adaptive_max_pool2d_with_indices(input, output_size)
    return (values, indices) if return_indices else values


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    fn = "adaptive_max_pool1d"
    _tensor(input, fn, "input", 1)
    _dim_range(input, fn)
    size = _ints(output_size, fn, "output_size", 2, 1)
    if len(size) != 1:
        raise RuntimeError(f"{fn}(): argument 'output_size' should contain one int (got {len(size)})")
    _check_adaptive_input(input, fn, 1)
    return _adaptive_max(input, size)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    values, indices = adaptive_max_pool1d_with_indices(input, output_size)
    return (values, indices) if return_indices else values


# -- power-average pooling ---------------------------------------------------------------------------------

def _lp_finish(out, norm_type, count):
    return (out.sign() * relu(out.abs())).mul(count).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """``(sum over the window of x^p) ^ (1/p)``; p = inf is max pooling of |x|."""
    if norm_type == float("inf"):
        return max_pool1d(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if norm_type == -float("inf"):
        return -max_pool1d(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    out = avg_pool1d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return _lp_finish(out, norm_type, kernel_size)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    kw, kh = kernel_size if isinstance(kernel_size, (list, tuple)) else (kernel_size, kernel_size)
    if norm_type == float("inf"):
        return max_pool2d(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if norm_type == -float("inf"):
        return -max_pool2d(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    out = avg_pool2d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return _lp_finish(out, norm_type, kw * kh)


# -- max unpooling -----------------------------------------------------------------------------------------

def _tuple(value, n):
    return tuple(value) if isinstance(value, (list, tuple)) else (value,) * n


def _unpool_output_size(input, kernel_size, stride, padding, output_size):
    n = len(kernel_size)
    default = [(input.shape[-n + d] - 1) * stride[d] + kernel_size[d] - 2 * padding[d] for d in range(n)]
    if output_size is None:
        return default
    output_size = list(output_size)
    if len(output_size) == n + 2:
        output_size = output_size[2:]
    if len(output_size) != n:
        raise ValueError(f"output_size should be a sequence containing {n} or {n + 2} elements, but it has a "
                         f"length of '{len(output_size)}'")
    for d in range(n):
        low, high = default[d] - stride[d], default[d] + stride[d]
        if not low < output_size[d] < high:
            raise ValueError(f'invalid output_size "{tuple(output_size)}" (dim {d} must be between {low} and '
                             f'{high})')
    return output_size


def _unpool(input, indices, size):
    """Zeros of the spatial ``size`` with each value scattered to its flat index."""
    if indices.dtype.name != "int64":
        raise RuntimeError(f"elements in indices should be type int64 but got: {_legacy(indices)}")
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor "
                           f"({_sizes(input.shape)}) but got indices tensor with shape: {_sizes(indices.shape)}")
    plane = math.prod(size)
    idx = backend.namespace_of(indices._data).to_host(indices._data).reshape(-1)
    outside = host.flatnonzero((idx < 0) | (idx >= plane))
    if outside.size:  # the first one in scan order, as PyTorch reports it
        bad = int(idx[outside[0]])
        raise RuntimeError(f"Found an invalid max index: {bad} (output volumes are of size "
                           f"{'x'.join(str(s) for s in size)})")
    k = len(size)
    lead = tuple(input.shape[:-k])
    flat = creation.zeros(*lead, plane, dtype=input.dtype, device=input.device)
    out = flat.scatter(-1, indices.flatten(-k), input.flatten(-k))
    return out.view(*lead, *size)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The inverse of :func:`max_pool2d` at its maxima: each value back at its index, zeros elsewhere."""
    kernel = _tuple(kernel_size, 2)
    stride = kernel if stride is None else _tuple(stride, 2)
    size = _unpool_output_size(input, kernel, stride, _tuple(padding, 2), output_size)
    return _unpool(input, indices, size)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    kernel = _tuple(kernel_size, 1)
    stride = kernel if stride is None else _tuple(stride, 1)
    size = _unpool_output_size(input, kernel, stride, _tuple(padding, 1), output_size)
    return _unpool(input, indices, size)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=False):
    """(values, indices) of the maximum over windows tiling (D, H, W) into ``output_size`` cells."""
    fn = "adaptive_max_pool3d"
    _tensor(input, fn, "input", 1)
    size = _adaptive_size(input, output_size, fn, 3) if isinstance(output_size, (list, tuple)) else \
        [output_size] * 3
    if len(size) != 3:
        raise RuntimeError(f"{fn}(): internal error: output_size.size() must be 3")
    if input.ndim not in (4, 5):
        raise RuntimeError(f"{fn}(): Expected 4D or 5D tensor, but got: {_sizes(input.shape)}")
    _check_adaptive_input(input, fn, 3)
    return _adaptive_max(input, size)


def adaptive_max_pool3d(input, output_size, return_indices=False):
    values, indices = adaptive_max_pool3d_with_indices(input, output_size)
    return (values, indices) if return_indices else values


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    kd, kw, kh = kernel_size if isinstance(kernel_size, (list, tuple)) else (kernel_size,) * 3
    if norm_type == float("inf"):
        return max_pool3d(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if norm_type == -float("inf"):
        return -max_pool3d(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    out = avg_pool3d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return _lp_finish(out, norm_type, kd * kw * kh)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    kernel = _tuple(kernel_size, 3)
    stride = kernel if stride is None else _tuple(stride, 3)
    size = _unpool_output_size(input, kernel, stride, _tuple(padding, 3), output_size)
    return _unpool(input, indices, size)

"""The pooling forms beyond :mod:`.conv`'s 1-d and 2-d ones, composed from the pooling rules of
:mod:`tracegrad.rules.pool` and from tensor ops, with PyTorch's checks and messages.

Pooling over a (D, H, W) box is separable: the box's maximum is the maximum over D of the
maxima over (H, W) (and the first maximum in (d, h, w) scan order is the first d whose
plane maximum is it, at that plane's first maximum, so PyTorch's indices follow), and its
average is the average over D of the averages over (H, W), the divisors being products of
per-dim counts. So the 3-d forms are the 2-d rules over (H, W), then over D on a
``(..., 1, D)`` view. Adaptive average pooling is separable (a box average is the average, along one dim, of the
averages along the others), so the 3-d form is the 2-d rule over (H, W) and then over D.
"""
from ...ops.linalg import _legacy, _tensor
from ...rules import pool as _pool
from .conv import _ints, _sizes, _trunc_half

__all__ = ["adaptive_avg_pool3d", "max_pool3d", "max_pool3d_with_indices", "avg_pool3d"]


def _adaptive_size(input, output_size, fn, n):
    """``output_size`` as n ints (an int repeats; None keeps the input's size)."""
    if isinstance(output_size, (list, tuple)):
        if input.ndim <= len(output_size):
            raise ValueError(f"Input dimension should be at least {len(output_size) + 1}")
        output_size = [input.shape[input.ndim - len(output_size) + i] if v is None else v
                       for i, v in enumerate(output_size)]
    elif not isinstance(output_size, int) or isinstance(output_size, bool):
        raise TypeError(f"object of type '{type(output_size).__name__}' has no len()")
    size = _ints(output_size, fn, "output_size", 2, n)
    if len(size) != n:
        raise RuntimeError(f"{fn}: output_size must be {n}")
    return size


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

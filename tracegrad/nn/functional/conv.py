"""Convolutions and pooling with PyTorch's signatures, argument checks and messages.

The checks run in PyTorch's order (argument shapes, then the input's rank, then sizes, then
dtypes), so a wrong call fails with the message PyTorch users know. The work is done by the
rules of :mod:`tracegrad.rules.conv` and :mod:`tracegrad.rules.pool`; the 1-d forms are the
2-d ones on an unsqueezed input, and unbatched inputs get a batch dim for the call, as in
PyTorch (so the graphs, and their node names, match).
"""
import operator
import warnings

from ...ops.linalg import _c, _legacy, _tensor
from ...rules import conv as _conv
from ...rules import pool as _pool
from ...runtime.tensor import Tensor
from .misc import pad as _pad

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
           "max_pool1d", "max_pool2d", "max_pool1d_with_indices", "max_pool2d_with_indices",
           "avg_pool1d", "avg_pool2d", "adaptive_avg_pool1d", "adaptive_avg_pool2d"]


def _ints(value, fn, arg, pos, n):
    """An int (repeated ``n`` times, as PyTorch's binding does) or a sequence of ints, as a list."""
    if isinstance(value, Tensor) and value.ndim == 0:
        value = value.item()
    if isinstance(value, int) and not isinstance(value, bool):
        return [value] * n
    if isinstance(value, (list, tuple)):
        out = []
        for i, v in enumerate(value):
            try:
                out.append(operator.index(v))
            except TypeError:
                raise TypeError(f"{fn}(): argument '{arg}' (position {pos}) must be tuple of ints, but "
                                f"found element of type {type(v).__name__} at pos {i}") from None
        return out
    raise TypeError(f"{fn}(): argument '{arg}' (position {pos}) must be tuple of ints, "
                    f"not {type(value).__name__}")


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


def _int(value, fn, arg, pos):
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{fn}(): argument '{arg}' (position {pos}) must be int, not {type(value).__name__}")
    return value


def _sizes(shape):
    return list(shape)


# -- convolution ---------------------------------------------------------------------------

def _expand(values, name, dim):
    """PyTorch's ``expand_param_if_needed``: one value for every spatial dim."""
    if len(values) == 1:
        return (values[0],) * dim
    if len(values) != dim:
        raise RuntimeError(f"expected {name} to be a single integer value or a list of {dim} values to "
                           f"match the convolution dimensions, but got {name}={values}")
    return tuple(values)


def _batchify(input, nd, fn):
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {fn}, but got "
                           f"input of size: {_sizes(input.shape)}")
    return (input, True) if input.ndim == nd + 2 else (input.unsqueeze(0), False)


def _check_bias_dtype(input, bias):
    if bias is not None and bias.dtype is not input.dtype:
        raise RuntimeError(f"Input type ({_c(input)}) and bias type ({_c(bias)}) should be the same")


def _check_shape(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    """PyTorch's ``check_shape_forward``."""
    if any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    if any(p < 0 for p in output_padding):
        raise RuntimeError("negative output_padding is not supported")
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(d < 0 for d in dilation):
        raise RuntimeError("dilation should be greater than zero")
    if any(d == 0 for d in dilation):
        raise RuntimeError("non-positive dilation is not supported")
    ws = _sizes(weight.shape)
    if weight.ndim != input.ndim:
        raise RuntimeError(f"Expected {weight.ndim}-dimensional input for {weight.ndim}-dimensional weight "
                           f"{ws}, but got {input.ndim}-dimensional input of size {_sizes(input.shape)} instead")
    if ws[0] < groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be at least {groups} at dimension 0, "
                           f"but got weight of size {ws} instead")
    if ws[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, "
                           f"but got weight of size [{ws}] instead")
    channels = input.shape[1]
    if not transposed:
        if channels != ws[1] * groups:
            raise RuntimeError(f"Given groups={groups}, weight of size {ws}, expected input{_sizes(input.shape)} "
                               f"to have {ws[1] * groups} channels, but got {channels} channels instead")
        _check_bias_size(bias, ws[0], f"Given weight of size {ws}")
        grown = [n + 2 * p for n, p in zip(input.shape[2:], padding)]
        spans = [d * (k - 1) + 1 for d, k in zip(dilation, ws[2:])]
        if any(n < k for n, k in zip(grown, spans)):
            raise RuntimeError(f"Calculated padded input size per channel: ({' x '.join(map(str, grown))}). "
                               f"Kernel size: ({' x '.join(map(str, spans))}). Kernel size can't be greater "
                               "than actual input size")
    else:
        if channels != ws[0]:
            raise RuntimeError(f"Given transposed=1, weight of size {ws}, expected input{_sizes(input.shape)} "
                               f"to have {ws[0]} channels, but got {channels} channels instead")
        _check_bias_size(bias, ws[1] * groups, f"Given transposed=1, weight of size {ws}")


def _check_bias_size(bias, n, given):
    if bias is not None and (bias.ndim != 1 or bias.shape[0] != n):
        raise RuntimeError(f"{given}, expected bias to be 1-dimensional with {n} elements, but got bias of "
                           f"size {_sizes(bias.shape)} instead")


_DIMS = {1: ("width",), 2: ("height", "width"), 3: ("depth", "height", "width")}


def _check_transposed(input, weight, stride, padding, dilation, output_padding):
    """PyTorch's ``slow_conv_transpose{2,3}d_shape_check`` (1-d runs as 2-d there)."""
    nd = len(stride)
    names = _DIMS[max(nd, 2)]
    lift = (lambda v, one: (one,) + tuple(v)) if nd == 1 else (lambda v, one: tuple(v))
    if any(not (op < s or op < d) for op, s, d in zip(output_padding, stride, dilation)):
        parts = [f"{what}_{n}: {v}" for what, vals in (("output_padding", lift(output_padding, 0)),
                                                       ("stride", lift(stride, 1)),
                                                       ("dilation", lift(dilation, 1)))
                 for n, v in zip(names, vals)]
        raise RuntimeError("output padding must be smaller than either stride or dilation, but got "
                           + " ".join(parts))
    sizes = [_conv.transposed_output_size(n, k, s, p, d, op) for n, k, s, p, d, op in
             zip(input.shape[2:], weight.shape[2:], stride, padding, dilation, output_padding)]
    if any(n < 1 for n in sizes):
        given = " x ".join(map(str, lift(input.shape[2:], 1)))
        got = " x ".join(map(str, lift(sizes, 1)))
        raise RuntimeError(f"Given input size per channel: ({given}). Calculated output size per channel: "
                           f"({got}). Output size is too small")


_BOOL_KERNELS = {(1, False): "slow_conv2d_cpu", (2, False): "slow_conv2d_cpu",
                 (3, False): "compute_columns3d", (1, True): "slow_conv_transpose2d_out_cpu",
                 (2, True): "slow_conv_transpose2d_out_cpu", (3, True): "slow_conv_transpose3d_out_cpu"}


def _check_dtypes(input, weight, nd, transposed):
    if weight.dtype is not input.dtype:
        if input.dtype.name == "float32":  # PyTorch's oneDNN path words it so
            raise RuntimeError(f"Input type ({input.type()}) and weight type ({weight.type()}) should be the "
                               "same or input should be a MKLDNN tensor and weight is a dense tensor")
        raise RuntimeError(f"expected scalar type {_legacy(input)} but found {_legacy(weight)}")
    if input.dtype.name == "bool":
        raise NotImplementedError(f"\"{_BOOL_KERNELS[nd, transposed]}\" not implemented for 'Bool'")


def _convolution(fn, nd, input, weight, bias, stride, padding, dilation, groups, transposed=False,
                 output_padding=0):
    """The checks of PyTorch's ``conv{nd}d`` / ``conv_transpose{nd}d`` and ``_convolution``,
    then the rule."""
    _tensor(input, fn, "input", 1)
    _tensor(weight, fn, "weight", 2)
    if bias is not None:
        _tensor(bias, fn, "bias", 3)
    stride = _ints(stride, fn, "stride", 4, nd)
    padding = padding if isinstance(padding, str) and not transposed else _ints(padding, fn, "padding", 5, nd)
    dilation = _ints(dilation, fn, "dilation", 8 if transposed else 6, nd)
    output_padding = _ints(output_padding, fn, "output_padding", 6, nd)
    groups = _int(groups, fn, "groups", 7)
    _check_bias_dtype(input, bias)
    input, batched = _batchify(input, nd, fn)
    if isinstance(padding, str):
        out = _convolution_mode(input, weight, bias, stride, padding, dilation, groups)
    else:
        out = _run(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)
    return out if batched else out.squeeze(0)


def _run(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    """PyTorch's ``_convolution``: expand and check the parameters, then the rule."""
    dim = weight.ndim - 2
    if dim <= 0:
        raise RuntimeError("weight should have at least three dimensions")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    stride = _expand(stride, "stride", dim)
    padding = _expand(padding, "padding", dim)
    dilation = _expand(dilation, "dilation", dim)
    output_padding = _expand(output_padding, "output_padding", dim)
    _check_shape(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)
    _check_dtypes(input, weight, dim, transposed)
    if transposed:
        _check_transposed(input, weight, stride, padding, dilation, output_padding)
    return _conv.convolution(input, weight, bias, stride=stride, padding=padding, dilation=dilation,
                             transposed=transposed, output_padding=output_padding, groups=groups)


def _convolution_mode(input, weight, bias, stride, padding, dilation, groups):
    """``padding='valid'`` (none) or ``'same'`` (the output as large as the input: zeros around
    it, one more behind than in front where the kernel's span is even, as PyTorch does)."""
    if padding == "valid":
        return _run(input, weight, bias, stride, [0], dilation, False, [0], groups)
    if padding != "same":
        raise RuntimeError(f"Invalid padding string: '{padding}'")
    if any(s != 1 for s in stride):
        raise RuntimeError("padding='same' is not supported for strided convolutions")
    if weight.ndim <= 2:
        raise RuntimeError("weight should have at least three dimensions")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    dim = weight.ndim - 2
    if weight.ndim != input.ndim:
        raise RuntimeError(f"Expected {weight.ndim}-dimensional input for {weight.ndim}-dimensional "
                           f"weight{_sizes(weight.shape)}, but got {input.ndim}-dimensional input of size "
                           f"{_sizes(input.shape)} instead")
    for name, values in (("stride", stride), ("dilation", dilation)):
        if len(values) not in (1, dim):
            raise RuntimeError(f"{name} cannot broadcast to {dim} dimensions")
    dilation = _expand(dilation, "dilation", dim)
    left = [d * (k - 1) // 2 for d, k in zip(dilation, weight.shape[2:])]
    right = [d * (k - 1) - a for d, k, a in zip(dilation, weight.shape[2:], left)]
    if left != right:
        warnings.warn("Using padding='same' with even kernel lengths and odd dilation may require a "
                      "zero-padded copy of the input be created", UserWarning, stacklevel=4)
        extra = []
        for a, b in zip(reversed(left), reversed(right)):  # F.pad lists the last dim first
            extra += [0, b - a]
        input = _pad(input, extra)
    return _run(input, weight, bias, stride, left, dilation, False, [0], groups)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _convolution("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _convolution("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _convolution("conv3d", 3, input, weight, bias, stride, padding, dilation, groups)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _convolution("conv_transpose1d", 1, input, weight, bias, stride, padding, dilation, groups,
                        True, output_padding)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _convolution("conv_transpose2d", 2, input, weight, bias, stride, padding, dilation, groups,
                        True, output_padding)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _convolution("conv_transpose3d", 3, input, weight, bias, stride, padding, dilation, groups,
                        True, output_padding)


# -- 2-d pooling ---------------------------------------------------------------------------

def _trunc_half(n):
    """``n / 2`` rounded toward zero, as C++ divides."""
    return -(-n // 2) if n < 0 else n // 2


def _pool_arguments(fn, kernel_size, stride, padding, dilation):
    """PyTorch's argument checks of max_pool2d / avg_pool2d: each value expanded to two."""
    kernel = _ints(kernel_size, fn, "kernel_size", 2, 2)
    if len(kernel) not in (1, 2):
        raise RuntimeError(f"{fn}: kernel_size must either be a single int, or a tuple of two ints")
    stride = [] if stride is None else _ints(stride, fn, "stride", 3, 2)
    if len(stride) not in (0, 1, 2):
        raise RuntimeError(f"{fn}: stride must either be omitted, a single int, or a tuple of two ints")
    padding = _ints(padding, fn, "padding", 4, 2)
    if len(padding) not in (1, 2):
        raise RuntimeError(f"{fn}: padding must either be a single int, or a tuple of two ints")
    dilation = _ints(dilation, fn, "dilation", 5, 2)
    if len(dilation) not in (1, 2):
        raise RuntimeError(f"{fn}: dilation must be either a single int, or a tuple of two ints")
    return _two(kernel), (_two(stride) if stride else ()), _two(padding), _two(dilation)


def _two(values):
    return tuple(values) * 2 if len(values) == 1 else tuple(values)


def _pool_output(input, kernel, stride, padding, dilation, ceil_mode):
    """PyTorch's ``pooling_output_shape`` over H then W, then ``pool2d_shape_check``."""
    stride_ = stride or kernel
    out = []
    for n, k, s, p, d in zip(input.shape[-2:], kernel, stride_, padding, dilation):
        if s == 0:
            raise RuntimeError("stride should not be zero")
        if p < 0:
            raise RuntimeError(f"pad must be non-negative, but got pad: {p}")
        if p > _trunc_half((k - 1) * d + 1):
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={p}, "
                               f"kernel_size={k} and dilation={d}")
        out.append(_pool.pool_output_size(n, k, s, p, d, ceil_mode) if s > 0 else 0)
    (kh, kw), (dh, dw), (ph, pw) = kernel, stride_, padding
    if kh <= 0 or kw <= 0:
        raise RuntimeError(f"kernel size should be greater than zero, but got kH: {kh} kW: {kw}")
    if dh <= 0 or dw <= 0:
        raise RuntimeError(f"stride should be greater than zero, but got dH: {dh} dW: {dw}")
    if dilation[0] <= 0 or dilation[1] <= 0:
        raise RuntimeError(f"dilation should be greater than zero, but got dilationH: {dilation[0]} "
                           f"dilationW: {dilation[1]}")
    shape = input.shape
    if not ((input.ndim == 3 and shape[0] and shape[1] and shape[2]) or
            (input.ndim == 4 and shape[1] and shape[2] and shape[3])):
        raise RuntimeError("Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, "
                           f"but got:{_sizes(shape)}")
    if _trunc_half(kw) < pw or _trunc_half(kh) < ph:
        raise RuntimeError(f"pad should be smaller than or equal to half of kernel size, but got padW = {pw}, "
                           f"padH = {ph}, kW = {kw}, kH = {kh}")
    if out[0] < 1 or out[1] < 1:
        planes, (h, w) = shape[-3], shape[-2:]
        raise RuntimeError(f"Given input size: ({planes}x{h}x{w}). Calculated output size: "
                           f"({planes}x{out[0]}x{out[1]}). Output size is too small")


def _max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode):
    _tensor(input, "max_pool2d", "input", 1)
    kernel, stride, padding, dilation = _pool_arguments("max_pool2d", kernel_size, stride, padding, dilation)
    if input.ndim not in (3, 4):
        raise RuntimeError("non-empty 3D or 4D (batch mode) tensor expected for input")
    _pool_output(input, kernel, stride, padding, dilation, ceil_mode)
    if input.dtype.name == "bool":
        raise NotImplementedError("\"max_pool2d\" not implemented for 'Bool'")
    params = dict(kernel_size=kernel, stride=stride, padding=padding, dilation=dilation,
                  ceil_mode=bool(ceil_mode))
    indices = _pool.max_pool2d_indices(input.detach(), **params)
    return _pool.max_pool2d(input, indices, **params), indices


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    """(values, indices): each window's maximum and its flat position in the input plane."""
    return _max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    values, indices = _max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode)
    return (values, indices) if return_indices else values


_AVG_DTYPES = {"float16", "float32", "float64", "int64"}


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    fn = "avg_pool2d"
    _tensor(input, fn, "input", 1)
    kernel, stride, padding, _ = _pool_arguments(fn, kernel_size, stride, padding, 1)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    if input.ndim < 3:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-input.ndim}, "
                         f"{input.ndim - 1}], but got -3)")
    _pool_output(input, kernel, stride, padding, (1, 1), ceil_mode)
    if input.dtype.name not in _AVG_DTYPES:
        raise NotImplementedError(f"\"avg_pool2d\" not implemented for '{_legacy(input)}'")
    return _pool.avg_pool2d(input, kernel_size=kernel, stride=stride, padding=padding,
                            ceil_mode=bool(ceil_mode), count_include_pad=bool(count_include_pad),
                            divisor_override=divisor_override)


def adaptive_avg_pool2d(input, output_size):
    """Average over windows tiling the input into ``output_size`` cells (an int, or a pair
    whose None entries keep the input's size); (1, 1) is a plain mean, as in PyTorch."""
    _tensor(input, "adaptive_avg_pool2d", "input", 1)
    size = _adaptive_size(input, output_size, "adaptive_avg_pool2d", 2)
    if size[0] < 0 or size[1] < 0:
        raise RuntimeError("adaptive_avg_pool2d: elements of output_size must be greater than or equal to 0 "
                           f"but received {{{size[0]}, {size[1]}}}")
    if size == [1, 1]:
        return input.mean((-1, -2), keepdim=True)
    if input.ndim not in (3, 4):
        raise RuntimeError(f"adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got {_sizes(input.shape)}")
    for i in (-2, -1):
        if input.shape[i] <= 0:
            raise RuntimeError("adaptive_avg_pool2d(): Expected input to have non-zero size for non-batch "
                               f"dimensions, but input has sizes {_sizes(input.shape)} with dimension "
                               f"{i + input.ndim} being empty")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"adaptive_avg_pool2d\" not implemented for '{_legacy(input)}'")
    return _pool.adaptive_avg_pool2d(input, output_size=tuple(size))


# -- 1-d pooling: the 2-d rules on a (..., 1, L) view ------------------------------------------

def _dim_range(input, fn):
    if input.ndim not in (2, 3):
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {input.ndim}-dimensional tensor for "
                           f"argument #1 'self' (while checking arguments for {fn})")


def _one(value, fn, arg, pos):
    values = _ints(value, fn, arg, pos, 1)
    if len(values) != 1:
        raise RuntimeError(f"{fn}() argument '{arg}' should contain one int (got {len(values)})")
    return values[0]


def _max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode):
    """PyTorch's ``check_max_pool1d``, then 2-d max pooling of the unsqueezed input."""
    fn = "max_pool1d"
    _tensor(input, fn, "input", 1)
    if input.ndim not in (2, 3):
        raise RuntimeError("max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size "
                           f"for input, but got:{_sizes(input.shape)}")
    sizes = {}
    for arg, value, pos, what in (("kernel_size", kernel_size, 2, "an int, list of ints or tuple of ints"),
                                  ("stride", stride, 3, "None, an int, list of ints, or tuple of ints"),
                                  ("padding", padding, 4, "an int, list of ints, or tuple of ints"),
                                  ("dilation", dilation, 5, "an int, list of ints or tuple of ints")):
        values = [] if value is None else _ints(value, fn, arg, pos, 1)
        if len(values) != 1 and not (arg == "stride" and not values):
            raise RuntimeError(f"max_pool1d() {arg} must be {what} of size 1 but got size {len(values)}")
        sizes[arg] = values[0] if values else None
    k, p, d = sizes["kernel_size"], sizes["padding"], sizes["dilation"]
    s = k if sizes["stride"] is None else sizes["stride"]
    if k <= 0:
        raise RuntimeError(f"max_pool1d() kernel_size must be greater than zero, but got {k}")
    if s <= 0:
        raise RuntimeError(f"max_pool1d() stride must be greater than zero, but got {s}")
    if p < 0:
        raise RuntimeError(f"max_pool1d() padding must be non-negative, but got {p}")
    if p > k // 2:
        raise RuntimeError(f"max_pool1d() padding should be at most half of kernel size, but got padding={p} "
                           f"and kernel_size={k}")
    if d <= 0:
        raise RuntimeError(f"max_pool1d() dilation must be greater than zero, but got {d}")
    out = _pool.pool_output_size(input.shape[-1], k, s, p, d, ceil_mode)
    if out <= 0:
        raise RuntimeError(f"max_pool1d() Invalid computed output size: {out}")
    values, indices = _max_pool2d(input.unsqueeze(-2), (1, k), (1, s), (0, p), (1, d), ceil_mode)
    return values.squeeze(-2), indices.squeeze(-2)


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    return _max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    values, indices = _max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode)
    return (values, indices) if return_indices else values


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    fn = "avg_pool1d"
    _tensor(input, fn, "input", 1)
    _dim_range(input, fn)
    k = _one(kernel_size, fn, "kernel_size", 2)
    s = k if stride is None else _one(stride, fn, "stride", 3)
    p = _one(padding, fn, "padding", 4)
    return avg_pool2d(input.unsqueeze(-2), (1, k), (1, s), (0, p), ceil_mode, count_include_pad).squeeze(-2)


def adaptive_avg_pool1d(input, output_size):
    fn = "adaptive_avg_pool1d"
    _tensor(input, fn, "input", 1)
    _dim_range(input, fn)
    size = _one(output_size, fn, "output_size", 2)
    return adaptive_avg_pool2d(input.unsqueeze(-2), (1, size)).squeeze(-2)

"""``interpolate`` (and the old ``upsample*`` names), ``pixel_shuffle`` and ``pixel_unshuffle``.

Every interpolation mode but ``area`` is separable: the output along one spatial dim is a
weighted sum of a few input slices along that dim (1 for nearest, 2 for linear, 4 for cubic),
so ``interpolate`` is, dim after dim, ``index_select`` gathers times weight vectors. The
source positions and weights are computed once per dim on the host, in the input's float
type (float32 for float32, as PyTorch's CPU kernels do, so that the nearest neighbours match
at ties), and the gradient is the gathers' scatter-add. ``antialias=True`` widens the linear
or cubic filter by the shrink factor (PyTorch's normalised ``_compute_weights_aa`` taps).
``area`` is adaptive average pooling.
"""
import math

from ... import backend
from ...backend import (
    cpu as host,  # host-side taps and weights, from the sizes and scales alone
)
from ...ops.linalg import _legacy, _tensor
from ...runtime.tensor import wrap

__all__ = ["interpolate", "upsample", "upsample_nearest", "upsample_bilinear", "pixel_shuffle",
           "pixel_unshuffle"]

_MODES = "nearest | linear | bilinear | bicubic | trilinear | lanczos | area | nearest-exact"
_RANK_OF_MODE = {"linear": 3, "bilinear": 4, "trilinear": 5, "bicubic": 4}
_CUBIC_A = -0.75
_DIM_NAMES = {1: ("W",), 2: ("H", "W"), 3: ("D", "H", "W")}


def _is_integer(x):
    return isinstance(x, (int, host.integer)) and not isinstance(x, bool)


def _output_geometry(input, size, scale_factor, mode, recompute_scale_factor):
    """PyTorch's argument handling: (output sizes, scale factors or None per dim)."""
    dim = input.ndim - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        if isinstance(size, (list, tuple)):
            if len(size) != dim:
                raise ValueError(
                    "Input and output must have the same number of spatial dimensions, but got input with "
                    f"spatial dimensions of {list(input.shape[2:])} and output size of {size}. Please provide "
                    "input tensor in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, ...,oK) format.")
            if not all(_is_integer(x) for x in size):
                raise TypeError("expected size to be one of int or Tuple[int] or Tuple[int, int] or "
                                f"Tuple[int, int, int], but got size with types {[type(x) for x in size]}")
            output_size, scales = [int(x) for x in size], None
        else:
            output_size, scales = [size] * dim, None
    elif scale_factor is not None:
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != dim:
                raise ValueError(
                    "Input and scale_factor must have the same number of spatial dimensions, but got input "
                    f"with spatial dimensions of {list(input.shape[2:])} and scale_factor of shape "
                    f"{scale_factor}. Please provide input tensor in (N, C, d1, d2, ...,dK) format and "
                    "scale_factor in (s1, s2, ...,sK) format.")
            scales = [float(s) for s in scale_factor]
        else:
            scales = [float(scale_factor)] * dim
        output_size = None
    else:
        raise ValueError("either size or scale_factor should be defined")
    if recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if mode == "area" and output_size is None:
        recompute_scale_factor = True
    if recompute_scale_factor:
        output_size = [int(input.shape[i + 2] * scales[i]) for i in range(dim)]
        scales = None
    if output_size is None:  # C++'s compute_output_size: floor(in * scale)
        output_size = [math.floor(float(n) * s) for n, s in zip(input.shape[2:], scales)]
    return output_size, scales


def _check_sizes(input, output_size):
    spatial = input.shape[2:]
    if any(n <= 0 for n in spatial) or any(n <= 0 for n in output_size):
        names = _DIM_NAMES[len(spatial)]
        given = ", ".join(f"{k}: {n}" for k, n in zip(names, spatial))
        wanted = ", ".join(f"{k}: {n}" for k, n in zip(names, output_size))
        joint = " and " if len(spatial) == 1 else " "  # PyTorch's 2-d and 3-d messages lack the "and"
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input ({given}){joint}"
                           f"output ({wanted})")


def _scale(dtype, n_in, n_out, scale_factor, align_corners):
    """PyTorch's ``area_pixel_compute_scale``: source step per output step, in ``dtype``."""
    if align_corners:
        return dtype.type(n_in - 1) / dtype.type(n_out - 1) if n_out > 1 else dtype.type(0)
    if scale_factor is not None and scale_factor > 0:
        return dtype.type(1.0 / scale_factor)
    return dtype.type(n_in) / dtype.type(n_out)


def _nearest_taps(dtype, n_in, n_out, scale_factor, exact):
    """One tap per output: ``floor((o [+ 0.5]) * scale)``, computed in float32 as PyTorch does."""
    scale = _scale(host.dtype(host.float32), n_in, n_out, scale_factor, False)
    o = host.arange(n_out, dtype=host.float32)
    source = host.floor((o + host.float32(0.5)) * scale if exact else o * scale).astype(host.int64)
    return [(host.minimum(source, n_in - 1), host.ones(n_out, dtype=dtype))]


def _source(dtype, n_in, n_out, scale_factor, align_corners, cubic):
    """``area_pixel_compute_source_index``, then PyTorch's ``guard_index_and_lambda``:
    the left neighbour (at most n_in - 1) and the fraction past it, in [0, 1]."""
    scale = _scale(dtype, n_in, n_out, scale_factor, align_corners)
    o = host.arange(n_out, dtype=dtype)
    if align_corners:
        real = scale * o
    else:
        real = scale * (o + dtype.type(0.5)) - dtype.type(0.5)
        if not cubic:
            real = host.maximum(real, dtype.type(0))
    left = host.minimum(host.floor(real).astype(host.int64), n_in - 1)
    return left, host.clip(real - left, 0, 1).astype(dtype)


def _linear_taps(dtype, n_in, n_out, scale_factor, align_corners):
    if n_in == n_out:  # PyTorch copies
        return [(host.arange(n_in), host.ones(n_in, dtype=dtype))]
    left, frac = _source(dtype, n_in, n_out, scale_factor, align_corners, False)
    right = host.minimum(left + 1, n_in - 1)
    return [(left, (1 - frac).astype(dtype)), (right, frac)]


def _cubic_taps(dtype, n_in, n_out, scale_factor, align_corners):
    """Keys' cubic convolution (A = -0.75) over the 4 neighbours, clamped at the borders."""
    left, t = _source(dtype, n_in, n_out, scale_factor, align_corners, True)
    a = dtype.type(_CUBIC_A)

    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    weights = (far(t + 1), near(t), near(1 - t), far(2 - t))
    return [(host.clip(left + j - 1, 0, n_in - 1), w.astype(dtype)) for j, w in enumerate(weights)]


def _linear_filter(x):
    return host.maximum(1 - host.abs(x), 0)


def _cubic_filter(x, a=-0.5):
    """The antialiasing cubic (a = -0.5, as PIL and PyTorch's antialiased kernels use)."""
    x = host.abs(x)
    return host.where(x < 1, ((a + 2) * x - (a + 3)) * x * x + 1,
                    host.where(x < 2, (((x - 5) * x + 8) * x - 4) * a, 0))


def _antialias_taps(dtype, n_in, n_out, scale_factor, align_corners, cubic):
    """PyTorch's ``_compute_weights_aa``: when shrinking, the filter is widened by the scale, so
    every input pixel under an output's footprint contributes; weights are normalised."""
    scale = float(_scale(dtype, n_in, n_out, scale_factor, align_corners))
    half = 2.0 if cubic else 1.0
    support = half * scale if scale >= 1.0 else half
    width = int(math.ceil(support)) * 2 + 1
    invscale = 1.0 / scale if scale >= 1.0 else 1.0
    center = scale * (host.arange(n_out) + 0.5)
    xmin = host.maximum((center - support + 0.5).astype(host.int64), 0)
    xsize = host.clip(host.minimum((center + support + 0.5).astype(host.int64), n_in) - xmin, 0, width)
    j = host.arange(width)
    filt = _cubic_filter if cubic else _linear_filter
    weights = host.where(j < xsize[:, None], filt((j + xmin[:, None] - center[:, None] + 0.5) * invscale), 0.0)
    total = weights.sum(1, keepdims=True)
    weights = host.where(total != 0, weights / host.where(total == 0, 1, total), weights)
    index = host.minimum(xmin[:, None] + j, n_in - 1)
    return [(index[:, t], weights[:, t].astype(dtype)) for t in range(width)]


def _resample(input, dim, taps):
    """Sum over taps of ``input.index_select(dim, index) * weight`` (weights along ``dim``)."""
    xp = backend.namespace_of(input._data)
    dtype = input._data.dtype
    shape = (-1,) + (1,) * (input.ndim - 1 - dim)
    out = None
    for index, weight in taps:
        picked = input.index_select(dim, wrap(xp.asarray(index, dtype=host.int64)))
        if len(taps) > 1 or not host.all(weight == 1):
            picked = picked * wrap(xp.asarray(weight, dtype=dtype).reshape(shape))
        out = picked if out is None else out + picked
    return out


def _check_rank(input, mode):
    """PyTorch's dispatch on (rank, mode), with its messages for the pairs that do not fit."""
    want = _RANK_OF_MODE.get(mode)
    if input.ndim in (3, 4, 5) and (want is None and mode in ("nearest", "nearest-exact", "area")
                                    or want == input.ndim):
        return
    if mode != "bicubic" and want is not None and input.ndim in (3, 4, 5):
        raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode needs {want}D input")
    raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.ndim}D) "
                              f"for the modes: {_MODES} (got {mode})")


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Resize the spatial dims (all but the first two) to ``size``, or by ``scale_factor``."""
    _tensor(input, "interpolate", "input", 1)
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: "
                             "linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    output_size, scales = _output_geometry(input, size, scale_factor, mode, recompute_scale_factor)
    if antialias and not (mode in ("bilinear", "bicubic", "lanczos") and input.ndim == 4):
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and requires "
                         "a 4-D tensor as input")
    if mode == "lanczos":
        raise NotImplementedError("interpolate: the lanczos mode is not supported by tracegrad")
    _check_rank(input, mode)
    if mode == "area":
        from .conv import adaptive_avg_pool1d, adaptive_avg_pool2d
        from .pooling import adaptive_avg_pool3d
        pool = {3: adaptive_avg_pool1d, 4: adaptive_avg_pool2d, 5: adaptive_avg_pool3d}[input.ndim]
        return pool(input, output_size)
    _check_sizes(input, output_size)
    if input.dtype.name == "uint8" and not mode.startswith("nearest"):
        raise NotImplementedError(f"interpolate: mode='{mode}' on uint8 input (PyTorch's fixed-point kernel) is not "
                                  "supported by tracegrad; convert to float first")
    if not input.dtype.is_floating_point and input.dtype.name != "uint8":
        kernel = "compute_indices_weights_nearest" if mode.startswith("nearest") else f"upsample_{mode}"
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_legacy(input)}'")
    dtype = host.dtype(input._data.dtype) if input.dtype.is_floating_point else host.dtype(host.float32)
    out = input
    for k, n_out in enumerate(output_size):
        n_in, scale = input.shape[k + 2], None if scales is None else scales[k]
        if antialias:
            taps = _antialias_taps(dtype, n_in, n_out, scale, align_corners, mode == "bicubic")
        elif mode.startswith("nearest"):
            taps = _nearest_taps(dtype, n_in, n_out, scale, mode == "nearest-exact")
        elif mode == "bicubic":
            taps = _cubic_taps(dtype, n_in, n_out, scale, align_corners)
        else:
            taps = _linear_taps(dtype, n_in, n_out, scale, align_corners)
        out = _resample(out, k + 2, taps)
    return out if out is not input else input.clone()


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """The deprecated name of :func:`interpolate` (PyTorch warns)."""
    import warnings
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    import warnings
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    import warnings
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# -- pixel shuffle -------------------------------------------------------------------------------------

def _shuffle_checks(input, factor, fn, what):
    _tensor(input, fn, "input", 1)
    if input.ndim < 3:
        raise RuntimeError(f"{fn} expects input to have at least 3 dimensions, but got input with "
                           f"{input.ndim} dimension(s)")
    if factor <= 0:
        raise RuntimeError(f"{fn} expects a positive {what}, but got {factor}")


def pixel_shuffle(input, upscale_factor):
    """(*, C r^2, H, W) -> (*, C, H r, W r): channel blocks become r x r pixel blocks."""
    r = upscale_factor
    _shuffle_checks(input, r, "pixel_shuffle", "upscale_factor")
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the "
                           f"square of upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    n = len(lead)
    x = input.reshape(*lead, c // (r * r), r, r, h, w)
    x = x.permute(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return x.reshape(*lead, c // (r * r), h * r, w * r)


def pixel_unshuffle(input, downscale_factor):
    """(*, C, H r, W r) -> (*, C r^2, H, W): the inverse of :func:`pixel_shuffle`."""
    r = downscale_factor
    _shuffle_checks(input, r, "pixel_unshuffle", "downscale_factor")
    *lead, c, h, w = input.shape
    for name, k, n in (("height", -2, h), ("width", -1, w)):
        if n % r:
            raise RuntimeError(f"pixel_unshuffle expects {name} to be divisible by downscale_factor, but "
                               f"input.size({k})={n} is not divisible by {r}")
    k = len(lead)
    x = input.reshape(*lead, c, h // r, r, w // r, r)
    x = x.permute(*range(k), k, k + 2, k + 4, k + 1, k + 3)
    return x.reshape(*lead, c * r * r, h // r, w // r)

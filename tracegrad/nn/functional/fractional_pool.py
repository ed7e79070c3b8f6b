"""``fractional_max_pool2d/3d`` (Graham's fractional max pooling): windows of a fixed size
placed at pseudo-random, increasing starts drawn per (sample, channel) plane.

The starts follow PyTorch's ``generate_intervals`` (in the input's float type), so with the
same ``_random_samples`` the windows, values and indices are PyTorch's; each window's first
maximum is found on the input's device and the values are one differentiable ``gather``.
"""
import itertools
import math

from ... import backend
from ...backend import (
    cpu as host,  # host-side window starts, from the samples copied off the device
)
from ...ops._args import on_samples
from ...runtime import creation
from ...runtime.tensor import wrap

__all__ = ["fractional_max_pool2d", "fractional_max_pool2d_with_indices", "fractional_max_pool3d",
           "fractional_max_pool3d_with_indices"]

_NAMES = {2: ("height", "width"), 3: ("time", "height", "width")}


def _intervals(samples, n_in, n_out, pool, dtype):
    """(planes, n_out) window starts: ``int((i + u) a) - int(u a)``, a = (n_in - pool) / (n_out - 1),
    the last start at ``n_in - pool``."""
    u = samples.astype(dtype)
    starts = host.empty(samples.shape + (n_out,), dtype=host.int64)
    if n_out > 1:
        alpha = dtype.type(n_in - pool) / dtype.type(n_out - 1)
        i = host.arange(n_out - 1, dtype=dtype)
        starts[..., :-1] = ((i + u[..., None]) * alpha).astype(host.int64) - (u * alpha).astype(host.int64)[..., None]
    starts[..., -1] = n_in - pool
    return starts


def _tuple(value, k):
    return tuple(value) if isinstance(value, (list, tuple)) else (value,) * k


def _fractional(input, kernel_size, output_size, output_ratio, samples, k):
    fn = f"fractional_max_pool{k}d"
    if output_size is None and output_ratio is None:
        raise ValueError(f"{fn} requires specifying either an output_size or an output_ratio")
    kernel = _tuple(kernel_size, k)
    spatial = tuple(input.shape[-k:])
    if output_size is None:
        ratio = _tuple(output_ratio, k)
        if len(ratio) > k:
            raise ValueError(f"{fn} requires output_ratio to either be a single Int or tuple of Ints.")
        output_size = [int(n * r) for n, r in zip(spatial, ratio)]
    out = _tuple(output_size, k)
    if input.ndim not in (k + 1, k + 2):
        raise RuntimeError(f"{fn}(): Expected {k + 1}D or {k + 2}D tensor, but got: {list(input.shape)}")
    for name, o, p, n in zip(_NAMES[k], out, kernel, spatial):
        if o + p - 1 > n:
            raise RuntimeError(f"{fn}(): pool {name} {p} too large relative to input {name} {n}")
    batch = 1 if input.ndim == k + 1 else input.shape[0]
    channels = input.shape[-k - 1]
    if samples is None:
        samples = creation.rand(batch, channels, k, dtype=input.dtype, device=input.device)
    # (under vmap: each sample's windows searched in its own values)
    indices = on_samples(lambda x, u: _fractional_indices(x, u, kernel, spatial, out, batch, channels, k),
                         input, samples)
    picked = input.flatten(-k).gather(-1, indices.flatten(-k)).view(indices.shape)
    return picked, indices


def _fractional_indices(input, samples, kernel, spatial, out, batch, channels, k):
    """The flat indices of the maxima in the pseudo-random windows ``samples`` place."""
    xp = backend.namespace_of(input._data)
    u = xp.to_host(samples._data).reshape(batch * channels, k)
    dtype = host.dtype(input._data.dtype)
    # the samples' order per plane: (W, H) for 2-d, (T, H, W) for 3-d, as PyTorch's kernels read them
    order = (1, 0) if k == 2 else (0, 1, 2)
    starts = [_intervals(u[:, order[d]], spatial[d], out[d], kernel[d], dtype) for d in range(k)]
    strides = [math.prod(spatial[d + 1:]) for d in range(k)]
    planes = batch * channels
    flat = host.zeros((planes,) + out + (math.prod(kernel),), dtype=host.int64)
    for t, offset in enumerate(itertools.product(*(range(p) for p in kernel))):  # scan order
        pos = 0
        for d in range(k):
            shape = [planes] + [1] * k
            shape[d + 1] = out[d]
            pos = pos + (starts[d] + offset[d]).reshape(shape) * strides[d]
        flat[..., t] = pos
    flat = xp.asarray(flat)  # the window positions go to the device; the search runs there
    values = input._data.reshape(planes, -1)
    taps = xp.take_along_axis(values, flat.reshape(planes, -1), axis=1).reshape(flat.shape)
    if taps.dtype.kind == "f":
        taps = xp.where(xp.isnan(taps), xp.inf, taps)
    best = xp.take_along_axis(flat, xp.argmax(taps, axis=-1)[..., None], axis=-1)[..., 0]
    lead = tuple(input.shape[:-k])
    return wrap(xp.asarray(best.reshape(lead + out), dtype=host.int64))


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    return _fractional(input, kernel_size, output_size, output_ratio, _random_samples, 2)


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    values, indices = _fractional(input, kernel_size, output_size, output_ratio, _random_samples, 2)
    return (values, indices) if return_indices else values


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    return _fractional(input, kernel_size, output_size, output_ratio, _random_samples, 3)


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    values, indices = _fractional(input, kernel_size, output_size, output_ratio, _random_samples, 3)
    return (values, indices) if return_indices else values

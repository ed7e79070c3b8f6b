"""``tracegrad.nn.init``: fill a tensor in place with an initial distribution, as PyTorch does.

Every initialiser works under ``no_grad`` (so it may write into a Parameter), returns the
tensor it was given, and draws from ``generator`` or the default generator that
``tracegrad.manual_seed`` seeds. Samples are drawn into a fresh array in the tensor's
dtype and copied in with ``copy_``, so views, version counters and devices behave as for
any in-place write.
"""
import math
import warnings

from .. import backend
from ..runtime.creation import _stream
from ..runtime.grad_mode import no_grad
from ..runtime.tensor import wrap

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_",
           "zeros_", "eye_", "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_",
           "kaiming_normal_", "orthogonal_", "sparse_", "uniform", "normal", "constant", "eye",
           "dirac", "xavier_uniform", "xavier_normal", "kaiming_uniform", "kaiming_normal",
           "orthogonal", "sparse"]

_LINEAR_FNS = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
               "conv_transpose3d", "sigmoid")


def calculate_gain(nonlinearity, param=None):
    """The recommended scale of the weights feeding ``nonlinearity`` (PyTorch's table)."""
    if nonlinearity in _LINEAR_FNS:
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            negative_slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, int) or isinstance(param, float):
            negative_slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + negative_slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


# -- sampling into a tensor -------------------------------------------------------------------

def _sample(tensor, kernel, generator, draw, *, complex_parts=False):
    """A fresh array shaped like ``tensor`` from ``draw(rng, shape, dtype)``, in its dtype.
    ``complex_parts``: a complex tensor takes two draws, its real and imaginary parts (the
    uniform and normal fills); other complex fills are refused as non-floating dtypes."""
    d = tensor.dtype
    parts = complex_parts and d.is_complex
    if not (d.is_floating_point or parts):
        raise NotImplementedError(f'"{kernel}" not implemented for \'{d.scalar_name}\'')
    xp = backend.namespace_of(tensor._data)
    sampling = "float64" if d.np.itemsize == (16 if parts else 8) else "float32"
    rng, shape = _stream(generator, xp), tensor._data.shape
    arr = xp.asarray(draw(rng, shape, sampling))
    if parts:
        arr = arr + 1j * xp.asarray(draw(rng, shape, sampling))
    return arr.astype(d.np, copy=False)


def uniform_array(tensor, a, b, generator):
    """Values drawn from U(a, b) shaped and typed like ``tensor`` (a complex one: real and
    imaginary parts each from U(a, b), as in PyTorch)."""
    if a > b:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={a:g} > to={b:g}")
    arr = _sample(tensor, "check_uniform_bounds", generator, lambda rng, s, dt: rng.random(s, dtype=dt),
                  complex_parts=True)
    return arr * (b - a) + (a * (1 + 1j) if arr.dtype.kind == "c" else a)


def normal_array(tensor, mean, std, generator):
    """Values drawn from N(mean, std**2) shaped and typed like ``tensor`` (a complex one:
    the complex normal of variance std**2, each part N(mean, std**2 / 2), as in PyTorch)."""
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
    arr = _sample(tensor, "normal_kernel_cpu", generator, lambda rng, s, dt: rng.standard_normal(s, dtype=dt),
                  complex_parts=True)
    if arr.dtype.kind == "c":
        return arr * (std / math.sqrt(2)) + mean * (1 + 1j)
    return arr * std + mean


def _write(tensor, array):
    with no_grad():
        tensor.copy_(wrap(array))
    return tensor


def _uniform(tensor, a, b, generator):
    return _write(tensor, uniform_array(tensor, a, b, generator))


def _normal(tensor, mean, std, generator):
    return _write(tensor, normal_array(tensor, mean, std, generator))


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    """Fill ``tensor`` with values drawn from U(a, b)."""
    return _uniform(tensor, a, b, generator)


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    """Fill ``tensor`` with values drawn from N(mean, std**2)."""
    return _normal(tensor, mean, std, generator)


def _norm_cdf(x):
    return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """N(mean, std**2) restricted to [a, b], by rejection as in PyTorch: normal draws redrawn
    where they fall outside when most of the mass is inside [a, b], otherwise uniform draws
    on [a, b] accepted with probability density / peak density. Each round redraws the
    whole tensor and keeps what it needs, so the loop stays vectorised."""
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The distribution "
                      "of values may be incorrect.", stacklevel=2)
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")

    def draw(kernel, method):
        return _sample(tensor, kernel, generator, lambda rng, s, dt: getattr(rng, method)(s, dtype=dt))

    xp = backend.namespace_of(tensor._data)
    if _norm_cdf((b - mean) / std) - _norm_cdf((a - mean) / std) > 0.3:
        result = draw("normal_kernel_cpu", "standard_normal") * std + mean
        pending = (result < a) | (result > b)
        while pending.any():
            result = xp.where(pending, draw("normal_kernel_cpu", "standard_normal") * std + mean, result)
            pending = (result < a) | (result > b)
        return _write(tensor, result)
    mode = max(a, min(mean, b))  # where the density on [a, b] peaks
    log_peak = -0.5 * ((mode - mean) / std) ** 2

    def proposal():
        return draw("check_uniform_bounds", "random") * (b - a) + a

    def rejected(x):
        return xp.log(draw("check_uniform_bounds", "random")) > -0.5 * ((x - mean) / std) ** 2 - log_peak

    result = proposal()
    pending = rejected(result)
    while pending.any():
        result = xp.where(pending, proposal(), result)
        pending &= rejected(result)
    return _write(tensor, result)


def constant_(tensor, val):
    """Fill ``tensor`` with ``val``."""
    with no_grad():
        return tensor.fill_(val)


def ones_(tensor):
    return constant_(tensor, 1.0)


def zeros_(tensor):
    with no_grad():
        return tensor.zero_()


def eye_(tensor):
    """The identity matrix (2-D only), so a Linear layer passes its inputs through."""
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    xp = backend.namespace_of(tensor._data)
    return _write(tensor, xp.eye(*tensor._data.shape, dtype=tensor._data.dtype))


def dirac_(tensor, groups=1):
    """A Dirac delta per (output, input) channel pair, so a convolution passes its input
    channels through (per group)."""
    dims = tensor.ndim
    if dims not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tensor.shape
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    per_group = sizes[0] // groups
    n = min(per_group, sizes[1])
    xp = backend.namespace_of(tensor._data)
    arr = xp.zeros(tensor._data.shape, dtype=tensor._data.dtype)
    d = xp.arange(n)
    out = (xp.arange(groups)[:, None] * per_group + d).reshape(-1)
    centre = tuple(s // 2 for s in sizes[2:])
    arr[(out, xp.tile(d, groups)) + centre] = 1
    return _write(tensor, arr)


def _calculate_fan_in_and_fan_out(tensor):
    """(fan_in, fan_out) of a weight laid out (out_features, in_features, *kernel)."""
    if tensor.dim() < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    receptive_field_size = 1
    for s in tensor.shape[2:]:
        receptive_field_size *= s
    return tensor.size(1) * receptive_field_size, tensor.size(0) * receptive_field_size


def _calculate_correct_fan(tensor, mode):
    mode = mode.lower()
    valid_modes = ["fan_in", "fan_out"]
    if mode not in valid_modes:
        raise ValueError(f"Mode {mode} not supported, please use one of {valid_modes}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def xavier_uniform_(tensor, gain=1.0, generator=None):
    """Glorot: U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    a = math.sqrt(3.0) * gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return _uniform(tensor, -a, a, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    """Glorot: N(0, std**2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return _normal(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)), generator)


def _kaiming_std(tensor, a, mode, nonlinearity):
    """He's std = gain / sqrt(fan), or None for an empty tensor (a no-op, with a warning)."""
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=3)
        return None
    fan = _calculate_correct_fan(tensor, mode)
    return calculate_gain(nonlinearity, a) / math.sqrt(fan)


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """He: U(-bound, bound) with bound = gain * sqrt(3 / fan)."""
    std = _kaiming_std(tensor, a, mode, nonlinearity)
    if std is None:
        return tensor
    bound = math.sqrt(3.0) * std
    return _uniform(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """He: N(0, std**2) with std = gain / sqrt(fan)."""
    std = _kaiming_std(tensor, a, mode, nonlinearity)
    if std is None:
        return tensor
    return _normal(tensor, 0, std, generator)


def orthogonal_(tensor, gain=1, generator=None):
    """A (semi-)orthogonal matrix from the QR decomposition of a normal sample, its signs
    fixed by diag(R) so the distribution is uniform (Haar); extra dims are flattened."""
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.size(0)
    cols = tensor.numel() // rows
    flat = _sample(tensor, "normal_kernel_cpu", generator,
                   lambda rng, s, dt: rng.standard_normal((rows, cols), dtype=dt))
    if rows < cols:
        flat = flat.T
    xp = backend.namespace_of(flat)
    q, r = xp.linalg.qr(flat)
    q = q * xp.sign(xp.diagonal(r))
    if rows < cols:
        q = q.T
    return _write(tensor, (q * gain).reshape(tensor._data.shape).astype(tensor._data.dtype, copy=False))


def sparse_(tensor, sparsity, std=0.01, generator=None):
    """A 2-D N(0, std**2) matrix with ``ceil(sparsity * rows)`` zeros in every column."""
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    num_zeros = math.ceil(sparsity * rows)
    arr = _sample(tensor, "normal_kernel_cpu", generator, lambda rng, s, dt: rng.standard_normal(s, dtype=dt))
    arr *= std
    xp = backend.namespace_of(arr)
    rng = _stream(generator, xp)
    order = xp.argsort(xp.asarray(rng.random((rows, cols))), axis=0)  # a random permutation per column
    xp.put_along_axis(arr, order[:num_zeros], 0, axis=0)
    return _write(tensor, arr)


def _make_deprecate(meth):
    new_name = meth.__name__
    old_name = new_name[:-1]

    def deprecated_init(*args, **kwargs):
        warnings.warn(f"`nn.init.{old_name}` is now deprecated in favor of `nn.init.{new_name}`.",
                      FutureWarning, stacklevel=2)
        return meth(*args, **kwargs)
    deprecated_init.__doc__ = f"Deprecated: use :func:`tracegrad.nn.init.{new_name}`."
    deprecated_init.__name__ = old_name
    return deprecated_init


uniform = _make_deprecate(uniform_)
normal = _make_deprecate(normal_)
constant = _make_deprecate(constant_)
eye = _make_deprecate(eye_)
dirac = _make_deprecate(dirac_)
xavier_uniform = _make_deprecate(xavier_uniform_)
xavier_normal = _make_deprecate(xavier_normal_)
kaiming_uniform = _make_deprecate(kaiming_uniform_)
kaiming_normal = _make_deprecate(kaiming_normal_)
orthogonal = _make_deprecate(orthogonal_)
sparse = _make_deprecate(sparse_)

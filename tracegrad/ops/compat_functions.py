"""Top-level torch functions programs use that compose from existing ops: grids and index
sets, integration, windows, tensors from buffers, thread settings, the ``torch.X_``
in-place aliases and the ``torch.conv2d``-style twins of ``nn.functional``.

As in :mod:`.compat_tensor`, nothing here is a new primitive.
"""
import math
import os
import warnings

from .. import backend
from ..backend import dtypes as _dt
from ..backend import threads as _intra_op
from ..runtime.tensor import Tensor, wrap
from .out import can_cast  # noqa: F401  (torch.can_cast: listed in FUNCTIONS below)

__all__ = ["FUNCTIONS", "METHODS"]


def _creation():
    from ..runtime import creation
    return creation


# -- grids and index sets ---------------------------------------------------------------------

def meshgrid(*tensors, indexing=None):
    """Coordinate grids (views, expanded), ``'ij'`` or ``'xy'`` indexing."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the "
                      "indexing argument.", UserWarning, stacklevel=2)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: {indexing}")
    for t in tensors:
        if t.ndim > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t}")
    swap = indexing == "xy" and len(tensors) >= 2
    order = list(tensors)
    if swap:
        order[0], order[1] = order[1], order[0]
    shape = [t.numel() for t in order]
    grids = []
    for i, t in enumerate(order):
        view = [1] * len(order)
        view[i] = -1
        grids.append(t.reshape(view).expand(shape))
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


def cartesian_prod(*tensors):
    if len(tensors) == 1:
        return tensors[0]
    from .shape import stack
    return stack([g.reshape(-1) for g in meshgrid(*tensors, indexing="ij")], dim=1)


def combinations(input, r=2, with_replacement=False):
    """The length-``r`` combinations of a 1-D tensor's elements, one per row."""
    import itertools
    if input.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return input.new_zeros(0)
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    rows = list(pick(range(input.shape[0]), r))
    if not rows:
        return input.new_zeros((0, r))
    index = _creation().tensor(rows, dtype=_dt.int64, device=input.device)
    return input[index]


def _triangle_indices(row, col, offset, upper, dtype, device):
    xp = backend.namespace_for(device)
    rows, cols = (xp.triu_indices if upper else xp.tril_indices)(row, offset, col)
    return wrap(xp.stack([rows, cols]).astype(_dt.as_dtype(dtype).np))


def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    return _triangle_indices(row, col, offset, False, dtype or _dt.int64, device)


def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    return _triangle_indices(row, col, offset, True, dtype or _dt.int64, device)


def unravel_index(indices, shape):
    """The coordinates, one tensor per dimension of ``shape``, of flat ``indices``."""
    if not isinstance(indices, Tensor):
        indices = _creation().tensor(indices)
    if indices.dtype.is_floating_point or indices.dtype.is_complex or indices.dtype is _dt.bool_:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    size = math.prod(shape)
    if ((indices < -size) | (indices >= size)).any().item():
        raise ValueError("'indices' must be in range [-%d, %d)" % (size, size))
    flat = indices.remainder(size) if size else indices
    out = []
    for s in reversed(shape):
        out.append(flat.remainder(s))
        flat = flat.div(s, rounding_mode="floor")
    return tuple(reversed(out))


def scalar_tensor(s, *, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
    return _creation().tensor(s, dtype=dtype or _dt.get_default_dtype(), device=device, requires_grad=requires_grad)


def _range(start=0, end=None, step=1, *, dtype=None, device=None, requires_grad=False, out=None):
    """Deprecated: like ``arange`` but ``end`` included, and floats by default."""
    warnings.warn("torch.range is deprecated and will be removed in a future release because its behavior "
                  "is inconsistent with Python's range builtin. Instead, use torch.arange, which produces "
                  "values in [start, end).", UserWarning, stacklevel=2)
    if end is None:
        start, end = 0, start
    count = int(math.floor((end - start) / step)) + 1
    d = dtype or _dt.get_default_dtype()
    values = [start + i * step for i in range(max(count, 0))]
    return _creation().tensor(values, dtype=d, device=device, requires_grad=requires_grad)


# -- integration and polynomial grids ---------------------------------------------------------

def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The trapezoidal rule along ``dim``: spacing ``dx`` (default 1) or sample points ``x``."""
    n = y.shape[dim]
    if n == 0:
        return y.sum(dim)
    left, right = y.narrow(dim, 0, n - 1), y.narrow(dim, 1, n - 1)
    if x is None:
        return (left + right).sum(dim) * ((1.0 if dx is None else dx) / 2)
    dxs = x.diff(dim=dim if x.ndim == y.ndim else -1)
    if x.ndim == 1 and y.ndim > 1:
        shape = [1] * y.ndim
        shape[dim] = -1
        dxs = dxs.reshape(shape)
    return ((left + right) * dxs).sum(dim) / 2


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    n = y.shape[dim]
    left, right = y.narrow(dim, 0, max(n - 1, 0)), y.narrow(dim, 1, max(n - 1, 0))
    if x is None:
        return ((left + right) * ((1.0 if dx is None else dx) / 2)).cumsum(dim)
    dxs = x.diff(dim=dim if x.ndim == y.ndim else -1)
    if x.ndim == 1 and y.ndim > 1:
        shape = [1] * y.ndim
        shape[dim] = -1
        dxs = dxs.reshape(shape)
    return ((left + right) * dxs / 2).cumsum(dim)


def trapz(y, x=None, *, dx=None, dim=-1):
    return trapezoid(y, x, dx=dx, dim=dim)


def vander(x, N=None, increasing=False):
    """Powers of a 1-D ``x``: columns ``x**(N-1) ... x**0`` (or increasing)."""
    if x.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    if x.dtype is _dt.bool_ or not (x.is_floating_point() or x.is_complex()):
        x = x.to(_dt.int64)
    if n == 0:
        return x.new_zeros((x.shape[0], 0))
    from .shape import cat  # (powers by a running product, as PyTorch's: the same bits)
    ones = x.new_ones((x.shape[0], 1))
    out = ones if n == 1 else cat([ones, x.unsqueeze(1).expand((x.shape[0], n - 1)).cumprod(1)], dim=1)
    return out if increasing else out.flip(1)


# -- windows ----------------------------------------------------------------------------------

def _window(name, numpy_fn, window_length, periodic, dtype, device, requires_grad, *args):
    d = _dt.as_dtype(dtype) if dtype is not None else _dt.get_default_dtype()
    if not d.is_floating_point:
        raise RuntimeError(f"{name} expects floating point dtypes, got: {d}")
    if window_length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got window_length={window_length}")
    n = window_length + 1 if periodic and window_length > 1 else window_length
    values = numpy_fn(n, *args)[:window_length] if window_length != 1 else backend.cpu.ones(1)
    return _creation().tensor(values, dtype=d, device=device, requires_grad=requires_grad)


def hann_window(window_length, periodic=True, *, dtype=None, device=None, layout=None, requires_grad=False):
    return _window("hann_window", backend.cpu.hanning, window_length, periodic, dtype, device, requires_grad)


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None, device=None,
                   layout=None, requires_grad=False):
    def hamming(n):
        k = backend.cpu.arange(n)
        return alpha - beta * backend.cpu.cos(2 * math.pi * k / (n - 1))
    return _window("hamming_window", hamming, window_length, periodic, dtype, device, requires_grad)


def blackman_window(window_length, periodic=True, *, dtype=None, device=None, layout=None, requires_grad=False):
    return _window("blackman_window", backend.cpu.blackman, window_length, periodic, dtype, device, requires_grad)


def bartlett_window(window_length, periodic=True, *, dtype=None, device=None, layout=None, requires_grad=False):
    return _window("bartlett_window", backend.cpu.bartlett, window_length, periodic, dtype, device, requires_grad)


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, device=None, layout=None,
                  requires_grad=False):
    return _window("kaiser_window", backend.cpu.kaiser, window_length, periodic, dtype, device, requires_grad, beta)


# -- tensors from other objects ---------------------------------------------------------------

def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    """``as_tensor`` with PyTorch 2's ``copy`` switch (True: always a copy; False: never,
    else an error)."""
    creation = _creation()
    t = creation.tensor(obj, dtype=dtype, device=device) if copy else creation.as_tensor(obj, dtype=dtype, device=device)
    if copy is False:
        source = obj._data if isinstance(obj, Tensor) else obj
        if not (backend.is_array(source) and backend.namespace_of(source) is backend.namespace_of(t._data)
                and backend.cpu.shares_memory(backend.cpu.asarray(source), t._data)):
            raise ValueError("can't alias tensor with the requested dtype or device without a copy")
    if requires_grad:
        t = (t.detach() if t is obj else t).requires_grad_(True)
    return t


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """A 1-D tensor sharing memory with a Python buffer (``bytearray``, ``memoryview``...)."""
    d = _dt.as_dtype(dtype)
    arr = backend.cpu.frombuffer(buffer, dtype=d.np, count=count, offset=offset)
    t = wrap(arr)
    return t.requires_grad_(True) if requires_grad else t


# -- process settings -------------------------------------------------------------------------

_threads = {"inter": os.cpu_count() or 1, "warn_always": False}


def set_num_threads(n):
    """The intra-op threads tracegrad's CPU kernels may split their copies and passes
    over (:mod:`tracegrad.backend.threads`; default: ``OMP_NUM_THREADS``, else the cores
    this process may use).
    NumPy's BLAS chooses its own threads (``OPENBLAS_NUM_THREADS``)."""
    if not isinstance(n, int) or n <= 0:
        raise RuntimeError("Number of threads must be positive")
    _intra_op.set_threads(n)


def get_num_threads():
    return _intra_op.get_threads()


def set_num_interop_threads(n):
    if not isinstance(n, int) or n <= 0:
        raise RuntimeError("Number of threads must be positive")
    _threads["inter"] = n


def get_num_interop_threads():
    return _threads["inter"]


def set_warn_always(b):
    _threads["warn_always"] = bool(b)


def is_warn_always_enabled():
    return _threads["warn_always"]


def typename(obj):
    """``'tracegrad.FloatTensor'`` for a tensor, else the object's type name."""
    if isinstance(obj, Tensor):
        return obj.type()
    module = type(obj).__module__
    qualname = type(obj).__qualname__
    return qualname if module in ("builtins", "__builtin__", None) else f"{module}.{qualname}"


def is_storage(obj):
    return False


def detach(input):
    return input.detach()


# -- torch.X twins of nn.functional -----------------------------------------------------------

def _F():
    from ..nn import functional
    return functional


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _F().conv1d(input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _F().conv2d(input, weight, bias, stride, padding, dilation, groups)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _F().conv3d(input, weight, bias, stride, padding, dilation, groups)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _F().conv_transpose1d(input, weight, bias, stride, padding, output_padding, groups, dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _F().conv_transpose2d(input, weight, bias, stride, padding, output_padding, groups, dilation)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _F().conv_transpose3d(input, weight, bias, stride, padding, output_padding, groups, dilation)


def dropout(input, p, train):
    return _F().dropout(input, p, train)


def dropout_(input, p, train):
    return _F().dropout(input, p, train, inplace=True)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05, cudnn_enable=True):
    return _F().layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05, cudnn_enabled=True):
    return _F().group_norm(input, num_groups, weight, bias, eps)


def max_pool1d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return _F().max_pool1d(input, kernel_size, stride or None, padding, dilation, ceil_mode)


def max_pool2d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return _F().max_pool2d(input, kernel_size, stride or None, padding, dilation, ceil_mode)


def avg_pool1d(input, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True):
    return _F().avg_pool1d(input, kernel_size, stride or None, padding, ceil_mode, count_include_pad)


def adaptive_avg_pool1d(input, output_size):
    return _F().adaptive_avg_pool1d(input, output_size)


def prelu(input, weight):
    return _F().prelu(input, weight)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """``sum(x1 / |x1| * x2 / |x2|)`` along ``dim``, each norm raised to at least ``eps`` in
    value only (its gradient passes straight through), which is PyTorch's formula."""
    def clamped_norm(x):
        norm = x.norm(2, dim, keepdim=True)
        return norm + (norm.clamp_min(eps) - norm).detach()
    from .shape import broadcast_tensors
    x1, x2 = broadcast_tensors(x1, x2)
    return ((x1 / clamped_norm(x1)) * (x2 / clamped_norm(x2))).sum(dim)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """The ``p``-norm of ``x1 - x2 + eps`` over the last dimension."""
    dim = -1 if max(x1.ndim, x2.ndim) > 0 else 0
    diff = x1 - x2 + eps
    return diff.norm(p, dim=dim, keepdim=keepdim) if diff.ndim else diff.abs()


def pixel_shuffle(input, upscale_factor):
    return _F().pixel_shuffle(input, upscale_factor)


def pixel_unshuffle(input, downscale_factor):
    return _F().pixel_unshuffle(input, downscale_factor)


_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}  # the ints torch.X losses take (at::Reduction)


def _reduction(r):
    if r not in _REDUCTIONS:
        raise RuntimeError(f"{r} is not a valid value for reduction")
    return _REDUCTIONS[r]


def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    return _F().embedding(indices, weight, None if padding_idx == -1 else padding_idx,
                          scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled):
    return _F().batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction=1):
    return _F().binary_cross_entropy_with_logits(input, target, weight, reduction=_reduction(reduction),
                                                 pos_weight=pos_weight)


def kl_div(input, target, reduction=1, log_target=False):
    with warnings.catch_warnings():  # torch.kl_div (unlike F.kl_div) does not warn about 'mean'
        warnings.simplefilter("ignore", UserWarning)
        return _F().kl_div(input, target, reduction=_reduction(reduction), log_target=log_target)


def constant_pad_nd(input, pad, value=0):
    return _F().pad(input, tuple(pad), "constant", value)


def channel_shuffle(input, groups):
    b, c, *rest = input.shape
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and {groups} groups.")
    return input.reshape(b, groups, c // groups, *rest).transpose(1, 2).reshape(input.shape)


def pdist(input, p=2):
    """The ``p``-norm distances between the rows of a 2-D ``input``, pairs i < j in order."""
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    n = input.shape[0]
    i, j = triu_indices(n, n, 1, device=input.device)
    return (input[i] - input[j]).norm(p, dim=1)


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """Whether each element is among ``test_elements`` (compared all against all)."""
    creation = _creation()
    e = elements if isinstance(elements, Tensor) else creation.tensor(elements)
    t = test_elements if isinstance(test_elements, Tensor) else creation.tensor(test_elements)
    hit = (e.detach().unsqueeze(-1) == t.detach().reshape(-1)).any(-1) if t.numel() else e.new_zeros(e.shape, dtype=_dt.bool_)
    return ~hit if invert else hit


def fill(input, value):
    return input.clone().fill_(value) if not isinstance(value, Tensor) else value.expand(input.shape).clone()


def is_inference(input):
    return input.is_inference()


def get_device(input):
    return input.get_device()


def chain_matmul(*matrices):
    warnings.warn("torch.chain_matmul is deprecated and will be removed in a future PyTorch release. "
                  "Use torch.linalg.multi_dot instead, which accepts a list of two or more tensors rather "
                  "than multiple parameters.", UserWarning, stacklevel=2)
    if len(matrices) == 1:
        return matrices[0].clone()
    from .. import linalg
    return linalg.multi_dot(list(matrices))


def set_anomaly_enabled(enabled, check_nan=True):
    from ..autograd import set_detect_anomaly
    set_detect_anomaly(enabled, check_nan)


def poisson(input, generator=None):
    """Poisson draws with rates ``input`` (no gradient, as in PyTorch)."""
    return _sampled(input, generator, lambda rng, rates: rng.poisson(rates))


def binomial(count, prob, generator=None):
    return _sampled(count, generator, lambda rng, n: rng.binomial(n.astype("int64"), prob._data), prob)


def _sampled(like, generator, draw, *others):
    from ..runtime.creation import _stream
    from ._args import per_sample
    if per_sample(like) or any(per_sample(o) for o in others):
        raise NotImplementedError("vmap: poisson and binomial of per-sample rates or counts are not "
                                  "supported in tracegrad: call them outside vmap")
    xp = backend.namespace_of(like._data)
    return wrap(xp.asarray(draw(_stream(generator, xp), like._data)).astype(like._data.dtype))


# -- torch.X_ in-place aliases ----------------------------------------------------------------

_INPLACE_ALIASES = (
    "abs_", "acos_", "acosh_", "arccos_", "arccosh_", "arcsin_", "arcsinh_", "arctan_", "arctanh_",
    "asin_", "asinh_", "atan_", "atanh_", "ceil_", "clamp_", "clamp_max_", "clamp_min_", "clip_",
    "cos_", "cosh_", "deg2rad_", "erf_", "erfc_", "exp2_", "exp_", "expm1_", "fill_", "fix_",
    "floor_", "frac_", "i0_", "ldexp_", "log10_", "log1p_", "log2_", "log_", "nan_to_num_", "neg_",
    "negative_", "rad2deg_", "reciprocal_", "round_", "rsqrt_", "sin_", "sinc_", "sinh_", "sqrt_",
    "square_", "tan_", "tanh_", "trunc_", "xlogy_", "zero_", "detach_", "conj_physical_", "addmv_",
    "logit_")


def _whole_batch(t):
    """``t``'s values for every sample: under vmap, the physical batch (see func._batched)."""
    while getattr(t, "_vmap_batched", False):
        t = t._phys
    return t


def _is_all_true(input):
    """``torch._is_all_true``: whether every element of a bool tensor is True (a 0-d bool
    tensor). Under vmap it answers for all samples at once, as PyTorch's batching rule does,
    so code may branch on it: the distributions' argument checks do."""
    if input.dtype is not _dt.bool_:
        raise RuntimeError(f"_is_all_true: expected a bool tensor, got {input.dtype}")
    return _whole_batch(input).all()


def _is_any_true(input):
    """``torch._is_any_true``: whether any element of a bool tensor is True (see
    :func:`_is_all_true`)."""
    if input.dtype is not _dt.bool_:
        raise RuntimeError(f"_is_any_true: expected a bool tensor, got {input.dtype}")
    return _whole_batch(input).any()

def _alias(name):
    def fn(input, *args, **kwargs):
        return getattr(input, name)(*args, **kwargs)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``input.{name}(...)``."
    return fn


FUNCTIONS = {n: globals()[n] for n in (
    "meshgrid", "cartesian_prod", "combinations", "tril_indices", "triu_indices", "unravel_index",
    "scalar_tensor", "trapezoid", "trapz", "cumulative_trapezoid", "vander", "hann_window",
    "hamming_window", "blackman_window", "bartlett_window", "kaiser_window", "asarray", "frombuffer",
    "set_num_threads", "get_num_threads", "set_num_interop_threads", "get_num_interop_threads",
    "set_warn_always", "is_warn_always_enabled", "typename", "is_storage", "detach", "conv1d",
    "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "dropout",
    "dropout_", "layer_norm", "group_norm", "max_pool1d", "max_pool2d", "avg_pool1d",
    "adaptive_avg_pool1d", "prelu", "cosine_similarity", "pairwise_distance", "pixel_shuffle",
    "pixel_unshuffle", "embedding", "batch_norm", "binary_cross_entropy_with_logits", "kl_div",
    "constant_pad_nd", "channel_shuffle", "pdist", "isin", "can_cast", "fill", "is_inference",
    "get_device", "chain_matmul", "set_anomaly_enabled", "poisson", "binomial", "_is_all_true", "_is_any_true")}
FUNCTIONS.update(unsafe_chunk=lambda input, chunks, dim=0: input.chunk(chunks, dim),
                 unsafe_split=lambda input, split_size, dim=0: input.split(split_size, dim),
                 split_with_sizes=lambda input, split_sizes, dim=0: input.split(list(split_sizes), dim))
FUNCTIONS["range"] = _range
FUNCTIONS.update({n: _alias(n) for n in _INPLACE_ALIASES})
METHODS = {}

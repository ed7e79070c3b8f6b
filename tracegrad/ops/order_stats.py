"""Order statistics: median, nanmedian, quantile, nanquantile, as in PyTorch.

Each sorts along the reduced dim (NaN sorts last) and picks positions from the sorted
values, so gradients flow through the sort's rule to the elements picked (interpolated
quantiles split theirs between two neighbours). The median of all elements is a rule of
its own (``median_all``), whose gradient is shared by every element equal to it, as
PyTorch's. PyTorch's NaN rules: median and quantile
answer NaN for a slice holding one, the ``nan*`` forms skip NaNs (NaN for all-NaN slices);
median is the lower median.
"""
from ..rules import reduce as R
from ..runtime.creation import tensor
from ..runtime.tensor import Tensor
from . import return_types
from ._args import wrap_dim
from .sorting import sort

_MODES = ("linear", "lower", "higher", "midpoint", "nearest")


def _positions(input, d, skip_nan, choose):
    """(sorted values, sorted indices, position per slice) along dim ``d``: ``choose(count)``
    gives the position among a slice's ``count`` values (NaNs left out when ``skip_nan``);
    a slice with a NaN that is not skipped points at its first NaN."""
    values, indices = sort(input, dim=d)
    n = input.shape[d]
    nans = values.isnan().sum(dim=d, keepdim=True)
    count = n - nans
    pos = choose(count)
    if not skip_nan:
        pos = pos.where(nans == 0, count)
    return values, indices, pos.clamp(0, n - 1)


def _median(input, dim, keepdim, skip_nan, name):
    result = getattr(return_types, name)
    if dim is None:
        if input.numel() == 0:
            return tensor(float("nan"), dtype=input.dtype, device=input.device)
        return (R.nanmedian_all if skip_nan else R.median_all)(input)
    d = wrap_dim(dim, input.ndim) if input.ndim else 0
    x = input.reshape(1) if input.ndim == 0 else input
    if x.shape[d] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
    values, indices, pos = _positions(x, d, skip_nan, lambda c: (c - 1).div(2, rounding_mode="floor"))
    v, i = values.gather(d, pos), indices.gather(d, pos)
    if not keepdim or input.ndim == 0:
        v, i = v.squeeze(d), i.squeeze(d)
    return result(v, i)


def median(input, dim=None, keepdim=False):
    """The lower median (of all elements, or ``(values, indices)`` along ``dim``); NaN where
    a NaN takes part."""
    return _median(input, dim, keepdim, False, "median")


def nanmedian(input, dim=None, keepdim=False):
    """:func:`median` over the values that are not NaN."""
    return _median(input, dim, keepdim, True, "nanmedian")


def _quantile(input, q, dim, keepdim, interpolation, skip_nan, name):
    if not input.dtype.is_floating_point or input.dtype.name == "float16":
        raise RuntimeError(f"{name}() input tensor must be either float or double dtype")
    if interpolation not in _MODES:
        raise ValueError(f"{name}() interpolation must be one of linear, lower, higher, midpoint or "
                         f"nearest. Got {interpolation}")
    scalar_q = not isinstance(q, Tensor)
    qs = tensor([float(q)] if scalar_q else q.detach().reshape(-1).tolist(), dtype=input.dtype,
                device=input.device)
    if isinstance(q, Tensor) and q.ndim > 1:
        raise RuntimeError(f"{name}() q must be a scalar or 1D tensor")
    for value in qs.tolist():
        if not 0 <= value <= 1:
            raise RuntimeError(f"{name}() q must be in the range [0, 1] but got {value}")
    x = input.reshape(-1) if dim is None else input
    d = 0 if dim is None else wrap_dim(dim, input.ndim)
    if x.ndim == 0:
        x = x.reshape(1)
    if x.shape[d] == 0:
        raise RuntimeError(f"{name}() input tensor must be non-empty")
    x = x.movedim(d, -1).unsqueeze(0)  # (1, ..., n): one row of quantiles per q
    values, _ = sort(x, dim=-1)
    n = x.shape[-1]
    nans = values.isnan().sum(dim=-1, keepdim=True)
    rank = qs.reshape((-1,) + (1,) * (x.ndim - 1)) * ((n - nans) - 1).to(input.dtype)
    lo = rank.floor()
    if interpolation == "lower":
        rank = lo
    elif interpolation == "higher":
        rank = rank.ceil()
    elif interpolation == "nearest":
        rank = rank.round()
    below = lo.clamp(min=0).long().clamp(max=n - 1)
    above = rank.ceil().clamp(min=0).long().clamp(max=n - 1)
    if interpolation in ("lower", "higher", "nearest"):
        below = above = rank.clamp(min=0).long().clamp(max=n - 1)
    shape = tuple(below.shape[:-1]) + (n,)
    v_below = values.expand(shape).gather(-1, below)
    v_above = values.expand(shape).gather(-1, above)
    if interpolation == "linear":
        out = v_below + (rank - lo) * (v_above - v_below)
    elif interpolation == "midpoint":
        out = v_below + 0.5 * (v_above - v_below)
    else:
        out = v_below
    nan_here = (nans > 0) if not skip_nan else (nans == n)
    out = out.masked_fill(nan_here.expand(out.shape), float("nan"))
    out = out.squeeze(-1)  # (len(q), ...)
    if keepdim:
        if dim is None:
            out = out.reshape((out.shape[0],) + (1,) * input.ndim)
        else:
            out = out.unsqueeze(d + 1)
    return out[0] if scalar_q else out


def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """The ``q``-quantiles (a number, or a 1-D tensor of them: a leading dim of results) of
    all elements or along ``dim``, interpolated between the two nearest ranks as
    ``interpolation`` says; NaN where a NaN takes part."""
    return _quantile(input, q, dim, keepdim, interpolation, False, "quantile")


def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """:func:`quantile` over the values that are not NaN."""
    return _quantile(input, q, dim, keepdim, interpolation, True, "nanquantile")


FUNCTIONS = {n: globals()[n] for n in ("median", "nanmedian", "quantile", "nanquantile")}
METHODS = dict(FUNCTIONS)

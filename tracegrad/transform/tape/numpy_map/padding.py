"""``numpy.pad`` on tracers, every mode, one axis after another as NumPy pads them.

* ``constant`` (and ``empty``, taken as zeros): the table's ``constant_pad_nd``, or a
  ``cat`` with the broadcast value when that value is traced;
* ``edge``, ``wrap``, ``reflect``, ``symmetric``: a copy of elements -- NumPy's own pad
  of the positions ``0..n-1`` says which element lands where, recorded as one
  ``index_select`` per axis (its gradient adds the copies back up);
* ``reflect``/``symmetric`` with ``reflect_type="odd"``: linear in the array, so per
  axis ``M @ a`` with ``M`` (NumPy's pad of an identity) a constant;
* ``linear_ramp``: NumPy's own ramps, a traced ``linspace`` from each end value to
  the edge element;
* ``maximum``, ``minimum``, ``mean``, ``median``: the statistic of the first or last
  ``stat_length`` elements, broadcast over the padding (the median through a recorded
  sort, so the gradient goes to the middle element(s)).

A callable ``mode`` is refused: tracegrad cannot see what it writes.
"""
import numpy as np

from ....rules import arrays as A
from ..tape import shape_of
from .base import P, as_arrays, astype, is_traced, ndim, npdtype, register, unsupported
from .shapes import _concatenate, _moveaxis

_COPY_MODES = ("edge", "wrap", "reflect", "symmetric")
_STAT_MODES = {"maximum": P.amax, "minimum": P.amin, "mean": P.mean}


def _pairs(x, n, name, as_index=True):
    """NumPy's broadcast of a pad argument to one (before, after) pair per axis."""
    arr = np.asarray(x)
    if as_index:
        if arr.dtype.kind not in "iub":
            raise TypeError("`pad_width` must be of integral type.")
        if (arr < 0).any():
            raise ValueError(f"index can't contain negative values ({name})")
    try:
        pairs = np.broadcast_to(arr, (n, 2))
    except ValueError:
        raise ValueError(f"operands could not be broadcast together with remapped shapes "
                         f"[original->remapped]: {arr.shape} and requested shape ({n},2)") from None
    return [(p[0].item(), p[1].item()) for p in pairs]


def _widths_shape(a, d, width):
    return tuple(width if k == d else s for k, s in enumerate(shape_of(a)))


def _constant(a, d, before, after, values):
    lo, hi = values
    if not is_traced(lo) and not is_traced(hi):
        pad = [0] * (2 * (ndim(a) - d))
        pad[-2:] = before, after
        if lo == hi or not (before and after):
            value = lo if before else hi
            return P.constant_pad_nd(a, pad=tuple(pad), value=_scalar(value, a))
        a = _constant(a, d, before, 0, (lo, lo))
        return _constant(a, d, 0, after, (hi, hi))
    pieces = [a]
    if before:
        pieces.insert(0, P.broadcast_to(astype(lo, npdtype(a), copy=False), shape=_widths_shape(a, d, before)))
    if after:
        pieces.append(P.broadcast_to(astype(hi, npdtype(a), copy=False), shape=_widths_shape(a, d, after)))
    return _concatenate(pieces, axis=d)


def _scalar(value, a):
    """A constant pad value in the array's dtype, as NumPy casts it."""
    return np.asarray(value).astype(npdtype(a)).item()


def _copies(a, d, before, after, mode, reflect_type):
    kw = {"reflect_type": reflect_type} if mode in ("reflect", "symmetric") else {}
    positions = np.pad(np.arange(shape_of(a)[d]), (before, after), mode=mode, **kw)
    return P.index_select(a, A.index_like(a, positions), dim=d)


def _affine(a, d, before, after, mode, kw):
    """Per axis ``M @ a``: ``M`` is NumPy's pad of an identity (odd reflections are linear
    in the array; on integers they stay exact)."""
    n = shape_of(a)[d]
    dtype = npdtype(a) if npdtype(a).kind in "fc" else np.float64
    m = np.pad(np.eye(n, dtype=dtype), ((before, after), (0, 0)), mode=mode, **kw)
    out = _moveaxis(P.matmul(_moveaxis(a, d, -1), np.ascontiguousarray(m.T)), -1, d)
    return out if npdtype(a).kind in "fc" else astype(P.round(out, decimals=0), npdtype(a))


def _ramps(a, d, before, after, ends):
    """NumPy's ramps: from each end value towards the edge element, as its linspace
    computes them (so integer arrays round alike)."""
    from .arrays import _linspace
    n = shape_of(a)[d]
    if n == 0:
        raise ValueError("can't extend empty axis 0 using modes other than 'constant' or 'empty'")
    pieces = [a]
    for width, end, at_end in ((before, ends[0], False), (after, ends[1], True)):
        if width:
            edge = P.squeeze(A.slice_along(a, d, n - 1 if at_end else 0, n if at_end else 1), dim=d)
            ramp = _linspace(end, edge, width, endpoint=False, dtype=npdtype(a), axis=d)
            pieces.insert(len(pieces) if at_end else 0, P.flip(ramp, dims=(d,)) if at_end else ramp)
    return _concatenate(pieces, axis=d)


def _median(x, d):
    s = A.sort(x, d)[0]
    n = shape_of(x)[d]
    lo = A.slice_along(s, d, (n - 1) // 2, (n - 1) // 2 + 1)
    if n % 2:
        return lo
    return P.mul(P.add(lo, A.slice_along(s, d, n // 2, n // 2 + 1)), 0.5)


def _statistic(a, d, before, after, mode, lengths):
    n = shape_of(a)[d]
    if n == 0 and (before or after):
        raise ValueError("stat_length of 0 yields no value for padding")
    pieces = [a]
    for width, length, at_end in ((before, lengths[0], False), (after, lengths[1], True)):
        if not width:
            continue
        k = n if length is None else min(max(int(length), 1), n)
        part = A.slice_along(a, d, n - k, None) if at_end else A.slice_along(a, d, 0, k)
        if mode == "median":
            stat = _median(part, d)
        else:
            stat = _STAT_MODES[mode](part if mode != "mean" or npdtype(a).kind in "fc"
                                     else astype(part, np.float64), dim=(d,), keepdim=True)
        if npdtype(stat) != npdtype(a):
            stat = astype(P.round(stat, decimals=0), npdtype(a))
        stat = P.broadcast_to(stat, shape=_widths_shape(a, d, width))
        pieces.insert(len(pieces) if at_end else 0, stat)
    return _concatenate(pieces, axis=d)


@register(np.pad)
def _pad(array, pad_width, mode="constant", **kwargs):
    a = as_arrays([array])[0]
    if callable(mode):
        raise unsupported("numpy.pad with a function as mode")
    n = ndim(a)
    widths = _pairs(pad_width, n, "pad_width")
    allowed = {"constant": {"constant_values"}, "empty": set(), "edge": set(), "wrap": set(),
               "reflect": {"reflect_type"}, "symmetric": {"reflect_type"},
               "linear_ramp": {"end_values"}, "maximum": {"stat_length"},
               "minimum": {"stat_length"}, "mean": {"stat_length"}, "median": {"stat_length"}}
    if mode not in allowed:
        raise ValueError(f"mode '{mode}' is not supported")
    extra = set(kwargs) - allowed[mode]
    if extra:
        raise ValueError(f"unsupported keyword arguments for mode '{mode}': {extra}")
    if mode == "constant":
        values = kwargs.get("constant_values", 0)
        values = [(values, values)] * n if is_traced(values) else _pairs(values, n, "constant_values", False)
    if kwargs.get("stat_length") is not None:
        lengths = _pairs(kwargs["stat_length"], n, "stat_length")
    else:
        lengths = [(None, None)] * n
    for d, (before, after) in enumerate(widths):
        if not (before or after):
            continue
        if mode in ("constant", "empty"):
            a = _constant(a, d, before, after, values[d] if mode == "constant" else (0, 0))
        elif mode in _COPY_MODES and kwargs.get("reflect_type", "even") == "even":
            a = _copies(a, d, before, after, mode, "even")
        elif mode == "linear_ramp":
            a = _ramps(a, d, before, after, _pairs(kwargs.get("end_values", 0), n, "end_values", False)[d])
        elif mode in ("reflect", "symmetric"):
            a = _affine(a, d, before, after, mode, kwargs)
        else:
            a = _statistic(a, d, before, after, mode, lengths[d])
    return P.clone(a) if a is array else a

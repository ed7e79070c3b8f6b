"""``scipy.signal.convolve`` and ``correlate`` with derivatives in both inputs: SciPy's
signatures and modes ("full", "valid", "same") for n-d arrays of the same number of dims,
on arrays, tape tracers and Tensors (rule ``convolve``, :mod:`tracegrad.rules.scipy_signal`;
"same" is a slice of "full", correlate a convolution with the second input flipped and
conjugated). ``method`` ("auto", "direct", "fft") picks SciPy's kernel, not the result.

HIPS autograd's own ``convolve`` adds ``axes`` and ``dot_axes`` (a convolution over some
pairs of axes, a tensordot over others, an outer product over the rest); SciPy has no such
arguments. They are taken here keyword-only, so that code written for autograd runs
unchanged, and SciPy's calls (positional ``mode`` and ``method``) are untouched: see
:func:`_over_axes`.
"""
from ..backend import cpu
from ..rules.complex_ import conj_of
from ..rules.index import basic_index
from ..rules.scipy_signal import convolve as _convolve
from ..rules.scipy_signal import flipped
from ..rules.shape import permute, reshape

__all__ = ["convolve", "correlate"]

_MODES = ("full", "valid", "same")


def _operand(x):
    return x if hasattr(x, "shape") and hasattr(x, "ndim") else cpu.asarray(x)


def _inputs_swap_needed(mode, shape1, shape2):
    """SciPy's rule: in "valid" mode the larger operand goes first; neither being larger
    in every dim is an error."""
    if mode != "valid":
        return False
    if all(a >= b for a, b in zip(shape1, shape2)):
        return False
    if all(a <= b for a, b in zip(shape1, shape2)):
        return True
    raise ValueError("For 'valid' mode, one must be at least as large as the other in every dimension")


def convolve(in1, in2, mode="full", method="auto", *, axes=None, dot_axes=None):
    """The n-dimensional convolution of ``in1`` and ``in2``: its whole (``full``), the part
    that needs no zero padding (``valid``), or the part centred as ``in1`` (``same``).
    ``axes``/``dot_axes`` (HIPS autograd's, keyword-only): see :func:`_over_axes`."""
    in1, in2 = _operand(in1), _operand(in2)
    if mode not in _MODES:
        raise ValueError("acceptable mode flags are 'valid', 'same', or 'full'")
    if axes is not None or dot_axes is not None:
        return _over_axes(in1, in2, axes, dot_axes, mode, method)
    if method not in ("auto", "direct", "fft"):
        raise ValueError(f"acceptable method flags are 'auto', 'direct', or 'fft', got {method!r}")
    if in1.ndim != in2.ndim:
        raise ValueError("in1 and in2 should have the same dimensionality")
    if in1.ndim == 0:
        return in1 * in2
    if 0 in tuple(in1.shape) or 0 in tuple(in2.shape):
        raise ValueError("convolve: in1 and in2 cannot be empty (SciPy's convolve refuses them too)")
    if mode == "same":
        full = _convolve(in1, in2, mode="full", method=method)
        starts = [(f - n) // 2 for f, n in zip(full.shape, in1.shape)]
        return basic_index(full, index=tuple(slice(s, s + n) for s, n in zip(starts, in1.shape)))
    if _inputs_swap_needed(mode, in1.shape, in2.shape):
        in1, in2 = in2, in1
    return _convolve(in1, in2, mode=mode, method=method)


def _over_axes(a, b, axes, dot_axes, mode, method):
    """HIPS autograd's generalised convolution: ``axes = (axes of a, axes of b)`` are
    convolved pairwise (in ``mode``, ``same`` centred as ``a`` and ``valid`` needing one
    operand at least as large as the other along all of them, as SciPy's), ``dot_axes``
    pairs are summed over (a tensordot), and the remaining axes make an outer product. The
    result's axes: ``a``'s remaining ones, then ``b``'s, then the convolved pairs in order.
    ``axes=None``: every axis not in ``dot_axes``, paired in order.

    Written with the n-d ``convolve`` rule: ``a`` laid out as (rest of a, 1, conv axes) and
    ``b`` as (1, rest of b, conv axes), whose full convolution is the outer product over
    the first two dims; one such convolution per element of the summed axes."""
    dot_a, dot_b = _axis_lists(dot_axes if dot_axes is not None else ((), ()), a, b, "dot_axes")
    if axes is None:
        axes = ([k for k in range(a.ndim) if k not in dot_a], [k for k in range(b.ndim) if k not in dot_b])
    conv_a, conv_b = _axis_lists(axes, a, b, "axes")
    if set(conv_a) & set(dot_a) or set(conv_b) & set(dot_b):
        raise ValueError("convolve: an axis is in both axes and dot_axes")
    if any(a.shape[i] != b.shape[j] for i, j in zip(dot_a, dot_b)):
        raise ValueError(f"convolve: dot_axes {dot_axes} pair dims of different lengths ({a.shape} and {b.shape})")
    if 0 in tuple(a.shape) or 0 in tuple(b.shape):
        raise ValueError("convolve: in1 and in2 cannot be empty (SciPy's convolve refuses them too)")
    rest_a = [k for k in range(a.ndim) if k not in conv_a + dot_a]
    rest_b = [k for k in range(b.ndim) if k not in conv_b + dot_b]
    n, m = [a.shape[k] for k in conv_a], [b.shape[k] for k in conv_b]
    if mode == "valid" and not (all(x >= y for x, y in zip(n, m)) or all(x <= y for x, y in zip(n, m))):
        raise ValueError("For 'valid' mode, one must be at least as large as the other in every dimension")
    size_a, size_b = _size(a, rest_a), _size(b, rest_b)
    terms = _size(a, dot_a)
    a2 = reshape(permute(a, dims=tuple(rest_a + dot_a + conv_a)), shape=(size_a, 1, terms, *n))
    b2 = reshape(permute(b, dims=tuple(rest_b + dot_b + conv_b)), shape=(1, size_b, terms, *m))
    out = None
    for k in range(terms):
        at = (slice(None), slice(None), k)
        term = _convolve(basic_index(a2, index=at), basic_index(b2, index=at), mode="full", method=method)
        out = term if out is None else out + term
    keep = tuple(_kept(x, y, mode) for x, y in zip(n, m))
    out = basic_index(out, index=(slice(None), slice(None)) + keep)
    shape = tuple(a.shape[k] for k in rest_a) + tuple(b.shape[k] for k in rest_b) + \
        tuple(s.stop - s.start for s in keep)
    return reshape(out, shape=shape)


def _axis_lists(pair, a, b, what):
    """``pair`` (axes of ``a``, axes of ``b``) as two lists of non-negative ints."""
    try:
        first, second = pair
        out = [[int(k) % x.ndim if x.ndim else int(k) for k in ks] for ks, x in ((first, a), (second, b))]
    except (TypeError, ValueError):
        raise ValueError(f"convolve: {what} must be a pair of lists of axes, got {pair!r}") from None
    if len(out[0]) != len(out[1]) or any(len(set(ks)) != len(ks) for ks in out) or \
            any(not -x.ndim <= int(k) < max(x.ndim, 1) for ks, x in ((first, a), (second, b)) for k in ks):
        raise ValueError(f"convolve: {what} {pair!r} must pair as many distinct axes of each operand "
                         f"(of shapes {tuple(a.shape)} and {tuple(b.shape)})")
    return out


def _size(x, dims):
    size = 1
    for k in dims:
        size *= x.shape[k]
    return size


def _kept(n, m, mode):
    """The slice of a full convolution's axis (lengths ``n`` of in1, ``m`` of in2) that
    ``mode`` keeps, SciPy's way."""
    if mode == "full":
        return slice(0, n + m - 1)
    if mode == "same":
        start = (m - 1) // 2
        return slice(start, start + n)
    return slice(min(n, m) - 1, max(n, m))


def correlate(in1, in2, mode="full", method="auto"):
    """The n-dimensional cross-correlation ``z[k] = sum_l in1[l] conj(in2[l - k])`` (SciPy's
    offsets): the convolution of ``in1`` with ``in2`` flipped and conjugated."""
    return convolve(in1, flipped(conj_of(_operand(in2))), mode, method)

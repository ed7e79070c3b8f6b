"""``numpy.fft`` on tracers: every transform NumPy has (with ``n``/``s``, ``axis``/``axes``
and ``norm``) and the two shifts, over the FFT rules of :mod:`tracegrad.rules.fft`.

This module only reads NumPy's signatures: which axes, which lengths, which direction.
What each transform is made of is in the rules module, shared with ``tracegrad.fft``."""
import numpy as np

from ....rules import fft as F
from ..tape import shape_of
from .base import FUNCTIONS, as_float, ndim, npdtype, unsupported


def _norm(norm):
    norm = "backward" if norm is None else norm
    if norm not in F.NORMS:
        raise ValueError(f'Invalid norm value {norm}; should be "backward","ortho" or "forward".')
    return norm


def _axes(a, axes, what):
    """NumPy's axes made non-negative; a repeated axis (NumPy transforms it twice) is refused."""
    if axes is None:
        return None
    n = ndim(a)
    out = []
    for ax in axes:
        ax = int(ax)
        if not -n <= ax < n:
            raise np.exceptions.AxisError(ax, n)
        out.append(ax % n)
    if len(set(out)) != len(out):
        raise unsupported(f"numpy.fft.{what} with a repeated axis {tuple(axes)}")
    return tuple(out)


def _input(a, what, out, real=False):
    if out is not None:
        raise unsupported(f"numpy.fft.{what}(..., out=)")
    kind = npdtype(a).kind
    if real and kind == "c":
        raise TypeError(f"numpy.fft.{what} takes a real input, got {npdtype(a)}")
    return as_float(a)


def _transform(transform, c2r=False, **direction):
    """The body every transform shares, from its arguments in ``*fftn`` form."""
    def run(what, a, s, axes, norm, out):
        a = _input(a, what, out, real=transform is F.rfftn)
        sizes, dims = F.plan(shape_of(a), None if s is None else tuple(s), _axes(a, axes, what), c2r=c2r)
        return transform(a, sizes=sizes, dims=dims, norm=_norm(norm), **direction)
    return run


def _family(stem, run):
    """NumPy's ``stem``, ``stem2`` and ``stemn`` (those it has) over one body."""
    def one(a, n=None, axis=-1, norm=None, out=None):
        return run(stem, a, None if n is None else (n,), (axis,), norm, out)

    def two(a, s=None, axes=(-2, -1), norm=None, out=None):
        return run(stem + "2", a, s, axes, norm, out)

    def nd(a, s=None, axes=None, norm=None, out=None):
        return run(stem + "n", a, s, axes, norm, out)
    return {getattr(np.fft, stem + suffix, None): fn for suffix, fn in (("", one), ("2", two), ("n", nd))}


def _shift(inverse):
    def call(x, axes=None):
        n = ndim(x)
        if axes is None:
            axes = tuple(range(n))
        elif isinstance(axes, (int, np.integer)):
            axes = (axes,)
        return F.shift(x, tuple(int(ax) % n for ax in axes), inverse=inverse)
    return call


for _stem, _run in (("fft", _transform(F.fftn, forward=True)), ("ifft", _transform(F.fftn, forward=False)),
                   ("rfft", _transform(F.rfftn)), ("irfft", _transform(F.irfftn, c2r=True)),
                   ("hfft", _transform(F.irfftn, c2r=True, forward=True)),
                   ("ihfft", _transform(F.rfftn, forward=False))):
    FUNCTIONS.update({f: fn for f, fn in _family(_stem, _run).items() if f is not None})
FUNCTIONS.update({np.fft.fftshift: _shift(False), np.fft.ifftshift: _shift(True)})

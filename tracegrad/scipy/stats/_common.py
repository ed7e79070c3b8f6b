"""What the distribution modules share: operands, SciPy's answers outside a support and
for invalid parameters (written with ``where``, so they hold on tracers and Tensors too),
and the samplers, which are SciPy's own."""
import math

from ...backend import cpu
from ...rules import arith as A
from ...rules._scipy import scipy_module
from ...rules.shape import reshape

__all__ = ["INF", "NAN", "checked", "data", "either", "operand", "sampler", "squeeze_output"]

NAN, INF = math.nan, math.inf


def operand(x):
    """Lists and tuples as arrays; numbers, arrays, tracers and Tensors as given."""
    return cpu.asarray(x) if isinstance(x, (list, tuple)) else x


def data(x):
    """The quantiles: as :func:`operand`, with a Python number as a 0-d array (so that a
    zero ``scale`` divides it as NumPy does, to inf or nan, not with an exception)."""
    return cpu.asarray(x) if isinstance(x, (list, tuple, int, float)) else x


def either(*conditions):
    """The elementwise ``or`` of conditions (Python bools or boolean arrays)."""
    masks = [c for c in conditions if not isinstance(c, bool)]
    if any(c is True for c in conditions) or not masks:
        return any(c is True for c in conditions)
    out = masks[0]
    for m in masks[1:]:
        out = A.logical_or(out, m)
    return out


def checked(value, *bad):
    """``value``, with nan wherever one of the ``bad`` conditions holds: SciPy's answer
    for invalid parameters (a negative scale, a non-positive shape...)."""
    mask = either(*bad)
    if mask is False:
        return value
    if mask is True:
        return value * NAN
    return A.where(mask, NAN, value)


def squeeze_output(out):
    """SciPy's multivariate results: every dim of size 1 dropped."""
    shape = tuple(s for s in getattr(out, "shape", ()) if s != 1)
    return out if shape == tuple(getattr(out, "shape", ())) else reshape(out, shape=shape)


def sampler(name):
    """``rvs`` of SciPy's distribution ``name``: random variates, which have no derivative."""
    def rvs(*args, **kwargs):
        return getattr(scipy_module("scipy.stats", f"{name}.rvs"), name).rvs(*args, **kwargs)
    rvs.__name__ = rvs.__qualname__ = "rvs"
    rvs.__doc__ = f"Random variates of ``scipy.stats.{name}`` (SciPy's own: no derivative)."
    return rvs

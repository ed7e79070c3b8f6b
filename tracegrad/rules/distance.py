"""Pairwise distances: ``cdist``, the p-norm of every row of ``x1`` minus every row of
``x2`` (batch dims broadcast).

One primitive, so that the node is PyTorch's ``CdistBackward0`` and the gradient is
PyTorch's where a p-norm has a kink: 0 at zero distance (and, for p < 1, where a
coordinate's difference is 0); for p = inf every coordinate that reaches the maximum
gets the full slope (``vector_norm`` shares it between ties instead). Everything else is
``vector_norm``'s kernel and slope along the last dim of the differences.
"""
import math

from .broadcast import indicator, unbroadcast
from .core import KEEP, primitive
from .reduce import norm_slope, sum, vector_norm
from .shape import unsqueeze
from .unary import abs, sign

__all__ = ["cdist"]


def _differences(x1, x2):
    """``x1[..., i, None, :] - x2[..., None, j, :]``: shape ``(..., P, R, M)``."""
    return unsqueeze(x1, dim=x1.ndim - 1) - unsqueeze(x2, dim=x2.ndim - 2)


@primitive("CdistBackward0", dtypes=KEEP)
def cdist(xp, x1, x2, *, p=2.0):
    diff = x1[..., :, None, :] - x2[..., None, :, :]
    if diff.size == 0:  # no rows, or rows of no columns (at distance 0)
        return xp.zeros(diff.shape[:-1], dtype=diff.dtype)
    return vector_norm.impl(xp, diff, ord=p, dim=(diff.ndim - 1,))


def _slope(out, x1, x2, p):
    """d out[..., i, j] / d x1[..., i, :] (that for x2 is its negative): ``(..., P, R, M)``."""
    diff = _differences(x1, x2)
    last = (diff.ndim - 1,)
    if p == math.inf:
        return sign(diff) * indicator(abs(diff) == unsqueeze(out, dim=out.ndim), diff)
    return norm_slope(out, diff, p, last, False)


@cdist.vjp("x1", uses="x1 x2 out")
def cdist_vjp_x1(g, out, x1, x2, *, p=2.0):
    s = _slope(out, x1, x2, p) * unsqueeze(g, dim=g.ndim)
    return unbroadcast(sum(s, dim=(s.ndim - 2,)), x1)


@cdist.vjp("x2", uses="x1 x2 out")
def cdist_vjp_x2(g, out, x1, x2, *, p=2.0):
    s = _slope(out, x1, x2, p) * unsqueeze(g, dim=g.ndim)
    return unbroadcast(-sum(s, dim=(s.ndim - 3,)), x2)


@cdist.jvp("x1")
def cdist_jvp_x1(t, out, x1, x2, *, p=2.0):
    s = _slope(out, x1, x2, p) * unsqueeze(t, dim=t.ndim - 1)
    return sum(s, dim=(s.ndim - 1,))


@cdist.jvp("x2")
def cdist_jvp_x2(t, out, x1, x2, *, p=2.0):
    s = _slope(out, x1, x2, p) * unsqueeze(t, dim=t.ndim - 2)
    return -sum(s, dim=(s.ndim - 1,))

"""``matrix_exp``: the exponential of (stacks of) square matrices, one rule.

The kernel scales the matrices by ``2^-s`` until their 1-norm is at most 1/2, sums the
Taylor series to degree 18 (its remainder is below float64 rounding there) and squares
``s`` times, with array operations only, so it runs on every backend without SciPy.
The derivative in direction ``E`` is the Frechet derivative ``L(A, E)``, the upper-right
block of ``exp([[A, E], [0, A]])`` (Higham 2008, 10.6); the vjp is ``L(A^T, G)``. Both
call this rule again, so derivatives of every order follow. Holomorphic: the rule holds
for complex values as written (JAX's convention).
"""
import math

from .broadcast import zeros_like
from .core import FLOAT, primitive
from .index import basic_index
from .shape import cat, transpose

__all__ = ["matrix_exp"]


def _kernel(xp, a):
    if a.size == 0:
        return xp.array(a, copy=True)
    norm = float(xp.max(xp.sum(xp.abs(a), axis=-2)))
    s = max(0, math.ceil(math.log2(norm)) + 1) if norm > 0.5 else 0
    a = a / (2.0 ** s)
    term = total = xp.broadcast_to(xp.eye(a.shape[-1], dtype=a.dtype), a.shape)
    for k in range(1, 19):
        term = (term @ a) / k
        total = total + term
    for _ in range(s):
        total = total @ total
    return total


@primitive("LinalgMatrixExpBackward0", dtypes=FLOAT, complex=True)
def matrix_exp(xp, a):
    """``exp(a)`` for each square matrix of ``a`` (``...xNxN``)."""
    return _kernel(xp, a)


def frechet(a, e):
    """``L(a, e)``: the derivative of ``matrix_exp`` at ``a`` in direction ``e``."""
    n = a.shape[-1]
    big = cat(cat(a, e, dim=a.ndim - 1), cat(zeros_like(a), a, dim=a.ndim - 1), dim=a.ndim - 2)
    return basic_index(matrix_exp(big), index=(Ellipsis, slice(0, n), slice(n, 2 * n)))


@matrix_exp.vjp("a", uses="a")
def matrix_exp_vjp(g, out, a):
    return frechet(transpose(a, dim0=a.ndim - 2, dim1=a.ndim - 1), g)


@matrix_exp.jvp("a")
def matrix_exp_jvp(t, out, a):
    return frechet(a, t)

"""``scipy.linalg`` with derivatives: SciPy's names, signatures and shapes (stacked
``...xNxN`` operands, as SciPy >= 1.15 batches them; ``b`` a vector when 1-d), computed by
the rule table (:mod:`tracegrad.rules.scipy_linalg`, :mod:`tracegrad.rules.decomp`), on
arrays, tape tracers and Tensors. Every function is differentiable in each of its array
operands, to any order.

Conventions that differ from SciPy's outputs (not its values):

* ``cho_factor`` returns the clean triangular factor (SciPy leaves the other triangle of
  its input there, "random data" in its words); ``cho_solve`` reads only the triangle, so
  either works with it.
* Functions that read one triangle (``cholesky``, ``cho_factor``, ``solve_triangular``,
  ``solve(assume_a="pos")``) put the gradient of a matrix operand on that triangle: the
  derivative of what they compute. For a symmetric parametrisation (``(X + X.T) / 2``)
  that is the same gradient as the symmetrised one.

``overwrite_*`` and ``check_finite`` are accepted and ignored (nothing is overwritten).
"""
from ..backend import cpu
from ..rules import decomp as D
from ..rules import scipy_linalg as L
from ..rules.reduce import vector_norm
from ..rules.shape import reshape

__all__ = [
    "cho_factor",
    "cho_solve",
    "cholesky",
    "det",
    "expm",
    "inv",
    "solve",
    "solve_banded",
    "solve_sylvester",
    "solve_triangular",
    "sqrtm",
]

_TRANS = {0: 0, 1: 1, 2: 2, "N": 0, "T": 1, "C": 2}


def _operand(x):
    """Array-likes (lists, numbers) as float arrays; arrays, tracers and Tensors as given."""
    return x if hasattr(x, "shape") and hasattr(x, "ndim") else cpu.asarray(x, dtype=float)


def _square(a, fn):
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"{fn}: expected square matrix (or a stack of them), got shape {tuple(a.shape)}")
    return a


def _solve_with(rule, b, **params):
    """``rule(b)`` for a matrix ``b`` or, as SciPy takes a 1-d ``b``, a vector."""
    b = _operand(b)
    if b.ndim != 1:
        return rule(b, **params)
    x = rule(reshape(b, shape=tuple(b.shape) + (1,)), **params)
    return reshape(x, shape=tuple(x.shape[:-1]))


def solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False, check_finite=True):
    """``op(a) x = b`` for the lower (``lower``) or upper triangle of ``a``, ``op`` chosen by
    ``trans`` (0/"N", 1/"T", 2/"C"); ones assumed on the diagonal if ``unit_diagonal``."""
    if trans not in _TRANS:
        raise ValueError(f"incorrect value for trans: {trans!r}")
    a = _square(_operand(a), "solve_triangular")
    return _solve_with(lambda m, **p: L.solve_triangular(a, m, **p), b, lower=bool(lower), trans=_TRANS[trans],
                       unit_diagonal=bool(unit_diagonal))


def solve_banded(l_and_u, ab, b, overwrite_ab=False, overwrite_b=False, check_finite=True):
    """``a x = b`` for the band matrix held in ``ab`` as SciPy lays it out,
    ``a[i, j] = ab[u + i - j, j]`` (one matrix: no batch dims)."""
    l, u = (int(v) for v in l_and_u)
    ab = _operand(ab)
    if ab.ndim != 2:
        raise NotImplementedError("tracegrad.scipy.linalg.solve_banded takes one band matrix (ab of 2 dims), "
                                  f"got ab of shape {tuple(ab.shape)}")
    if ab.shape[0] != l + u + 1:
        raise ValueError(f"invalid values for the number of lower and upper diagonals: l+u+1 ({l + u + 1}) "
                         f"does not equal ab.shape[0] ({ab.shape[0]})")
    return _solve_with(lambda m, **p: L.solve_banded(ab, m, **p), b, l=l, u=u)


def solve_sylvester(a, b, q):
    """``x`` with ``a x + x b = q``."""
    return L.solve_sylvester(_operand(a), _operand(b), _operand(q))


def sqrtm(A, disp=True, blocksize=64):
    """The principal matrix square root (complex when a real ``A`` has eigenvalues on the
    negative real axis). With ``disp=False``, SciPy's former ``(X, errest)`` pair, errest
    being ``||X X - A||_F^2 / ||A||_F``."""
    A = _square(_operand(A), "sqrtm")
    X = L.sqrtm(A)
    if disp:
        return X
    frobenius = (A.ndim - 2, A.ndim - 1)
    err = vector_norm(X @ X - A, dim=frobenius) ** 2 / vector_norm(A, dim=frobenius)
    return X, err


def expm(A):
    """The matrix exponential."""
    return L.expm(_square(_operand(A), "expm"))


def cholesky(a, lower=False, overwrite_a=False, check_finite=True):
    """The Cholesky factor of the Hermitian matrix in the upper (``lower``: lower) triangle
    of ``a``: ``U`` with ``a = U^H U``, or ``L`` with ``a = L L^H``."""
    return D.cholesky(_square(_operand(a), "cholesky"), upper=not lower)


def cho_factor(a, lower=False, overwrite_a=False, check_finite=True):
    """``(c, lower)`` for :func:`cho_solve`: ``c`` is :func:`cholesky`'s factor."""
    return cholesky(a, lower=lower), lower


def cho_solve(c_and_lower, b, overwrite_b=False, check_finite=True):
    """``a x = b`` from ``cho_factor(a)``: two triangular solves."""
    c, lower = c_and_lower
    c = _square(_operand(c), "cho_solve")
    if lower:  # a = L L^H
        y = solve_triangular(c, b, lower=True)
        return solve_triangular(c, y, lower=True, trans=2)
    y = solve_triangular(c, b, trans=2)  # a = U^H U
    return solve_triangular(c, y)


_TRIANGULAR = {"lower triangular": True, "upper triangular": False}


def solve(a, b, lower=False, overwrite_a=False, overwrite_b=False, check_finite=True, assume_a=None,
          transposed=False):
    """``a x = b`` (``a^T x = b`` if ``transposed``). ``assume_a`` "pos" solves with a
    Cholesky factor of the triangle ``lower`` names; "lower/upper triangular" with that
    triangle; anything else (general, symmetric, banded...) with an LU factorisation of
    the whole of ``a``, whose derivative is the same wherever the assumption holds."""
    a = _square(_operand(a), "solve")
    if assume_a in _TRIANGULAR:
        return solve_triangular(a, b, trans=1 if transposed else 0, lower=_TRIANGULAR[assume_a])
    if assume_a in ("pos", "positive definite") and not transposed:
        return cho_solve(cho_factor(a, lower=lower), b)
    if transposed:
        a = D.mT(a)
    return _solve_with(lambda m: D.solve(a, m), b)


def inv(a, overwrite_a=False, check_finite=True):
    return D.inv(_square(_operand(a), "inv"))


def det(a, overwrite_a=False, check_finite=True):
    return D.det(_square(_operand(a), "det"))

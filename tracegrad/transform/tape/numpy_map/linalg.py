"""``numpy.linalg`` on tracers: each function records the table's decomposition rules
(:mod:`tracegrad.rules.decomp`, :mod:`tracegrad.rules.spectral`) or the composites built
there from primitives (pinv, the matrix norms, matrix_power, multi_dot), with NumPy's
signatures and named results.

Where NumPy and the table differ: ``eig``/``eigvals`` always answer complex arrays (NumPy
gives real ones when every eigenvalue is real); ``svd(..., hermitian=True)`` and
``qr(..., mode="raw")`` are refused.
"""
import collections
import math

import numpy as np

from ....rules import decomp as D
from ....rules import matrix_functions as MF
from ....rules import spectral as SP
from ..tape import shape_of
from .base import P, is_traced, ndim, npdtype, register, unsupported

_NO_VALUE = getattr(np, "_NoValue", None)


# NumPy's named results (``np.linalg.slogdet(a).logabsdet``); the transforms take a
# namedtuple's fields as parts of the pytree (see transform/tree.py).
_RESULTS = {name: collections.namedtuple(name, fields) for name, fields in (
    ("SlogdetResult", ("sign", "logabsdet")), ("EighResult", ("eigenvalues", "eigenvectors")),
    ("EigResult", ("eigenvalues", "eigenvectors")), ("SVDResult", ("U", "S", "Vh")), ("QRResult", ("Q", "R")))}


def _operand(a):
    """A linalg operand: integers computed as float64 (as NumPy's linalg does); a list or
    tuple holding traced values stacked into one."""
    if isinstance(a, (list, tuple)):
        parts = [_operand(p) for p in a]
        if any(is_traced(p) for p in parts):
            return P.stack(*[P.cast(p, dtype=np.dtype(np.float64), src_dtype=npdtype(p))
                             if npdtype(p).kind in "biu" else p for p in parts], dim=0)
        a = np.asarray(a)
    if not is_traced(a) and not hasattr(a, "shape"):
        a = np.asarray(a)
    if npdtype(a).kind in "biu":
        return P.cast(a, dtype=np.dtype(np.float64), src_dtype=npdtype(a)) if is_traced(a) else a.astype(np.float64)
    return a


def _square(a):
    s = shape_of(a)
    if len(s) < 2:
        raise np.linalg.LinAlgError(f"{len(s)}-dimensional array given. Array must be at least two-dimensional")
    if s[-1] != s[-2]:
        raise np.linalg.LinAlgError("Last 2 dimensions of the array must be square")
    return a


@register(np.linalg.inv)
def _inv(a):
    return D.inv(_square(_operand(a)))


@register(np.linalg.det)
def _det(a):
    return D.det(_square(_operand(a)))


@register(np.linalg.slogdet)
def _slogdet(a):
    return _RESULTS["SlogdetResult"]._make(D.slogdet(_square(_operand(a))))


@register(np.linalg.solve)
def _solve(a, b):
    a, b = _square(_operand(a)), _operand(b)
    if ndim(b) == 1:  # NumPy 2: only a 1-D b is a vector
        x = D.solve(a, P.unsqueeze(b, dim=1))
        return P.reshape(x, shape=tuple(shape_of(x)[:-1]))
    return D.solve(a, b)


@register(np.linalg.cholesky)
def _cholesky(a, /, *, upper=False):
    return D.cholesky(_square(_operand(a)), upper=upper)


def _uplo(UPLO):
    if UPLO not in ("L", "U"):
        raise ValueError("UPLO argument must be 'L' or 'U'")
    return UPLO == "U"


@register(np.linalg.eigh)
def _eigh(a, UPLO="L"):
    return _RESULTS["EighResult"]._make(SP.eigh_as_lapack(_square(_operand(a)), upper=_uplo(UPLO)))


@register(np.linalg.eigvalsh)
def _eigvalsh(a, UPLO="L"):
    return SP.eigh(_square(_operand(a)), upper=_uplo(UPLO))[0]


@register(np.linalg.eig)
def _eig(a):
    return _RESULTS["EigResult"]._make(SP.eig(_square(_operand(a))))


@register(np.linalg.eigvals)
def _eigvals(a):
    return SP.eig(_square(_operand(a)))[0]


@register(np.linalg.svd)
def _svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    if hermitian:
        raise unsupported("numpy.linalg.svd(..., hermitian=True)")
    a = _matrix(_operand(a))
    if not compute_uv:
        return SP.singular_values(a)
    return _RESULTS["SVDResult"]._make(SP.svd_as_lapack(a, full_matrices=full_matrices))


def _matrix(a):
    if ndim(a) < 2:
        raise np.linalg.LinAlgError(f"{ndim(a)}-dimensional array given. Array must be at least two-dimensional")
    return a


@register(getattr(np.linalg, "svdvals", None))
def _svdvals(x, /):
    return SP.singular_values(_matrix(_operand(x)))


@register(np.linalg.pinv)
def _pinv(a, rcond=None, hermitian=False, *, rtol=_NO_VALUE):
    a = _matrix(_operand(a))
    if rcond is None:
        if rtol is _NO_VALUE:
            rcond = 1e-15
        elif rtol is None:
            rcond = max(shape_of(a)[-2:]) * np.finfo(npdtype(a)).eps
        else:
            rcond = rtol
    if not isinstance(rcond, (int, float)):
        raise unsupported("numpy.linalg.pinv with an array of rcond values")
    return MF.pinv(a, rtol=float(rcond), hermitian=hermitian)


@register(np.linalg.qr)
def _qr(a, mode="reduced"):
    a = _matrix(_operand(a))
    if mode not in ("reduced", "complete", "r"):
        raise unsupported(f"numpy.linalg.qr(..., mode={mode!r})")
    q, r = D.qr(a, mode="complete" if mode == "complete" else "reduced")
    return r if mode == "r" else _RESULTS["QRResult"](q, r)


@register(np.linalg.matrix_power)
def _matrix_power(a, n):
    if not isinstance(n, (int, np.integer)):
        raise TypeError("exponent must be an integer")
    return MF.matrix_power(_square(_operand(a)), int(n))


@register(np.linalg.multi_dot)
def _multi_dot(arrays, *, out=None):
    if out is not None:
        raise unsupported("numpy.linalg.multi_dot(..., out=...)")
    return MF.multi_dot([_operand(a) for a in arrays])


# -- norms ------------------------------------------------------------------------------------------

def _vector(x, ord, axis, keepdims):
    """A vector norm over ``axis`` (an int, a tuple, or None: every element)."""
    if isinstance(ord, str):
        raise ValueError(f"Invalid norm order '{ord}' for vectors")  # noqa: TRY004  (NumPy's type)
    n = ndim(x)
    dim = None if axis is None else tuple(sorted(a % n for a in (axis if isinstance(axis, tuple) else (axis,))))
    mag = P.abs(x) if npdtype(x).kind == "c" else x
    p = 2.0 if ord is None else float(ord)
    return P.vector_norm(mag, ord=int(p) if p.is_integer() else p, dim=dim, keepdim=keepdims)


@register(np.linalg.norm)
def _norm(x, ord=None, axis=None, keepdims=False):
    x = _operand(x)
    n = ndim(x)
    if isinstance(axis, list):
        axis = tuple(axis)
    if axis is None:
        if ord is None or (ord in ("f", "fro") and n == 2):
            return _vector(x, 2, None, keepdims) if not keepdims else \
                P.reshape(_vector(x, 2, None, False), shape=(1,) * n)
        if n == 1:
            return _vector(x, ord, 0, keepdims)
        if n == 2:
            return MF.matrix_norm(x, _matrix_ord(ord), (0, 1), keepdims)
        raise ValueError("Improper number of dimensions to norm.")
    if isinstance(axis, int) or (isinstance(axis, tuple) and len(axis) == 1):
        return _vector(x, ord, axis, keepdims)
    if isinstance(axis, tuple) and len(axis) == 2:
        return MF.matrix_norm(x, _matrix_ord(ord), axis, keepdims)
    raise ValueError("Improper number of dimensions to norm.")


def _matrix_ord(ord):
    if ord is None or ord == "f":
        return "fro"
    if ord in ("fro", "nuc") or ord in (1, -1, 2, -2, math.inf, -math.inf):
        return ord
    raise ValueError("Invalid norm order for matrices.")


@register(getattr(np.linalg, "vector_norm", None))
def _vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    x = _operand(x)
    if axis is None and keepdims:
        return P.reshape(_vector(x, ord, None, False), shape=(1,) * ndim(x))
    return _vector(x, ord, axis, keepdims)


@register(getattr(np.linalg, "matrix_norm", None))
def _matrix_norm(x, /, *, keepdims=False, ord="fro"):
    return MF.matrix_norm(_matrix(_operand(x)), _matrix_ord(ord), (-2, -1), keepdims)

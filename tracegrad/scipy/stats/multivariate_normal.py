"""``scipy.stats.multivariate_normal`` with derivatives in ``x``, ``mean`` and ``cov`` (to
any order): SciPy's signatures and shapes -- ``x`` of shape ``(..., dim)`` (a 1-d ``x`` is
one point, or ``dim == 1`` points), ``mean`` a vector, ``cov`` a matrix, a vector (its
diagonal) or a number -- and results with every dim of size 1 dropped.

* ``allow_singular=False``: a Cholesky factor of ``cov`` (which must be positive definite:
  NumPy's LinAlgError otherwise) whitens ``x - mean``; the gradient of ``cov`` lies on its
  lower triangle, the one the factorisation reads (for a symmetric parametrisation,
  ``(C + C.T) / 2``, that is the symmetric gradient).
* ``allow_singular=True`` and ``entropy``: SciPy's eigendecomposition, with eigenvalues
  below ``1e6 eps max|w|`` dropped (the pseudo-inverse and pseudo-determinant); points off
  the support get pdf 0 and logpdf -inf. Derivatives in ``cov`` go through the
  eigenvectors, so they are undefined (nan) where eigenvalues repeat; ``x`` and ``mean``
  keep theirs. Value checks (a negative eigenvalue) become guards on a tape.
"""
import math

from ...backend import cpu
from ...rules import arith as A
from ...rules import decomp as D
from ...rules import reduce as R
from ...rules import scipy_linalg as L
from ...rules import spectral as SP
from ...rules import unary as U
from ...rules.shape import reshape
from ._common import INF, operand, sampler, squeeze_output

__all__ = ["entropy", "logpdf", "pdf", "rvs"]

_LOG_2PI = math.log(2 * math.pi)
rvs = sampler("multivariate_normal")


def _array(v):
    return v if hasattr(v, "shape") and hasattr(v, "ndim") else cpu.asarray(v, dtype=float)


def _process_parameters(mean, cov):
    """SciPy's: the dimension (from mean, else cov), mean as a vector, cov as a matrix."""
    if mean is None:
        cov = 1.0 if cov is None else _array(operand(cov))
        dim = 1 if getattr(cov, "ndim", 0) < 2 else cov.shape[0]
        mean = cpu.zeros(dim)
    else:
        mean = _array(operand(mean))
        dim = math.prod(mean.shape)
    cov = _array(1.0 if cov is None else operand(cov))
    if dim == 1:
        mean, cov = reshape(mean, shape=(1,)), reshape(cov, shape=(1, 1))
    if mean.ndim != 1 or mean.shape[0] != dim:
        raise ValueError(f"Array 'mean' must be a vector of length {dim}.")
    if cov.ndim == 0:
        cov = cov * cpu.eye(dim)
    elif cov.ndim == 1:
        cov = D.diag_embed(cov)
    elif cov.ndim == 2 and tuple(cov.shape) != (dim, dim):
        if cov.shape[0] != cov.shape[1]:
            raise ValueError(f"Array 'cov' must be square if it is two dimensional, but cov.shape = "
                             f"{tuple(cov.shape)}.")
        raise ValueError(f"Dimension mismatch: array 'cov' is of shape {tuple(cov.shape)}, but 'mean' is a "
                         f"vector of length {dim}.")
    elif cov.ndim > 2:
        raise ValueError(f"Array 'cov' must be at most two-dimensional, but cov.ndim = {cov.ndim}")
    return dim, mean, cov


def _process_quantiles(x, dim):
    x = _array(operand(x))
    if x.ndim == 0:
        return reshape(x, shape=(1,))
    if x.ndim == 1:
        return reshape(x, shape=(x.shape[0], 1) if dim == 1 else (1, x.shape[0]))
    return x


def _cutoff(cov, spectrum):
    """SciPy's threshold below which eigenvalues count as zero."""
    dtype = str(getattr(cov, "npdtype", None) or getattr(cov, "dtype", ""))
    cond = 1e3 * 1.1920928955078125e-07 if dtype.endswith("float32") else 1e6 * 2.220446049250313e-16
    return cond * R.amax(U.abs(spectrum))


def _pseudo(cov):
    """(eigenvalues, eigenvectors, kept, cutoff) of the PSD matrix ``cov``, as SciPy's _PSD."""
    w, v = SP.eigh(cov)
    eps = _cutoff(cov, w)
    if bool(R.amin(w) < -eps):
        raise ValueError("The input matrix must be symmetric positive semidefinite.")
    return w, v, w > eps, eps


def _log_pdet(w, kept):
    """(rank, log of the pseudo-determinant) from the eigenvalues."""
    rank = R.sum(A.where(kept, 1.0, 0.0))
    return rank, R.sum(A.where(kept, U.log(A.where(kept, w, 1.0)), 0.0))


def _logpdf_singular(dev, cov):
    w, v, kept, eps = _pseudo(cov)
    rank, log_pdet = _log_pdet(w, kept)
    whiten = v * U.sqrt(A.where(kept, 1.0 / A.where(kept, w, 1.0), 0.0))
    last = (dev.ndim - 1,)
    maha = R.sum((dev @ whiten) ** 2, dim=last)
    residual = R.vector_norm(dev @ (v * A.where(kept, 0.0, 1.0)), dim=last)
    out = -0.5 * (rank * _LOG_2PI + log_pdet + maha)
    return A.where(residual < 1e3 * eps, out, -INF)


def _logpdf_definite(dev, cov, dim):
    low = D.cholesky(cov)
    diagonal = D.diag_part(low)
    if bool(R.amin(diagonal) ** 2 <= _cutoff(cov, diagonal ** 2)):
        raise cpu.linalg.LinAlgError("When `allow_singular is False`, the input matrix must be symmetric "
                                     "positive definite.")
    batch = tuple(dev.shape[:-1])
    flat = reshape(dev, shape=(math.prod(batch), dim))
    z = L.solve_triangular(low, D.mT(flat), lower=True)
    maha = reshape(R.sum(z * z, dim=(0,)), shape=batch)
    return -0.5 * (dim * _LOG_2PI + 2 * R.sum(U.log(diagonal)) + maha)


def logpdf(x, mean=None, cov=1, allow_singular=False):
    dim, mean, cov = _process_parameters(mean, cov)
    dev = _process_quantiles(x, dim) - mean
    out = _logpdf_singular(dev, cov) if allow_singular else _logpdf_definite(dev, cov, dim)
    return squeeze_output(out)


def pdf(x, mean=None, cov=1, allow_singular=False):
    return U.exp(logpdf(x, mean, cov, allow_singular))


def entropy(mean=None, cov=1):
    """``(rank (log 2 pi + 1) + log pdet(cov)) / 2`` (SciPy's: singular ``cov`` allowed)."""
    _, mean, cov = _process_parameters(mean, cov)
    w, _, kept, _ = _pseudo(cov)
    rank, log_pdet = _log_pdet(w, kept)
    return 0.5 * (rank * (_LOG_2PI + 1) + log_pdet)

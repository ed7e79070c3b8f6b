"""The multivariate normal distribution, given its covariance, its precision or a lower
Cholesky factor of its covariance.

Everything is computed from one lower-triangular factor ``L`` (``covariance = L L^T``):
draws are ``loc + L eps``, densities need ``|L^-1 (x - loc)|^2`` (one triangular solve) and
``log det L`` (the log of its diagonal). The factor is kept at the parameters' own batch
shape (``_unbroadcasted_scale_tril``) so that many draws scored at once share it.
"""
import math

import tracegrad

from ..runtime.tensor import Size
from . import constraints
from .distribution import Distribution
from .kl import register_kl
from .utils import _standard_normal, lazy_property

__all__ = ["MultivariateNormal"]


def _batch_mv(bmat, bvec):
    """Matrix-vector products over broadcast batch dims: ``bmat @ bvec``."""
    return tracegrad.matmul(bmat, bvec.unsqueeze(-1)).squeeze(-1)


def _batch_mahalanobis(bL, bx):
    """``x^T (L L^T)^-1 x`` per vector of ``bx``, as ``|L^-1 x|^2``.

    ``bL``'s batch dims broadcast against the rightmost batch dims of ``bx``. Rather than
    copying each matrix once per vector, the vectors that share a matrix (``bx``'s extra
    leading dims, and the dims where ``bL`` has size 1) become the columns of one
    right-hand side, so there is a single triangular solve per distinct matrix.
    """
    n = bx.shape[-1]
    shape = tuple(tracegrad.broadcast_shapes(bx.shape[:-1], bL.shape[:-2]))
    bx = bx.expand(shape + (n,))
    outer = len(shape) - (bL.dim() - 2)
    keep = [outer + i for i, size in enumerate(bL.shape[:-2]) if size != 1]  # one matrix each
    cols = [d for d in range(len(shape)) if d not in keep]                   # vectors sharing one
    order = keep + cols
    b, m = math.prod(shape[d] for d in keep), math.prod(shape[d] for d in cols)
    rhs = bx.permute(order + [len(shape)]).reshape(b, m, n).mT              # b x n x m
    solved = tracegrad.linalg.solve_triangular(bL.reshape(b, n, n), rhs, upper=False)
    squares = solved.pow(2).sum(-2).reshape(tuple(shape[d] for d in order))
    return squares.permute([order.index(d) for d in range(len(shape))])


def _batch_trace_XXT(bmat):
    """``trace(X X^T)`` per matrix: the sum of its squared entries."""
    return bmat.pow(2).sum((-2, -1))


def _half_log_det(scale_tril):
    """``log det L``, half the log determinant of the covariance ``L L^T``."""
    return scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)


def _precision_to_scale_tril(P):
    """The lower Cholesky factor of ``P^-1`` without inverting ``P``: the Cholesky factor
    of ``P`` with rows and columns reversed is ``U`` with ``P = U U^T``, ``U`` upper
    triangular, so ``P^-1 = (U^-T)(U^-T)^T`` and ``U^-T`` is lower triangular."""
    U = tracegrad.linalg.cholesky(tracegrad.flip(P, (-2, -1))).flip((-2, -1))
    eye = tracegrad.eye(P.shape[-1], dtype=P.dtype, device=P.device)
    return tracegrad.linalg.solve_triangular(U.mT, eye, upper=False)


class MultivariateNormal(Distribution):
    """Multivariate normal distribution with mean ``loc`` and exactly one of
    ``covariance_matrix``, ``precision_matrix`` (both positive definite) or
    ``scale_tril`` (lower triangular, positive diagonal, ``covariance = L L^T``). Giving
    ``scale_tril`` is cheapest: the other two are only used to compute it."""
    arg_constraints = {"loc": constraints.real_vector,
                       "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite,
                       "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None, validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        given = {"scale_tril": scale_tril, "covariance_matrix": covariance_matrix,
                 "precision_matrix": precision_matrix}
        given = {k: v for k, v in given.items() if v is not None}
        if len(given) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        (name, matrix), = given.items()
        if matrix.dim() < 2:
            what = "scale_tril matrix" if name == "scale_tril" else name
            raise ValueError(f"{what} must be at least two-dimensional, with optional leading batch dimensions")
        batch_shape = tracegrad.broadcast_shapes(matrix.shape[:-2], loc.shape[:-1])
        setattr(self, name, matrix.expand(tuple(batch_shape) + (-1, -1)))
        self.loc = loc.expand(tuple(batch_shape) + (-1,))
        super().__init__(batch_shape, self.loc.shape[-1:], validate_args=validate_args)
        if name == "scale_tril":
            self._unbroadcasted_scale_tril = matrix
        elif name == "covariance_matrix":
            self._unbroadcasted_scale_tril = tracegrad.linalg.cholesky(matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(matrix)

    def expand(self, batch_shape, _instance=None):
        n = self._event_shape[0]
        new = self._expanded(MultivariateNormal, batch_shape, _instance,
                             {"loc": (n,), "covariance_matrix": (n, n), "precision_matrix": (n, n),
                              "scale_tril": (n, n)})
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        return new

    def _matrix_shape(self):
        return self._batch_shape + self._event_shape + self._event_shape

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return tracegrad.matmul(L, L.mT).expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self):
        return tracegrad.cholesky_inverse(self._unbroadcasted_scale_tril).expand(self._matrix_shape())

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        """The covariance's diagonal: the squared row norms of ``L``."""
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(self._batch_shape + self._event_shape)

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        eps = _standard_normal(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + _batch_mv(self._unbroadcasted_scale_tril, eps)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        M = _batch_mahalanobis(self._unbroadcasted_scale_tril, value - self.loc)
        log_2pi = self._event_shape[0] * math.log(2 * math.pi)
        return -0.5 * (log_2pi + M) - _half_log_det(self._unbroadcasted_scale_tril)

    def entropy(self):
        H = 0.5 * self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + _half_log_det(self._unbroadcasted_scale_tril)
        return H.expand(self._batch_shape) if len(self._batch_shape) else H


def _check_same_event(p, q, what):
    if p.event_shape != q.event_shape:
        raise ValueError(f"KL-divergence between two {what} with different event shapes cannot be computed")


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_multivariatenormal_multivariatenormal(p, q):
    """``log det Lq - log det Lp + (|Lq^-1 Lp|_F^2 + |Lq^-1 (mu_q - mu_p)|^2 - n) / 2``."""
    _check_same_event(p, q, "Multivariate Normals")
    n = p.event_shape[0]
    Lp, Lq = p._unbroadcasted_scale_tril, q._unbroadcasted_scale_tril
    shape = tuple(tracegrad.broadcast_shapes(Lq.shape[:-2], Lp.shape[:-2])) + (n, n)
    trace = _batch_trace_XXT(tracegrad.linalg.solve_triangular(Lq.expand(shape), Lp.expand(shape), upper=False))
    return _half_log_det(Lq) - _half_log_det(Lp) + 0.5 * (trace + _batch_mahalanobis(Lq, q.loc - p.loc) - n)

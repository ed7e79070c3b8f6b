"""The multivariate normal distribution whose covariance is low rank plus diagonal:
``W W^T + D`` with ``W`` (``cov_factor``) of shape ``n x m`` and ``D`` (``cov_diag``) a
positive diagonal.

With ``m << n`` nothing of size ``n x n`` is ever factored: the Woodbury identity and the
matrix determinant lemma reduce the inverse and the determinant to the ``m x m``
"capacitance" ``C = I + W^T D^-1 W``, of which only the Cholesky factor is kept.
"""
import math

import tracegrad

from ..runtime.tensor import Size
from . import constraints
from .distribution import Distribution
from .kl import register_kl
from .multivariate_normal import (
    MultivariateNormal,
    _batch_mahalanobis,
    _batch_mv,
    _batch_trace_XXT,
    _check_same_event,
    _half_log_det,
)
from .utils import _standard_normal, lazy_property

__all__ = ["LowRankMultivariateNormal"]


def _eye_like(mat):
    return tracegrad.eye(mat.shape[-1], dtype=mat.dtype, device=mat.device)


def _batch_capacitance_tril(W, D):
    """The lower Cholesky factor of ``I + W^T D^-1 W``."""
    K = tracegrad.matmul(W.mT / D.unsqueeze(-2), W)
    return tracegrad.linalg.cholesky(K + _eye_like(K))


def _batch_lowrank_logdet(W, D, capacitance_tril):
    """``log det(W W^T + D) = log det C + log det D`` (the matrix determinant lemma)."""
    return 2 * _half_log_det(capacitance_tril) + D.log().sum(-1)


def _batch_lowrank_mahalanobis(W, D, x, capacitance_tril):
    """``x^T (W W^T + D)^-1 x`` by Woodbury: ``(W W^T + D)^-1 = D^-1 - D^-1 W C^-1 W^T D^-1``,
    so it is ``x^T D^-1 x`` less the Mahalanobis norm of ``W^T D^-1 x`` under ``C``."""
    Wt_Dinv_x = _batch_mv(W.mT / D.unsqueeze(-2), x)
    return (x.pow(2) / D).sum(-1) - _batch_mahalanobis(capacitance_tril, Wt_Dinv_x)


def _woodbury_factor(W, D, capacitance_tril):
    """``A = C_L^-1 W^T D^-1``, so that ``(W W^T + D)^-1 = D^-1 - A^T A``."""
    return tracegrad.linalg.solve_triangular(capacitance_tril, W.mT / D.unsqueeze(-2), upper=False)


class LowRankMultivariateNormal(Distribution):
    """Multivariate normal distribution with mean ``loc`` (``batch_shape + (n,)``) and
    covariance ``cov_factor @ cov_factor.mT + diag(cov_diag)``, ``cov_factor`` of shape
    ``batch_shape + (n, m)`` and ``cov_diag`` (positive) of shape ``batch_shape + (n,)``."""
    arg_constraints = {"loc": constraints.real_vector,
                       "cov_factor": constraints.independent(constraints.real, 2),
                       "cov_diag": constraints.independent(constraints.positive, 1)}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, cov_factor, cov_diag, validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        event_shape = loc.shape[-1:]
        if cov_factor.dim() < 2:
            raise ValueError("cov_factor must be at least two-dimensional, with optional leading batch dimensions")
        if cov_factor.shape[-2:-1] != event_shape:
            raise ValueError(f"cov_factor must be a batch of matrices with shape {event_shape[0]} x m")
        if cov_diag.shape[-1:] != event_shape:
            raise ValueError(f"cov_diag must be a batch of vectors with shape {event_shape}")
        try:
            loc_, self.cov_factor, cov_diag_ = tracegrad.broadcast_tensors(loc.unsqueeze(-1), cov_factor,
                                                                           cov_diag.unsqueeze(-1))
        except RuntimeError as e:
            raise ValueError(f"Incompatible batch shapes: loc {loc.shape}, cov_factor {cov_factor.shape}, "
                             f"cov_diag {cov_diag.shape}") from e
        self.loc, self.cov_diag = loc_[..., 0], cov_diag_[..., 0]
        self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag = cov_factor, cov_diag
        super().__init__(self.loc.shape[:-1], event_shape, validate_args=validate_args)
        # (after validation: a negative cov_diag is reported as such, not as a failed Cholesky)
        self._capacitance_tril = _batch_capacitance_tril(cov_factor, cov_diag)

    def expand(self, batch_shape, _instance=None):
        n, m = self._event_shape[0], self.cov_factor.shape[-1]
        new = self._expanded(LowRankMultivariateNormal, batch_shape, _instance,
                             {"loc": (n,), "cov_diag": (n,), "cov_factor": (n, m)})
        new._unbroadcasted_cov_factor = self._unbroadcasted_cov_factor
        new._unbroadcasted_cov_diag = self._unbroadcasted_cov_diag
        new._capacitance_tril = self._capacitance_tril
        return new

    def _matrix_shape(self):
        return self._batch_shape + self._event_shape + self._event_shape

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @lazy_property
    def variance(self):
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        return (W.pow(2).sum(-1) + D).expand(self._batch_shape + self._event_shape)

    @lazy_property
    def scale_tril(self):
        """``D^1/2 chol(I + D^-1/2 W W^T D^-1/2)``: the matrix factored has eigenvalues of at
        least 1, so its Cholesky factorization is well conditioned."""
        sqrt_D = self._unbroadcasted_cov_diag.sqrt().unsqueeze(-1)
        scaled_W = self._unbroadcasted_cov_factor / sqrt_D
        K = tracegrad.matmul(scaled_W, scaled_W.mT)
        return (sqrt_D * tracegrad.linalg.cholesky(K + _eye_like(K))).expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self):
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        return (tracegrad.matmul(W, W.mT) + tracegrad.diag_embed(D)).expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self):
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        A = _woodbury_factor(W, D, self._capacitance_tril)
        return (tracegrad.diag_embed(D.reciprocal()) - A.mT @ A).expand(self._matrix_shape())

    def rsample(self, sample_shape=Size()):
        """``loc + W eps_m + D^1/2 eps_n``: two independent standard normal draws."""
        shape = self._extended_shape(sample_shape)
        options = {"dtype": self.loc.dtype, "device": self.loc.device}
        eps_W = _standard_normal(shape[:-1] + self.cov_factor.shape[-1:], **options)
        eps_D = _standard_normal(shape, **options)
        return (self.loc + _batch_mv(self._unbroadcasted_cov_factor, eps_W)
                + self._unbroadcasted_cov_diag.sqrt() * eps_D)

    def _log_det(self):
        return _batch_lowrank_logdet(self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag,
                                     self._capacitance_tril)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        M = _batch_lowrank_mahalanobis(self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag,
                                       value - self.loc, self._capacitance_tril)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + self._log_det() + M)

    def entropy(self):
        H = 0.5 * (self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + self._log_det())
        return H.expand(self._batch_shape) if len(self._batch_shape) else H


# KL(p || q) = (log det Sq - log det Sp + trace(Sq^-1 Sp) + |mu_q - mu_p|^2_Sq - n) / 2; each
# pair below computes the trace with whichever factorization q offers.

def _lowrank_mahalanobis_of(q, x):
    return _batch_lowrank_mahalanobis(q._unbroadcasted_cov_factor, q._unbroadcasted_cov_diag, x,
                                      q._capacitance_tril)


@register_kl(LowRankMultivariateNormal, LowRankMultivariateNormal)
def _kl_lowrankmultivariatenormal_lowrankmultivariatenormal(p, q):
    """``trace((qD^-1 - A^T A)(pD + pW pW^T))`` expanded into four sums of squares."""
    _check_same_event(p, q, "Low Rank Multivariate Normals")
    pW, pD = p._unbroadcasted_cov_factor, p._unbroadcasted_cov_diag
    qW, qD = q._unbroadcasted_cov_factor, q._unbroadcasted_cov_diag
    A = _woodbury_factor(qW, qD, q._capacitance_tril)
    trace = ((pD / qD).sum(-1) + _batch_trace_XXT(pW * qD.rsqrt().unsqueeze(-1))
             - _batch_trace_XXT(A * pD.sqrt().unsqueeze(-2)) - _batch_trace_XXT(A.matmul(pW)))
    log_det = q._log_det() - p._log_det()
    return 0.5 * (log_det + trace + _lowrank_mahalanobis_of(q, q.loc - p.loc) - p.event_shape[0])


@register_kl(MultivariateNormal, LowRankMultivariateNormal)
def _kl_multivariatenormal_lowrankmultivariatenormal(p, q):
    """``trace((qD^-1 - A^T A) Lp Lp^T)`` as two sums of squares."""
    _check_same_event(p, q, "(Low Rank) Multivariate Normals")
    Lp = p._unbroadcasted_scale_tril
    qW, qD = q._unbroadcasted_cov_factor, q._unbroadcasted_cov_diag
    A = _woodbury_factor(qW, qD, q._capacitance_tril)
    trace = _batch_trace_XXT(Lp * qD.rsqrt().unsqueeze(-1)) - _batch_trace_XXT(A.matmul(Lp))
    log_det = q._log_det() - 2 * _half_log_det(Lp)
    return 0.5 * (log_det + trace + _lowrank_mahalanobis_of(q, q.loc - p.loc) - p.event_shape[0])


@register_kl(LowRankMultivariateNormal, MultivariateNormal)
def _kl_lowrankmultivariatenormal_multivariatenormal(p, q):
    """``trace(Lq^-T Lq^-1 (pW pW^T + pD)) = |Lq^-1 pW|^2 + |Lq^-1 pD^1/2|^2``."""
    _check_same_event(p, q, "(Low Rank) Multivariate Normals")
    n = p.event_shape[0]
    Lq = q._unbroadcasted_scale_tril
    pW, pD = p._unbroadcasted_cov_factor, p._unbroadcasted_cov_diag
    batch = tuple(tracegrad.broadcast_shapes(Lq.shape[:-2], pW.shape[:-2]))
    Lq = Lq.expand(batch + (n, n))

    def solved_squares(rhs):
        return _batch_trace_XXT(tracegrad.linalg.solve_triangular(Lq, rhs, upper=False))
    trace = (solved_squares(pW.expand(batch + (n, pW.shape[-1])))
             + solved_squares(tracegrad.diag_embed(pD.sqrt()).expand(batch + (n, n))))
    log_det = 2 * _half_log_det(q._unbroadcasted_scale_tril) - p._log_det()
    return 0.5 * (log_det + trace + _batch_mahalanobis(q._unbroadcasted_scale_tril, q.loc - p.loc) - n)

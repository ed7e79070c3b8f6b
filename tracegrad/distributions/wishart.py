"""The Wishart distribution: the law of ``sum_i x_i x_i^T`` for ``df`` independent
normal vectors of covariance ``Sigma`` (a scatter matrix), extended to real ``df >
p - 1``. Given ``Sigma``, its inverse or its lower Cholesky factor ``L``; everything is
computed from ``L``, kept at the parameter's own batch shape as MultivariateNormal does.

Draws use Bartlett's decomposition: ``L A A^T L^T`` with ``A`` lower triangular,
``A_ii = sqrt(chi2(df - i))`` and standard normals below the diagonal, so gradients
reach ``L`` directly and ``df`` through the chi-squares' implicit gradients.
"""
import math
import numbers
import warnings

import tracegrad

from ..runtime.tensor import Size
from ..runtime.type_info import finfo
from . import constraints
from .chi2 import Chi2
from .exp_family import ExponentialFamily
from .kl import register_kl
from .multivariate_normal import _precision_to_scale_tril
from .utils import lazy_property

__all__ = ["Wishart"]

_LOG_2 = math.log(2)


def _mvdigamma(x, p):
    """The multivariate digamma ``sum_{i<p} psi(x - i/2)``, the derivative of
    ``mvlgamma(x, p)``; defined for x > (p - 1) / 2."""
    if not bool(x.gt((p - 1) / 2).all()):
        raise AssertionError("Wrong domain for multivariate digamma function.")
    halves = tracegrad.arange(p, dtype=x.dtype, device=x.device) / 2
    return tracegrad.digamma(x.unsqueeze(-1) - halves).sum(-1)


def _bartlett_chi2(df, p, batch_shape):
    """The chi-squares of Bartlett's diagonal: ``df - i`` degrees of freedom for row i."""
    rows = tracegrad.arange(p, dtype=df.dtype, device=df.device)
    return Chi2(df.unsqueeze(-1) - rows.expand(tuple(batch_shape) + (-1,)))


def _half_log_det(scale_tril):
    return scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)


class Wishart(ExponentialFamily):
    """Wishart distribution over p x p positive definite matrices with ``df`` degrees of
    freedom (``df > p - 1``, a number or a Tensor broadcasting with the batch) and exactly
    one of ``covariance_matrix``, ``precision_matrix`` or ``scale_tril`` (cheapest: the
    others are only used to compute it). The mean is ``df * covariance_matrix``."""
    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def arg_constraints(self):
        return {"covariance_matrix": constraints.positive_definite,
                "precision_matrix": constraints.positive_definite,
                "scale_tril": constraints.lower_cholesky,
                "df": constraints.greater_than(self.event_shape[-1] - 1)}

    def __init__(self, df, covariance_matrix=None, precision_matrix=None, scale_tril=None, validate_args=None):
        given = {"covariance_matrix": covariance_matrix, "precision_matrix": precision_matrix,
                 "scale_tril": scale_tril}
        given = {k: v for k, v in given.items() if v is not None}
        if len(given) != 1:
            raise AssertionError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        (name, matrix), = given.items()
        if matrix.dim() < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional leading batch dimensions")
        if isinstance(df, numbers.Number):
            batch_shape = Size(matrix.shape[:-2])
            self.df = tracegrad.tensor(df, dtype=matrix.dtype, device=matrix.device)
        else:
            batch_shape = Size(tracegrad.broadcast_shapes(matrix.shape[:-2], df.shape))
            self.df = df.expand(batch_shape)
        event_shape = Size(matrix.shape[-2:])
        p = event_shape[-1]
        if bool(self.df.le(p - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = {p - 1}.")
        setattr(self, name, matrix.expand(batch_shape + (-1, -1)))
        if bool(self.df.lt(p).any()):
            warnings.warn("Low df values detected. Singular samples are highly likely to occur for "
                          "ndim - 1 < df < ndim.", stacklevel=2)
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        if name == "scale_tril":
            self._unbroadcasted_scale_tril = matrix
        elif name == "covariance_matrix":
            self._unbroadcasted_scale_tril = tracegrad.linalg.cholesky(matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(matrix)
        self._dist_chi2 = _bartlett_chi2(self.df, p, batch_shape)

    def expand(self, batch_shape, _instance=None):
        matrix = tuple(self._event_shape)
        new = self._expanded(Wishart, batch_shape, _instance,
                             {"df": (), "covariance_matrix": matrix, "precision_matrix": matrix, "scale_tril": matrix})
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        new._dist_chi2 = _bartlett_chi2(new.df, matrix[-1], new.batch_shape)
        return new

    def _matrix_shape(self):
        return self._batch_shape + self._event_shape

    def _df_matrix(self):
        """``df`` shaped to scale a batch of matrices."""
        return self.df.view(self._batch_shape + (1, 1))

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return (L @ L.mT).expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self):
        L = self._unbroadcasted_scale_tril
        eye = tracegrad.eye(self._event_shape[-1], dtype=L.dtype, device=L.device)
        return tracegrad.cholesky_solve(eye, L).expand(self._matrix_shape())

    @property
    def mean(self):
        return self._df_matrix() * self.covariance_matrix

    @property
    def mode(self):
        """``(df - p - 1) Sigma``; NaN where df <= p + 1 (no interior mode)."""
        factor = self.df - self._event_shape[-1] - 1
        factor = tracegrad.where(factor > 0, factor, math.nan)
        return factor.view(self._batch_shape + (1, 1)) * self.covariance_matrix

    @property
    def variance(self):
        """``Var(X_ij) = df (Sigma_ij^2 + Sigma_ii Sigma_jj)``."""
        cov = self.covariance_matrix
        diag = cov.diagonal(dim1=-2, dim2=-1)
        return self._df_matrix() * (cov.pow(2) + diag.unsqueeze(-1) * diag.unsqueeze(-2))

    def _bartlett_sampling(self, sample_shape):
        p = self._event_shape[-1]
        diag = self._dist_chi2.rsample(sample_shape).sqrt()
        diag = diag.clamp(min=finfo(diag.dtype).eps)
        below = tracegrad.randn(tuple(diag.shape) + (p,), dtype=diag.dtype, device=diag.device).tril(-1)
        chol = self._unbroadcasted_scale_tril @ (below + tracegrad.diag_embed(diag))
        return chol @ chol.mT

    def _singular(self, sample):
        """Per index of the sample shape: whether any matrix of the batch there is not
        (numerically) positive definite."""
        bad = ~self.support.check(sample)
        return bad.reshape(tuple(bad.shape[:bad.dim() - len(self._batch_shape)]) + (-1,)).any(-1)

    def rsample(self, sample_shape=Size(), max_try_correction=None):
        """Bartlett draws. A draw that came out singular (possible in finite precision,
        likely for df < p) is redrawn, with a warning, up to ``max_try_correction``
        times (10 by default) for the whole batch at its sample index; one still
        singular after that is returned as it is (its ``log_prob`` may be -inf)."""
        max_try_correction = 10 if max_try_correction is None else max_try_correction
        sample_shape = Size(sample_shape)
        sample = self._bartlett_sampling(sample_shape)
        singular = self._singular(sample)
        if bool(singular.any()):
            warnings.warn("Singular sample detected.", stacklevel=2)
            for _ in range(max_try_correction):
                mask = singular.reshape(tuple(sample_shape) + (1,) * (len(self._batch_shape) + 2))
                sample = tracegrad.where(mask, self._bartlett_sampling(sample_shape), sample)
                singular = self._singular(sample)
                if not bool(singular.any()):
                    break
        return sample

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        nu, p = self.df, self._event_shape[-1]
        L = self._unbroadcasted_scale_tril
        trace = tracegrad.cholesky_solve(value, L).diagonal(dim1=-2, dim2=-1).sum(-1)  # tr(Sigma^-1 X)
        return (-nu * (p * _LOG_2 / 2 + _half_log_det(L)) - tracegrad.mvlgamma(nu / 2, p=p)
                + (nu - p - 1) / 2 * tracegrad.linalg.slogdet(value).logabsdet - trace / 2)

    def entropy(self):
        nu, p = self.df, self._event_shape[-1]
        return ((p + 1) * (p * _LOG_2 / 2 + _half_log_det(self._unbroadcasted_scale_tril))
                + tracegrad.mvlgamma(nu / 2, p=p) - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p=p) + nu * p / 2)

    @property
    def _natural_params(self):
        return -self.precision_matrix / 2, (self.df - self._event_shape[-1] - 1) / 2

    def _log_normalizer(self, x, y):
        p = self._event_shape[-1]
        shape = y + (p + 1) / 2
        return shape * (-tracegrad.linalg.slogdet(-2 * x).logabsdet + _LOG_2 * p) + tracegrad.mvlgamma(shape, p=p)


@register_kl(Wishart, Wishart)
def _kl_wishart_wishart(p, q):
    """In closed form: ``nu_q/2 log(|Sigma_q| / |Sigma_p|) + nu_p/2 (tr(Sigma_q^-1
    Sigma_p) - d) + log Gamma_d(nu_q/2) - log Gamma_d(nu_p/2) + (nu_p - nu_q)/2
    psi_d(nu_p/2)``, the trace as ``|L_q^-1 L_p|^2``. (PyTorch has no such pair and goes
    through the exponential-family Bregman form, whose sums mix a batch of Wisharts'
    df terms together and give no gradient to p's parameters.)"""
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two Wisharts with different event shapes cannot be computed")
    d = p.event_shape[-1]
    lp, lq = p._unbroadcasted_scale_tril, q._unbroadcasted_scale_tril
    shape = tracegrad.broadcast_shapes(lp.shape[:-2], lq.shape[:-2])
    lp, lq = lp.expand(tuple(shape) + (d, d)), lq.expand(tuple(shape) + (d, d))
    trace = tracegrad.linalg.solve_triangular(lq, lp, upper=False).pow(2).sum((-2, -1))
    nu_p, nu_q = p.df, q.df
    return (nu_q * (_half_log_det(lq) - _half_log_det(lp)) + nu_p / 2 * (trace - d)
            + tracegrad.mvlgamma(nu_q / 2, p=d) - tracegrad.mvlgamma(nu_p / 2, p=d)
            + (nu_p - nu_q) / 2 * _mvdigamma(nu_p / 2, p=d))

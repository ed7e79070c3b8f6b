"""Transforms of whole vectors and matrices (see :mod:`.transforms`): onto the simplex
(softmax, stick-breaking), onto Cholesky factors and positive-definite matrices,
piecewise along a dim (cat, stack), and through a distribution's CDF."""
import math

import tracegrad

from ..runtime.type_info import finfo
from . import constraints
from ._transform_core import (
    Transform,
    _clipped_sigmoid,
    _pad_last,
    _Parameterless,
    _softplus,
)
from .utils import _sum_rightmost, lazy_property, tril_matrix_to_vec, vec_to_tril_matrix

__all__ = ["CatTransform", "CorrCholeskyTransform", "CumulativeDistributionTransform", "LowerCholeskyTransform",
           "PositiveDefiniteTransform", "SoftmaxTransform", "StackTransform", "StickBreakingTransform"]


class CorrCholeskyTransform(Transform):
    """A vector of ``D(D-1)/2`` reals to the Cholesky factor of a D x D correlation
    matrix (lower triangular, positive diagonal, rows of unit norm): each row is a
    signed stick-breaking of ``tanh`` of its entries."""
    domain, codomain, bijective = constraints.real_vector, constraints.corr_cholesky, True

    def _call(self, x):
        eps = finfo(x.dtype).eps
        r = vec_to_tril_matrix(x.tanh().clamp(min=-1 + eps, max=1 - eps), diag=-1)
        # Row i: y_ij = r_ij * prod_{k<j} sqrt(1 - r_ik^2), so each row has unit norm.
        remaining = (1 - r ** 2).sqrt().cumprod(-1)
        r = r + tracegrad.eye(r.shape[-1], dtype=r.dtype, device=r.device)
        return r * _pad_last(remaining[..., :-1], 1, 0, 1)

    def _inverse(self, y):
        left = _pad_last((1 - tracegrad.cumsum(y * y, dim=-1))[..., :-1], 1, 0, 1)
        t = tril_matrix_to_vec(y, diag=-1) / tril_matrix_to_vec(left, diag=-1).sqrt()
        return (t.log1p() - t.neg().log1p()) / 2  # atanh

    def log_abs_det_jacobian(self, x, y, intermediates=None):
        # Of x and the flattened strict lower triangle of y (the dims differ from D x D).
        left = tril_matrix_to_vec(1 - (y * y).cumsum(dim=-1), diag=-2)
        stick_breaking = 0.5 * left.log().sum(-1)
        tanh = -2 * (x + _softplus(-2 * x) - math.log(2.0)).sum(dim=-1)
        return stick_breaking + tanh

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        n = shape[-1]
        d = round((0.25 + 2 * n) ** 0.5 + 0.5)
        if d * (d - 1) // 2 != n:
            raise ValueError("Input is not a flattened lower-diagonal number")
        return shape[:-1] + (d, d)

    def inverse_shape(self, shape):
        if len(shape) < 2:
            raise ValueError("Too few dimensions on input")
        if shape[-2] != shape[-1]:
            raise ValueError("Input is not square")
        return shape[:-2] + (shape[-1] * (shape[-1] - 1) // 2,)


def _at_least_1d(shape):
    if len(shape) < 1:
        raise ValueError("Too few dimensions on input")
    return shape


class SoftmaxTransform(_Parameterless):
    """Reals to the simplex by ``exp`` and normalizing. Not bijective (adding a constant
    changes nothing; the inverse is ``log``), but nearly coordinate-wise: good for
    optimizing, not for HMC."""
    domain, codomain = constraints.real_vector, constraints.simplex

    def _call(self, x):
        probs = (x - x.max(-1, True)[0]).exp()
        return probs / probs.sum(-1, True)

    def _inverse(self, y):
        return y.log()

    def forward_shape(self, shape):
        return _at_least_1d(shape)

    inverse_shape = forward_shape


class StickBreakingTransform(_Parameterless):
    """K reals to the simplex of K + 1 entries: each entry takes a sigmoid's share of
    the stick left over by the entries before it (offset so that x = 0 maps to the
    centre). Bijective, so fit for HMC; it mixes coordinates."""
    domain, codomain, bijective = constraints.real_vector, constraints.simplex, True

    @staticmethod
    def _offset(x):
        return x.shape[-1] + 1 - x.new_ones(x.shape[-1]).cumsum(-1)

    def _call(self, x):
        z = _clipped_sigmoid(x - self._offset(x).log())
        return _pad_last(z, 0, 1, 1) * _pad_last((1 - z).cumprod(-1), 1, 0, 1)

    def _inverse(self, y):
        y_crop = y[..., :-1]
        offset = y.shape[-1] - y.new_ones(y_crop.shape[-1]).cumsum(-1)
        # (the stick left can round to <= 0 when y[..., -1] ~ 0: keep its log finite)
        left = (1 - y_crop.cumsum(-1)).clamp(min=finfo(y.dtype).tiny)
        return y_crop.log() - left.log() + offset.log()

    def log_abs_det_jacobian(self, x, y):
        x = x - self._offset(x).log()
        # 1 - sigmoid(x) = exp(-x) * sigmoid(x)
        return (-x + tracegrad.nn.functional.logsigmoid(x) + y[..., :-1].log()).sum(-1)

    def forward_shape(self, shape):
        return _at_least_1d(shape)[:-1] + (shape[-1] + 1,)

    def inverse_shape(self, shape):
        return _at_least_1d(shape)[:-1] + (shape[-1] - 1,)


class LowerCholeskyTransform(_Parameterless):
    """Square matrices to lower-triangular ones with a positive (exponentiated)
    diagonal: a Cholesky factor from unconstrained numbers."""
    domain, codomain = constraints.independent(constraints.real, 2), constraints.lower_cholesky

    def _call(self, x):
        return x.tril(-1) + x.diagonal(dim1=-2, dim2=-1).exp().diag_embed()

    def _inverse(self, y):
        return y.tril(-1) + y.diagonal(dim1=-2, dim2=-1).log().diag_embed()


class PositiveDefiniteTransform(_Parameterless):
    """Square matrices to positive-definite ones, ``L L^T`` of a lower Cholesky factor."""
    domain, codomain = constraints.independent(constraints.real, 2), constraints.positive_definite

    def _call(self, x):
        x = LowerCholeskyTransform()(x)
        return x @ x.mT

    def _inverse(self, y):
        return LowerCholeskyTransform().inv(tracegrad.linalg.cholesky(y))


class _Piecewise(Transform):
    """Transforms ``tseq`` applied to pieces of a tensor along ``dim`` (``_split``) and
    the results joined back (``_join``): what CatTransform and StackTransform share."""

    def __init__(self, tseq, dim=0, cache_size=0):
        if not all(isinstance(t, Transform) for t in tseq):
            raise AssertionError("All elements of tseq must be Transform instances")
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms, self.dim = list(tseq), dim

    def _check_dim(self, t, what):
        if not -t.dim() <= self.dim < t.dim():
            raise AssertionError(f"dim {self.dim} out of range for {what} with {t.dim()} dimensions")

    def _call(self, x):
        return self._join([t(p) for t, p in zip(self.transforms, self._split(x, "tensor", "x"))])

    def _inverse(self, y):
        return self._join([t.inv(p) for t, p in zip(self.transforms, self._split(y, "tensor", "y"))])

    @property
    def bijective(self):
        return all(t.bijective for t in self.transforms)

    @constraints.dependent_property
    def domain(self):
        return self._constraint([t.domain for t in self.transforms])

    @constraints.dependent_property
    def codomain(self):
        return self._constraint([t.codomain for t in self.transforms])


class CatTransform(_Piecewise):
    """The transforms ``tseq`` applied to consecutive pieces (of ``lengths``, 1 each
    by default) along ``dim``, joined as ``torch.cat`` does."""

    def __init__(self, tseq, dim=0, lengths=None, cache_size=0):
        super().__init__(tseq, dim, cache_size)
        self.lengths = [1] * len(self.transforms) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.transforms):
            raise AssertionError(f"lengths ({len(self.lengths)}) must match transforms ({len(self.transforms)})")

    @lazy_property
    def event_dim(self):
        return max(t.event_dim for t in self.transforms)

    @lazy_property
    def length(self):
        return sum(self.lengths)

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return CatTransform(self.transforms, self.dim, self.lengths, cache_size)

    def _split(self, t, what, name):
        self._check_dim(t, what)
        if t.size(self.dim) != self.length:
            raise AssertionError(f"{name}.size({self.dim}) = {t.size(self.dim)} must equal length {self.length}")
        starts = [sum(self.lengths[:i]) for i in range(len(self.lengths))]
        return [t.narrow(self.dim, s, n) for s, n in zip(starts, self.lengths)]

    def _join(self, pieces):
        return tracegrad.cat(pieces, dim=self.dim)

    def _constraint(self, cseq):
        return constraints.cat(cseq, self.dim, self.lengths)

    def log_abs_det_jacobian(self, x, y):
        xs, ys = self._split(x, "x", "x"), self._split(y, "y", "y")
        terms = [_sum_rightmost(t.log_abs_det_jacobian(a, b), self.event_dim - t.event_dim)
                 for t, a, b in zip(self.transforms, xs, ys)]
        dim = (self.dim - x.dim() if self.dim >= 0 else self.dim) + self.event_dim
        # (joined along dim while it is a batch dim; summed once it is inside the event)
        return tracegrad.cat(terms, dim=dim) if dim < 0 else sum(terms)


class StackTransform(_Piecewise):
    """The transforms ``tseq`` applied to the slices along ``dim``, one each, joined
    as ``torch.stack`` does."""

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return StackTransform(self.transforms, self.dim, cache_size)

    def _split(self, t, what, name):
        self._check_dim(t, what)
        if t.size(self.dim) != len(self.transforms):
            raise AssertionError(f"{name}.size({self.dim}) = {t.size(self.dim)} must equal len(transforms) "
                                 f"{len(self.transforms)}")
        return [t.select(self.dim, i) for i in range(t.size(self.dim))]

    def _join(self, pieces):
        return tracegrad.stack(pieces, dim=self.dim)

    def _constraint(self, cseq):
        return constraints.stack(cseq, self.dim)

    def log_abs_det_jacobian(self, x, y):
        xs, ys = self._split(x, "x", "x"), self._split(y, "y", "y")
        return self._join([t.log_abs_det_jacobian(a, b) for t, a, b in zip(self.transforms, xs, ys)])


class CumulativeDistributionTransform(Transform):
    """``y = distribution.cdf(x)``: the support onto the unit interval (a copula's
    margins); its log-Jacobian is the density, ``distribution.log_prob(x)``."""
    bijective, codomain, sign = True, constraints.unit_interval, +1

    def __init__(self, distribution, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.distribution = distribution

    @property
    def domain(self):
        return self.distribution.support

    def _call(self, x):
        return self.distribution.cdf(x)

    def _inverse(self, y):
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x, y):
        return self.distribution.log_prob(x)

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return CumulativeDistributionTransform(self.distribution, cache_size=cache_size)


"""Invertible maps with a computable log |det Jacobian| (``torch.distributions.
transforms``): what turns a base distribution into a :class:`TransformedDistribution`
(``y = t(x)``, ``log p(y) = log p(x) - log |dy/dx|``) and what moves a constrained
parameter to an unconstrained one (``constraint_registry``).

A transform maps its ``domain`` onto its ``codomain`` (constraints, whose ``event_dim``
says how many rightmost dims one event takes); ``t.inv`` is the inverse map, and
``t.inv.inv is t``. With ``cache_size=1`` a transform remembers its last ``(x, y)``
pair, so ``t.inv(t(x))`` returns ``x`` itself: exact, and the only way to get a finite
inverse where ``t(x)`` rounded onto the boundary of the codomain (``tanh(20.0) == 1``).
Everything is written with Tensor operations, so gradients flow through ``t(x)``,
``t.inv(y)`` and ``log_abs_det_jacobian``.
"""
import math
import numbers

import tracegrad

from ..runtime.type_info import finfo
from . import constraints
from ._multivariate_transforms import (
    CatTransform,
    CorrCholeskyTransform,
    CumulativeDistributionTransform,
    LowerCholeskyTransform,
    PositiveDefiniteTransform,
    SoftmaxTransform,
    StackTransform,
    StickBreakingTransform,
)
from ._transform_core import (
    ComposeTransform,
    IndependentTransform,
    ReshapeTransform,
    Transform,
    _clipped_sigmoid,
    _Parameterless,
    _softplus,
    _widened,
    identity_transform,
)
from .utils import broadcast_all, lazy_property

__all__ = [
    "AbsTransform", "AffineTransform", "CatTransform", "ComposeTransform", "CorrCholeskyTransform",
    "CumulativeDistributionTransform", "ExpTransform", "IndependentTransform", "LowerCholeskyTransform",
    "PositiveDefiniteTransform", "PowerTransform", "ReshapeTransform", "SigmoidTransform",
    "SoftmaxTransform", "SoftplusTransform", "StackTransform", "StickBreakingTransform", "TanhTransform",
    "Transform", "identity_transform",
]


class ExpTransform(_Parameterless):
    """``y = exp(x)``."""
    domain, codomain, bijective, sign = constraints.real, constraints.positive, True, +1

    def _call(self, x):
        return x.exp()

    def _inverse(self, y):
        return y.log()

    def log_abs_det_jacobian(self, x, y):
        return x


class PowerTransform(Transform):
    """``y = x ** exponent`` on the positive reals."""
    domain, codomain, bijective = constraints.positive, constraints.positive, True

    def __init__(self, exponent, cache_size=0):
        super().__init__(cache_size=cache_size)
        (self.exponent,) = broadcast_all(exponent)

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return PowerTransform(self.exponent, cache_size=cache_size)

    @lazy_property
    def sign(self):
        return self.exponent.sign()

    def __eq__(self, other):
        return isinstance(other, PowerTransform) and self.exponent.eq(other.exponent).all().item()

    def _call(self, x):
        return x.pow(self.exponent)

    def _inverse(self, y):
        return y.pow(1 / self.exponent)

    def log_abs_det_jacobian(self, x, y):
        return (self.exponent * y / x).abs().log()  # (dy/dx = exponent * x^(exponent-1))

    def forward_shape(self, shape):
        return tracegrad.broadcast_shapes(shape, self.exponent.shape)

    inverse_shape = forward_shape


class SigmoidTransform(_Parameterless):
    """``y = 1 / (1 + exp(-x))``, ``x = logit(y)``."""
    domain, codomain, bijective, sign = constraints.real, constraints.unit_interval, True, +1

    def _call(self, x):
        return _clipped_sigmoid(x)

    def _inverse(self, y):
        info = finfo(y.dtype)
        y = y.clamp(min=info.tiny, max=1.0 - info.eps)
        return y.log() - (-y).log1p()

    def log_abs_det_jacobian(self, x, y):
        return -_softplus(-x) - _softplus(x)  # log(sigmoid(x) * sigmoid(-x))


class SoftplusTransform(_Parameterless):
    """``y = log(1 + exp(x))`` (linear past x > 20, as ``softplus``)."""
    domain, codomain, bijective, sign = constraints.real, constraints.positive, True, +1

    def _call(self, x):
        return _softplus(x)

    def _inverse(self, y):
        return (-y).expm1().neg().log() + y  # log(exp(y) - 1) without overflow

    def log_abs_det_jacobian(self, x, y):
        return -_softplus(-x)


class TanhTransform(_Parameterless):
    """``y = tanh(x)`` (the squashing of SAC-style policies). Its inverse is not clamped
    away from +-1 (clamping hurts some algorithms): invert samples through the cache
    (``cache_size=1``) instead."""
    domain, codomain, bijective, sign = constraints.real, constraints.interval(-1.0, 1.0), True, +1

    def _call(self, x):
        return x.tanh()

    def _inverse(self, y):
        return tracegrad.atanh(y)

    def log_abs_det_jacobian(self, x, y):
        # log(1 - tanh(x)^2) = 2 (log 2 - x - softplus(-2x)): finite for every x, where
        # log1p(-y^2) is -inf as soon as tanh rounds to 1.
        return 2.0 * (math.log(2.0) - x - _softplus(-2.0 * x))


class AbsTransform(_Parameterless):
    """``y = |x|`` (not bijective: the inverse picks the non-negative root)."""
    domain, codomain = constraints.real, constraints.positive

    def _call(self, x):
        return x.abs()

    def _inverse(self, y):
        return y


def _same(a, b):
    if isinstance(a, numbers.Number) and isinstance(b, numbers.Number):
        return a == b
    return bool((a == b).all().item())


class AffineTransform(Transform):
    """``y = loc + scale * x`` elementwise, over events of ``event_dim`` dims (0 for
    scalars, 1 for vectors...)."""
    bijective = True

    def __init__(self, loc, scale, event_dim=0, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.loc, self.scale, self._event_dim = loc, scale, event_dim

    @property
    def event_dim(self):
        return self._event_dim

    @constraints.dependent_property(is_discrete=False)
    def domain(self):
        return _widened(constraints.real, self.event_dim)

    codomain = domain

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return AffineTransform(self.loc, self.scale, self.event_dim, cache_size=cache_size)

    def __eq__(self, other):
        return isinstance(other, AffineTransform) and _same(self.loc, other.loc) and _same(self.scale, other.scale)

    @property
    def sign(self):
        if isinstance(self.scale, numbers.Number):
            return 1 if float(self.scale) > 0 else -1 if float(self.scale) < 0 else 0
        return self.scale.sign()

    def _call(self, x):
        return self.loc + self.scale * x

    def _inverse(self, y):
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x, y):
        shape, scale = x.shape, self.scale
        if isinstance(scale, numbers.Number):
            result = tracegrad.full_like(x, math.log(abs(scale)))
        else:
            result = scale.abs().log()
        if self.event_dim:
            result = result.reshape(result.shape[:-self.event_dim] + (-1,)).sum(-1)
            shape = shape[:-self.event_dim]
        return result.expand(shape)

    def forward_shape(self, shape):
        return tracegrad.broadcast_shapes(shape, getattr(self.loc, "shape", ()), getattr(self.scale, "shape", ()))

    inverse_shape = forward_shape



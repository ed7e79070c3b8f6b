"""The generalized Pareto distribution: the limit law of exceedances over a high
threshold (peaks over threshold). ``concentration`` xi picks the tail: exponential for
xi = 0, Pareto-like (heavy) for xi > 0, bounded above by ``loc - scale / xi`` for xi < 0
(uniform at xi = -1). Formulas follow TensorFlow Probability's, as PyTorch's do."""
import math

import tracegrad

from ..runtime.tensor import Size
from . import constraints
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["GeneralizedPareto"]


def _split_zero(concentration):
    """Where xi is (numerically) 0, and xi with those entries replaced by 1: the xi = 0
    formulas are the limits of the others, which would divide by 0 there."""
    is_zero = tracegrad.isclose(concentration, tracegrad.zeros_like(concentration))
    return is_zero, tracegrad.where(is_zero, tracegrad.ones_like(concentration), concentration)


class GeneralizedPareto(Distribution):
    """Generalized Pareto distribution with survival function ``(1 + xi z)^(-1/xi)``
    (``exp(-z)`` at xi = 0), ``z = (x - loc) / scale``."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive, "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc, scale, concentration, validate_args=None):
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        super().__init__(self.loc.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded(GeneralizedPareto, batch_shape, _instance,
                              {"loc": (), "scale": (), "concentration": ()})

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        upper = tracegrad.where(self.concentration < 0, self.loc - self.scale / self.concentration, math.inf)
        return constraints.interval(self.loc, upper)

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        return self.icdf(tracegrad.rand(shape, dtype=self.loc.dtype, device=self.loc.device))

    def _z(self, value):
        return (value - self.loc) / self.scale

    def log_prob(self, value):
        """``-log(scale) - (1 + 1/xi) log(1 + xi z)``; ``-log(scale) - z`` at xi = 0; the
        second term is dropped where ``1 + 1/xi`` is 0 (xi = -1, uniform)."""
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        is_zero, xi = _split_zero(self.concentration)
        power = 1 / xi + tracegrad.ones_like(z)
        nonzero = tracegrad.where(power == 0, power, power * tracegrad.log1p(xi * z))
        return -self.scale.log() - tracegrad.where(is_zero, z, nonzero)

    def log_survival_function(self, value):
        """``log P(X > value)``."""
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        is_zero, xi = _split_zero(self.concentration)
        return tracegrad.where(is_zero, -z, -tracegrad.log1p(xi * z) / xi)

    def log_cdf(self, value):
        return tracegrad.log1p(-tracegrad.exp(self.log_survival_function(value)))

    def cdf(self, value):
        return tracegrad.exp(self.log_cdf(value))

    def icdf(self, value):
        """``loc + scale ((1 - u)^-xi - 1) / xi``; ``loc - scale log(1 - u)`` at xi = 0."""
        is_zero, xi = _split_zero(self.concentration)
        log_tail = tracegrad.log1p(-value)
        nonzero = self.loc + self.scale / xi * tracegrad.expm1(-xi * log_tail)
        return tracegrad.where(is_zero, self.loc - self.scale * log_tail, nonzero)

    @property
    def mean(self):
        """``loc + scale / (1 - xi)``; NaN for xi >= 1 (the mean is infinite)."""
        finite = self.concentration < 1
        xi = tracegrad.where(finite, self.concentration, 0.5)
        return tracegrad.where(finite, self.loc + self.scale / (1 - xi), math.nan)

    @property
    def variance(self):
        """``scale^2 / ((1 - xi)^2 (1 - 2 xi))``; NaN for xi >= 1/2."""
        finite = self.concentration < 0.5
        xi = tracegrad.where(finite, self.concentration, 0.25)
        return tracegrad.where(finite, self.scale ** 2 / ((1 - xi) ** 2 * (1 - 2 * xi)), math.nan)

    @property
    def mode(self):
        return self.loc

    def entropy(self):
        return tracegrad.broadcast_to(tracegrad.log(self.scale) + self.concentration + 1, self._batch_shape)

"""The exponential distribution: waiting times of a Poisson process of rate ``rate``."""
import math

import tracegrad

from ..runtime.tensor import Size
from . import constraints
from .exp_family import ExponentialFamily
from .kl import infinite_kl, register_kl
from .normal import Normal
from .uniform import Uniform
from .utils import broadcast_all

__all__ = ["Exponential"]


class Exponential(ExponentialFamily):
    """Exponential distribution with density ``rate * exp(-rate * x)`` on ``x >= 0``."""
    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, rate, validate_args=None):
        (self.rate,) = broadcast_all(rate)
        super().__init__(self.rate.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded(Exponential, batch_shape, _instance, {"rate": ()})

    @property
    def mean(self):
        return self.rate.reciprocal()

    @property
    def mode(self):
        return tracegrad.zeros_like(self.rate)

    @property
    def stddev(self):
        return self.rate.reciprocal()

    @property
    def variance(self):
        return self.rate.pow(-2)

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        return self.rate.new(shape).exponential_() / self.rate  # (a unit-rate draw, rescaled)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return self.rate.log() - self.rate * value

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 1 - tracegrad.exp(-self.rate * value)

    def icdf(self, value):
        return -tracegrad.log1p(-value) / self.rate

    def entropy(self):
        return 1.0 - tracegrad.log(self.rate)

    @property
    def _natural_params(self):
        return (-self.rate,)

    def _log_normalizer(self, x):
        return -tracegrad.log(-x)


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p, q):
    ratio = q.rate / p.rate
    return ratio - ratio.log() - 1


register_kl(Exponential, Uniform)(infinite_kl)  # (p's support is unbounded, q's is not)


@register_kl(Exponential, Normal)
def _kl_exponential_normal(p, q):
    """``-H(p) - E_p[log q]`` with ``E_p[x] = 1/rate`` and ``E_p[x^2] = 2/rate^2``."""
    var = q.scale.pow(2)
    rate_sq = p.rate.pow(2)
    t1 = 0.5 * tracegrad.log(rate_sq * var * 2 * math.pi)
    return t1 - 1 + (rate_sq.reciprocal() - q.loc / p.rate + 0.5 * q.loc.pow(2)) / var


register_kl(Normal, Exponential)(infinite_kl)


@register_kl(Uniform, Exponential)
def _kl_uniform_exponential(p, q):
    result = q.rate * (p.high + p.low) / 2 - ((p.high - p.low) * q.rate).log()
    result[p.low < q.support.lower_bound] = math.inf  # (mass below 0, where q has none)
    return result

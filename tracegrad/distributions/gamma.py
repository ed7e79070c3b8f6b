"""The gamma distribution: shape ``concentration`` (alpha) and ``rate`` (beta, one over
the scale). Its reparameterized draws carry gradients to both: to the rate through the
division by it, to the concentration implicitly (see :mod:`._gamma_sampling`)."""
import math

import tracegrad

from ..runtime.tensor import Size
from ..runtime.type_info import finfo
from . import constraints
from ._gamma_sampling import _standard_gamma
from .exp_family import ExponentialFamily
from .exponential import Exponential
from .kl import infinite_kl, register_kl
from .normal import Normal
from .uniform import Uniform
from .utils import broadcast_all

__all__ = ["Gamma"]


class Gamma(ExponentialFamily):
    """Gamma distribution with density ``rate^a x^(a-1) e^(-rate x) / Gamma(a)`` on
    ``x >= 0``, ``a`` the ``concentration``."""
    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        super().__init__(self.concentration.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded(Gamma, batch_shape, _instance, {"concentration": (), "rate": ()})

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        value = _standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
        value.detach().clamp_(min=finfo(value.dtype).tiny)  # (in place, outside the graph)
        return value

    def log_prob(self, value):
        value = tracegrad.as_tensor(value, dtype=self.rate.dtype, device=self.rate.device)
        if self._validate_args:
            self._validate_sample(value)
        return (tracegrad.xlogy(self.concentration, self.rate) + tracegrad.xlogy(self.concentration - 1, value)
                - self.rate * value - tracegrad.lgamma(self.concentration))

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return tracegrad.special.gammainc(self.concentration, self.rate * value)

    def entropy(self):
        a = self.concentration
        return a - tracegrad.log(self.rate) + tracegrad.lgamma(a) + (1.0 - a) * tracegrad.digamma(a)

    @property
    def _natural_params(self):
        return (self.concentration - 1, -self.rate)

    def _log_normalizer(self, x, y):
        return tracegrad.lgamma(x + 1) + (x + 1) * tracegrad.log(-y.reciprocal())


def _x_log_x(t):
    return tracegrad.xlogy(t, t)  # (0 at 0, where PyTorch's t * t.log() is nan)


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p, q):
    t1 = q.concentration * (p.rate / q.rate).log()
    t2 = tracegrad.lgamma(q.concentration) - tracegrad.lgamma(p.concentration)
    t3 = (p.concentration - q.concentration) * tracegrad.digamma(p.concentration)
    t4 = (q.rate - p.rate) * (p.concentration / p.rate)
    return t1 + t2 + t3 + t4


@register_kl(Gamma, Exponential)
def _kl_gamma_exponential(p, q):
    return -p.entropy() - q.rate.log() + q.rate * p.concentration / p.rate


@register_kl(Exponential, Gamma)
def _kl_exponential_gamma(p, q):
    """An exponential is Gamma(1, rate): ``E_p[log x] = -log(rate) - euler_gamma``."""
    ratio = q.rate / p.rate
    euler = 0.57721566490153286060
    return (-q.concentration * tracegrad.log(ratio) + ratio + q.concentration.lgamma()
            + q.concentration * euler - (1 + euler))


@register_kl(Gamma, Normal)
def _kl_gamma_normal(p, q):
    """``-H(p) - E_p[log q]`` from the gamma's first two moments."""
    var = q.scale.pow(2)
    rate_sq = p.rate.pow(2)
    a = p.concentration
    t1 = 0.5 * tracegrad.log(rate_sq * var * 2 * math.pi) - a - a.lgamma()
    t2 = 0.5 * (a.pow(2) + a) / rate_sq
    t3 = q.loc * a / p.rate
    t4 = 0.5 * q.loc.pow(2)
    return t1 + (a - 1) * a.digamma() + (t2 - t3 + t4) / var


register_kl(Gamma, Uniform)(infinite_kl)  # (p's support is unbounded, q's is not)


register_kl(Normal, Gamma)(infinite_kl)  # (p puts mass below 0)


@register_kl(Uniform, Gamma)
def _kl_uniform_gamma(p, q):
    """``-log(width) - E_p[log q]``; ``E_p[log x]`` is ``(x log x - x)`` between the bounds
    over the width. Infinite when p puts mass below 0."""
    width = p.high - p.low
    t2 = q.concentration.lgamma() - q.concentration * q.rate.log()
    t3 = (1 - q.concentration) * (_x_log_x(p.high) - _x_log_x(p.low) - width) / width
    t4 = q.rate * (p.high + p.low) / 2
    result = -width.log() + t2 + t3 + t4
    result[p.low < q.support.lower_bound] = math.inf
    return result

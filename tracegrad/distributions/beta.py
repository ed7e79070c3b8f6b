"""The beta distribution on [0, 1]: the first coordinate of a two-coordinate Dirichlet,
which gives it its reparameterized draws (and their gradients) and its density."""
import math
import numbers

import tracegrad

from . import constraints
from .dirichlet import Dirichlet
from .exp_family import ExponentialFamily
from .exponential import Exponential
from .gamma import Gamma, _x_log_x
from .kl import infinite_kl, register_kl
from .normal import Normal
from .uniform import Uniform
from .utils import broadcast_all

__all__ = ["Beta"]


class Beta(ExponentialFamily):
    """Beta distribution with density proportional to ``x^(c1 - 1) (1 - x)^(c0 - 1)``:
    ``concentration1`` weighs towards 1, ``concentration0`` towards 0."""
    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        if isinstance(concentration1, numbers.Number) and isinstance(concentration0, numbers.Number):
            pair = tracegrad.tensor([float(concentration1), float(concentration0)])
        else:
            concentration1, concentration0 = broadcast_all(concentration1, concentration0)
            pair = tracegrad.stack([concentration1, concentration0], -1)
        self._dirichlet = Dirichlet(pair, validate_args=validate_args)
        super().__init__(self._dirichlet._batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Beta, _instance)
        new._dirichlet = self._dirichlet.expand(batch_shape)
        return self._expanded(Beta, batch_shape, new, {})

    @property
    def concentration1(self):
        return self._dirichlet.concentration[..., 0]

    @property
    def concentration0(self):
        return self._dirichlet.concentration[..., 1]

    @property
    def mean(self):
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self):
        return self._dirichlet.mode[..., 0]

    @property
    def variance(self):
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape=()):
        return self._dirichlet.rsample(sample_shape).select(-1, 0)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return self._dirichlet.log_prob(tracegrad.stack([value, 1.0 - value], -1))

    def entropy(self):
        return self._dirichlet.entropy()

    @property
    def _natural_params(self):
        return (self.concentration1, self.concentration0)

    def _log_normalizer(self, x, y):
        return tracegrad.lgamma(x) + tracegrad.lgamma(y) - tracegrad.lgamma(x + y)


def _log_mean(p):
    """``E[log x]`` under Beta ``p``."""
    return p.concentration1.digamma() - (p.concentration1 + p.concentration0).digamma()


@register_kl(Beta, Beta)
def _kl_beta_beta(p, q):
    total_p = p.concentration1 + p.concentration0
    total_q = q.concentration1 + q.concentration0
    t1 = q.concentration1.lgamma() + q.concentration0.lgamma() + total_p.lgamma()
    t2 = p.concentration1.lgamma() + p.concentration0.lgamma() + total_q.lgamma()
    t3 = (p.concentration1 - q.concentration1) * tracegrad.digamma(p.concentration1)
    t4 = (p.concentration0 - q.concentration0) * tracegrad.digamma(p.concentration0)
    t5 = (total_q - total_p) * tracegrad.digamma(total_p)
    return t1 - t2 + t3 + t4 + t5


@register_kl(Beta, Exponential)
def _kl_beta_exponential(p, q):
    return -p.entropy() - q.rate.log() + q.rate * p.mean


@register_kl(Beta, Gamma)
def _kl_beta_gamma(p, q):
    t2 = q.concentration.lgamma() - q.concentration * q.rate.log()
    return -p.entropy() + t2 - (q.concentration - 1) * _log_mean(p) + q.rate * p.mean


@register_kl(Beta, Normal)
def _kl_beta_normal(p, q):
    """``-H(p) - E_p[log q]`` from the beta's first two moments."""
    mean, var = p.mean, q.scale.pow(2)
    second_moment = mean * (1 - mean) / (p.concentration1 + p.concentration0 + 1) + mean.pow(2)
    t2 = 0.5 * (var * 2 * math.pi).log()
    return -p.entropy() + t2 + (0.5 * second_moment - q.loc * mean + 0.5 * q.loc.pow(2)) / var


@register_kl(Beta, Uniform)
def _kl_beta_uniform(p, q):
    result = -p.entropy() + (q.high - q.low).log()
    result[(q.low > p.support.lower_bound) | (q.high < p.support.upper_bound)] = math.inf
    return result


# (p's support is unbounded, q's is [0, 1])
register_kl(Exponential, Beta)(infinite_kl)
register_kl(Gamma, Beta)(infinite_kl)


register_kl(Normal, Beta)(infinite_kl)


@register_kl(Uniform, Beta)
def _kl_uniform_beta(p, q):
    """``-log(width) - E_p[log q]``, with ``E_p[log x]`` and ``E_p[log(1 - x)]`` in closed
    form; infinite when p puts mass outside [0, 1]."""
    width = p.high - p.low
    log_x = (_x_log_x(p.high) - _x_log_x(p.low) - width) / width
    log_1mx = -(_x_log_x(1 - p.high) - _x_log_x(1 - p.low) + width) / width
    log_norm = (q.concentration1.lgamma() + q.concentration0.lgamma()
                - (q.concentration1 + q.concentration0).lgamma())
    result = log_norm - width.log() - (q.concentration1 - 1) * log_x - (q.concentration0 - 1) * log_1mx
    result[(p.high > q.support.upper_bound) | (p.low < q.support.lower_bound)] = math.inf
    return result

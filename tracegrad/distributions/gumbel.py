"""The Gumbel distribution: the limit law of the maximum of many samples."""
import math
import numbers

import tracegrad

from ..runtime.type_info import finfo
from . import constraints
from .exponential import Exponential
from .gamma import Gamma
from .kl import infinite_kl, register_kl
from .normal import Normal
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, ExpTransform
from .uniform import Uniform
from .utils import broadcast_all, euler_constant

__all__ = ["Gumbel"]


class Gumbel(TransformedDistribution):
    """Gumbel distribution, ``loc - scale * log(-log(U))`` for ``U`` uniform on (0, 1)
    (kept off 0 and 1 by the dtype's tiny and eps)."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        info = finfo(self.loc.dtype)
        if isinstance(loc, numbers.Number) and isinstance(scale, numbers.Number):
            base_dist = Uniform(info.tiny, 1 - info.eps, validate_args=validate_args)
        else:
            base_dist = Uniform(tracegrad.full_like(self.loc, info.tiny), tracegrad.full_like(self.loc, 1 - info.eps),
                                validate_args=validate_args)
        transforms = [ExpTransform().inv, AffineTransform(loc=0, scale=-tracegrad.ones_like(self.scale)),
                      ExpTransform().inv, AffineTransform(loc=loc, scale=-self.scale)]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Gumbel, _instance)
        new.loc, new.scale = self.loc.expand(batch_shape), self.scale.expand(batch_shape)
        return super().expand(batch_shape, _instance=new)

    def log_prob(self, value):
        """``z - exp(z) - log(scale)`` with ``z = (loc - value) / scale``: direct, not
        through the four transforms."""
        if self._validate_args:
            self._validate_sample(value)
        y = (self.loc - value) / self.scale
        return (y - y.exp()) - self.scale.log()

    @property
    def mean(self):
        return self.loc + self.scale * euler_constant

    @property
    def mode(self):
        return self.loc

    @property
    def stddev(self):
        return (math.pi / math.sqrt(6)) * self.scale

    @property
    def variance(self):
        return self.stddev.pow(2)

    def entropy(self):
        return self.scale.log() + (1 + euler_constant)


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p, q):
    ct1, ct2, ct3 = p.scale / q.scale, q.loc / q.scale, p.loc / q.scale
    t1 = -ct1.log() - ct2 + ct3
    t3 = tracegrad.exp(ct2 + (1 + ct1).lgamma() - ct3)  # E_p[exp(-(x - q.loc) / q.scale)]
    return t1 + ct1 * euler_constant + t3 - (1 + euler_constant)


register_kl(Gumbel, Exponential)(infinite_kl)
register_kl(Gumbel, Gamma)(infinite_kl)
register_kl(Gumbel, Uniform)(infinite_kl)


@register_kl(Gumbel, Normal)
def _kl_gumbel_normal(p, q):
    ratio = p.scale / q.scale
    t1 = (ratio / math.sqrt(2 * math.pi)).log()
    t2 = (math.pi * ratio * 0.5).pow(2) / 3
    t3 = ((p.loc + p.scale * euler_constant - q.loc) / q.scale).pow(2) * 0.5
    return -t1 + t2 + t3 - (euler_constant + 1)


@register_kl(Exponential, Gumbel)
def _kl_exponential_gumbel(p, q):
    scale_rate = p.rate * q.scale
    loc_scale = q.loc / q.scale
    t2 = tracegrad.exp(loc_scale) * scale_rate / (scale_rate + 1)
    return scale_rate.log() - 1 - loc_scale + t2 + scale_rate.reciprocal()


@register_kl(Gamma, Gumbel)
def _kl_gamma_gumbel(p, q):
    """``-H(p) - E_p[log q]``; ``E_p[exp(-x / q.scale)]`` is the gamma's Laplace
    transform ``(1 + 1 / (rate q.scale))^-a``."""
    a = p.concentration
    rate_scale = p.rate * q.scale
    loc_scale = q.loc / q.scale
    t1 = (a - 1) * a.digamma() - a.lgamma() - a
    t2 = rate_scale.log() + a / rate_scale
    t3 = tracegrad.exp(loc_scale) * (1 + rate_scale.reciprocal()).pow(-a) - loc_scale
    return t1 + t2 + t3


@register_kl(Normal, Gumbel)
def _kl_normal_gumbel(p, q):
    mean_scale = p.loc / q.scale
    var_scale_sq = (p.scale / q.scale).pow(2)
    loc_scale = q.loc / q.scale
    t3 = tracegrad.exp(-mean_scale + 0.5 * var_scale_sq + loc_scale)  # (a log-normal mean)
    return -0.5 * var_scale_sq.log() + mean_scale - loc_scale + t3 - 0.5 * (1 + math.log(2 * math.pi))


@register_kl(Uniform, Gumbel)
def _kl_uniform_gumbel(p, q):
    common = q.scale / (p.high - p.low)
    high = (p.high - q.loc) / q.scale
    low = (p.low - q.loc) / q.scale
    return common.log() + 0.5 * (high + low) - common * (tracegrad.exp(-high) - tracegrad.exp(-low))

"""The Laplace (double exponential) distribution."""
import math

import tracegrad

from ..runtime.tensor import Size
from ..runtime.type_info import finfo
from . import constraints
from .distribution import Distribution
from .exponential import Exponential
from .gamma import Gamma
from .kl import infinite_kl, register_kl
from .normal import Normal
from .uniform import Uniform
from .utils import broadcast_all

__all__ = ["Laplace"]


class Laplace(Distribution):
    """Laplace distribution with density ``exp(-|x - loc| / scale) / (2 scale)``."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(self.loc.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded(Laplace, batch_shape, _instance, {"loc": (), "scale": ()})

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return 2 * self.scale.pow(2)

    @property
    def stddev(self):
        return (2 ** 0.5) * self.scale

    def rsample(self, sample_shape=Size()):
        """The inverse cdf of ``u`` uniform on ``(-1, 1)``: the sign picks the side,
        ``-log(1 - |u|)`` the exponential distance (``u`` never reaches -1, where the
        log is infinite)."""
        shape = self._extended_shape(sample_shape)
        u = self.loc.new(shape).uniform_(finfo(self.loc.dtype).eps - 1, 1)
        return self.loc - self.scale * u.sign() * tracegrad.log1p(-u.abs())

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return -tracegrad.log(2 * self.scale) - tracegrad.abs(value - self.loc) / self.scale

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = value - self.loc
        return 0.5 - 0.5 * z.sign() * tracegrad.expm1(-z.abs() / self.scale)

    def icdf(self, value):
        term = value - 0.5
        return self.loc - self.scale * term.sign() * tracegrad.log1p(-2 * term.abs())

    def entropy(self):
        return 1 + tracegrad.log(2 * self.scale)


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p, q):
    scale_ratio = p.scale / q.scale
    loc_abs_diff = (p.loc - q.loc).abs()
    return -scale_ratio.log() + loc_abs_diff / q.scale + scale_ratio * tracegrad.exp(-loc_abs_diff / p.scale) - 1


register_kl(Laplace, Exponential)(infinite_kl)
register_kl(Laplace, Gamma)(infinite_kl)
register_kl(Laplace, Uniform)(infinite_kl)


@register_kl(Laplace, Normal)
def _kl_laplace_normal(p, q):
    var = q.scale.pow(2)
    scale_sq_var_ratio = p.scale.pow(2) / var
    t1 = 0.5 * tracegrad.log(2 * scale_sq_var_ratio / math.pi)
    return -t1 + scale_sq_var_ratio + 0.5 * (p.loc - q.loc).pow(2) / var - 1


@register_kl(Normal, Laplace)
def _kl_normal_laplace(p, q):
    """``E_p|x - q.loc|`` is the mean of a folded normal."""
    loc_diff = p.loc - q.loc
    scale_ratio = p.scale / q.scale
    z = loc_diff / p.scale
    folded_mean = math.sqrt(2 / math.pi) * p.scale * tracegrad.exp(-0.5 * z.pow(2)) + loc_diff * tracegrad.erf(
        math.sqrt(0.5) * z)
    return -tracegrad.log(scale_ratio) + folded_mean / q.scale - 0.5 * (1 + math.log(0.5 * math.pi))

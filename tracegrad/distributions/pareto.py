"""The Pareto (type I) distribution: ``scale * exp(E)`` for ``E`` exponential with rate
``alpha``, the power law of sizes above a threshold. Its KL divergences with the other
continuous families live here too (most are infinite: the supports do not nest)."""
import math

from . import constraints
from .beta import Beta
from .continuous_bernoulli import ContinuousBernoulli
from .exponential import Exponential
from .gamma import Gamma, _x_log_x
from .gumbel import Gumbel
from .kl import infinite_kl, register_kl
from .laplace import Laplace
from .normal import Normal
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, ExpTransform
from .uniform import Uniform
from .utils import broadcast_all

__all__ = ["Pareto"]


class Pareto(TransformedDistribution):
    """Pareto distribution with density ``alpha scale^alpha / x^(alpha + 1)`` on
    ``x >= scale``."""
    arg_constraints = {"alpha": constraints.positive, "scale": constraints.positive}

    def __init__(self, scale, alpha, validate_args=None):
        self.scale, self.alpha = broadcast_all(scale, alpha)
        base_dist = Exponential(self.alpha, validate_args=validate_args)
        super().__init__(base_dist, [ExpTransform(), AffineTransform(loc=0, scale=self.scale)],
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Pareto, _instance)
        new.scale, new.alpha = self.scale.expand(batch_shape), self.alpha.expand(batch_shape)
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self):
        alpha = self.alpha.clamp(min=1)  # (infinite for alpha <= 1: a division by 0)
        return alpha * self.scale / (alpha - 1)

    @property
    def mode(self):
        return self.scale

    @property
    def variance(self):
        alpha = self.alpha.clamp(min=2)  # (infinite for alpha <= 2)
        return self.scale.pow(2) * alpha / ((alpha - 1).pow(2) * (alpha - 2))

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.greater_than_eq(self.scale)

    def entropy(self):
        return (self.scale / self.alpha).log() + (1 + self.alpha.reciprocal())


@register_kl(Pareto, Pareto)
def _kl_pareto_pareto(p, q):
    """Infinite where p reaches below q's threshold."""
    alpha_ratio = q.alpha / p.alpha
    result = q.alpha * (p.scale / q.scale).log() - alpha_ratio.log() + alpha_ratio - 1
    result[p.support.lower_bound < q.support.lower_bound] = math.inf
    return result


# (p puts mass below any positive threshold)
register_kl(Beta, Pareto)(infinite_kl)
register_kl(ContinuousBernoulli, Pareto)(infinite_kl)
register_kl(Exponential, Pareto)(infinite_kl)
register_kl(Gamma, Pareto)(infinite_kl)
register_kl(Gumbel, Pareto)(infinite_kl)
register_kl(Laplace, Pareto)(infinite_kl)
register_kl(Normal, Pareto)(infinite_kl)


# (p's support is unbounded, q's is not)
register_kl(Pareto, Beta)(infinite_kl)
register_kl(Pareto, ContinuousBernoulli)(infinite_kl)
register_kl(Pareto, Uniform)(infinite_kl)


@register_kl(Pareto, Exponential)
def _kl_pareto_exponential(p, q):
    """``-H(p) - E_p[log q]``; infinite where p's mean is (alpha <= 1)."""
    scale_rate = p.scale * q.rate
    result = (p.alpha / scale_rate).log() - p.alpha.reciprocal() + p.alpha * scale_rate / (p.alpha - 1) - 1
    result[p.alpha <= 1] = math.inf
    return result


@register_kl(Pareto, Gamma)
def _kl_pareto_gamma(p, q):
    """``-H(p) - E_p[log q]`` with ``E_p[log x] = log(scale) + 1/alpha``."""
    mean_log = p.scale.log() + p.alpha.reciprocal()
    log_norm = q.concentration.lgamma() - q.concentration * q.rate.log()
    result = (p.alpha.log() - mean_log + log_norm + (1 - q.concentration) * mean_log
              + q.rate * p.alpha * p.scale / (p.alpha - 1) - 1)
    result[p.alpha <= 1] = math.inf
    return result


@register_kl(Pareto, Normal)
def _kl_pareto_normal(p, q):
    """``-H(p) - E_p[log q]`` from p's mean and variance; infinite where the variance
    is (alpha <= 2)."""
    two_var = 2 * q.scale.pow(2)
    shifted = p.scale / (p.alpha - 1)
    t1 = (math.sqrt(2 * math.pi) * q.scale * p.alpha / p.scale).log()
    second = p.alpha * shifted.pow(2) / (p.alpha - 2) + (p.alpha * shifted - q.loc).pow(2)
    result = t1 - p.alpha.reciprocal() + second / two_var - 1
    result[p.alpha <= 2] = math.inf
    return result


@register_kl(Uniform, Pareto)
def _kl_uniform_pareto(p, q):
    """``-log(width) - E_p[log q]``, ``E_p[log x]`` in closed form; infinite where p
    reaches below q's threshold."""
    width = p.high - p.low
    mean_log = (_x_log_x(p.high) - _x_log_x(p.low) - width) / width
    result = mean_log * (q.alpha + 1) - (q.alpha * q.scale.pow(q.alpha) * width).log()
    result[p.low < q.support.lower_bound] = math.inf
    return result

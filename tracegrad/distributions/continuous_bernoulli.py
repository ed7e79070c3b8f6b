"""The continuous Bernoulli distribution (Loaiza-Ganem and Cunningham, 2019): the
density ``C(p) p^x (1 - p)^(1 - x)`` on [0, 1], the Bernoulli likelihood made a proper
density by its normalizer ``C(p)``. ``probs`` is not a probability nor ``logits`` a
log-odds here, but the names are kept. Near ``p = 1/2`` the closed forms are 0/0, so
within ``lims`` Taylor expansions around 1/2 stand in for them."""
import math

import tracegrad

from ..runtime.tensor import Size
from . import constraints
from ._probs_or_logits import ProbsOrLogits
from .beta import Beta
from .exp_family import ExponentialFamily
from .exponential import Exponential
from .gamma import Gamma
from .kl import infinite_kl, register_kl
from .normal import Normal
from .uniform import Uniform
from .utils import broadcast_all, clamp_probs, lazy_property, logits_to_probs

__all__ = ["ContinuousBernoulli"]


class ContinuousBernoulli(ProbsOrLogits, ExponentialFamily):
    """Continuous Bernoulli distribution given ``probs`` (in (0, 1)) or ``logits``, not
    both; ``lims`` is the interval around 1/2 where Taylor expansions are used."""
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    _mean_carrier_measure = 0
    has_rsample = True

    def __init__(self, probs=None, logits=None, lims=(0.499, 0.501), validate_args=None):
        self._set_broadcast_param(probs, logits)
        if probs is not None:
            if validate_args is not None and not tracegrad._is_all_true(self.arg_constraints["probs"].check(self.probs)):
                raise ValueError("The parameter probs has invalid values")
            self._set_param("probs", clamp_probs(self.probs))
        self._lims = lims
        super().__init__(self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expanded_param(ContinuousBernoulli, batch_shape, _instance)
        new._lims = self._lims
        return new

    def _outside_unstable_region(self):
        return tracegrad.le(self.probs, self._lims[0]) | tracegrad.gt(self.probs, self._lims[1])

    def _cut_probs(self):
        """``probs``, with those inside ``lims`` moved to its edge (their closed-form
        values are computed, then replaced by the Taylor ones)."""
        return tracegrad.where(self._outside_unstable_region(), self.probs,
                               self._lims[0] * tracegrad.ones_like(self.probs))

    def _cont_bern_log_norm(self):
        """``log C(p) = log(|log(1 - p) - log p| / |1 - 2p|)``."""
        cut = self._cut_probs()
        below = tracegrad.where(tracegrad.le(cut, 0.5), cut, tracegrad.zeros_like(cut))
        above = tracegrad.where(tracegrad.ge(cut, 0.5), cut, tracegrad.ones_like(cut))
        log_norm = tracegrad.log(tracegrad.abs(tracegrad.log1p(-cut) - tracegrad.log(cut))) - tracegrad.where(
            tracegrad.le(cut, 0.5), tracegrad.log1p(-2.0 * below), tracegrad.log(2.0 * above - 1.0))
        x = tracegrad.pow(self.probs - 0.5, 2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return tracegrad.where(self._outside_unstable_region(), log_norm, taylor)

    @property
    def mean(self):
        cut = self._cut_probs()
        mus = cut / (2.0 * cut - 1.0) + 1.0 / (tracegrad.log1p(-cut) - tracegrad.log(cut))
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * tracegrad.pow(x, 2)) * x
        return tracegrad.where(self._outside_unstable_region(), mus, taylor)

    @property
    def stddev(self):
        return tracegrad.sqrt(self.variance)

    @property
    def variance(self):
        cut = self._cut_probs()
        variances = (cut * (cut - 1.0) / tracegrad.pow(1.0 - 2.0 * cut, 2)
                     + 1.0 / tracegrad.pow(tracegrad.log1p(-cut) - tracegrad.log(cut), 2))
        x = tracegrad.pow(self.probs - 0.5, 2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return tracegrad.where(self._outside_unstable_region(), variances, taylor)

    @lazy_property
    def probs(self):
        """The sigmoid of the logits, clamped as given probabilities are."""
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    def sample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        u = tracegrad.rand(shape, dtype=self.probs.dtype, device=self.probs.device)
        with tracegrad.no_grad():
            return self.icdf(u)

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        u = tracegrad.rand(shape, dtype=self.probs.dtype, device=self.probs.device)
        return self.icdf(u)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        bce = tracegrad.nn.functional.binary_cross_entropy_with_logits(logits, value, reduction="none")
        return -bce + self._cont_bern_log_norm()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        cut = self._cut_probs()
        cdfs = (tracegrad.pow(cut, value) * tracegrad.pow(1.0 - cut, 1.0 - value) + cut - 1.0) / (2.0 * cut - 1.0)
        unbounded = tracegrad.where(self._outside_unstable_region(), cdfs, value)
        return tracegrad.where(tracegrad.le(value, 0.0), tracegrad.zeros_like(value),
                               tracegrad.where(tracegrad.ge(value, 1.0), tracegrad.ones_like(value), unbounded))

    def icdf(self, value):
        cut = self._cut_probs()
        inverted = ((tracegrad.log1p(-cut + value * (2.0 * cut - 1.0)) - tracegrad.log1p(-cut))
                    / (tracegrad.log(cut) - tracegrad.log1p(-cut)))
        return tracegrad.where(self._outside_unstable_region(), inverted, value)

    def entropy(self):
        log_p0, log_p1 = tracegrad.log1p(-self.probs), tracegrad.log(self.probs)
        return self.mean * (log_p0 - log_p1) - self._cont_bern_log_norm() - log_p0

    @property
    def _natural_params(self):
        return (self.logits,)

    def _log_normalizer(self, x):
        """The log normalizer in the natural parameter: ``log((e^x - 1) / x)``."""
        unstable = tracegrad.le(x, self._lims[0] - 0.5) | tracegrad.gt(x, self._lims[1] - 0.5)
        cut = tracegrad.where(unstable, x, (self._lims[0] - 0.5) * tracegrad.ones_like(x))
        log_norm = tracegrad.log(tracegrad.abs(tracegrad.special.expm1(cut))) - tracegrad.log(tracegrad.abs(cut))
        taylor = 0.5 * x + tracegrad.pow(x, 2) / 24.0 - tracegrad.pow(x, 4) / 2880.0
        return tracegrad.where(unstable, log_norm, taylor)


@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _kl_continuous_bernoulli_continuous_bernoulli(p, q):
    t1 = p.mean * (p.logits - q.logits)
    t2 = p._cont_bern_log_norm() + tracegrad.log1p(-p.probs)
    t3 = -q._cont_bern_log_norm() - tracegrad.log1p(-q.probs)
    return t1 + t2 + t3


@register_kl(Beta, ContinuousBernoulli)
def _kl_beta_continuous_bernoulli(p, q):
    return -p.entropy() - p.mean * q.logits - tracegrad.log1p(-q.probs) - q._cont_bern_log_norm()


@register_kl(ContinuousBernoulli, Exponential)
def _kl_continuous_bernoulli_exponential(p, q):
    return -p.entropy() - tracegrad.log(q.rate) + q.rate * p.mean


@register_kl(ContinuousBernoulli, Normal)
def _kl_continuous_bernoulli_normal(p, q):
    t1 = -p.entropy()
    t2 = 0.5 * (math.log(2.0 * math.pi) + tracegrad.square(q.loc / q.scale)) + tracegrad.log(q.scale)
    t3 = (p.variance + tracegrad.square(p.mean) - 2.0 * q.loc * p.mean) / (2.0 * tracegrad.square(q.scale))
    return t1 + t2 + t3


@register_kl(ContinuousBernoulli, Uniform)
def _kl_continuous_bernoulli_uniform(p, q):
    """Infinite unless q's interval strictly contains [0, 1]: PyTorch's condition, which
    also calls q = U(0, 1) infinite; kept so that results match it."""
    result = -p.entropy() + (q.high - q.low).log()
    outside = tracegrad.ge(q.low, p.support.lower_bound) | tracegrad.le(q.high, p.support.upper_bound)
    return tracegrad.where(outside, tracegrad.ones_like(result) * math.inf, result)


# (p's support is unbounded, q's is [0, 1])
register_kl(Exponential, ContinuousBernoulli)(infinite_kl)
register_kl(Gamma, ContinuousBernoulli)(infinite_kl)


register_kl(Normal, ContinuousBernoulli)(infinite_kl)


@register_kl(Uniform, ContinuousBernoulli)
def _kl_uniform_continuous_bernoulli(p, q):
    """Infinite when p reaches outside (0, 1) (p's bounds at 0 or 1 included, as in
    PyTorch)."""
    result = -p.entropy() - p.mean * q.logits - tracegrad.log1p(-q.probs) - q._cont_bern_log_norm()
    outside = tracegrad.ge(p.high, q.support.upper_bound) | tracegrad.le(p.low, q.support.lower_bound)
    return tracegrad.where(outside, tracegrad.ones_like(result) * math.inf, result)

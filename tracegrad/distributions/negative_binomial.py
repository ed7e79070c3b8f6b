"""The negative binomial distribution: the number of successes of independent trials
(each a success with probability ``probs``) before ``total_count`` failures. The count
may be any non-negative real: the law is then the gamma-Poisson mixture, which is also
how it is sampled."""
import tracegrad

from ..runtime.tensor import Size
from ..runtime.type_info import finfo
from . import constraints
from .distribution import Distribution
from .utils import broadcast_all, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["NegativeBinomial"]


def _standard_gamma(concentration):
    """Gamma(``concentration``, 1) draws, by Marsaglia and Tsang's rejection method (2000),
    all elements at once: each round proposes ``d v`` with ``v = (1 + c z)^3``, ``z``
    standard normal, and keeps the still-pending elements whose uniform passes the log
    test. A concentration ``a < 1`` is drawn at ``a + 1`` and scaled by ``u^(1/a)``.
    (tracegrad has no ``_standard_gamma`` primitive; this is written with its seeded
    ``randn``/``rand`` streams, so ``manual_seed`` makes it repeatable.)"""
    a = concentration
    boosted = tracegrad.where(a < 1, a + 1, a)
    d = boosted - 1 / 3
    c = (9 * d).rsqrt()
    result = a.clone()  # (non-finite concentrations are returned as they are)
    pending = tracegrad.isfinite(a)
    while bool(pending.any()):
        z = tracegrad.randn_like(a)
        v = (1 + c * z).pow(3)
        log_u = tracegrad.rand_like(a).log()
        accept = pending & (v > 0) & (log_u < 0.5 * z * z + d - d * v + d * v.clamp(min=finfo(a.dtype).tiny).log())
        result = tracegrad.where(accept, d * v, result)
        pending = pending & ~accept
    scale = tracegrad.rand_like(a).pow(1 / a)
    return tracegrad.where(a < 1, result * scale, result)


class NegativeBinomial(Distribution):
    """Negative binomial distribution: ``total_count`` (non-negative) failures, success
    ``probs`` in [0, 1) or ``logits`` (log-odds), not both."""
    arg_constraints = {"total_count": constraints.greater_than_eq(0),
                       "probs": constraints.half_open_interval(0.0, 1.0), "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        name, param = ("probs", probs) if probs is not None else ("logits", logits)
        total_count, value = broadcast_all(total_count, param)
        self.total_count = total_count.type_as(value)
        setattr(self, name, value)
        self._param = value
        super().__init__(value.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expanded(NegativeBinomial, batch_shape, _instance,
                             {"total_count": (), "probs": (), "logits": ()})
        new._param = new.__dict__["probs"] if "probs" in self.__dict__ else new.__dict__["logits"]
        return new

    def _new(self, *args, **kwargs):
        return self._param.new(*args, **kwargs)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self):
        return self._param.size()

    @property
    def mean(self):
        return self.total_count * tracegrad.exp(self.logits)

    @property
    def mode(self):
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self):
        return self.mean / tracegrad.sigmoid(-self.logits)

    def sample(self, sample_shape=Size()):
        """A Poisson draw whose rate is Gamma(``total_count``, rate ``exp(-logits)``)."""
        shape = self._extended_shape(sample_shape)
        with tracegrad.no_grad():
            gamma = _standard_gamma(self.total_count.expand(shape)) * tracegrad.exp(self.logits).expand(shape)
            return tracegrad.poisson(gamma.clamp(min=finfo(gamma.dtype).tiny))

    def log_prob(self, value):
        """``log Gamma(r + k) - log Gamma(r) - log k! + r log(1 - p) + k log p`` (the
        normalizer is 0 where ``r + k = 0``: the certain outcome of zero failures)."""
        if self._validate_args:
            self._validate_sample(value)
        logsigmoid = tracegrad.nn.functional.logsigmoid
        r = self.total_count
        log_unnormalized = r * logsigmoid(-self.logits) + value * logsigmoid(self.logits)
        log_normalization = -tracegrad.lgamma(r + value) + tracegrad.lgamma(1.0 + value) + tracegrad.lgamma(r)
        return log_unnormalized - log_normalization.masked_fill(r + value == 0.0, 0.0)

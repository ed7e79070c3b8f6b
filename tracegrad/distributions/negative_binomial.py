"""The negative binomial distribution: the number of successes of independent trials
(each a success with probability ``probs``) before ``total_count`` failures. The count
may be any non-negative real: the law is then the gamma-Poisson mixture, which is also
how it is sampled."""
import tracegrad

from ..runtime.tensor import Size
from . import constraints
from ._probs_or_logits import ProbsOrLogits
from .distribution import Distribution
from .gamma import Gamma
from .utils import lazy_property

__all__ = ["NegativeBinomial"]


class NegativeBinomial(ProbsOrLogits, Distribution):
    """Negative binomial distribution: ``total_count`` (non-negative) failures, success
    ``probs`` in [0, 1) or ``logits`` (log-odds), not both."""
    arg_constraints = {"total_count": constraints.greater_than_eq(0),
                       "probs": constraints.half_open_interval(0.0, 1.0), "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        (total_count,) = self._set_broadcast_param(probs, logits, total_count)
        self.total_count = total_count.type_as(self._param)
        super().__init__(self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded_param(NegativeBinomial, batch_shape, _instance, others=("total_count",))

    @property
    def mean(self):
        return self.total_count * tracegrad.exp(self.logits)

    @property
    def mode(self):
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self):
        return self.mean / tracegrad.sigmoid(-self.logits)

    @lazy_property
    def _gamma(self):
        """The mixing law of the Poisson rate: Gamma(``total_count``, rate ``exp(-logits)``)."""
        return Gamma(concentration=self.total_count, rate=tracegrad.exp(-self.logits), validate_args=False)

    def sample(self, sample_shape=Size()):
        """A Poisson draw whose rate is drawn from :attr:`_gamma`."""
        with tracegrad.no_grad():
            return tracegrad.poisson(self._gamma.sample(sample_shape))

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
